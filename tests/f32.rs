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
