//! Scans against naive references and thread-count determinism.

mod common;

use ad_runtime::*;
use common::*;
use ndarray::{s, Array1, Axis};

/// Compensated (Neumaier) running sums: a near-exact reference.
fn naive_incl(x: &[f64]) -> Array1<f64> {
    let (mut s, mut c) = (0.0f64, 0.0f64);
    x.iter()
        .map(|&v| {
            let t = s + v;
            c += if s.abs() >= v.abs() {
                (s - t) + v
            } else {
                (v - t) + s
            };
            s = t;
            s + c
        })
        .collect()
}

/// `|got - want| <= 1e-14 · Σ_{i ≤ j} |x_i|` (plus a tiny absolute slack).
#[track_caller]
fn close_scan(got: &Array1<f64>, want: &Array1<f64>, abs_prefix: &Array1<f64>) {
    for j in 0..got.len() {
        let tol = 1e-14 * abs_prefix[j] + 1e-300;
        assert!(
            (got[j] - want[j]).abs() <= tol,
            "element {j}: {} vs {}",
            got[j],
            want[j]
        );
    }
}

#[test]
fn scans_match_naive() {
    low_threshold();
    for n in [0, 1, 2, 3, 4, 5, 8191, 8192, 8193, 100_003] {
        let x = vec1(n, n as u64);
        let xs = x.as_slice().unwrap();
        let incl = scan_inclusive(&x);
        let abs: Vec<f64> = xs.iter().map(|v| v.abs()).collect();
        close_scan(&incl, &naive_incl(xs), &naive_incl(&abs));
        let excl = scan_exclusive(&x);
        assert_eq!(excl.len(), n);
        if n > 0 {
            assert_eq!(excl[0], 0.0);
            for j in 1..n {
                assert_eq!(excl[j].to_bits(), incl[j - 1].to_bits());
            }
        }
        let rev = scan_reverse(&x);
        let rx: Vec<f64> = xs.iter().rev().copied().collect();
        let mut naive_rev = naive_incl(&rx);
        naive_rev.invert_axis(Axis(0));
        let rabs: Vec<f64> = rx.iter().map(|v| v.abs()).collect();
        let mut abs_rev = naive_incl(&rabs);
        abs_rev.invert_axis(Axis(0));
        close_scan(&rev, &naive_rev, &abs_rev);
        // The reverse scan is the forward scan of the reversed input.
        let mut fr = scan_inclusive(&x.slice(s![..;-1]));
        fr.invert_axis(Axis(0));
        assert_eq!(fr.bits(), rev.bits());
    }
    assert_eq!(
        scan_inclusive(&Array1::from(vec![1.0, 2.0, 3.0])).to_vec(),
        vec![1.0, 3.0, 6.0]
    );
    assert_eq!(
        scan_exclusive(&Array1::from(vec![1.0, 2.0, 3.0])).to_vec(),
        vec![0.0, 1.0, 3.0]
    );
    assert_eq!(
        scan_reverse(&Array1::from(vec![1.0, 2.0, 3.0])).to_vec(),
        vec![6.0, 5.0, 3.0]
    );
}

#[test]
fn scans_of_strided_views() {
    low_threshold();
    let x = vec1(40_001, 5);
    let st = x.slice(s![..;3]);
    assert_eq!(
        scan_inclusive(&st).bits(),
        scan_inclusive(&st.to_owned()).bits()
    );
    assert_eq!(
        scan_reverse(&st).bits(),
        scan_reverse(&st.to_owned()).bits()
    );
}

#[test]
fn scan_along_axes() {
    low_threshold();
    let m = mat(300, 9000, 2);
    for kind in [
        ScanKind::Inclusive,
        ScanKind::Exclusive,
        ScanKind::ReverseInclusive,
    ] {
        for axis in 0..2 {
            let got = scan_axis(&m, axis, kind);
            for (lane, glane) in m.lanes(Axis(axis)).into_iter().zip(got.lanes(Axis(axis))) {
                let one = match kind {
                    ScanKind::Inclusive => scan_inclusive(&lane),
                    ScanKind::Exclusive => scan_exclusive(&lane),
                    ScanKind::ReverseInclusive => scan_reverse(&lane),
                };
                assert_eq!(one.bits(), glane.to_owned().bits());
            }
            assert_eq!(
                scan_axis(&m.t(), 1 - axis, kind).t().to_owned().bits(),
                got.bits()
            );
        }
    }
    let a = arr3(4, 5, 6, 3);
    let got = scan_axis(&a, 1, ScanKind::Inclusive);
    let mut naive = a.clone();
    for i in 1..5 {
        let prev = naive.index_axis(Axis(1), i - 1).to_owned();
        let mut cur = naive.index_axis_mut(Axis(1), i);
        cur += &prev;
    }
    close(&got, &naive, 1e-14);
    let long = mat(2, 100_000, 4);
    let got = scan_axis(&long, 1, ScanKind::Inclusive);
    assert_eq!(
        got.row(1).to_owned().bits(),
        scan_inclusive(&long.row(1)).bits()
    );
}

#[test]
fn scans_deterministic() {
    let x = vec1(300_001, 8);
    let m = mat(300, 2000, 9);
    same_bits("scan_inclusive", || scan_inclusive(&x));
    same_bits("scan_exclusive", || scan_exclusive(&x));
    same_bits("scan_reverse", || scan_reverse(&x));
    same_bits("scan_axis 0", || scan_axis(&m, 0, ScanKind::Inclusive));
    same_bits("scan_axis 1", || {
        scan_axis(&m, 1, ScanKind::ReverseInclusive)
    });
}

#[test]
fn integer_scans_along_axis_0() {
    let a = ndarray::array![[1i64, 2], [3, 4], [5, 6]].into_dyn();
    let fwd = scan_i64(a.view(), false);
    assert_eq!(fwd, ndarray::array![[1i64, 2], [4, 6], [9, 12]].into_dyn());
    let rev = scan_i64(a.view(), true);
    assert_eq!(rev, ndarray::array![[9i64, 12], [8, 10], [5, 6]].into_dyn());
    let empty = ndarray::ArrayD::<i64>::zeros(ndarray::IxDyn(&[0, 2]));
    assert_eq!(scan_i64(empty.view(), false).shape(), &[0, 2]);
}
