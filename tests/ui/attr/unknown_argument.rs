use linad::differentiable;

#[differentiable(backward)]
fn f(x: f64) -> f64 {
    x * x
}

fn main() {}
