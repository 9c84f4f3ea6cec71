use linad::differentiable;

#[differentiable]
fn f(x: f64) -> f64 {
    fn g(t: f64) -> f64 {
        t * 2.0
    }
    g(x)
}

fn main() {}
