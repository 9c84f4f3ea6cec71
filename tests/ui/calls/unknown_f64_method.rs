use linad::differentiable;

#[differentiable]
fn f(x: f64) -> f64 {
    x.asinh()
}

fn main() {}
