use linad::differentiable;
use linad::ndarray::Array1;

#[derive(linad::Differentiable, Clone)]
pub struct Params {
    pub w: Array1<f64>,
    pub c: f64,
}

fn helper(p: &Params) -> f64 {
    p.c
}

// A struct parameter is read through its fields.
#[differentiable]
fn f(p: &Params, x: f64) -> f64 {
    helper(p) * x + p.c
}

fn main() {}
