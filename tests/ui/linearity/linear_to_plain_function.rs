#![allow(unused_imports)]
use linad::linear;
use linad::ndarray::{Array1, Array2};

fn g(v: f64) -> f64 {
    v * 2.0
}

#[linear(x)]
fn f(x: f64) -> f64 {
    g(x)
}

fn main() {}
