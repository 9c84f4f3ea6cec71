use linad::differentiable;
use linad::ndarray::Array1;

// `loop` as an expression is supported; a value whose type the syntax does
// not show needs the `let`'s annotation; an array value is refused.
#[differentiable]
fn f(x: &Array1<f64>, s: f64) -> f64 {
    let a = loop {
        break x.sum();
    };
    let b: Array1<f64> = loop {
        break x.mapv(|v| v * s);
    };
    a + b.sum()
}

fn main() {}
