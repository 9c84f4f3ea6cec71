use linad::differentiable;

#[differentiable]
fn f(x: f64) -> f64 {
    let _c = 'a';
    x
}

fn main() {}
