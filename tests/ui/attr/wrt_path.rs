use linad::differentiable;

#[differentiable(wrt(self::x))]
fn f(x: f64) -> f64 {
    x * x
}

fn main() {}
