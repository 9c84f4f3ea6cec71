//! Slices and `Vec`s as parameters: `&[f64]`, `&Vec<f64>` and `Vec<f64>`
//! are differentiable (the tangent has the parameter's type, the cotangent
//! is an owned `Vec<f64>`); `&[usize]`, `&Vec<usize>` and `&[i64]` are
//! constants.
#![allow(clippy::ptr_arg, clippy::type_complexity)]

mod common;
use common::*;
use linad::differentiable;
use linad::ndarray::{s, Array1, Array2, Axis};

#[differentiable]
fn weighted(x: &[f64], w: &Vec<f64>, idx: &[usize], shift: &[i64]) -> f64 {
    let mut s = 0.0;
    for k in 0..idx.len() {
        s += w[k] * x[idx[k]].sin() + shift[k] as f64 * x[k];
    }
    s + x.iter().map(|v| v * v).sum::<f64>()
}

#[differentiable]
fn owned_vec(v: Vec<f64>, order: &Vec<usize>) -> Array1<f64> {
    Array1::from_shape_fn(order.len(), |i| v[order[i]] * v[i])
}

#[test]
fn slices_and_vecs() {
    let x = vec![0.3, -1.2, 0.8, 2.0];
    let w = vec![0.5, 1.5, -0.5];
    let idx = [3usize, 0, 0];
    let shift = [1i64, -2, 0];
    let y = weighted(&x, &w, &idx, &shift);
    let (y2, (gx, gw)): (f64, (Vec<f64>, Vec<f64>)) = weighted_vjp(&x, &w, &idx, &shift, 1.0);
    assert_eq!(y.to_bits(), y2.to_bits());
    assert_eq!((gx.len(), gw.len()), (4, 3));
    let (_, dy) = weighted_jvp(&x, &w, &idx, &shift, &[1.0, 0.0, 0.0, 0.0], &vec![0.0; 3]);
    assert_close(dy, gx[0], 1e-12);
    // Against finite differences, through arrays.
    let xa = Array1::from(x.clone());
    check_derivatives(
        &xa,
        |x| weighted(x.as_slice().unwrap(), &w, &idx, &shift),
        |x, dx| {
            weighted_jvp(
                x.as_slice().unwrap(),
                &w,
                &idx,
                &shift,
                dx.as_slice().unwrap(),
                &vec![0.0; 3],
            )
        },
        |x, ct| {
            let (y, (gx, _)) = weighted_vjp(x.as_slice().unwrap(), &w, &idx, &shift, *ct);
            (y, Array1::from(gx))
        },
    );
    let order = vec![2usize, 0, 1, 3];
    check_derivatives(
        &xa,
        |v| owned_vec(v.to_vec(), &order),
        |v, dv| owned_vec_jvp(v.to_vec(), &order, dv.to_vec()),
        |v, ct: &Array1<f64>| {
            let (y, g) = owned_vec_vjp(v.to_vec(), &order, ct);
            (y, Array1::from(g))
        },
    );
}

#[test]
#[should_panic(expected = "weighted_jvp: tangent `d_x` has shape [2], expected [4]")]
fn a_slice_tangent_of_the_wrong_length_is_named() {
    let x = [0.3, -1.2, 0.8, 2.0];
    let _ = weighted_jvp(
        &x,
        &vec![1.0; 3],
        &[0, 1, 2],
        &[0, 0, 0],
        &[1.0, 0.0],
        &vec![0.0; 3],
    );
}

/// `slice_mut(s![..])` and `index_axis_mut(Axis(k), i)` followed by
/// `assign` / `fill` on a local array, in straight-line code and in a loop:
/// ranges, steps, negative steps and a single index.
#[differentiable]
fn slice_writes(x: &Array2<f64>, v: &Array1<f64>, a: f64) -> f64 {
    let mut b = x.to_owned();
    b.slice_mut(s![1..3, ..])
        .assign(&(&x.slice(s![0..2, ..]) * a));
    b.slice_mut(s![.., 0..;2]).fill(a * a);
    b.slice_mut(s![0, ..]).assign(v);
    b.index_axis_mut(Axis(1), 3).fill(a);
    b.index_axis_mut(Axis(0), 3).assign(&(v * 2.0));
    let mut c = Array1::<f64>::zeros(v.len());
    for k in 0..3 {
        c.slice_mut(s![..;-1]).assign(&(v * (k as f64 + a)));
    }
    b.mapv(|t| t.sin()).sum() + c.dot(v)
}

#[test]
fn slice_mut_assign_and_fill() {
    let mut rng = rng("slice_writes");
    let x = rng.array2(4, 5, -1.0, 1.0);
    let v = rng.array1(5, -1.0, 1.0);
    let y = slice_writes(&x, &v, 0.7);
    let (yj, _) = slice_writes_jvp(&x, &v, 0.7, &x, &v, 1.0);
    let (yv, _) = slice_writes_vjp(&x, &v, 0.7, 1.0);
    assert_eq!((y.to_bits(), y.to_bits()), (yj.to_bits(), yv.to_bits()));
    check_derivatives(
        &(x.clone(), v.clone(), 0.7),
        |(x, v, a)| slice_writes(x, v, *a),
        |(x, v, a), (dx, dv, da)| slice_writes_jvp(x, v, *a, dx, dv, *da),
        |(x, v, a), ct| slice_writes_vjp(x, v, *a, *ct),
    );
}

/// A row of a local matrix filled through `slice_mut` at a given index.
#[differentiable]
fn fill_row(x: &Array2<f64>, k: usize, a: f64) -> f64 {
    let mut b = x.to_owned();
    b.slice_mut(s![k, ..]).fill(a);
    b.sum() * a
}

#[test]
fn slice_mut_index_out_of_range_panics_as_in_f() {
    let x = Array2::from_shape_fn((2, 3), |(i, j)| (i * 3 + j) as f64);
    let panics = |f: &dyn Fn()| std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).is_err();
    assert!(!panics(&|| {
        fill_row_vjp(&x, 1, 0.5, 1.0);
    }));
    assert!(panics(&|| {
        fill_row(&x, 2, 0.5);
    }));
    assert!(panics(&|| {
        fill_row_jvp(&x, 2, 0.5, &x, 1.0);
    }));
    assert!(panics(&|| {
        fill_row_vjp(&x, 2, 0.5, 1.0);
    }));
    check_derivatives(
        &(x.clone(), 0.5),
        |(x, a)| fill_row(x, 1, *a),
        |(x, a), (dx, da)| fill_row_jvp(x, 1, *a, dx, *da),
        |(x, a), ct| fill_row_vjp(x, 1, *a, *ct),
    );
}
