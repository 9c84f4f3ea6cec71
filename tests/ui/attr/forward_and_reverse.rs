use linad::differentiable;

// `forward` and `reverse` each select one mode.
#[differentiable(forward, reverse)]
fn f(x: f64) -> f64 {
    x * x
}

fn main() {}
