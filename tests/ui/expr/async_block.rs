use linad::differentiable;

#[differentiable]
fn f(x: f64) -> f64 {
    let _fut = async { 1.0 };
    x
}

fn main() {}
