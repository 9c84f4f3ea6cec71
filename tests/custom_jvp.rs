//! `#[custom_jvp(f)]`: forward rules for functions linad cannot (or should
//! not) differentiate; reverse mode derived by transposing the rule; used by
//! differentiable callers. Checked against finite differences and closed
//! forms.
#![allow(clippy::type_complexity, clippy::redundant_closure, dead_code)]

mod common;
use common::*;
use linad::ndarray::{array, Array1};
use linad::{custom_jvp, differentiable};
use std::cell::Cell;

// --- A special function from another crate's style: the normal CDF by an
// erfc series (any Rust: loops, while, early returns).

/// Complementary error function (W. J. Cody's rational approximations are
/// overkill here: a continued fraction / series accurate to ~1e-14).
fn erfc(x: f64) -> f64 {
    if x < 0.0 {
        return 2.0 - erfc(-x);
    }
    if x < 3.0 {
        // erf by its Taylor series.
        let mut sum = x;
        let mut term = x;
        let mut n = 0.0;
        while term.abs() > 1e-17 * sum.abs() {
            n += 1.0;
            term *= -x * x / n;
            sum += term / (2.0 * n + 1.0);
        }
        1.0 - 2.0 / std::f64::consts::PI.sqrt() * sum
    } else {
        // Continued fraction (Lentz).
        let mut f = x;
        let (mut c, mut d) = (x, 0.0);
        for k in 1..200 {
            let a = k as f64 / 2.0;
            d = x + a * d;
            d = 1.0 / d;
            c = x + a / c;
            let delta = c * d;
            f *= delta;
            if (delta - 1.0).abs() < 1e-16 {
                break;
            }
        }
        (-x * x).exp() / (f * std::f64::consts::PI.sqrt())
    }
}

fn norm_cdf(x: f64) -> f64 {
    0.5 * erfc(-x / std::f64::consts::SQRT_2)
}

thread_local! {
    /// How often this thread ran the rule's primal part.
    static CDF_RULE_CALLS: Cell<usize> = const { Cell::new(0) };
}

fn count_cdf_call(x: f64) -> f64 {
    CDF_RULE_CALLS.with(|c| c.set(c.get() + 1));
    x
}

fn cdf_rule_calls() -> usize {
    CDF_RULE_CALLS.with(Cell::get)
}

#[custom_jvp(norm_cdf)]
fn norm_cdf_rule(x: f64, d_x: f64) -> (f64, f64) {
    let y = norm_cdf(count_cdf_call(x));
    let pdf = (-0.5 * x * x).exp() / (2.0 * std::f64::consts::PI).sqrt();
    (y, pdf * d_x)
}

/// Black-Scholes call price: the rule is used inside.
#[differentiable]
fn black_scholes(s: f64, k: f64, r: f64, sigma: f64, t: f64) -> f64 {
    let sq = t.sqrt();
    let d1 = ((s / k).ln() + (r + 0.5 * sigma * sigma) * t) / (sigma * sq);
    let d2 = d1 - sigma * sq;
    s * norm_cdf(d1) - k * (-r * t).exp() * norm_cdf(d2)
}

#[test]
fn a_rule_gives_jvp_vjp_and_the_primal_bits() {
    for x in [-2.5, -0.3, 0.0, 0.7, 4.0] {
        let (y, dy) = norm_cdf_jvp(x, 1.0);
        assert_eq!(y.to_bits(), norm_cdf(x).to_bits());
        let (y2, g) = norm_cdf_vjp(x, 1.0);
        assert_eq!(y2.to_bits(), y.to_bits());
        let pdf = (-0.5 * x * x).exp() / (2.0 * std::f64::consts::PI).sqrt();
        assert_close(dy, pdf, 1e-14);
        assert_close(g, pdf, 1e-14);
    }
}

#[test]
fn black_scholes_greeks_in_closed_form() {
    let (s, k, r, sigma, t) = (100.0, 95.0, 0.03, 0.25, 0.8);
    let (price, (delta, _dk, rho, vega, _theta)) = black_scholes_vjp(s, k, r, sigma, t, 1.0);
    let sq = t.sqrt();
    let d1 = ((s / k).ln() + (r + 0.5 * sigma * sigma) * t) / (sigma * sq);
    let d2 = d1 - sigma * sq;
    let pdf = |x: f64| (-0.5 * x * x).exp() / (2.0 * std::f64::consts::PI).sqrt();
    assert_eq!(price.to_bits(), black_scholes(s, k, r, sigma, t).to_bits());
    assert_close(delta, norm_cdf(d1), 1e-12);
    assert_close(vega, s * pdf(d1) * sq, 1e-12);
    assert_close(rho, k * t * (-r * t).exp() * norm_cdf(d2), 1e-12);
    // Forward mode agrees, and both agree with finite differences.
    let (_, dvega) = black_scholes_jvp(s, k, r, sigma, t, 0.0, 0.0, 0.0, 1.0, 0.0);
    assert_close(dvega, vega, 1e-12);
    check_derivatives(
        &array![s, k, r, sigma, t],
        |p| black_scholes(p[0], p[1], p[2], p[3], p[4]),
        |p, d| black_scholes_jvp(p[0], p[1], p[2], p[3], p[4], d[0], d[1], d[2], d[3], d[4]),
        |p, ct| {
            let (y, g) = black_scholes_vjp(p[0], p[1], p[2], p[3], p[4], *ct);
            (y, array![g.0, g.1, g.2, g.3, g.4])
        },
    );
}

#[test]
fn the_pullback_runs_the_rule_once_however_many_cotangents() {
    let before = cdf_rule_calls();
    let (_, pb) = norm_cdf_pullback(0.4);
    let (_, lin) = norm_cdf_linearize(0.4);
    let made = cdf_rule_calls();
    assert_eq!(made - before, 2, "one forward pass each");
    let (g1, g2, d3) = (pb(1.0), pb(2.0), lin(3.0));
    assert_eq!(cdf_rule_calls(), made, "the closures never rerun the rule");
    assert_close(g2, 2.0 * g1, 1e-15);
    assert_close(d3, 3.0 * g1, 1e-15);
    // A differentiable caller checkpoints at the call: its reverse pass
    // calls the callee's reverse block, which reruns the rule's primal part
    // (two calls of norm_cdf, so two reruns per reverse pass).
    let (_, pb) = black_scholes_pullback(100.0, 95.0, 0.03, 0.25, 0.8);
    let made = cdf_rule_calls();
    let _ = pb(1.0);
    assert_eq!(cdf_rule_calls() - made, 2);
}

// --- An implicit function: y with y^3 + y = x, solved by Newton's method;
// dy = dx / (3 y^2 + 1) by the implicit function theorem.

fn cubic_root_of(x: f64) -> f64 {
    let mut y = x.cbrt();
    for _ in 0..60 {
        let step = (y * y * y + y - x) / (3.0 * y * y + 1.0);
        y -= step;
        if step.abs() < 1e-16 {
            break;
        }
    }
    y
}

#[custom_jvp(cubic_root_of)]
fn cubic_root_of_rule(x: f64, d_x: f64) -> (f64, f64) {
    let y = cubic_root_of(x);
    (y, d_x / (3.0 * y * y + 1.0))
}

#[differentiable]
fn implicit_user(a: f64, b: f64) -> f64 {
    let y = cubic_root_of(a * b);
    y * y + a
}

#[test]
fn an_implicit_function_by_newton() {
    let (a, b) = (1.3, 2.1);
    let y = cubic_root_of(a * b);
    assert!((y * y * y + y - a * b).abs() < 1e-12);
    let (_, (ga, gb)) = implicit_user_vjp(a, b, 1.0);
    let dy = 1.0 / (3.0 * y * y + 1.0);
    assert_close(ga, 2.0 * y * dy * b + 1.0, 1e-12);
    assert_close(gb, 2.0 * y * dy * a, 1e-12);
    check_derivatives(
        &(a, b),
        |p| implicit_user(p.0, p.1),
        |p, d| implicit_user_jvp(p.0, p.1, d.0, d.1),
        |p, ct| implicit_user_vjp(p.0, p.1, *ct),
    );
}

// --- An array function: softmax, with the rule written in array style.

fn softmax(v: &Array1<f64>) -> Array1<f64> {
    let m = v.fold(f64::NEG_INFINITY, |a, &b| a.max(b));
    let e = v.mapv(|x| (x - m).exp());
    let s = e.sum();
    e / s
}

#[custom_jvp(softmax)]
fn softmax_rule(v: &Array1<f64>, d_v: &Array1<f64>) -> (Array1<f64>, Array1<f64>) {
    let p: Array1<f64> = softmax(v);
    let dot = (&p * d_v).sum();
    let dp = &p * &(d_v - dot);
    (p, dp)
}

#[differentiable]
fn softmax_loss(v: &Array1<f64>, w: &Array1<f64>) -> f64 {
    let p: Array1<f64> = softmax(v);
    (&p * w).sum()
}

#[test]
fn an_array_rule() {
    let mut rng = rng("softmax");
    let v = rng.array1(6, -2.0, 2.0);
    let w = rng.array1(6, -1.0, 1.0);
    let (p, dp) = softmax_jvp(&v, &Array1::ones(6));
    assert_same_bits(&p, &softmax(&v));
    for d in dp.iter() {
        assert!(
            d.abs() < 1e-15,
            "softmax is invariant under adding a constant"
        );
    }
    check_derivatives(
        &v,
        |v| softmax(v),
        |v, dv| softmax_jvp(v, dv),
        |v, ct: &Array1<f64>| softmax_vjp(v, ct),
    );
    check_derivatives(
        &(v, w),
        |(v, w)| softmax_loss(v, w),
        |(v, w), (dv, dw)| softmax_loss_jvp(v, w, dv, dw),
        |(v, w), ct| softmax_loss_vjp(v, w, *ct),
    );
}

// --- A two-argument function with a constant parameter.

fn weighted_hypot(x: f64, y: f64, wx: f64) -> f64 {
    (wx * x * x + y * y).sqrt()
}

#[custom_jvp(weighted_hypot)]
fn weighted_hypot_rule(x: f64, y: f64, wx: f64, d_x: f64, d_y: f64, d_wx: f64) -> (f64, f64) {
    let h = weighted_hypot(x, y, wx);
    let t = (2.0 * wx * x * d_x + 2.0 * y * d_y + x * x * d_wx) / (2.0 * h);
    (h, t)
}

#[differentiable]
fn two_args(a: f64, b: f64) -> f64 {
    let h = weighted_hypot(a, b, 2.0);
    h * a
}

#[test]
fn a_two_argument_rule() {
    let (x, y, wx) = (0.6, -1.1, 1.7);
    let (_, (gx, gy, gw)) = weighted_hypot_vjp(x, y, wx, 1.0);
    let h = weighted_hypot(x, y, wx);
    assert_close(gx, wx * x / h, 1e-14);
    assert_close(gy, y / h, 1e-14);
    assert_close(gw, x * x / (2.0 * h), 1e-14);
    check_derivatives(
        &(x, y, wx),
        |p| weighted_hypot(p.0, p.1, p.2),
        |p, d| weighted_hypot_jvp(p.0, p.1, p.2, d.0, d.1, d.2),
        |p, ct| weighted_hypot_vjp(p.0, p.1, p.2, *ct),
    );
    check_derivatives(
        &(x, y),
        |p| two_args(p.0, p.1),
        |p, d| two_args_jvp(p.0, p.1, d.0, d.1),
        |p, ct| two_args_vjp(p.0, p.1, *ct),
    );
}

#[test]
fn linearize_and_pullback_of_a_rule() {
    let v = array![0.3, -1.0, 2.0];
    let (p, lin) = softmax_linearize(&v);
    let (_, pb) = softmax_pullback(&v);
    let dv = array![1.0, 0.5, -0.25];
    let ct = array![0.2, -0.4, 1.0];
    // <ct, J dv> = <J^T ct, dv>
    let lhs = (&ct * &lin(&dv)).sum();
    let rhs = (&pb(&ct) * &dv).sum();
    assert_close(lhs, rhs, 1e-13);
    assert_same_bits(&p, &softmax(&v));
}

/// A function named in `mapv` (applied as `|a| f(a)`): one with a rule,
/// and a `#[differentiable]` one.
#[differentiable]
fn cube_plus(t: f64) -> f64 {
    t * t * t + t.sin()
}

#[differentiable]
fn mapv_of_functions(x: &Array1<f64>) -> f64 {
    x.mapv(norm_cdf).sum() + x.mapv(cube_plus).dot(x)
}

#[test]
fn functions_named_in_mapv() {
    let x = array![0.3, -1.2, 2.0];
    let by_closures =
        |x: &Array1<f64>| x.mapv(|a| norm_cdf(a)).sum() + x.mapv(|a| cube_plus(a)).dot(x);
    assert_eq!(mapv_of_functions(&x).to_bits(), by_closures(&x).to_bits());
    check_derivatives(
        &x,
        mapv_of_functions,
        |x, d| mapv_of_functions_jvp(x, d),
        |x, ct| mapv_of_functions_vjp(x, *ct),
    );
}

/// A rule for a function of a slice: the rule's body calls it with its
/// slice (the generated code passes the array as the function takes it,
/// `ad_runtime::plain_arg`; it used to pass an `&Array1`, a type error in
/// generated code).
fn slice_norm(p: &[f64]) -> f64 {
    p.iter().map(|x| x * x).sum::<f64>().sqrt()
}

#[custom_jvp(slice_norm)]
fn slice_norm_rule(p: &[f64], d_p: &[f64]) -> (f64, f64) {
    let n = slice_norm(p);
    let mut t = 0.0;
    for i in 0..p.len() {
        t += p[i] * d_p[i];
    }
    (n, t / n)
}

#[differentiable]
fn uses_slice_norm(p: &[f64], s: f64) -> f64 {
    slice_norm(p) * s
}

#[test]
fn rules_of_slice_functions() {
    let mut rng = rng("rules_of_slice_functions");
    let p = rng.array1(4, -1.0, 1.0);
    check_derivatives(
        &(p, 0.8),
        |(p, s)| uses_slice_norm(p.as_slice().unwrap(), *s),
        |(p, s), (dp, ds)| {
            uses_slice_norm_jvp(p.as_slice().unwrap(), *s, dp.as_slice().unwrap(), *ds)
        },
        |(p, s), ct| {
            let (y, (g, gs)) = uses_slice_norm_vjp(p.as_slice().unwrap(), *s, *ct);
            (y, (Array1::from(g), gs))
        },
    );
}
