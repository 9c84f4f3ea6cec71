//! The ADBench suite (`examples/adbench/`): for every problem and size that
//! fits this machine, the primal, linad's derivative and, for GMM and BA, a
//! hand-written derivative, under criterion; then, measured back to back in
//! the same run, the ratios derivative / primal and derivative / hand-written.
//!
//! `cargo bench --bench adbench` (inputs from `../shared/adbench` when
//! present, else the bundled small ones; missing inputs are skipped).
//! `ADBENCH_DATA=dir` picks another data folder; `RAYON_NUM_THREADS` the
//! threads of linad's runtime.
#![allow(clippy::redundant_closure)]

#[path = "../examples/adbench/ba.rs"]
#[allow(dead_code)]
mod ba;
#[path = "../examples/gmm.rs"]
#[allow(dead_code)]
mod gmm;
#[path = "../examples/adbench/hand.rs"]
#[allow(dead_code)]
mod hand;
#[path = "../examples/adbench/io.rs"]
#[allow(dead_code)]
mod io;
#[path = "../examples/adbench/lstm.rs"]
#[allow(dead_code)]
mod lstm;
#[path = "../examples/adbench/suite.rs"]
#[allow(dead_code)]
mod suite;

use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion};
use std::hint::black_box;
use std::time::Duration;

/// `(label, file relative to the data folder)`, per problem.
const GMM: &[(&str, &str)] = &[
    ("gmm_d10_K25", "gmm/1k/gmm_d10_K25.txt"),
    ("gmm_d64_K100", "gmm/1k/gmm_d64_K100.txt"),
    (
        "gmm_d64_K200_synth",
        "gmm/synthetic/gmm_d64_K200_1k_synth.txt",
    ),
];
const BA: &[(&str, &str)] = &[
    ("ba1", "ba/ba1_n49_m7776_p31843.txt"),
    ("ba2", "ba/ba2_n21_m11315_p36455.txt"),
    ("ba3", "ba/ba3_n161_m48126_p182072.txt"),
    ("ba4", "ba/ba4_n372_m47423_p204472.txt"),
    ("ba5", "ba/ba5_n257_m65132_p225911.txt"),
];
const LSTM: &[(&str, &str)] = &[
    ("lstm_l2_c1024", "lstm/lstm_l2_c1024.txt"),
    ("lstm_l2_c4096", "lstm/lstm_l2_c4096.txt"),
];
const HAND: &[(&str, &str)] = &[
    ("hand_simple_small", "hand/simple_small/hand1_t26_c100.txt"),
    (
        "hand_complicated_small",
        "hand/complicated_small/hand1_t26_c100.txt",
    ),
];

fn data_dir() -> String {
    std::env::var("ADBENCH_DATA").unwrap_or_else(|_| suite::default_data_dir())
}

fn find(rel: &str) -> Option<String> {
    let path = suite::resolve(&data_dir(), rel);
    if path.is_none() {
        println!("adbench: {rel} not found under {}, skipped", data_dir());
    }
    path
}

/// Median seconds of `f` (at least 5 runs and 1 s).
fn median<T>(f: impl FnMut() -> T) -> f64 {
    io::median_secs(&io::timed_runs(5, 1.0, f))
}

/// One line of the summary.
struct Row {
    case: String,
    primal: f64,
    deriv: f64,
    hand: Option<f64>,
}

fn group<'a>(
    c: &'a mut Criterion,
    name: &str,
) -> BenchmarkGroup<'a, criterion::measurement::WallTime> {
    let mut g = c.benchmark_group(name);
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2));
    g
}

fn bench(c: &mut Criterion) {
    let mut rows = Vec::new();
    for (label, rel) in GMM {
        let Some(path) = find(rel) else { continue };
        let i = gmm::GmmInput::read(&path).unwrap();
        let mut g = group(c, label);
        g.bench_function("primal", |b| b.iter(|| black_box(i.objective())));
        g.bench_function("gradient_vjp", |b| b.iter(|| black_box(i.gradient())));
        g.bench_function("gradient_hand_written", |b| {
            b.iter(|| black_box(i.gradient_hand()))
        });
        g.finish();
        rows.push(Row {
            case: format!("{label} gradient (vjp)"),
            primal: median(|| i.objective()),
            deriv: median(|| i.gradient()),
            hand: Some(median(|| i.gradient_hand())),
        });
    }
    for (label, rel) in BA {
        let Some(path) = find(rel) else { continue };
        let i = ba::BaInput::read(&path).unwrap();
        let mut g = group(c, label);
        g.bench_function("primal", |b| b.iter(|| black_box(i.objective())));
        g.bench_function("jacobian_reverse", |b| {
            b.iter(|| black_box(i.jacobian_reverse()))
        });
        g.bench_function("jacobian_forward", |b| {
            b.iter(|| black_box(i.jacobian_forward()))
        });
        g.bench_function("jacobian_hand_written", |b| {
            b.iter(|| black_box(i.jacobian_hand()))
        });
        g.finish();
        let (p, h) = (median(|| i.objective()), median(|| i.jacobian_hand()));
        rows.push(Row {
            case: format!("{label} jacobian (reverse, 2 vjp/obs.)"),
            primal: p,
            deriv: median(|| i.jacobian_reverse()),
            hand: Some(h),
        });
        rows.push(Row {
            case: format!("{label} jacobian (forward, 15 jvp/obs.)"),
            primal: p,
            deriv: median(|| i.jacobian_forward()),
            hand: Some(h),
        });
    }
    for (label, rel) in LSTM {
        let Some(path) = find(rel) else { continue };
        let i = lstm::LstmInput::read(&path).unwrap();
        let mut g = group(c, label);
        g.bench_function("primal", |b| b.iter(|| black_box(i.objective())));
        g.bench_function("gradient_vjp", |b| b.iter(|| black_box(i.gradient())));
        g.finish();
        rows.push(Row {
            case: format!("{label} gradient (vjp)"),
            primal: median(|| i.objective()),
            deriv: median(|| i.gradient()),
            hand: None,
        });
    }
    for (label, rel) in HAND {
        let Some(path) = find(rel) else { continue };
        let i = hand::HandInput::read(&path, &suite::hand_model_dir(&path)).unwrap();
        let mut g = group(c, label);
        g.bench_function("primal", |b| b.iter(|| black_box(i.objective())));
        g.bench_function("jacobian_jvp", |b| b.iter(|| black_box(i.jacobian())));
        g.finish();
        rows.push(Row {
            case: format!("{label} jacobian (jvp per column)"),
            primal: median(|| i.objective()),
            deriv: median(|| i.jacobian()),
            hand: None,
        });
    }
    println!(
        "\nADBench, median of >= 5 runs and >= 1 s each, threads: {}",
        std::env::var("RAYON_NUM_THREADS").unwrap_or_else(|_| "rayon default".into())
    );
    println!(
        "{:48} {:>12} {:>12} {:>12} {:>10} {:>10}",
        "case", "primal ms", "deriv ms", "hand ms", "d/primal", "d/hand"
    );
    for r in &rows {
        println!(
            "{:48} {:12.3} {:12.3} {:>12} {:10.2} {:>10}",
            r.case,
            r.primal * 1e3,
            r.deriv * 1e3,
            r.hand.map_or("-".into(), |h| format!("{:.3}", h * 1e3)),
            r.deriv / r.primal,
            r.hand.map_or("-".into(), |h| format!("{:.2}", r.deriv / h)),
        );
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
