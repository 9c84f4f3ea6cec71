//! Elementwise kernels: build, map, zip_map, zip3_map.

mod common;

use ad_runtime::*;
use common::*;
use ndarray::{s, Array1, Array2, Array3};
use std::sync::atomic::{AtomicUsize, Ordering};

#[test]
fn build_passes_indices() {
    low_threshold();
    let a = build(100_000, |i| i as f64);
    assert_eq!(a, Array1::from_shape_fn(100_000, |i| i as f64));
    let b = build((300, 500), |(i, j)| (i * 1000 + j) as f64);
    assert_eq!(
        b,
        Array2::from_shape_fn((300, 500), |(i, j)| (i * 1000 + j) as f64)
    );
    let c = build((3, 70_000, 2), |(i, j, k)| {
        (i * 1_000_000 + j * 10 + k) as f64
    });
    assert_eq!(
        c,
        Array3::from_shape_fn((3, 70_000, 2), |(i, j, k)| (i * 1_000_000 + j * 10 + k)
            as f64)
    );
    let e: Array1<f64> = build(0, |i| i as f64);
    assert_eq!(e.len(), 0);
    assert_eq!(build(1, |i| i as f64 + 1.0), Array1::from(vec![1.0]));
    let u: Array2<usize> = build((2, 2), |(i, j)| i + j);
    assert_eq!(u, ndarray::arr2(&[[0, 1], [1, 2]]));
}

#[test]
fn map_and_zips_on_all_layouts() {
    low_threshold();
    let x = vec1(100_001, 1);
    assert_eq!(map(&x, |v| v * 2.0 + 1.0), x.mapv(|v| v * 2.0 + 1.0));
    let st = x.slice(s![..;2]);
    assert_eq!(map(&st, f64::sin), st.mapv(f64::sin));
    let m = mat(400, 300, 2);
    let n = mat(300, 400, 3);
    assert_eq!(map(&m.t(), |v| v * v), m.t().mapv(|v| v * v));
    let z = zip_map(&m, &n.t(), |a, b| a - b);
    assert_eq!(z, &m - &n.t());
    let w = zip3_map(&m, &n.t(), &m.slice(s![.., ..]), |a, b, c| a * b + c);
    assert_eq!(w, &m * &n.t() + &m);
    let a3 = arr3(10, 200, 30, 4);
    let r3 = map(&a3.slice(s![.., ..;-1, 1..]), |v| v + 1.0);
    assert_eq!(r3, a3.slice(s![.., ..;-1, 1..]).mapv(|v| v + 1.0));
    let e = Array2::<f64>::zeros((0, 3));
    assert_eq!(zip_map(&e, &e, |a, b| a + b).shape(), &[0, 3]);
    let one = Array1::from(vec![2.0]);
    assert_eq!(zip3_map(&one, &one, &one, |a, b, c| a * b * c)[0], 8.0);
    let flags: Array1<bool> = map(&x, |v| v > 0.0);
    assert_eq!(flags, x.mapv(|v| v > 0.0));
}

/// Sequential kernels walk inputs whose rows are contiguous but which are
/// not one slice (a row broadcast, a column range, a 3-D slab) row by row;
/// the results are ndarray's, element for element, for those and for the
/// inputs that keep `Zip`'s walk (short rows, a transposed operand).
#[test]
fn rows_of_views_and_broadcasts_map_like_ndarray() {
    in_pool(1, || {
        let m = mat(50, 10, 4);
        let row = vec1(10, 5);
        let b = row.broadcast((50, 10)).unwrap();
        assert_eq!(zip_map(&m, &b, |a, c| a - c), &m - &row);
        let cols = m.slice(s![.., 2..9]);
        assert_eq!(map(&cols, |v| v * 3.0), cols.mapv(|v| v * 3.0));
        let (l, r) = (m.slice(s![.., ..8]), m.slice(s![.., 2..]));
        let b8 = row.slice(s![..8]);
        let b8 = b8.broadcast((50, 8)).unwrap();
        assert_eq!(zip3_map(&l, &b8, &r, |x, y, z| x * y + z), &l * &b8 + r);
        let a3 = arr3(4, 5, 12, 6);
        let slab = a3.slice(s![.., 1..4, ..]);
        assert_eq!(map(&slab, f64::exp), slab.mapv(f64::exp));
        let short = m.slice(s![.., ..3]);
        assert_eq!(map(&short, |v| -v), short.mapv(|v| -v));
        let n = mat(10, 50, 7);
        assert_eq!(
            zip_map(&cols, &n.t().slice(s![.., 2..9]), |a, c| a * c),
            &cols * &n.t().slice(s![.., 2..9])
        );
    });
}

#[test]
fn nested_kernels_run_sequentially() {
    low_threshold();
    let m = mat(64, 20_000, 5);
    let parallel_hits = AtomicUsize::new(0);
    let sums = in_pool(2, || {
        build(64, |i| {
            if in_parallel_kernel() {
                parallel_hits.fetch_add(1, Ordering::Relaxed);
            }
            sum(&m.row(i))
        })
    });
    assert_eq!(
        parallel_hits.load(Ordering::Relaxed),
        64,
        "outer build ran in parallel"
    );
    for i in 0..64 {
        assert_eq!(sums[i].to_bits(), sum(&m.row(i)).to_bits());
    }
    assert!(!in_parallel_kernel());
    // One thread: sequential, flag never set.
    let hits = in_pool(1, || {
        map(&m.row(0), |_| in_parallel_kernel() as usize).sum()
    });
    assert_eq!(hits, 0);
}

#[test]
fn elementwise_deterministic() {
    let x = vec1(100_000, 1);
    let m = mat(300, 500, 2);
    same_bits("map", || map(&x, |v| v.exp()));
    same_bits("zip_map", || zip_map(&m, &m.t().t(), |a, b| a * b));
    same_bits("zip3_map", || zip3_map(&m, &m, &m, |a, b, c| a * b - c));
    same_bits("build", || {
        build((300, 500), |(i, j)| (i as f64).sin() * j as f64)
    });
}

/// Element types need no `Default`: closures returning tuples wider than
/// the standard library's `Default` impls (12), in the parallel paths and on
/// non-row-major inputs.
#[test]
fn wide_tuple_elements() {
    low_threshold();
    type Wide = (
        f64,
        f64,
        f64,
        f64,
        f64,
        f64,
        f64,
        f64,
        f64,
        f64,
        f64,
        f64,
        f64,
        i64,
    );
    let wide = |v: f64| -> Wide { (v, v, v, v, v, v, v, v, v, v, v, v, 2.0 * v, v as i64) };
    let b: Array2<Wide> = build((300, 500), |(i, j)| wide((i * 1000 + j) as f64));
    assert!(b
        .indexed_iter()
        .all(|((i, j), t)| t.12 == 2.0 * (i * 1000 + j) as f64));
    let m = mat(400, 300, 4);
    let r = map(&m.t(), wide);
    assert!(r
        .iter()
        .zip(m.t().iter())
        .all(|(t, &v)| t.0 == v && t.12 == 2.0 * v));
    let z = zip_map(&m, &m.t().t(), |a, b| wide(a - b));
    assert!(z.iter().all(|t| t.12 == 0.0));
    let w = zip3_map(&m.t(), &m.t(), &m.t(), |a, b, c| wide(a + b - c));
    assert!(w.iter().zip(m.t().iter()).all(|(t, &v)| t.0 == v));
}
