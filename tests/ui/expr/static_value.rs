use linad::differentiable;

static K: f64 = 2.0;

#[differentiable]
fn f(x: f64) -> f64 {
    x * K
}

fn main() {}
