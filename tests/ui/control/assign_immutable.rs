use linad::differentiable;

#[differentiable]
fn f(x: f64) -> f64 {
    let y = x;
    y = y * 2.0;
    y
}

fn main() {}
