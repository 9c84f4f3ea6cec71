use linad::differentiable;

#[derive(linad::Differentiable, Clone)]
pub struct Params {
    pub c: f64,
}

#[differentiable]
fn f(p: &Params, x: f64) -> f64 {
    let y = p.c * x;
    let p = y + 1.0;
    p
}

fn main() {}
