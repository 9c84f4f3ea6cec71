#[derive(linad::Differentiable, Clone)]
pub struct Params {
    pub c: Option<f64>,
    #[linad(frozen)]
    pub d: f64,
}

fn main() {}
