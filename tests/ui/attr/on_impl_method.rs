use linad::differentiable;

struct S;

impl S {
    #[differentiable]
    fn f(&self, x: f64) -> f64 {
        x * x
    }
}

fn main() {}
