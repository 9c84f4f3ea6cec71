use linad::differentiable;
use linad::ndarray::Array1;

#[differentiable]
fn f(v: &Array1<f64>) -> f64 {
    let w = v.var(1.0);
    w * v[0]
}

fn main() {}
