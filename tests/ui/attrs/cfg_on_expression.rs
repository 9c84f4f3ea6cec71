use linad::differentiable;

#[differentiable]
fn f(x: f64) -> f64 {
    let t = (x, #[cfg(test)] x);
    t.0
}

fn main() {}
