use linad::differentiable;

pub struct Params {
    pub c: f64,
}

// `Params` does not derive `linad::Differentiable`.
#[differentiable]
fn f(p: &Params, x: f64) -> f64 {
    p.c * x
}

fn main() {}
