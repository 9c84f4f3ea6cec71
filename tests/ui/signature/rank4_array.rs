use linad::differentiable;

use linad::ndarray::Array4;

#[differentiable]
fn f(v: &Array4<f64>) -> f64 {
    v.sum()
}

fn main() {}
