use linad::differentiable;

#[differentiable]
fn f(x: Option<f64>) -> f64 {
    x.unwrap_or(0.0)
}

fn main() {}
