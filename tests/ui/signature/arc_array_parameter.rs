use linad::differentiable;

use linad::ndarray::ArcArray1;

#[differentiable]
fn f(v: ArcArray1<f64>) -> f64 {
    v.sum()
}

fn main() {}
