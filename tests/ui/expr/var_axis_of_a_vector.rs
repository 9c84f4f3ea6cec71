use linad::differentiable;
use linad::ndarray::{Array1, Axis};

#[differentiable]
fn f(v: &Array1<f64>) -> f64 {
    v.var_axis(Axis(0), 0.0).sum()
}

fn main() {}
