use linad::differentiable;

#[differentiable]
fn f(x: f64) -> f64 {
    let y = x as f32;
    y as f64
}

fn main() {}
