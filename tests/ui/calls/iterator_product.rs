use linad::differentiable;
use linad::ndarray::Array1;

#[differentiable]
fn f(v: &Array1<f64>) -> f64 {
    v.iter().product::<f64>()
}

fn main() {}
