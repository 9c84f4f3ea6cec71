//! `#[cfg]` inside `#[differentiable]` bodies: the companions run exactly the
//! statements `f` runs, for every configuration.
#![allow(
    unused_mut,
    unused_assignments,
    clippy::let_and_return,
    clippy::assign_op_pattern
)]

mod common;
use common::*;
use linad::ndarray::{array, Array1};
use linad::{differentiable, linear};

#[differentiable]
fn cfg_stmts(x: f64) -> f64 {
    let mut y = x * x;
    #[cfg(test)]
    {
        y = y * 3.0;
    }
    #[cfg(not(test))]
    {
        y = y.sin();
    }
    #[cfg(debug_assertions)]
    let y = y + x;
    #[cfg(not(debug_assertions))]
    let y = y - 2.0 * x;
    #[cfg_attr(test, cfg(any()))]
    {
        y = y * 100.0;
    }
    #[allow(clippy::neg_multiply)]
    let z = y * -1.0;
    -z
}

/// What `cfg_stmts` computes in this build, written without `#[cfg]`.
fn cfg_stmts_expected(x: f64) -> f64 {
    let y = x * x * 3.0;
    if cfg!(debug_assertions) {
        y + x
    } else {
        y - 2.0 * x
    }
}

#[test]
fn cfg_statements_follow_the_build() {
    for x in [0.3, -1.7, 2.5] {
        let want = cfg_stmts_expected(x);
        assert_eq!(cfg_stmts(x).to_bits(), want.to_bits());
        let (y, dy) = cfg_stmts_jvp(x, 1.0);
        assert_eq!(
            y.to_bits(),
            want.to_bits(),
            "f_jvp ran a configured-out statement"
        );
        let (y, g) = cfg_stmts_vjp(x, 1.0);
        assert_eq!(
            y.to_bits(),
            want.to_bits(),
            "f_vjp ran a configured-out statement"
        );
        let expect_d = 6.0 * x + if cfg!(debug_assertions) { 1.0 } else { -2.0 };
        assert_close(dy, expect_d, 1e-12);
        assert_close(g, expect_d, 1e-12);
        check_derivatives(
            &x,
            |x| cfg_stmts(*x),
            |x, dx| cfg_stmts_jvp(*x, *dx),
            |x, ct| cfg_stmts_vjp(*x, *ct),
        );
    }
}

/// `#[cfg]` on statements inside a loop body and a closure.
#[differentiable]
fn cfg_nested(w: &Array1<f64>) -> f64 {
    let mut s = 0.0;
    for i in 0..w.len() {
        #[cfg(not(test))]
        {
            s += 1000.0;
        }
        s += w[i] * w[i];
    }
    let v = Array1::from_shape_fn(w.len(), |i| {
        let mut t = w[i];
        #[cfg(test)]
        {
            t = t * 2.0;
        }
        t
    });
    s + v.sum()
}

#[test]
fn cfg_in_loops_and_closures() {
    let w = array![0.5, -1.0, 2.0];
    let want: f64 = w.iter().map(|v| v * v).sum::<f64>() + 2.0 * w.sum();
    assert_close(cfg_nested(&w), want, 1e-12);
    assert_close(cfg_nested_jvp(&w, &Array1::ones(3)).0, want, 1e-12);
    let (y, g) = cfg_nested_vjp(&w, 1.0);
    assert_close(y, want, 1e-12);
    for i in 0..3 {
        assert_close(g[i], 2.0 * w[i] + 2.0, 1e-12);
    }
}

/// The function's own `#[cfg]` (after the attribute) gates the companions.
#[differentiable]
#[cfg(test)]
fn only_in_tests(x: f64) -> f64 {
    x * 2.0
}

#[test]
fn function_level_cfg() {
    assert_eq!(only_in_tests(1.5), 3.0);
    assert_eq!(only_in_tests_vjp(1.5, 1.0), (3.0, 2.0));
}

/// `#[cfg]` in a `#[linear]` body: `f_transpose` is the transpose of the
/// configured body.
#[linear(x)]
fn cfg_linear(w: &Array1<f64>, x: &Array1<f64>) -> Array1<f64> {
    let mut y = w * x;
    #[cfg(test)]
    {
        y = &y * 3.0;
    }
    #[cfg(not(test))]
    {
        y = &y - x;
    }
    y
}

#[test]
fn cfg_in_linear_bodies() {
    let w = array![0.5, -1.0, 2.0];
    let x = array![1.0, 2.0, -3.0];
    let ct = array![0.25, -0.5, 1.5];
    assert_eq!(cfg_linear(&w, &x), &w * &x * 3.0);
    let t = cfg_linear_transpose(&w, &ct);
    assert_eq!(t, &w * &ct * 3.0);
    let lhs: f64 = (&ct * &cfg_linear(&w, &x)).sum();
    let rhs: f64 = (&t * &x).sum();
    assert_close(lhs, rhs, 1e-14);
}
