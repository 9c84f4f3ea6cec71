use linad::differentiable;

// `reverse` emits `f_vjp` and `f_pullback` only.
#[differentiable(reverse)]
fn f(x: f64) -> f64 {
    x * x
}

fn main() {
    let _ = f_vjp(1.0, 1.0);
    let _ = f_jvp(1.0, 1.0);
}
