use linad::differentiable;

#[differentiable(dump = true)]
fn f(x: f64) -> f64 {
    x * x
}

fn main() {}
