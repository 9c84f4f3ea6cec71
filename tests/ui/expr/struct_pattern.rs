use linad::differentiable;

#[differentiable]
fn f(x: f64) -> f64 {
    let [a, ..] = [x, x];
    a
}

fn main() {}
