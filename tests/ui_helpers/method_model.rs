//! A struct with a `#[differentiable]` method, loaded by a ui case from
//! another file (`tests/ui/calls/method_of_another_file.rs`).
use linad::{differentiable, Differentiable};

#[derive(Differentiable, Clone)]
pub struct Model {
    pub a: f64,
}

#[differentiable]
impl Model {
    #[differentiable]
    pub fn loss(&self, x: f64) -> f64 {
        self.a * x
    }
}
