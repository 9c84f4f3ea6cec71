use linad::differentiable;
use linad::ndarray::Array1;

#[differentiable]
fn f(x: f64) -> f64 {
    let v = Array1::linspace(0.0, x, 5);
    v.sum()
}

fn main() {}
