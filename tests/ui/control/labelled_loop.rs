use linad::differentiable;

#[differentiable]
fn f(x: f64, n: usize) -> f64 {
    let mut y = x;
    'outer: for _ in 0..n {
        y = y * x;
    }
    y
}

fn main() {}
