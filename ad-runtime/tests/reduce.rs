//! Reductions against naive references, layouts, and thread-count determinism.

mod common;

use ad_runtime::*;
use common::*;
use ndarray::{s, Array, Array1, Array2, Axis};

fn naive_sum(xs: impl Iterator<Item = f64>) -> f64 {
    xs.fold(0.0, |a, x| a + x)
}

#[test]
fn sum_matches_reference_order_and_naive() {
    low_threshold();
    for n in [0, 1, 7, 8, 9, 8191, 8192, 8193, 100_003] {
        let x = vec1(n, n as u64);
        let got = sum(&x);
        assert_eq!(
            got.to_bits(),
            lane_sum(x.as_slice().unwrap()).to_bits(),
            "n = {n}"
        );
        close1(got, naive_sum(x.iter().copied()), 1e-12);
    }
}

#[test]
fn sum_of_views_equals_sum_of_copies() {
    low_threshold();
    let x = vec1(50_001, 3);
    let strided = x.slice(s![..;2]);
    assert_eq!(sum(&strided).to_bits(), sum(&strided.to_owned()).to_bits());
    let rev = x.slice(s![..;-1]);
    assert_eq!(sum(&rev).to_bits(), sum(&rev.to_owned()).to_bits());
    let m = mat(300, 200, 4);
    let t = m.t();
    assert_eq!(sum(&t).to_bits(), sum(&t.to_owned()).to_bits());
    close1(sum(&m), naive_sum(m.iter().copied()), 1e-12);
    let a3 = arr3(20, 30, 40, 5);
    let p = a3.view().permuted_axes([2, 0, 1]);
    assert_eq!(sum(&p).to_bits(), sum(&p.to_owned()).to_bits());
}

fn naive_sum_axis<D: ndarray::Dimension + ndarray::RemoveAxis>(
    a: &Array<f64, D>,
    axis: usize,
) -> Array<f64, D::Smaller> {
    a.map_axis(Axis(axis), |lane| naive_sum(lane.iter().copied()))
}

#[test]
fn sum_axis_all_ranks_and_layouts() {
    low_threshold();
    let v = vec1(20_000, 1);
    let s0 = sum_axis(&v, 0);
    assert_eq!(s0.into_scalar().to_bits(), sum(&v).to_bits());

    for (m, n) in [
        (0, 5),
        (5, 0),
        (1, 1),
        (3, 20_000),
        (20_000, 3),
        (300, 400),
        (17, 9000),
    ] {
        let a = mat(m, n, (m * n) as u64);
        for axis in 0..2 {
            let got = sum_axis(&a, axis);
            close(&got, &naive_sum_axis(&a, axis), 1e-12);
            // Same bits through a transposed (column-major) copy.
            let f = a.t().to_owned();
            let f = f.t();
            assert_eq!(sum_axis(&f, axis).bits(), got.bits(), "{m}x{n} axis {axis}");
            // Each lane is reduced exactly like a whole-array sum of it.
            for (k, lane) in a.lanes(Axis(axis)).into_iter().enumerate().take(5) {
                assert_eq!(got.as_slice().unwrap()[k].to_bits(), sum(&lane).to_bits());
            }
        }
    }
    let a = arr3(30, 40, 50, 9);
    for axis in 0..3 {
        let got = sum_axis(&a, axis);
        close(&got, &naive_sum_axis(&a, axis), 1e-12);
        let p = a.view().permuted_axes([2, 1, 0]).to_owned();
        let back = p.view().permuted_axes([2, 1, 0]);
        assert_eq!(sum_axis(&back, axis).bits(), got.bits());
    }
    let strided = a.slice(s![..;2, .., 1..;3]);
    for axis in 0..3 {
        close(
            &sum_axis(&strided, axis),
            &naive_sum_axis(&strided.to_owned(), axis),
            1e-12,
        );
    }
}

/// Axis-0 reductions of narrow row-major matrices (rows consecutive in
/// memory, whatever their width) take the rows path a group of 8 rows at a
/// time: each column still gets exactly the bits of reducing it alone, for
/// row counts below, at and around the 8-row group and the chunk.
#[test]
fn narrow_row_major_axis_0_reductions_match_each_column() {
    low_threshold();
    for rows in [1, 2, 7, 8, 9, 15, 17, 8191, 8192, 8193, 20_003] {
        for w in [1, 2, 3, 10] {
            let a = mat(rows, w, (rows * 31 + w) as u64).mapv(|v| v * 40.0);
            let s = sum_axis(&a, 0);
            let (mx, imx) = max_arg_axis(&a, 0);
            let (pr, z) = product_axis(&a.mapv(|v| 1.0 + 1e-3 * v), 0);
            let lse = logsumexp_axis(&a, 0);
            for j in 0..w {
                let col = a.column(j);
                let tag = format!("{rows}x{w} column {j}");
                assert_eq!(s[j].to_bits(), sum(&col).to_bits(), "sum {tag}");
                assert_eq!((mx[j], imx[j]), max_arg(&col), "max_arg {tag}");
                let (cp, cz) = product(&col.mapv(|v| 1.0 + 1e-3 * v));
                assert_eq!((pr[j].to_bits(), z[j]), (cp.to_bits(), cz), "product {tag}");
                assert_eq!(
                    lse[j].to_bits(),
                    logsumexp(&col).to_bits(),
                    "logsumexp {tag}"
                );
            }
        }
    }
}

#[test]
fn product_counts_zeros() {
    low_threshold();
    let mut x = vec1(30_000, 2).mapv(|v| 1.0 + v * 1e-4);
    x[5] = 0.0;
    x[20_000] = -0.0;
    let (p, z) = product(&x);
    assert_eq!(z, 2);
    let naive: f64 = x.iter().filter(|&&v| v != 0.0).product();
    close1(p, naive, 1e-12);
    assert_eq!(product(&Array1::<f64>::zeros(0)), (1.0, 0));
    assert_eq!(product(&Array1::from(vec![3.0])), (3.0, 0));
    let m = x.clone().into_shape_with_order((300, 100)).unwrap();
    let (pa, za) = product_axis(&m, 1);
    assert_eq!(za.sum(), 2);
    assert_eq!(za[0], 1);
    for i in 0..300 {
        let naive: f64 = m.row(i).iter().filter(|&&v| v != 0.0).product();
        close1(pa[i], naive, 1e-12);
    }
    let (pt, zt) = product_axis(&m.t(), 0);
    assert_eq!((pt.bits(), zt), (pa.bits(), za));
}

#[test]
fn max_min_first_index() {
    low_threshold();
    let mut x = vec1(100_000, 3);
    x[70_000] = 5.0;
    x[90_000] = 5.0;
    x[10] = -5.0;
    x[99_999] = -5.0;
    assert_eq!(max_arg(&x), (5.0, 70_000));
    assert_eq!(min_arg(&x), (-5.0, 10));
    assert_eq!(max_arg(&Array1::from(vec![2.0])), (2.0, 0));
    let all_neg_inf = Array1::from_elem(20_000, f64::NEG_INFINITY);
    assert_eq!(max_arg(&all_neg_inf), (f64::NEG_INFINITY, 0));
    let mut nan = vec1(20_000, 1);
    nan[12_345] = f64::NAN;
    nan[15_000] = f64::NAN;
    // NaNs are skipped (the IR's rule): the extremum of the numbers.
    let numbers = nan.mapv(|v| if v.is_nan() { f64::NEG_INFINITY } else { v });
    assert_eq!(max_arg(&nan), max_arg(&numbers));
    let numbers = nan.mapv(|v| if v.is_nan() { f64::INFINITY } else { v });
    assert_eq!(min_arg(&nan), min_arg(&numbers));
    nan[0] = f64::NAN;
    assert_eq!(max_arg(&nan).1, max_arg(&nan.slice(s![1..])).1 + 1);
    let all_nan = Array1::from_elem(20_000, f64::NAN);
    assert_eq!(max_arg(&all_nan).1, 0);
    let ties = Array1::from_elem(30_000, 1.0);
    assert_eq!(max_arg(&ties), (1.0, 0));
    assert_eq!(min_arg(&ties.slice(s![..;-1])), (1.0, 0));

    let m = mat(70, 50, 8);
    let (v, i) = max_arg(&m);
    let (r, c) = unravel_index(i, m.raw_dim());
    assert_eq!(m[(r, c)], v);
    assert_eq!(v, m.iter().cloned().fold(f64::MIN, f64::max));
    // Flat index is in logical order for a transposed view.
    let t = m.t();
    let (vt, it) = max_arg(&t);
    let (rt, ct) = unravel_index(it, t.raw_dim());
    assert_eq!((vt, rt, ct), (v, c, r));
    assert_eq!(unravel_index(7, ndarray::Dim([2, 3, 4])), (0, 1, 3));
}

#[test]
fn max_min_along_axes() {
    low_threshold();
    let mut m = mat(9000, 7, 4);
    m[(8000, 3)] = 9.0;
    m[(8500, 3)] = 9.0;
    let (v, i) = max_arg_axis(&m, 0);
    assert_eq!((v[3], i[3]), (9.0, 8000));
    for j in 0..7 {
        let col = m.column(j);
        let (cv, ci) = max_arg(&col);
        assert_eq!((v[j], i[j]), (cv, ci));
        let (mv, mi) = min_arg_axis(&m, 0);
        assert_eq!((mv[j], mi[j]), min_arg(&col));
    }
    let a = arr3(40, 300, 20, 6);
    for axis in 0..3 {
        let (v, i) = max_arg_axis(&a, axis);
        let reference = a.map_axis(Axis(axis), |l| max_arg(&l));
        assert_eq!(v, reference.map(|p| p.0));
        assert_eq!(i, reference.map(|p| p.1));
        let f = a.view().reversed_axes().to_owned();
        let (vf, if_) = max_arg_axis(&f.view().reversed_axes(), axis);
        assert_eq!((vf, if_), (v, i));
    }
}

#[test]
fn logsumexp_is_stable_and_matches_naive() {
    low_threshold();
    let x = vec1(50_000, 7).mapv(|v| v * 3.0 + 1000.0);
    let m = 1003.0;
    let naive = m + x.iter().map(|&v| (v - m).exp()).sum::<f64>().ln();
    let got = logsumexp(&x);
    assert!(got.is_finite());
    close1(got, naive, 1e-12);
    assert_eq!(logsumexp(&Array1::<f64>::zeros(0)), f64::NEG_INFINITY);
    assert_eq!(
        logsumexp(&Array1::from(vec![f64::NEG_INFINITY; 3])),
        f64::NEG_INFINITY
    );
    assert_eq!(
        logsumexp(&Array1::from(vec![1.0, f64::INFINITY])),
        f64::INFINITY
    );
    assert!(logsumexp(&Array1::from(vec![1.0, f64::NAN])).is_nan());
    close1(logsumexp(&Array1::from(vec![0.5])), 0.5, 0.0);

    let a = mat(200, 3000, 8).mapv(|v| v * 700.0);
    for axis in 0..2 {
        let got = logsumexp_axis(&a, axis);
        let naive = a.map_axis(Axis(axis), |l| {
            let m = l.iter().cloned().fold(f64::MIN, f64::max);
            m + l.iter().map(|&v| (v - m).exp()).sum::<f64>().ln()
        });
        close(&got, &naive, 1e-12);
        assert_eq!(got.bits(), logsumexp_axis(&a.t(), 1 - axis).bits());
    }
    let mut b = Array2::<f64>::zeros((2, 3));
    b.row_mut(0).fill(f64::NEG_INFINITY);
    let r = logsumexp_axis(&b, 1);
    assert_eq!(r[0], f64::NEG_INFINITY);
    close1(r[1], 3f64.ln(), 1e-15);
}

#[test]
fn reductions_are_deterministic_across_threads() {
    let x = vec1(200_003, 11);
    let m = mat(700, 301, 12);
    let a3 = arr3(50, 60, 70, 13);
    let strided = x.slice(s![1..;3]);
    same_bits("sum", || sum(&x));
    same_bits("sum strided", || sum(&strided));
    same_bits("sum transposed", || sum(&m.t()));
    for axis in 0..2 {
        same_bits("sum_axis", || sum_axis(&m, axis));
        same_bits("sum_axis t", || sum_axis(&m.t(), axis));
        same_bits("product_axis", || product_axis(&m, axis));
        same_bits("max_arg_axis", || max_arg_axis(&m, axis));
        same_bits("min_arg_axis", || min_arg_axis(&m, axis));
        same_bits("logsumexp_axis", || logsumexp_axis(&m, axis));
    }
    for axis in 0..3 {
        same_bits("sum_axis 3", || sum_axis(&a3, axis));
    }
    let tall = mat(100_000, 2, 14);
    same_bits("sum_axis tall", || sum_axis(&tall, 0));
    same_bits("sum_axis wide", || sum_axis(&tall.t(), 1));
    same_bits("product", || product(&x.mapv(|v| 1.0 + 1e-3 * v)));
    same_bits("max_arg", || max_arg(&x));
    same_bits("min_arg", || min_arg(&x));
    same_bits("logsumexp", || logsumexp(&x));
}

#[test]
fn f32_elements_use_the_same_kernels() {
    low_threshold();
    let x = Array1::from_shape_fn(50_000, |i| ((i % 13) as f32 - 6.0) * 0.25);
    let naive: f32 = x.iter().sum();
    assert!((sum(&x) - naive).abs() < 1e-2);
    assert_eq!(max_arg(&x), (1.5, 12));
    assert!(logsumexp(&x).is_finite());
    let m = Array2::from_shape_fn((40, 30), |(i, j)| (i * 30 + j) as f32 * 1e-3);
    let mm = matmul(&m, &m.t());
    assert!((mm[(3, 4)] - m.row(3).dot(&m.row(4))).abs() < 1e-4);
    let s = scan_inclusive(&Array1::from(vec![1.0f32, 2.0, 3.0]));
    assert_eq!(s.to_vec(), vec![1.0, 3.0, 6.0]);
    let g = scatter_add(
        &Array1::from(vec![1.0f32, 2.0]),
        &Array1::from(vec![1, 1]),
        2,
    );
    assert_eq!(g.to_vec(), vec![0.0, 3.0]);
}
