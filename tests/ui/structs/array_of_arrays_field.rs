use linad::Differentiable;

#[derive(Differentiable, Clone)]
pub struct Frame {
    pub axes: [[f64; 3]; 3],
}

fn main() {}
