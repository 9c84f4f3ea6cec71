//! Scalar code through `#[differentiable]`: bindings, arithmetic, methods,
//! constants, casts, tuples, integer and tuple parameters.
//!
//! Every test checks, at one or more inputs: `f_jvp` against central finite
//! differences of `f`, `f_vjp` against `f_jvp` by the dot-product identity,
//! and bit-identical primal results of `f`, `f_jvp` and `f_vjp`.
#![allow(
    clippy::needless_return,
    clippy::let_and_return,
    clippy::assign_op_pattern,
    clippy::neg_multiply,
    double_negations,
    clippy::precedence,
    clippy::shadow_unrelated,
    clippy::redundant_locals,
    clippy::approx_constant,
    unused_parens
)]

mod common;
use common::*;
use linad::differentiable;
use linad::ndarray::Array1;

// --- arithmetic -------------------------------------------------------------

/// `+ - * /`, literals, parentheses.
#[differentiable]
fn arith(x: f64, y: f64) -> f64 {
    x * y + x / y - y - 3.0 * x + 2.0 - (x - y) * (x + y) / (1.0 + x * x)
}

#[test]
fn arithmetic() {
    for p in [(0.7, 1.3), (-1.1, 0.4), (2.0, -3.0)] {
        check_derivatives(
            &p,
            |(x, y)| arith(*x, *y),
            |(x, y), (dx, dy)| arith_jvp(*x, *y, *dx, *dy),
            |(x, y), ct| arith_vjp(*x, *y, *ct),
        );
    }
}

/// Unary minus, in every position.
#[differentiable]
fn negations(x: f64, y: f64) -> f64 {
    let a = -x;
    let b = -(x * y);
    let c = -a * -y;
    -a + b - -c + (-2.0) * x
}

#[test]
fn unary_minus() {
    check_derivatives(
        &(0.3, -1.7),
        |(x, y)| negations(*x, *y),
        |(x, y), (dx, dy)| negations_jvp(*x, *y, *dx, *dy),
        |(x, y), ct| negations_vjp(*x, *y, *ct),
    );
}

/// Groupings that Rust's precedence would read otherwise without their
/// parentheses, where floating-point rounding tells them apart: the
/// derivatives write a scalar formula as one expression
/// (`ad-macros/src/emit/inline_exprs.rs`), parenthesised where needed.
#[differentiable]
fn groupings(x: f64, y: f64) -> f64 {
    let a = x - (y - x * 0.5);
    let b = x / (y * (1.0 + x * x));
    let c = x / (y / (2.0 + y * y));
    let d = -(x + y) * -(x - y);
    let big = x * 1e16;
    let f = ((big + 1.0) - big + (1.0 - (big - big * 0.5))) * 1e-16;
    let k = (x * 3.0) as i64;
    let g = (k as f64) * y + if (k as f64) < y { 0.5 } else { 1.5 };
    let e = if (x < y) == (y < 2.0 * x) {
        a - (b - c)
    } else {
        a - b - c
    };
    e * d - (f - (a + (b + c))) + g / (x - (y - (x - y)))
}

#[test]
fn groupings_keep_their_roundings() {
    for p in [
        (0.7, 1.3),
        (-1.1, 0.4),
        (2.1, -3.0),
        (1.3, 0.9),
        (-1.05, -1.6),
    ] {
        check_derivatives(
            &p,
            |(x, y)| groupings(*x, *y),
            |(x, y), (dx, dy)| groupings_jvp(*x, *y, *dx, *dy),
            |(x, y), ct| groupings_vjp(*x, *y, *ct),
        );
    }
}

// --- bindings ---------------------------------------------------------------

/// `let`, `let mut` with and without annotations, reassignment, shadowing,
/// blocks as expressions and as statements.
#[differentiable]
fn bindings(x: f64, y: f64) -> f64 {
    let a = x * y;
    let b: f64 = a + x;
    let mut c = b * 2.0;
    let mut d: f64 = c - y;
    c = c * d;
    d = d + c;
    let a = a * a + d; // shadowing
    let e = {
        let t = a * 0.5;
        let a = t + y; // shadowing inside a block
        a * t
    };
    {
        c = c + e;
    }
    let x = x + c; // shadowing a parameter
    x + a - e
}

#[test]
fn let_mut_shadowing_blocks() {
    check_derivatives(
        &(0.4, -0.3),
        |(x, y)| bindings(*x, *y),
        |(x, y), (dx, dy)| bindings_jvp(*x, *y, *dx, *dy),
        |(x, y), ct| bindings_vjp(*x, *y, *ct),
    );
}

/// `+= -= *= /=` on scalars.
#[differentiable]
fn compound(x: f64, y: f64) -> f64 {
    let mut s = x;
    s += y * y;
    s -= 0.5 * x;
    s *= x + 2.0;
    s /= y + 3.0;
    s += s * x;
    s
}

#[test]
fn compound_assignment() {
    check_derivatives(
        &(0.6, 1.2),
        |(x, y)| compound(*x, *y),
        |(x, y), (dx, dy)| compound_jvp(*x, *y, *dx, *dy),
        |(x, y), ct| compound_vjp(*x, *y, *ct),
    );
}

/// Tuples: construction, field access, destructuring, `_` patterns,
/// reassignment of a whole tuple.
#[differentiable]
fn tuples(x: f64, y: f64) -> f64 {
    let t = (x * y, x + y);
    let (a, b) = t;
    let (c, _) = (a * b, y);
    let mut u = (t.0, t.1 * 2.0);
    u = (u.1 + c, u.0 * x);
    let (p, q) = (u.0 - a, u.1);
    p * q + t.0
}

#[test]
fn tuples_and_destructuring() {
    check_derivatives(
        &(0.9, -0.2),
        |(x, y)| tuples(*x, *y),
        |(x, y), (dx, dy)| tuples_jvp(*x, *y, *dx, *dy),
        |(x, y), ct| tuples_vjp(*x, *y, *ct),
    );
}

/// A final `return` instead of a tail expression.
#[differentiable]
fn final_return(x: f64) -> f64 {
    let y = x * x;
    let z = y.sin() + x;
    return z * y;
}

#[test]
fn return_statement() {
    check_derivatives(
        &0.8,
        |x| final_return(*x),
        |x, dx| final_return_jvp(*x, *dx),
        |x, ct| final_return_vjp(*x, *ct),
    );
}

/// A single parameter: the cotangent is a bare `f64`.
#[differentiable]
fn square(x: f64) -> f64 {
    x * x
}

#[test]
fn single_parameter_and_exact_values() {
    let (y, dy) = square_jvp(3.0, 1.0);
    assert_eq!((y, dy), (9.0, 6.0));
    let (y, g) = square_vjp(3.0, 2.0);
    assert_eq!((y, g), (9.0, 12.0));
    check_derivatives(
        &-1.25,
        |x| square(*x),
        |x, dx| square_jvp(*x, *dx),
        |x, ct| square_vjp(*x, *ct),
    );
}

// --- f64 methods ------------------------------------------------------------

/// sin cos tan exp ln log2 log10 sqrt.
#[differentiable]
fn methods_a(x: f64) -> f64 {
    x.sin() + x.cos() * 2.0 + x.tan() + (0.5 * x).exp() + x.ln() + x.log2() + x.log10() + x.sqrt()
}

#[test]
fn methods_sin_cos_tan_exp_ln_log2_log10_sqrt() {
    for x in [0.3, 0.9, 1.4] {
        check_derivatives(
            &x,
            |x| methods_a(*x),
            |x, dx| methods_a_jvp(*x, *dx),
            |x, ct| methods_a_vjp(*x, *ct),
        );
    }
}

/// powi powf abs tanh sinh cosh atan atan2.
#[differentiable]
fn methods_b(x: f64, y: f64) -> f64 {
    x.powi(3)
        + y.powi(-2)
        + x.powf(y)
        + (x - y).abs()
        + x.tanh()
        + y.sinh()
        + y.cosh()
        + x.atan()
        + y.atan2(x)
}

#[test]
fn methods_powi_powf_abs_tanh_sinh_cosh_atan_atan2() {
    for p in [(0.7, 1.6), (1.8, 0.5)] {
        check_derivatives(
            &p,
            |(x, y)| methods_b(*x, *y),
            |(x, y), (dx, dy)| methods_b_jvp(*x, *y, *dx, *dy),
            |(x, y), ct| methods_b_vjp(*x, *y, *ct),
        );
    }
}

/// The inverse trigonometric and hyperbolic functions asin, acos, asinh,
/// acosh, atanh (inside their domains, away from the poles of their
/// derivatives).
#[differentiable]
fn methods_inverse(x: f64, y: f64) -> f64 {
    x.asin() * y + x.acos() + (x * y).asinh() + (y + 1.0).acosh() + (0.5 * x).atanh()
}

#[test]
fn methods_asin_acos_asinh_acosh_atanh() {
    for p in [(0.3, 1.6), (-0.7, 0.5), (0.9, 0.4)] {
        check_derivatives(
            &p,
            |(x, y)| methods_inverse(*x, *y),
            |(x, y), (dx, dy)| methods_inverse_jvp(*x, *y, *dx, *dy),
            |(x, y), ct| methods_inverse_vjp(*x, *y, *ct),
        );
    }
}

/// The remainder `%` of `f64`s (∂x = 1, ∂y = -trunc(x / y)), `rem_euclid`,
/// `div_euclid` (piecewise constant), `copysign` (∂x = ±1, ∂y = 0), the
/// `bool` methods of `f64` in conditions, and `saturating_sub` /
/// `abs_diff` of `usize` counts.
#[differentiable]
fn methods_remainders(x: f64, y: f64, n: usize) -> f64 {
    let mut r = (3.0 * x) % y;
    r %= 1.7;
    let w = x.rem_euclid(0.4 * y) + (x * y).div_euclid(0.3) * x;
    let s = x.copysign(y - 1.0) + (-2.0_f64).copysign(x) * y;
    let g = if (x / y).is_finite() && !x.is_nan() && !y.is_infinite() {
        x
    } else {
        y
    };
    let h = if y.is_sign_negative() { x } else { y * 0.5 };
    let k = n.saturating_sub(3) + n.abs_diff(2) + 1usize.saturating_sub(n);
    r * y + w + s * g + h + (k as f64) * x
}

#[test]
fn methods_rem_copysign_rem_euclid_predicates() {
    // x % y wraps (3x > y), both signs; y - 1 changes sign between points
    for p in [(0.7, 1.6), (-1.3, 0.5), (2.1, -0.8), (0.2, 1.1)] {
        for n in [0usize, 2, 5] {
            assert_eq!(
                methods_remainders_jvp(p.0, p.1, n, 0.0, 0.0).0.to_bits(),
                methods_remainders(p.0, p.1, n).to_bits()
            );
            check_derivatives(
                &p,
                |(x, y)| methods_remainders(*x, *y, n),
                |(x, y), (dx, dy)| methods_remainders_jvp(*x, *y, n, *dx, *dy),
                |(x, y), ct| methods_remainders_vjp(*x, *y, n, *ct),
            );
        }
    }
}

/// `%` of arrays by a scalar and elementwise, `copysign` in `mapv`.
#[differentiable]
fn array_remainders(v: &Array1<f64>, w: &Array1<f64>) -> f64 {
    let r = v % 1.5 + &(w % v);
    let s = v.mapv(|x| x.copysign(-1.0) * x.rem_euclid(0.7));
    (&r * &s).sum()
}

#[test]
fn array_remainders_elementwise() {
    let v = Array1::from(vec![0.3, 2.2, -1.7, 4.1]);
    let w = Array1::from(vec![1.9, -0.4, 5.3, 2.6]);
    check_derivatives(
        &(v, w),
        |(v, w)| array_remainders(v, w),
        |(v, w), (dv, dw)| array_remainders_jvp(v, w, dv, dw),
        |(v, w), ct| array_remainders_vjp(v, w, *ct),
    );
}

/// exp_m1 ln_1p max min recip mul_add hypot.
#[differentiable]
fn methods_c(x: f64, y: f64) -> f64 {
    x.exp_m1() + y.ln_1p() + x.max(y) * 2.0 + x.min(y) + x.recip() + x.mul_add(y, 0.5) + x.hypot(y)
}

#[test]
fn methods_exp_m1_ln_1p_max_min_recip_mul_add_hypot() {
    // both orders, so each of max and min takes both branches
    for p in [(0.7, 1.6), (1.8, 0.5)] {
        check_derivatives(
            &p,
            |(x, y)| methods_c(*x, *y),
            |(x, y), (dx, dy)| methods_c_jvp(*x, *y, *dx, *dy),
            |(x, y), ct| methods_c_vjp(*x, *y, *ct),
        );
    }
}

/// Methods on method results and on parenthesised expressions.
#[differentiable]
fn method_chains(x: f64) -> f64 {
    (x * x + 1.0).sqrt().ln().sin() + x.cos().powi(2).exp()
}

#[test]
fn method_chains_compose() {
    check_derivatives(
        &0.45,
        |x| method_chains(*x),
        |x, dx| method_chains_jvp(*x, *dx),
        |x, ct| method_chains_vjp(*x, *ct),
    );
}

// --- constants, casts, integer parameters -----------------------------------

/// `f64::consts::PI` (through `std::`), `as f64` casts of integer constants and
/// integer arithmetic on them.
#[differentiable]
fn consts_and_casts(x: f64, n: usize, k: i32) -> f64 {
    let m = n * 2 + 1;
    let a = m as f64;
    let b = (k - 1) as f64;
    (std::f64::consts::PI * x).sin() * a + x * b + (n as f64) / (x + 2.0)
}

#[test]
fn constants_casts_and_integer_parameters() {
    for (n, k) in [(0usize, 0i32), (3, 5), (7, -2)] {
        check_derivatives(
            &0.35,
            |x| consts_and_casts(*x, n, k),
            |x, dx| consts_and_casts_jvp(*x, n, k, *dx),
            |x, ct| consts_and_casts_vjp(*x, n, k, *ct),
        );
    }
}

/// `f64::INFINITY` and `f64::NEG_INFINITY` as values clamped by min/max.
#[differentiable]
fn infinities(x: f64, y: f64) -> f64 {
    let lo = f64::NEG_INFINITY.max(x);
    let hi = f64::INFINITY.min(y);
    lo * hi + x.min(f64::INFINITY)
}

#[test]
fn infinity_constants() {
    check_derivatives(
        &(0.5, -1.5),
        |(x, y)| infinities(*x, *y),
        |(x, y), (dx, dy)| infinities_jvp(*x, *y, *dx, *dy),
        |(x, y), ct| infinities_vjp(*x, *y, *ct),
    );
}

/// `powi` with an integer parameter as the exponent.
#[differentiable]
fn integer_power(x: f64, n: i32) -> f64 {
    x.powi(n) + x.powi(n + 1) * 0.5
}

#[test]
fn powi_with_integer_parameter() {
    for n in [0, 1, 2, 5, -3] {
        check_derivatives(
            &1.3,
            |x| integer_power(*x, n),
            |x, dx| integer_power_jvp(*x, n, *dx),
            |x, ct| integer_power_vjp(*x, n, *ct),
        );
    }
}

// --- tuple parameters and outputs -------------------------------------------

/// A tuple of `f64` as a differentiable parameter: its tangent and
/// cotangent are tuples.
#[differentiable]
fn tuple_param(p: (f64, f64, f64), s: f64) -> f64 {
    let (a, b, c) = p;
    (a * b + c) * s + p.0.sin()
}

#[test]
fn tuple_parameter() {
    check_derivatives(
        &((0.3, -0.8, 1.1), 0.6),
        |(p, s)| tuple_param(*p, *s),
        |(p, s), (dp, ds)| tuple_param_jvp(*p, *s, *dp, *ds),
        |(p, s), ct| tuple_param_vjp(*p, *s, *ct),
    );
    // the cotangent of the tuple is a tuple
    let (_, (dp, ds)): (f64, ((f64, f64, f64), f64)) = tuple_param_vjp((1.0, 2.0, 3.0), 2.0, 1.0);
    assert_eq!(dp.2, 2.0);
    assert_eq!(ds, 5.0);
}

/// A tuple output: tangent and cotangent are tuples of the same shape.
#[differentiable]
fn polar(r: f64, theta: f64) -> (f64, f64) {
    (r * theta.cos(), r * theta.sin())
}

#[test]
fn tuple_output() {
    check_derivatives(
        &(1.5, 0.7),
        |(r, t)| polar(*r, *t),
        |(r, t), (dr, dt)| polar_jvp(*r, *t, *dr, *dt),
        |(r, t), ct| polar_vjp(*r, *t, *ct),
    );
}

/// A three-component tuple output built from shared subexpressions.
#[differentiable]
fn stats3(a: f64, b: f64, c: f64) -> (f64, f64, f64) {
    let mean = (a + b + c) / 3.0;
    let var = ((a - mean).powi(2) + (b - mean).powi(2) + (c - mean).powi(2)) / 3.0;
    (mean, var, var.sqrt())
}

#[test]
fn triple_output() {
    check_derivatives(
        &(0.2, 1.7, -0.4),
        |(a, b, c)| stats3(*a, *b, *c),
        |(a, b, c), (da, db, dc)| stats3_jvp(*a, *b, *c, *da, *db, *dc),
        |(a, b, c), ct| stats3_vjp(*a, *b, *c, *ct),
    );
}

/// A function that ignores a parameter: its cotangent is zero.
#[differentiable]
fn ignores_y(x: f64, y: f64) -> f64 {
    let _ = y;
    x * 3.0
}

#[test]
fn unused_parameter_has_zero_cotangent() {
    let (v, (gx, gy)) = ignores_y_vjp(2.0, 5.0, 1.0);
    assert_eq!((v, gx, gy), (6.0, 3.0, 0.0));
    check_derivatives(
        &(2.0, 5.0),
        |(x, y)| ignores_y(*x, *y),
        |(x, y), (dx, dy)| ignores_y_jvp(*x, *y, *dx, *dy),
        |(x, y), ct| ignores_y_vjp(*x, *y, *ct),
    );
}

/// A constant output: every derivative is zero.
#[differentiable]
fn constant_output(x: f64) -> f64 {
    let _ = x;
    4.0
}

#[test]
fn constant_function() {
    assert_eq!(constant_output(1.0), 4.0);
    assert_eq!(constant_output_jvp(1.0, 1.0), (4.0, 0.0));
    assert_eq!(constant_output_vjp(1.0, 1.0), (4.0, 0.0));
}

/// `f64::consts::PI` written as in the contract (with `use std::f64;`).
mod pi_path {
    #![allow(clippy::legacy_numeric_constants)]
    use linad::differentiable;
    use std::f64;

    #[differentiable]
    pub fn circle(r: f64) -> f64 {
        f64::consts::PI * r * r + (f64::consts::PI * r).sin()
    }
}

#[test]
fn consts_path_as_in_the_contract() {
    check_derivatives(
        &0.7,
        |r| pi_path::circle(*r),
        |r, dr| pi_path::circle_jvp(*r, *dr),
        |r, ct| pi_path::circle_vjp(*r, *ct),
    );
}

/// Piecewise-constant methods: no derivative through `floor`, `ceil`,
/// `round`, `trunc`, `signum` (zero almost everywhere, as JAX), derivative 1
/// through `fract` (`x - x.trunc()`); the primal bits are `f`'s.
#[differentiable]
fn steps(x: f64, y: f64) -> f64 {
    let a = x.signum() * y.floor() + (x * 3.7).round() * y + f64::ceil(y * 2.3) * x;
    let b = x.fract() * y + y.trunc() * x + (x - y).abs().fract();
    a + b * x
}

/// Linear interpolation in a table: the index from `floor`, the weight
/// from the remainder.
#[differentiable]
fn interpolate(table: &Array1<f64>, x: f64) -> f64 {
    let t = x.clamp(0.0, (table.len() - 1) as f64 - 1e-9);
    let i = t.floor() as usize;
    let w = t - t.floor();
    table[i] * (1.0 - w) + table[i + 1] * w + table.mapv(f64::round).sum() + table.floor().sum()
}

#[test]
fn piecewise_constant_methods() {
    for (x, y) in [(0.31, 0.77), (0.52, 1.3), (-0.21, 0.45), (-1.6, 2.55)] {
        check_derivatives(
            &(x, y),
            |(x, y)| steps(*x, *y),
            |(x, y), (dx, dy)| steps_jvp(*x, *y, *dx, *dy),
            |(x, y), ct| steps_vjp(*x, *y, *ct),
        );
    }
    let table = Array1::from(vec![0.4, 1.7, -0.3, 2.2]);
    for x in [0.2, 1.4, 2.6, 7.0] {
        check_derivatives(
            &(table.clone(), x),
            |(t, x)| interpolate(t, *x),
            |(t, x), (dt, dx)| interpolate_jvp(t, *x, dt, *dx),
            |(t, x), ct| interpolate_vjp(t, *x, *ct),
        );
    }
}
