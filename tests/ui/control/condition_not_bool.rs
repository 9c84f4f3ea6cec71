use linad::differentiable;

#[differentiable]
fn f(x: f64) -> f64 {
    if x { 1.0 } else { 0.0 }
}

fn main() {}
