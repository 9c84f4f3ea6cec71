use linad::differentiable;

use linad::ndarray::array;

#[differentiable]
fn f(x: f64) -> f64 {
    let v = array![x, 2.0];
    v.sum()
}

fn main() {}
