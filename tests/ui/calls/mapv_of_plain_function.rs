use linad::differentiable;
use linad::ndarray::Array1;

fn helper(t: f64) -> f64 {
    t * 2.0
}

// A function named in `mapv` is applied as `|a| helper(a)`: a plain one
// gets the call's message, at its name.
#[differentiable]
fn f(x: &Array1<f64>) -> f64 {
    x.mapv(helper).sum()
}

fn main() {}
