use linad::differentiable;

#[differentiable]
type F = fn(f64) -> f64;

fn main() {}
