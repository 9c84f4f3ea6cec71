use linad::differentiable;

#[differentiable]
fn f(x: f64) -> impl Copy {
    x
}

fn main() {}
