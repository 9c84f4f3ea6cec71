//! Vector and matrix products against naive loops and ndarray's dot.

mod common;

use ad_runtime::*;
use common::*;
use ndarray::{s, Array1, Array2};

fn naive_mm(a: &Array2<f64>, b: &Array2<f64>) -> Array2<f64> {
    let (m, k) = a.dim();
    let n = b.ncols();
    Array2::from_shape_fn((m, n), |(i, j)| {
        (0..k).fold(0.0, |s, p| s + a[(i, p)] * b[(p, j)])
    })
}

#[test]
fn vector_products() {
    low_threshold();
    for n in [0, 1, 9, 100_001] {
        let u = vec1(n, 1);
        let v = vec1(n, 2);
        close1(
            dot(&u, &v),
            u.iter().zip(&v).map(|(a, b)| a * b).sum(),
            1e-12,
        );
    }
    let u = vec1(50_000, 3);
    let st = u.slice(s![..;2]);
    let v = vec1(25_000, 4);
    assert_eq!(dot(&st, &v).to_bits(), dot(&st.to_owned(), &v).to_bits());
    assert_eq!(dot(&v, &st).to_bits(), dot(&v, &st.to_owned()).to_bits());

    for (m, n) in [(0, 3), (3, 0), (1, 1), (300, 200), (5, 30_000), (30_000, 5)] {
        let a = mat(m, n, (m + n) as u64);
        let x = vec1(n, 5);
        let y = vec1(m, 6);
        let av = matvec(&a, &x);
        close(&av, &a.dot(&x), 1e-12);
        let atv = matvec_t(&a, &y);
        close(&atv, &a.t().dot(&y), 1e-12);
        assert_eq!(vecmat(&y, &a).bits(), atv.bits());
        // Layout never changes the bits.
        let f = a.t().to_owned();
        assert_eq!(matvec(&f.t(), &x).bits(), av.bits());
        assert_eq!(matvec_t(&f.t(), &y).bits(), atv.bits());
        assert_eq!(matvec(&a.t(), &y).bits(), atv.bits());
        // Each row of A v is dot(row, v).
        if m > 0 {
            assert_eq!(av[0].to_bits(), dot(&a.row(0), &x).to_bits());
        }
    }
}

#[test]
fn matrix_products() {
    low_threshold();
    for (m, k, n) in [
        (0, 3, 4),
        (3, 0, 4),
        (1, 1, 1),
        (70, 50, 130),
        (130, 50, 70),
        (200, 150, 170),
    ] {
        let a = mat(m, k, 1);
        let b = mat(k, n, 2);
        let c = matmul(&a, &b);
        close(&c, &naive_mm(&a, &b), 1e-12);
        let at = a.t().to_owned();
        let bt = b.t().to_owned();
        close(&matmul_tn(&at, &b), &c, 1e-12);
        close(&matmul_nt(&a, &bt), &c, 1e-12);
        close(&matmul(&at.t(), &bt.t()), &c, 1e-12);
    }
    let a = mat(100, 60, 3);
    let b = mat(120, 80, 4);
    let av = a.slice(s![..;2, 1..41]);
    let bv = b.slice(s![..40;1, ..;2]);
    close(
        &matmul(&av, &bv),
        &naive_mm(&av.to_owned(), &bv.to_owned()),
        1e-12,
    );
}

#[test]
fn outer_product() {
    low_threshold();
    let u = vec1(300, 1);
    let v = vec1(500, 2);
    let o = outer(&u, &v);
    assert_eq!(o, Array2::from_shape_fn((300, 500), |(i, j)| u[i] * v[j]));
    assert_eq!(outer(&Array1::<f64>::zeros(0), &v).shape(), &[0, 500]);
}

#[test]
fn products_deterministic() {
    let u = vec1(300_000, 1);
    let v = vec1(300_000, 2);
    let a = mat(600, 500, 3);
    let x = vec1(500, 4);
    let y = vec1(600, 5);
    let b = mat(500, 300, 6);
    same_bits("dot", || dot(&u, &v));
    same_bits("matvec", || matvec(&a, &x));
    same_bits("matvec_t", || matvec_t(&a, &y));
    same_bits("vecmat", || vecmat(&y, &a));
    same_bits("matmul", || matmul(&a, &b));
    same_bits("matmul wide", || matmul(&b.t(), &a.t()));
    same_bits("matmul_tn", || matmul_tn(&a, &a));
    same_bits("matmul_nt", || matmul_nt(&a, &a));
    same_bits("outer", || outer(&x, &y));
}

/// Results written over a pooled buffer never show its old values: with the
/// pool full of NaN buffers, products (which overwrite their output without
/// filling it first), strided maps and `pooled_for_overwrite` arrays written
/// by a pass are exactly what fresh zeroed buffers give.
#[test]
fn overwritten_outputs_never_show_stale_pooled_values() {
    let poison = || {
        for n in [2_000, 10_000, 40_000, 160_000] {
            recycle(Array1::from_elem(n, f64::NAN));
        }
    };
    let a = mat(300, 40, 1);
    let b = mat(40, 70, 2);
    let tall = mat(1000, 10, 3);
    let strided = tall.t();
    poison();
    let c = matmul(&a, &b);
    poison();
    let m = map(&strided, |x| 2.0 * x);
    poison();
    let z = zip_map(&strided, &strided, |x, y| x - y);
    poison();
    let mut o: Array2<f64> = pooled_for_overwrite((1000, 10));
    o.zip_mut_with(&tall, |o, &x| *o = x + 1.0);
    assert!(c.iter().all(|v| v.is_finite()));
    close(&c, &naive_mm(&a, &b), 1e-12);
    assert_eq!(m, strided.mapv(|x| 2.0 * x));
    assert!(z.iter().all(|&v| v == 0.0));
    assert_eq!(o, tall.mapv(|x| x + 1.0));
    // No product at all (k = 0) is zeros, not the pool's values.
    poison();
    let empty = matmul(
        &Array2::<f64>::zeros((300, 0)),
        &Array2::<f64>::zeros((0, 70)),
    );
    assert!(empty.iter().all(|&v| v == 0.0));
}
