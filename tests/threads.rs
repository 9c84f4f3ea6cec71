//! Derivatives are bit-identical for any number of threads: the reverse of a
//! build runs as an accumulation loop cut into chunks fixed by the sizes
//! (`ad_runtime::accumulate_chunked`), in parallel when large, and every
//! other kernel combines partial results in a fixed order.

mod common;
use common::*;
use linad::differentiable;
use linad::ndarray::{Array1, Array2};

#[path = "../examples/gmm.rs"]
#[allow(dead_code)]
mod gmm;

fn bits(xs: impl IntoIterator<Item = f64>) -> Vec<u64> {
    xs.into_iter().map(f64::to_bits).collect()
}

/// GMM parameters and points (203 points, 5 components, 4 dimensions)
/// drawn from the stream `name`: `(alphas, means, icf, x)`.
fn gmm_inputs(name: &str) -> (Array1<f64>, Array2<f64>, Array2<f64>, Array2<f64>) {
    let mut rng = rng(name);
    let (n, k, d) = (203, 5, 4);
    let alphas = rng.array1(k, -1.0, 1.0);
    let means = rng.array2(k, d, -1.0, 1.0);
    let icf = rng.array2(k, d * (d + 1) / 2, -0.5, 0.5);
    let x = rng.array2(n, d, -1.0, 1.0);
    (alphas, means, icf, x)
}

/// The bits `run` gives in a pool of 1 thread, asserted equal to those of
/// pools of 2 and 4.
fn same_bits_for_1_2_and_4_threads(run: impl Fn() -> Vec<u64> + Send + Sync) -> Vec<u64> {
    let one = in_pool(1, &run);
    for threads in [2, 4] {
        assert_eq!(one, in_pool(threads, &run), "{threads} threads against 1");
    }
    one
}

/// A transposed build over (point, component) accumulating into
/// per-component rows, as in a mixture model.
#[differentiable(wrt(w, c))]
fn weighted_distances(w: &Array1<f64>, c: &Array2<f64>, x: &Array2<f64>) -> f64 {
    let n = x.nrows();
    let k = c.nrows();
    let d = x.ncols();
    let e = Array2::from_shape_fn((n, k), |(i, j)| {
        let mut s = 0.0;
        for r in 0..d {
            let t = x[[i, r]] - c[[j, r]];
            s += t * t;
        }
        w[j] * (-s).exp()
    });
    e.sum()
}

#[test]
fn gmm_vjp_is_bit_identical_for_1_2_and_4_threads() {
    let (alphas, means, icf, x) = gmm_inputs("threads_gmm");
    same_bits_for_1_2_and_4_threads(|| {
        let (f, (ga, gm, gi)) = gmm::gmm_objective_vjp(&alphas, &means, &icf, &x, 1.0, 0, 1.0);
        bits(std::iter::once(f).chain(ga).chain(gm).chain(gi))
    });
    // And the gradient is right (against the hand-written one).
    let input = gmm::GmmInput {
        alphas: alphas.clone(),
        means: means.clone(),
        icf: icf.clone(),
        x: x.clone(),
        gamma: 1.0,
        m: 0,
    };
    let (_, g) = input.gradient();
    let (_, h) = input.gradient_hand();
    for (a, b) in g.iter().zip(&h) {
        assert!(gmm::rel_err(*a, *b) < 1e-9, "{a} vs {b}");
    }
}

/// The NumPy-style objective (whole-array operations: broadcasts, matrix
/// products, axis sums of narrow arrays, multi-output maps, a `map_axis`
/// log-sum-exp) with every kernel that can split going parallel: the same
/// bits for 1, 2 and 4 threads, the primal is `f`'s, and the gradient is
/// the scalar-loop objective's.
#[test]
fn gmm_numpy_vjp_is_bit_identical_for_1_2_and_4_threads() {
    let (alphas, means, icf, x) = gmm_inputs("threads_gmm_numpy");
    let one = same_bits_for_1_2_and_4_threads(|| {
        let (f, (ga, gm, gi)) =
            gmm::gmm_objective_numpy_vjp(&alphas, &means, &icf, &x, 1.0, 0, 1.0);
        bits(std::iter::once(f).chain(ga).chain(gm).chain(gi))
    });
    let f = gmm::gmm_objective_numpy(&alphas, &means, &icf, &x, 1.0, 0);
    assert_eq!(one[0], f.to_bits(), "the primal of the vjp is f's");
    let (_, (ga, gm, gi)) = gmm::gmm_objective_vjp(&alphas, &means, &icf, &x, 1.0, 0, 1.0);
    let scalar: Vec<f64> = ga.into_iter().chain(gm).chain(gi).collect();
    for (a, b) in one[1..].iter().map(|b| f64::from_bits(*b)).zip(&scalar) {
        assert!(gmm::rel_err(a, *b) < 1e-9, "{a} vs {b}");
    }
}

#[test]
fn transposed_build_is_bit_identical_for_1_2_and_4_threads() {
    let mut rng = rng("threads_build");
    let (w, c, x) = (
        rng.array1(6, 0.5, 1.5),
        rng.array2(6, 3, -1.0, 1.0),
        rng.array2(301, 3, -1.0, 1.0),
    );
    same_bits_for_1_2_and_4_threads(|| {
        let (f, (gw, gc)) = weighted_distances_vjp(&w, &c, &x, 1.0);
        bits(std::iter::once(f).chain(gw).chain(gc))
    });
    let small = (rng.array1(3, 0.5, 1.5), rng.array2(3, 2, -1.0, 1.0));
    let xs = rng.array2(9, 2, -1.0, 1.0);
    check_derivatives(
        &small,
        |(w, c)| weighted_distances(w, c, &xs),
        |(w, c), (dw, dc)| weighted_distances_jvp(w, c, &xs, dw, dc),
        |(w, c), ct| weighted_distances_vjp(w, c, &xs, *ct),
    );
}

/// Builds and maps with several scalar results per element (the value and
/// its residuals), of rank 1 and 2: written in one pass, in blocks of rows
/// when parallel.
#[differentiable]
fn several_outputs(x: &Array1<f64>, a: &Array2<f64>) -> f64 {
    let s = Array1::from_shape_fn(x.len(), |i| (x[i] * 1.3).sin() * x[i].exp());
    let t = Array2::from_shape_fn(a.dim(), |(i, j)| (a[[i, j]] + x[j % x.len()]).tanh());
    let m = x.mapv(|v| (v * v + 1.0).ln() * v.cos());
    s.sum() + t.sum() * 0.5 + m.sum()
}

#[test]
fn multi_output_kernels_are_bit_identical_for_1_2_and_4_threads() {
    let mut rng = rng("several_outputs");
    let x = rng.array1(37, -1.0, 1.0);
    let a = rng.array2(29, 11, -1.0, 1.0);
    let run = || {
        let (y, (gx, ga)) = several_outputs_vjp(&x, &a, 1.0);
        let (y2, dy) = several_outputs_jvp(&x, &a, &x, &a);
        let mut v = vec![y, y2, dy];
        v.extend(gx.iter().copied());
        v.extend(ga.iter().copied());
        bits(v)
    };
    let one = in_pool(1, run);
    for threads in [2, 4] {
        assert_eq!(in_pool(threads, run), one, "{threads} threads");
    }
    // And the primal is f's, bit for bit.
    assert_eq!(one[0], several_outputs(&x, &a).to_bits());
    check_derivatives(
        &(x.clone(), a.clone()),
        |(x, a)| several_outputs(x, a),
        |(x, a), (dx, da)| several_outputs_jvp(x, a, dx, da),
        |(x, a), ct| several_outputs_vjp(x, a, *ct),
    );
}
