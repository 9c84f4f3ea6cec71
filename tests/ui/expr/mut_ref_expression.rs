use linad::differentiable;

#[differentiable]
fn f(x: f64) -> f64 {
    let mut y = x;
    let r = &mut y;
    *r += 1.0;
    y
}

fn main() {}
