use linad::differentiable;

fn helper(t: f64) -> f64 {
    t * 2.0
}

#[differentiable]
fn f(x: f64) -> f64 {
    helper(x)
}

fn main() {}
