use linad::differentiable;

#[differentiable]
fn f(x: f64) -> f64 {
    let (a, b, c) = (x, x);
    a + b + c
}

fn main() {}
