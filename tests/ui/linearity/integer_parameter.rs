#![allow(unused_imports)]
use linad::linear;
use linad::ndarray::{Array1, Array2};

#[linear(n)]
fn f(x: f64, n: usize) -> f64 {
    x * n as f64
}

fn main() {}
