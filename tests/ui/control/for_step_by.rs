use linad::differentiable;

#[differentiable]
fn f(x: f64, n: usize) -> f64 {
    let mut y = x;
    for _ in (0..n).step_by(2) {
        y = y * x;
    }
    y
}

fn main() {}
