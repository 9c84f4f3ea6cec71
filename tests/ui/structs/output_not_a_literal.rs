use linad::differentiable;

#[derive(linad::Differentiable, Clone)]
pub struct Out {
    pub y: f64,
    pub z: f64,
}

// A struct output is built with a literal where the function returns it.
#[differentiable]
fn f(x: f64) -> Out {
    let o = Out { y: x * x, z: x };
    o
}

fn main() {}
