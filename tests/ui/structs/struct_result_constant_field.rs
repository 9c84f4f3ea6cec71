use linad::differentiable;
use linad::ndarray::Array1;

#[derive(linad::Differentiable, Clone)]
pub struct Fit {
    pub y: Array1<f64>,
    #[linad(constant)]
    pub steps: usize,
}

#[differentiable]
fn fit(x: &Array1<f64>) -> Fit {
    Fit { y: x * 2.0, steps: x.len() }
}

#[differentiable]
fn f(x: &Array1<f64>) -> f64 {
    let r = fit(x);
    r.y.sum() * r.steps as f64
}

fn main() {}
