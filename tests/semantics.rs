//! Rust's semantics at the edges: the primal results of `f`, `f_jvp` and
//! `f_vjp` are bit-identical for every scalar primitive, method, cast and
//! reduction on edge values (±0, subnormals, ±inf, NaN, huge, tiny), and the
//! companions panic exactly where `f` panics. (NaNs compare as one value:
//! Rust does not specify a NaN result's sign or payload.)
#![allow(clippy::excessive_precision, clippy::manual_clamp)]

mod common;
use linad::differentiable;
use linad::ndarray::{array, Array1};
use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Once;

/// Edge values of `f64`.
const EDGES: [f64; 20] = [
    0.0,
    -0.0,
    5e-324,
    -5e-324,
    2.2250738585072014e-308,
    1e-300,
    1e-10,
    0.5,
    1.0,
    -1.0,
    3.7,
    -2.5,
    709.5,
    -745.5,
    1e300,
    -1e300,
    f64::MAX,
    f64::INFINITY,
    f64::NEG_INFINITY,
    f64::NAN,
];

thread_local! {
    /// Set while [`outcome`] runs a call whose panic is expected.
    static QUIET: Cell<bool> = const { Cell::new(false) };
}

/// `Ok(bits)` of a result, or `Err(())` where the call panicked (its
/// message is not printed; other panics, failed assertions, still are).
fn outcome(f: impl FnOnce() -> f64) -> Result<u64, ()> {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !QUIET.with(Cell::get) {
                default(info)
            }
        }));
    });
    QUIET.with(|q| q.set(true));
    let r = catch_unwind(AssertUnwindSafe(f));
    QUIET.with(|q| q.set(false));
    // Rust leaves the sign and payload of a NaN result unspecified (RFC 3514):
    // all NaNs compare as one.
    r.map(|x| {
        if x.is_nan() {
            f64::NAN.to_bits()
        } else {
            x.to_bits()
        }
    })
    .map_err(|_| ())
}

/// `f`, `f_jvp` and `f_vjp` agree bit for bit (or all panic) at `x`.
#[track_caller]
fn same1(
    name: &str,
    x: f64,
    f: fn(f64) -> f64,
    jvp: fn(f64, f64) -> (f64, f64),
    vjp: fn(f64, f64) -> (f64, f64),
) {
    let want = outcome(|| f(x));
    let j = outcome(|| jvp(x, 1.0).0);
    let v = outcome(|| vjp(x, 1.0).0);
    assert_eq!(want, j, "{name}({x:e}): f vs f_jvp primal");
    assert_eq!(want, v, "{name}({x:e}): f vs f_vjp primal");
}

macro_rules! unary {
    ($($name:ident = |$x:ident| $body:expr;)*) => {
        $(
            #[differentiable]
            fn $name($x: f64) -> f64 {
                $body
            }
        )*
    };
}

#[test]
fn unary_methods_bit_identical_on_edges() {
    for x in EDGES {
        same1("sin", x, u_sin, u_sin_jvp, u_sin_vjp);
        same1("cos", x, u_cos, u_cos_jvp, u_cos_vjp);
        same1("tan", x, u_tan, u_tan_jvp, u_tan_vjp);
        same1("exp", x, u_exp, u_exp_jvp, u_exp_vjp);
        same1("ln", x, u_ln, u_ln_jvp, u_ln_vjp);
        same1("log2", x, u_log2, u_log2_jvp, u_log2_vjp);
        same1("log10", x, u_log10, u_log10_jvp, u_log10_vjp);
        same1("sqrt", x, u_sqrt, u_sqrt_jvp, u_sqrt_vjp);
        same1("abs", x, u_abs, u_abs_jvp, u_abs_vjp);
        same1("tanh", x, u_tanh, u_tanh_jvp, u_tanh_vjp);
        same1("sinh", x, u_sinh, u_sinh_jvp, u_sinh_vjp);
        same1("cosh", x, u_cosh, u_cosh_jvp, u_cosh_vjp);
        same1("atan", x, u_atan, u_atan_jvp, u_atan_vjp);
        same1("asin", x, u_asin, u_asin_jvp, u_asin_vjp);
        same1("acos", x, u_acos, u_acos_jvp, u_acos_vjp);
        same1("asinh", x, u_asinh, u_asinh_jvp, u_asinh_vjp);
        same1("acosh", x, u_acosh, u_acosh_jvp, u_acosh_vjp);
        same1("atanh", x, u_atanh, u_atanh_jvp, u_atanh_vjp);
        same1("exp_m1", x, u_exp_m1, u_exp_m1_jvp, u_exp_m1_vjp);
        same1("ln_1p", x, u_ln_1p, u_ln_1p_jvp, u_ln_1p_vjp);
        same1("recip", x, u_recip, u_recip_jvp, u_recip_vjp);
        same1("exp2", x, u_exp2, u_exp2_jvp, u_exp2_vjp);
        same1("cbrt", x, u_cbrt, u_cbrt_jvp, u_cbrt_vjp);
        same1(
            "to_degrees",
            x,
            u_to_degrees,
            u_to_degrees_jvp,
            u_to_degrees_vjp,
        );
        same1(
            "to_radians",
            x,
            u_to_radians,
            u_to_radians_jvp,
            u_to_radians_vjp,
        );
        same1("powi3", x, u_powi3, u_powi3_jvp, u_powi3_vjp);
        same1("powim2", x, u_powim2, u_powim2_jvp, u_powim2_vjp);
        same1("powi0", x, u_powi0, u_powi0_jvp, u_powi0_vjp);
        same1("neg", x, u_neg, u_neg_jvp, u_neg_vjp);
        same1("sq", x, u_sq, u_sq_jvp, u_sq_vjp);
        same1("clamp", x, u_clamp, u_clamp_jvp, u_clamp_vjp);
        same1("clamp0", x, u_clamp0, u_clamp0_jvp, u_clamp0_vjp);
        same1("log3", x, u_log3, u_log3_jvp, u_log3_vjp);
        same1("sin_cos", x, u_sin_cos, u_sin_cos_jvp, u_sin_cos_vjp);
        same1("mul_add", x, u_mul_add, u_mul_add_jvp, u_mul_add_vjp);
        same1(
            "mul_add_self",
            x,
            u_mul_add_self,
            u_mul_add_self_jvp,
            u_mul_add_self_vjp,
        );
        same1("max", x, u_max, u_max_jvp, u_max_vjp);
        same1("min", x, u_min, u_min_jvp, u_min_vjp);
        same1("hypot", x, u_hypot, u_hypot_jvp, u_hypot_vjp);
        same1("atan2", x, u_atan2, u_atan2_jvp, u_atan2_vjp);
        same1("powf", x, u_powf, u_powf_jvp, u_powf_vjp);
        same1(
            "powf_base",
            x,
            u_powf_base,
            u_powf_base_jvp,
            u_powf_base_vjp,
        );
        same1("div", x, u_div, u_div_jvp, u_div_vjp);
        same1("as_u8", x, u_as_u8, u_as_u8_jvp, u_as_u8_vjp);
        same1("as_i8", x, u_as_i8, u_as_i8_jvp, u_as_i8_vjp);
        same1("as_u16", x, u_as_u16, u_as_u16_jvp, u_as_u16_vjp);
        same1("as_i16", x, u_as_i16, u_as_i16_jvp, u_as_i16_vjp);
        same1("as_u32", x, u_as_u32, u_as_u32_jvp, u_as_u32_vjp);
        same1("as_i32", x, u_as_i32, u_as_i32_jvp, u_as_i32_vjp);
        same1("as_u64", x, u_as_u64, u_as_u64_jvp, u_as_u64_vjp);
        same1("as_usize", x, u_as_usize, u_as_usize_jvp, u_as_usize_vjp);
        same1("as_i64", x, u_as_i64, u_as_i64_jvp, u_as_i64_vjp);
        same1("is_nan", x, u_is_nan, u_is_nan_jvp, u_is_nan_vjp);
        same1(
            "is_finite",
            x,
            u_is_finite,
            u_is_finite_jvp,
            u_is_finite_vjp,
        );
        same1(
            "is_infinite",
            x,
            u_is_infinite,
            u_is_infinite_jvp,
            u_is_infinite_vjp,
        );
        same1("sign_bit", x, u_sign_bit, u_sign_bit_jvp, u_sign_bit_vjp);
        same1("copysign", x, u_copysign, u_copysign_jvp, u_copysign_vjp);
    }
}

unary! {
    u_sin = |x| x.sin();
    u_cos = |x| x.cos();
    u_tan = |x| x.tan();
    u_exp = |x| x.exp();
    u_ln = |x| x.ln();
    u_log2 = |x| x.log2();
    u_log10 = |x| x.log10();
    u_sqrt = |x| x.sqrt();
    u_abs = |x| x.abs();
    u_tanh = |x| x.tanh();
    u_sinh = |x| x.sinh();
    u_cosh = |x| x.cosh();
    u_atan = |x| x.atan();
    u_asin = |x| x.asin();
    u_acos = |x| x.acos();
    u_asinh = |x| x.asinh();
    u_acosh = |x| x.acosh();
    u_atanh = |x| x.atanh();
    u_exp_m1 = |x| x.exp_m1();
    u_ln_1p = |x| x.ln_1p();
    u_recip = |x| x.recip();
    u_exp2 = |x| x.exp2();
    u_cbrt = |x| x.cbrt();
    u_to_degrees = |x| x.to_degrees();
    u_to_radians = |x| x.to_radians();
    u_powi3 = |x| x.powi(3);
    u_powim2 = |x| x.powi(-2);
    u_powi0 = |x| x.powi(0);
    u_neg = |x| -x;
    u_sq = |x| x * x;
    u_clamp = |x| x.clamp(-1.0, 2.0);
    u_clamp0 = |x| x.clamp(0.0, 0.0);
    u_log3 = |x| x.log(3.0);
    u_sin_cos = |x| { let (s, c) = x.sin_cos(); s * c };
    u_mul_add = |x| x.mul_add(0.1, -1.0);
    u_mul_add_self = |x| x.mul_add(x, x);
    u_max = |x| x.max(0.5);
    u_min = |x| x.min(0.5);
    u_hypot = |x| x.hypot(3.0);
    u_atan2 = |x| x.atan2(-2.0);
    u_powf = |x| x.powf(1.5);
    u_powf_base = |x| 2.0_f64.powf(x);
    u_div = |x| 1.0 / x;
    u_as_u8 = |x| (x as u8) as f64;
    u_as_i8 = |x| (x as i8) as f64;
    u_as_u16 = |x| (x as u16) as f64;
    u_as_i16 = |x| (x as i16) as f64;
    u_as_u32 = |x| (x as u32) as f64;
    u_as_i32 = |x| (x as i32) as f64;
    u_as_u64 = |x| (x as u64) as f64;
    u_as_usize = |x| (x as usize) as f64 * x;
    u_as_i64 = |x| (x as i64) as f64;
    u_is_nan = |x| if x.is_nan() { 1.0 } else { x };
    u_is_finite = |x| if x.is_finite() { x } else { -1.0 };
    u_is_infinite = |x| if x.is_infinite() { 2.0 } else { x * 0.5 };
    u_sign_bit = |x| if x.is_sign_negative() { 1.0 } else if x.is_sign_positive() { 2.0 } else { 3.0 };
    u_copysign = |x| 2.0_f64.copysign(x) * x.copysign(-1.0);
}

/// `f_vjp` of a function of two `f64`s.
type V2 = fn(f64, f64, f64) -> (f64, (f64, f64));

/// `f`, `f_jvp` and `f_vjp` agree bit for bit (or all panic) at `(x, y)`.
#[track_caller]
fn same2(
    name: &str,
    x: f64,
    y: f64,
    f: fn(f64, f64) -> f64,
    jvp: fn(f64, f64, f64, f64) -> (f64, f64),
    vjp: V2,
) {
    let want = outcome(|| f(x, y));
    let j = outcome(|| jvp(x, y, 1.0, -1.0).0);
    let v = outcome(|| vjp(x, y, 1.0).0);
    assert_eq!(want, j, "{name}({x:e}, {y:e}): f vs f_jvp primal");
    assert_eq!(want, v, "{name}({x:e}, {y:e}): f vs f_vjp primal");
}

#[differentiable]
fn b_max(x: f64, y: f64) -> f64 {
    x.max(y)
}
#[differentiable]
fn b_min(x: f64, y: f64) -> f64 {
    x.min(y)
}
#[differentiable]
fn b_powf(x: f64, y: f64) -> f64 {
    x.powf(y)
}
#[differentiable]
fn b_atan2(x: f64, y: f64) -> f64 {
    x.atan2(y)
}
#[differentiable]
fn b_hypot(x: f64, y: f64) -> f64 {
    x.hypot(y)
}
#[differentiable]
fn b_mul_add(x: f64, y: f64) -> f64 {
    x.mul_add(y, 0.3)
}
#[differentiable]
fn b_arith(x: f64, y: f64) -> f64 {
    (x + y) * (x - y) / y
}
#[differentiable]
fn b_clamp(x: f64, y: f64) -> f64 {
    // panics (in f and in both companions) where y is NaN or y < -1
    x.clamp(-1.0, y)
}
#[differentiable]
fn b_log(x: f64, y: f64) -> f64 {
    x.log(y)
}
#[differentiable]
fn b_rem(x: f64, y: f64) -> f64 {
    let mut r = x % y;
    r %= 2.5;
    r
}
#[differentiable]
fn b_copysign(x: f64, y: f64) -> f64 {
    x.copysign(y)
}
#[differentiable]
fn b_rem_euclid(x: f64, y: f64) -> f64 {
    x.rem_euclid(y)
}
#[differentiable]
fn b_div_euclid(x: f64, y: f64) -> f64 {
    x.div_euclid(y) + y
}
#[differentiable]
fn b_cmp(x: f64, y: f64) -> f64 {
    if x < y {
        x
    } else if x == y {
        0.5 * y
    } else {
        y * 2.0
    }
}

#[test]
fn binary_methods_bit_identical_on_edges() {
    for x in EDGES {
        for y in EDGES {
            same2("max", x, y, b_max, b_max_jvp, b_max_vjp);
            same2("min", x, y, b_min, b_min_jvp, b_min_vjp);
            same2("powf", x, y, b_powf, b_powf_jvp, b_powf_vjp);
            same2("atan2", x, y, b_atan2, b_atan2_jvp, b_atan2_vjp);
            same2("hypot", x, y, b_hypot, b_hypot_jvp, b_hypot_vjp);
            same2("mul_add", x, y, b_mul_add, b_mul_add_jvp, b_mul_add_vjp);
            same2("arith", x, y, b_arith, b_arith_jvp, b_arith_vjp);
            same2("clamp", x, y, b_clamp, b_clamp_jvp, b_clamp_vjp);
            same2("log", x, y, b_log, b_log_jvp, b_log_vjp);
            same2("cmp", x, y, b_cmp, b_cmp_jvp, b_cmp_vjp);
            same2("rem", x, y, b_rem, b_rem_jvp, b_rem_vjp);
            same2("copysign", x, y, b_copysign, b_copysign_jvp, b_copysign_vjp);
            same2(
                "rem_euclid",
                x,
                y,
                b_rem_euclid,
                b_rem_euclid_jvp,
                b_rem_euclid_vjp,
            );
            same2(
                "div_euclid",
                x,
                y,
                b_div_euclid,
                b_div_euclid_jvp,
                b_div_euclid_vjp,
            );
        }
    }
}

// --- reductions ---------------------------------------------------------------

#[differentiable]
fn r_sum(w: &Array1<f64>) -> f64 {
    w.sum()
}
#[differentiable]
fn r_product(w: &Array1<f64>) -> f64 {
    w.product()
}
#[differentiable]
fn r_iter_sum(w: &Array1<f64>) -> f64 {
    w.iter().map(|v| v * 2.0).sum::<f64>()
}
#[differentiable]
fn r_fold_max(w: &Array1<f64>) -> f64 {
    w.iter().cloned().fold(f64::NEG_INFINITY, f64::max)
}
#[differentiable]
fn r_fold_min(w: &Array1<f64>) -> f64 {
    w.iter().cloned().fold(f64::INFINITY, f64::min)
}
#[differentiable]
fn r_dot(w: &Array1<f64>) -> f64 {
    w.dot(w)
}
/// logsumexp with the max trick: a value (-inf) on an empty array.
#[differentiable]
fn r_logsumexp(w: &Array1<f64>) -> f64 {
    let m = w.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let s = w.mapv(|v| (v - m).exp()).sum();
    m + s.ln()
}

type R1 = fn(&Array1<f64>) -> f64;
type J1 = fn(&Array1<f64>, &Array1<f64>) -> (f64, f64);
type V1 = fn(&Array1<f64>, f64) -> (f64, Array1<f64>);

#[test]
fn reductions_bit_identical_on_edges_and_empty_arrays() {
    let cases: [(&str, R1, J1, V1); 7] = [
        ("sum", r_sum, r_sum_jvp, r_sum_vjp),
        ("product", r_product, r_product_jvp, r_product_vjp),
        ("iter_sum", r_iter_sum, r_iter_sum_jvp, r_iter_sum_vjp),
        ("fold_max", r_fold_max, r_fold_max_jvp, r_fold_max_vjp),
        ("fold_min", r_fold_min, r_fold_min_jvp, r_fold_min_vjp),
        ("dot", r_dot, r_dot_jvp, r_dot_vjp),
        ("logsumexp", r_logsumexp, r_logsumexp_jvp, r_logsumexp_vjp),
    ];
    let mut inputs: Vec<Array1<f64>> = vec![Array1::zeros(0), array![0.0], array![-0.0]];
    for k in 0..EDGES.len() {
        inputs.push(Array1::from_iter(
            (0..EDGES.len()).map(|i| EDGES[(i + k) % EDGES.len()]),
        ));
        inputs.push(array![EDGES[k], -0.0, 1.5]);
        inputs.push(array![-0.0, EDGES[k]]);
    }
    for w in &inputs {
        let dw = Array1::ones(w.len());
        for (name, f, jvp, vjp) in cases {
            let want = outcome(|| f(w));
            assert_eq!(
                want,
                outcome(|| jvp(w, &dw).0),
                "{name}({w}): f vs f_jvp primal"
            );
            assert_eq!(
                want,
                outcome(|| vjp(w, 1.0).0),
                "{name}({w}): f vs f_vjp primal"
            );
        }
    }
}

// --- integers -----------------------------------------------------------------

/// Integer casts wrap (int to int) and saturate (float to int) as Rust's `as`.
#[differentiable]
fn int_casts(x: f64, n: usize, k: i32) -> f64 {
    let a = (n * 7) as u8;
    let b = (k as i8) as f64;
    let c = (n as u16) as f64;
    let d = ((k * 3) as u32) as f64;
    let e = (x * 100.0) as u8;
    let g = (x * 1e10) as i32;
    x * (a as f64) + b + c + d + (e as f64) * x + (g as f64)
}

#[test]
fn integer_casts_follow_rust() {
    for n in [0usize, 37, 300, 70_000, 1 << 40] {
        for k in [0i32, -1, 200, -300, 1 << 30, i32::MIN / 3] {
            for x in EDGES {
                let want = outcome(|| int_casts(x, n, k));
                let j = outcome(|| int_casts_jvp(x, n, k, 1.0).0);
                let v = outcome(|| int_casts_vjp(x, n, k, 1.0).0);
                assert_eq!(want, j, "int_casts({x}, {n}, {k}) vs jvp");
                assert_eq!(want, v, "int_casts({x}, {n}, {k}) vs vjp");
            }
        }
    }
}

/// Narrow integer arithmetic overflows as in `f`: a panic with overflow
/// checks (debug), wrapping without (release).
#[differentiable]
fn narrow_arith(x: f64, a: u8, b: u8, c: i16) -> f64 {
    let s = a + b;
    let p = c * 300;
    let m = -c;
    x * (s as f64) + (p as f64) + (m as f64) * x
}

#[test]
fn narrow_integer_overflow_follows_f() {
    for (a, b, c) in [
        (1u8, 2u8, 3i16),
        (200, 100, 3),
        (1, 2, 200),
        (0, 0, i16::MIN),
    ] {
        let want = outcome(|| narrow_arith(0.5, a, b, c));
        assert_eq!(want, outcome(|| narrow_arith_jvp(0.5, a, b, c, 1.0).0));
        assert_eq!(want, outcome(|| narrow_arith_vjp(0.5, a, b, c, 1.0).0));
    }
}

/// `n - 1` on `usize` with `n = 0`: overflow, exactly as in `f`.
#[differentiable]
fn count_down(x: f64, w: &Array1<f64>, n: usize) -> f64 {
    let mut s = x;
    for i in 0..n - 1 {
        s += w[i] * x;
    }
    s
}

#[test]
fn usize_underflow_in_range_follows_f() {
    let w = array![1.0, 2.0, 3.0];
    for n in [0usize, 1, 3, 4] {
        let want = outcome(|| count_down(0.5, &w, n));
        let dw = Array1::zeros(3);
        assert_eq!(
            want,
            outcome(|| count_down_jvp(0.5, &w, n, 1.0, &dw).0),
            "n = {n}"
        );
        assert_eq!(
            want,
            outcome(|| count_down_vjp(0.5, &w, n, 1.0).0),
            "n = {n}"
        );
    }
}

// --- empty arrays ---------------------------------------------------------------

use linad::ndarray::{s, Array2, Axis};

/// Array operations on empty arrays: `f` returns a value, so must both
/// companions.
#[differentiable]
fn empties(m: &Array2<f64>, v: &Array1<f64>) -> f64 {
    let a = m.sum_axis(Axis(0)).sum() + m.sum_axis(Axis(1)).sum();
    let b = m.mapv(|x| x.exp()).sum() + v.product();
    let c = Array1::from_shape_fn(v.len(), |i| v[i] * 2.0).sum();
    let d = m.dot(&m.t()).sum() + m.t().dot(m).sum();
    let mx = m.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let e = if mx > 0.0 { mx } else { 0.0 };
    a + b + c + d + e + v.dot(v)
}

#[test]
fn empty_arrays_follow_f() {
    for (r, c) in [(0usize, 0usize), (0, 3), (3, 0), (2, 3)] {
        let m = Array2::from_shape_fn((r, c), |(i, j)| 0.1 * (i + 2 * j) as f64);
        for n in [0usize, 2] {
            let v = Array1::from_shape_fn(n, |i| i as f64 + 0.5);
            let want = outcome(|| empties(&m, &v));
            let dm = Array2::ones((r, c));
            let dv = Array1::ones(n);
            assert_eq!(
                want,
                outcome(|| empties_jvp(&m, &v, &dm, &dv).0),
                "{r}x{c}, {n}: jvp"
            );
            assert_eq!(
                want,
                outcome(|| empties_vjp(&m, &v, 1.0).0),
                "{r}x{c}, {n}: vjp"
            );
            assert!(want.is_ok(), "f itself panicked on {r}x{c}, {n}");
        }
    }
}

/// `mean()` / `mean_axis(..)` of an empty array is `None`: `f` panics at
/// `unwrap()`, and so do both companions.
#[differentiable]
fn means(m: &Array2<f64>, v: &Array1<f64>) -> f64 {
    v.mean().unwrap() + m.mean_axis(Axis(0)).unwrap().sum() * 0.5
}

#[test]
fn mean_of_an_empty_array_panics_as_in_f() {
    for (r, c, n) in [
        (2usize, 3usize, 2usize),
        (0, 3, 2),
        (2, 3, 0),
        (0, 0, 0),
        (3, 0, 1),
    ] {
        let m = Array2::from_shape_fn((r, c), |(i, j)| 0.1 * (i + 2 * j) as f64);
        let v = Array1::from_shape_fn(n, |i| i as f64 + 0.5);
        let want = outcome(|| means(&m, &v));
        let (dm, dv) = (Array2::ones((r, c)), Array1::ones(n));
        assert_eq!(
            want,
            outcome(|| means_jvp(&m, &v, &dm, &dv).0),
            "{r}x{c}, {n}: jvp"
        );
        assert_eq!(
            want,
            outcome(|| means_vjp(&m, &v, 1.0).0),
            "{r}x{c}, {n}: vjp"
        );
    }
}

/// A broadcast to an incompatible shape and a slice past the end: `f`
/// panics (`broadcast(..)` is `None`, ndarray's slice bounds check), and so
/// do both companions; within bounds all three agree.
#[differentiable]
fn bounds(v: &Array1<f64>, k: usize, lo: isize, hi: isize) -> f64 {
    let b = v.broadcast((2, k)).unwrap();
    let s = v.slice(s![lo..hi]);
    b.sum() + s.sum() * 0.5
}

#[test]
fn broadcast_and_slice_bounds_panic_as_in_f() {
    let v = Array1::from(vec![0.5, -1.0, 2.0]);
    let dv = Array1::ones(3);
    for (k, lo, hi) in [
        (3usize, 0isize, 3isize),
        (3, 1, 2),
        (3, -2, 3),
        (2, 0, 3),
        (4, 0, 3),
        (3, 0, 4),
        (3, 4, 4),
        (3, 2, 1),
        (3, -4, 2),
    ] {
        let want = outcome(|| bounds(&v, k, lo, hi));
        let jvp = outcome(|| bounds_jvp(&v, k, lo, hi, &dv).0);
        let vjp = outcome(|| bounds_vjp(&v, k, lo, hi, 1.0).0);
        assert_eq!((want, want), (jvp, vjp), "k {k}, {lo}..{hi}");
    }
}

/// `usize` values past `i64::MAX` compare and take max/min, `saturating_sub`
/// and `abs_diff` as unsigned (narrow unsigned types too).
#[differentiable]
fn big_usize(x: f64, n: usize, m: usize) -> f64 {
    let a = if n < m { 1.0 } else { 2.0 };
    let b = if n >= m { 3.0 } else { 5.0 };
    let c = n.max(m) as f64;
    let d = std::cmp::min(n, m) as f64;
    let e = n.saturating_sub(m) as f64 + m.abs_diff(n) as f64;
    let g = (n as u8).saturating_sub(m as u8) as f64 + (m as u32).abs_diff(n as u32) as f64;
    x * (a + b) + c + d + e + g
}

#[test]
fn usize_beyond_i64_compares_unsigned() {
    for (n, m) in [
        (1usize, usize::MAX),
        (usize::MAX, 3),
        (usize::MAX - 1, usize::MAX),
        (4, 4),
        (300, 7),
        (0, 1usize << 63),
    ] {
        let want = outcome(|| big_usize(0.5, n, m));
        assert_eq!(want, outcome(|| big_usize_jvp(0.5, n, m, 1.0).0), "{n} {m}");
        assert_eq!(want, outcome(|| big_usize_vjp(0.5, n, m, 1.0).0), "{n} {m}");
    }
}

/// `hypot` at the origin has no derivative: both modes give 0 (not NaN).
#[differentiable]
fn hypot_origin(x: f64, y: f64) -> f64 {
    (x - y).hypot(y - x)
}

#[test]
fn hypot_at_the_origin_is_finite_in_both_modes() {
    assert_eq!(hypot_origin(0.5, 0.5), 0.0);
    let (v, d) = hypot_origin_jvp(0.5, 0.5, 1.0, -1.0);
    assert_eq!((v, d), (0.0, 0.0));
    let (v, g) = hypot_origin_vjp(0.5, 0.5, 1.0);
    assert_eq!((v, g), (0.0, (0.0, 0.0)));
}

/// `atan2` at the origin has no derivative: both modes give 0 (not NaN).
#[differentiable]
fn atan2_origin(x: f64, y: f64) -> f64 {
    (x - y).atan2(y - x)
}

#[test]
fn atan2_at_the_origin_is_finite_in_both_modes() {
    assert_eq!(atan2_origin(0.5, 0.5), 0.0);
    let (_, d) = atan2_origin_jvp(0.5, 0.5, 1.0, -1.0);
    assert_eq!(d, 0.0);
    let (_, g) = atan2_origin_vjp(0.5, 0.5, 1.0);
    assert_eq!(g, (0.0, 0.0));
}

// --- subnormal derivative coefficients --------------------------------------------

#[differentiable]
fn exp_of(x: f64) -> f64 {
    x.exp()
}

#[differentiable]
fn exp2_of(x: f64) -> f64 {
    x.exp2()
}

/// `ln(e^a + e^b)` max-shifted, as a softmax's normaliser is written.
#[differentiable]
fn logsumexp2(a: f64, b: f64) -> f64 {
    let m = a.max(b);
    m + ((a - m).exp() + (b - m).exp()).ln()
}

/// `exp`'s (and `exp2`'s) derivative is its result, flushed to zero where
/// that result is subnormal (README, "Correct derivatives"); the primal keeps
/// the subnormal result, bit for bit.
#[test]
fn exp_derivative_is_flushed_only_where_exp_is_subnormal() {
    for x in [-720.0f64, -708.5, -745.0, -1000.0, f64::NEG_INFINITY] {
        let y = exp_of(x);
        assert!(y < f64::MIN_POSITIVE, "{x}");
        let (v, d) = exp_of_jvp(x, 1.0);
        assert_eq!((v.to_bits(), d), (y.to_bits(), 0.0), "jvp at {x}");
        let (v, g) = exp_of_vjp(x, 1.0);
        assert_eq!((v.to_bits(), g), (y.to_bits(), 0.0), "vjp at {x}");
    }
    // From the smallest normal result on, the derivative is exp(x) exactly.
    for x in [-708.39f64, -700.0, -1.5, 0.0, 3.0, 709.0] {
        let y = x.exp();
        assert!(y >= f64::MIN_POSITIVE, "{x}");
        assert_eq!(exp_of_jvp(x, 1.0), (y, y), "jvp at {x}");
        assert_eq!(exp_of_vjp(x, 2.0), (y, 2.0 * y), "vjp at {x}");
    }
    let ln2 = std::f64::consts::LN_2;
    assert_eq!(exp2_of_vjp(-1030.0, 1.0), (exp2_of(-1030.0), 0.0));
    let y = (-1000.0f64).exp2();
    assert_eq!(exp2_of_vjp(-1000.0, 1.0), (y, y * ln2));
    // A log-sum-exp over values 800 apart: the far one's weight underflows
    // to a subnormal (its derivative term to zero), the near ones are exact.
    let (v, (ga, gb)) = logsumexp2_vjp(0.0, -800.0, 1.0);
    assert_eq!(v.to_bits(), logsumexp2(0.0, -800.0).to_bits());
    assert_eq!((ga, gb), (1.0, 0.0));
    let (_, (ga, gb)) = logsumexp2_vjp(0.0, -700.0, 1.0);
    let w = (-700.0f64).exp();
    assert!(gb > 0.0 && (gb - w / (1.0 + w)).abs() <= 1e-15 * gb, "{gb}");
    assert!((ga - 1.0 / (1.0 + w)).abs() <= 1e-15, "{ga}");
}
