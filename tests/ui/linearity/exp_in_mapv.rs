#![allow(unused_imports)]
use linad::linear;
use linad::ndarray::{Array1, Array2};

#[linear(x)]
fn f(x: &Array2<f64>) -> Array2<f64> {
    x.mapv(|v| v.exp())
}

fn main() {}
