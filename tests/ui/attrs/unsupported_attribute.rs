use linad::differentiable;

#[differentiable]
fn f(x: f64) -> f64 {
    #[deprecated]
    let y = x * 2.0;
    y
}

fn main() {}
