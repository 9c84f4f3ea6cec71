use linad::differentiable;
use linad::ndarray::Array1;

#[differentiable]
fn f(v: &Array1<f64>) -> f64 {
    *v.iter().max_by(|a, b| a.total_cmp(b)).unwrap()
}

fn main() {}
