use linad::differentiable;
use linad::ndarray::Array1;

#[differentiable]
fn f(x: f64) -> f64 {
    let v: Array1<f64> = Array1::default(3);
    v.sum() * x
}

fn main() {}
