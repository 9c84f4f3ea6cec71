//! Arrays through `#[differentiable]`: every parameter kind (`&ArrayN`,
//! `ArrayViewN`, owned `ArrayN`, index arrays), indexing, shape queries,
//! constructors, closures of array methods, reductions, products,
//! element-wise arithmetic and array outputs.
#![allow(
    clippy::needless_range_loop,
    clippy::assign_op_pattern,
    clippy::unnecessary_fold,
    clippy::redundant_closure,
    clippy::op_ref,
    clippy::needless_borrow
)]

mod common;
use common::*;
use linad::differentiable;
use linad::ndarray::{array, Array1, Array2, Array3, ArrayView1, ArrayView2};

// --- indexing and shapes ----------------------------------------------------

/// `v[i]`, `m[[i, j]]`, `len`, `nrows`, `ncols`, `dim` (both shapes).
#[differentiable]
fn index_and_shape(v: &Array1<f64>, m: &Array2<f64>) -> f64 {
    let n = v.len();
    let (r, c) = m.dim();
    let nn = v.dim();
    let mut s = v[0] * v[n - 1] + m[[0, 0]] * m[[r - 1, c - 1]];
    for i in 0..m.nrows() {
        for j in 0..m.ncols() {
            if j < nn {
                s += m[[i, j]] * v[j];
            }
        }
    }
    s * (r as f64) + (c as f64)
}

#[test]
fn indexing_and_shape_queries() {
    let mut rng = rng("index_and_shape");
    let x = (rng.array1(4, -1.0, 1.0), rng.array2(3, 5, -1.0, 1.0));
    check_derivatives(
        &x,
        |(v, m)| index_and_shape(v, m),
        |(v, m), (dv, dm)| index_and_shape_jvp(v, m, dv, dm),
        |(v, m), ct| index_and_shape_vjp(v, m, *ct),
    );
}

/// A rank-3 array parameter, indexed with `a[[i, j, k]]` and its `dim()`.
#[differentiable]
fn rank3(a: &Array3<f64>, x: f64) -> f64 {
    let (p, q, r) = a.dim();
    let mut s = 0.0;
    for i in 0..p {
        for j in 0..q {
            for k in 0..r {
                s += (a[[i, j, k]] * x).sin() * ((i + 2 * j + 3 * k) as f64);
            }
        }
    }
    s + a.sum() * x
}

#[test]
fn rank3_parameter() {
    let mut rng = rng("rank3");
    let a = rng.array3(2, 3, 4, -1.0, 1.0);
    check_derivatives(
        &(a, 0.8),
        |(a, x)| rank3(a, *x),
        |(a, x), (da, dx)| rank3_jvp(a, *x, da, *dx),
        |(a, x), ct| rank3_vjp(a, *x, *ct),
    );
}

/// Index arrays (`&Array1<usize>`) are constants: gathering through them.
#[differentiable]
fn gather(v: &Array1<f64>, idx: &Array1<usize>, scale: f64) -> f64 {
    let mut s = 0.0;
    for k in 0..idx.len() {
        let j = idx[k];
        s += v[j] * v[j] * scale + v[idx[idx.len() - 1 - k]];
    }
    s
}

#[test]
fn index_array_parameter() {
    let mut rng = rng("gather");
    let v = rng.array1(6, -1.0, 1.0);
    let idx: Array1<usize> = array![4, 0, 4, 2, 5];
    check_derivatives(
        &(v, 1.3),
        |(v, s)| gather(v, &idx, *s),
        |(v, s), (dv, ds)| gather_jvp(v, &idx, *s, dv, *ds),
        |(v, s), ct| gather_vjp(v, &idx, *s, *ct),
    );
}

/// An `ArrayView1` parameter and an `ArrayView2` parameter.
#[differentiable]
fn views(v: ArrayView1<f64>, m: ArrayView2<f64>) -> f64 {
    m.dot(&v).mapv(|t| t.tanh()).sum() + v.dot(&v)
}

#[test]
fn view_parameters() {
    let mut rng = rng("views");
    let x = (rng.array1(3, -1.0, 1.0), rng.array2(4, 3, -1.0, 1.0));
    check_derivatives(
        &x,
        |(v, m)| views(v.view(), m.view()),
        |(v, m), (dv, dm)| views_jvp(v.view(), m.view(), dv.view(), dm.view()),
        |(v, m), ct| views_vjp(v.view(), m.view(), *ct),
    );
}

/// Views written with the elided lifetime (`ArrayView1<'_, f64>`, as the
/// `elided_lifetimes_in_paths` lint asks), in a module importing the view
/// types alone: the companions name the owned cotangent types by their full
/// path (an `f32` function's named `Array1` from the user's scope and did
/// not compile here).
mod elided {
    use linad::differentiable;
    use linad::ndarray::{s, ArrayView1, ArrayView2};

    #[differentiable]
    pub fn views_elided(v: ArrayView1<'_, f64>, m: ArrayView2<'_, f64>) -> f64 {
        let w: ArrayView1<'_, f64> = v.slice(s![1..]);
        m.dot(&v).mapv(|t| t.tanh()).sum() + w.dot(&w)
    }

    #[differentiable]
    pub fn view32(v: ArrayView1<'_, f32>, a: f32) -> f32 {
        v.iter().map(|t| (t * a).sin()).sum::<f32>()
    }
}

#[test]
fn view_parameters_with_elided_lifetimes() {
    use elided::*;
    let mut rng = rng("views_elided");
    let x = (rng.array1(3, -1.0, 1.0), rng.array2(4, 3, -1.0, 1.0));
    check_derivatives(
        &x,
        |(v, m)| views_elided(v.view(), m.view()),
        |(v, m), (dv, dm)| views_elided_jvp(v.view(), m.view(), dv.view(), dm.view()),
        |(v, m), ct| views_elided_vjp(v.view(), m.view(), *ct),
    );
    let v: Array1<f32> = array![0.5, -1.25, 2.0];
    let a = 0.75f32;
    let (y, (gv, ga)) = view32_vjp(v.view(), a, 1.0);
    assert_eq!(y.to_bits(), view32(v.view(), a).to_bits());
    // d/dv_i = a cos(a v_i), d/da = sum_i v_i cos(a v_i), in f64 then rounded.
    for i in 0..3 {
        let want = (a as f64) * ((a as f64) * (v[i] as f64)).cos();
        assert!((gv[i] as f64 - want).abs() < 1e-6, "{i}: {} {want}", gv[i]);
    }
    let want: f64 = v
        .iter()
        .map(|&t| t as f64 * ((a as f64) * (t as f64)).cos())
        .sum();
    assert!((ga as f64 - want).abs() < 1e-6, "{ga} {want}");
    let (y2, t) = view32_jvp(v.view(), a, array![1.0f32, 0.0, 0.0].view(), 0.0);
    assert_eq!(y2.to_bits(), y.to_bits());
    assert!((t - gv[0]).abs() < 1e-6);
}

/// `first()` / `last()` then `unwrap()` (also through `copied()`,
/// `cloned()`, a `*`): the element at index 0 / the last index of every
/// axis, of `f64` and of integer arrays.
#[differentiable]
fn ends(v: &Array1<f64>, m: &Array2<f64>, k: &Array1<usize>) -> f64 {
    let j = *k.last().unwrap();
    v.first().unwrap() * v.last().copied().unwrap()
        + m.first().cloned().unwrap() * m.last().unwrap()
        + m[[0, j]] * *v.first().unwrap()
}

#[test]
fn first_and_last_elements() {
    let mut rng = rng("ends");
    let x = (rng.array1(4, -1.0, 1.0), rng.array2(3, 5, -1.0, 1.0));
    let k: Array1<usize> = array![1, 3];
    let (v, m) = &x;
    let want = v[0] * v[3] + m[[0, 0]] * m[[2, 4]] + m[[0, 3]] * v[0];
    assert_eq!(ends(v, m, &k).to_bits(), want.to_bits());
    check_derivatives(
        &x,
        |(v, m)| ends(v, m, &k),
        |(v, m), (dv, dm)| ends_jvp(v, m, &k, dv, dm),
        |(v, m), ct| ends_vjp(v, m, &k, *ct),
    );
    // An empty array: `f` panics at the `unwrap`, the derivatives at the index.
    let empty: Array1<f64> = Array1::zeros(0);
    assert!(std::panic::catch_unwind(|| ends_vjp(&empty, m, &k, 1.0)).is_err());
}

/// `get(i).copied().unwrap_or(d)` (also `.cloned()`, and `get((i, j))` /
/// `get([i, j])` of a matrix) is the bounds test it stands for;
/// `get(i).unwrap()` the read.
#[differentiable]
fn gets(x: &Array1<f64>, m: &Array2<f64>, i: usize) -> f64 {
    let a = x.get(i).copied().unwrap_or(0.5);
    let b = x.get(i + 10).cloned().unwrap_or(x[0]);
    let c = m.get((1, i)).copied().unwrap_or(-1.0) + m.get([7, 0]).copied().unwrap_or(2.0);
    let d = *x.get(0).unwrap() + m.get((0, 1)).unwrap();
    a * b + c * d
}

#[test]
fn checked_gets() {
    let mut rng = rng("gets");
    let x = (rng.array1(4, -1.0, 1.0), rng.array2(3, 4, -1.0, 1.0));
    // In range and out of range of the vector and of the matrix's columns.
    for i in [0, 3, 4, 9] {
        let (v, m) = &x;
        let (y, _) = gets_vjp(v, m, i, 1.0);
        assert_eq!(y.to_bits(), gets(v, m, i).to_bits(), "i = {i}");
        check_derivatives(
            &x,
            |(v, m)| gets(v, m, i),
            |(v, m), (dv, dm)| gets_jvp(v, m, i, dv, dm),
            |(v, m), ct| gets_vjp(v, m, i, *ct),
        );
    }
}

/// An owned `Array1` parameter (and its owned tangent).
#[differentiable]
fn owned(v: Array1<f64>, s: f64) -> f64 {
    let w = &v * s;
    w.dot(&v) + v.sum()
}

#[test]
fn owned_parameter() {
    let mut rng = rng("owned");
    let v = rng.array1(5, -1.0, 1.0);
    check_derivatives(
        &(v, 0.4),
        |(v, s)| owned(v.clone(), *s),
        |(v, s), (dv, ds)| owned_jvp(v.clone(), *s, dv.clone(), *ds),
        |(v, s), ct| owned_vjp(v.clone(), *s, *ct),
    );
}

// --- constructors -------------------------------------------------------------

/// `Array1::zeros(n)`, `Array2::zeros((r, c))`, `from_elem`, then writes.
#[differentiable]
fn constructors(x: f64, n: usize) -> f64 {
    let mut a = Array1::zeros(n);
    let mut b: Array2<f64> = Array2::zeros((n, 2));
    let c = Array1::from_elem(n, x * 2.0);
    let d = Array2::from_elem((2, n), x.sin());
    for i in 0..n {
        a[i] = x * (i as f64);
        b[[i, 1]] = c[i] + a[i];
    }
    a.sum() + b.sum() * x + d.sum()
}

#[test]
fn zeros_and_from_elem() {
    check_derivatives(
        &0.9,
        |x| constructors(*x, 4),
        |x, dx| constructors_jvp(*x, 4, *dx),
        |x, ct| constructors_vjp(*x, 4, *ct),
    );
}

/// `Array1::from_shape_fn(n, |i| ..)` and `Array2::from_shape_fn((r, c), |(i, j)| ..)`
/// capturing parameters, with array outputs.
#[differentiable]
fn shape_fns(v: &Array1<f64>, x: f64) -> Array2<f64> {
    let n = v.len();
    let w = Array1::from_shape_fn(n, |i| v[i] * x + (i as f64));
    Array2::from_shape_fn((n, 3), |(i, j)| w[i] * (j as f64 + 1.0) + (v[i] * x).sin())
}

#[test]
fn from_shape_fn_1d_and_2d() {
    let mut rng = rng("shape_fns");
    let x = (rng.array1(4, -1.0, 1.0), 0.6);
    check_derivatives(
        &x,
        |(v, x)| shape_fns(v, *x),
        |(v, x), (dv, dx)| shape_fns_jvp(v, *x, dv, *dx),
        |(v, x), ct| shape_fns_vjp(v, *x, ct),
    );
}

/// `from_shape_fn` with an outer product and a loop inside the closure.
#[differentiable]
fn closure_with_loop(m: &Array2<f64>, v: &Array1<f64>) -> Array1<f64> {
    let (r, c) = m.dim();
    Array1::from_shape_fn(r, |i| {
        let mut s = 0.0;
        for j in 0..c {
            s += m[[i, j]] * v[j];
        }
        s.tanh()
    })
}

#[test]
fn loop_inside_array_closure() {
    let mut rng = rng("closure_with_loop");
    let x = (rng.array2(3, 4, -1.0, 1.0), rng.array1(4, -1.0, 1.0));
    check_derivatives(
        &x,
        |(m, v)| closure_with_loop(m, v),
        |(m, v), (dm, dv)| closure_with_loop_jvp(m, v, dm, dv),
        |(m, v), ct| closure_with_loop_vjp(m, v, ct),
    );
}

/// Issue 8, defect 5: `from_shape_fn` and `mapv` closures whose bodies keep
/// many (here well over 20) per-element residuals: a chain of 22 distinct
/// nonlinear steps, each storing its own partials for reverse mode.
#[differentiable]
fn many_residuals(v: &Array1<f64>, m: &Array2<f64>, s: f64) -> f64 {
    let n = v.len();
    let w = Array1::from_shape_fn(n, |i| {
        let a0 = v[i] * s;
        let a1 = (a0 * 1.05).cos() * a0 + 0.5 * a0.tanh();
        let a2 = (a1 * 1.1).tanh() * a1 + 0.5 * a1.sin();
        let a3 = (a2 * 1.15).sin() * a2 + 0.5 * a2.cos();
        let a4 = (a3 * 1.2).cos() * a3 + 0.5 * a3.tanh();
        let a5 = (a4 * 1.25).tanh() * a4 + 0.5 * a4.sin();
        let a6 = (a5 * 1.3).sin() * a5 + 0.5 * a5.cos();
        let a7 = (a6 * 1.35).cos() * a6 + 0.5 * a6.tanh();
        let a8 = (a7 * 1.4).tanh() * a7 + 0.5 * a7.sin();
        let a9 = (a8 * 1.45).sin() * a8 + 0.5 * a8.cos();
        let a10 = (a9 * 1.5).cos() * a9 + 0.5 * a9.tanh();
        let a11 = (a10 * 1.55).tanh() * a10 + 0.5 * a10.sin();
        let a12 = (a11 * 1.6).sin() * a11 + 0.5 * a11.cos();
        let a13 = (a12 * 1.65).cos() * a12 + 0.5 * a12.tanh();
        let a14 = (a13 * 1.7).tanh() * a13 + 0.5 * a13.sin();
        let a15 = (a14 * 1.75).sin() * a14 + 0.5 * a14.cos();
        let a16 = (a15 * 1.8).cos() * a15 + 0.5 * a15.tanh();
        let a17 = (a16 * 1.85).tanh() * a16 + 0.5 * a16.sin();
        let a18 = (a17 * 1.9).sin() * a17 + 0.5 * a17.cos();
        let a19 = (a18 * 1.95).cos() * a18 + 0.5 * a18.tanh();
        let a20 = (a19 * 2.0).tanh() * a19 + 0.5 * a19.sin();
        let a21 = (a20 * 2.05).sin() * a20 + 0.5 * a20.cos();
        let a22 = (a21 * 2.1).cos() * a21 + 0.5 * a21.tanh();
        a22 * s
    });
    let q = m.mapv(|x| {
        let a0 = x * s + 0.25;
        let a1 = (a0 * 1.05).cos() * a0 + 0.5 * a0.tanh();
        let a2 = (a1 * 1.1).tanh() * a1 + 0.5 * a1.sin();
        let a3 = (a2 * 1.15).sin() * a2 + 0.5 * a2.cos();
        let a4 = (a3 * 1.2).cos() * a3 + 0.5 * a3.tanh();
        let a5 = (a4 * 1.25).tanh() * a4 + 0.5 * a4.sin();
        let a6 = (a5 * 1.3).sin() * a5 + 0.5 * a5.cos();
        let a7 = (a6 * 1.35).cos() * a6 + 0.5 * a6.tanh();
        let a8 = (a7 * 1.4).tanh() * a7 + 0.5 * a7.sin();
        let a9 = (a8 * 1.45).sin() * a8 + 0.5 * a8.cos();
        let a10 = (a9 * 1.5).cos() * a9 + 0.5 * a9.tanh();
        let a11 = (a10 * 1.55).tanh() * a10 + 0.5 * a10.sin();
        let a12 = (a11 * 1.6).sin() * a11 + 0.5 * a11.cos();
        let a13 = (a12 * 1.65).cos() * a12 + 0.5 * a12.tanh();
        let a14 = (a13 * 1.7).tanh() * a13 + 0.5 * a13.sin();
        let a15 = (a14 * 1.75).sin() * a14 + 0.5 * a14.cos();
        let a16 = (a15 * 1.8).cos() * a15 + 0.5 * a15.tanh();
        let a17 = (a16 * 1.85).tanh() * a16 + 0.5 * a16.sin();
        let a18 = (a17 * 1.9).sin() * a17 + 0.5 * a17.cos();
        let a19 = (a18 * 1.95).cos() * a18 + 0.5 * a18.tanh();
        let a20 = (a19 * 2.0).tanh() * a19 + 0.5 * a19.sin();
        let a21 = (a20 * 2.05).sin() * a20 + 0.5 * a20.cos();
        let a22 = (a21 * 2.1).cos() * a21 + 0.5 * a21.tanh();
        a22 + a11 * a5
    });
    w.sum() + q.sum()
}

#[test]
fn closures_with_many_residuals() {
    let mut rng = rng("many_residuals");
    let x = (rng.array1(5, -1.0, 1.0), rng.array2(3, 4, -1.0, 1.0), 0.7);
    let check = || {
        check_derivatives(
            &x,
            |(v, m, s)| many_residuals(v, m, *s),
            |(v, m, s), (dv, dm, ds)| many_residuals_jvp(v, m, *s, dv, dm, *ds),
            |(v, m, s), ct| many_residuals_vjp(v, m, *s, *ct),
        )
    };
    check();
    // Again with every kernel parallel (the runtime's threaded paths).
    let old = linad::__private::ad_runtime::par_threshold();
    linad::__private::ad_runtime::set_par_threshold(1);
    check();
    linad::__private::ad_runtime::set_par_threshold(old);
}

/// Element writes `a[i] = ..` and `a[i] += ..` on an array returned as the
/// result (reverse mode reads and clears elements of the cotangent, which
/// arrives as a view), in a loop and in straight-line code.
#[differentiable]
fn writes_into_result(x: &Array1<f64>, m: &Array2<f64>) -> Array2<f64> {
    let n = x.len();
    let mut a = m.mapv(|v| v * v);
    for i in 0..n {
        a[[i, 0]] += x[i].sin();
        a[[i, 1]] = x[i] * a[[i, 0]];
    }
    a[[0, 1]] += x[1] * x[2];
    a[[1, 0]] = x[0].exp();
    a
}

#[test]
fn element_writes_into_the_result() {
    let mut rng = rng("writes_into_result");
    let x = (rng.array1(4, -1.0, 1.0), rng.array2(4, 3, -1.0, 1.0));
    check_derivatives(
        &x,
        |(x, m)| writes_into_result(x, m),
        |(x, m), (dx, dm)| writes_into_result_jvp(x, m, dx, dm),
        |(x, m), ct| writes_into_result_vjp(x, m, ct),
    );
}

// --- mapv, reductions, iterators ---------------------------------------------

/// `.mapv(|x| ..)` capturing a scalar, chained, and `.sum()`.
#[differentiable]
fn mapv_sum(v: &Array1<f64>, m: &Array2<f64>, s: f64) -> f64 {
    let a = v.mapv(|x| (x * s).exp());
    let b = a.mapv(|y| y * y + 1.0);
    let c = m.mapv(|x| x.sin() * s);
    b.sum() + c.sum()
}

#[test]
fn mapv_and_sum() {
    let mut rng = rng("mapv_sum");
    let x = (rng.array1(5, -1.0, 1.0), rng.array2(2, 3, -1.0, 1.0), 0.7);
    check_derivatives(
        &x,
        |(v, m, s)| mapv_sum(v, m, *s),
        |(v, m, s), (dv, dm, ds)| mapv_sum_jvp(v, m, *s, dv, dm, *ds),
        |(v, m, s), ct| mapv_sum_vjp(v, m, *s, *ct),
    );
}

/// `.iter().map(|x| ..).sum::<f64>()` and `.iter().zip(..).map(|(a, b)| ..).sum::<f64>()`.
#[differentiable]
fn iter_sums(a: &Array1<f64>, b: &Array1<f64>) -> f64 {
    let sq = a.iter().map(|x| x * x).sum::<f64>();
    let cross = a
        .iter()
        .zip(b.iter())
        .map(|(x, y)| x * y.sin())
        .sum::<f64>();
    sq * cross
}

#[test]
fn iterator_map_sum_and_zip() {
    let mut rng = rng("iter_sums");
    let x = (rng.array1(6, -1.0, 1.0), rng.array1(6, -1.0, 1.0));
    check_derivatives(
        &x,
        |(a, b)| iter_sums(a, b),
        |(a, b), (da, db)| iter_sums_jvp(a, b, da, db),
        |(a, b), ct| iter_sums_vjp(a, b, *ct),
    );
}

/// `skip(k)` / `take(k)` on array iterators and ranges (`k` past the end
/// too), and `zip`s of arrays of different lengths (or shapes), which stop
/// at the shortest as Rust's do (sums, `for` loops, folds, `x` against its
/// shift):
/// the companions give `f`'s bits (checked by `check_derivatives`) and do
/// not panic where `f` does not.
#[differentiable]
fn skips_and_takes(x: &Array1<f64>, k: usize, t: usize) -> f64 {
    let a = x.iter().skip(k).map(|v| v * v).sum::<f64>();
    let b = x.iter().take(t).map(|v| v.sin()).sum::<f64>();
    let c = (0..x.len()).skip(k).map(|i| x[i] * i as f64).sum::<f64>();
    let d = (0..x.len()).step_by(2).take(t).map(|i| x[i]).sum::<f64>();
    let e = x.iter().skip(1).take(t).fold(0.0, |acc, v| acc * 0.5 + v);
    let f = x.iter().skip(k).count() as f64;
    let g = x
        .iter()
        .zip(x.iter().skip(1))
        .map(|(p, q)| (q - p) * (q - p))
        .sum::<f64>();
    a + b + c + d + e + f + g
}

#[differentiable]
fn zips_of_lengths(x: &Array1<f64>, w: &Array1<f64>) -> f64 {
    let mut s = x.iter().zip(w.iter()).map(|(a, b)| a * b).sum::<f64>();
    for (a, b) in x.iter().zip(w.iter()) {
        s += a * b.sin();
    }
    s + x
        .iter()
        .zip(w.iter())
        .fold(0.0, |acc, (a, b)| acc * 0.9 + a - b)
}

/// A `zip` of matrices walks each in logical order and stops at the
/// shorter, whatever the shapes.
#[differentiable]
fn zipped_matrices(a: &Array2<f64>, b: &Array2<f64>) -> f64 {
    a.iter()
        .zip(b.iter())
        .map(|(x, y)| x * y.sin())
        .sum::<f64>()
        + a.iter().zip(b.iter()).count() as f64
}

#[test]
fn skip_take_and_zips_of_different_lengths() {
    let mut rng = rng("skips_and_takes");
    let x = rng.array1(5, -1.0, 1.0);
    for k in [0usize, 2, 5, 9] {
        for t in [0usize, 3, 5, 11] {
            check_derivatives(
                &x,
                |x| skips_and_takes(x, k, t),
                |x, d| skips_and_takes_jvp(x, k, t, d),
                |x, ct| skips_and_takes_vjp(x, k, t, *ct),
            );
        }
    }
    let (w, w3) = (rng.array1(5, -1.0, 1.0), rng.array1(3, -1.0, 1.0));
    for (a, b) in [(&x, &w3), (&w3, &x), (&x, &w)] {
        check_derivatives(
            &(a.clone(), b.clone()),
            |(a, b)| zips_of_lengths(a, b),
            |(a, b), (da, db)| zips_of_lengths_jvp(a, b, da, db),
            |(a, b), ct| zips_of_lengths_vjp(a, b, *ct),
        );
    }
    let m = rng.array2(2, 3, -1.0, 1.0);
    for (r, c) in [(3, 2), (2, 2), (2, 3), (4, 3)] {
        let b = rng.array2(r, c, -1.0, 1.0);
        check_derivatives(
            &(m.clone(), b),
            |(a, b)| zipped_matrices(a, b),
            |(a, b), (da, db)| zipped_matrices_jvp(a, b, da, db),
            |(a, b), ct| zipped_matrices_vjp(a, b, *ct),
        );
    }
}

/// `.iter().fold(init, |acc, x| ..)` with a non-linear accumulator.
#[differentiable]
fn folds(v: &Array1<f64>, x: f64) -> f64 {
    let horner = v.iter().fold(0.0, |acc, c| acc * x + c);
    let prod = v.iter().fold(1.0, |acc, c| acc * (1.0 + c * c));
    horner + prod
}

#[test]
fn fold_with_closure() {
    let mut rng = rng("folds");
    let x = (rng.array1(5, -1.0, 1.0), 0.9);
    check_derivatives(
        &x,
        |(v, x)| folds(v, *x),
        |(v, x), (dv, dx)| folds_jvp(v, *x, dv, *dx),
        |(v, x), ct| folds_vjp(v, *x, *ct),
    );
}

/// Element loops over matrices and rank-3 arrays: `for v in m.iter()`,
/// `for v in m` (`m: &Array2`), `.enumerate()` (the position in logical
/// order), `indexed_iter()` (the multi-index), `.zip(..)`, a transposed
/// view (its logical order, not its memory order), `fold`, and a `break`: each visits the elements in row-major logical
/// order, as ndarray's iterators do, so the sums keep `f`'s bits.
#[differentiable]
fn matrix_element_loops(m: &Array2<f64>, t: &Array3<f64>, x: f64) -> f64 {
    let mut s = 0.0;
    for v in m.iter() {
        s = s * 0.5 + v * x;
    }
    for v in m {
        s += v.sin();
    }
    for (k, v) in m.iter().enumerate() {
        s += (k as f64 + 1.0) * v * v;
    }
    for (a, b) in m.iter().zip(m.t().iter()) {
        s += a * b;
    }
    for v in m.t().iter() {
        s = s * 0.7 + v;
    }
    for v in t.iter() {
        if *v > 0.8 {
            break;
        }
        s += v * x;
    }
    for ((i, j), v) in m.indexed_iter() {
        s += v * (i as f64 - 2.0 * j as f64);
    }
    for ((i, j, k), &v) in t.indexed_iter() {
        if i + j == k {
            s = s * 0.5 + v;
        }
    }
    let w = m.column(0).to_owned();
    s += w.indexed_iter().map(|(i, v)| v * i as f64).sum::<f64>();
    s + t.iter().fold(0.0, |acc, v| acc * 0.5 + v.cos())
        + m.t()
            .indexed_iter()
            .fold(0.0, |acc, ((i, j), v)| acc * 0.9 + v * (i * 10 + j) as f64)
}

#[test]
fn element_loops_over_matrices() {
    let mut rng = rng("matrix_element_loops");
    for (r, c) in [(2, 3), (3, 2), (1, 4), (0, 3)] {
        let m = rng.array2(r, c, -1.0, 1.0);
        let t = Array3::from_shape_fn((2, 3, 2), |(i, j, k)| {
            0.5 - 0.11 * (i + 2 * j + 3 * k) as f64
        });
        check_derivatives(
            &(m, t, 0.8),
            |(m, t, x)| matrix_element_loops(m, t, *x),
            |(m, t, x), (dm, dt, dx)| matrix_element_loops_jvp(m, t, *x, dm, dt, *dx),
            |(m, t, x), ct| matrix_element_loops_vjp(m, t, *x, *ct),
        );
    }
}

/// `v.windows(k)`: a `for` loop over the windows (second differences), a
/// `map` of each to a number then `sum` and `collect`, `enumerate`, and a
/// window longer than the vector (no window at all), as ndarray's.
#[differentiable]
fn windowed(x: &Array1<f64>, k: usize) -> f64 {
    let mut s = 0.0;
    for w in x.windows(3) {
        s += (w[2] - 2.0 * w[1] + w[0]).powi(2);
    }
    let sums: Vec<f64> = x.windows(k).into_iter().map(|w| w.sum() * w[0]).collect();
    let t = x.windows(2).into_iter().map(|w| w.dot(&w)).sum::<f64>();
    for (i, w) in x.windows(k).into_iter().enumerate() {
        s += w.mapv(f64::sin).sum() * i as f64;
    }
    s + t + sums.iter().sum::<f64>()
}

#[test]
fn windows_of_vectors() {
    let mut rng = rng("windowed");
    for n in [1usize, 2, 5] {
        let x = rng.array1(n, -1.0, 1.0);
        for k in [1usize, 2, 4, 7] {
            check_derivatives(
                &x,
                |x| windowed(x, k),
                |x, d| windowed_jvp(x, k, d),
                |x, ct| windowed_vjp(x, k, *ct),
            );
        }
    }
    // ndarray panics on an empty window; so do the companions.
    let x = rng.array1(3, -1.0, 1.0);
    for run in [
        Box::new(|| {
            windowed(&x, 0);
        }) as Box<dyn Fn()>,
        Box::new(|| {
            windowed_vjp(&x, 0, 1.0);
        }),
        Box::new(|| {
            windowed_jvp(&x, 0, &x);
        }),
    ] {
        assert!(std::panic::catch_unwind(std::panic::AssertUnwindSafe(run)).is_err());
    }
}

/// Stable log-sum-exp: `v.iter().cloned().fold(f64::NEG_INFINITY, f64::max)`.
#[differentiable]
fn logsumexp(v: &Array1<f64>) -> f64 {
    let mx = v.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    mx + v.iter().map(|x| (x - mx).exp()).sum::<f64>().ln()
}

#[test]
fn max_fold_logsumexp() {
    let v = array![0.3, -1.2, 2.1, 0.7, 1.4];
    check_derivatives(
        &v,
        |v| logsumexp(v),
        |v, dv| logsumexp_jvp(v, dv),
        |v, ct| logsumexp_vjp(v, *ct),
    );
    // the max's derivative goes to the arg-max only
    let (_, g) = logsumexp_vjp(&v, 1.0);
    assert_close(g.sum(), 1.0, 1e-12);
}

/// `fold(f64::INFINITY, f64::min)` and `fold(f64::NEG_INFINITY, f64::max)` together.
#[differentiable]
fn range_width(v: &Array1<f64>) -> f64 {
    let hi = v.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let lo = v.iter().cloned().fold(f64::INFINITY, f64::min);
    (hi - lo) * hi
}

#[test]
fn min_and_max_folds() {
    let v = array![0.3, -1.2, 2.1, 0.7, 1.4];
    check_derivatives(
        &v,
        |v| range_width(v),
        |v, dv| range_width_jvp(v, dv),
        |v, ct| range_width_vjp(v, *ct),
    );
}

// --- products and transposes --------------------------------------------------

/// vec·vec, mat·vec and mat·mat with `.dot`, and `.t()`.
#[differentiable]
fn products(a: &Array2<f64>, b: &Array2<f64>, v: &Array1<f64>) -> f64 {
    let ab = a.dot(b);
    let abt = ab.t().dot(&ab);
    let av = a.dot(v);
    let w = a.t().dot(&av);
    av.dot(&av) + abt.sum() * 0.1 + w.dot(&w)
}

#[test]
fn dot_products_and_transpose() {
    let mut rng = rng("products");
    let x = (
        rng.array2(3, 4, -1.0, 1.0),
        rng.array2(4, 2, -1.0, 1.0),
        rng.array1(4, -1.0, 1.0),
    );
    check_derivatives(
        &x,
        |(a, b, v)| products(a, b, v),
        |(a, b, v), (da, db, dv)| products_jvp(a, b, v, da, db, dv),
        |(a, b, v), ct| products_vjp(a, b, v, *ct),
    );
}

/// A matrix product as the output.
#[differentiable]
fn matmul(a: &Array2<f64>, b: &Array2<f64>) -> Array2<f64> {
    a.dot(b)
}

#[test]
fn matrix_output() {
    let mut rng = rng("matmul");
    let x = (rng.array2(3, 4, -1.0, 1.0), rng.array2(4, 2, -1.0, 1.0));
    check_derivatives(
        &x,
        |(a, b)| matmul(a, b),
        |(a, b), (da, db)| matmul_jvp(a, b, da, db),
        |(a, b), ct| matmul_vjp(a, b, ct),
    );
}

/// `.row(i)`, `.column(j)` and products of them.
#[differentiable]
fn rows_and_columns(m: &Array2<f64>, i: usize, j: usize) -> f64 {
    let r = m.row(i);
    let c = m.column(j);
    r.dot(&r) * c.sum() + m.t().row(j).sum()
}

#[test]
fn row_and_column() {
    let mut rng = rng("rows_and_columns");
    let m = rng.array2(3, 4, -1.0, 1.0);
    check_derivatives(
        &m,
        |m| rows_and_columns(m, 1, 2),
        |m, dm| rows_and_columns_jvp(m, 1, 2, dm),
        |m, ct| rows_and_columns_vjp(m, 1, 2, *ct),
    );
}

// --- element-wise arithmetic ---------------------------------------------------

/// `a + b`, `a - b`, `a * b`, `a / b` on references and owned arrays, and
/// `&a * s`, `s * &a`; an array output.
#[differentiable]
fn elementwise(a: &Array1<f64>, b: &Array1<f64>, s: f64) -> Array1<f64> {
    let sum = a + b;
    let diff = a - b;
    let prod = &sum * &diff;
    let quot = a / &b.mapv(|x| 2.0 + x * x);
    let scaled = &prod * s;
    let left = s * &quot;
    scaled + left - &sum
}

#[test]
fn elementwise_operators() {
    let mut rng = rng("elementwise");
    let x = (rng.array1(5, -1.0, 1.0), rng.array1(5, -1.0, 1.0), 1.7);
    check_derivatives(
        &x,
        |(a, b, s)| elementwise(a, b, *s),
        |(a, b, s), (da, db, ds)| elementwise_jvp(a, b, *s, da, db, *ds),
        |(a, b, s), ct| elementwise_vjp(a, b, *s, ct),
    );
}

/// ndarray's elementwise float maths on arrays (`a.cbrt()`, `a.exp2()`,
/// `a.log(b)`, `a.hypot(s)`, `a.clamp(lo, hi)`, ...) and `mapv(f64::cbrt)`.
#[differentiable]
fn float_maths(a: &Array1<f64>, s: f64) -> Array1<f64> {
    let p = a.mapv(|v| 1.5 + v * v);
    let q = a.cbrt() + a.exp2() + p.log(3.0) + a.hypot(s) + a.clamp(-0.5, 0.5);
    q + a.to_degrees() + a.to_radians() + a.mapv(f64::cbrt) * s.cbrt()
}

#[test]
fn float_maths_methods() {
    // away from 0, where cbrt has no derivative, and from the clamp's corners
    let a = Array1::from(vec![-0.9, -0.3, 0.2, 0.7, 1.3]);
    let x = (a, 1.7);
    let y = float_maths(&x.0, x.1);
    assert_eq!(y[0].to_bits(), {
        let v: f64 = -0.9;
        (v.cbrt()
            + v.exp2()
            + (1.5 + v * v).log(3.0)
            + v.hypot(1.7)
            + v.clamp(-0.5, 0.5)
            + v.to_degrees()
            + v.to_radians()
            + v.cbrt() * 1.7f64.cbrt())
        .to_bits()
    });
    check_derivatives(
        &x,
        |(a, s)| float_maths(a, *s),
        |(a, s), (da, ds)| float_maths_jvp(a, *s, da, *ds),
        |(a, s), ct| float_maths_vjp(a, *s, ct),
    );
}

/// Element-wise arithmetic on matrices, with a 2-D output.
#[differentiable]
fn elementwise2(a: &Array2<f64>, b: &Array2<f64>) -> Array2<f64> {
    let c = a * b + a;
    let d = &c / &b.mapv(|x| x.exp());
    &d - &(2.0 * &c)
}

#[test]
fn elementwise_operators_2d() {
    let mut rng = rng("elementwise2");
    let x = (rng.array2(2, 3, -1.0, 1.0), rng.array2(2, 3, -1.0, 1.0));
    check_derivatives(
        &x,
        |(a, b)| elementwise2(a, b),
        |(a, b), (da, db)| elementwise2_jvp(a, b, da, db),
        |(a, b), ct| elementwise2_vjp(a, b, ct),
    );
}

// --- mixed outputs -------------------------------------------------------------

/// A tuple output mixing a scalar and an array: softmax and its log-normaliser.
#[differentiable]
fn softmax(v: &Array1<f64>) -> (Array1<f64>, f64) {
    let mx = v.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let e = v.mapv(|x| (x - mx).exp());
    let z = e.sum();
    let p = e.mapv(|x| x / z);
    (p, mx + z.ln())
}

#[test]
fn tuple_of_array_and_scalar_output() {
    let v = array![0.5, -0.3, 1.2, 0.1];
    check_derivatives(
        &v,
        |v| softmax(v),
        |v, dv| softmax_jvp(v, dv),
        |v, (cp, cz)| softmax_vjp(v, (cp, *cz)),
    );
}

/// A linear layer with a non-linearity: mat·vec plus bias, mapv, array output.
#[differentiable]
fn dense(w: &Array2<f64>, b: &Array1<f64>, x: &Array1<f64>) -> Array1<f64> {
    (w.dot(x) + b).mapv(|t| t.tanh())
}

#[test]
fn dense_layer() {
    let mut rng = rng("dense");
    let x = (
        rng.array2(3, 4, -1.0, 1.0),
        rng.array1(3, -1.0, 1.0),
        rng.array1(4, -1.0, 1.0),
    );
    check_derivatives(
        &x,
        |(w, b, x)| dense(w, b, x),
        |(w, b, x), (dw, db, dx)| dense_jvp(w, b, x, dw, db, dx),
        |(w, b, x), ct| dense_vjp(w, b, x, ct),
    );
}

/// A local array updated across loop iterations as whole-array state.
#[differentiable]
fn power_iteration(m: &Array2<f64>, v0: &Array1<f64>, steps: usize) -> Array1<f64> {
    let mut v = v0.mapv(|x| x);
    for _ in 0..steps {
        let w = m.dot(&v);
        let norm = w.dot(&w).sqrt();
        v = w.mapv(|x| x / norm);
    }
    v
}

#[test]
fn array_loop_state() {
    let mut rng = rng("power_iteration");
    let x = (rng.array2(3, 3, 0.1, 1.0), rng.array1(3, 0.5, 1.0));
    check_derivatives(
        &x,
        |(m, v)| power_iteration(m, v, 3),
        |(m, v), (dm, dv)| power_iteration_jvp(m, v, 3, dm, dv),
        |(m, v), ct| power_iteration_vjp(m, v, 3, ct),
    );
}

/// `ndarray`'s own `.fold(init, |acc, x| ..)` on a vector (not through `iter()`).
#[differentiable]
fn array_fold(v: &Array1<f64>) -> f64 {
    v.fold(0.0, |acc, x| acc + x.sin() * x)
}

#[test]
fn array_fold_method() {
    let mut rng = rng("array_fold");
    let v = rng.array1(5, -1.0, 1.0);
    check_derivatives(
        &v,
        |v| array_fold(v),
        |v, dv| array_fold_jvp(v, dv),
        |v, ct| array_fold_vjp(v, *ct),
    );
}

// --- bit-identical primals of reductions ----------------------------------------

#[differentiable]
fn red_sum(a: &Array1<f64>) -> f64 {
    a.sum()
}

#[differentiable]
fn red_dot(a: &Array1<f64>, b: &Array1<f64>) -> f64 {
    a.dot(b)
}

#[differentiable]
fn red_iter(a: &Array1<f64>) -> f64 {
    a.iter().map(|x| x * x).sum::<f64>()
}

#[differentiable]
fn red_zip(a: &Array1<f64>, b: &Array1<f64>) -> f64 {
    a.iter().zip(b.iter()).map(|(x, y)| x * y).sum::<f64>()
}

#[differentiable]
fn red_matvec(m: &Array2<f64>, v: &Array1<f64>) -> Array1<f64> {
    m.dot(v)
}

#[differentiable]
fn red_sum2(m: &Array2<f64>) -> f64 {
    m.sum()
}

/// The primal results of `f_jvp` and `f_vjp` are those of `f` bit for bit,
/// also where `f` sums: `ArrayBase::sum` and `dot` (ndarray's unrolled
/// order), `Iterator::sum` (sequential order), for every length up to 40.
#[test]
fn reductions_are_bit_identical_for_all_lengths() {
    let mut rng = rng("reductions");
    let mut bad: Vec<String> = vec![];
    for n in 1..=40 {
        let a = rng.array1(n, -1.0, 1.0);
        let b = rng.array1(n, -1.0, 1.0);
        let m = rng.array2(3, n, -1.0, 1.0);
        let mut check = |what: &str, f: f64, j: f64, v: f64| {
            if f.to_bits() != j.to_bits() || f.to_bits() != v.to_bits() {
                bad.push(format!("{what} n={n}: f {f:e}, jvp {j:e}, vjp {v:e}"));
            }
        };
        check(
            "sum",
            red_sum(&a),
            red_sum_jvp(&a, &b).0,
            red_sum_vjp(&a, 1.0).0,
        );
        check(
            "dot",
            red_dot(&a, &b),
            red_dot_jvp(&a, &b, &a, &b).0,
            red_dot_vjp(&a, &b, 1.0).0,
        );
        check(
            "iter().map().sum()",
            red_iter(&a),
            red_iter_jvp(&a, &b).0,
            red_iter_vjp(&a, 1.0).0,
        );
        check(
            "iter().zip().map().sum()",
            red_zip(&a, &b),
            red_zip_jvp(&a, &b, &a, &b).0,
            red_zip_vjp(&a, &b, 1.0).0,
        );
        check(
            "sum (2-D)",
            red_sum2(&m),
            red_sum2_jvp(&m, &m).0,
            red_sum2_vjp(&m, 1.0).0,
        );
        let y = red_matvec(&m, &a);
        let yj = red_matvec_jvp(&m, &a, &m, &b).0;
        let yv = red_matvec_vjp(&m, &a, &y).0;
        for i in 0..3 {
            check("mat.dot(vec)", y[i], yj[i], yv[i]);
        }
    }
    assert!(
        bad.is_empty(),
        "{} primal results differ from f:\n{}",
        bad.len(),
        bad.join("\n")
    );
}

/// A rank-3 output built with `Array3::from_shape_fn`.
#[differentiable]
fn outer3(a: &Array1<f64>, b: &Array1<f64>, m: &Array2<f64>) -> Array3<f64> {
    Array3::from_shape_fn((a.len(), b.len(), m.ncols()), |(i, j, k)| {
        a[i] * b[j] * m[[j, k]] + (a[i] * m[[j, k]]).sin()
    })
}

#[test]
fn rank3_output() {
    let mut rng = rng("outer3");
    let x = (
        rng.array1(2, -1.0, 1.0),
        rng.array1(3, -1.0, 1.0),
        rng.array2(3, 4, -1.0, 1.0),
    );
    check_derivatives(
        &x,
        |(a, b, m)| outer3(a, b, m),
        |(a, b, m), (da, db, dm)| outer3_jvp(a, b, m, da, db, dm),
        |(a, b, m), ct| outer3_vjp(a, b, m, ct),
    );
}

// --- rows read in loops (lanes taken before the loop) -------------------------

/// `sum_k a[i, k]^2` over the first `m` columns: the loop reads row `i`,
/// which the generated code takes once before the loop.
#[differentiable]
fn row_squares(a: ArrayView2<f64>, i: usize, m: usize) -> f64 {
    let mut s = 0.0;
    for k in 0..m {
        s += a[[i, k]] * a[[i, k]];
    }
    s
}

/// Rows of a strided view (a transposed matrix) read in a loop: the same
/// values and gradients as the contiguous copy; a row index out of bounds
/// panics exactly when `f` does (not when the loop reads nothing).
#[test]
fn rows_read_in_loops_as_f_reads_them() {
    let m = Array2::from_shape_fn((4, 3), |(r, c)| 1.0 + r as f64 - 0.5 * c as f64);
    let t = m.t();
    let dense = t.to_owned();
    for i in 0..3 {
        let (y, g) = row_squares_vjp(t, i, 4, 1.0);
        let (y2, g2) = row_squares_vjp(dense.view(), i, 4, 1.0);
        assert_eq!(y.to_bits(), row_squares(t, i, 4).to_bits());
        assert_eq!(y.to_bits(), y2.to_bits());
        assert_eq!(g, g2);
        let want =
            Array2::from_shape_fn((3, 4), |(r, c)| if r == i { 2.0 * t[[r, c]] } else { 0.0 });
        assert_eq!(g, want);
        let (yj, dy) = row_squares_jvp(t, i, 4, want.view());
        assert_eq!(yj.to_bits(), y.to_bits());
        assert_eq!(dy, want.iter().map(|v| v * v).sum::<f64>());
    }
    // Row 7 of a 3-row matrix: nothing read, no panic.
    assert_eq!(row_squares(t, 7, 0), 0.0);
    assert_eq!(row_squares_vjp(t, 7, 0, 1.0).0, 0.0);
    let panics = |f: &dyn Fn()| std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).is_err();
    assert!(panics(&|| {
        row_squares(t, 7, 1);
    }));
    assert!(panics(&|| {
        row_squares_vjp(t, 7, 1, 1.0);
    }));
    assert!(panics(&|| {
        row_squares_vjp(t, 0, 5, 1.0);
    }));
}

/// `var(ddof)` / `std(ddof)` as ndarray computes them (Welford's update:
/// the primal is bit-identical), of vectors and matrices, and
/// `mapv_inplace` on a local array.
#[differentiable(wrt(v, m))]
fn spread(v: &Array1<f64>, m: &Array2<f64>, ddof: f64) -> f64 {
    let mut w = v.to_owned();
    w.mapv_inplace(|x| x * x + 0.5);
    w.mapv_inplace(f64::ln);
    v.var(ddof) + m.std(0.0) * w.std(ddof) + w.sum()
}

#[test]
fn variance_std_and_mapv_inplace() {
    let mut r = rng("variance_std_and_mapv_inplace");
    for (n, ddof) in [(1, 0.0), (2, 1.0), (5, 1.0), (7, 0.5), (4, 4.0)] {
        let x = (
            Array1::from_shape_fn(n, |_| r.normal()),
            Array2::from_shape_fn((3, 2), |_| r.normal()),
        );
        let mut w = x.0.clone();
        w.mapv_inplace(|a| a * a + 0.5);
        w.mapv_inplace(f64::ln);
        let want = x.0.var(ddof) + x.1.std(0.0) * w.std(ddof) + w.sum();
        assert_eq!(spread(&x.0, &x.1, ddof).to_bits(), want.to_bits());
        // (std has no derivative at a zero variance: one element)
        if n > 1 && ddof < n as f64 {
            check_derivatives(
                &x,
                |(v, m)| spread(v, m, ddof),
                |(v, m), (dv, dm)| spread_jvp(v, m, ddof, dv, dm),
                |(v, m), ct| spread_vjp(v, m, ddof, *ct),
            );
        }
    }
}

#[test]
#[should_panic]
fn variance_with_ddof_past_the_length_panics_in_the_companions() {
    let (v, m) = (Array1::from(vec![1.0, 2.0]), Array2::zeros((2, 2)));
    let _ = spread_vjp(&v, &m, 3.0, 1.0);
}

/// A row vector broadcast over a matrix's rows, differentiated in it only:
/// the reverse pass sums the rows' cotangents after an elementwise map, in
/// one pass that never makes the map's matrix (`ad_runtime::map_sum_rows3`).
#[allow(clippy::op_ref)]
#[differentiable(wrt(mu), dump)]
fn centred_weighted(x: &Array2<f64>, mu: &Array1<f64>) -> f64 {
    let xc = x - mu;
    (&xc * &xc * x).sum()
}

/// Forward mode of a product of centred points, `x` constant: the tangent
/// of `x - mu` is one row repeated, and its product with `l` one
/// vector-matrix product (`simplify/lin_broadcast.rs`): the JVP makes two
/// matrix products, the primal's and `xc · dl`, not three.
#[allow(clippy::op_ref)]
#[differentiable(wrt(mu, l), dump)]
fn centred_product(x: &Array2<f64>, mu: &Array1<f64>, l: &Array2<f64>) -> f64 {
    let xc = x - mu;
    xc.dot(l).mapv(|v| v * v).sum()
}

#[test]
fn forward_mode_keeps_broadcast_rows() {
    let dump = centred_product_linad_dump();
    let start = dump
        .find("fn __linadw_centred_product_jvp(")
        .unwrap_or_else(|| panic!("no centred_product_jvp in\n{dump}"));
    let jvp = &dump[start..start + dump[start..].find("\n}\n").expect("its end")];
    let products = jvp.matches("::matmul(").count() + jvp.matches(".dot(").count();
    assert_eq!(products, 2, "{jvp}");
    assert!(jvp.contains("::vecmat("), "{jvp}");
    let mut rng = rng("centred_product");
    let x = rng.array2(7, 3, -1.0, 1.0);
    // `mu` of the rows' length, and of length 1 (stretched to it).
    for m in [3, 1] {
        let p = (rng.array1(m, -1.0, 1.0), rng.array2(3, 4, -1.0, 1.0));
        check_derivatives(
            &p,
            |(mu, l)| centred_product(&x, mu, l),
            |(mu, l), (dmu, dl)| centred_product_jvp(&x, mu, l, dmu, dl),
            |(mu, l), ct| centred_product_vjp(&x, mu, l, *ct),
        );
    }
}

#[test]
fn row_sums_of_reverse_maps_in_one_pass() {
    assert!(centred_weighted_linad_dump().contains("::map_sum_rows"));
    let mut rng = rng("centred_weighted");
    let mu = rng.array1(5, -1.0, 1.0);
    // Row-major and column-major (the kernel's element path); 1,100 rows
    // take two parts of the row sum.
    let x = rng.array2(1100, 5, -1.0, 1.0);
    let xf = x.t().as_standard_layout().reversed_axes().to_owned();
    assert!(!xf.is_standard_layout());
    for x in [&x, &xf] {
        check_derivatives(
            &mu,
            |mu| centred_weighted(x, mu),
            |mu, dmu| centred_weighted_jvp(x, mu, dmu),
            |mu, ct| centred_weighted_vjp(x, mu, *ct),
        );
    }
    // The same gradient for either layout, to the last bit (the order of
    // the sums does not follow the layout).
    let (_, g) = centred_weighted_vjp(&x, &mu, 1.0);
    let (_, gf) = centred_weighted_vjp(&xf, &mu, 1.0);
    assert_eq!(g, gf);
}

// --- per-row reductions --------------------------------------------------------

/// A log-sum-exp per row, max-shifted, written as examples/gmm.rs writes
/// it: the reverse spreads each row's cotangent over a zero row (and its
/// arg-max) and adds that row into the matrix's cotangent, which the
/// simplifier turns into updates of the matrix's row (`simplify::in_place`,
/// seen in `#[differentiable(dump)]`).
#[differentiable]
fn row_logsumexp(x: &Array2<f64>) -> f64 {
    let lse = Array1::from_shape_fn(x.nrows(), |i| {
        let row = x.row(i);
        let m = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        m + row.iter().map(|b| (b - m).exp()).sum::<f64>().ln()
    });
    lse.sum()
}

/// A softmax per row, written as loops, dotted with `w`.
#[differentiable]
fn row_softmax_dot(x: &Array2<f64>, w: &Array1<f64>) -> f64 {
    let mut total = 0.0;
    for i in 0..x.nrows() {
        let mut m = f64::NEG_INFINITY;
        for k in 0..x.ncols() {
            m = m.max(x[[i, k]]);
        }
        let mut s = 0.0;
        let mut t = 0.0;
        for k in 0..x.ncols() {
            let e = (x[[i, k]] - m).exp();
            s += e;
            t += e * w[k];
        }
        total += t / s;
    }
    total
}

#[test]
fn per_row_reductions() {
    let mut rng = rng("per_row_reductions");
    for (r, c) in [(1, 1), (3, 4), (40, 7)] {
        let x = rng.array2(r, c, -3.0, 3.0);
        let w = rng.array1(c, -1.0, 1.0);
        assert_same_bits(&row_logsumexp_vjp(&x, 1.0).0, &row_logsumexp(&x));
        assert_same_bits(
            &row_softmax_dot_vjp(&x, &w, 1.0).0,
            &row_softmax_dot(&x, &w),
        );
        check_derivatives(&x, row_logsumexp, row_logsumexp_jvp, |x, ct| {
            row_logsumexp_vjp(x, *ct)
        });
        check_derivatives(
            &(x.clone(), w.clone()),
            |(x, w)| row_softmax_dot(x, w),
            |(x, w), (dx, dw)| row_softmax_dot_jvp(x, w, dx, dw),
            |(x, w), ct| row_softmax_dot_vjp(x, w, *ct),
        );
        // The gradient of a log-sum-exp per row: each row's softmax.
        let (_, g) = row_logsumexp_vjp(&x, 1.0);
        for i in 0..r {
            let m = x.row(i).fold(f64::NEG_INFINITY, |a: f64, b| a.max(*b));
            let e = x.row(i).mapv(|b| (b - m).exp());
            let s = e.sum();
            for k in 0..c {
                assert!((g[[i, k]] - e[k] / s).abs() <= 1e-14, "{i} {k}");
            }
        }
    }
}
