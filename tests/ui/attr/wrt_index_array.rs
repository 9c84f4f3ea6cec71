use linad::differentiable;
use linad::ndarray::Array1;

#[differentiable(wrt(idx))]
fn f(v: &Array1<f64>, idx: &Array1<usize>) -> f64 {
    v[idx[0]]
}

fn main() {}
