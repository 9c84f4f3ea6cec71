use linad::differentiable;
use linad::ndarray::Array2;

#[differentiable]
fn f(m: &Array2<f64>) -> f64 {
    let mut y = 0.0;
    for x in m.iter().rev() {
        y = y * 0.5 + x;
    }
    y
}

fn main() {}
