//! Programs written as ndarray's documentation and NumPy ports write them,
//! several of the supported forms combined in each (a cross-entropy with
//! `fold_axis` / `insert_axis`, a layer norm, attention with `map_axis`, a
//! 1-D convolution by slices, `concatenate!` / `stack!`, a Newton `while`,
//! `match` on an enum choosing closures, element writes, `from_diag` /
//! `diag`, `mapv_inplace` / `var` / `std` / `step_by` / a collected `Vec`,
//! co-broadcasting, row and slice assignment, tuple results of calls, views
//! passed to callees, early `return` from a loop, reshapes): each in both
//! modes against finite differences, the dot-product identity and primal
//! bit-identity.
#![allow(
    clippy::needless_range_loop,
    clippy::redundant_closure,
    clippy::reversed_empty_ranges
)]
mod common;
use common::*;
use linad::differentiable;
use linad::ndarray::{array, concatenate, s, stack, Array1, Array2, ArrayView1, Axis, Zip};

#[differentiable(wrt(z))]
fn xent(z: &Array2<f64>, labels: &[usize]) -> f64 {
    let m = z.fold_axis(Axis(1), f64::NEG_INFINITY, |a, &b| a.max(b));
    let e = (z - &m.clone().insert_axis(Axis(1))).mapv(f64::exp);
    let s = e.sum_axis(Axis(1));
    let mut loss = 0.0;
    for (i, &l) in labels.iter().enumerate() {
        loss += -(z[[i, l]] - m[i] - s[i].ln());
    }
    loss / labels.len() as f64
}

#[test]
fn p_xent() {
    let mut r = rng("xent");
    let z = Array2::from_shape_fn((4, 3), |_| r.normal());
    let labels = vec![0usize, 2, 1, 1];
    check_derivatives(
        &z,
        |z| xent(z, &labels),
        |z, d| xent_jvp(z, &labels, d),
        |z, c| xent_vjp(z, &labels, *c),
    );
}

#[differentiable]
fn layer_norm(x: &Array2<f64>, g: &Array1<f64>, b: &Array1<f64>) -> Array2<f64> {
    let mean = x.mean_axis(Axis(1)).unwrap();
    let c = x - &mean.insert_axis(Axis(1));
    let var = (&c * &c).mean_axis(Axis(1)).unwrap();
    let inv = var.mapv(|v| 1.0 / (v + 1e-5).sqrt());
    &c * &inv.insert_axis(Axis(1)) * g + b
}

#[test]
fn p_layer_norm() {
    let mut r = rng("ln");
    let x = (
        Array2::from_shape_fn((3, 5), |_| r.normal()),
        Array1::from_shape_fn(5, |_| r.normal()),
        Array1::from_shape_fn(5, |_| r.normal()),
    );
    check_derivatives(
        &x,
        |(x, g, b)| layer_norm(x, g, b),
        |(x, g, b), (dx, dg, db)| layer_norm_jvp(x, g, b, dx, dg, db),
        |(x, g, b), c| layer_norm_vjp(x, g, b, c),
    );
}

#[differentiable]
fn attention(q: &Array2<f64>, k: &Array2<f64>, v: &Array2<f64>) -> Array2<f64> {
    let scores = q.dot(&k.t()) / (q.ncols() as f64).sqrt();
    let w = scores.map_axis(Axis(1), |row| {
        let mx = row.fold(f64::NEG_INFINITY, |a, &b| a.max(b));
        row.mapv(|x| (x - mx).exp()).sum()
    });
    let mx = scores.fold_axis(Axis(1), f64::NEG_INFINITY, |a, &b| a.max(b));
    let p = (&scores - &mx.insert_axis(Axis(1))).mapv(f64::exp) / &w.insert_axis(Axis(1));
    p.dot(v)
}

#[test]
fn p_attention() {
    let mut r = rng("att");
    let x = (
        Array2::from_shape_fn((3, 4), |_| r.normal()),
        Array2::from_shape_fn((5, 4), |_| r.normal()),
        Array2::from_shape_fn((5, 2), |_| r.normal()),
    );
    check_derivatives(
        &x,
        |(q, k, v)| attention(q, k, v),
        |(q, k, v), (dq, dk, dv)| attention_jvp(q, k, v, dq, dk, dv),
        |(q, k, v), c| attention_vjp(q, k, v, c),
    );
}

#[differentiable]
fn conv1d(x: &Array1<f64>, w: &Array1<f64>) -> Array1<f64> {
    let kw = w.len();
    let n_out = x.len() - kw + 1;
    let mut out = Array1::zeros(n_out);
    for k in 0..kw {
        out = out + &x.slice(s![k..k + n_out]) * w[k];
    }
    out
}

#[test]
fn p_conv1d() {
    let mut r = rng("conv");
    let x = (
        Array1::from_shape_fn(9, |_| r.normal()),
        Array1::from_shape_fn(3, |_| r.normal()),
    );
    check_derivatives(
        &x,
        |(x, w)| conv1d(x, w),
        |(x, w), (dx, dw)| conv1d_jvp(x, w, dx, dw),
        |(x, w), c| conv1d_vjp(x, w, c),
    );
}

#[differentiable]
fn rows_enum(m: &Array2<f64>, v: &Array1<f64>) -> f64 {
    let mut s = 0.0;
    for (i, row) in m.outer_iter().enumerate() {
        s += (i as f64 + 1.0) * row.dot(v).tanh();
    }
    let z = Zip::from(v).and(&m.row(0)).map_collect(|&a, &b| a * b);
    s + z.sum()
}

#[test]
fn p_rows_enum() {
    let mut r = rng("rows");
    let x = (
        Array2::from_shape_fn((3, 4), |_| r.normal()),
        Array1::from_shape_fn(4, |_| r.normal()),
    );
    check_derivatives(
        &x,
        |(m, v)| rows_enum(m, v),
        |(m, v), (dm, dv)| rows_enum_jvp(m, v, dm, dv),
        |(m, v), c| rows_enum_vjp(m, v, *c),
    );
}

#[differentiable]
fn cat(a: &Array1<f64>, b: &Array1<f64>) -> Array1<f64> {
    let c = concatenate![Axis(0), a.view(), b.view(), a.view()];
    let m = stack![Axis(0), a.view(), b.view()];
    let r = c.slice(s![..;-1]).to_owned();
    &r.slice(s![1..-1]) * 2.0 + m.sum_axis(Axis(0)).sum()
}

#[test]
fn p_cat() {
    let mut r = rng("cat");
    let x = (
        Array1::from_shape_fn(3, |_| r.normal()),
        Array1::from_shape_fn(3, |_| r.normal()),
    );
    check_derivatives(
        &x,
        |(a, b)| cat(a, b),
        |(a, b), (da, db)| cat_jvp(a, b, da, db),
        |(a, b), c| cat_vjp(a, b, c),
    );
}

#[differentiable]
fn newton_sqrt(a: f64) -> f64 {
    let mut x = a;
    let mut it = 0;
    while (x * x - a).abs() > 1e-12 && it < 50 {
        x = 0.5 * (x + a / x);
        it += 1;
    }
    x
}

#[test]
fn p_newton() {
    check_derivatives(
        &2.0,
        |a| newton_sqrt(*a),
        |a, d| newton_sqrt_jvp(*a, *d),
        |a, c| newton_sqrt_vjp(*a, *c),
    );
}

#[derive(Clone, Copy)]
pub enum Act {
    Tanh,
    Relu,
    Id,
}

#[differentiable]
fn act(x: &Array1<f64>, a: Act) -> f64 {
    let f = |v: f64| v * 1.5;
    let y = match a {
        Act::Tanh => x.mapv(f64::tanh),
        Act::Relu => x.mapv(|v| v.max(0.0)),
        Act::Id => x.mapv(f),
    };
    y.iter().map(|v| v * v).sum::<f64>().sqrt()
}

#[test]
fn p_act() {
    let x = array![0.3, -0.7, 1.2];
    for a in [Act::Tanh, Act::Relu, Act::Id] {
        check_derivatives(
            &x,
            |x| act(x, a),
            |x, d| act_jvp(x, a, d),
            |x, c| act_vjp(x, a, *c),
        );
    }
}

#[differentiable]
fn cumsum(x: &Array1<f64>) -> Array1<f64> {
    let n = x.len();
    let mut c = Array1::zeros(n);
    c[0] = x[0];
    for i in 1..n {
        c[i] = c[i - 1] + x[i] * c[i - 1].cos();
    }
    c
}

#[test]
fn p_cumsum() {
    let x = array![0.3, -0.7, 1.2, 0.4];
    check_derivatives(
        &x,
        |x| cumsum(x),
        |x, d| cumsum_jvp(x, d),
        |x, c| cumsum_vjp(x, c),
    );
}

#[differentiable]
fn diag_stuff(v: &Array1<f64>, m: &Array2<f64>) -> f64 {
    let d = Array2::from_diag(v);
    let p = m.t().dot(&d).dot(m);
    p.diag().sum() + (&v.view().insert_axis(Axis(1)) + &v.view().insert_axis(Axis(0))).sum()
}

#[test]
fn p_diag() {
    let mut r = rng("diag");
    let x = (
        Array1::from_shape_fn(3, |_| r.normal()),
        Array2::from_shape_fn((3, 2), |_| r.normal()),
    );
    check_derivatives(
        &x,
        |(v, m)| diag_stuff(v, m),
        |(v, m), (dv, dm)| diag_stuff_jvp(v, m, dv, dm),
        |(v, m), c| diag_stuff_vjp(v, m, *c),
    );
}

#[differentiable]
fn news(x: &Array1<f64>, n: usize) -> f64 {
    let mut w = x.to_owned();
    w.mapv_inplace(|v| v * v + 1.0);
    let mut s = w.var(1.0) + x.std(0.0);
    for i in (0..x.len()).step_by(n) {
        s += w[i].cbrt();
    }
    let v: Vec<f64> = x.iter().map(|a| a.sin()).collect();
    let a = Array1::from(v);
    s + a.sum()
}

#[test]
fn p_news() {
    let x = array![0.3, -0.7, 1.2, 0.4, 2.0];
    check_derivatives(
        &x,
        |x| news(x, 2),
        |x, d| news_jvp(x, 2, d),
        |x, c| news_vjp(x, 2, *c),
    );
}

#[differentiable]
fn broadcast2(a: &Array2<f64>, col: &Array2<f64>, row: &Array2<f64>) -> Array2<f64> {
    (a - col) * row + col.mapv(f64::exp)
}

#[test]
fn p_broadcast2() {
    let mut r = rng("bc");
    let x = (
        Array2::from_shape_fn((3, 4), |_| r.normal()),
        Array2::from_shape_fn((3, 1), |_| r.normal()),
        Array2::from_shape_fn((1, 4), |_| r.normal()),
    );
    check_derivatives(
        &x,
        |(a, c, w)| broadcast2(a, c, w),
        |(a, c, w), (da, dc, dw)| broadcast2_jvp(a, c, w, da, dc, dw),
        |(a, c, w), ct| broadcast2_vjp(a, c, w, ct),
    );
}

#[differentiable]
fn assign_rows(m: &Array2<f64>, v: &Array1<f64>) -> f64 {
    let mut a = m.to_owned();
    a.row_mut(0).assign(v);
    a.column_mut(1).fill(2.0);
    a.slice_mut(s![1.., ..2]).assign(&m.slice(s![..2, 1..3]));
    let mut r = a.row_mut(2);
    r += v;
    r *= 0.5;
    a.mapv(|x| x * x).sum()
}

#[test]
fn p_assign_rows() {
    let mut r = rng("ar");
    let x = (
        Array2::from_shape_fn((3, 3), |_| r.normal()),
        Array1::from_shape_fn(3, |_| r.normal()),
    );
    check_derivatives(
        &x,
        |(m, v)| assign_rows(m, v),
        |(m, v), (dm, dv)| assign_rows_jvp(m, v, dm, dv),
        |(m, v), c| assign_rows_vjp(m, v, *c),
    );
}

#[differentiable]
fn helper2(x: &Array1<f64>) -> (f64, Array1<f64>) {
    let n = x.sum();
    (n * n, x.mapv(|v| v * n))
}

#[differentiable]
fn view_callee(r: ArrayView1<f64>, s: f64) -> f64 {
    r.dot(&r) * s
}

#[differentiable]
fn probe2(x: &Array1<f64>, m: &Array2<f64>) -> f64 {
    let (a, b) = helper2(x);
    let mut acc = a + b.sum();
    for row in m.rows() {
        acc += row.iter().zip(x.iter()).map(|(p, q)| p * q).sum::<f64>();
    }
    acc += m.slice(s![.., 1..]).dot(&x.slice(s![1..])).sum();
    let q = Array2::from_shape_vec((2, 2), vec![x[0], x[1], acc, x[2]]).unwrap();
    let y: Array1<f64> = x.iter().map(|v| v.sin()).collect();
    let lr = x.mapv(|v| if v > 0.0 { v } else { 0.01 * v });
    let f = x.fold(0.0, |a, &v| a + v * v);
    let idx = (x.len() - 1) / 2;
    acc + q.sum()
        + y.sum()
        + lr.sum()
        + f
        + x[idx]
        + view_callee(m.row(0), 2.0)
        + (x * 2.0).exp().sum()
}

#[test]
fn p_probe2() {
    let mut r = rng("p2");
    let x = (
        Array1::from_shape_fn(3, |_| r.normal()),
        Array2::from_shape_fn((2, 3), |_| r.normal()),
    );
    check_derivatives(
        &x,
        |(x, m)| probe2(x, m),
        |(x, m), (dx, dm)| probe2_jvp(x, m, dx, dm),
        |(x, m), c| probe2_vjp(x, m, *c),
    );
}

#[differentiable(wrt(x))]
fn early(x: &Array1<f64>, t: f64) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        if s > t {
            return s * 2.0;
        }
        s += x[i] * x[i];
    }
    s
}

#[test]
fn p_early() {
    let x = array![0.5, 1.2, -0.4, 2.0];
    for t in [0.1, 1.0, 100.0] {
        check_derivatives(
            &x,
            |x| early(x, t),
            |x, d| early_jvp(x, t, d),
            |x, c| early_vjp(x, t, *c),
        );
    }
}

#[differentiable]
fn reshape3(x: &Array1<f64>) -> f64 {
    let m = x.to_owned().into_shape_with_order((2, 3)).unwrap();
    let t = m.t().dot(&m);
    let lanes = m.slice_axis(Axis(1), linad::ndarray::Slice::from(1..3));
    t.sum() + lanes.mapv(|v| v.powi(3)).sum()
}

#[test]
fn p_reshape3() {
    let x = array![0.5, 1.2, -0.4, 2.0, 0.1, -1.0];
    check_derivatives(
        &x,
        |x| reshape3(x),
        |x, d| reshape3_jvp(x, d),
        |x, c| reshape3_vjp(x, *c),
    );
}
