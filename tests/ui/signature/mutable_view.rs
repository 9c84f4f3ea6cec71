use linad::differentiable;

use linad::ndarray::ArrayViewMut1;

#[differentiable]
fn f(v: ArrayViewMut1<f64>) -> f64 {
    v.sum()
}

fn main() {}
