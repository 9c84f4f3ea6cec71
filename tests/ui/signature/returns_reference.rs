use linad::differentiable;
use linad::ndarray::Array1;

#[differentiable]
fn f(v: &Array1<f64>) -> &Array1<f64> {
    v
}

fn main() {}
