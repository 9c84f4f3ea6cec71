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

/// `filter` before `sum`, `product` and `count`, as users write them: the
/// primal bit-identical to `f` (a dropped item adds nothing, not even a
/// `+0.0`: every item dropped gives `f`'s `-0.0`), the stages after the
/// filter run only for kept items (no `ln` of a dropped `0.0`).
#[differentiable]
fn filtered(x: &Array1<f64>, t: f64) -> f64 {
    let pos = x
        .iter()
        .filter(|v| **v > t)
        .map(|v| (v - t).ln())
        .sum::<f64>();
    let even: f64 = (0..x.len())
        .filter(|i| i % 2 == 0)
        .map(|i| x[i] * x[i])
        .sum();
    let prod = x.iter().filter(|&&v| v < 0.0).product::<f64>();
    let n = x.iter().filter(|v| v.abs() < 1.0).count();
    pos + even + prod + n as f64
}

#[test]
fn filters_before_reductions() {
    let mut rng = rng("filters");
    let x = rng.array1(7, -2.0, 2.0);
    for t in [-0.5, 0.25, 10.0] {
        let y = filtered(&x, t);
        assert_eq!(filtered_vjp(&x, t, 1.0).0.to_bits(), y.to_bits());
        assert_eq!(filtered_jvp(&x, t, &x, 1.0).0.to_bits(), y.to_bits());
        check_derivatives(
            &(x.clone(), t),
            |(x, t)| filtered(x, *t),
            |(x, t), (dx, dt)| filtered_jvp(x, *t, dx, *dt),
            |(x, t), ct| filtered_vjp(x, *t, *ct),
        );
    }
    // Nothing kept: `f`'s empty sum is -0.0, and so is the companions'.
    let z = Array1::from(vec![0.5, -1.5]);
    let minus_zero = (-0.0f64).to_bits();
    assert_eq!(dropped(&z).to_bits(), minus_zero);
    assert_eq!(dropped_vjp(&z, 1.0).0.to_bits(), minus_zero);
    assert_eq!(dropped_jvp(&z, &z).0.to_bits(), minus_zero);
}

/// A sum that drops every item of small inputs.
#[differentiable]
fn dropped(x: &Array1<f64>) -> f64 {
    x.iter().filter(|v| **v > 9.0).sum::<f64>()
}
