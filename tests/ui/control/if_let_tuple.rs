use linad::differentiable;

#[differentiable]
fn f(x: f64) -> f64 {
    let t = (x, 1.0);
    if let (a, b) = t {
        a * b
    } else {
        x
    }
}

fn main() {}
