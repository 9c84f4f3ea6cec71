use linad::differentiable;
use linad::ndarray::Array1;

#[differentiable]
fn f(x: &Array1<f64>, k: f64) -> f64 {
    let mut s = 0.0;
    for w in x.windows(k) {
        s += w[0];
    }
    s
}

fn main() {}
