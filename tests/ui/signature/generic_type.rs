use linad::differentiable;

#[differentiable]
fn f<T: Copy>(x: f64, _t: T) -> f64 {
    x * x
}

fn main() {}
