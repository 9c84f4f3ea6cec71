use linad::differentiable;
use linad::ndarray::Array1;

// The element of `iter_mut` is read and written as `*v` (or used as a
// method's receiver); the array keeps its name in the loop.
#[differentiable]
fn f(x: &Array1<f64>) -> f64 {
    let mut a = x.clone();
    for v in a.iter_mut() {
        let r: &mut f64 = v;
        *r = 1.0;
    }
    for v in a.iter_mut() {
        let a = 2.0;
        *v *= a;
    }
    for pair in a.iter_mut().enumerate() {
        *pair.1 = 0.0;
    }
    a.iter_mut().for_each(|v| {
        if *v > 1.0 {
            return;
        }
        *v = 1.0;
    });
    a.sum()
}

fn main() {}
