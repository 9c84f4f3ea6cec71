//! ADBench GMM (d=10, K=25, n=1000, bundled data): primal, `gmm_objective_vjp`
//! (linad reverse mode), `gmm_objective_jvp` (one forward direction) and the
//! hand-written gradient, measured in one run; prints the ratios
//! vjp / primal and vjp / hand-written.
//!
//! `cargo bench --bench gmm`
#![allow(clippy::redundant_closure)]

#[path = "../examples/gmm.rs"]
#[allow(dead_code)]
mod gmm;

use criterion::{criterion_group, criterion_main, Criterion};
use gmm::GmmInput;
use std::hint::black_box;
use std::time::Instant;

fn data() -> GmmInput {
    GmmInput::read(&format!(
        "{}/examples/data/gmm_d10_K25.txt",
        env!("CARGO_MANIFEST_DIR")
    ))
    .expect("bundled GMM data")
}

/// Mean time per call of `f` over `iters` calls, in seconds.
fn mean_secs<T>(iters: u32, mut f: impl FnMut() -> T) -> f64 {
    let t0 = Instant::now();
    for _ in 0..iters {
        black_box(f());
    }
    t0.elapsed().as_secs_f64() / iters as f64
}

fn bench(c: &mut Criterion) {
    let input = data();
    let mut g = c.benchmark_group("gmm_d10_K25_n1000");
    g.sample_size(20);
    g.bench_function("primal", |b| b.iter(|| black_box(input.objective())));
    g.bench_function("vjp", |b| b.iter(|| black_box(input.gradient())));
    g.bench_function("hand_written_gradient", |b| {
        b.iter(|| black_box(input.gradient_hand()))
    });
    g.finish();
    // Ratios measured back to back in this run (the machine is noisy: each
    // figure is the best of 5 means).
    let best = |f: &dyn Fn() -> f64| (0..5).map(|_| f()).fold(f64::INFINITY, f64::min);
    let p = best(&|| mean_secs(20, || input.objective()));
    let v = best(&|| mean_secs(10, || input.gradient()));
    let h = best(&|| mean_secs(20, || input.gradient_hand()));
    println!(
        "gmm d=10 K=25 n=1000: primal {:.3} ms, vjp {:.3} ms, hand-written {:.3} ms",
        p * 1e3,
        v * 1e3,
        h * 1e3
    );
    println!(
        "ratio vjp/primal = {:.2}, vjp/hand-written = {:.2}",
        v / p,
        v / h
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
