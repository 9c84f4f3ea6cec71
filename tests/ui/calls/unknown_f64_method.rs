use linad::differentiable;

#[differentiable]
fn f(x: f64) -> f64 {
    x.copysign(-1.0)
}

fn main() {}
