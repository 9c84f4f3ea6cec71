use linad::differentiable;

#[differentiable]
fn f(x: f64) -> f64 {
    let y = x.sqrt();
    assert!(y > 0.0);
    y
}

fn main() {}
