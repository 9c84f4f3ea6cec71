use linad::differentiable;

const W: [f64; 2] = [1.0, 2.0];

#[differentiable]
fn f(x: f64) -> f64 {
    x * W[0]
}

fn main() {}
