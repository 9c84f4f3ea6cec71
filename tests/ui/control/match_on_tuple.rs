use linad::differentiable;

#[differentiable]
fn f(x: f64, n: usize) -> f64 {
    match (n, n) {
        (0, _) => x,
        _ => 2.0 * x,
    }
}

fn main() {}
