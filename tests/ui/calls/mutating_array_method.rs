use linad::differentiable;
use linad::ndarray::Array2;

#[differentiable]
fn f(m: &Array2<f64>) -> f64 {
    m.row(0).to_owned().scaled_add(2.0, &m.row(1));
    m.sum()
}

fn main() {}
