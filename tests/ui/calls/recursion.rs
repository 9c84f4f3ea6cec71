use linad::differentiable;

#[differentiable]
fn f(x: f64, n: usize) -> f64 {
    if n == 0 { x } else { f(x * x, n - 1) }
}

fn main() {}
