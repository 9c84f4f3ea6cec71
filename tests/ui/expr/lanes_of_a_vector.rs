use linad::differentiable;
use linad::ndarray::{Array1, Axis};

#[differentiable]
fn f(v: &Array1<f64>) -> f64 {
    let mut s = 0.0;
    for lane in v.lanes(Axis(0)) {
        s += lane.sum();
    }
    s
}

fn main() {}
