use linad::differentiable;
use linad::ndarray::Array1;

#[differentiable]
fn f(x: f64) -> f64 {
    let a = Array1::from_iter(x);
    a.sum()
}

fn main() {}
