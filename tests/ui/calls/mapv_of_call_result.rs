use linad::differentiable;
use linad::ndarray::Array1;

fn scale_by(k: f64) -> impl Fn(f64) -> f64 {
    move |t| t * k
}

// `mapv` takes a closure, a closure bound by `let`, an `f64` method or a
// function's name, not a closure made by a call.
#[differentiable]
fn f(x: &Array1<f64>) -> f64 {
    x.mapv(scale_by(2.0)).sum()
}

fn main() {}
