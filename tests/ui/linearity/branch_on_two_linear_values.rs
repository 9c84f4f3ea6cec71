#![allow(unused_imports)]
use linad::linear;
use linad::ndarray::{Array1, Array2};

#[linear(x, y)]
fn f(x: f64, y: f64) -> f64 {
    let m = if x < y { y } else { x };
    2.0 * m
}

fn main() {}
