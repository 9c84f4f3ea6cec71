use linad::differentiable;

#[differentiable]
fn f(x: f64) -> f64 {
    let a = [[x, 2.0 * x], [1.0, x]];
    x
}

fn main() {}
