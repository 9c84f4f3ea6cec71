use linad::differentiable;

#[differentiable]
fn f(x: f64, n: usize) -> f64 {
    x + n
}

fn main() {}
