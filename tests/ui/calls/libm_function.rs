use linad::differentiable;

mod libm {
    pub fn erf(x: f64) -> f64 {
        x
    }
}

#[differentiable]
fn f(x: f64) -> f64 {
    libm::erf(x) * 2.0
}

fn main() {}
