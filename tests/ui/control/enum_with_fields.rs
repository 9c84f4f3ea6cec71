use linad::differentiable;

// An enum whose variants have fields is not a constant linad can read.
pub enum Shape {
    Circle(f64),
    Square(f64),
}

#[differentiable]
fn area(s: Shape, x: f64) -> f64 {
    match s {
        Shape::Circle(r) => r * r * x,
        Shape::Square(a) => a * a * x,
    }
}

fn main() {}
