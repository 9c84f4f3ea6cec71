use linad::differentiable;
use linad::ndarray::Array2;

// `skip` and `take` work on ranges and on the elements of one-dimensional
// arrays, not on rows.
#[differentiable]
fn f(m: &Array2<f64>) -> f64 {
    let mut s = 0.0;
    for r in m.rows().into_iter().take(2) {
        s += r.sum();
    }
    s
}

fn main() {}
