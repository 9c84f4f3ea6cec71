use linad::differentiable;
use linad::ndarray::{Array1, Zip};

#[differentiable]
fn f(x: &Array1<f64>, y: &Array1<f64>) -> f64 {
    let mut s = 0.0;
    Zip::from(x).and(y).for_each(|a, b| {
        s += a * b;
    });
    s
}

fn main() {}
