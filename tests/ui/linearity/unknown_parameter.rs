#![allow(unused_imports)]
use linad::linear;
use linad::ndarray::{Array1, Array2};

#[linear(z)]
fn f(x: f64) -> f64 {
    2.0 * x
}

fn main() {}
