use linad::differentiable;
use linad::ndarray::{Array1, Axis};

#[differentiable]
fn f(v: &Array1<f64>) -> f64 {
    let w = v.product_axis(Axis(0)).sum();
    w * v[0]
}

fn main() {}
