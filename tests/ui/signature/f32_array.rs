use linad::differentiable;
use linad::ndarray::Array1;

#[differentiable]
fn f(v: &Array1<f32>) -> f64 {
    v.sum() as f64
}

fn main() {}
