//! Wall time of reverse mode for a loop writing one element of a local array
//! per iteration (issue 8, defect 10): `cargo run --release --example
//! element_writes [n]` (default n = 100,000). Prints, asserts nothing.

use linad::differentiable;
use linad::ndarray::Array1;
use std::time::Instant;

#[differentiable]
fn element_writes(x: &Array1<f64>) -> f64 {
    let n = x.len();
    let mut a: Array1<f64> = Array1::zeros(n);
    for i in 0..n {
        a[i] = x[i].sin() * x[i];
    }
    a.sum()
}

/// The best of `reps` runs of `f`, in seconds.
fn best(reps: usize, mut f: impl FnMut()) -> f64 {
    (0..reps)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min)
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .map(|s| s.parse().expect("n"))
        .unwrap_or(100_000);
    let x = Array1::from_shape_fn(n, |i| (i as f64 * 0.37).sin());
    let mut y = 0.0;
    let tp = best(5, || y = element_writes(&x));
    let mut g = Array1::zeros(0);
    let reps = if n > 200_000 { 1 } else { 5 };
    let tv = best(reps, || g = element_writes_vjp(&x, 1.0).1);
    println!(
        "n = {n}: y = {y:.6}, |g|_1 = {:.6}",
        g.iter().map(|v| v.abs()).sum::<f64>()
    );
    println!("primal {:.3} ms, f_vjp {:.3} ms", tp * 1e3, tv * 1e3);
}
