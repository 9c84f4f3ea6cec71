use linad::differentiable;
use linad::ndarray::Array1;

// `skip` and `take` go directly on the source, before `map`.
#[differentiable]
fn f(x: &Array1<f64>) -> f64 {
    x.iter().map(|v| v * v).skip(1).sum::<f64>()
}

fn main() {}
