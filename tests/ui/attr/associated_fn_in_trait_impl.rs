use linad::differentiable;

pub trait Scale {
    fn scale(x: f64) -> f64;
}

pub struct Double;

impl Scale for Double {
    #[differentiable]
    fn scale(x: f64) -> f64 {
        2.0 * x
    }
}

fn main() {}
