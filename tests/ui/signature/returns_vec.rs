use linad::differentiable;

#[differentiable]
fn f(x: f64) -> Vec<f64> {
    vec![x]
}

fn main() {}
