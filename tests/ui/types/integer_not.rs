use linad::differentiable;

#[differentiable]
fn f(x: f64, n: u32) -> f64 {
    x * (!n) as f64
}

fn main() {}
