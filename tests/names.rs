//! Generated names never collide with the user's: raw identifiers, a
//! parameter called `ct`, locals named like the emitter's temporaries.
#![allow(
    non_snake_case,
    clippy::let_and_return,
    clippy::just_underscores_and_digits
)]

mod common;
use common::*;
use linad::differentiable;
use linad::ndarray::{array, Array1};

#[differentiable]
fn r#type(r#fn: f64, r#match: &Array1<f64>) -> f64 {
    let r#let = r#fn * r#match.sum();
    r#let.sin()
}

#[test]
fn raw_identifiers() {
    let w = array![0.5, 1.5];
    check_derivatives(
        &(0.3, w.clone()),
        |(x, w)| r#type(*x, w),
        |(x, w), (dx, dw)| type_jvp(*x, w, *dx, dw),
        |(x, w), ct| type_vjp(*x, w, *ct),
    );
}

/// Parameters named like `f_vjp`'s cotangent (`ct`), the runtime path and
/// generated temporaries; locals too.
#[differentiable]
fn clash(ct: f64, ct_: f64, linad: f64, ndarray: &Array1<f64>, x_0: f64) -> f64 {
    let __t0 = ct * ct_;
    let __y0 = __t0 + linad * x_0;
    let y_0 = __y0 * ndarray[0];
    let __linad_ir_clash__fwd = y_0 * ct;
    let d_ct = __linad_ir_clash__fwd;
    d_ct
}

#[test]
fn names_like_generated_ones() {
    let w = array![0.5, 1.5];
    check_derivatives(
        &((0.3, -1.1, 0.7), (w.clone(), 1.3)),
        |((a, b, c), (w, x))| clash(*a, *b, *c, w, *x),
        |((a, b, c), (w, x)), ((da, db, dc), (dw, dx))| {
            clash_jvp(*a, *b, *c, w, *x, *da, *db, *dc, dw, *dx)
        },
        |((a, b, c), (w, x)), ct| {
            let (y, (ga, gb, gc, gw, gx)) = clash_vjp(*a, *b, *c, w, *x, *ct);
            (y, ((ga, gb, gc), (gw, gx)))
        },
    );
}

/// A parameter named like another's tangent (`d_x`): `f_jvp` calls the
/// tangent of `x` `d_x_` instead; arguments are positional.
#[differentiable]
fn with_d_x(x: f64, d_x: f64) -> f64 {
    x * d_x.sin()
}

#[test]
fn parameter_named_like_a_tangent() {
    check_derivatives(
        &(0.4, 1.3),
        |(x, d)| with_d_x(*x, *d),
        |(x, d), (dx, dd)| with_d_x_jvp(*x, *d, *dx, *dd),
        |(x, d), ct| with_d_x_vjp(*x, *d, *ct),
    );
}

/// Functions named like the float types: `f32` is an `f64` function (its
/// name does not send it through the `f32` shadow), and another function
/// calls it through its building blocks.
#[differentiable]
fn f32(x: f64, w: &Array1<f64>) -> f64 {
    (x * w.sum()).tanh()
}

#[differentiable]
fn f64(x: f64) -> f64 {
    let w = Array1::from_elem(2, x);
    f32(x, &w) * x
}

#[test]
fn functions_named_like_float_types() {
    let w = array![0.5, 1.5];
    check_derivatives(
        &(0.3, w.clone()),
        |(x, w)| f32(*x, w),
        |(x, w), (dx, dw)| f32_jvp(*x, w, *dx, dw),
        |(x, w), ct| f32_vjp(*x, w, *ct),
    );
    check_derivatives(
        &0.3,
        |x| f64(*x),
        |x, dx| f64_jvp(*x, *dx),
        |x, ct| f64_vjp(*x, *ct),
    );
    // The building blocks of an `f64` function (the shadow route has none
    // under these names).
    let (y, r) = __linad_f32_fwdres(0.3, w.view());
    assert_eq!(y.to_bits(), f32(0.3, &w).to_bits());
    let _ = r;
}
