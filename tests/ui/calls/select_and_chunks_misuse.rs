use linad::differentiable;
use linad::ndarray::{Array1, Array2, Array3, Axis};

#[differentiable]
fn f(a: &Array3<f64>, m: &Array2<f64>, w: &Array1<f64>) -> f64 {
    // ndarray's result is in neither row- nor column-major order
    let s = a.select(Axis(1), &[0, 1]);
    // indices are integers
    let t = m.select(Axis(0), w);
    // chunks of a vector only
    let mut c = 0.0;
    for b in m.exact_chunks((2, 2)) {
        c += b.sum();
    }
    s.sum() + t.sum() + c
}

fn main() {}
