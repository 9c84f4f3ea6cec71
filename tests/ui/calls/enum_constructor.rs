use linad::differentiable;

#[differentiable]
fn f(x: f64) -> f64 {
    let o = Some(x);
    o.unwrap()
}

fn main() {}
