use linad::differentiable;
use linad::ndarray::Array1;

#[differentiable]
fn f(v: &Array1<f64>) -> f64 {
    v.iter().filter(|x| **x > 0.0).fold(1.0, |acc, x| acc * x + 1.0)
}

fn main() {}
