use linad::differentiable;

pub struct Model<T> {
    pub a: T,
}

#[differentiable]
impl<T> Model<T> {
    #[differentiable]
    fn loss(&self, x: f64) -> f64 {
        x * x
    }
}

fn main() {}
