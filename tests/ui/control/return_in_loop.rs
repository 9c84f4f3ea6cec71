use linad::differentiable;

#[differentiable]
fn f(x: f64, n: usize) -> f64 {
    let mut y = x;
    for _ in 0..n {
        y = y * x;
        if y > 1.0 {
            return y;
        }
    }
    y
}

fn main() {}
