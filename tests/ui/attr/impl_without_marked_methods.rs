use linad::{differentiable, Differentiable};

#[derive(Differentiable, Clone)]
pub struct Model {
    pub a: f64,
}

#[differentiable]
impl Model {
    fn loss(&self, x: f64) -> f64 {
        self.a * x
    }
}

fn main() {}
