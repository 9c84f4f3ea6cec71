use linad::differentiable;

#[differentiable]
fn f(x: f64) -> f64 {
    let [a, b] = x;
    a * b
}

fn main() {}
