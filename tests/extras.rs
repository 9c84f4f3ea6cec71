//! Constructs the front end accepts beyond the written contract (found while
//! building the ui corpus): checked like the contract's, so accepting them
//! never means computing wrong derivatives.
#![allow(clippy::redundant_closure)]

mod common;
use common::*;
use linad::differentiable;
use linad::ndarray::{Array1, Array2, Axis};

/// `Array2::eye`, `sum_axis(Axis(0))`, `iter().product::<f64>()`,
/// `iter().enumerate()`.
#[differentiable]
fn array_extras(v: &Array1<f64>, m: &Array2<f64>) -> f64 {
    let i: Array2<f64> = Array2::eye(v.len());
    let s = m.sum_axis(Axis(0));
    let weighted = v
        .iter()
        .enumerate()
        .map(|(k, x)| x * (k as f64 + 1.0))
        .sum::<f64>();
    i.dot(v).sum() * v.iter().product::<f64>() + s.dot(v) + weighted
}

#[test]
fn eye_sum_axis_product_enumerate() {
    let mut rng = rng("array_extras");
    let x = (rng.array1(3, 0.5, 1.0), rng.array2(2, 3, -1.0, 1.0));
    check_derivatives(
        &x,
        |(v, m)| array_extras(v, m),
        |(v, m), (dv, dm)| array_extras_jvp(v, m, dv, dm),
        |(v, m), ct| array_extras_vjp(v, m, *ct),
    );
}

/// A plain call with constant arguments (`Default::default()`) and a loop
/// bound computed from a differentiable value (a constant of the loop).
#[differentiable]
fn scalar_extras(x: f64) -> f64 {
    let d: f64 = Default::default();
    let mut y = x + d;
    for _ in 0..(x * 3.0) as usize {
        y *= x;
    }
    y
}

#[test]
fn constant_calls_and_computed_bounds() {
    check_derivatives(
        &0.9,
        |x| scalar_extras(*x),
        |x, dx| scalar_extras_jvp(*x, *dx),
        |x, ct| scalar_extras_vjp(*x, *ct),
    );
}

/// `wrt()` differentiates nothing: a zero tangent and a `()` cotangent.
#[differentiable(wrt())]
fn nothing(x: f64) -> f64 {
    x * x
}

/// A repeated name in `wrt` counts once.
#[differentiable(wrt(x, x))]
fn twice(x: f64, y: f64) -> f64 {
    x * y
}

#[test]
fn degenerate_wrt_lists() {
    assert_eq!(nothing(2.0), 4.0);
    assert_eq!(nothing_jvp(2.0), (4.0, 0.0));
    let (v, ()) = nothing_vjp(2.0, 1.0);
    assert_eq!(v, 4.0);
    assert_eq!(twice(2.0, 3.0), 6.0);
    assert_eq!(twice_jvp(2.0, 3.0, 1.0), (6.0, 3.0));
    assert_eq!(twice_vjp(2.0, 3.0, 1.0), (6.0, 3.0));
}
