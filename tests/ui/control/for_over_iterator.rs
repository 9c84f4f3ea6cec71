use linad::differentiable;
use linad::ndarray::Array1;

#[differentiable]
fn f(v: &Array1<f64>) -> f64 {
    let mut s = 0.0;
    for x in v.iter() {
        s += x;
    }
    s
}

fn main() {}
