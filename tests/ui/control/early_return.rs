use linad::differentiable;

#[differentiable]
fn f(x: f64) -> f64 {
    if x < 0.0 {
        return 0.0;
    }
    x * x
}

fn main() {}
