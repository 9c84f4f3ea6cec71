use linad::differentiable;
use linad::ndarray::Array1;

#[derive(linad::Differentiable, Clone)]
pub struct Params {
    pub w: Array1<f32>,
}

#[differentiable]
fn f(p: &Params, x: f64) -> f64 {
    p.w.sum() as f64 * x
}

fn main() {}
