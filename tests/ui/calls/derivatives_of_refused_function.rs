//! A refused function's derivatives are still declared (stubs with their
//! real signatures): calling them adds no "cannot find function" error to
//! the refusal.
use linad::differentiable;
use linad::ndarray::Array1;

#[differentiable]
fn f(v: &Array1<f64>, a: f64) -> f64 {
    let mut y = 0.0;
    for x in v.iter().step_by(2) {
        y += x * a;
    }
    y
}

fn main() {
    let v = Array1::from(vec![1.0, 2.0, 3.0]);
    let (_y, (_dv, _da)) = f_vjp(&v, 0.5, 1.0);
    let (_y, _dy) = f_jvp(&v, 0.5, &v, 1.0);
    let (_y, lin) = f_linearize(&v, 0.5);
    let _dy: f64 = lin(&v, 1.0);
    let (_y, pullback) = f_pullback(&v, 0.5);
    let (_dv, _da) = pullback(1.0);
}
