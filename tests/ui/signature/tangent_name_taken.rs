use linad::differentiable;

#[differentiable]
fn f(x: f64, d_x: f64) -> f64 {
    x * d_x
}

fn main() {}
