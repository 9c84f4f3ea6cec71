use linad::differentiable;

#[differentiable]
fn f(x: f64) -> f64 {
    let a = [x, 2.0 * x];
    a[0] + a[1]
}

fn main() {}
