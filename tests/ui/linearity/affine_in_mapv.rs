#![allow(unused_imports)]
use linad::linear;
use linad::ndarray::{Array1, Array2};

#[linear(x)]
fn f(x: &Array1<f64>) -> Array1<f64> {
    x.mapv(|v| v + 1.0)
}

fn main() {}
