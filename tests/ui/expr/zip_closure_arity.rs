use linad::differentiable;
use linad::ndarray::{Array1, Zip};

// One closure parameter per array, after the accumulator of `fold`: linad
// says so beside rustc.
#[differentiable]
fn parameters(x: &Array1<f64>, y: &Array1<f64>) -> f64 {
    Zip::from(x).and(y).fold(0.0, |acc, &a| acc + a)
}

fn main() {}
