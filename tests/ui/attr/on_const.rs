use linad::differentiable;

#[differentiable]
const C: f64 = 1.0;

fn main() {}
