use linad::differentiable;
use linad::ndarray::Array1;

// A `return` inside a loop of a function returning an array.
#[differentiable]
fn f(x: f64, n: usize) -> Array1<f64> {
    let mut y = x;
    for _ in 0..n {
        y = y * x;
        if y > 1.0 {
            return Array1::from_elem(2, y);
        }
    }
    Array1::from_elem(2, y)
}

fn main() {}
