use linad::differentiable;

#[differentiable(dump, dump)]
fn f(x: f64) -> f64 {
    x * x
}

fn main() {}
