//! Assertions a body starts with (`assert!`, `assert_eq!`, `assert_ne!`
//! and the `debug_` forms): `f_jvp`, `f_vjp`, `f_linearize` and
//! `f_pullback` check them on entry, so where `f` panics its derivatives
//! panic with the same message, and where it does not they are the
//! derivatives of the rest of the body.

mod common;
use common::*;
use linad::differentiable;
use linad::ndarray::{array, Array1};

/// A weighted sum of squares with its preconditions.
#[differentiable]
fn weighted(x: &Array1<f64>, w: &Array1<f64>, s: f64) -> f64 {
    assert_eq!(x.len(), w.len(), "x and w differ in length");
    assert!(s > 0.0, "scale {s} is not positive");
    debug_assert_ne!(x.len(), 0);
    x.iter().zip(w.iter()).map(|(a, b)| b * a * a).sum::<f64>() / s
}

/// The message of the panic `f` raises.
fn panic_message(f: impl FnOnce() + std::panic::UnwindSafe) -> String {
    let payload = std::panic::catch_unwind(f).expect_err("a panic");
    match payload.downcast::<String>() {
        Ok(s) => *s,
        Err(p) => p
            .downcast::<&str>()
            .map_or(String::new(), |s| s.to_string()),
    }
}

#[test]
fn derivatives_of_the_rest_of_the_body() {
    let mut rng = rng("asserts");
    let x = (rng.array1(4, -1.0, 1.0), rng.array1(4, 0.5, 1.5), 1.7);
    let y = weighted(&x.0, &x.1, x.2);
    assert_eq!(weighted_vjp(&x.0, &x.1, x.2, 1.0).0.to_bits(), y.to_bits());
    check_derivatives(
        &x,
        |(x, w, s)| weighted(x, w, *s),
        |(x, w, s), (dx, dw, ds)| weighted_jvp(x, w, *s, dx, dw, *ds),
        |(x, w, s), ct| weighted_vjp(x, w, *s, *ct),
    );
}

#[test]
fn derivatives_panic_as_f_does() {
    let (x, w, short) = (array![1.0, 2.0], array![0.5, 0.25], array![1.0]);
    let want = panic_message(|| {
        weighted(&x, &short, 1.0);
    });
    assert!(want.contains("x and w differ in length"), "{want}");
    let (dx, dw) = (x.clone(), short.clone());
    assert_eq!(
        panic_message(|| {
            weighted_jvp(&x, &short, 1.0, &dx, &dw, 0.0);
        }),
        want
    );
    assert_eq!(
        panic_message(|| {
            weighted_vjp(&x, &short, 1.0, 1.0);
        }),
        want
    );
    assert_eq!(
        panic_message(|| {
            let _ = weighted_linearize(&x, &short, 1.0);
        }),
        want
    );
    assert_eq!(
        panic_message(|| {
            let _ = weighted_pullback(&x, &short, 1.0);
        }),
        want
    );
    // The formatted message, with the parameter's value.
    let want = panic_message(|| {
        weighted(&x, &w, -2.0);
    });
    assert_eq!(want, "scale -2 is not positive");
    assert_eq!(
        panic_message(|| {
            weighted_vjp(&x, &w, -2.0, 1.0);
        }),
        want
    );
}

/// Integer and index-array parameters in assertions.
#[differentiable]
fn gather(x: &Array1<f64>, idx: &Array1<usize>, k: usize) -> f64 {
    assert!(k < idx.len(), "k = {k} is past the {} indices", idx.len());
    assert!(idx.iter().all(|&i| i < x.len()), "an index is out of range");
    x[idx[k]] * x[idx[k]]
}

/// A caller of both: its derivatives call their building blocks (at the
/// top level, which keeps residuals, and inside a loop, which recomputes),
/// which check the callees' assertions too.
#[differentiable]
fn caller(x: &Array1<f64>, w: &Array1<f64>, idx: &Array1<usize>) -> f64 {
    let a = weighted(x, w, 2.0);
    let mut s = 0.0;
    for k in 0..2 {
        s += weighted(x, w, 1.0 + k as f64) * gather(x, idx, k);
    }
    a + s
}

#[test]
fn callers_derivatives_check_the_callees_assertions() {
    let (x, w, idx) = (array![1.0, 2.0, 3.0], array![0.5, 0.25, 2.0], array![2, 0]);
    let y = caller(&x, &w, &idx);
    let (yv, _) = caller_vjp(&x, &w, &idx, 1.0);
    assert_eq!(yv.to_bits(), y.to_bits());
    check_derivatives(
        &(x.clone(), w.clone()),
        |(x, w)| caller(x, w, &idx),
        |(x, w), (dx, dw)| caller_jvp(x, w, &idx, dx, dw),
        |(x, w), ct| caller_vjp(x, w, &idx, *ct),
    );
    let short = array![0.5, 0.25];
    let want = panic_message(|| {
        caller(&x, &short, &idx);
    });
    assert!(want.contains("x and w differ in length"), "{want}");
    let (dx, dw) = (x.clone(), short.clone());
    assert_eq!(
        panic_message(|| {
            caller_vjp(&x, &short, &idx, 1.0);
        }),
        want
    );
    assert_eq!(
        panic_message(|| {
            caller_jvp(&x, &short, &idx, &dx, &dw);
        }),
        want
    );
    let bad = array![2, 7];
    let want = panic_message(|| {
        caller(&x, &w, &bad);
    });
    assert_eq!(want, "an index is out of range");
    assert_eq!(
        panic_message(|| {
            caller_vjp(&x, &w, &bad, 1.0);
        }),
        want
    );
    let one = array![1];
    let want = panic_message(|| {
        caller(&x, &w, &one);
    });
    assert_eq!(want, "k = 1 is past the 1 indices");
    assert_eq!(
        panic_message(|| {
            let _ = caller_pullback(&x, &w, &one);
        }),
        want
    );
}
