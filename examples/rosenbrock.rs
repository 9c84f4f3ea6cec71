//! An elementwise objective over many elements, as a user writes it: the
//! extended Rosenbrock function as a loop over pairs,
//!
//! ```text
//! f(x) = sum_{i < n/2} 100 (x_{2i}^2 - x_{2i+1})^2 + (x_{2i} - 1)^2
//! ```
//!
//! `cargo run --release --example rosenbrock [n]` (default n = 100,000)
//! checks `rosenbrock_vjp` against a hand-written gradient and prints the
//! median times of the primal, `rosenbrock_vjp`, the hand-written gradient
//! and a hand-written value and gradient in one loop (interleaved runs) and
//! their ratios (issue 16: f_vjp at most 3x its primal and 1.3x the
//! hand-written gradient). Asserts only the values.

use linad::differentiable;
use linad::ndarray::Array1;
use std::time::Instant;

/// The extended Rosenbrock function of `x` (`x.len()` even).
#[differentiable]
pub fn rosenbrock(x: &Array1<f64>) -> f64 {
    let m = x.len() / 2;
    let mut s = 0.0;
    for i in 0..m {
        let a = x[2 * i];
        let t = a * a - x[2 * i + 1];
        let u = a - 1.0;
        s += 100.0 * t * t + u * u;
    }
    s
}

/// The gradient of [`rosenbrock`], written by hand.
pub fn rosenbrock_gradient(x: &Array1<f64>) -> Array1<f64> {
    let xs = x.as_slice().expect("a contiguous vector");
    let mut g = vec![0.0; xs.len()];
    for (gp, xp) in g.chunks_exact_mut(2).zip(xs.chunks_exact(2)) {
        let (a, b) = (xp[0], xp[1]);
        let t = a * a - b;
        gp[0] = 400.0 * t * a + 2.0 * (a - 1.0);
        gp[1] = -200.0 * t;
    }
    Array1::from_vec(g)
}

/// The value and the gradient of [`rosenbrock`] in one loop, written by
/// hand: what `rosenbrock_vjp(x, 1.0)` returns, the value summed in `f`'s
/// order (so bit-identical to it), which keeps the loop from vectorising.
pub fn rosenbrock_value_and_gradient(x: &Array1<f64>) -> (f64, Array1<f64>) {
    let xs = x.as_slice().expect("a contiguous vector");
    let mut g = vec![0.0; xs.len()];
    let mut s = 0.0;
    for (gp, xp) in g.chunks_exact_mut(2).zip(xs.chunks_exact(2)) {
        let (a, b) = (xp[0], xp[1]);
        let t = a * a - b;
        let u = a - 1.0;
        s += 100.0 * t * t + u * u;
        gp[0] = 400.0 * t * a + 2.0 * u;
        gp[1] = -200.0 * t;
    }
    (s, Array1::from_vec(g))
}

/// The input `x_i = 1 + sin(0.37 i) / 2` of the length given as the first
/// command-line argument (default 100,000).
pub fn input_from_args() -> Array1<f64> {
    let n: usize = std::env::args()
        .nth(1)
        .map(|s| s.parse().expect("n: an even number of elements"))
        .unwrap_or(100_000);
    Array1::from_shape_fn(n, |i| 1.0 + 0.5 * (i as f64 * 0.37).sin())
}

/// The median of `xs`.
pub fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

/// Seconds one call of `f` takes.
pub fn time(mut f: impl FnMut()) -> f64 {
    let t = Instant::now();
    f();
    t.elapsed().as_secs_f64()
}

fn main() {
    let x = input_from_args();
    let n = x.len();
    let (y, g) = rosenbrock_vjp(&x, 1.0);
    let h = rosenbrock_gradient(&x);
    let err = g
        .iter()
        .zip(&h)
        .map(|(a, b)| (a - b).abs() / (1.0 + b.abs()))
        .fold(0.0, f64::max);
    assert!(
        err < 1e-12,
        "f_vjp differs from the hand-written gradient: {err}"
    );
    assert_eq!(
        y.to_bits(),
        rosenbrock(&x).to_bits(),
        "primal not bit-identical"
    );
    let (yh, gh) = rosenbrock_value_and_gradient(&x);
    assert_eq!(yh.to_bits(), y.to_bits(), "hand value differs");
    assert!(gh
        .iter()
        .zip(&h)
        .all(|(a, b)| (a - b).abs() <= 1e-12 * (1.0 + b.abs())));
    let (mut tp, mut tv, mut th, mut tb) = (vec![], vec![], vec![], vec![]);
    let rounds = if n > 1_000_000 { 5 } else { 51 };
    let mut sink = 0.0;
    for _ in 0..rounds {
        tp.push(time(|| sink += rosenbrock(&x)));
        tv.push(time(|| sink += rosenbrock_vjp(&x, 1.0).1[0]));
        th.push(time(|| sink += rosenbrock_gradient(&x)[0]));
        tb.push(time(|| sink += rosenbrock_value_and_gradient(&x).1[0]));
    }
    let (tp, tv, th, tb) = (median(tp), median(tv), median(th), median(tb));
    println!(
        "n = {n}: f = {y:.6}, max relative difference to the hand gradient {err:.1e} ({sink:.1})"
    );
    println!(
        "primal {:.3} ms, f_vjp {:.3} ms, hand gradient {:.3} ms, hand value and gradient {:.3} ms; \
         f_vjp / primal {:.2}, f_vjp / hand {:.2}, f_vjp / hand value and gradient {:.2}",
        tp * 1e3,
        tv * 1e3,
        th * 1e3,
        tb * 1e3,
        tv / tp,
        tv / th,
        tv / tb
    );
}
