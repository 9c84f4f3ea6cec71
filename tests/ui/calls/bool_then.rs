use linad::differentiable;

#[differentiable]
fn f(x: f64, b: bool) -> f64 {
    b.then(|| x).unwrap_or(0.0)
}

fn main() {}
