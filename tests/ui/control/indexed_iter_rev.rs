use linad::differentiable;
use linad::ndarray::Array1;

#[differentiable]
fn f(v: &Array1<f64>) -> f64 {
    let mut y = 0.0;
    for (i, x) in v.indexed_iter().rev() {
        y = y * 0.5 + x * i as f64;
    }
    y
}

fn main() {}
