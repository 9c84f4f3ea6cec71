//! The extended Rosenbrock function written with whole-array operations, as
//! ndarray's documentation shows them (strided slices, `&a * &b`, `mapv`,
//! `.sum()`), next to the same function as a loop over pairs
//! (`examples/rosenbrock.rs`).
//!
//! `cargo run --release --example array_style [n]` (default n = 100,000)
//! checks that the two give the same value and gradient, then prints the
//! median times of each primal and each `f_vjp` (interleaved runs). The
//! array style makes one array per operation: `f_vjp` takes them from
//! linad's per-thread pool and gives them back, but the primal's are
//! ndarray's. On Linux, run it again with
//! `MALLOC_TRIM_THRESHOLD_=1073741824 MALLOC_MMAP_THRESHOLD_=1073741824`:
//! glibc then keeps all freed memory in the process and the next call does
//! not fault those pages in again (README, "Limits"). Asserts only the
//! values.

// The loop form (`rosenbrock`, one sweep in reverse mode) and the timing
// helpers are those of `examples/rosenbrock.rs`.
#[path = "rosenbrock.rs"]
#[allow(dead_code)]
mod rosenbrock;

use linad::differentiable;
use linad::ndarray::{s, Array1};
use rosenbrock::{
    input_from_args, median, rosenbrock as rosenbrock_loop, rosenbrock_vjp as rosenbrock_loop_vjp,
    time,
};

/// The extended Rosenbrock function of `x` (`x.len()` even), array style.
#[allow(clippy::op_ref)] // `&a * &a - &b` as ndarray's documentation writes it
#[differentiable]
pub fn rosenbrock_arrays(x: &Array1<f64>) -> f64 {
    let a = x.slice(s![..;2]);
    let b = x.slice(s![1..;2]);
    let t = &a * &a - &b;
    let u = a.mapv(|v| v - 1.0);
    (100.0 * &t * &t + &u * &u).sum()
}

fn main() {
    let x = input_from_args();
    let n = x.len();
    let (ya, ga) = rosenbrock_arrays_vjp(&x, 1.0);
    let (yl, gl) = rosenbrock_loop_vjp(&x, 1.0);
    let rel = |a: f64, b: f64| (a - b).abs() / (1.0 + b.abs());
    let err = ga
        .iter()
        .zip(&gl)
        .map(|(a, b)| rel(*a, *b))
        .fold(0.0, f64::max);
    assert!(rel(ya, yl) < 1e-12, "values differ: {ya} vs {yl}");
    assert!(err < 1e-12, "gradients differ: {err:e}");
    let mut t = [vec![], vec![], vec![], vec![]];
    let mut sink = 0.0;
    for _ in 0..51 {
        t[0].push(time(|| sink += rosenbrock_arrays(&x)));
        t[1].push(time(|| sink += rosenbrock_arrays_vjp(&x, 1.0).1[0]));
        t[2].push(time(|| sink += rosenbrock_loop(&x)));
        t[3].push(time(|| sink += rosenbrock_loop_vjp(&x, 1.0).1[0]));
    }
    let [pa, va, pl, vl] = t.map(|ts| median(ts) * 1e3);
    println!("n = {n}: f = {ya:.6}, gradients agree to {err:.1e} ({sink:.1})");
    println!(
        "array style: primal {pa:.3} ms, f_vjp {va:.3} ms ({:.1} primals); \
         loop: primal {pl:.3} ms, f_vjp {vl:.3} ms ({:.1} primals)",
        va / pa,
        vl / pl
    );
}
