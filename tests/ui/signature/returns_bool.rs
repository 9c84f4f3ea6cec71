use linad::differentiable;

#[differentiable]
fn f(x: f64) -> bool {
    x > 0.0
}

fn main() {}
