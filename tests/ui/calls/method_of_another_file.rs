#[path = "../../ui_helpers/method_model.rs"]
mod model;

use linad::differentiable;
use model::Model;

#[differentiable]
fn twice(m: &Model, x: f64) -> f64 {
    2.0 * m.loss(x)
}

fn main() {
    let _ = twice_vjp(&Model { a: 1.0 }, 2.0, 1.0);
}
