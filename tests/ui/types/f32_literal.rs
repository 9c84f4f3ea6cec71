use linad::differentiable;

#[differentiable]
fn f(x: f64) -> f64 {
    let y = 1.0f32;
    x * y as f64
}

fn main() {}
