use linad::differentiable;

#[differentiable(wrt("x"))]
fn f(x: f64) -> f64 {
    x * x
}

fn main() {}
