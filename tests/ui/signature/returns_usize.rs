use linad::differentiable;

#[differentiable]
fn f(x: f64) -> usize {
    x as usize
}

fn main() {}
