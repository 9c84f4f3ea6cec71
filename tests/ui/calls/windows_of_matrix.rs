use linad::differentiable;
use linad::ndarray::Array2;

#[differentiable]
fn f(m: &Array2<f64>) -> f64 {
    let mut s = 0.0;
    for w in m.windows((2, 2)) {
        s += w.sum();
    }
    s
}

fn main() {}
