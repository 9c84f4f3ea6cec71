use linad::differentiable;

#[differentiable]
fn f(x: f64, n: usize) -> f64 {
    let r = 0..n;
    x * r.len() as f64
}

fn main() {}
