use linad::differentiable;
use linad::ndarray::{Array1, ArrayView1};

#[differentiable]
fn f<'a>(v: &'a Array1<f64>) -> f64 {
    v.sum()
}

// The elided lifetime is accepted (`ArrayView1<'_, f64>`); a named one is
// refused where it is written, beside the refusal of the generic function.
#[differentiable]
fn g<'a>(v: ArrayView1<'a, f64>, w: ArrayView1<'_, f64>) -> f64 {
    v.sum() + w.sum()
}

fn main() {}
