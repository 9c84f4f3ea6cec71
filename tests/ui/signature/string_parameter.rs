use linad::differentiable;

#[differentiable]
fn f(x: f64, name: String) -> f64 {
    let _ = name;
    x
}

fn main() {}
