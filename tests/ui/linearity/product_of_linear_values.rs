#![allow(unused_imports)]
use linad::linear;
use linad::ndarray::{Array1, Array2};

#[linear(x)]
fn f(a: f64, x: f64) -> f64 {
    a * x * x
}

fn main() {}
