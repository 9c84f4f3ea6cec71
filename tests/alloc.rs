//! Reverse mode of element writes `a[i] = ..` / `a[i] += ..` in a loop makes
//! a number of allocations independent of the loop length (issue 8,
//! defect 10: the cotangent array was copied on every write), and so does
//! forward mode of a loop reading one row of an array and writing the next;
//! whole-array code called again reuses its temporaries from the per-thread
//! pool (and hands back only what it may). Counted with a global
//! allocator, per thread.
#![allow(clippy::needless_range_loop)]

mod common;
use common::*;
use linad::differentiable;
use linad::ndarray::{s, Array1, Array2, Axis};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

struct Counting;

thread_local! {
    static ALLOCS: Cell<usize> = const { Cell::new(0) };
    static BYTES: Cell<usize> = const { Cell::new(0) };
    static LARGE: Cell<usize> = const { Cell::new(0) };
}

/// Allocations of at least this many bytes count as large.
const LARGE_BYTES: usize = 1 << 16;

fn count(bytes: usize) {
    let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
    let _ = BYTES.try_with(|c| c.set(c.get() + bytes));
    if bytes >= LARGE_BYTES {
        let _ = LARGE.try_with(|c| c.set(c.get() + 1));
    }
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new: usize) -> *mut u8 {
        count(new);
        unsafe { System.realloc(ptr, layout, new) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Allocations made by `f` on this thread: (how many, bytes).
fn allocations(f: impl FnOnce()) -> (usize, usize) {
    let before = (ALLOCS.with(Cell::get), BYTES.with(Cell::get));
    f();
    (
        ALLOCS.with(Cell::get) - before.0,
        BYTES.with(Cell::get) - before.1,
    )
}

#[differentiable]
fn writes(x: &Array1<f64>) -> f64 {
    let n = x.len();
    let mut a: Array1<f64> = Array1::zeros(n);
    for i in 0..n {
        a[i] = x[i].sin() * x[i];
    }
    a.sum()
}

#[differentiable]
fn accumulating_writes(x: &Array1<f64>, m: &Array2<f64>) -> f64 {
    let n = x.len();
    let mut a: Array1<f64> = Array1::zeros(n);
    let mut b: Array2<f64> = Array2::zeros((n, 2));
    for i in 0..n {
        a[i] += x[i] * x[i];
        b[[i, 1]] = x[i].cos() * m[[i, 0]];
        b[[i, 0]] += m[[i, 1]] * a[i];
    }
    a.sum() + (&b * &b).sum()
}

#[differentiable]
fn nested_writes(x: &Array1<f64>) -> f64 {
    let n = x.len();
    let mut g: Array2<f64> = Array2::zeros((n, 3));
    for i in 0..n {
        for j in 0..3 {
            g[[i, j]] = (x[i] * (j as f64 + 1.0)).sin();
        }
    }
    (&g * &g).sum()
}

#[test]
fn element_writes_allocate_independently_of_n() {
    // Correct derivatives first.
    let mut rng = rng("element_writes");
    let x = rng.array1(7, -1.0, 1.0);
    check_derivatives(&x, writes, writes_jvp, |x, ct| writes_vjp(x, *ct));
    let xm = (rng.array1(5, -1.0, 1.0), rng.array2(5, 2, -1.0, 1.0));
    check_derivatives(
        &xm,
        |(x, m)| accumulating_writes(x, m),
        |(x, m), (dx, dm)| accumulating_writes_jvp(x, m, dx, dm),
        |(x, m), ct| accumulating_writes_vjp(x, m, *ct),
    );
    check_derivatives(&x, nested_writes, nested_writes_jvp, |x, ct| {
        nested_writes_vjp(x, *ct)
    });
    // Below the parallel threshold everything runs on this thread. Counted:
    // the second of two equal calls (the first one fills the pool).
    let measure = |n: usize| {
        let x = Array1::from_shape_fn(n, |i| (i as f64 * 0.37).sin());
        let m = Array2::from_shape_fn((n, 2), |(i, j)| (i as f64 - j as f64 * 0.5).cos());
        writes_vjp(&x, 1.0);
        accumulating_writes_vjp(&x, &m, 1.0);
        nested_writes_vjp(&x, 1.0);
        let a = allocations(|| {
            writes_vjp(&x, 1.0);
        });
        let b = allocations(|| {
            accumulating_writes_vjp(&x, &m, 1.0);
        });
        let c = allocations(|| {
            nested_writes_vjp(&x, 1.0);
        });
        (a, b, c)
    };
    let (small, large) = (measure(100), measure(10_000));
    // One loop: no more allocations at n = 10000 than at n = 100.
    assert!(
        large.0 .0 <= small.0 .0 && large.1 .0 <= small.1 .0,
        "allocations of one f_vjp call at n = 100 and n = 10000 (writes, accumulating_writes): {:?} and {:?}",
        (small.0 .0, small.1 .0),
        (large.0 .0, large.1 .0),
    );
    // Nested loops: the reverse pass recomputes a small residual stack per
    // outer iteration (from the pool: at n = 100 nothing is allocated at
    // all), so the bytes allocated grow like n, a few values per element
    // (the returned cotangent among them), not like n² (800 MB at n =
    // 10000).
    assert!(
        large.2 .1 <= 8 * 8 * 10_000 && large.2 .1 < 2 * 100 * small.2 .1.max(8 * 8 * 100),
        "bytes allocated by nested_writes_vjp: {} at n = 100, {} at n = 10000",
        small.2 .1,
        large.2 .1
    );
}

/// An array written in one branch of an `if` in a loop body, at a counter
/// (what a `Vec` grown by `push` becomes): the `else` branch passes it on
/// unchanged, so the `then` branch may update it in place.
#[differentiable]
fn writes_in_a_branch(x: &Array1<f64>, a: f64) -> f64 {
    let mut buf = Array1::zeros(x.len());
    let mut k = 0;
    for i in 0..x.len() {
        if x[i] > 0.0 {
            buf[k] = (x[i] * a).sin();
            k += 1;
        }
    }
    let mut v = Vec::new();
    for i in 0..x.len() {
        if x[i] < 0.5 {
            v.push(x[i] * buf[i]);
        }
    }
    buf.iter().map(|t| t * t).sum::<f64>() + v.iter().sum::<f64>()
}

#[test]
fn writes_in_a_branch_are_in_place() {
    let mut rng = rng("writes_in_a_branch");
    let xa = (rng.array1(9, -1.0, 1.0), 0.7);
    check_derivatives(
        &xa,
        |(x, a)| writes_in_a_branch(x, *a),
        |(x, a), (dx, da)| writes_in_a_branch_jvp(x, *a, dx, *da),
        |(x, a), ct| writes_in_a_branch_vjp(x, *a, *ct),
    );
    let bytes = |n: usize| {
        let x = Array1::from_shape_fn(n, |i| (i as f64 * 0.37).sin());
        allocations(|| {
            writes_in_a_branch_vjp(&x, 0.7, 1.0);
        })
        .1
    };
    // A copy of the array per iteration would allocate like n² (100x more
    // bytes per 10x more elements); in place it is like n.
    let (small, large) = (bytes(1_000), bytes(10_000));
    assert!(
        large < 20 * small,
        "bytes allocated by one f_vjp call: {small} at n = 1000, {large} at n = 10000"
    );
}

#[path = "../examples/gmm.rs"]
#[allow(dead_code)]
mod gmm;

/// Allocations of one `gmm_objective_vjp` call on `n` points, `k` components
/// in `d` dimensions (random inputs), counted on this thread (run it in a
/// one-thread pool, so that every kernel runs here), in the steady state: the
/// second of two equal calls, when the per-thread buffer pool holds what the
/// first one gave back (residual stacks, zero arrays).
fn gmm_vjp_allocations(n: usize, k: usize, d: usize) -> usize {
    vjp_allocations(n, k, d, |a, m, q, x| {
        gmm::gmm_objective_vjp(a, m, q, x, 1.0, 0, 1.0);
    })
}

/// Allocations of the second of two equal calls of `vjp` (a GMM objective's
/// `f_vjp` on `alphas, means, icf, x`) on random inputs of these sizes.
fn vjp_allocations(
    n: usize,
    k: usize,
    d: usize,
    vjp: impl Fn(&Array1<f64>, &Array2<f64>, &Array2<f64>, &Array2<f64>),
) -> usize {
    let mut rng = rng("gmm_alloc");
    let alphas = rng.array1(k, -1.0, 1.0);
    let means = rng.array2(k, d, -1.0, 1.0);
    let icf = rng.array2(k, d * (d + 1) / 2, -0.5, 0.5);
    let x = rng.array2(n, d, -1.0, 1.0);
    vjp(&alphas, &means, &icf, &x);
    allocations(|| vjp(&alphas, &means, &icf, &x)).0
}

#[test]
fn gmm_vjp_allocations_do_not_grow_with_n_k_d() {
    rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap()
        .install(gmm_allocations_in_one_thread);
}

fn gmm_allocations_in_one_thread() {
    // Warm the per-thread buffer pools, then count one call at a time.
    gmm_vjp_allocations(400, 40, 9);
    // Not with n: no more for 10 times the points, up to which pooled
    // buffer fits which value (the pool hands out the smallest that fits,
    // and buffers that become results leave it): at most 4 more (n = 400
    // makes arrays of under 4 KiB, which the pool keeps apart from the
    // large ones; at n = 4000 they are large and compete for its slots).
    for (k, d) in [(2, 2), (12, 7), (40, 3)] {
        let (small, large) = (
            gmm_vjp_allocations(400, k, d),
            gmm_vjp_allocations(4000, k, d),
        );
        assert!(
            large <= small + 4,
            "allocations of one gmm_objective_vjp call at n = 400 and 4000 (k = {k}, d = {d}): {small} and {large}"
        );
    }
    // Not with k or d either, up to the private accumulators of chunked
    // reverse builds (at most MAX_CHUNKS per accumulator, whatever the sizes).
    let mut counts = vec![];
    for n in [4, 40, 400] {
        for k in [2, 12, 40] {
            for d in [2, 7] {
                counts.push(((n, k, d), gmm_vjp_allocations(n, k, d)));
            }
        }
    }
    let max = counts.iter().map(|c| c.1).max().unwrap();
    let min = counts.iter().map(|c| c.1).min().unwrap();
    let chunks = linad::__private::ad_runtime::MAX_CHUNKS;
    assert!(
        max <= min + 8 * chunks,
        "allocations per call (n, k, d): {counts:?}"
    );
}

/// An elementwise objective written as a build (the reverse adds into one
/// gradient entry per element).
#[differentiable]
fn elementwise(x: &Array1<f64>) -> f64 {
    let y = Array1::from_shape_fn(x.len() / 2, |i| {
        let a = x[2 * i];
        let t = a * a - x[2 * i + 1];
        100.0 * t * t + (a - 1.0) * (a - 1.0)
    });
    y.sum()
}

/// The reverse of an elementwise build over 100,000 elements makes a few
/// arrays of the input's size, not one private gradient per chunk (the
/// chunks' private accumulators hold at most 1/8 of the loop's work: here
/// one chunk; it was 16, 66 times the primal's time).
#[test]
fn elementwise_reverse_allocates_a_few_gradients_not_one_per_chunk() {
    let x = Array1::from_shape_fn(100_000, |i| (i as f64 * 1e-3).sin());
    // In a pool of one thread (every kernel sequential, on the thread that
    // counts), leaving the global parallel threshold alone: the other tests
    // of this file run concurrently.
    let one = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    let (_, bytes) = one.install(|| {
        allocations(|| {
            let _ = elementwise_vjp(&x, 1.0);
        })
    });
    let grad = 8 * x.len();
    assert!(bytes < 6 * grad, "{bytes} bytes for a gradient of {grad}");
    let (f, _) = elementwise_vjp(&x, 1.0);
    assert_eq!(f.to_bits(), elementwise(&x).to_bits());
}

/// The extended Rosenbrock function in ndarray's whole-array style (as in
/// `examples/array_style.rs`), with a broadcast and an axis sum besides.
#[allow(clippy::op_ref)]
#[differentiable]
fn array_style(x: &Array1<f64>, m: &Array2<f64>) -> f64 {
    let a = x.slice(s![..;2]);
    let b = x.slice(s![1..;2]);
    let t = &a * &a - &b;
    let u = a.mapv(|v| v - 1.0);
    let rows = (m * &a).sum_axis(Axis(0));
    (100.0 * &t * &t + &u * &u).sum() + rows.mapv(f64::sin).sum()
}

/// Whole-array code allocates one array per operation, forward and
/// reverse; called again, its derivative takes those buffers from the
/// per-thread pool, where the previous call's temporaries went back after
/// their last use, instead of from the system (which glibc would have to
/// fault in again). Counted: large allocations (64 KiB and more) of the
/// second of two equal `f_vjp` calls, in a one-thread pool.
#[test]
fn array_style_reverse_reuses_its_temporaries() {
    let n = 40_000;
    let x = Array1::from_shape_fn(n, |i| (i as f64 * 1e-3).sin());
    let m = Array2::from_shape_fn((3, n / 2), |(i, j)| ((i + j) as f64 * 0.1).cos());
    let mut rng = rng("array_style");
    let (xs, ms) = (rng.array1(8, -1.0, 1.0), rng.array2(3, 4, -1.0, 1.0));
    check_derivatives(
        &(xs, ms),
        |(x, m)| array_style(x, m),
        |(x, m), (dx, dm)| array_style_jvp(x, m, dx, dm),
        |(x, m), ct| array_style_vjp(x, m, *ct),
    );
    let one = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    let large = |f: &dyn Fn()| {
        let before = LARGE.with(Cell::get);
        f();
        LARGE.with(Cell::get) - before
    };
    let call = || {
        let (_, (gx, gm)) = array_style_vjp(&x, &m, 1.0);
        assert_eq!(gx.len() + gm.len(), n + 3 * n / 2);
    };
    let (first, second) = one.install(|| (large(&call), large(&call)));
    // Left on the second call: the two gradients (they left the pool with
    // the caller) and the primal's `sum_axis` (ndarray's own, for the same
    // bits as `array_style`). Before the kernels and temporaries used the
    // pool: 31 on each call.
    assert!(
        second <= 3 && first > 3 * second,
        "large allocations of array_style_vjp: {first} on the first call, {second} on the second"
    );
}

/// Temporaries that die in an `if` (either branch may consume them), that
/// a view borrows (a row of a temporary matrix, a broadcast), or that a
/// loop captures: the emitter hands back only those it may (this compiles,
/// and the derivatives are right).
#[allow(clippy::op_ref)]
#[differentiable]
fn release_around_ifs_and_views(x: &Array1<f64>, m: &Array2<f64>, c: f64) -> f64 {
    let y = x.mapv(|v| v * v + c);
    let w = if c > 0.0 { y.mapv(f64::sin) } else { &y * 2.0 };
    let p = m * &w;
    let r = p.row(1).to_owned();
    let mut s = 0.0;
    for i in 0..x.len() {
        s += w[i] * r[i] + y[i];
    }
    s + (&p * &p).sum_axis(Axis(1)).sum()
}

#[test]
fn releases_are_sound_around_ifs_views_and_loops() {
    let mut rng = rng("release");
    for c in [0.7, -0.4] {
        let xm = (rng.array1(5, -1.0, 1.0), rng.array2(3, 5, -1.0, 1.0));
        check_derivatives(
            &xm,
            |(x, m)| release_around_ifs_and_views(x, m, c),
            |(x, m), (dx, dm)| release_around_ifs_and_views_jvp(x, m, c, dx, dm, 0.0),
            |(x, m), ct| {
                let (y, (gx, gm, _)) = release_around_ifs_and_views_vjp(x, m, c, *ct);
                (y, (gx, gm))
            },
        );
    }
}

/// A loop reading one row of an array and writing the next (a chain of
/// transforms, like HAND's bones): its tangent reads and updates one tangent
/// array (`dup` of a linear array, one copy only read by element before the
/// other is updated), never a copy of it per iteration.
#[differentiable]
fn chained(rel: &Array2<f64>) -> Array2<f64> {
    let n = rel.nrows();
    let mut acc: Array2<f64> = Array2::zeros((n, 2));
    acc[[0, 0]] = rel[[0, 0]];
    acc[[0, 1]] = rel[[0, 1]];
    for b in 1..n {
        for c in 0..2 {
            acc[[b, c]] = acc[[b - 1, c]] * rel[[b, c]] + rel[[b, 1 - c]].sin();
        }
    }
    acc
}

#[test]
fn chained_tangent_allocates_independently_of_n() {
    let mut rng = rng("chained");
    let r = rng.array2(6, 2, -1.0, 1.0);
    check_derivatives(&r, chained, chained_jvp, chained_vjp);
    let measure = |n: usize| {
        let r = Array2::from_shape_fn((n, 2), |(i, j)| {
            0.9 + 0.01 * (i as f64 * 0.37 + j as f64).sin()
        });
        allocations(|| {
            chained_jvp(&r, &r);
        })
        .0
    };
    assert_eq!(
        measure(20),
        measure(2_000),
        "allocations of one chained_jvp call at n = 20 and n = 2000"
    );
}

/// Allocations and bytes of one `gmm_objective_vjp` call at the ADBench
/// sizes (d10 K25 and d64 K100, 1,000 points), on one thread after a
/// warm-up call: a measurement for notes, not a check.
/// `cargo test --release --test alloc gmm_adbench_sizes -- --ignored --nocapture`
#[test]
#[ignore]
fn gmm_adbench_sizes() {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    pool.install(|| {
        for (n, k, d) in [(1000, 25, 10), (1000, 100, 64)] {
            let mut rng = rng("gmm_adbench_sizes");
            let alphas = rng.array1(k, -1.0, 1.0);
            let means = rng.array2(k, d, -1.0, 1.0);
            let icf = rng.array2(k, d * (d + 1) / 2, -0.5, 0.5);
            let x = rng.array2(n, d, -1.0, 1.0);
            let call = || gmm::gmm_objective_vjp(&alphas, &means, &icf, &x, 1.0, 0, 1.0);
            call();
            let (count, bytes) = allocations(|| {
                call();
            });
            println!("d{d} K{k} n{n}: {count} allocations, {bytes} bytes per f_vjp call");
        }
    });
}

/// [`gmm_vjp_allocations`] for the NumPy-style objective
/// (`gmm_objective_numpy`: broadcasting, a matrix product and an axis sum
/// per component, the log-sum-exp of each row by `map_axis`).
fn gmm_numpy_vjp_allocations(n: usize, k: usize, d: usize) -> usize {
    vjp_allocations(n, k, d, |a, m, q, x| {
        gmm::gmm_objective_numpy_vjp(a, m, q, x, 1.0, 0, 1.0);
    })
}

/// Whole-array code allocates per call, not per row: the NumPy-style GMM
/// computes the log-sum-exp of each row of `beta` by `map_axis` (each row's
/// `exp(b - max)`, stored for the reverse pass, and its cotangent there),
/// and every such per-row array goes back to the per-thread pool when it
/// dies, for the next row to take again. So the count of allocations of a
/// call does not grow with the number of rows `n` beyond the chunking of
/// its reverse loops: 72, 81 and 92 allocations at n = 40, 400 and 4000
/// (k = 3, d = 4), where it grew by two per row before (355, 918, 8139).
/// Per component (the loop over `j`) the arrays the primal makes
/// with ndarray itself (`xc.dot(&l.t())`, `sum_axis`: called as written,
/// for the same bits as `f`) and a few kernel task lists still allocate.
#[test]
fn numpy_style_gmm_vjp_allocations_do_not_grow_with_n() {
    rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap()
        .install(|| {
            gmm_numpy_vjp_allocations(400, 40, 9);
            for (k, d) in [(3, 4), (12, 7)] {
                let counts: Vec<usize> = [40, 400, 4000]
                    .iter()
                    .map(|&n| gmm_numpy_vjp_allocations(n, k, d))
                    .collect();
                let (min, max) = (counts.iter().min().unwrap(), counts.iter().max().unwrap());
                // Up to the private accumulators of its three chunked
                // reverse loops (more chunks for more rows, at most
                // MAX_CHUNKS each).
                let chunks = linad::__private::ad_runtime::MAX_CHUNKS;
                assert!(
                    *max <= min + 4 * chunks,
                    "allocations of one gmm_objective_numpy_vjp call at n = 40, 400, 4000 (k = {k}, d = {d}): {counts:?}"
                );
            }
        });
}

/// A recurrent nest shaped like ADBench's LSTM: per step, per layer, per
/// unit, libm calls whose results the reverse pass needs.
#[differentiable(wrt(w))]
fn recurrent(w: &Array2<f64>, seq: &Array2<f64>) -> f64 {
    let (layers, units) = (w.nrows(), w.ncols());
    let mut h: Array2<f64> = Array2::zeros((layers, units));
    let mut total = 0.0;
    for t in 0..seq.nrows() {
        for l in 0..layers {
            for j in 0..units {
                let input = if l == 0 { seq[[t, j]] } else { h[[l - 1, j]] };
                let g = 1.0 / (1.0 + (-(input * w[[l, j]] + h[[l, j]])).exp());
                h[[l, j]] = (g * input).tanh();
            }
        }
        for j in 0..units {
            total += h[[layers - 1, j]] * seq[[t, j]];
        }
    }
    total
}

/// The reverse pass of a loop nest three deep keeps its per-unit residuals
/// in arrays made a number of times independent of the number of steps
/// (`simplify/stack_in_place.rs` writes the inner stacks in place): no
/// allocation per step once the pool is warm.
#[test]
fn recurrent_nest_allocates_independently_of_steps() {
    let mut rng = rng("recurrent_nest");
    let (w, seq) = (rng.array2(2, 5, -1.0, 1.0), rng.array2(4, 5, -1.0, 1.0));
    check_derivatives(
        &w,
        |w| recurrent(w, &seq),
        |w, dw| recurrent_jvp(w, &seq, dw),
        |w, ct| recurrent_vjp(w, &seq, *ct),
    );
    let measure = |steps: usize| {
        let w = Array2::from_shape_fn((2, 5), |(l, j)| 0.3 * (l as f64 - j as f64).sin());
        let seq = Array2::from_shape_fn((steps, 5), |(t, j)| ((t * 5 + j) as f64 * 0.37).cos());
        recurrent_vjp(&w, &seq, 1.0);
        allocations(|| {
            recurrent_vjp(&w, &seq, 1.0);
        })
        .0
    };
    let (short, long) = (measure(10), measure(1000));
    assert!(
        long <= short,
        "allocations of one recurrent_vjp call: {short} for 10 steps, {long} for 1000"
    );
}
