use linad::differentiable;

#[differentiable]
fn f(v: Vec<f64>) -> f64 {
    v[0]
}

fn main() {}
