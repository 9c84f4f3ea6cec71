use linad::differentiable;

#[differentiable]
fn f(x: f64) -> f64 {
    let n = "abc".len();
    x * n as f64
}

fn main() {}
