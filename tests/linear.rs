//! `#[linear(..)]`: functions declared linear get `f_transpose`, checked by
//! the transposition identity <ct, f(x)> = <f_transpose(ct), x> on random
//! inputs; they are also differentiable (f_jvp / f_vjp in every parameter,
//! against finite differences), and callable from differentiable functions
//! through both kinds of slots.
#![allow(clippy::type_complexity, clippy::needless_range_loop)]

mod common;
use common::*;
use linad::ndarray::{Array1, Array2};
use linad::{differentiable, linear};

// 1. A scalar scaled by a constant.
#[linear(x)]
fn scale(a: f64, x: f64) -> f64 {
    a * x - x / 4.0
}

// 2. Two scalars, a tuple output.
#[linear(x, y)]
fn rotate(theta: f64, x: f64, y: f64) -> (f64, f64) {
    let (c, s) = (theta.cos(), theta.sin());
    (c * x - s * y, s * x + c * y)
}

// 3. A tuple parameter.
#[linear(p)]
fn tuple_sum(w: f64, p: (f64, f64)) -> f64 {
    w * p.0 + p.1
}

// 4. Matrix times vector.
#[linear(x)]
fn matvec(a: &Array2<f64>, x: &Array1<f64>) -> Array1<f64> {
    a.dot(x)
}

// 5. Elementwise weights and a sum.
#[linear(x)]
fn weighted_sum(w: &Array1<f64>, x: &Array1<f64>) -> f64 {
    (w * x).sum()
}

// 6. A loop accumulating linear values, a branch on a constant.
#[linear(x)]
fn masked_total(w: &Array1<f64>, flip: bool, x: &Array1<f64>) -> f64 {
    let mut acc = 0.0;
    for i in 0..w.len() {
        if w[i] > 0.0 {
            acc += w[i] * x[i];
        } else {
            acc -= x[i];
        }
    }
    if flip {
        -acc
    } else {
        acc
    }
}

// 7. A gather through an index array (the size comes from `w`).
#[linear(x)]
fn gather(idx: &Array1<usize>, w: &Array1<f64>, x: &Array1<f64>) -> Array1<f64> {
    let scaled = w * x;
    Array1::from_shape_fn(idx.len(), |i| scaled[idx[i]])
}

// 8. A scatter into a zeros array.
#[linear(x)]
fn scatter(idx: &Array1<usize>, n: usize, x: &Array1<f64>) -> Array1<f64> {
    let mut out = Array1::zeros(n);
    for i in 0..idx.len() {
        out[idx[i]] += x[i];
    }
    out
}

// 9. A stencil (second difference), the input's size from the output's.
#[linear(x)]
fn laplacian(h: f64, x: &Array1<f64>) -> Array1<f64> {
    Array1::from_shape_fn(x.len(), |i| {
        let left = if i > 0 { x[i - 1] } else { 0.0 };
        let right = if i + 1 < x.len() { x[i + 1] } else { 0.0 };
        (left - 2.0 * x[i] + right) / (h * h)
    })
}

// 10. A 1-D convolution with a kernel ("same" size, zero padding).
#[linear(x)]
fn convolve(k: &Array1<f64>, x: &Array1<f64>) -> Array1<f64> {
    let n = x.len();
    let m = k.len();
    Array1::from_shape_fn(n, |i| {
        let mut s = 0.0;
        for j in 0..m {
            let t = i + j;
            if t >= m / 2 && t - m / 2 < n {
                s += k[j] * x[t - m / 2];
            }
        }
        s
    })
}

// 11. Rank 2: a bilinear form's linear slot, matrix-valued.
#[linear(x)]
fn sandwich(a: &Array2<f64>, b: &Array2<f64>, x: &Array2<f64>) -> Array2<f64> {
    a.dot(x).dot(b)
}

// 12. Calls between linear functions.
#[linear(x)]
fn twice_matvec(a: &Array2<f64>, x: &Array1<f64>) -> Array1<f64> {
    let y = a.dot(x);
    let z = a.t().dot(&y);
    &z * 2.0
}

// 13. Two linear arrays and a mapv that stays linear.
#[linear(x, y)]
fn mix(w: &Array1<f64>, x: &Array1<f64>, y: &Array1<f64>) -> Array1<f64> {
    let d = x - y;
    d.mapv(|v| v * 3.0) + w * y
}

// 14. Calls of other linear functions in their linear slots, nested, with
// a non-linear argument in another slot. (The size of `x` must follow from
// this body: here from `b.dot(x)`; a callee's body is not visible.)
#[linear(x)]
fn chain(a: &Array2<f64>, b: &Array2<f64>, c: &Array1<f64>, x: &Array1<f64>) -> Array1<f64> {
    let y = b.dot(x);
    let z: Array1<f64> = matvec(a, &y);
    let w: Array1<f64> = mix(c, &z, &y);
    let v: Array1<f64> = matvec(a, &y);
    &w + &v
}

// 15. A scalar linear callee inside a loop.
#[linear(x)]
fn scaled_sum(w: &Array1<f64>, x: &Array1<f64>) -> f64 {
    let mut acc = 0.0;
    for i in 0..w.len() {
        acc += scale(w[i], x[i]);
    }
    acc
}

/// <a, b> over the flattened leaves.
fn inner<T: Flatten>(a: &T, b: &T) -> f64 {
    a.flatten()
        .iter()
        .zip(b.flatten())
        .map(|(x, y)| x * y)
        .sum()
}

#[track_caller]
fn identity(lhs: f64, rhs: f64) {
    assert_close(lhs, rhs, 1e-12);
}

#[test]
fn scalars_and_tuples() {
    let mut rng = rng("scalars");
    for _ in 0..5 {
        let (a, x, ct) = (rng.normal(), rng.normal(), rng.normal());
        identity(ct * scale(a, x), scale_transpose(a, ct) * x);
        let (th, x, y) = (rng.normal(), rng.normal(), rng.normal());
        let ct = (rng.normal(), rng.normal());
        let (gx, gy) = rotate_transpose(th, ct);
        identity(inner(&ct, &rotate(th, x, y)), gx * x + gy * y);
        let (w, p, c) = (rng.normal(), (rng.normal(), rng.normal()), rng.normal());
        let g = tuple_sum_transpose(w, c);
        identity(c * tuple_sum(w, p), g.0 * p.0 + g.1 * p.1);
    }
}

#[test]
fn arrays() {
    let mut rng = rng("arrays");
    let a = rng.array2(3, 5, -1.0, 1.0);
    let x = rng.array1(5, -1.0, 1.0);
    let ct = rng.array1(3, -1.0, 1.0);
    identity(
        inner(&ct, &matvec(&a, &x)),
        inner(&matvec_transpose(&a, &ct), &x),
    );
    assert_eq!(matvec_transpose(&a, &ct).len(), 5);

    let w = rng.array1(5, -1.0, 1.0);
    identity(
        0.7 * weighted_sum(&w, &x),
        inner(&weighted_sum_transpose(&w, 0.7), &x),
    );

    for flip in [false, true] {
        let g = masked_total_transpose(&w, flip, 1.3);
        identity(1.3 * masked_total(&w, flip, &x), inner(&g, &x));
    }

    let idx = Array1::from(vec![4usize, 0, 0, 2, 3, 4, 1]);
    let ct7 = rng.array1(7, -1.0, 1.0);
    identity(
        inner(&ct7, &gather(&idx, &w, &x)),
        inner(&gather_transpose(&idx, &w, &ct7), &x),
    );

    let xs = rng.array1(7, -1.0, 1.0);
    let ct6 = rng.array1(6, -1.0, 1.0);
    let g = scatter_transpose(&idx, 6, &ct6);
    assert_eq!(g.len(), 7);
    identity(inner(&ct6, &scatter(&idx, 6, &xs)), inner(&g, &xs));

    let x9 = rng.array1(9, -1.0, 1.0);
    let ct9 = rng.array1(9, -1.0, 1.0);
    identity(
        inner(&ct9, &laplacian(0.5, &x9)),
        inner(&laplacian_transpose(0.5, &ct9), &x9),
    );

    let k = rng.array1(3, -1.0, 1.0);
    identity(
        inner(&ct9, &convolve(&k, &x9)),
        inner(&convolve_transpose(&k, &ct9), &x9),
    );

    let b = rng.array2(4, 2, -1.0, 1.0);
    let xm = rng.array2(5, 4, -1.0, 1.0);
    let ctm = rng.array2(3, 2, -1.0, 1.0);
    let g = sandwich_transpose(&a, &b, &ctm);
    assert_eq!(g.shape(), &[5, 4]);
    identity(inner(&ctm, &sandwich(&a, &b, &xm)), inner(&g, &xm));

    let ct5 = rng.array1(5, -1.0, 1.0);
    identity(
        inner(&ct5, &twice_matvec(&a, &x)),
        inner(&twice_matvec_transpose(&a, &ct5), &x),
    );

    let y = rng.array1(5, -1.0, 1.0);
    let (gx, gy) = mix_transpose(&w, &ct5);
    identity(
        inner(&ct5, &mix(&w, &x, &y)),
        inner(&gx, &x) + inner(&gy, &y),
    );
}

#[test]
fn calls_between_linear_functions() {
    let mut rng = rng("calls");
    let a = rng.array2(3, 3, -1.0, 1.0);
    let b = rng.array2(3, 4, -1.0, 1.0);
    let x = rng.array1(4, -1.0, 1.0);
    let ct = rng.array1(3, -1.0, 1.0);
    let c = rng.array1(3, -1.0, 1.0);
    let g = chain_transpose(&a, &b, &c, &ct);
    assert_eq!(g.len(), 4);
    identity(inner(&ct, &chain(&a, &b, &c, &x)), inner(&g, &x));
    let w = rng.array1(4, -1.0, 1.0);
    identity(
        0.3 * scaled_sum(&w, &x),
        inner(&scaled_sum_transpose(&w, 0.3), &x),
    );
    // And differentiable through both slots.
    check_derivatives(
        &(a, x),
        |(a, x)| chain(a, &b, &c, x),
        |(a, x), (da, dx)| {
            chain_jvp(
                a,
                &b,
                &c,
                x,
                da,
                &Array2::zeros((3, 4)),
                &Array1::zeros(3),
                dx,
            )
        },
        |(a, x), ct: &Array1<f64>| {
            let (y, (ga, _, _, gx)) = chain_vjp(a, &b, &c, x, ct);
            (y, (ga, gx))
        },
    );
}

#[test]
fn the_transpose_of_a_linear_map_is_its_vjp() {
    let mut rng = rng("vjp");
    let a = rng.array2(3, 4, -1.0, 1.0);
    let x = rng.array1(4, -1.0, 1.0);
    let ct = rng.array1(3, -1.0, 1.0);
    let (_, (_, gx)) = matvec_vjp(&a, &x, &ct);
    let t = matvec_transpose(&a, &ct);
    for (p, q) in gx.iter().zip(&t) {
        assert_close(*p, *q, 1e-14);
    }
}

#[test]
fn linear_functions_are_differentiable_in_every_parameter() {
    let mut rng = rng("diff");
    let a = rng.array2(3, 4, -1.0, 1.0);
    let x = rng.array1(4, -1.0, 1.0);
    check_derivatives(
        &(a.clone(), x.clone()),
        |(a, x)| matvec(a, x),
        |(a, x), (da, dx)| matvec_jvp(a, x, da, dx),
        |(a, x), ct: &Array1<f64>| matvec_vjp(a, x, ct),
    );
    check_derivatives(
        &(0.4, 1.5, -0.5),
        |p| rotate(p.0, p.1, p.2),
        |p, d| rotate_jvp(p.0, p.1, p.2, d.0, d.1, d.2),
        |p, ct: &(f64, f64)| rotate_vjp(p.0, p.1, p.2, *ct),
    );
}

/// A differentiable caller using a linear function in both slots.
#[differentiable]
fn caller(a: &Array2<f64>, x: &Array1<f64>) -> f64 {
    let y: Array1<f64> = matvec(a, x);
    let z = y.mapv(|v| v.tanh());
    z.sum()
}

#[test]
fn differentiable_callers_of_linear_functions() {
    let mut rng = rng("caller");
    let a: Array2<f64> = rng.array2(3, 4, -1.0, 1.0);
    let x = rng.array1(4, -1.0, 1.0);
    check_derivatives(
        &(a, x),
        |(a, x)| caller(a, x),
        |(a, x), (da, dx)| caller_jvp(a, x, da, dx),
        |(a, x), ct| caller_vjp(a, x, *ct),
    );
}

// Differentiable callers whose derivatives flow only through the linear
// slots: they call the linear function and its transpose directly
// (`__linad_f_linear`, `__linad_f_linear_t`), not its linearisation.

/// `matvec` with `a` a constant of the caller's derivative (`wrt(x)`).
#[differentiable(wrt(x))]
fn caller_wrt_x(a: &Array2<f64>, x: &Array1<f64>) -> f64 {
    let y: Array1<f64> = matvec(a, &x.mapv(f64::sin));
    y.mapv(|v| v * v).sum()
}

/// Literal constants in the non-linear slots, a tuple output, a tuple
/// parameter, an index array and a size, in a loop.
#[differentiable]
fn caller_of_many(idx: &Array1<usize>, x: &Array1<f64>, s: f64) -> f64 {
    let (u, v): (f64, f64) = rotate(0.3, s.sin(), x[0] * s);
    let t = tuple_sum(1.5, (u, v * v));
    let sc: Array1<f64> = scatter(idx, 6, &x.mapv(|e| e * s));
    let lap: Array1<f64> = laplacian(2.0, &sc);
    let mut acc = t;
    for i in 0..lap.len() {
        acc += scale(0.5, lap[i] * lap[i]);
    }
    acc
}

#[test]
fn callers_through_linear_slots_only() {
    let mut rng = rng("slots");
    let a: Array2<f64> = rng.array2(3, 4, -1.0, 1.0);
    let x = rng.array1(4, -1.0, 1.0);
    check_derivatives(
        &x.clone(),
        |x| caller_wrt_x(&a, x),
        |x, dx| caller_wrt_x_jvp(&a, x, dx),
        |x, ct| caller_wrt_x_vjp(&a, x, *ct),
    );
    let idx = Array1::from(vec![4usize, 0, 0, 2, 3, 5, 1]);
    let x7 = rng.array1(7, -1.0, 1.0);
    check_derivatives(
        &(x7, 0.8),
        |(x, s)| caller_of_many(&idx, x, *s),
        |(x, s), (dx, ds)| caller_of_many_jvp(&idx, x, *s, dx, *ds),
        |(x, s), ct| caller_of_many_vjp(&idx, x, *s, *ct),
    );
}

/// A zero in a linear parameter of a linear callee keeps the call linear.
#[linear(x)]
fn rotate_first(x: f64) -> (f64, f64) {
    rotate(0.2, x, 0.0)
}

/// A zeros array in a linear parameter of a linear callee (`w * x` tells
/// `x`'s size: a callee's body is not visible).
#[linear(x)]
fn mix_first(w: &Array1<f64>, x: &Array1<f64>) -> Array1<f64> {
    let z = Array1::zeros(x.len());
    mix(w, &(w * x), &z)
}

#[test]
fn zeros_in_linear_parameters_of_linear_callees() {
    let mut rng = rng("zeros");
    let (x, ct) = (rng.normal(), (rng.normal(), rng.normal()));
    identity(inner(&ct, &rotate_first(x)), rotate_first_transpose(ct) * x);
    assert_eq!(rotate_first(x), rotate(0.2, x, 0.0));
    let w = rng.array1(5, -1.0, 1.0);
    let x = rng.array1(5, -1.0, 1.0);
    let ct = rng.array1(5, -1.0, 1.0);
    identity(
        inner(&ct, &mix_first(&w, &x)),
        inner(&mix_first_transpose(&w, &ct), &x),
    );
}
