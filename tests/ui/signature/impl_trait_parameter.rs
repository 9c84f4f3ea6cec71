use linad::differentiable;

#[differentiable]
fn f(x: f64, g: impl Fn(f64) -> f64) -> f64 {
    g(x)
}

fn main() {}
