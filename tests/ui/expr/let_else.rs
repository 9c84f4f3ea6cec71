use linad::differentiable;

#[differentiable]
fn f(x: f64, b: bool) -> f64 {
    let (y, true) = (x, b) else {
        return 0.0;
    };
    y
}

fn main() {}
