use linad::differentiable;

#[differentiable]
fn f(x: f64) -> f64 {
    let d: f64 = Default::default();
    x + d
}

fn main() {}
