#![allow(unused_imports)]
use linad::linear;
use linad::ndarray::{Array1, Array2};

#[linear(x)]
fn f(x: f64) -> f64 {
    x.sin()
}

fn main() {}
