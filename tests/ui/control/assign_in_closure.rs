use linad::differentiable;
use linad::ndarray::Array1;

#[differentiable]
fn f(v: &Array1<f64>) -> f64 {
    let mut s = 0.0;
    let w = v.mapv(|x| {
        s += x;
        x * 2.0
    });
    w.sum() + s
}

fn main() {}
