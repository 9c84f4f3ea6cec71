use linad::differentiable;

#[differentiable]
struct S {
    x: f64,
}

fn main() {}
