//! Tangents and cotangents of the wrong shape are refused on entry of
//! `f_jvp` / `f_vjp` with a message naming the argument, the given and the
//! expected shape (issue 8, defect 9: a longer tangent was silently accepted,
//! a shorter one failed inside ndarray).

use linad::differentiable;
use linad::ndarray::{Array1, Array2};

#[differentiable]
fn weighted(w: &Array1<f64>, x: f64) -> f64 {
    let mut s = 0.0;
    for i in 0..w.len() {
        s += w[i] * (x * i as f64).sin();
    }
    s
}

/// `m` is `r × c`; the result is `c × r`.
#[differentiable]
fn flip(m: &Array2<f64>) -> Array2<f64> {
    let (r, c) = m.dim();
    Array2::from_shape_fn((c, r), |(i, j)| m[[j, i]] * m[[j, i]])
}

#[differentiable]
fn scaled(v: &Array1<f64>, s: f64) -> Array1<f64> {
    v.mapv(|x| x * s)
}

#[differentiable]
fn pair(v: &Array1<f64>) -> (f64, Array1<f64>) {
    (v.sum(), v.mapv(|x| x.exp()))
}

fn w4() -> Array1<f64> {
    Array1::from(vec![0.5, -1.0, 2.0, 0.25])
}

fn m23() -> Array2<f64> {
    Array2::from_shape_fn((2, 3), |(i, j)| i as f64 - 0.5 * j as f64)
}

#[test]
fn right_shapes_are_accepted() {
    let (y, _) = weighted_jvp(&w4(), 0.3, &Array1::ones(4), 1.0);
    assert_eq!(y, weighted(&w4(), 0.3));
    let (y, _) = flip_jvp(&m23(), &Array2::ones((2, 3)));
    assert_eq!(y, flip(&m23()));
    let (_, g) = flip_vjp(&m23(), &Array2::ones((3, 2)));
    assert_eq!(g.shape(), &[2, 3]);
    let (y, _) = scaled_vjp(&w4(), 2.0, &Array1::ones(4));
    assert_eq!(y, scaled(&w4(), 2.0));
    let (y, gv) = pair_vjp(&w4(), (1.0, &Array1::ones(4)));
    assert_eq!(y, pair(&w4()));
    assert_eq!(gv.len(), 4);
}

#[test]
#[should_panic(
    expected = "weighted_jvp: tangent `d_w` has shape [3], expected [4] (the shape of `w`)"
)]
fn shorter_tangent() {
    weighted_jvp(&w4(), 0.3, &Array1::ones(3), 1.0);
}

#[test]
#[should_panic(
    expected = "weighted_jvp: tangent `d_w` has shape [5], expected [4] (the shape of `w`)"
)]
fn longer_tangent() {
    weighted_jvp(&w4(), 0.3, &Array1::ones(5), 1.0);
}

#[test]
#[should_panic(
    expected = "flip_jvp: tangent `d_m` has shape [3, 2], expected [2, 3] (the shape of `m`)"
)]
fn rank2_tangent_of_the_wrong_shape() {
    flip_jvp(&m23(), &Array2::ones((3, 2)));
}

#[test]
#[should_panic(
    expected = "scaled_vjp: cotangent `ct` has shape [3], expected [4] (the shape of scaled's result)"
)]
fn shorter_cotangent() {
    scaled_vjp(&w4(), 2.0, &Array1::ones(3));
}

#[test]
#[should_panic(
    expected = "scaled_vjp: cotangent `ct` has shape [6], expected [4] (the shape of scaled's result)"
)]
fn longer_cotangent() {
    scaled_vjp(&w4(), 2.0, &Array1::ones(6));
}

#[test]
#[should_panic(
    expected = "flip_vjp: cotangent `ct` has shape [2, 3], expected [3, 2] (the shape of flip's result)"
)]
fn rank2_cotangent_of_the_wrong_shape() {
    flip_vjp(&m23(), &Array2::ones((2, 3)));
}

#[test]
#[should_panic(
    expected = "pair_vjp: cotangent `ct.1` has shape [2], expected [4] (the shape of pair's result.1)"
)]
fn cotangent_inside_a_tuple() {
    pair_vjp(&w4(), (1.0, &Array1::ones(2)));
}
