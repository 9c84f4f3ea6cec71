#![allow(unused_imports)]
use linad::linear;
use linad::ndarray::{Array1, Array2};

#[linear(x)]
fn f(w: &Array1<f64>, x: f64) -> f64 {
    w[x as usize] * x
}

fn main() {}
