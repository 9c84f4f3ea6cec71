use linad::differentiable;

#[differentiable]
fn f(x: f64, k: i64) -> f64 {
    x * (k.saturating_sub(2) as f64)
}

fn main() {}
