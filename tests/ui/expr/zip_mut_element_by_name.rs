use linad::differentiable;
use linad::ndarray::{Array1, Zip};

// The element of a mutable `Zip` array is read and written as `*y`.
#[differentiable]
fn f(x: &Array1<f64>) -> f64 {
    let mut y = Array1::zeros(x.len());
    Zip::from(&mut y).and(x).for_each(|y, &v| {
        let r: &mut f64 = y;
        *r = v;
    });
    y.sum()
}

fn main() {}
