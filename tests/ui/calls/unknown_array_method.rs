use linad::differentiable;
use linad::ndarray::{Array1, Axis};

#[differentiable]
fn f(v: &Array1<f64>) -> f64 {
    let w = v.var_axis(Axis(0), 1.0).sum();
    w * v[0]
}

fn main() {}
