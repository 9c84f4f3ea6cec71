//! The primal of `f_jvp` / `f_vjp` is bit-identical to `f` when ndarray
//! stores an intermediate array column-major or reversed: ndarray's `sum`
//! adds in memory order, so the layout of an elementwise result decides the
//! bits of a later sum, and the generated code must store it as ndarray does
//! (`ad_runtime::layout`). Each function runs on a row-major and a
//! column-major input whose entries span eight orders of magnitude (a sum in
//! another order differs in the last bits).
#![allow(clippy::type_complexity, clippy::op_ref)]

mod common;
use common::*;
use linad::differentiable;
use linad::ndarray::{Array1, Array2, ShapeBuilder};

#[differentiable]
fn scaled_transpose(m: &Array2<f64>) -> f64 {
    (&m.t() * 2.0).sum()
}

#[differentiable]
fn mapped_transpose(m: &Array2<f64>) -> f64 {
    m.t().mapv(|x| x * x).sum()
}

#[differentiable]
fn transposes_added(m: &Array2<f64>, w: &Array2<f64>) -> f64 {
    (&m.t() + &w.t()).sum() + (&m.t() * &w.t()).mean().unwrap()
}

#[differentiable]
fn mapped_with_residuals(m: &Array2<f64>) -> f64 {
    // `sin` keeps `cos` for the derivative: a map with two outputs.
    let s = m.t().mapv(|x| x.sin());
    s.sum() + s[[0, 1]]
}

#[differentiable]
fn four_transposes(m: &Array2<f64>, w: &Array2<f64>) -> f64 {
    let a = m.t();
    let b = w.t();
    (&(&a * &b) + &(&a * 2.0 - &b)).sum() + (&a * &a * 0.5 - &b * &b).sum()
}

#[differentiable]
fn scaled_parameter(m: &Array2<f64>) -> f64 {
    (m * 3.0).sum() + m.mapv(|x| x.exp().ln_1p()).product()
}

#[differentiable]
fn iterator_sums(m: &Array2<f64>) -> f64 {
    m.t().iter().sum::<f64>() + m.iter().map(|x| x * x).sum::<f64>()
}

/// A matrix whose entries span eight orders of magnitude, row-major or
/// column-major.
fn input(name: &str, column_major: bool) -> Array2<f64> {
    let mut r = rng(name);
    let a = r.array2(17, 13, -1.0, 1.0);
    let scaled = Array2::from_shape_fn((17, 13), |(i, j)| {
        a[[i, j]] * 10f64.powi(((i * 5 + j * 3) % 9) as i32 - 4)
    });
    if column_major {
        Array2::from_shape_fn((17, 13).f(), |ix| scaled[ix])
    } else {
        scaled
    }
}

/// `f`, `f_jvp(..).0` and `f_vjp(..).0` are the same bits, for row- and
/// column-major inputs.
macro_rules! same_primal {
    ($f:ident, $jvp:ident, $vjp:ident; $($arg:ident),+) => {
        for column_major in [false, true] {
            $(let $arg = input(concat!(stringify!($f), stringify!($arg)), column_major);)+
            let y = $f($(&$arg),+);
            let (yj, _) = $jvp($(&$arg),+, $(&$arg.mapv(|x| x * 0.5)),+);
            let (yv, _) = $vjp($(&$arg),+, 1.0);
            assert_same_bits(&y, &yj);
            assert_same_bits(&y, &yv);
        }
    };
}

#[test]
fn elementwise_results_of_transposed_views_sum_in_ndarray_order() {
    same_primal!(scaled_transpose, scaled_transpose_jvp, scaled_transpose_vjp; m);
    same_primal!(mapped_transpose, mapped_transpose_jvp, mapped_transpose_vjp; m);
    same_primal!(transposes_added, transposes_added_jvp, transposes_added_vjp; m, w);
    same_primal!(mapped_with_residuals, mapped_with_residuals_jvp, mapped_with_residuals_vjp; m);
    same_primal!(four_transposes, four_transposes_jvp, four_transposes_vjp; m, w);
}

#[test]
fn elementwise_results_of_column_major_parameters_sum_in_ndarray_order() {
    same_primal!(scaled_parameter, scaled_parameter_jvp, scaled_parameter_vjp; m);
}

#[test]
fn iterator_sums_of_matrices_are_sequential_in_logical_order() {
    same_primal!(iterator_sums, iterator_sums_jvp, iterator_sums_vjp; m);
}

#[test]
fn derivatives_through_column_major_intermediates() {
    let mut r = rng("derivatives through column-major intermediates");
    let m = r.array2(9, 7, -1.0, 1.0);
    let w = Array2::from_shape_fn((9, 7).f(), |ix| m[ix] * 0.5 + 0.25);
    check_derivatives(
        &(m, w),
        |(m, w)| four_transposes(m, w),
        |(m, w), (dm, dw)| four_transposes_jvp(m, w, dm, dw),
        |(m, w), ct: &f64| four_transposes_vjp(m, w, *ct),
    );
}

/// Differentiated in the broadcast row alone: forward mode's map makes the
/// primal `x - mu` beside its tangent (`-dmu`, a broadcast row) and stores
/// it as ndarray stores `x - mu` (column-major for a column-major `x`):
/// the tangent's layout does not vote. It did, and `f_jvp`'s primal summed
/// in another order than `f`'s.
#[differentiable(wrt(mu))]
fn centred_cubes(x: &Array2<f64>, mu: &Array1<f64>) -> f64 {
    let xc = x - mu;
    (&xc * &xc * x).sum()
}

#[test]
fn forward_mode_primals_follow_the_primal_operands_layout() {
    let mu = Array1::from_shape_fn(13, |j| (j as f64 * 0.3).cos());
    for column_major in [false, true] {
        let x = input("centred_cubes", column_major);
        let y = centred_cubes(&x, &mu);
        let (yj, _) = centred_cubes_jvp(&x, &mu, &mu.mapv(|v| v * 0.5));
        let (yv, _) = centred_cubes_vjp(&x, &mu, 1.0);
        assert_same_bits(&y, &yj);
        assert_same_bits(&y, &yv);
    }
}

/// ndarray's `product` multiplies 8 lanes, then the elements left over in
/// turn; a left fold rounds differently from 8 elements on. The fuzzer
/// found it with arrays of up to 9 per axis (`LINAD_FUZZ_MAX_N=9`): the
/// product of 27 equal values in `f_vjp`'s primal was 11 ulp off `f`'s.
#[differentiable]
fn products(a: &linad::ndarray::Array3<f64>, v: &linad::ndarray::Array1<f64>) -> f64 {
    a.product() + 2.0 * v.product()
}

#[test]
fn products_round_as_ndarray_does() {
    for n in [1, 3, 5, 8, 9, 13] {
        let a = linad::ndarray::Array3::from_shape_fn((3, 3, n), |(i, j, k)| {
            1.0 + 0.37 * ((i * 7 + j * 3 + k) as f64).sin()
        });
        let v = linad::ndarray::Array1::from_shape_fn(3 * n, |k| 0.9 + 0.05 * (k as f64).cos());
        let y = products(&a, &v);
        let (yj, _) = products_jvp(&a, &v, &a, &v);
        let (yv, _) = products_vjp(&a, &v, 1.0);
        assert_eq!(
            (yj.to_bits(), yv.to_bits()),
            (y.to_bits(), y.to_bits()),
            "n = {n}"
        );
    }
}
