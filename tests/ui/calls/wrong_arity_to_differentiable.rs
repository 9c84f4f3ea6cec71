use linad::differentiable;

#[differentiable]
fn g(x: f64, y: f64) -> f64 {
    x * y
}

#[differentiable]
fn f(x: f64) -> f64 {
    g(x)
}

fn main() {}
