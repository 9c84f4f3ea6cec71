use linad::differentiable;

#[differentiable]
fn f(x: f64) -> f64 {
    use std::f64::consts::PI;
    x * PI
}

fn main() {}
