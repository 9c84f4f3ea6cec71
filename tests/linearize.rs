//! `f_linearize` and `f_pullback`: the primal result and the linear map (or
//! its transpose) as a closure over the residuals. They equal `f_jvp` and
//! `f_vjp`, own everything they need (the inputs may be dropped before the
//! closure is called), build a Jacobian one row or column per call, and check
//! tangent and cotangent shapes.
#![allow(clippy::type_complexity)]

mod common;
use common::*;
use linad::differentiable;
use linad::ndarray::{array, Array1, Array2};

#[differentiable]
fn energy(x: f64, w: &Array1<f64>) -> f64 {
    w.iter().map(|wi| (wi * x).sin()).sum::<f64>() * x
}

#[differentiable]
fn softplus_layer(a: &Array2<f64>, x: &Array1<f64>) -> Array1<f64> {
    let z = a.dot(x);
    z.mapv(|v| (1.0 + v.exp()).ln())
}

#[differentiable(wrt(x))]
fn scaled(x: &Array1<f64>, s: f64, n: usize) -> (f64, Array1<f64>) {
    let mut acc = 0.0;
    for i in 0..n {
        acc += x[i] * x[i] * s;
    }
    (acc.sqrt(), x.mapv(|v| v * acc))
}

#[test]
fn signatures_and_values_match_jvp_and_vjp() {
    let w = array![0.5, -1.0, 2.0];
    let (y, lin) = energy_linearize(0.3, &w);
    let (y1, dy) = energy_jvp(0.3, &w, 1.5, &array![1.0, 0.0, -2.0]);
    assert_eq!(y.to_bits(), energy(0.3, &w).to_bits());
    assert_eq!(y.to_bits(), y1.to_bits());
    assert_close(lin(1.5, &array![1.0, 0.0, -2.0]), dy, 1e-12);

    let (y2, pb) = energy_pullback(0.3, &w);
    let (y3, (gx, gw)) = energy_vjp(0.3, &w, 2.0);
    assert_eq!(y2.to_bits(), y3.to_bits());
    let (px, pw) = pb(2.0);
    assert_eq!(px.to_bits(), gx.to_bits());
    assert_same_bits(&pw, &gw);
}

#[test]
fn the_closures_own_their_residuals() {
    let mut rng = rng("own");
    let a = rng.array2(4, 3, -1.0, 1.0);
    let x = rng.array1(3, -1.0, 1.0);
    let (lin, pb) = {
        let (a2, x2) = (a.clone(), x.clone());
        let (_, lin) = softplus_layer_linearize(&a2, &x2);
        let (_, pb) = softplus_layer_pullback(&a2, &x2);
        drop((a2, x2));
        (lin, pb)
    };
    let da = rng.array2(4, 3, -1.0, 1.0);
    let dx = rng.array1(3, -1.0, 1.0);
    let ct = rng.array1(4, -1.0, 1.0);
    let (_, dy) = softplus_layer_jvp(&a, &x, &da, &dx);
    let got = lin(&da, &dx);
    for (g, e) in got.iter().zip(&dy) {
        assert_close(*g, *e, 1e-12);
    }
    let (_, (ga, gx)) = softplus_layer_vjp(&a, &x, &ct);
    let (pa, px) = pb(&ct);
    assert_same_bits(&pa, &ga);
    assert_same_bits(&px, &gx);
    // The closures are Send + Sync: rows of a Jacobian on other threads.
    std::thread::scope(|s| {
        let h = s.spawn(|| pb(&ct));
        assert_same_bits(&h.join().unwrap().1, &gx);
    });
}

#[test]
fn a_jacobian_one_row_per_pullback_call_and_one_column_per_linear_call() {
    let mut rng = rng("jacobian");
    let a = rng.array2(3, 4, -1.0, 1.0);
    let x = rng.array1(4, -1.0, 1.0);
    let (y, pb) = softplus_layer_pullback(&a, &x);
    let (y1, lin) = softplus_layer_linearize(&a, &x);
    assert_same_bits(&y, &softplus_layer(&a, &x));
    assert_same_bits(&y, &y1);
    let zero_a = Array2::zeros((3, 4));
    let mut rows = Array2::<f64>::zeros((3, 4));
    for i in 0..y.len() {
        let mut e = Array1::zeros(y.len());
        e[i] = 1.0;
        rows.row_mut(i).assign(&pb(&e).1);
    }
    for j in 0..x.len() {
        let mut e = Array1::zeros(x.len());
        e[j] = 1.0;
        let col = lin(&zero_a, &e);
        for i in 0..y.len() {
            assert_close(col[i], rows[[i, j]], 1e-12);
        }
    }
    // Closed form: dy_i/dx_j = sigmoid(z_i) a_ij.
    let z = a.dot(&x);
    for i in 0..3 {
        let s = 1.0 / (1.0 + (-z[i]).exp());
        for j in 0..4 {
            assert_close(rows[[i, j]], s * a[[i, j]], 1e-12);
        }
    }
}

#[test]
fn wrt_and_tuple_outputs() {
    let mut rng = rng("tuple");
    let x = rng.array1(5, 0.1, 1.0);
    let dx = rng.array1(5, -1.0, 1.0);
    let ct = (0.7, rng.array1(5, -1.0, 1.0));
    let (y, lin) = scaled_linearize(&x, 1.3, 5);
    let (y1, dy1) = scaled_jvp(&x, 1.3, 5, &dx);
    assert_same_bits(&y, &y1);
    let dy = lin(&dx);
    assert_close(dy.0, dy1.0, 1e-12);
    for (g, e) in dy.1.iter().zip(&dy1.1) {
        assert_close(*g, *e, 1e-12);
    }
    let (_, pb) = scaled_pullback(&x, 1.3, 5);
    let (_, g) = scaled_vjp(&x, 1.3, 5, (ct.0, &ct.1));
    assert_same_bits(&pb((ct.0, &ct.1)), &g);
    // Against finite differences, through the closures.
    check_derivatives(
        &x,
        |x| scaled(x, 1.3, 5),
        |x, dx| {
            let (y, lin) = scaled_linearize(x, 1.3, 5);
            (y, lin(dx))
        },
        |x, ct: &(f64, Array1<f64>)| {
            let (y, pb) = scaled_pullback(x, 1.3, 5);
            (y, pb((ct.0, &ct.1)))
        },
    );
}

#[test]
#[should_panic(expected = "softplus_layer_linearize: tangent `d_x` has shape [2], expected [3]")]
fn a_tangent_of_the_wrong_shape_is_named() {
    let (a, x) = (Array2::zeros((2, 3)), Array1::zeros(3));
    let (_, lin) = softplus_layer_linearize(&a, &x);
    lin(&a, &Array1::zeros(2));
}

#[test]
#[should_panic(expected = "softplus_layer_pullback: cotangent `ct` has shape [3], expected [2]")]
fn a_cotangent_of_the_wrong_shape_is_named() {
    let (a, x) = (Array2::zeros((2, 3)), Array1::zeros(3));
    let (_, pb) = softplus_layer_pullback(&a, &x);
    pb(&Array1::zeros(3));
}
