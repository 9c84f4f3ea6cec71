use linad::differentiable;
use linad::ndarray::Array1;

#[differentiable]
fn f(v: &Array1<f64>) -> f64 {
    v.iter().filter(|x| **x > 0.0).sum::<f64>()
}

fn main() {}
