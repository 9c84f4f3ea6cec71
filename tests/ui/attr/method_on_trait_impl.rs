use linad::{differentiable, Differentiable};

#[derive(Differentiable, Clone)]
pub struct Model {
    pub a: f64,
}

trait Loss {
    fn loss(&self, x: f64) -> f64;
}

#[differentiable]
impl Loss for Model {
    #[differentiable]
    fn loss(&self, x: f64) -> f64 {
        self.a * x
    }
}

fn main() {}
