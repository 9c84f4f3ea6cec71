use linad::differentiable;

#[differentiable]
fn f(x: f64, o: bool) -> f64 {
    let p = (x, o);
    if let (y, true) = p {
        y
    } else {
        x
    }
}

fn main() {}
