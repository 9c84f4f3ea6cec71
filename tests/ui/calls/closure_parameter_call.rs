use linad::differentiable;

#[differentiable]
fn f(x: f64, g: fn(f64) -> f64) -> f64 {
    g(x)
}

fn main() {}
