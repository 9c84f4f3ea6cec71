use linad::differentiable;

#[differentiable]
fn f(x: f64) -> () {
    let _y = x;
}

fn main() {}
