use linad::differentiable;

#[differentiable]
fn f(v: &[f64]) -> f64 {
    v[0]
}

fn main() {}
