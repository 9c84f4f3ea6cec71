use linad::differentiable;

#[derive(linad::Differentiable, Clone)]
pub struct Out {
    pub y: f64,
    pub steps: usize,
}

// A struct output holds only values with a derivative.
#[differentiable]
fn f(x: f64) -> Out {
    Out { y: x * x, steps: 1 }
}

fn main() {}
