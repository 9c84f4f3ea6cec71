#![allow(unused_imports)]
use linad::linear;
use linad::ndarray::{Array1, Array2};

#[linear(x)]
fn f(idx: &Array1<usize>, x: &Array1<f64>) -> Array1<f64> {
    Array1::from_shape_fn(idx.len(), |i| x[idx[i]])
}

fn main() {}
