use linad::differentiable;
use linad::ndarray::Array2;

#[differentiable]
fn gram(a: &Array2<f64>) -> Array2<f64> {
    a.t().dot(a)
}

#[differentiable]
fn f(a: &Array2<f64>) -> f64 {
    let g = gram(a);
    g.nrows() as f64 + g[[0, 0]]
}

fn main() {}
