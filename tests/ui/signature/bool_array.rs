use linad::differentiable;
use linad::ndarray::Array1;

#[differentiable]
fn f(v: &Array1<bool>, x: f64) -> f64 {
    if v[0] { x } else { 0.0 }
}

fn main() {}
