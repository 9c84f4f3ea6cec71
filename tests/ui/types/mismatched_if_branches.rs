use linad::differentiable;

#[differentiable]
fn f(x: f64, n: usize) -> f64 {
    let y = if x > 0.0 { x } else { n };
    y
}

fn main() {}
