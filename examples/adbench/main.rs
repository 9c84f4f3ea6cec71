//! The four ADBench objectives (GMM, BA, LSTM, HAND) written as a linad user
//! would, with the derivatives ADBench asks for (`FORMATS.md` in ADBench's
//! data folder), checked against finite differences and timed.
//!
//! ```text
//! cargo run --release --example adbench                          # check all four on the small inputs
//! cargo run --release --example adbench -- ba [DATA_DIR]         # check one problem
//! cargo run --release --example adbench -- time KIND FILE [MIN_RUNS MIN_SECS]
//! ```
//!
//! `DATA_DIR` defaults to `../shared/adbench` when present, else the bundled
//! `examples/adbench/data` (plus `examples/data` for GMM). `time` prints one
//! JSON line of median seconds (`bench/compare` reads it); `KIND` is `gmm`,
//! `ba-rev`, `ba-fwd`, `lstm` or `hand`. Threads: `RAYON_NUM_THREADS`.
#![allow(dead_code)]

mod ba;
#[path = "../gmm.rs"]
mod gmm;
mod hand;
mod io;
mod lstm;
mod suite;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("time") {
        if args.len() < 3 {
            eprintln!("usage: adbench time KIND FILE [MIN_RUNS MIN_SECS]");
            std::process::exit(1);
        }
        let runs = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(10);
        let secs = args.get(4).and_then(|s| s.parse().ok()).unwrap_or(1.0);
        match suite::time(&args[1], &args[2], runs, secs) {
            Ok(((p, d, h), sum)) => println!(
                "{{\"kind\": \"{}\", \"primal_s\": {p:e}, \"deriv_s\": {d:e}, \"hand_s\": {}, \"checksum\": {sum:e}, \"threads\": \"{}\"}}",
                args[1],
                h.map_or("null".to_string(), |h| format!("{h:e}")),
                std::env::var("RAYON_NUM_THREADS").unwrap_or_else(|_| "default".into())
            ),
            Err(e) => {
                eprintln!("adbench: {e}");
                std::process::exit(1);
            }
        }
        return;
    }
    let (only, data_dir) = match args.first().map(String::as_str) {
        Some(p @ ("gmm" | "ba" | "lstm" | "hand")) => (Some(p.to_string()), args.get(1).cloned()),
        Some(d) => (None, Some(d.to_string())),
        None => (None, None),
    };
    let data_dir = data_dir.unwrap_or_else(suite::default_data_dir);
    println!("ADBench checks (data: {data_dir})");
    let mut failed = false;
    for (problem, rel) in suite::CHECKS {
        if only.as_deref().is_some_and(|o| o != *problem) {
            continue;
        }
        let Some(path) = suite::resolve(&data_dir, rel) else {
            println!("  {problem:5} {rel}: missing, skipped");
            continue;
        };
        let t0 = std::time::Instant::now();
        match suite::check(problem, &path) {
            Ok(msg) => println!(
                "  {problem:5} {rel}: {msg} ({:.2} s)",
                t0.elapsed().as_secs_f64()
            ),
            Err(e) => {
                println!("  {problem:5} {rel}: FAILED: {e}");
                failed = true;
            }
        }
    }
    if failed {
        std::process::exit(2);
    }
}
