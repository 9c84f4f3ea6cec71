use linad::differentiable;
use linad::ndarray::Array1;

#[derive(linad::Differentiable, Clone)]
pub struct Pair {
    pub a: Array1<f64>,
    pub b: f64,
}

#[differentiable]
fn make(x: &Array1<f64>, s: f64) -> Pair {
    Pair { a: x * s, b: s }
}

#[differentiable]
fn f(x: &Array1<f64>, s: f64) -> f64 {
    make(x, s).a.sum() * s
}

fn main() {}
