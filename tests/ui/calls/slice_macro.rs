use linad::differentiable;
use linad::ndarray::Array1;

use linad::ndarray::s;

#[differentiable]
fn f(v: &Array1<f64>) -> f64 {
    v.slice(s![1..]).sum()
}

fn main() {}
