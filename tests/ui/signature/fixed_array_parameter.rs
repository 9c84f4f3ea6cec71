use linad::differentiable;

#[differentiable]
fn f(v: [f64; 3]) -> f64 {
    v[0]
}

fn main() {}
