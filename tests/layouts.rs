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
use linad::ndarray::{s, Array1, Array2, ShapeBuilder, Zip};

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

/// ndarray's `fold` and `Zip` visit elements in memory order (a
/// column-major array by columns, a reversed axis backwards, a strided one
/// by its shortest stride): what the closure accumulates depends on it.
#[differentiable]
fn zip_for_each_sums(m: &Array2<f64>, w: &Array2<f64>) -> f64 {
    let mut s = 0.0;
    Zip::from(m).and(w).for_each(|&x, &y| s += x * y);
    s
}

#[differentiable]
fn zip_fold_sums(m: &Array2<f64>, w: &Array2<f64>) -> f64 {
    Zip::from(m)
        .and(w)
        .fold(0.0, |acc, &x, &y| acc * 0.75 + x * y)
}

#[differentiable]
fn zip_for_each_running(m: &Array2<f64>) -> (Array2<f64>, f64) {
    let mut out = Array2::zeros(m.dim());
    let mut s = 0.0;
    Zip::from(&mut out).and(m).for_each(|o, &x| {
        s = s * 0.5 + x;
        *o = s;
    });
    (out, s)
}

#[differentiable]
fn array_folds(m: &Array2<f64>) -> f64 {
    m.fold(0.0, |acc, &x| acc * 0.75 + x) + m.t().fold(0.0, |acc, &x| acc + x)
}

#[differentiable]
fn cube_fold(a: &linad::ndarray::Array3<f64>) -> f64 {
    a.fold(0.0, |acc, &x| acc * 0.75 + x)
}

#[differentiable]
fn vector_folds(v: &Array1<f64>, u: &Array1<f64>) -> f64 {
    v.fold(0.0, |acc, &x| acc * 0.75 + x) + Zip::from(v).and(u).fold(0.0, |acc, &x, &y| acc + x * y)
}

/// [`input`] and the same values column-major, strided (every other
/// column or row of a larger array, not contiguous) and with a reversed axis.
fn layouts(name: &str) -> Vec<Array2<f64>> {
    use linad::ndarray::Axis;
    let c = input(name, false);
    let wide = Array2::from_shape_fn((17, 26), |(i, j)| c[[i, j / 2]]);
    let tall = Array2::from_shape_fn((34, 13).f(), |(i, j)| c[[i / 2, j]]);
    let mut reversed = Array2::from_shape_fn((17, 13), |(i, j)| c[[16 - i, j]]);
    reversed.invert_axis(Axis(0));
    vec![
        c,
        input(name, true),
        wide.slice_move(s![.., ..;2]),
        tall.slice_move(s![..;2, ..]),
        reversed,
    ]
}

#[test]
fn folds_and_zips_visit_elements_in_ndarray_memory_order() {
    let ones = Array2::ones((17, 13));
    for m in layouts("folds") {
        let y = array_folds(&m);
        assert_same_bits(&y, &array_folds_jvp(&m, &m).0);
        assert_same_bits(&y, &array_folds_vjp(&m, 1.0).0);
        let y = zip_for_each_running(&m);
        assert_same_bits(&y, &zip_for_each_running_jvp(&m, &m).0);
        assert_same_bits(&y, &zip_for_each_running_vjp(&m, (&ones, 1.0)).0);
        for w in layouts("zips") {
            let y = zip_for_each_sums(&m, &w);
            assert_same_bits(&y, &zip_for_each_sums_jvp(&m, &w, &w, &m).0);
            assert_same_bits(&y, &zip_for_each_sums_vjp(&m, &w, 1.0).0);
            let y = zip_fold_sums(&m, &w);
            assert_same_bits(&y, &zip_fold_sums_jvp(&m, &w, &w, &m).0);
            assert_same_bits(&y, &zip_fold_sums_vjp(&m, &w, 1.0).0);
        }
    }
    let mut r = rng("cube folds");
    let big = r.array2(12, 20, -1.0, 1.0);
    let cube = linad::ndarray::Array3::from_shape_fn((3, 8, 5), |(i, j, k)| {
        big[[i * 4 + j / 2, k + 5 * (j % 2)]] * 10f64.powi(((i * 5 + j * 3 + k) % 9) as i32 - 4)
    });
    for perm in [[0, 1, 2], [2, 1, 0], [1, 2, 0], [0, 2, 1]] {
        for a in [
            cube.clone().permuted_axes(perm),
            cube.slice(s![.., ..;2, ..]).to_owned().permuted_axes(perm),
            cube.clone()
                .slice_move(s![.., ..;2, ..])
                .permuted_axes(perm),
        ] {
            let y = cube_fold(&a);
            assert_same_bits(&y, &cube_fold_jvp(&a, &a).0);
            assert_same_bits(&y, &cube_fold_vjp(&a, 1.0).0);
        }
    }
    let v = Array1::from_shape_fn(23, |i| input("vectors", false)[[i % 17, i % 13]]);
    let mut back = v.slice(s![..;-1]).to_owned();
    back.invert_axis(linad::ndarray::Axis(0));
    for (a, b) in [(&v, &back), (&back, &v)] {
        let y = vector_folds(a, b);
        assert_same_bits(&y, &vector_folds_jvp(a, b, b, a).0);
        assert_same_bits(&y, &vector_folds_vjp(a, b, 1.0).0);
    }
}

#[test]
fn derivatives_of_folds_and_zips_in_memory_order() {
    let mut r = rng("derivatives of folds and zips");
    let m = r.array2(5, 4, -1.0, 1.0);
    let w = Array2::from_shape_fn((5, 4).f(), |ix| m[ix] * 0.5 + 0.25);
    check_derivatives(
        &(m.clone(), w.clone()),
        |(m, w)| zip_fold_sums(m, w),
        |(m, w), (dm, dw)| zip_fold_sums_jvp(m, w, dm, dw),
        |(m, w), ct: &f64| zip_fold_sums_vjp(m, w, *ct),
    );
    check_derivatives(&w, array_folds, array_folds_jvp, |w, ct: &f64| {
        array_folds_vjp(w, *ct)
    });
    check_derivatives(
        &w,
        zip_for_each_running,
        zip_for_each_running_jvp,
        |w, ct: &(Array2<f64>, f64)| zip_for_each_running_vjp(w, (&ct.0, ct.1)),
    );
}

#[differentiable]
fn variances(m: &Array2<f64>, v: &Array1<f64>) -> f64 {
    m.var(1.0) + m.t().std(0.0) + v.var(0.5)
}

#[test]
fn variances_walk_memory_order_as_ndarray() {
    let v = Array1::from_shape_fn(23, |i| input("variances", false)[[i % 17, i % 13]] + 3.0);
    let mut back = v.slice(s![..;-1]).to_owned();
    back.invert_axis(linad::ndarray::Axis(0));
    for m in layouts("variances") {
        for u in [&v, &back] {
            let y = variances(&m, u);
            assert_same_bits(&y, &variances_jvp(&m, u, &m, u).0);
            assert_same_bits(&y, &variances_vjp(&m, u, 1.0).0);
        }
    }
    let mut r = rng("variance derivatives");
    let m = r.array2(5, 4, -1.0, 1.0);
    let w = Array2::from_shape_fn((5, 4).f(), |ix| m[ix] * 0.5 + 0.25);
    let u = Array1::from_shape_fn(6, |i| (i as f64 * 0.7).sin());
    check_derivatives(
        &(w, u),
        |(m, v)| variances(m, v),
        |(m, v), (dm, dv)| variances_jvp(m, v, dm, dv),
        |(m, v), ct: &f64| variances_vjp(m, v, *ct),
    );
}

/// Slices read by reference are ndarray's own views of the array (its
/// strides times the steps), so their sums, dot products and folds walk
/// memory as ndarray does in `f`: a strided view row by row, a
/// contiguous one 8 lanes at a time.
#[differentiable]
fn sums_of_slices(m: &Array2<f64>, v: &Array1<f64>) -> f64 {
    let a = m.slice(s![.., 1..]).sum() + m.slice(s![2..;3, ..;-2]).sum();
    let b = (&m.slice(s![1..5, 3]) * &v.slice(s![..4])).sum();
    let c = v.slice(s![..;-1]).sum() + v.slice(s![1..;2]).fold(0.0, |acc, &x| acc * 0.75 + x);
    let d = m.slice(s![..;2, ..]).fold(0.0, |acc, &x| acc * 0.75 + x);
    let e = m.diag().sum() + m.t().diag().fold(0.0, |acc, &x| acc * 0.75 + x);
    a + b + c + d + e + m.slice(s![3..7, 2..9]).sum()
}

#[test]
fn slices_are_added_as_ndarray_adds_them() {
    let v = Array1::from_shape_fn(23, |i| input("slices", false)[[i % 17, i % 13]]);
    for m in layouts("slices") {
        let y = sums_of_slices(&m, &v);
        assert_same_bits(&y, &sums_of_slices_jvp(&m, &v, &m, &v).0);
        assert_same_bits(&y, &sums_of_slices_vjp(&m, &v, 1.0).0);
    }
    let mut r = rng("slice derivatives");
    let m = r.array2(9, 10, -1.0, 1.0);
    let w = Array2::from_shape_fn((9, 10).f(), |ix| m[ix] * 0.5 + 0.25);
    let u = Array1::from_shape_fn(9, |i| (i as f64 * 0.7).sin());
    check_derivatives(
        &(w, u),
        |(m, v)| sums_of_slices(m, v),
        |(m, v), (dm, dv)| sums_of_slices_jvp(m, v, dm, dv),
        |(m, v), ct: &f64| sums_of_slices_vjp(m, v, *ct),
    );
}

/// Matrices joined along axis 1 (`concatenate`, `stack` of vectors):
/// ndarray's result is column-major, so its `sum()` and `fold` add in
/// column order; the generated code's join is such a view.
#[differentiable]
fn joined_along_columns(m: &Array2<f64>, w: &Array2<f64>) -> f64 {
    let c = linad::ndarray::concatenate![linad::ndarray::Axis(1), *m, *w];
    let s = linad::ndarray::stack![linad::ndarray::Axis(1), m.column(0), w.column(3)];
    let mut acc = 0.0;
    for x in c.iter() {
        acc += x * 0.5;
    }
    c.sum() + s.sum() + c.fold(0.25, |a, &x| a * 0.5 + x) + acc + c.mapv(|x| x * x).sum()
}

#[test]
fn joins_along_axis_1_add_in_ndarray_memory_order() {
    same_primal!(joined_along_columns, joined_along_columns_jvp, joined_along_columns_vjp; m, w);
    let mut r = rng("joins");
    let (m, w) = (r.array2(4, 3, -1.0, 1.0), r.array2(4, 5, -1.0, 1.0));
    check_derivatives(
        &(m, w),
        |(m, w)| joined_along_columns(m, w),
        |(m, w), (dm, dw)| joined_along_columns_jvp(m, w, dm, dw),
        |(m, w), ct: &f64| joined_along_columns_vjp(m, w, *ct),
    );
}
