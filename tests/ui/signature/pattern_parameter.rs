use linad::differentiable;

#[differentiable]
fn f((a, b): (f64, f64)) -> f64 {
    a * b
}

fn main() {}
