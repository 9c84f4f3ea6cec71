use linad::differentiable;
use linad::ndarray::Array1;

pub struct Model;

impl Model {
    #[differentiable]
    pub fn loss(w: &Array1<f64>, x: f64) -> f64 {
        w.sum() * x
    }
}

fn main() {}
