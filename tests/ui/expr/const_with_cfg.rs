use linad::differentiable;

#[differentiable]
fn f(x: f64) -> f64 {
    #[cfg(all())]
    const K: f64 = 2.0;
    x * K
}

fn main() {}
