use linad::differentiable;
use linad::ndarray::Array1;

#[differentiable]
fn f(v: &mut Array1<f64>) -> f64 {
    v.sum()
}

fn main() {}
