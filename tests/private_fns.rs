//! Private `#[differentiable]` functions and methods whose derivatives
//! alone are called are used: each public derivative names its primal
//! (`let _ = f;`), so rustc does not say "function `f` is never used".
//! This file denies `dead_code`: it does not compile if any of the
//! functions below is reported (plain, array, `f32`, struct parameter,
//! struct result with a constant field, method; each only through one of
//! `f_jvp`, `f_vjp`, `f_linearize`, `f_pullback`).
#![deny(dead_code)]

use linad::differentiable;
use linad::ndarray::{array, Array1};
use linad::Differentiable;

#[differentiable]
fn scalar(x: f64) -> f64 {
    x.sin() * x
}

#[differentiable]
fn total(v: &Array1<f64>) -> f64 {
    v.mapv(|x| x * x).sum()
}

#[differentiable]
fn single(x: f32) -> f32 {
    x * x
}

#[derive(Differentiable, Clone)]
struct Params {
    a: f64,
}

#[differentiable]
fn scaled(p: &Params, x: f64) -> f64 {
    p.a * x
}

#[derive(Differentiable, Clone)]
struct Fit {
    value: f64,
    #[linad(constant)]
    steps: usize,
}

#[differentiable]
fn fitted(x: f64) -> Fit {
    Fit {
        value: x * x,
        steps: 3,
    }
}

#[derive(Differentiable, Clone)]
struct Model {
    b: f64,
}

#[differentiable]
impl Model {
    #[differentiable]
    fn loss(&self, x: f64) -> f64 {
        self.b * x * x
    }
}

#[test]
fn derivatives_alone_use_private_functions() {
    assert_eq!(scalar_jvp(0.0, 1.0), (0.0, 0.0));
    let (y, ct) = total_vjp(&array![1.0, 2.0], 1.0);
    assert_eq!((y, ct), (5.0, array![2.0, 4.0]));
    let (y, jvp) = single_linearize(3.0);
    assert_eq!((y, jvp(1.0)), (9.0, 6.0));
    let (y, pb) = scaled_pullback(&Params { a: 2.0 }, 3.0);
    let (dp, dx) = pb(1.0);
    assert_eq!((y, dp.a, dx), (6.0, 3.0, 2.0));
    let (y, ct) = fitted_vjp(3.0, &FitTangent { value: 1.0 });
    assert_eq!((y.value, y.steps, ct), (9.0, 3, 6.0));
    let m = Model { b: 2.0 };
    let (y, (dm, dx)) = m.loss_vjp(3.0, 1.0);
    assert_eq!((y, dm.b, dx), (18.0, 9.0, 12.0));
}
