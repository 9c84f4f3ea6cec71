//! Arrays from elements and from other arrays (`array!`, `from(vec![..])`,
//! `from_vec`, `from_shape_vec`, `from_iter`, `concatenate`, `stack`), `match` and early
//! `return`: both modes against finite differences, primal bit-identical.
#![allow(
    clippy::type_complexity,
    clippy::needless_return,
    clippy::needless_range_loop
)]

mod common;
use common::*;
use linad::differentiable;
use linad::ndarray::{array, concatenate, s, stack, Array, Array1, Array2, Axis, Zip};

#[differentiable]
fn cross(a: &Array1<f64>, b: &Array1<f64>) -> Array1<f64> {
    array![
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0]
    ]
}

#[differentiable]
fn literals(x: f64, y: f64) -> (Array2<f64>, Array1<f64>, Array2<f64>, Array1<f64>) {
    let rot = array![[x.cos(), -x.sin()], [x.sin(), x.cos()]];
    let v = Array1::from(vec![x, y, x * y]);
    let m = Array2::from_shape_vec((2, 3), vec![x, y, 1.0, 2.0 * x, y * y, 0.5]).unwrap();
    let w = Array1::from_vec(vec![y; 4]);
    let d = Array2::from_diag(&v);
    (rot + d.slice(s![..2, ..2]), v, m, w)
}

#[differentiable]
fn joined(
    a: &Array1<f64>,
    b: &Array1<f64>,
    m: &Array2<f64>,
) -> (Array1<f64>, Array2<f64>, Array2<f64>) {
    let ab = concatenate(Axis(0), &[a.view(), b.view(), a.view()]).unwrap();
    let rows = stack(Axis(0), &[a.view(), a.view()]).unwrap();
    let mm = m.to_owned();
    let wide = concatenate![Axis(1), mm, mm];
    (ab.mapv(|v| v * v), rows * 2.0, wide)
}

#[test]
fn literals_and_joins() {
    let mut rng = rng("construct");
    let a = rng.array1(3, -1.0, 1.0);
    let b = rng.array1(3, -1.0, 1.0);
    let c = cross(&a, &b);
    assert!((c.dot(&a)).abs() < 1e-12);
    check_derivatives(
        &(a.clone(), b.clone()),
        |(a, b)| cross(a, b),
        |(a, b), (da, db)| cross_jvp(a, b, da, db),
        |(a, b), ct: &Array1<f64>| cross_vjp(a, b, ct),
    );
    check_derivatives(
        &(0.3, -1.2),
        |p| literals(p.0, p.1),
        |p, d| literals_jvp(p.0, p.1, d.0, d.1),
        |p, ct: &(Array2<f64>, Array1<f64>, Array2<f64>, Array1<f64>)| {
            literals_vjp(p.0, p.1, (&ct.0, &ct.1, &ct.2, &ct.3))
        },
    );
    let m = rng.array2(2, 3, -1.0, 1.0);
    let (ab, rows, wide) = joined(&a, &b, &m);
    assert_eq!(ab.len(), 9);
    assert_eq!(rows.shape(), &[2, 3]);
    assert_eq!(wide.shape(), &[2, 6]);
    assert_eq!(wide[[1, 4]], m[[1, 1]]);
    check_derivatives(
        &(a, b, m),
        |(a, b, m)| joined(a, b, m),
        |(a, b, m), (da, db, dm)| joined_jvp(a, b, m, da, db, dm),
        |(a, b, m), ct: &(Array1<f64>, Array2<f64>, Array2<f64>)| {
            joined_vjp(a, b, m, (&ct.0, &ct.1, &ct.2))
        },
    );
}

/// `Array1::from_iter` (and `Array::from_iter`) of an iterator chain, a
/// range, a `Vec` and a matrix's elements, and `collect` of a matrix's
/// elements: what `.collect::<Array1<_>>()` gives (logical order).
#[differentiable]
fn from_iterators(x: &Array1<f64>, m: &Array2<f64>) -> Array1<f64> {
    let a = Array1::from_iter(x.iter().map(|v| v * v + 1.0));
    let k = Array1::from_iter(0..x.len());
    let v = Array::from_iter(x.to_vec());
    let r = Array1::from_iter(m.rows().into_iter().map(|row| row.sum()));
    // A matrix's elements, in logical order (of the transpose too).
    let e = Array1::from_iter(m.t().iter().map(|v| v.exp()));
    let c: Vec<f64> = m.iter().map(|v| v * 0.5).collect();
    let f: Array1<f64> = m.t().iter().cloned().collect();
    &a * &k.mapv(|i| i as f64)
        + &v.mapv(f64::sin)
        + r.sum()
        + e[1] * c[2] * f[3]
        + e.iter().zip(c.iter()).map(|(p, q)| p * q).sum::<f64>()
}

#[test]
fn arrays_from_iterators() {
    let mut rng = rng("from_iterators");
    let (x, m) = (rng.array1(4, -1.0, 1.0), rng.array2(3, 2, -1.0, 1.0));
    check_derivatives(
        &(x, m),
        |(x, m)| from_iterators(x, m),
        |(x, m), (dx, dm)| from_iterators_jvp(x, m, dx, dm),
        |(x, m), ct| from_iterators_vjp(x, m, ct),
    );
}

#[differentiable]
fn piecewise(x: f64, k: i64, flag: bool) -> f64 {
    let base = match k {
        0 => x,
        1 | 2 => x * x,
        3..=5 => x.sin() * k as f64,
        n if n < 0 => -x,
        _ => x.exp(),
    };
    let sign = match flag {
        true => 1.0,
        false => -1.0,
    };
    base * sign
}

#[test]
fn match_on_integers_and_bools() {
    for k in [-3, 0, 1, 2, 4, 9] {
        for flag in [false, true] {
            check_derivatives(
                &0.7,
                |x| piecewise(*x, k, flag),
                |x, dx| piecewise_jvp(*x, k, flag, *dx),
                |x, ct| piecewise_vjp(*x, k, flag, *ct),
            );
        }
    }
    assert_eq!(piecewise(0.7, 4, true), 0.7f64.sin() * 4.0);
}

#[differentiable]
fn early(x: f64, v: &Array1<f64>) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    let s = v.sum();
    if s > 10.0 {
        return s * x;
    } else {
        let _unused = s + 1.0;
    }
    let t = x * x;
    if t > 100.0 {
        return t;
    }
    s * t
}

#[test]
fn early_returns() {
    let v = Array1::from(vec![0.5, 1.0, -0.25]);
    for x in [0.3, 20.0] {
        check_derivatives(
            &(x, v.clone()),
            |(x, v)| early(*x, v),
            |(x, v), (dx, dv)| early_jvp(*x, v, *dx, dv),
            |(x, v), ct| early_vjp(*x, v, *ct),
        );
    }
    let big = Array1::from(vec![6.0, 7.0]);
    assert_eq!(early_vjp(2.0, &big, 1.0).1 .0, 13.0);
    assert_eq!(early(2.0, &Array1::zeros(0)), 0.0);
    assert_eq!(early_vjp(2.0, &Array1::zeros(0), 1.0).1 .0, 0.0);
}

#[differentiable]
fn zips(a: &Array1<f64>, b: &Array1<f64>, m: &Array2<f64>) -> (f64, Array2<f64>) {
    let mut acc = 0.0;
    Zip::from(a).and(b).for_each(|x, y| {
        acc += x * y.sin();
    });
    let prod = Zip::from(m).and(m).map_collect(|p, q| p * q + 1.0);
    (acc, prod)
}

#[test]
fn zip_for_each_and_map_collect() {
    let mut rng = rng("zip");
    let a = rng.array1(4, -1.0, 1.0);
    let b = rng.array1(4, -1.0, 1.0);
    let m = rng.array2(2, 3, -1.0, 1.0);
    check_derivatives(
        &(a, b, m),
        |(a, b, m)| zips(a, b, m),
        |(a, b, m), (da, db, dm)| zips_jvp(a, b, m, da, db, dm),
        |(a, b, m), ct: &(f64, Array2<f64>)| zips_vjp(a, b, m, (ct.0, &ct.1)),
    );
}

#[differentiable]
fn skipping(v: &Array1<f64>, t: f64) -> f64 {
    let mut s = 0.0;
    for i in 0..v.len() {
        if v[i] < t {
            continue;
        }
        let w = v[i] * t;
        if i % 2 == 0 {
            s += w.sin();
            continue;
        } else {
            s -= w;
        }
        s *= 1.5;
    }
    s
}

#[test]
fn continue_in_for() {
    let v: Array1<f64> = Array1::from(vec![0.5, -1.0, 2.0, 0.1, 1.5, 3.0]);
    let mut want: f64 = 0.0;
    for i in 0..v.len() {
        if v[i] < 0.3 {
            continue;
        }
        let w = v[i] * 0.3;
        if i % 2 == 0 {
            want += w.sin();
            continue;
        }
        want -= w;
        want *= 1.5;
    }
    assert_eq!(skipping(&v, 0.3), want);
    check_derivatives(
        &(v, 0.3),
        |(v, t)| skipping(v, *t),
        |(v, t), (dv, dt)| skipping_jvp(v, *t, dv, *dt),
        |(v, t), ct| skipping_vjp(v, *t, *ct),
    );
}

/// `.to_vec()` of a rank-1 array: a `Vec<f64>`, read by index and iterator.
#[differentiable]
fn via_vec(v: &Array1<f64>, a: f64) -> f64 {
    let w = v.to_vec();
    w[0] * w[1] * a + w.iter().map(|x| x * x).sum::<f64>()
}

#[test]
fn to_vec_of_a_rank_1_array() {
    let v: Array1<f64> = Array1::from(vec![0.5, -1.0, 2.0]);
    let (y, _) = via_vec_vjp(&v, 0.7, 1.0);
    assert_eq!(y.to_bits(), via_vec(&v, 0.7).to_bits());
    check_derivatives(
        &(v, 0.7),
        |(v, a)| via_vec(v, *a),
        |(v, a), (dv, da)| via_vec_jvp(v, *a, dv, *da),
        |(v, a), ct| via_vec_vjp(v, *a, *ct),
    );
}

/// `Array1::range(a, b, step)` with differentiable start and step:
/// ndarray's `ceil((b - a) / step)` points `a + step * i` (the same bits,
/// `check_derivatives` compares them with `f`'s), empty when `b <= a`.
#[differentiable(wrt(a, step, x))]
fn ranged(a: f64, b: f64, step: f64, x: &Array1<f64>) -> f64 {
    let t = Array1::range(a, b, step);
    let u = Array1::range(0.0, x.len() as f64, 1.0);
    t.mapv(|v| v.sin()).sum() + u.dot(x) * t.len() as f64
}

#[test]
fn range_points() {
    let mut rng = rng("range_points");
    let x = rng.array1(5, -1.0, 1.0);
    let cases = [
        (-0.4, 1.3, 0.25, 7),
        (0.0, 2.0, 0.3, 7),
        (1.0, 0.8, 0.5, 0), // ceil(-0.4) = -0: empty, no panic
        (3.0, -1.1, -0.7, 6),
    ];
    for (a, b, step, len) in cases {
        assert_eq!(Array1::<f64>::range(a, b, step).len(), len);
        check_derivatives(
            &(a, step, x.clone()),
            |(a, step, x)| ranged(*a, b, *step, x),
            |(a, step, x), (da, ds, dx)| ranged_jvp(*a, b, *step, x, *da, *ds, dx),
            |(a, step, x), ct| ranged_vjp(*a, b, *step, x, *ct),
        );
    }
}

/// A step of the wrong sign (or zero, or NaN) makes no `usize` length:
/// ndarray panics, and so do the derivatives.
#[test]
fn range_of_the_wrong_sign_panics_as_ndarray() {
    let x = Array1::zeros(2);
    for step in [-0.5, 0.0, f64::NAN] {
        let run = |f: &dyn Fn()| std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).is_err();
        assert!(run(&|| {
            ranged(0.0, 1.0, step, &x);
        }));
        assert!(run(&|| {
            ranged_vjp(0.0, 1.0, step, &x, 1.0);
        }));
        assert!(run(&|| {
            ranged_jvp(0.0, 1.0, step, &x, 0.0, 0.0, &x);
        }));
    }
}

/// `Array1::linspace` with differentiable end points: ndarray's points
/// `a + step * i` (the same bits, `check_derivatives` compares them with
/// `f`'s), for any `n` including 0 and 1.
#[differentiable(wrt(a, b, x))]
fn linspaced(a: f64, b: f64, x: &Array1<f64>, n: usize) -> f64 {
    let t = Array1::linspace(a, b, n);
    let u = Array1::linspace(0.0, 1.0, x.len());
    t.mapv(|v| v.sin()).sum() + u.dot(x) * t.len() as f64
}

#[test]
fn linspace_points() {
    let mut rng = rng("linspace_points");
    let x = rng.array1(4, -1.0, 1.0);
    for n in [0usize, 1, 2, 7] {
        check_derivatives(
            &(-0.4, 1.3, x.clone()),
            |(a, b, x)| linspaced(*a, *b, x, n),
            |(a, b, x), (da, db, dx)| linspaced_jvp(*a, *b, x, n, *da, *db, dx),
            |(a, b, x), ct| linspaced_vjp(*a, *b, x, n, *ct),
        );
    }
}

/// A `Vec` grown by `push` in a `for` loop: every iteration (`with_capacity`,
/// used as an array after), some iterations (a filter, `Vec::new()`), two
/// sites in one iteration, indices (`Vec<usize>`, by the loop's range), and
/// a loop over an iterator chain binding a pattern.
#[differentiable(wrt(x, a))]
fn pushed(x: &Array1<f64>, a: f64, n: usize) -> f64 {
    let mut sq = Vec::with_capacity(x.len());
    for i in 0..x.len() {
        sq.push(x[i] * x[i] * a);
    }
    let mut pos: Vec<f64> = Vec::new();
    let mut idx = vec![];
    let mut count = 0.0;
    for (i, &xi) in x.iter().enumerate() {
        count += 1.0;
        if xi > 0.0 {
            pos.push(xi.sin() * a);
            idx.push(i);
        } else if i % 2 == 0 {
            pos.push(xi * xi);
        }
        if i < n {
            pos.push(a * count);
        }
    }
    let sq = Array1::from(sq);
    let mut s = sq.sum() + pos.iter().map(|p| p * p).sum::<f64>();
    for &i in idx.iter() {
        s += x[i] * pos[0];
    }
    s + pos.len() as f64
}

/// A pushed `Vec` as the result (its cotangent a `Vec`), in a loop body.
#[differentiable]
fn pushed_rows(m: &Array2<f64>) -> Array1<f64> {
    let mut out = Vec::new();
    for r in 0..m.nrows() {
        let mut row = Vec::with_capacity(m.ncols());
        for c in 0..m.ncols() {
            if m[[r, c]] > -0.5 {
                row.push(m[[r, c]].exp());
            }
        }
        let t: f64 = row.iter().sum();
        out.push(t * t);
    }
    Array1::from(out)
}

#[test]
fn vecs_grown_by_push() {
    let mut rows = rng("vecs_grown_by_push_rows");
    for _ in 0..4 {
        let m = rows.array2(3, 4, -1.0, 1.0);
        check_derivatives(&m, pushed_rows, pushed_rows_jvp, pushed_rows_vjp);
    }
    let mut rng = rng("vecs_grown_by_push");
    for trial in 0..8 {
        let x = rng.array1(3 + trial % 4, -1.0, 1.0);
        let a = 0.4 + 0.2 * trial as f64;
        for n in [0usize, 2] {
            check_derivatives(
                &(x.clone(), a),
                |(x, a)| pushed(x, *a, n),
                |(x, a), (dx, da)| pushed_jvp(x, *a, n, dx, *da),
                |(x, a), ct| pushed_vjp(x, *a, n, *ct),
            );
        }
    }
}
