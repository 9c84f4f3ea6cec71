use linad::differentiable;
use linad::ndarray::Array1;

#[differentiable]
fn f<'a>(v: &'a Array1<f64>) -> f64 {
    v.sum()
}

fn main() {}
