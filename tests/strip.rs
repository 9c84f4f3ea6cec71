//! Strip-mined builds and reverse passes (`ad-macros/src/emit/strip.rs`):
//! a build whose inner loops have trip counts independent of its first index,
//! and the accumulation loop that is its reverse, run `LANES` (32) indices
//! at a time. Whatever the size (blocks and a remainder, fewer than a
//! block, none), the primal stays bit-identical to `f`, the derivatives
//! pass finite differences and the dot-product identity, and the results
//! are the same bits for 1, 2 and 4 threads; so for the interchanged
//! reverse of a (point, component) build (components outer, points
//! strip-mined inside). Bodies that break the legality rule (a branch on a
//! value of the index, a trip count depending on it) keep the scalar code
//! and are checked the same way.

mod common;
use common::*;
use linad::differentiable;
use linad::ndarray::{Array1, Array2};

/// One value per row of `x`, from a loop over its columns (strip-mined: the
/// build; its reverse adds into row `i` of `x̄` with no chain, so it stays
/// scalar).
#[differentiable]
fn row_norms(w: &Array1<f64>, x: &Array2<f64>, a: f64) -> Array1<f64> {
    let d = x.ncols();
    Array1::from_shape_fn(x.nrows(), |i| {
        let mut s = 0.0;
        for r in 0..d {
            let t = x[[i, r]] * w[r] - a;
            s += t * t;
        }
        (s + 1.0).sqrt()
    })
}

/// `row_norms` with respect to `w` and `a` alone: every update of its
/// reverse is at an index the lanes share (`w̄[r]`, `ā`), so the reverse is
/// strip-mined too (a block's lanes summed into each). The body is written
/// out: a call of `row_norms` would run `row_norms`'s own reverse.
#[differentiable(wrt(w, a))]
fn row_norms_wa(w: &Array1<f64>, x: &Array2<f64>, a: f64) -> Array1<f64> {
    let d = x.ncols();
    Array1::from_shape_fn(x.nrows(), |i| {
        let mut s = 0.0;
        for r in 0..d {
            let t = x[[i, r]] * w[r] - a;
            s += t * t;
        }
        (s + 1.0).sqrt()
    })
}

/// A mixture-like (point, component) build with a triangular inner loop
/// over invariant bounds, reduced by a log-sum-exp: the GMM shape.
#[differentiable(wrt(c, l, x))]
fn mixture(c: &Array2<f64>, l: &Array2<f64>, x: &Array2<f64>, scale: f64) -> f64 {
    let (n, k, d) = (x.nrows(), c.nrows(), x.ncols());
    let e = Array2::from_shape_fn((n, k), |(i, j)| {
        let mut sq = 0.0;
        for r in 0..d {
            let mut z = x[[i, r]] - c[[j, r]];
            for q in 0..r {
                z += l[[j, r * d + q]] * (x[[i, q]] - c[[j, q]]);
            }
            sq += z * z;
        }
        -scale * sq
    });
    let mut total = 0.0;
    for i in 0..n {
        let mut m = f64::NEG_INFINITY;
        for j in 0..k {
            m = m.max(e[[i, j]]);
        }
        let mut s = 0.0;
        for j in 0..k {
            s += (e[[i, j]] - m).exp();
        }
        total += m + s.ln();
    }
    total
}

/// [`mixture`] differentiated with respect to the components' parameters
/// only: the reverse of the (point, component) build adds into rows of `c`
/// and `l` chosen by the component, never by the point, so the simplifier
/// interchanges its loops (components outer, `ad_core_ir::simplify::interchange`)
/// and the emitter strip-mines the points inside each component, reading
/// `x` and the cotangent as columns (`ad-macros/src/emit/nest.rs`). The
/// body is `mixture`'s, written out: a call of `mixture` would run
/// `mixture`'s own reverse (with respect to `x` too, not interchanged).
#[differentiable(wrt(c, l))]
fn mixture_params(c: &Array2<f64>, l: &Array2<f64>, x: &Array2<f64>, scale: f64) -> f64 {
    let (n, k, d) = (x.nrows(), c.nrows(), x.ncols());
    let e = Array2::from_shape_fn((n, k), |(i, j)| {
        let mut sq = 0.0;
        for r in 0..d {
            let mut z = x[[i, r]] - c[[j, r]];
            for q in 0..r {
                z += l[[j, r * d + q]] * (x[[i, q]] - c[[j, q]]);
            }
            sq += z * z;
        }
        -scale * sq
    });
    let mut total = 0.0;
    for i in 0..n {
        let mut m = f64::NEG_INFINITY;
        for j in 0..k {
            m = m.max(e[[i, j]]);
        }
        let mut s = 0.0;
        for j in 0..k {
            s += (e[[i, j]] - m).exp();
        }
        total += m + s.ln();
    }
    total
}

/// [`mixture_params`] differentiated with respect to `scale` too: every
/// component adds into its cotangent, so the interchanged nest's components
/// run in chunks of private accumulators (`accumulate_chunked_by`) instead
/// of on their own rows (`accumulate_rows`).
#[differentiable(wrt(c, l, scale))]
fn mixture_scaled(c: &Array2<f64>, l: &Array2<f64>, x: &Array2<f64>, scale: f64) -> f64 {
    let (n, k, d) = (x.nrows(), c.nrows(), x.ncols());
    let e = Array2::from_shape_fn((n, k), |(i, j)| {
        let mut sq = 0.0;
        for r in 0..d {
            let mut z = x[[i, r]] - c[[j, r]];
            for q in 0..r {
                z += l[[j, r * d + q]] * (x[[i, q]] - c[[j, q]]);
            }
            sq += z * z;
        }
        -scale * sq
    });
    let mut total = 0.0;
    for i in 0..n {
        let mut m = f64::NEG_INFINITY;
        for j in 0..k {
            m = m.max(e[[i, j]]);
        }
        let mut s = 0.0;
        for j in 0..k {
            s += (e[[i, j]] - m).exp();
        }
        total += m + s.ln();
    }
    total
}

/// A loop reducing into a scalar, with an inner loop: its reverse threads
/// the output's cotangent through every iteration, which the simplifier
/// makes a capture, so the reverse is a (reversed) accumulation loop,
/// strip-mined.
#[differentiable]
fn nested_sum(w: &Array1<f64>, x: &Array2<f64>) -> f64 {
    let mut s = 0.0;
    for i in 0..x.nrows() {
        let mut t = 0.0;
        for r in 0..x.ncols() {
            t += x[[i, r]] * w[r];
        }
        s += t.tanh() * x[[i, 0]];
    }
    s
}

/// A loss over data points with scalar parameters: the reverse accumulates
/// `a`'s and `b`'s cotangents in scalar state (`ladd`), strip-mined with
/// the rest.
#[differentiable]
fn fit(a: f64, b: f64, w: &Array1<f64>, x: &Array2<f64>) -> f64 {
    let mut s = 0.0;
    for i in 0..x.nrows() {
        let mut t = b;
        for r in 0..x.ncols() {
            t += w[r] * x[[i, r]];
        }
        let e = (a * t).tanh() - x[[i, 0]];
        s += e * e;
    }
    s
}

/// A branch on a value read at the build's index: not strip-mined.
#[differentiable]
fn varying_branch(w: &Array1<f64>, x: &Array2<f64>) -> Array1<f64> {
    Array1::from_shape_fn(x.nrows(), |i| {
        let mut s = 0.0;
        for r in 0..x.ncols() {
            if x[[i, r]] > 0.0 {
                s += x[[i, r]] * w[r];
            } else {
                s -= 0.5 * w[r] * w[r];
            }
        }
        s
    })
}

/// A trip count that depends on the index: not strip-mined.
#[differentiable]
fn varying_trip(x: &Array1<f64>) -> Array1<f64> {
    Array1::from_shape_fn(x.len(), |i| {
        let mut s = 0.0;
        for q in 0..i {
            s += x[q] * x[i];
        }
        s + x[i]
    })
}

/// Linear blend skinning as in ADBench's hand model, differentiated with
/// respect to the per-bone transforms `t` (`nb x 12`, three rows of four):
/// the linear map's build (`skin_linearize`) reads the transforms' tangent
/// at indices of the bone loop, not of the vertex, and is strip-mined like
/// the primal's build.
#[differentiable(wrt(t))]
fn skin(t: &Array2<f64>, w: &Array2<f64>, rest: &Array2<f64>) -> Array2<f64> {
    let nb = t.nrows();
    Array2::from_shape_fn((rest.nrows(), 3), |(v, r)| {
        let mut s = 0.0;
        for b in 0..nb {
            s += w[[v, b]]
                * (t[[b, 4 * r]] * rest[[v, 0]]
                    + t[[b, 4 * r + 1]] * rest[[v, 1]]
                    + t[[b, 4 * r + 2]] * rest[[v, 2]]
                    + t[[b, 4 * r + 3]]);
        }
        s
    })
}

/// A row of `w` times `x`, through `tanh`: a build reading whole rows of
/// `w` once each. With rows longer than a tile holds
/// (`ad_runtime::TILE_MAX_COLUMNS`) it runs the scalar code, else its lane
/// closure (`ad_runtime::lane_rows_fit`, checked at run time).
#[differentiable]
fn row_dots(w: &Array2<f64>, x: &Array1<f64>) -> Array1<f64> {
    let m = x.len();
    Array1::from_shape_fn(w.nrows(), |i| {
        let mut s = 0.0;
        for j in 0..m {
            s += w[[i, j]] * x[j];
        }
        s.tanh()
    })
}

/// The strip-mining width (`ad_runtime::LANES`).
const P: usize = linad::__private::ad_runtime::LANES;

/// No block, one block and a remainder, several blocks.
const SIZES: [usize; 7] = [0, 1, 7, P - 1, P, P + 1, 2 * P + 7];

/// The strip-mined linear map gives `f_jvp`'s tangent (a scalar build) bit
/// for bit, at every size and on 1, 2 and 4 threads.
#[test]
fn linear_builds_every_size() {
    let mut rng = rng("strip_skin");
    for n in SIZES {
        let t = rng.array2(5, 12, -1.0, 1.0);
        let (w, rest) = (rng.array2(n, 5, 0.0, 1.0), rng.array2(n, 3, -1.0, 1.0));
        let dt = rng.array2(5, 12, -1.0, 1.0);
        let (y, dy) = skin_jvp(&t, &w, &rest, &dt);
        let (y2, lin) = skin_linearize(&t, &w, &rest);
        assert_same_bits(&y, &y2);
        assert_same_bits(&lin(&dt), &dy);
        for threads in [1, 2, 4] {
            assert_same_bits(&in_pool(threads, || lin(&dt)), &dy);
        }
        check_derivatives(
            &t,
            |t| skin(t, &w, &rest),
            |t, dt| skin_jvp(t, &w, &rest, dt),
            |t, ct| skin_vjp(t, &w, &rest, ct),
        );
    }
}

/// The reads a strip-mined loop makes at the block's indices alone
/// (`rest[v, c]` in the loop over bones) are made once before the loop,
/// guarded by its trip count: with no bones the loop reads nothing, so a
/// `rest` of two columns (where `rest[v, 2]` is out of range) fails in none
/// of the derivatives, as it does not fail in `f`; with bones, the same
/// read fails in all of them.
#[test]
fn reads_hoisted_out_of_a_loop_that_never_runs_never_fail() {
    let mut rng = rng("strip_skin_no_bones");
    for n in [P, 2 * P + 7] {
        let t = Array2::<f64>::zeros((0, 12));
        let (w, rest) = (rng.array2(n, 0, 0.0, 1.0), rng.array2(n, 2, -1.0, 1.0));
        let y = skin(&t, &w, &rest);
        assert_eq!(y, Array2::zeros((n, 3)));
        let (y2, dy) = skin_jvp(&t, &w, &rest, &t);
        let (y3, lin) = skin_linearize(&t, &w, &rest);
        let (y4, dt) = skin_vjp(&t, &w, &rest, &Array2::ones((n, 3)));
        for z in [&y2, &dy, &y3, &lin(&t), &y4] {
            assert_same_bits(z, &y);
        }
        assert_eq!(dt.shape(), &[0, 12]);
        // One bone: `rest[v, 2]` is read, and fails, in f and its derivatives.
        let t1 = rng.array2(1, 12, -1.0, 1.0);
        let w1 = rng.array2(n, 1, 0.0, 1.0);
        let fails =
            |f: &dyn Fn()| std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).is_err();
        assert!(fails(&|| drop(skin(&t1, &w1, &rest))));
        assert!(fails(&|| drop(skin_jvp(&t1, &w1, &rest, &t1))));
        assert!(fails(&|| drop(skin_linearize(&t1, &w1, &rest).1(&t1))));
        assert!(fails(&|| drop(skin_vjp(
            &t1,
            &w1,
            &rest,
            &Array2::ones((n, 3))
        ))));
    }
}

/// Rows as long as a tile holds and one longer (the build's lanes, then
/// its scalar code): the same primal bits as `f`, the linear map's tangent
/// the same bits as `f_jvp`'s on 1, 2 and 4 threads, derivatives checked.
#[test]
fn long_rows_every_size() {
    let mut rng = rng("strip_long_rows");
    let tile = linad::__private::ad_runtime::TILE_MAX_COLUMNS;
    for n in SIZES {
        for m in [tile, tile + 1] {
            let p = (rng.array2(n, m, -0.1, 0.1), rng.array1(m, -1.0, 1.0));
            let (dw, dx) = (rng.array2(n, m, -1.0, 1.0), rng.array1(m, -1.0, 1.0));
            let y = row_dots(&p.0, &p.1);
            let (y2, dy) = row_dots_jvp(&p.0, &p.1, &dw, &dx);
            let (y3, lin) = row_dots_linearize(&p.0, &p.1);
            assert_same_bits(&y, &y2);
            assert_same_bits(&y, &y3);
            for threads in [1, 2, 4] {
                assert_same_bits(&in_pool(threads, || lin(&dw, &dx)), &dy);
            }
            check_derivatives(
                &p,
                |(w, x)| row_dots(w, x),
                |(w, x), (dw, dx)| row_dots_jvp(w, x, dw, dx),
                |(w, x), ct| row_dots_vjp(w, x, ct),
            );
        }
    }
}

#[test]
fn row_norms_every_size() {
    let mut rng = rng("strip_row_norms");
    for n in SIZES {
        let p = (rng.array1(3, 0.5, 1.5), rng.array2(n, 3, -1.0, 1.0), 0.25);
        check_derivatives(
            &p,
            |(w, x, a)| row_norms(w, x, *a),
            |(w, x, a), (dw, dx, da)| row_norms_jvp(w, x, *a, dw, dx, *da),
            |(w, x, a), ct| row_norms_vjp(w, x, *a, ct),
        );
    }
}

#[test]
fn row_norms_wa_every_size() {
    let mut rng = rng("strip_row_norms_wa");
    for n in SIZES {
        let x = rng.array2(n, 3, -1.0, 1.0);
        let p = (rng.array1(3, 0.5, 1.5), 0.25);
        check_derivatives(
            &p,
            |(w, a)| row_norms_wa(w, &x, *a),
            |(w, a), (dw, da)| row_norms_wa_jvp(w, &x, *a, dw, *da),
            |(w, a), ct| row_norms_wa_vjp(w, &x, *a, ct),
        );
        for threads in [1, 2, 4] {
            let ct = Array1::from_elem(n, 0.5);
            assert_same_bits(
                &in_pool(threads, || row_norms_wa_vjp(&p.0, &x, p.1, &ct).1 .0),
                &row_norms_wa_vjp(&p.0, &x, p.1, &ct).1 .0,
            );
        }
    }
}

#[test]
fn mixture_every_size() {
    let mut rng = rng("strip_mixture");
    for n in SIZES {
        let (k, d) = (3, 4);
        let p = (
            rng.array2(k, d, -1.0, 1.0),
            rng.array2(k, d * d, -0.3, 0.3),
            rng.array2(n, d, -1.0, 1.0),
        );
        check_derivatives(
            &p,
            |(c, l, x)| mixture(c, l, x, 0.7),
            |(c, l, x), (dc, dl, dx)| mixture_jvp(c, l, x, 0.7, dc, dl, dx),
            |(c, l, x), ct| mixture_vjp(c, l, x, 0.7, *ct),
        );
    }
}

/// The interchanged nest (components outer, blocks of points inner) at
/// every number of points and of components (one component; fewer than 8;
/// more than the chunks), against finite differences, the dot-product
/// identity and `f_vjp` of the same function with respect to all inputs
/// (not interchanged: its reverse adds into rows of `x` too).
#[test]
fn interchanged_mixture_every_size() {
    let mut rng = rng("strip_mixture_params");
    for n in SIZES {
        for k in [1, 3, 20] {
            let d = 4;
            let p = (rng.array2(k, d, -1.0, 1.0), rng.array2(k, d * d, -0.3, 0.3));
            let x = rng.array2(n, d, -1.0, 1.0);
            check_derivatives(
                &p,
                |(c, l)| mixture_params(c, l, &x, 0.7),
                |(c, l), (dc, dl)| mixture_params_jvp(c, l, &x, 0.7, dc, dl),
                |(c, l), ct| mixture_params_vjp(c, l, &x, 0.7, *ct),
            );
            let (f, (gc, gl)) = mixture_params_vjp(&p.0, &p.1, &x, 0.7, 1.0);
            let (f2, (gc2, gl2, _)) = mixture_vjp(&p.0, &p.1, &x, 0.7, 1.0);
            assert_same_bits(&f, &f2);
            assert_all_close(gc.as_slice().unwrap(), gc2.as_slice().unwrap(), 1e-12);
            assert_all_close(gl.as_slice().unwrap(), gl2.as_slice().unwrap(), 1e-12);
            // With the scalar too: private accumulators per chunk.
            let ps = (p.0.clone(), p.1.clone(), 0.7);
            check_derivatives(
                &ps,
                |(c, l, s)| mixture_scaled(c, l, &x, *s),
                |(c, l, s), (dc, dl, ds)| mixture_scaled_jvp(c, l, &x, *s, dc, dl, *ds),
                |(c, l, s), ct| mixture_scaled_vjp(c, l, &x, *s, *ct),
            );
            let (f3, (gc3, gl3, _)) = mixture_scaled_vjp(&p.0, &p.1, &x, 0.7, 1.0);
            assert_same_bits(&f, &f3);
            assert_all_close(gc.as_slice().unwrap(), gc3.as_slice().unwrap(), 1e-12);
            assert_all_close(gl.as_slice().unwrap(), gl3.as_slice().unwrap(), 1e-12);
        }
    }
}

#[test]
fn nested_sum_every_size() {
    let mut rng = rng("strip_nested_sum");
    for n in SIZES {
        let p = (rng.array1(3, 0.5, 1.5), rng.array2(n, 3, -1.0, 1.0));
        check_derivatives(
            &p,
            |(w, x)| nested_sum(w, x),
            |(w, x), (dw, dx)| nested_sum_jvp(w, x, dw, dx),
            |(w, x), ct| nested_sum_vjp(w, x, *ct),
        );
    }
}

#[test]
fn fit_every_size() {
    let mut rng = rng("strip_fit");
    for n in SIZES {
        let p = (
            0.7,
            -0.2,
            rng.array1(3, 0.5, 1.5),
            rng.array2(n, 3, -1.0, 1.0),
        );
        check_derivatives(
            &p,
            |(a, b, w, x)| fit(*a, *b, w, x),
            |(a, b, w, x), (da, db, dw, dx)| fit_jvp(*a, *b, w, x, *da, *db, dw, dx),
            |(a, b, w, x), ct| fit_vjp(*a, *b, w, x, *ct),
        );
    }
}

#[test]
fn illegal_bodies_stay_scalar_and_right() {
    let mut rng = rng("strip_illegal");
    for n in SIZES {
        let p = (rng.array1(4, 0.5, 1.5), rng.array2(n, 4, -1.0, 1.0));
        check_derivatives(
            &p,
            |(w, x)| varying_branch(w, x),
            |(w, x), (dw, dx)| varying_branch_jvp(w, x, dw, dx),
            |(w, x), ct| varying_branch_vjp(w, x, ct),
        );
        let x = rng.array1(n, -1.0, 1.0);
        check_derivatives(&x, varying_trip, varying_trip_jvp, varying_trip_vjp);
    }
}

#[test]
fn strip_mined_results_are_bit_identical_for_1_2_and_4_threads() {
    let mut rng = rng("strip_threads");
    let (c, l, x) = (
        rng.array2(5, 3, -1.0, 1.0),
        rng.array2(5, 9, -0.3, 0.3),
        rng.array2(203, 3, -1.0, 1.0),
    );
    let (w, a) = (rng.array1(3, 0.5, 1.5), 0.1);
    let ct = rng.array1(203, -1.0, 1.0);
    let run = || {
        let (f, (gc, gl, gx)) = mixture_vjp(&c, &l, &x, 0.7, 1.0);
        let (y, (gw, gx2, ga)) = row_norms_vjp(&w, &x, a, &ct);
        let (s, (gw2, gx3)) = nested_sum_vjp(&w, &x, 1.0);
        let (e, (fa, fb, fw, fx)) = fit_vjp(0.7, -0.2, &w, &x, 1.0);
        let (f2, (pc, pl)) = mixture_params_vjp(&c, &l, &x, 0.7, 1.0);
        let (f3, (sc, sl, ss)) = mixture_scaled_vjp(&c, &l, &x, 0.7, 1.0);
        let mut v = vec![f, ga, s, e, fa, fb, f2, f3, ss];
        v.extend(pc.iter().chain(&pl).chain(&sc).chain(&sl));
        v.extend(gw2.iter().chain(&gx3).chain(&fw).chain(&fx));
        v.extend(
            gc.iter()
                .chain(&gl)
                .chain(&gx)
                .chain(&y)
                .chain(&gw)
                .chain(&gx2),
        );
        v.into_iter().map(f64::to_bits).collect::<Vec<u64>>()
    };
    let one = in_pool(1, run);
    for threads in [2, 4] {
        assert_eq!(one, in_pool(threads, run), "{threads} threads against 1");
    }
    assert_eq!(one[0], mixture(&c, &l, &x, 0.7).to_bits());
}
