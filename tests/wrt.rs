//! `#[differentiable(wrt(..))]`, `#[differentiable(dump)]`, and the exact
//! signatures of the generated companions for every parameter kind.
#![allow(
    clippy::type_complexity,
    clippy::redundant_closure,
    clippy::too_many_arguments
)]

mod common;
use common::*;
use linad::differentiable;
use linad::ndarray::{Array1, Array2, Array3, ArrayView1};

/// The contract's example.
#[differentiable]
fn f(x: f64, w: &Array1<f64>, n: usize) -> f64 {
    let mut s = x;
    for i in 0..n {
        s += w[i] * x;
    }
    s
}

#[test]
fn contract_example_signatures() {
    let _: fn(f64, &Array1<f64>, usize, f64, &Array1<f64>) -> (f64, f64) = f_jvp;
    let _: fn(f64, &Array1<f64>, usize, f64) -> (f64, (f64, Array1<f64>)) = f_vjp;
    let w = Array1::from(vec![0.5, -0.25, 2.0]);
    check_derivatives(
        &(1.5, w),
        |(x, w)| f(*x, w, 3),
        |(x, w), (dx, dw)| f_jvp(*x, w, 3, *dx, dw),
        |(x, w), ct| f_vjp(*x, w, 3, *ct),
    );
}

/// `wrt(x, w)` on the contract's example (the integer is never differentiated).
#[differentiable(wrt(x, w))]
fn f_explicit(x: f64, w: &Array1<f64>, n: usize) -> f64 {
    let mut s = x;
    for i in 0..n {
        s += w[i] * x;
    }
    s
}

#[test]
fn wrt_all_differentiable_parameters() {
    let _: fn(f64, &Array1<f64>, usize, f64, &Array1<f64>) -> (f64, f64) = f_explicit_jvp;
    let _: fn(f64, &Array1<f64>, usize, f64) -> (f64, (f64, Array1<f64>)) = f_explicit_vjp;
    let w = Array1::from(vec![0.5, -0.25, 2.0]);
    assert_eq!(f_explicit(1.5, &w, 3), f(1.5, &w, 3));
    assert_eq!(
        f_explicit_vjp(1.5, &w, 3, 1.0).1 .1,
        f_vjp(1.5, &w, 3, 1.0).1 .1
    );
}

/// `wrt(x)`: one differentiated parameter, so the cotangent is a bare `f64`
/// and `f_jvp` has one tangent parameter.
#[differentiable(wrt(x))]
fn only_x(x: f64, y: f64, w: &Array1<f64>) -> f64 {
    (x * y).sin() + w.sum() * x
}

#[test]
fn wrt_one_scalar() {
    let _: fn(f64, f64, &Array1<f64>, f64) -> (f64, f64) = only_x_jvp;
    let _: fn(f64, f64, &Array1<f64>, f64) -> (f64, f64) = only_x_vjp;
    let w = Array1::from(vec![0.1, 0.2]);
    let y = 0.9;
    check_derivatives(
        &0.4,
        |x| only_x(*x, y, &w),
        |x, dx| only_x_jvp(*x, y, &w, *dx),
        |x, ct| only_x_vjp(*x, y, &w, *ct),
    );
}

/// `wrt(w)`: only the array.
#[differentiable(wrt(w))]
fn only_w(x: f64, w: &Array2<f64>, k: usize) -> f64 {
    w.row(k).mapv(|t| (t * x).exp()).sum()
}

#[test]
fn wrt_one_array() {
    let _: fn(f64, &Array2<f64>, usize, &Array2<f64>) -> (f64, f64) = only_w_jvp;
    let _: fn(f64, &Array2<f64>, usize, f64) -> (f64, Array2<f64>) = only_w_vjp;
    let mut rng = rng("only_w");
    let w = rng.array2(3, 2, -1.0, 1.0);
    check_derivatives(
        &w,
        |w| only_w(0.7, w, 1),
        |w, dw| only_w_jvp(0.7, w, 1, dw),
        |w, ct| only_w_vjp(0.7, w, 1, *ct),
    );
    // rows other than k get zero cotangent
    let (_, g) = only_w_vjp(0.7, &w, 1, 1.0);
    assert!(g.row(0).iter().chain(g.row(2).iter()).all(|&v| v == 0.0));
}

/// `wrt(c, a)` lists the parameters out of order: companions follow the
/// parameter order (`a`, then `c`), skipping `b`.
#[differentiable(wrt(c, a))]
fn out_of_order(a: f64, b: f64, c: f64) -> f64 {
    a * 2.0 + b * 3.0 + c * 5.0
}

#[test]
fn wrt_order_is_parameter_order() {
    let (v, (ga, gc)) = out_of_order_vjp(1.0, 1.0, 1.0, 1.0);
    assert_eq!(v, out_of_order(1.0, 1.0, 1.0));
    assert_eq!((ga, gc), (2.0, 5.0));
    let (_, t) = out_of_order_jvp(1.0, 1.0, 1.0, 1.0, 0.0);
    assert_eq!(t, 2.0);
}

/// `wrt` with a tuple parameter and a tuple output.
#[differentiable(wrt(p))]
fn tuple_wrt(p: (f64, f64), s: f64, w: &Array1<f64>) -> (f64, f64) {
    let (a, b) = p;
    (a * s + w.sum(), (a * b).cos())
}

#[test]
fn wrt_tuple_parameter_tuple_output() {
    let _: fn((f64, f64), f64, &Array1<f64>, (f64, f64)) -> ((f64, f64), (f64, f64)) =
        tuple_wrt_jvp;
    let _: fn((f64, f64), f64, &Array1<f64>, (f64, f64)) -> ((f64, f64), (f64, f64)) =
        tuple_wrt_vjp;
    let w = Array1::from(vec![1.0, 2.0]);
    check_derivatives(
        &(0.3, 1.2),
        |p| tuple_wrt(*p, 0.5, &w),
        |p, dp| tuple_wrt_jvp(*p, 0.5, &w, *dp),
        |p, ct| tuple_wrt_vjp(*p, 0.5, &w, *ct),
    );
}

/// Every parameter kind at once, differentiated w.r.t. a subset that
/// skips the view.
#[differentiable(wrt(a, c, t))]
fn every_kind(
    a: &Array1<f64>,
    b: ArrayView1<f64>,
    c: &Array3<f64>,
    t: (f64, f64),
    o: Array1<f64>,
    idx: &Array1<usize>,
    n: i32,
    flag: bool,
) -> f64 {
    let mut s = if flag { t.0 } else { t.1 };
    for k in 0..idx.len() {
        s += a[idx[k]] * b[k] * o[k];
    }
    s + c.sum() * (n as f64) * t.1
}

#[test]
fn every_parameter_kind_with_wrt() {
    let _: fn(
        &Array1<f64>,
        ArrayView1<f64>,
        &Array3<f64>,
        (f64, f64),
        Array1<f64>,
        &Array1<usize>,
        i32,
        bool,
        f64,
    ) -> (f64, (Array1<f64>, Array3<f64>, (f64, f64))) = every_kind_vjp;
    let mut rng = rng("every_kind");
    let b = rng.array1(3, -1.0, 1.0);
    let o = rng.array1(3, -1.0, 1.0);
    let idx = Array1::from(vec![2usize, 0, 1]);
    let x = (
        rng.array1(3, -1.0, 1.0),
        rng.array3(2, 2, 2, -1.0, 1.0),
        (0.3, -0.6),
    );
    for flag in [true, false] {
        check_derivatives(
            &x,
            |(a, c, t)| every_kind(a, b.view(), c, *t, o.clone(), &idx, 3, flag),
            |(a, c, t), (da, dc, dt)| {
                every_kind_jvp(a, b.view(), c, *t, o.clone(), &idx, 3, flag, da, dc, *dt)
            },
            |(a, c, t), ct| every_kind_vjp(a, b.view(), c, *t, o.clone(), &idx, 3, flag, *ct),
        );
    }
}

/// Without `wrt`, every kind: views and owned arrays get owned cotangents,
/// owned tangents are passed by value, views by view.
#[differentiable]
fn all_kinds(b: ArrayView1<f64>, o: Array1<f64>, m: &Array2<f64>, idx: &Array1<usize>) -> f64 {
    let mut s = 0.0;
    for k in 0..idx.len() {
        s += b[idx[k]] * o[k] * m[[k, idx[k]]];
    }
    s
}

#[test]
fn signatures_without_wrt() {
    let _: fn(
        ArrayView1<f64>,
        Array1<f64>,
        &Array2<f64>,
        &Array1<usize>,
        ArrayView1<f64>,
        Array1<f64>,
        &Array2<f64>,
    ) -> (f64, f64) = all_kinds_jvp;
    let _: fn(
        ArrayView1<f64>,
        Array1<f64>,
        &Array2<f64>,
        &Array1<usize>,
        f64,
    ) -> (f64, (Array1<f64>, Array1<f64>, Array2<f64>)) = all_kinds_vjp;
    let mut rng = rng("all_kinds");
    let idx = Array1::from(vec![1usize, 1, 0]);
    let x = (
        rng.array1(2, -1.0, 1.0),
        rng.array1(3, -1.0, 1.0),
        rng.array2(3, 2, -1.0, 1.0),
    );
    check_derivatives(
        &x,
        |(b, o, m)| all_kinds(b.view(), o.clone(), m, &idx),
        |(b, o, m), (db, d_o, dm)| {
            all_kinds_jvp(b.view(), o.clone(), m, &idx, db.view(), d_o.clone(), dm)
        },
        |(b, o, m), ct| all_kinds_vjp(b.view(), o.clone(), m, &idx, *ct),
    );
}

/// Array and tuple outputs: the tangent has the output's type; the
/// cotangent of an array output is passed by reference.
#[differentiable(wrt(v))]
fn outputs(v: &Array1<f64>, m: &Array2<f64>) -> (Array1<f64>, f64, Array2<f64>) {
    let a = v.mapv(|x| x * x);
    let s = v.sum();
    let b = m.mapv(|x| x * s);
    (a, s, b)
}

#[test]
fn output_kinds() {
    let _: fn(
        &Array1<f64>,
        &Array2<f64>,
        &Array1<f64>,
    ) -> (
        (Array1<f64>, f64, Array2<f64>),
        (Array1<f64>, f64, Array2<f64>),
    ) = outputs_jvp;
    let _: fn(
        &Array1<f64>,
        &Array2<f64>,
        (&Array1<f64>, f64, &Array2<f64>),
    ) -> ((Array1<f64>, f64, Array2<f64>), Array1<f64>) = outputs_vjp;
    let mut rng = rng("outputs");
    let v = rng.array1(3, -1.0, 1.0);
    let m = rng.array2(2, 2, -1.0, 1.0);
    check_derivatives(
        &v,
        |v| outputs(v, &m),
        |v, dv| outputs_jvp(v, &m, dv),
        |v, (ca, cs, cb)| outputs_vjp(v, &m, (ca, *cs, cb)),
    );
}

/// `dump` adds `f_linad_dump()`.
#[differentiable(dump)]
fn dumped(x: f64, y: f64) -> f64 {
    x * y.sin()
}

#[test]
fn dump_is_generated() {
    let text: &'static str = dumped_linad_dump();
    assert!(!text.is_empty());
    assert!(
        text.contains("dumped"),
        "the dump names the function:\n{text}"
    );
    assert!(text.contains("generated Rust"), "{text}");
    // Every pass, in pipeline order, and the Rust formatted on lines.
    let at = |what: &str| {
        text.find(what)
            .unwrap_or_else(|| panic!("no `{what}`:\n{text}"))
    };
    assert!(at("// lowered") < at("// after jvp"), "{text}");
    assert!(at("// after jvp") < at("// after unzip"), "{text}");
    assert!(at("// after unzip") < at("// after transpose"), "{text}");
    assert!(at("// after transpose") < at("// generated Rust"), "{text}");
    assert!(
        text.contains("\npub fn dumped_vjp(") || text.contains("\nfn dumped_vjp("),
        "{text}"
    );
    assert_eq!(dumped_jvp(1.0, 2.0, 1.0, 0.0).0, dumped(1.0, 2.0));
}

/// `dump` together with `wrt`.
#[differentiable(wrt(y), dump)]
fn dumped_wrt(x: f64, y: f64) -> f64 {
    x * y.sin()
}

#[test]
fn dump_with_wrt() {
    assert!(!dumped_wrt_linad_dump().is_empty());
    check_derivatives(
        &0.5,
        |y| dumped_wrt(2.0, *y),
        |y, dy| dumped_wrt_jvp(2.0, *y, *dy),
        |y, ct| dumped_wrt_vjp(2.0, *y, *ct),
    );
}

/// Companions take the function's visibility and can be used from outside
/// its module.
mod visibility {
    use linad::differentiable;

    #[differentiable]
    pub fn public(x: f64) -> f64 {
        x.exp()
    }

    #[differentiable]
    pub(crate) fn crate_visible(x: f64) -> f64 {
        x.ln()
    }
}

#[test]
fn companions_have_the_functions_visibility() {
    assert_eq!(visibility::public(0.0), 1.0);
    assert_eq!(visibility::crate_visible(1.0), 0.0);
    assert_eq!(visibility::public_jvp(0.0, 1.0), (1.0, 1.0));
    assert_eq!(visibility::public_vjp(0.0, 2.0), (1.0, 2.0));
    assert_eq!(visibility::crate_visible_vjp(1.0, 1.0), (0.0, 1.0));
}

/// One mode only: `forward` emits `f_jvp` / `f_linearize`, `reverse`
/// `f_vjp` / `f_pullback`; callers differentiate through either in both
/// modes (the hidden building blocks are always there).
#[differentiable(forward)]
fn fwd_only(x: f64, w: &Array1<f64>) -> f64 {
    (w * x).mapv(f64::sin).sum()
}

#[differentiable(reverse, wrt(x))]
fn rev_only(x: f64, w: &Array1<f64>) -> f64 {
    (w * x).mapv(f64::cos).sum()
}

#[differentiable]
fn both(x: f64, w: &Array1<f64>) -> f64 {
    let a: f64 = fwd_only(x, w);
    let b: f64 = rev_only(x, w);
    a * b
}

#[test]
fn one_mode_only() {
    let w = Array1::from(vec![0.5, -1.0, 2.0]);
    let x = 0.3;
    let (y, dy) = fwd_only_jvp(x, &w, 1.0, &Array1::zeros(3));
    assert_eq!(y.to_bits(), fwd_only(x, &w).to_bits());
    let expect: f64 = w.iter().map(|v| v * (v * x).cos()).sum();
    assert_close(dy, expect, 1e-14);
    let (_, lin) = fwd_only_linearize(x, &w);
    assert_eq!(lin(1.0, &Array1::zeros(3)).to_bits(), dy.to_bits());
    let (z, gx) = rev_only_vjp(x, &w, 1.0);
    assert_eq!(z.to_bits(), rev_only(x, &w).to_bits());
    let expect: f64 = w.iter().map(|v| -v * (v * x).sin()).sum();
    assert_close(gx, expect, 1e-14);
    let (_, pb) = rev_only_pullback(x, &w);
    assert_eq!(pb(1.0).to_bits(), gx.to_bits());
    check_derivatives(
        &x,
        |x| both(*x, &w),
        |x, dx| both_jvp(*x, &w, *dx, &Array1::zeros(3)),
        |x, ct| {
            let (y, (gx, _)) = both_vjp(*x, &w, *ct);
            (y, gx)
        },
    );
}
