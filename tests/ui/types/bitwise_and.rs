use linad::differentiable;

#[differentiable]
fn f(x: f64, n: usize) -> f64 {
    x * (n & 1) as f64
}

fn main() {}
