//! Calls between `#[differentiable]` functions: by name, by path
//! (`crate::m::g`, `self::g`, `super::g`), from modules, with tuple and array
//! results, with constant arguments, in loops and inside array closures.
#![allow(
    clippy::needless_range_loop,
    clippy::assign_op_pattern,
    clippy::redundant_closure
)]

mod common;
use common::*;
use linad::differentiable;
use linad::ndarray::{array, Array1, Array2};

/// A scalar callee.
#[differentiable]
fn g(x: f64, y: f64) -> f64 {
    x.sin() * y + x * x
}

/// Calls by name, twice, one call's result feeding the other; a literal
/// argument for a differentiable parameter.
#[differentiable]
fn calls_by_name(x: f64, y: f64) -> f64 {
    let a = g(x, y);
    let b = g(a, 2.0);
    g(b, x) + a
}

#[test]
fn call_by_name() {
    check_derivatives(
        &(0.7, -0.4),
        |(x, y)| calls_by_name(*x, *y),
        |(x, y), (dx, dy)| calls_by_name_jvp(*x, *y, *dx, *dy),
        |(x, y), ct| calls_by_name_vjp(*x, *y, *ct),
    );
}

/// A chain: `chain3` calls `chain2` calls `g`.
#[differentiable]
fn chain2(x: f64) -> f64 {
    g(x, x) * 0.5
}

#[differentiable]
fn chain3(x: f64, y: f64) -> f64 {
    chain2(x * y) + chain2(y).exp()
}

#[test]
fn call_chain() {
    check_derivatives(
        &(0.6, 0.3),
        |(x, y)| chain3(*x, *y),
        |(x, y), (dx, dy)| chain3_jvp(*x, *y, *dx, *dy),
        |(x, y), ct| chain3_vjp(*x, *y, *ct),
    );
}

pub mod m {
    use linad::differentiable;
    use linad::ndarray::Array1;

    /// `v · v`.
    #[differentiable]
    pub fn norm2(v: &Array1<f64>) -> f64 {
        v.dot(v)
    }

    /// A tuple result and an integer constant parameter.
    #[differentiable]
    pub fn moments(v: &Array1<f64>, p: i32) -> (f64, f64) {
        let s = v.sum();
        let q = v.mapv(|x| x.powi(p)).sum();
        (s, q)
    }

    /// An array result.
    #[differentiable]
    pub fn affine(v: &Array1<f64>, a: f64, b: f64) -> Array1<f64> {
        v.mapv(|x| a * x + b)
    }

    /// A call through `self::`.
    #[differentiable]
    pub fn via_self(v: &Array1<f64>, s: f64) -> f64 {
        self::norm2(v) * s + norm2(v)
    }

    /// A call through `super::` (a function of the parent module).
    #[differentiable]
    pub fn via_super(x: f64, y: f64) -> f64 {
        super::g(x, y) * super::g(y, x)
    }

    pub mod inner {
        use linad::differentiable;
        use linad::ndarray::Array1;

        /// `super::` into the parent module and `crate::` from the root.
        #[differentiable]
        pub fn deep(v: &Array1<f64>, x: f64) -> f64 {
            super::norm2(v) + crate::g(x, v[0]) + crate::m::norm2(v) * x
        }
    }
}

/// Calls through `crate::m::..` and `m::..`, with tuple and array results,
/// annotated or not (the macro finds an unannotated callee's result type in
/// the crate's source).
#[differentiable]
fn via_paths(v: &Array1<f64>, a: f64) -> f64 {
    let w: Array1<f64> = crate::m::affine(v, a, 0.5);
    let (s, q) = m::moments(&w, 3);
    let n = m::norm2(&w);
    s * q + n + crate::m::inner::deep(v, a)
}

/// Functions imported with `use` (plain, renamed, from the parent module)
/// and called by their bare names: the derivatives reach their building
/// blocks through the imports' paths (`super::m::__linad_norm2_jvp`), which
/// the `use` items themselves do not import.
mod imported {
    use super::g;
    use super::m::norm2;
    use crate::m::affine as shifted;
    use linad::differentiable;
    use linad::ndarray::Array1;

    #[differentiable]
    pub fn uses_imports(v: &Array1<f64>, a: f64) -> f64 {
        let w: Array1<f64> = shifted(v, a, 0.5);
        norm2(&w) * g(a, v[0])
    }
}

#[test]
fn call_by_imported_name() {
    let mut rng = rng("uses_imports");
    let x = (rng.array1(4, -1.0, 1.0), 0.8);
    check_derivatives(
        &x,
        |(v, a)| imported::uses_imports(v, *a),
        |(v, a), (dv, da)| imported::uses_imports_jvp(v, *a, dv, *da),
        |(v, a), ct| imported::uses_imports_vjp(v, *a, *ct),
    );
}

#[test]
fn call_by_crate_path() {
    let mut rng = rng("via_paths");
    let x = (rng.array1(4, -1.0, 1.0), 0.8);
    check_derivatives(
        &x,
        |(v, a)| via_paths(v, *a),
        |(v, a), (dv, da)| via_paths_jvp(v, *a, dv, *da),
        |(v, a), ct| via_paths_vjp(v, *a, *ct),
    );
}

#[test]
fn call_by_self_path() {
    let mut rng = rng("via_self");
    let x = (rng.array1(4, -1.0, 1.0), 0.8);
    check_derivatives(
        &x,
        |(v, s)| m::via_self(v, *s),
        |(v, s), (dv, ds)| m::via_self_jvp(v, *s, dv, *ds),
        |(v, s), ct| m::via_self_vjp(v, *s, *ct),
    );
}

#[test]
fn call_by_super_path() {
    check_derivatives(
        &(0.4, 1.1),
        |(x, y)| m::via_super(*x, *y),
        |(x, y), (dx, dy)| m::via_super_jvp(*x, *y, *dx, *dy),
        |(x, y), ct| m::via_super_vjp(*x, *y, *ct),
    );
}

#[test]
fn nested_module_paths() {
    let mut rng = rng("deep");
    let x = (rng.array1(3, -1.0, 1.0), 0.3);
    check_derivatives(
        &x,
        |(v, x)| m::inner::deep(v, *x),
        |(v, x), (dv, dx)| m::inner::deep_jvp(v, *x, dv, *dx),
        |(v, x), ct| m::inner::deep_vjp(v, *x, *ct),
    );
}

/// A callee in a loop carrying state, and inside an array closure.
#[differentiable]
fn calls_in_loops(v: &Array1<f64>, x: f64) -> f64 {
    let mut s = x;
    for i in 0..v.len() {
        s = g(s, v[i]) * 0.5;
    }
    let w = Array1::from_shape_fn(v.len(), |i| g(v[i], x));
    s + w.sum()
}

#[test]
fn calls_in_loops_and_closures() {
    let v = array![0.2, -0.5, 0.9];
    check_derivatives(
        &(v, 0.6),
        |(v, x)| calls_in_loops(v, *x),
        |(v, x), (dv, dx)| calls_in_loops_jvp(v, *x, dv, *dx),
        |(v, x), ct| calls_in_loops_vjp(v, *x, *ct),
    );
}

/// A callee differentiated with respect to a subset is still callable with
/// every argument varying (the building blocks cover all differentiable
/// parameters).
#[differentiable(wrt(a))]
fn wrt_callee(a: f64, b: f64) -> f64 {
    a * b.exp()
}

#[differentiable]
fn calls_wrt_callee(x: f64, y: f64) -> f64 {
    wrt_callee(x, y) + wrt_callee(y, x * y)
}

#[test]
fn callee_with_wrt_subset() {
    check_derivatives(
        &(0.5, 0.25),
        |(x, y)| calls_wrt_callee(*x, *y),
        |(x, y), (dx, dy)| calls_wrt_callee_jvp(*x, *y, *dx, *dy),
        |(x, y), ct| calls_wrt_callee_vjp(*x, *y, *ct),
    );
}

/// A layer differentiated with respect to its weights alone, called with
/// constant data: the caller's derivatives call its derivatives with respect
/// to the weights alone (`__linadw_layer_*`: no zero tangent of the data,
/// no work for it); a caller differentiating through the data as well
/// calls the derivatives with respect to everything. Both agree with a
/// twin callee without `wrt`, in both modes.
#[differentiable(wrt(w, b))]
fn layer(w: &Array2<f64>, b: &Array1<f64>, x: &Array2<f64>, scale: f64) -> Array2<f64> {
    (x.dot(&w.t()) + b).mapv(|v| (v * scale).tanh())
}

#[differentiable]
fn layer_all(w: &Array2<f64>, b: &Array1<f64>, x: &Array2<f64>, scale: f64) -> Array2<f64> {
    (x.dot(&w.t()) + b).mapv(|v| (v * scale).tanh())
}

#[differentiable(wrt(w, b), dump)]
fn layer_loss(w: &Array2<f64>, b: &Array1<f64>, x: &Array2<f64>, y: &Array2<f64>) -> f64 {
    let h = layer(w, b, x, 0.5);
    let d = &h - y;
    (&d * &d).sum()
}

#[differentiable(wrt(w, b))]
fn layer_all_loss(w: &Array2<f64>, b: &Array1<f64>, x: &Array2<f64>, y: &Array2<f64>) -> f64 {
    let h = layer_all(w, b, x, 0.5);
    let d = &h - y;
    (&d * &d).sum()
}

/// Through the data too (and the scale): the general derivatives.
#[differentiable]
fn layer_loss_everything(w: &Array2<f64>, b: &Array1<f64>, x: &Array2<f64>, s: f64) -> f64 {
    layer(w, b, x, s).sum() * s
}

#[test]
fn callee_with_wrt_called_with_constant_data() {
    let mut r = rng("callee_with_wrt_called_with_constant_data");
    let w = Array2::from_shape_fn((3, 4), |_| r.normal());
    let b = Array1::from_shape_fn(3, |_| r.normal());
    let x = Array2::from_shape_fn((5, 4), |_| r.normal());
    let y = Array2::from_shape_fn((5, 3), |_| r.normal());
    // The caller's derivatives (with respect to `w`, `b`) call `layer`'s
    // with respect to `w`, `b` alone (its hidden blocks, for callers
    // differentiating through `x` and `y` too, call the general ones).
    let dump = layer_loss_linad_dump();
    // Its call at the top level keeps `layer`'s residuals: the reverse pass
    // reads them (`linres_t`) instead of recomputing `layer` (`lin_t`).
    for block in [
        "__linadw_layer_jvp",
        "__linadw_layer_fwdres",
        "__linadw_layer_linres_t",
    ] {
        assert!(dump.contains(block), "{block} not called:\n{dump}");
    }
    let (l, (gw, gb)) = layer_loss_vjp(&w, &b, &x, &y, 1.0);
    let (la, (gwa, gba)) = layer_all_loss_vjp(&w, &b, &x, &y, 1.0);
    assert_eq!(l.to_bits(), layer_loss(&w, &b, &x, &y).to_bits());
    assert_eq!(l.to_bits(), la.to_bits());
    assert_eq!(la.to_bits(), layer_all_loss(&w, &b, &x, &y).to_bits());
    for (p, q) in gw.iter().zip(&gwa).chain(gb.iter().zip(&gba)) {
        assert_close(*p, *q, 1e-14);
    }
    let (dw, db) = (w.mapv(|v| v.cos()), b.mapv(|v| v.sin()));
    let (_, t) = layer_loss_jvp(&w, &b, &x, &y, &dw, &db);
    let (_, ta) = layer_all_loss_jvp(&w, &b, &x, &y, &dw, &db);
    assert_close(t, ta, 1e-14);
    assert_close(t, (&gw * &dw).sum() + gb.dot(&db), 1e-12);
    check_derivatives(
        &(w.clone(), b.clone()),
        |(w, b)| layer_loss(w, b, &x, &y),
        |(w, b), (dw, db)| layer_loss_jvp(w, b, &x, &y, dw, db),
        |(w, b), ct| layer_loss_vjp(w, b, &x, &y, *ct),
    );
    check_derivatives(
        &(w, b, x, 0.7),
        |(w, b, x, s)| layer_loss_everything(w, b, x, *s),
        |(w, b, x, s), (dw, db, dx, ds)| layer_loss_everything_jvp(w, b, x, *s, dw, db, dx, *ds),
        |(w, b, x, s), ct| layer_loss_everything_vjp(w, b, x, *s, *ct),
    );
}

/// A matrix callee with a matrix result, called by a function with a
/// matrix parameter.
#[differentiable]
fn gram(a: &Array2<f64>) -> Array2<f64> {
    a.t().dot(a)
}

#[differentiable]
fn gram_trace(a: &Array2<f64>) -> f64 {
    let g: Array2<f64> = gram(a);
    let mut t = 0.0;
    for i in 0..g.nrows() {
        t += g[[i, i]];
    }
    let gg: Array2<f64> = gram(&g);
    t + gg.sum() * 0.01
}

#[test]
fn matrix_valued_callee() {
    let mut rng = rng("gram_trace");
    let a = rng.array2(3, 2, -1.0, 1.0);
    check_derivatives(
        &a,
        |a| gram_trace(a),
        |a, da| gram_trace_jvp(a, da),
        |a, ct| gram_trace_vjp(a, *ct),
    );
}

/// No annotation on the `let`: the result types come from the callee's
/// signature, found in the crate's source (`gram` above, `split_stats`
/// below the caller, a tuple with an array).
#[differentiable]
fn unannotated_calls(a: &Array2<f64>, v: &Array1<f64>) -> f64 {
    let g = gram(a);
    let (m, centred) = split_stats(v);
    let s = g.sum() * 0.1 + m;
    s + centred.mapv(|c| c * c).sum()
}

#[differentiable]
fn split_stats(v: &Array1<f64>) -> (f64, Array1<f64>) {
    let m = v.sum() / v.len() as f64;
    (m, v - m)
}

#[test]
fn calls_without_annotations() {
    let mut rng = rng("unannotated_calls");
    let a = rng.array2(3, 2, -1.0, 1.0);
    let v = rng.array1(4, -1.0, 1.0);
    check_derivatives(
        &(a, v),
        |(a, v)| unannotated_calls(a, v),
        |(a, v), (da, dv)| unannotated_calls_jvp(a, v, da, dv),
        |(a, v), ct| unannotated_calls_vjp(a, v, *ct),
    );
}

/// Calls at the top level of a body keep the callee's residuals (one
/// `fwdres` in the forward half, `linres` / `linres_t` in the linear ones)
/// instead of recomputing its primal: a private callee with an array result
/// calling another callee at its own top level (residuals inside
/// residuals), and a call in a loop, which still checkpoints, called from a
/// public caller. All four companions agree with each other and with finite
/// differences; the closures of `f_linearize` / `f_pullback` hold the
/// residuals after the arguments are gone.
mod kept {
    use linad::differentiable;
    use linad::ndarray::{Array1, Array2};

    #[differentiable]
    fn scale_rows(m: &Array2<f64>, v: &Array1<f64>) -> Array2<f64> {
        let s = v.mapv(|x| x.tanh());
        m * &s.insert_axis(linad::ndarray::Axis(1))
    }

    #[differentiable]
    fn squash(m: &Array2<f64>, v: &Array1<f64>) -> Array1<f64> {
        let r = scale_rows(m, v);
        r.mapv(|x| (x * x + 1.0).ln())
            .sum_axis(linad::ndarray::Axis(1))
    }

    #[differentiable(dump)]
    pub fn model(m: &Array2<f64>, v: &Array1<f64>, a: f64) -> f64 {
        let h = squash(m, v);
        let mut acc = 0.0;
        for k in 0..2 {
            let w = v.mapv(|x| x * (k as f64 + a));
            acc += squash(m, &w).sum();
        }
        (&h * &h).sum() * a + acc
    }
}

#[test]
fn top_level_calls_keep_residuals() {
    let mut r = rng("top_level_calls_keep_residuals");
    let m = Array2::from_shape_fn((3, 4), |_| r.normal());
    let v = Array1::from_shape_fn(3, |_| r.normal());
    let dump = kept::model_linad_dump();
    for block in [
        "__linad_squash_fwdres",
        "__linad_squash_linres_t",
        "__linad_squash_lin_t",
    ] {
        assert!(dump.contains(block), "{block} not called:\n{dump}");
    }
    let x = (m.clone(), v.clone(), 0.7);
    check_derivatives(
        &x,
        |(m, v, a)| kept::model(m, v, *a),
        |(m, v, a), (dm, dv, da)| kept::model_jvp(m, v, *a, dm, dv, *da),
        |(m, v, a), ct| kept::model_vjp(m, v, *a, *ct),
    );
    let (dm, dv) = (m.mapv(|x| x.sin()), v.mapv(|x| x.cos()));
    let (y, t) = kept::model_jvp(&m, &v, 0.7, &dm, &dv, 0.3);
    let (yl, lin) = {
        let (m2, v2) = (m.clone(), v.clone());
        kept::model_linearize(&m2, &v2, 0.7)
    };
    let (yp, pb) = {
        let (m2, v2) = (m.clone(), v.clone());
        kept::model_pullback(&m2, &v2, 0.7)
    };
    assert_eq!(y.to_bits(), yl.to_bits());
    assert_eq!(y.to_bits(), yp.to_bits());
    assert_eq!(y.to_bits(), kept::model(&m, &v, 0.7).to_bits());
    for _ in 0..2 {
        assert_close(lin(&dm, &dv, 0.3), t, 1e-13);
        let (gm, gv, ga) = pb(1.0);
        assert_close((&gm * &dm).sum() + gv.dot(&dv) + ga * 0.3, t, 1e-12);
    }
}
