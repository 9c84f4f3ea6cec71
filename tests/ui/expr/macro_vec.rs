use linad::differentiable;

#[differentiable]
fn f(x: f64) -> f64 {
    vec![x, x];
    x
}

fn main() {}
