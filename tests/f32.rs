//! `f32` functions: the primal is the function's own (bit-identical), the
//! derivatives are computed in `f64` at the same point and rounded to the
//! parameters' float types; checked against `f64` finite differences of the
//! same function at `f32` precision.

#![allow(clippy::ptr_arg)]

mod common;
use common::*;
use linad::differentiable;
use linad::ndarray::{Array1, Array2, ArrayView1};

#[differentiable]
fn poly32(x: f32, w: &Array1<f32>, n: usize) -> f32 {
    let mut s = 0.0f32;
    for i in 0..n.min(w.len()) {
        s += w[i] * x.powi(i as i32) + (x * 0.5).sin();
    }
    s * std::f32::consts::PI
}

/// The same function in `f64`, for finite differences.
fn poly64(x: f64, w: &Array1<f64>, n: usize) -> f64 {
    let mut s = 0.0;
    for i in 0..n.min(w.len()) {
        s += w[i] * x.powi(i as i32) + (x * 0.5).sin();
    }
    s * std::f64::consts::PI
}

#[test]
fn scalar_and_array_f32_in_both_modes() {
    let w = Array1::from(vec![0.5f32, -1.25, 2.0, 0.75]);
    let w64 = w.mapv(|v| v as f64);
    for x in [0.3f32, -1.1, 2.0] {
        let y = poly32(x, &w, 4);
        let (yj, dy) = poly32_jvp(x, &w, 4, 1.0, &Array1::zeros(4));
        let (yv, (gx, gw)) = poly32_vjp(x, &w, 4, 1.0);
        assert_eq!(y.to_bits(), yj.to_bits());
        assert_eq!(y.to_bits(), yv.to_bits());
        let h = 1e-6;
        let fd = (poly64(x as f64 + h, &w64, 4) - poly64(x as f64 - h, &w64, 4)) / (2.0 * h);
        assert!(
            ((dy as f64) - fd).abs() <= 1e-5 * (1.0 + fd.abs()),
            "{dy} vs {fd}"
        );
        assert_eq!(dy.to_bits(), gx.to_bits());
        for k in 0..4 {
            let mut wp = w64.clone();
            wp[k] += h;
            let mut wm = w64.clone();
            wm[k] -= h;
            let fdk = (poly64(x as f64, &wp, 4) - poly64(x as f64, &wm, 4)) / (2.0 * h);
            assert!(((gw[k] as f64) - fdk).abs() <= 1e-5 * (1.0 + fdk.abs()));
        }
    }
}

/// `as f32` / `as f64` casts inside an `f64` function, mixed parameters,
/// views, `Vec<f32>`, a tuple, an array output.
#[differentiable]
fn mixed(a: f64, v: ArrayView1<f32>, c: &Vec<f32>, t: (f32, f32), m: &Array2<f64>) -> Array1<f32> {
    let s = (a as f32) * t.0 + c[0] * t.1;
    let r = m.sum() as f32;
    v.mapv(|e| e * s + r)
}

#[test]
fn casts_views_vecs_tuples_and_array_outputs() {
    let v = Array1::from(vec![1.0f32, -2.0, 0.5]);
    let c = vec![0.25f32, 3.0];
    let m = Array2::from_shape_vec((2, 2), vec![0.1, 0.2, 0.3, 0.4]).unwrap();
    let (a, t) = (0.7, (1.5f32, -0.5f32));
    let y = mixed(a, v.view(), &c, t, &m);
    let (yj, _) = mixed_jvp(
        a,
        v.view(),
        &c,
        t,
        &m,
        1.0,
        Array1::zeros(3).view(),
        &vec![0.0; 2],
        (0.0, 0.0),
        &Array2::zeros((2, 2)),
    );
    assert_eq!(y, yj);
    // d y_k / d a = v_k * t.0; as a vjp with ct = ones.
    let ct = Array1::from(vec![1.0f32; 3]);
    let (yv, (ga, gv, gc, gt, gm)) = mixed_vjp(a, v.view(), &c, t, &m, &ct);
    assert_eq!(y, yv);
    assert_close(ga, (v.sum() * t.0) as f64, 1e-6);
    let s = (a as f32) * t.0 + c[0] * t.1;
    assert!(gv.iter().all(|g| (g - s).abs() < 1e-6));
    assert!((gc[0] - v.sum() * t.1).abs() < 1e-5 && gc[1] == 0.0);
    assert!((gt.0 - v.sum() * a as f32).abs() < 1e-5);
    assert!(gm.iter().all(|g| (*g - 3.0).abs() < 1e-12));
    let _: Array2<f64> = gm;
    let _: Vec<f32> = gc;
}

/// An `f32` function called from an `f64` one and from another `f32` one.
#[differentiable]
fn soft32(x: f32) -> f32 {
    (1.0 + x.exp()).ln()
}

#[differentiable]
fn uses_soft32(x: f32, y: f32) -> f32 {
    soft32(x) * y + soft32(y)
}

#[differentiable]
fn inner_f32(x: f64) -> f64 {
    let h = (x as f32) * 2.0f32;
    (h as f64).sin() * x
}

#[test]
fn calls_between_f32_functions() {
    let (x, y) = (0.4f32, -1.2f32);
    let (v, (gx, gy)) = uses_soft32_vjp(x, y, 1.0);
    assert_eq!(v.to_bits(), uses_soft32(x, y).to_bits());
    let sig = |t: f64| 1.0 / (1.0 + (-t).exp());
    let s = |t: f64| (1.0 + t.exp()).ln();
    assert!(((gx as f64) - sig(x as f64) * y as f64).abs() < 1e-6);
    assert!(((gy as f64) - (s(x as f64) + sig(y as f64))).abs() < 1e-6);
    let (w, dw) = inner_f32_jvp(0.3, 1.0);
    assert_eq!(w.to_bits(), inner_f32(0.3).to_bits());
    // d/dx sin(2x) x = 2 cos(2x) x + sin(2x) (the cast read as exact)
    assert!((dw - (2.0 * (0.6f64).cos() * 0.3 + (0.6f64).sin())).abs() < 1e-6);
}

#[test]
#[should_panic(
    expected = "poly32_jvp: tangent `d_w` has shape [3], expected [4] (the shape of `w`)"
)]
fn f32_tangent_of_wrong_shape_names_the_public_function() {
    let w = Array1::from(vec![0.5f32, -1.25, 2.0, 0.75]);
    let _ = poly32_jvp(0.3, &w, 4, 1.0, &Array1::zeros(3));
}

// --- structs with `f32` fields ------------------------------------------------

/// A one-hidden-layer network in `f32`, with a constant field.
#[derive(linad::Differentiable, Clone, Debug)]
pub struct Mlp32 {
    pub w1: Array2<f32>,
    pub b1: Array1<f32>,
    pub w2: Array1<f32>,
    pub b2: f32,
    #[linad(constant)]
    pub act: usize,
}

/// The mean squared error of the network on rows `x` with targets `y`.
#[differentiable]
fn mlp32_loss(p: &Mlp32, x: &Array2<f32>, y: &Array1<f32>) -> f32 {
    let h = x.dot(&p.w1) + &p.b1;
    let h = if p.act == 1 { h.mapv(|v| v.tanh()) } else { h };
    let out = h.dot(&p.w2) + p.b2;
    let e = &out - y;
    (&e * &e).sum() / y.len() as f32
}

/// The same in `f64`, for finite differences: the parameters as a flat
/// vector in the tangent's order (w1, b1, w2, b2).
fn mlp64_loss(flat: &[f64], x: &Array2<f64>, y: &Array1<f64>, act: usize) -> f64 {
    let (d, h) = (x.ncols(), 3);
    let w1 = Array2::from_shape_vec((d, h), flat[..d * h].to_vec()).unwrap();
    let b1 = Array1::from(flat[d * h..d * h + h].to_vec());
    let w2 = Array1::from(flat[d * h + h..d * h + 2 * h].to_vec());
    let b2 = flat[d * h + 2 * h];
    let hid = x.dot(&w1) + &b1;
    let hid = if act == 1 {
        hid.mapv(|v| v.tanh())
    } else {
        hid
    };
    let e = hid.dot(&w2) + b2 - y;
    (&e * &e).sum() / y.len() as f64
}

/// A struct of `f32` fields in, its `f32` tangent out (and in, for
/// `f_jvp`): the primal bit-identical, the gradient against `f64` finite
/// differences, `f_jvp` and `f_vjp` related by the dot-product identity,
/// the tangent scaled by `f32`.
#[test]
fn f32_struct_fields_in_both_modes() {
    use linad::Tangent;
    let p = Mlp32 {
        w1: Array2::from_shape_fn((2, 3), |(i, j)| 0.3 * i as f32 - 0.2 * j as f32 + 0.1),
        b1: Array1::from(vec![0.1f32, -0.2, 0.05]),
        w2: Array1::from(vec![0.7f32, -0.4, 0.2]),
        b2: 0.3,
        act: 1,
    };
    let x = Array2::from_shape_fn((4, 2), |(i, j)| (i as f32 - 1.5) * (j as f32 + 0.5));
    let y = Array1::from(vec![0.5f32, -0.25, 1.0, 0.0]);
    let (l, g) = mlp32_loss_vjp(&p, &x, &y, 1.0);
    assert_eq!(l.to_bits(), mlp32_loss(&p, &x, &y).to_bits());
    let _: &Array2<f32> = &g.0.w1;
    let flat: Vec<f64> =
        Mlp32Tangent::__linad_from_fields(p.w1.clone(), p.b1.clone(), p.w2.clone(), p.b2).to_flat();
    let (x64, y64) = (x.mapv(|v| v as f64), y.mapv(|v| v as f64));
    let grad = g.0.to_flat();
    assert_eq!(grad.len(), flat.len());
    let h = 1e-6;
    for k in 0..flat.len() {
        let (mut up, mut dn) = (flat.clone(), flat.clone());
        up[k] += h;
        dn[k] -= h;
        let fd = (mlp64_loss(&up, &x64, &y64, 1) - mlp64_loss(&dn, &x64, &y64, 1)) / (2.0 * h);
        assert!(
            (grad[k] - fd).abs() <= 1e-5 * (1.0 + fd.abs()),
            "component {k}: {} vs {fd}",
            grad[k]
        );
    }
    // <J t, 1> = <t, J^T 1> for a tangent t.
    let t = Mlp32Tangent::from_flat(
        &p,
        &(0..flat.len())
            .map(|k| (k as f64 * 0.37).sin())
            .collect::<Vec<_>>(),
    );
    let dx = Array2::<f32>::zeros((4, 2));
    let (lj, dl) = mlp32_loss_jvp(&p, &x, &y, &t, &dx, &Array1::zeros(4));
    assert_eq!(lj.to_bits(), l.to_bits());
    let want = t.dot(&g.0);
    assert!(
        ((dl as f64) - want).abs() <= 1e-5 * (1.0 + want.abs()),
        "{dl} vs {want}"
    );
    // An SGD step with an `f32` rate.
    let step: Mlp32Tangent = g.0.clone() * -0.1f32;
    assert!((step.b2 + 0.1 * g.0.b2).abs() < 1e-7);
}

/// A pair of `f32` fields, nested in another struct.
#[derive(linad::Differentiable, Clone, Debug)]
pub struct Pair32 {
    pub a: Array1<f32>,
    pub b: f32,
}

#[derive(linad::Differentiable, Clone, Debug)]
pub struct Outer32 {
    pub inner: Pair32,
    pub c: f32,
}

/// A struct output of `f32` fields built from a nested struct.
#[differentiable]
fn scaled_pair(o: &Outer32, s: f32) -> Pair32 {
    Pair32 {
        a: o.inner.a.mapv(|v| v * s + o.c),
        b: o.inner.b * o.c * s,
    }
}

/// A struct-taking `f32` function calling another.
#[differentiable]
fn pair_norm(o: &Outer32, s: f32) -> f32 {
    let p = scaled_pair(o, s);
    (&p.a * &p.a).sum() + p.b * p.b
}

#[test]
fn f32_struct_outputs_nesting_and_calls() {
    let o = Outer32 {
        inner: Pair32 {
            a: Array1::from(vec![1.0f32, -2.0, 0.5]),
            b: 0.75,
        },
        c: 0.5,
    };
    let s = 1.5f32;
    let ct = Pair32Tangent {
        a: Array1::from(vec![1.0f32, 0.5, -1.0]),
        b: 2.0,
    };
    let (p, (go, gs)) = scaled_pair_vjp(&o, s, &ct);
    let want = scaled_pair(&o, s);
    assert_eq!(p.a, want.a);
    assert_eq!(p.b.to_bits(), want.b.to_bits());
    // d/dc: sum ct.a + ct.b * b * s; d/ds: sum ct.a * a + ct.b * b * c.
    let a = &o.inner.a;
    let gc = ct.a.sum() + ct.b * o.inner.b * s;
    let gs_want = (&ct.a * a).sum() + ct.b * o.inner.b * o.c;
    assert!((go.c - gc).abs() < 1e-5, "{} vs {gc}", go.c);
    assert!((gs - gs_want).abs() < 1e-5, "{gs} vs {gs_want}");
    assert_eq!(go.inner.a, ct.a.mapv(|v| v * s));
    let (n, (gn, gns)) = pair_norm_vjp(&o, s, 1.0);
    assert_eq!(n.to_bits(), pair_norm(&o, s).to_bits());
    // d/ds of sum (a s + c)^2 + (b c s)^2.
    let d_s: f32 = a.iter().map(|v| 2.0 * (v * s + o.c) * v).sum::<f32>()
        + 2.0 * (o.inner.b * o.c * s) * o.inner.b * o.c;
    assert!((gns - d_s).abs() < 1e-4, "{gns} vs {d_s}");
    let d_c: f32 = a.iter().map(|v| 2.0 * (v * s + o.c)).sum::<f32>()
        + 2.0 * (o.inner.b * o.c * s) * o.inner.b * s;
    assert!((gn.c - d_c).abs() < 1e-4, "{} vs {d_c}", gn.c);
}

/// An `f32` field read by an `f64` function (through a cast).
#[derive(linad::Differentiable, Clone)]
pub struct Weights32 {
    pub w: Array1<f32>,
}

#[differentiable]
fn weighted_sum(p: &Weights32, x: f64) -> f64 {
    p.w.sum() as f64 * x
}

#[test]
fn f32_fields_of_f64_functions() {
    let p = Weights32 {
        w: Array1::from(vec![0.5f32, 0.25, 2.0]),
    };
    let (y, (g, gx)) = weighted_sum_vjp(&p, 3.0, 1.0);
    assert_eq!(y.to_bits(), weighted_sum(&p, 3.0).to_bits());
    assert_eq!(g.w, Array1::from(vec![3.0f32; 3]));
    assert_eq!(gx, 2.75);
}

/// Owned `f32` arrays and a tuple output: `f_linearize`'s map runs the
/// linear map once per call and rounds each part (it called the map once
/// per tuple part, moving the converted tangents twice: a compile error
/// the fuzzer's `f32` twins found).
#[differentiable]
fn owned_pair32(x: f32, a: Array2<f32>, b: Array2<f32>) -> (f32, f32) {
    (b.sum() + a.sum() * x, (a * x).sum())
}

#[test]
fn owned_f32_arrays_and_tuple_outputs() {
    let a = Array2::from_elem((2, 2), 0.5f32);
    let b = Array2::from_elem((2, 2), -1.5f32);
    let (da, db) = (
        Array2::from_elem((2, 2), 1.0f32),
        Array2::from_elem((2, 2), 0.25f32),
    );
    let (y, dy) = owned_pair32_jvp(2.0, a.clone(), b.clone(), 0.5, da.clone(), db.clone());
    let (yl, lin) = owned_pair32_linearize(2.0, a.clone(), b.clone());
    assert_eq!(y, yl);
    assert_eq!(lin(0.5, da, db), dy);
    // d(b.sum() + x a.sum()) = db.sum() + dx a.sum() + x da.sum()
    assert_eq!(dy.0, 1.0 + 0.5 * 2.0 + 2.0 * 4.0);
}

/// A struct output with an `f32` `Vec` field.
#[derive(linad::Differentiable, Clone, Debug, PartialEq)]
pub struct Scaled32 {
    pub v: Vec<f32>,
    pub n: f32,
}

#[differentiable]
fn scaled_vec32(x: &[f32], s: f32) -> Scaled32 {
    let v: Vec<f32> = x.iter().map(|a| a * s).collect();
    Scaled32 {
        n: v.iter().map(|a| a * a).sum::<f32>(),
        v,
    }
}

#[test]
fn f32_struct_outputs_with_vec_fields() {
    let x = vec![1.0f32, -2.0, 0.5];
    let s = 1.5f32;
    let ct = Scaled32Tangent {
        v: vec![1.0f32, 0.5, -1.0],
        n: 2.0,
    };
    let (y, (gx, gs)) = scaled_vec32_vjp(&x, s, &ct);
    assert_eq!(y, scaled_vec32(&x, s));
    // d/dx_k: ct.v_k s + ct.n 2 x_k s^2; d/ds: sum ct.v_k x_k + ct.n 2 s |x|^2.
    for k in 0..3 {
        let want = ct.v[k] * s + ct.n * 2.0 * x[k] * s * s;
        assert!((gx[k] - want).abs() < 1e-4, "{} vs {want}", gx[k]);
    }
    let xx: f32 = x.iter().map(|a| a * a).sum();
    let dot: f32 = ct.v.iter().zip(&x).map(|(a, b)| a * b).sum();
    assert!((gs - (dot + ct.n * 2.0 * s * xx)).abs() < 1e-4);
    let (yj, t) = scaled_vec32_jvp(&x, s, &[0.0, 1.0, 0.0], 0.0);
    assert_eq!(yj, y);
    assert_eq!(t.v, vec![0.0, s, 0.0]);
}

/// `[f32; N]` parameters and outputs: differentiated through the `f64`
/// copy, tangents and cotangents `[f32; N]`, the primal `f`'s own.
#[differentiable]
fn scaled_point(p: [f32; 3], s: f32) -> [f32; 3] {
    let [x, y, z] = p;
    [x * s, y * s, (z * s).sin()]
}

#[test]
fn fixed_size_f32_arrays() {
    let (p, s) = ([1.0f32, -2.0, 0.5], 1.5f32);
    let (y, d) = scaled_point_jvp(p, s, [1.0, 0.0, 0.0], 0.0);
    assert_eq!(y, scaled_point(p, s));
    assert_eq!(d, [1.5, 0.0, 0.0]);
    let (y2, (g, gs)) = scaled_point_vjp(p, s, [0.0, 0.0, 1.0]);
    let g: [f32; 3] = g;
    assert_eq!(y2, y);
    assert_eq!(g[..2], [0.0, 0.0]);
    let cos = (0.5f64 * 1.5).cos();
    assert!((g[2] as f64 - 1.5 * cos).abs() < 1e-6, "{g:?}");
    assert!((gs as f64 - 0.5 * cos).abs() < 1e-6, "{gs}");
}
