use linad::differentiable;
use linad::ndarray::{Array1, Array2};

#[differentiable]
fn f(v: &Array1<f64>) -> f64 {
    let m: Array2<f64> = Array2::eye(v.len());
    m.dot(v).sum()
}

fn main() {}
