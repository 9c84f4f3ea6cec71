#![allow(unused_imports)]
use linad::linear;
use linad::ndarray::{Array1, Array2};

#[linear(x)]
fn scale(a: f64, x: f64) -> f64 {
    a * x
}

#[linear(y)]
fn f(y: f64) -> f64 {
    scale(y, 2.0)
}

fn main() {}
