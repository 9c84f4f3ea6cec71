use linad::{differentiable, Differentiable};

#[derive(Differentiable, Clone)]
pub struct Model {
    pub a: f64,
}

fn plain(m: &Model) -> f64 {
    m.a
}

#[differentiable]
impl Model {
    #[differentiable]
    pub fn loss(&self, x: f64) -> f64 {
        plain(self) * x
    }
}

fn main() {}
