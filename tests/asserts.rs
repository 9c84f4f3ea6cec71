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
