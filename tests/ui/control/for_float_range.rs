use linad::differentiable;

#[differentiable]
fn f(x: f64) -> f64 {
    let mut y = x;
    for _ in 0..x as usize {
        y = y * x;
    }
    y
}

fn main() {}
