//! Slices and `Vec`s as parameters: `&[f64]`, `&Vec<f64>` and `Vec<f64>`
//! are differentiable (the tangent has the parameter's type, the cotangent
//! is an owned `Vec<f64>`); `&[usize]`, `&Vec<usize>` and `&[i64]` are
//! constants.
#![allow(clippy::ptr_arg, clippy::type_complexity)]

mod common;
use common::*;
use linad::differentiable;
use linad::ndarray::Array1;

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
