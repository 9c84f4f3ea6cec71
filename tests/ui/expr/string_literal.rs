use linad::differentiable;

#[differentiable]
fn f(x: f64) -> f64 {
    let _s = "hello";
    x
}

fn main() {}
