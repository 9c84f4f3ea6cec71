use linad::differentiable;
use linad::ndarray::Array1;

#[differentiable]
fn f(v: &Array1<f64>) -> f64 {
    let mut y = 0.0;
    for x in v.iter().step_by(2) {
        y += x;
    }
    y
}

fn main() {}
