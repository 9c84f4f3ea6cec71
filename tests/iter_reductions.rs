//! The iterator reductions that return an `Option`, unwrapped: `max_by` /
//! `min_by` with `partial_cmp(..).unwrap()`, `total_cmp` or `cmp`
//! comparators (keys that are expressions of the items too), `reduce`, and
//! `max` / `min` of integers. The companions' primal has `f`'s bits (ties:
//! the last maximum, the first minimum; `total_cmp`'s signed zeros and
//! NaNs), the derivative flows to the item chosen, and they panic where
//! `f` panics (an empty iterator, a NaN key under `partial_cmp`).
#![allow(clippy::needless_range_loop)]

mod common;
use common::*;
use linad::differentiable;
use linad::ndarray::{array, Array1};

/// The largest element by `partial_cmp`, by reference and dereferenced.
#[differentiable]
fn largest(x: &Array1<f64>) -> f64 {
    let m = *x.iter().max_by(|a, b| a.partial_cmp(b).unwrap()).unwrap();
    m * m + x[0]
}

/// The smallest by `f64::total_cmp` (the path), over copies.
#[differentiable]
fn smallest_total(x: &Array1<f64>) -> f64 {
    x.iter().copied().min_by(f64::total_cmp).unwrap()
}

/// The largest by `total_cmp` written as a closure.
#[differentiable]
fn largest_total(x: &Array1<f64>) -> f64 {
    x.iter().copied().max_by(|a, b| a.total_cmp(b)).unwrap()
}

/// The smallest by `partial_cmp` (the first of equal minima wins).
#[differentiable]
fn smallest(x: &Array1<f64>) -> f64 {
    x.iter()
        .cloned()
        .min_by(|a, b| a.partial_cmp(b).expect("no NaN"))
        .unwrap()
}

/// Arg-max by `enumerate` and a key of the pair, used as an index.
#[differentiable]
fn at_argmax(x: &Array1<f64>, y: &Array1<f64>) -> f64 {
    let (i, v) = x
        .iter()
        .enumerate()
        .max_by(|a, b| a.1.total_cmp(b.1))
        .unwrap();
    y[i] * v + (i as f64)
}

/// Arg-min over a range of indices, the keys read from an array.
#[differentiable]
fn at_argmin(x: &Array1<f64>) -> f64 {
    let i = (0..x.len())
        .min_by(|&a, &b| x[a].abs().partial_cmp(&x[b].abs()).unwrap())
        .unwrap();
    x[i] * 3.0 + x[(i + 1) % x.len()]
}

/// Keys that are expressions of the items, after a `map`.
#[differentiable]
fn largest_magnitude(x: &Array1<f64>) -> f64 {
    x.iter()
        .map(|v| v * 1.5 - 0.25)
        .max_by(|a, b| a.abs().partial_cmp(&b.abs()).unwrap())
        .unwrap()
}

/// `reduce` with `f64::max`, and with an order-dependent closure forwards
/// and reversed.
#[differentiable]
fn reductions(x: &Array1<f64>) -> f64 {
    let m = x.iter().cloned().reduce(f64::max).unwrap();
    let h = x.iter().copied().reduce(|a, b| a * 0.5 + b.sin()).unwrap();
    let r = x
        .iter()
        .rev()
        .copied()
        .reduce(|a, b| a * 0.5 + b.sin())
        .unwrap();
    m + 2.0 * h + 3.0 * r
}

/// `max` / `min` of integers (an index).
#[differentiable]
fn integer_extremes(x: &Array1<f64>) -> f64 {
    let n = x.len();
    let hi = (0..n).map(|i| (i * 7) % n).max().unwrap();
    let lo = (1..n).map(|i| (i * 3) % n).min().unwrap();
    x[hi] * 2.0 + x[lo]
}

fn gradient(g: &Array1<f64>) -> Vec<f64> {
    g.to_vec()
}

#[test]
fn primal_bits_and_derivatives() {
    let mut rng = rng("iter_reductions");
    for _ in 0..5 {
        let x = rng.array1(7, -2.0, 2.0);
        let y = rng.array1(7, -2.0, 2.0);
        assert_same_bits(&largest_vjp(&x, 1.0).0, &largest(&x));
        assert_same_bits(&largest_jvp(&x, &y).0, &largest(&x));
        assert_same_bits(&smallest_total_vjp(&x, 1.0).0, &smallest_total(&x));
        assert_same_bits(&at_argmax_vjp(&x, &y, 1.0).0, &at_argmax(&x, &y));
        assert_same_bits(&at_argmin_vjp(&x, 1.0).0, &at_argmin(&x));
        assert_same_bits(&reductions_vjp(&x, 1.0).0, &reductions(&x));
        assert_same_bits(&largest_magnitude_vjp(&x, 1.0).0, &largest_magnitude(&x));
        assert_same_bits(&integer_extremes_vjp(&x, 1.0).0, &integer_extremes(&x));
        check_derivatives(&x, largest, largest_jvp, |x, ct| largest_vjp(x, *ct));
        check_derivatives(&x, smallest_total, smallest_total_jvp, |x, ct| {
            smallest_total_vjp(x, *ct)
        });
        check_derivatives(&x, largest_total, largest_total_jvp, |x, ct| {
            largest_total_vjp(x, *ct)
        });
        check_derivatives(&x, smallest, smallest_jvp, |x, ct| smallest_vjp(x, *ct));
        check_derivatives(
            &(x.clone(), y.clone()),
            |(x, y)| at_argmax(x, y),
            |(x, y), (dx, dy)| at_argmax_jvp(x, y, dx, dy),
            |(x, y), ct| at_argmax_vjp(x, y, *ct),
        );
        check_derivatives(&x, at_argmin, at_argmin_jvp, |x, ct| at_argmin_vjp(x, *ct));
        check_derivatives(&x, largest_magnitude, largest_magnitude_jvp, |x, ct| {
            largest_magnitude_vjp(x, *ct)
        });
        check_derivatives(&x, reductions, reductions_jvp, |x, ct| {
            reductions_vjp(x, *ct)
        });
        check_derivatives(&x, integer_extremes, integer_extremes_jvp, |x, ct| {
            integer_extremes_vjp(x, *ct)
        });
    }
}

#[test]
fn ties_choose_as_std_does() {
    // max_by keeps the last of equal maxima, min_by the first of equal minima.
    let x = array![1.0, 3.0, 3.0, 0.5, 0.5, 2.0];
    let (v, g) = largest_total_vjp(&x, 1.0);
    assert_eq!(v, 3.0);
    assert_eq!(gradient(&g), vec![0.0, 0.0, 1.0, 0.0, 0.0, 0.0]);
    let (v, g) = smallest_vjp(&x, 1.0);
    assert_eq!(v, 0.5);
    assert_eq!(gradient(&g), vec![0.0, 0.0, 0.0, 1.0, 0.0, 0.0]);
    let (_, g) = smallest_total_vjp(&x, 1.0);
    assert_eq!(gradient(&g), vec![0.0, 0.0, 0.0, 1.0, 0.0, 0.0]);
    // jvp: the tangent of the item chosen.
    let dx = array![1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
    assert_eq!(largest_total_jvp(&x, &dx).1, 3.0);
    assert_eq!(smallest_jvp(&x, &dx).1, 4.0);
}

#[test]
fn total_order_of_signed_zeros_and_nans() {
    // total_cmp: -0 < +0, so the maximum of [-0, +0, -0] is the +0 at 1 and
    // its minimum the first -0; `partial_cmp` calls them equal.
    let z = array![-0.0, 0.0, -0.0];
    for x in [
        z.clone(),
        array![0.0, -0.0, 0.0],
        array![1.0, f64::NAN, 2.0],
        array![1.0, -f64::NAN, 2.0],
        array![-f64::NAN, 1.0, f64::NAN, -1.0],
        array![f64::INFINITY, f64::NEG_INFINITY, -0.0],
    ] {
        assert_same_bits(&largest_total_vjp(&x, 1.0).0, &largest_total(&x));
        assert_same_bits(&largest_total_jvp(&x, &x).0, &largest_total(&x));
        assert_same_bits(&smallest_total_vjp(&x, 1.0).0, &smallest_total(&x));
    }
    assert_eq!(gradient(&largest_total_vjp(&z, 1.0).1), vec![0.0, 1.0, 0.0]);
    assert_eq!(
        gradient(&smallest_total_vjp(&z, 1.0).1),
        vec![1.0, 0.0, 0.0]
    );
    let (v, g) = largest_vjp(&z, 1.0);
    assert_same_bits(&v, &largest(&z));
    assert_eq!(gradient(&g)[2], 0.0, "{g}");
}

fn panics<T>(f: impl FnOnce() -> T + std::panic::UnwindSafe) -> bool {
    std::panic::catch_unwind(f).is_err()
}

#[test]
fn panic_where_f_panics() {
    let empty = Array1::<f64>::zeros(0);
    let nan = array![1.0, f64::NAN, 0.5];
    let one_nan = array![f64::NAN];
    for x in [&empty, &nan, &one_nan] {
        let f_panics = panics(|| largest(x));
        assert_eq!(panics(|| largest_vjp(x, 1.0)), f_panics, "{x}");
        assert_eq!(panics(|| largest_jvp(x, x)), f_panics, "{x}");
        assert_eq!(
            panics(|| smallest_vjp(x, 1.0)),
            panics(|| smallest(x)),
            "{x}"
        );
        // total_cmp never panics but on an empty iterator.
        assert_eq!(panics(|| largest_total_vjp(x, 1.0)), x.is_empty(), "{x}");
        assert_eq!(panics(|| reductions_vjp(x, 1.0)), x.is_empty(), "{x}");
    }
    // A single NaN is never compared: no panic, in f as in its derivatives.
    assert!(!panics(|| largest(&one_nan)));
    assert!(panics(|| largest(&nan)));
}
