use linad::differentiable;

use linad::ndarray::ArrayD;

#[differentiable]
fn f(v: &ArrayD<f64>) -> f64 {
    v.sum()
}

fn main() {}
