use linad::differentiable;
use std::f64::consts::LN_2 as L2;

#[differentiable]
fn f(x: f64) -> f64 {
    x * L2
}

fn main() {}
