use linad::differentiable;

#[differentiable]
extern "C" fn f(x: f64) -> f64 {
    x * x
}

fn main() {}
