use linad::differentiable;

#[differentiable]
fn f(x: f32) -> f32 {
    assert!(x > 0.0, "x must be positive");
    x.sqrt()
}

fn main() {}
