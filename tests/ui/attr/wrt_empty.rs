use linad::differentiable;

#[differentiable(wrt())]
fn f(x: f64) -> f64 {
    x * x
}

fn main() {}
