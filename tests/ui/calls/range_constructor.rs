use linad::differentiable;
use linad::ndarray::Array1;

#[differentiable]
fn f(x: f64) -> f64 {
    let v = Array1::range(0.0, x, 0.5);
    v.sum()
}

fn main() {}
