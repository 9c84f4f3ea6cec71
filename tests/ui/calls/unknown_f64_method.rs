use linad::differentiable;

#[differentiable]
fn f(x: f64) -> f64 {
    x.midpoint(-1.0)
}

fn main() {}
