use linad::differentiable;

#[differentiable]
fn f(x: f64) -> f64 {
    assert!(x > 0.0);
    x.sqrt()
}

fn main() {}
