//! ndarray written as its documentation shows: slices (`s![..]`), views and
//! axis work, broadcasting, functions as values, `for` over iterators and
//! lanes. Each form in both modes against central finite differences and
//! the dot-product identity (`check_derivatives`), primal bit-identical.
#![allow(
    clippy::type_complexity,
    clippy::needless_range_loop,
    clippy::redundant_closure,
    clippy::reversed_empty_ranges
)]

mod common;
use common::*;
use linad::differentiable;
use linad::ndarray::{s, Array1, Array2, Array3, Axis, Slice, Zip};

#[differentiable]
fn slices(a: &Array2<f64>, v: &Array1<f64>) -> (Array2<f64>, Array1<f64>, f64) {
    let every_other = a.slice(s![1..;2, ..]);
    let reversed = v.slice(s![..;-1]);
    let last_col = a.slice(s![.., -1]);
    let corner = a[[0, 0]] + a.slice(s![-1, -2..]).sum();
    let mid = v.slice(s![1..-1]);
    (
        every_other.mapv(|x| x * x),
        &reversed * 2.0 + mid.sum() + last_col.sum(),
        corner,
    )
}

#[test]
fn slicing() {
    let mut rng = rng("slicing");
    let a = rng.array2(5, 3, -1.0, 1.0);
    let v = rng.array1(4, -1.0, 1.0);
    let (e, r, c) = slices(&a, &v);
    assert_eq!(e.shape(), &[2, 3]);
    assert_eq!(r[0], v[3] * 2.0 + (v[1] + v[2]) + a.column(2).sum());
    assert_eq!(c, a[[0, 0]] + a.slice(s![-1, -2..]).sum());
    check_derivatives(
        &(a, v),
        |(a, v)| slices(a, v),
        |(a, v), (da, dv)| slices_jvp(a, v, da, dv),
        |(a, v), ct: &(Array2<f64>, Array1<f64>, f64)| slices_vjp(a, v, (&ct.0, &ct.1, ct.2)),
    );
}

#[differentiable]
fn views(a: &Array2<f64>, k: usize) -> (Array1<f64>, Array1<f64>, Array1<f64>, Array2<f64>) {
    let d = a.diag().to_owned();
    let row = a.index_axis(Axis(0), k).to_owned();
    let cols = a.slice_axis(Axis(1), Slice::from(1..));
    let flat = a.clone().into_shape_with_order(a.len()).unwrap();
    (d, row, flat, cols.to_owned())
}

#[test]
fn axis_views_and_reshape() {
    let mut rng = rng("views");
    let a = rng.array2(3, 4, -1.0, 1.0);
    let (d, row, flat, cols) = views(&a, 2);
    assert_eq!(d.len(), 3);
    assert_eq!(row, a.row(2));
    assert_eq!(flat.len(), 12);
    assert_eq!(cols.shape(), &[3, 3]);
    check_derivatives(
        &a,
        |a| views(a, 2),
        |a, da| views_jvp(a, 2, da),
        |a, ct: &(Array1<f64>, Array1<f64>, Array1<f64>, Array2<f64>)| {
            views_vjp(a, 2, (&ct.0, &ct.1, &ct.2, &ct.3))
        },
    );
}

#[differentiable]
fn broadcasting(x: &Array2<f64>, mu: &Array1<f64>, s: f64) -> Array2<f64> {
    let centred = x - mu;
    let scaled = 2.0 * &centred + s;
    &scaled * &mu.view().insert_axis(Axis(0)).broadcast(x.dim()).unwrap() + mu
}

#[test]
fn broadcasting_rows_and_scalars() {
    let mut rng = rng("broadcast");
    let x = rng.array2(4, 3, -1.0, 1.0);
    let mu = rng.array1(3, -1.0, 1.0);
    let y = broadcasting(&x, &mu, 0.5);
    assert_eq!(y[[1, 2]], (2.0 * (x[[1, 2]] - mu[2]) + 0.5) * mu[2] + mu[2]);
    check_derivatives(
        &(x, mu, 0.5),
        |(x, mu, s)| broadcasting(x, mu, *s),
        |(x, mu, s), (dx, dmu, ds)| broadcasting_jvp(x, mu, *s, dx, dmu, *ds),
        |(x, mu, s), ct: &Array2<f64>| broadcasting_vjp(x, mu, *s, ct),
    );
}

/// The shapes the reverse pass fuses: the two terms of `&z * &z`'s
/// transpose (one map adding both), scalings and differences of cotangent
/// arrays, and a cotangent both multiplied by a matrix and reduced (two
/// views of one array, no copy).
#[differentiable]
fn product_rule_terms(x: &Array2<f64>, w: &Array2<f64>, v: &Array1<f64>) -> f64 {
    let z = x.dot(w) - v;
    let q = &z * &z;
    let r = &q * 0.5 - &z;
    r.sum() + z.dot(&w.t()).sum() + z.sum_axis(Axis(0)).dot(v)
}

#[test]
fn fused_reverse_of_array_products() {
    let mut rng = rng("product_rule_terms");
    let x = rng.array2(5, 3, -1.0, 1.0);
    let w = rng.array2(3, 3, -1.0, 1.0);
    let v = rng.array1(3, -1.0, 1.0);
    check_derivatives(
        &(x, w, v),
        |(x, w, v)| product_rule_terms(x, w, v),
        |(x, w, v), (dx, dw, dv)| product_rule_terms_jvp(x, w, v, dx, dw, dv),
        |(x, w, v), ct: &f64| product_rule_terms_vjp(x, w, v, *ct),
    );
}

/// A broadcast product whose cotangent is read twice (by a matrix product
/// and by a map), as in the NumPy-style GMM's `&xc * &diag + xc.dot(&l)`:
/// the transposes of the broadcasts read the cotangent itself when nothing
/// was stretched (`x` of `n x d`) and sum it when something was (`x` of
/// `n x 1`, stretched along the rows of `diag`).
#[differentiable]
fn broadcast_read_twice(x: &Array2<f64>, diag: &Array1<f64>, l: &Array2<f64>) -> f64 {
    let z = x * diag + x.dot(l);
    (&z * &z).sum() + z.sum_axis(Axis(0)).dot(diag)
}

#[test]
fn broadcast_cotangents_read_twice() {
    let mut rng = rng("broadcast_read_twice");
    for (n, k, d) in [(6, 4, 4), (5, 1, 3)] {
        let x = rng.array2(n, k, -1.0, 1.0);
        let diag = rng.array1(d, -1.0, 1.0);
        let l = rng.array2(k, d, -1.0, 1.0);
        check_derivatives(
            &(x, diag, l),
            |(x, g, l)| broadcast_read_twice(x, g, l),
            |(x, g, l), (dx, dg, dl)| broadcast_read_twice_jvp(x, g, l, dx, dg, dl),
            |(x, g, l), ct: &f64| broadcast_read_twice_vjp(x, g, l, *ct),
        );
    }
}

#[differentiable]
fn axes(a: &Array2<f64>) -> (f64, Array1<f64>, Array1<f64>, Array1<f64>) {
    let m = a.mean().unwrap();
    let col_means = a.mean_axis(Axis(0)).unwrap();
    let row_lse = a.map_axis(Axis(1), |row| {
        let mx = row.fold(f64::NEG_INFINITY, |acc: f64, x| acc.max(*x));
        mx + row.mapv(|x| (x - mx).exp()).sum().ln()
    });
    let col_max = a.fold_axis(Axis(0), f64::NEG_INFINITY, |acc: &f64, x: &f64| acc.max(*x));
    (m, col_means, row_lse, col_max)
}

#[test]
fn axis_reductions() {
    let mut rng = rng("axes");
    let a = rng.array2(3, 5, -1.0, 1.0);
    let (m, cm, lse, cmax) = axes(&a);
    assert!((m - a.sum() / 15.0).abs() < 1e-15);
    assert_eq!(cm.len(), 5);
    assert_eq!(lse.len(), 3);
    assert_eq!(cmax.len(), 5);
    check_derivatives(
        &a,
        |a| axes(a),
        |a, da| axes_jvp(a, da),
        |a, ct: &(f64, Array1<f64>, Array1<f64>, Array1<f64>)| {
            axes_vjp(a, (ct.0, &ct.1, &ct.2, &ct.3))
        },
    );
}

#[differentiable]
fn functions_as_values(x: &Array1<f64>, t: f64) -> (Array1<f64>, f64) {
    let sigmoid = |v: f64| 1.0 / (1.0 + (-v * t).exp());
    let e = x.mapv(f64::exp);
    let s = x.mapv(sigmoid);
    let total: f64 = x.iter().map(|v| v.tanh()).sum();
    (
        &e + &s,
        sigmoid(total) + x.iter().cloned().map(f64::sin).sum::<f64>(),
    )
}

#[test]
fn closures_and_method_paths() {
    let mut rng = rng("closures");
    let x = rng.array1(4, -1.0, 1.0);
    check_derivatives(
        &(x, 0.7),
        |(x, t)| functions_as_values(x, *t),
        |(x, t), (dx, dt)| functions_as_values_jvp(x, *t, dx, *dt),
        |(x, t), ct: &(Array1<f64>, f64)| functions_as_values_vjp(x, *t, (&ct.0, ct.1)),
    );
}

#[differentiable]
fn iterate(a: &Array2<f64>, v: &Array1<f64>) -> (f64, Array1<f64>, f64) {
    let mut s = 0.0;
    for (i, x) in v.iter().enumerate() {
        s += (i as f64 + 1.0) * x * x;
    }
    let mut c = 0.0;
    for (i, x) in v.iter().rev().enumerate() {
        c += (i as f64) * x;
    }
    let mut acc = Array1::zeros(a.ncols());
    for row in a.rows() {
        acc = acc + &row * &row;
    }
    let mut t = 0.0;
    for col in a.columns() {
        t += col.sum() * col.sum();
    }
    let r: f64 = a.outer_iter().map(|r| r.sum().sin()).sum();
    (s + c, acc, t + r)
}

#[test]
fn for_over_iterators_and_lanes() {
    let mut rng = rng("iterate");
    let a = rng.array2(3, 4, -1.0, 1.0);
    let v = rng.array1(5, -1.0, 1.0);
    let (s, acc, _) = iterate(&a, &v);
    let mut want = 0.0;
    for i in 0..5 {
        want += (i as f64 + 1.0) * v[i] * v[i];
    }
    for i in 0..5 {
        want += (i as f64) * v[4 - i];
    }
    assert!((s - want).abs() < 1e-12);
    assert_eq!(acc.len(), 4);
    check_derivatives(
        &(a, v),
        |(a, v)| iterate(a, v),
        |(a, v), (da, dv)| iterate_jvp(a, v, da, dv),
        |(a, v), ct: &(f64, Array1<f64>, f64)| iterate_vjp(a, v, (ct.0, &ct.1, ct.2)),
    );
}

#[test]
fn zero_length_axes() {
    let a = Array2::<f64>::zeros((0, 3));
    let v = Array1::<f64>::zeros(0);
    let (_, acc, _) = iterate(&a, &v);
    assert_eq!(acc, Array1::zeros(3));
    let (_, (ga, gv)) = iterate_vjp(&a, &v, (1.0, &Array1::ones(3), 1.0));
    assert_eq!(ga.shape(), &[0, 3]);
    assert_eq!(gv.len(), 0);
}

#[differentiable]
fn assign_lanes(x: &Array2<f64>, v: &Array1<f64>, s: f64) -> Array2<f64> {
    let mut beta = Array2::zeros((x.nrows(), x.ncols()));
    for j in 0..x.ncols() {
        let col = x.column(j).mapv(|t| (t * s).sin());
        beta.column_mut(j).assign(&col);
    }
    beta.row_mut(0).assign(v);
    beta.row_mut(1).fill(s * s);
    beta
}

#[test]
fn row_and_column_assignment() {
    let mut rng = rng("lanes");
    let x = rng.array2(3, 4, -1.0, 1.0);
    let v = rng.array1(4, -1.0, 1.0);
    let b = assign_lanes(&x, &v, 0.7);
    assert_eq!(b.row(0), v);
    assert_eq!(b[[1, 3]], 0.7 * 0.7);
    assert_eq!(b[[2, 1]], (x[[2, 1]] * 0.7).sin());
    check_derivatives(
        &(x, v, 0.7),
        |(x, v, s)| assign_lanes(x, v, *s),
        |(x, v, s), (dx, dv, ds)| assign_lanes_jvp(x, v, *s, dx, dv, *ds),
        |(x, v, s), ct: &Array2<f64>| assign_lanes_vjp(x, v, *s, ct),
    );
}

/// ndarray's co-broadcasting of a length-1 axis made by `insert_axis`:
/// a row-wise softmax written NumPy's way (`keepdims`), and an outer sum
/// `(n, 1) + (1, m)`.
#[differentiable]
fn keepdims_softmax(x: &Array2<f64>, v: &Array1<f64>, w: &Array1<f64>) -> f64 {
    let m = x.fold_axis(Axis(1), f64::NEG_INFINITY, |a, b| a.max(*b));
    let e = (x - &m.insert_axis(Axis(1))).mapv(f64::exp);
    let p = &e / &e.sum_axis(Axis(1)).insert_axis(Axis(1));
    let outer = &v.clone().insert_axis(Axis(1)) + &w.clone().insert_axis(Axis(0));
    let scaled = &outer * &v.clone().insert_axis(Axis(1));
    (p.mapv(|q| q * q).sum() + scaled.mapv(f64::sin).sum()) * 0.5
}

#[test]
fn co_broadcasting_of_inserted_axes() {
    let mut rng = rng("keepdims_softmax");
    let x = rng.array2(4, 3, -1.0, 1.0);
    let v = rng.array1(4, -1.0, 1.0);
    let w = rng.array1(5, -1.0, 1.0);
    let y = keepdims_softmax(&x, &v, &w);
    let (yj, _) = keepdims_softmax_jvp(&x, &v, &w, &x, &v, &w);
    let (yv, _) = keepdims_softmax_vjp(&x, &v, &w, 1.0);
    assert_eq!((y.to_bits(), y.to_bits()), (yj.to_bits(), yv.to_bits()));
    check_derivatives(
        &(x.clone(), v.clone(), w.clone()),
        |(x, v, w)| keepdims_softmax(x, v, w),
        |(x, v, w), (dx, dv, dw)| keepdims_softmax_jvp(x, v, w, dx, dv, dw),
        |(x, v, w), ct| keepdims_softmax_vjp(x, v, w, *ct),
    );
}

/// ndarray's broadcasting of any length-1 axis: a column parameter of
/// shape `(n, 1)`, a row of shape `(1, m)`, a slice `s![.., 0..1]`, and
/// `(n, 1) + (m,)` (the higher-rank side stretched too). Which axes are
/// stretched is known only when the function runs: the same function is
/// checked with shapes that stretch and with shapes that do not.
#[differentiable]
fn stretch_any_unit_axis(
    a: &Array2<f64>,
    col: &Array2<f64>,
    row: &Array2<f64>,
    v: &Array1<f64>,
) -> Array2<f64> {
    let first = a.slice(s![.., 0..1]);
    let centred = (a - col) * row;
    let outer = col + v;
    &centred * &first + outer.mapv(f64::sin) * 0.5
}

#[test]
fn co_broadcasting_of_any_length_1_axis() {
    let mut rng = rng("stretch_any_unit_axis");
    // (a, col, row, v) shapes: stretching both ways, nothing stretched
    // (all (n, m)), a (1, 1) operand, and zero-length axes.
    let cases = [
        ((4, 3), (4, 1), (1, 3), 3),
        ((4, 3), (4, 3), (4, 3), 3),
        ((4, 3), (1, 1), (1, 1), 3),
        ((1, 3), (1, 1), (1, 3), 3),
        ((0, 3), (0, 1), (1, 3), 3),
        ((4, 1), (1, 1), (1, 1), 5),
    ];
    for ((n, m), c, r, k) in cases {
        let a = rng.array2(n, m, -1.0, 1.0);
        let col = rng.array2(c.0, c.1, -1.0, 1.0);
        let row = rng.array2(r.0, r.1, -1.0, 1.0);
        let v = rng.array1(k, -1.0, 1.0);
        let y = stretch_any_unit_axis(&a, &col, &row, &v);
        // What ndarray computes, written out.
        let first = a.slice(s![.., 0..1]);
        let want = &((&a - &col) * &row) * &first + (&col + &v).mapv(f64::sin) * 0.5;
        assert_eq!(y, want);
        let (yj, _) = stretch_any_unit_axis_jvp(&a, &col, &row, &v, &a, &col, &row, &v);
        let (yv, _) = stretch_any_unit_axis_vjp(&a, &col, &row, &v, &y);
        assert_eq!((&yj, &yv), (&y, &y), "primal bit-identical for {c:?} {r:?}");
        check_derivatives(
            &(a, col, row, v),
            |(a, col, row, v)| stretch_any_unit_axis(a, col, row, v),
            |(a, col, row, v), (da, dc, dr, dv)| {
                stretch_any_unit_axis_jvp(a, col, row, v, da, dc, dr, dv)
            },
            |(a, col, row, v), ct| stretch_any_unit_axis_vjp(a, col, row, v, ct),
        );
    }
}

#[test]
fn incompatible_shapes_panic_like_ndarray() {
    let mut rng = rng("stretch_incompatible");
    let a = rng.array2(4, 3, -1.0, 1.0);
    let col = rng.array2(2, 1, -1.0, 1.0);
    let row = rng.array2(1, 3, -1.0, 1.0);
    let v = rng.array1(3, -1.0, 1.0);
    let f = std::panic::catch_unwind(|| stretch_any_unit_axis(&a, &col, &row, &v));
    let vjp = std::panic::catch_unwind(|| {
        stretch_any_unit_axis_vjp(&a, &col, &row, &v, &Array2::zeros((4, 3)))
    });
    let jvp = std::panic::catch_unwind(|| {
        stretch_any_unit_axis_jvp(&a, &col, &row, &v, &a, &col, &row, &v)
    });
    assert!(f.is_err() && vjp.is_err() && jvp.is_err());
}

/// Updates through a mutable view bound by `let`: `r += &v`, `r *= s`,
/// `r.fill(x)`, a read of `r`, on rows, columns and slices.
#[differentiable]
fn through_views(a: &Array2<f64>, v: &Array1<f64>, s: f64) -> Array2<f64> {
    let mut m = a.clone();
    for i in 0..m.nrows() {
        let mut r = m.row_mut(i);
        r += v;
        r *= s;
        let t = r.sum();
        r -= t * 0.1;
    }
    let mut c = m.column_mut(0);
    c /= 2.0;
    let mut q = m.slice_mut(s![0..1, ..]);
    q.fill(s * s);
    m
}

#[test]
fn updates_through_let_bound_mutable_views() {
    let a = Array2::from_shape_vec((3, 2), vec![1.0, 2.0, -0.5, 0.25, 3.0, -1.0]).unwrap();
    let v = Array1::from(vec![0.3, -0.7]);
    check_derivatives(
        &(a.clone(), v.clone(), 1.3),
        |(a, v, s)| through_views(a, v, *s),
        |(a, v, s), (da, dv, ds)| through_views_jvp(a, v, *s, da, dv, *ds),
        |(a, v, s), ct| through_views_vjp(a, v, *s, ct),
    );
}

/// Loops over mutable lanes: `for mut row in m.rows_mut()`, columns with
/// `enumerate`, `axis_iter_mut`.
#[differentiable]
fn centre_and_scale(x: &Array2<f64>, s: f64) -> Array2<f64> {
    let mut m = x.clone();
    let mean = m.mean_axis(Axis(0)).unwrap();
    for mut row in m.rows_mut() {
        row -= &mean;
    }
    for (j, mut col) in m.columns_mut().into_iter().enumerate() {
        col *= s + j as f64;
    }
    for mut r in m.axis_iter_mut(Axis(0)) {
        let t = r.sum();
        r += t * 0.01;
    }
    m
}

#[test]
fn loops_over_mutable_lanes() {
    let x = Array2::from_shape_vec((3, 2), vec![1.0, 2.0, -0.5, 0.25, 3.0, -1.0]).unwrap();
    let y = centre_and_scale(&x, 0.5);
    // Columns centred (then scaled) before the last step.
    assert!(y.iter().all(|v| v.is_finite()));
    check_derivatives(
        &(x.clone(), 0.5),
        |(x, s)| centre_and_scale(x, *s),
        |(x, s), (dx, ds)| centre_and_scale_jvp(x, *s, dx, *ds),
        |(x, s), ct| centre_and_scale_vjp(x, *s, ct),
    );
}

/// A mutable lane read inside macros: `s![..row.len()]`, `array![row[0], ..]`
/// (the lane is a view of `m`, read in the macro's tokens too).
#[differentiable]
fn lanes_read_in_macros(x: &Array2<f64>, w: &Array1<f64>) -> Array2<f64> {
    let mut m = x.clone();
    for mut row in m.rows_mut() {
        row += &w.slice(s![..row.len()]);
        let a = linad::ndarray::array![row[0], row[1] * 2.0];
        row *= a.sum();
    }
    m
}

#[test]
fn mutable_lanes_read_inside_macros() {
    let mut r = rng("lanes_in_macros");
    let x = Array2::from_shape_fn((3, 2), |_| r.normal());
    let w = Array1::from_shape_fn(4, |_| r.normal());
    let mut want = x.clone();
    for i in 0..3 {
        for j in 0..2 {
            want[[i, j]] += w[j];
        }
        let a = want[[i, 0]] + want[[i, 1]] * 2.0;
        for j in 0..2 {
            want[[i, j]] *= a;
        }
    }
    assert_eq!(lanes_read_in_macros(&x, &w), want);
    check_derivatives(
        &(x, w),
        |(x, w)| lanes_read_in_macros(x, w),
        |(x, w), (dx, dw)| lanes_read_in_macros_jvp(x, w, dx, dw),
        |(x, w), ct| lanes_read_in_macros_vjp(x, w, ct),
    );
}

/// `Zip::from(&mut y).and(..).for_each(|y, ..| *y = ..)` on local arrays,
/// in one and two dimensions, reading the element being written.
#[differentiable]
fn zip_into_locals(x: &Array1<f64>, w: &Array2<f64>) -> f64 {
    let mut y = Array1::zeros(x.len());
    Zip::from(&mut y)
        .and(x)
        .for_each(|y, &x| *y = x.sin() * 2.0);
    Zip::from(&mut y).and(x).for_each(|y, x| {
        *y += *x * *y;
    });
    let mut m = w.clone();
    Zip::from(&mut m).and(w).for_each(|m, &v| *m = *m * v + 1.0);
    // the element read inside a macro
    Zip::from(&mut m).for_each(|m| *m = linad::ndarray::array![*m, 2.0 * *m].sum());
    y.sum() + m.sum()
}

#[test]
fn zip_for_each_into_mutable_arrays() {
    let mut r = rng("zip_mut");
    let x = Array1::from_shape_fn(4, |_| r.normal());
    let w = Array2::from_shape_fn((2, 3), |_| r.normal());
    check_derivatives(
        &(x, w),
        |(x, w)| zip_into_locals(x, w),
        |(x, w), (dx, dw)| zip_into_locals_jvp(x, w, dx, dw),
        |(x, w), ct| zip_into_locals_vjp(x, w, *ct),
    );
}

/// `lanes(Axis(k))` of a matrix in `for` loops and iterator chains: along
/// axis 1 the rows, along axis 0 the columns.
#[differentiable]
fn lane_sums(m: &Array2<f64>) -> f64 {
    let mut s = 0.0;
    for (i, row) in m.lanes(Axis(1)).into_iter().enumerate() {
        s += row.dot(&row) * (i as f64 + 1.0);
    }
    let col_max: f64 = m.lanes(Axis(0)).into_iter().map(|c| c.sum().tanh()).sum();
    s + col_max
}

#[test]
fn lanes_of_a_matrix() {
    let mut r = rng("lanes");
    let m = Array2::from_shape_fn((3, 4), |_| r.normal());
    check_derivatives(
        &m,
        |m| lane_sums(m),
        |m, dm| lane_sums_jvp(m, dm),
        |m, ct| lane_sums_vjp(m, *ct),
    );
}

/// `lanes(Axis(k))` of a rank-3 array, for each axis, in a `for` loop with
/// `enumerate` and in an iterator chain: the same lanes in ndarray's order.
#[differentiable]
fn lanes_of_rank3(a: &Array3<f64>, w: &Array1<f64>) -> (f64, f64, f64) {
    let mut s0 = 0.0;
    for (k, lane) in a.lanes(Axis(0)).into_iter().enumerate() {
        s0 += (k as f64 + 1.0) * lane.dot(&lane.mapv(|x| x.sin()));
    }
    let mut s1 = 0.0;
    for lane in a.lanes(Axis(1)) {
        s1 += lane[0] * lane[lane.len() - 1];
    }
    let s2: f64 = a.lanes(Axis(2)).into_iter().map(|l| l.dot(w)).sum();
    (s0, s1, s2)
}

#[test]
fn lanes_of_rank3_arrays() {
    let mut rng = rng("lanes3");
    let a = Array3::from_shape_fn((2, 3, 4), |_| 2.0 * rng.uniform() - 1.0);
    let w = rng.array1(4, -1.0, 1.0);
    // What ndarray's own lanes give, in its order.
    let mut want = (0.0, 0.0, 0.0);
    for (k, lane) in a.lanes(Axis(0)).into_iter().enumerate() {
        want.0 += (k as f64 + 1.0) * lane.dot(&lane.mapv(|x| x.sin()));
    }
    for lane in a.lanes(Axis(1)) {
        want.1 += lane[0] * lane[lane.len() - 1];
    }
    for lane in a.lanes(Axis(2)) {
        want.2 += lane.dot(&w);
    }
    let got = lanes_of_rank3(&a, &w);
    assert_eq!(got.0.to_bits(), want.0.to_bits());
    assert_eq!(got.1.to_bits(), want.1.to_bits());
    assert!((got.2 - want.2).abs() < 1e-12);
    check_derivatives(
        &(a, w),
        |(a, w)| lanes_of_rank3(a, w),
        |(a, w), (da, dw)| lanes_of_rank3_jvp(a, w, da, dw),
        |(a, w), ct: &(f64, f64, f64)| lanes_of_rank3_vjp(a, w, *ct),
    );
}

/// In-place updates of a local array through ndarray's own methods:
/// `scaled_add` on the array and on a row, `mapv_inplace` of a column and
/// of a slice (the primal bits are ndarray's: `check_derivatives` compares
/// them with `f`'s).
#[differentiable]
fn scaled_adds_and_lane_maps(m: &Array2<f64>, v: &Array1<f64>, s: f64) -> f64 {
    let mut a = m.to_owned();
    a.column_mut(1).mapv_inplace(|x| x * s);
    a.row_mut(2).scaled_add(-0.25, v);
    a.slice_mut(s![.., 0]).mapv_inplace(f64::sin);
    let mut b = Array1::zeros(v.len());
    b.scaled_add(s, v);
    b.scaled_add(0.5, &a.row(1));
    let mut c = m.to_owned();
    c.scaled_add(2.0, &v.view().insert_axis(Axis(0)));
    a.sum() + b.dot(&b) + (&c * &c).sum()
}

#[test]
fn in_place_updates_by_ndarray_methods() {
    let mut rng = rng("in_place_updates_by_ndarray_methods");
    for (r, c) in [(3, 3), (4, 3)] {
        let m = rng.array2(r, c, -1.0, 1.0);
        let v = rng.array1(c, -1.0, 1.0);
        check_derivatives(
            &(m, v, 0.7),
            |(m, v, s)| scaled_adds_and_lane_maps(m, v, *s),
            |(m, v, s), (dm, dv, ds)| scaled_adds_and_lane_maps_jvp(m, v, *s, dm, dv, *ds),
            |(m, v, s), ct| scaled_adds_and_lane_maps_vjp(m, v, *s, *ct),
        );
    }
}

/// Column and row statistics: `var_axis` / `std_axis` (ndarray's one-pass
/// recurrence on each lane: same bits), standardisation by broadcasting.
#[differentiable(wrt(x))]
fn axis_statistics(x: &Array2<f64>, ddof: f64) -> f64 {
    let mu = x.mean_axis(Axis(0)).unwrap();
    let sd = x.std_axis(Axis(0), ddof);
    let z = (x - &mu) / &sd;
    let rows = x.var_axis(Axis(1), 0.0);
    (&z * &z).sum() + sd.sum() + rows.dot(&rows)
}

#[test]
fn variances_along_axes() {
    let mut rng = rng("variances_along_axes");
    for (r, c, ddof) in [(4, 3, 1.0), (3, 5, 0.0), (2, 2, 1.5)] {
        let x = rng.array2(r, c, -1.0, 1.0);
        check_derivatives(
            &x,
            |x| axis_statistics(x, ddof),
            |x, dx| axis_statistics_jvp(x, ddof, dx),
            |x, ct| axis_statistics_vjp(x, ddof, *ct),
        );
    }
}

/// Chunks of a vector: ndarray's `exact_chunks` (the rest left out), a
/// slice's `chunks` (a shorter last chunk) and `chunks_exact`, in loops and
/// iterator chains; `windows` of a slice.
#[differentiable]
fn chunked(x: &Array1<f64>, v: &[f64]) -> f64 {
    let mut s = 0.0;
    for c in x.exact_chunks(2) {
        s += c[0] * c[1];
    }
    for (k, c) in v.chunks(3).enumerate() {
        s += c.iter().sum::<f64>() * (k as f64 + 1.0) + c[c.len() - 1].sin();
    }
    let e: f64 = v.chunks_exact(2).map(|c| c[0] - c[1] * c[1]).sum();
    let w: f64 = v.windows(2).map(|p| p[0] * p[1]).sum();
    s + e + w
}

#[test]
fn chunks_of_vectors() {
    let mut r = rng("chunks_of_vectors");
    for (n, m) in [(5, 7), (4, 6), (1, 2), (0, 1)] {
        let x = r.array1(n, -1.0, 1.0);
        let v = r.array1(m, -1.0, 1.0);
        check_derivatives(
            &(x, v),
            |(x, v)| chunked(x, v.as_slice().unwrap()),
            |(x, v), (dx, dv)| chunked_jvp(x, v.as_slice().unwrap(), dx, dv.as_slice().unwrap()),
            |(x, v), ct: &f64| {
                let (y, (dx, dv)) = chunked_vjp(x, v.as_slice().unwrap(), *ct);
                (y, (dx, Array1::from(dv)))
            },
        );
    }
}

/// `select`: rows, columns (ndarray's result is column-major: its `sum`
/// and `fold` add in column order), entries of a vector, repeated and
/// reordered indices from a literal and from a `&[usize]` parameter.
#[differentiable(wrt(m, x))]
fn selected(m: &Array2<f64>, x: &Array1<f64>, idx: &[usize]) -> f64 {
    let rows = m.select(Axis(0), &[2, 0, 2]);
    let cols = m.select(Axis(1), idx);
    let v = x.select(Axis(0), &[1, 1, 0]);
    rows.sum() + cols.sum() + cols.fold(0.5, |a, &c| a * 0.75 + c) + v.dot(&v) + cols[[1, 0]]
}

#[test]
fn select_gathers_as_ndarray() {
    let mut r = rng("select_gathers_as_ndarray");
    let idx = vec![3, 1, 1, 4];
    for _ in 0..3 {
        let a = r.array2(4, 5, -1.0, 1.0);
        // entries over eight orders of magnitude: a sum in another order
        // differs in the last bits
        let m = Array2::from_shape_fn((4, 5), |(i, j)| {
            a[[i, j]] * 10f64.powi(((i * 5 + j * 3) % 9) as i32 - 4)
        });
        let x = r.array1(3, -1.0, 1.0);
        check_derivatives(
            &(m, x),
            |(m, x)| selected(m, x, &idx),
            |(m, x), (dm, dx)| selected_jvp(m, x, &idx, dm, dx),
            |(m, x), ct: &f64| selected_vjp(m, x, &idx, *ct),
        );
    }
    let m = Array2::<f64>::zeros((2, 2));
    let out = std::panic::catch_unwind(|| selected_vjp(&m, &Array1::zeros(2), &[0, 1], 1.0));
    assert!(
        out.is_err(),
        "an index out of bounds panics, as ndarray's select does"
    );
}
