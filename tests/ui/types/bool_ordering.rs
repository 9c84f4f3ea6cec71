use linad::differentiable;

#[differentiable]
fn f(x: f64, a: bool, b: bool) -> f64 {
    if a < b { x } else { -x }
}

fn main() {}
