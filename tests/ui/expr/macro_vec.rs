use linad::differentiable;

#[differentiable]
fn f(x: f64) -> f64 {
    let v = vec![x, x];
    v[0]
}

fn main() {}
