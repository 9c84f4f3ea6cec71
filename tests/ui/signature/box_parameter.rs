use linad::differentiable;

#[differentiable]
fn f(x: Box<f64>) -> f64 {
    *x * 2.0
}

fn main() {}
