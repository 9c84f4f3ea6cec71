use linad::differentiable;

#[differentiable]
fn f(x: f64) -> f64 {
    let t = (x, x);
    t.2
}

fn main() {}
