use linad::differentiable;

#[differentiable]
fn f(x: f64) -> f64 {
    unsafe { x * 2.0 }
}

fn main() {}
