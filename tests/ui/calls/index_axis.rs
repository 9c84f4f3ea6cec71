use linad::differentiable;
use linad::ndarray::Array2;

use linad::ndarray::Axis;

#[differentiable]
fn f(m: &Array2<f64>) -> f64 {
    m.index_axis(Axis(0), 0).sum()
}

fn main() {}
