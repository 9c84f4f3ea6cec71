use linad::differentiable;
use linad::ndarray::Array1;

#[differentiable]
fn f(v: &Array1<f64>) -> f64 {
    let mut w = v.mapv(|x| x);
    *w.get_mut(0).unwrap() = 1.0;
    w.sum()
}

fn main() {}
