//! `linad-fuzz show SEED [KIND]` prints a generated (or mutated) program and
//! its oracle value; `linad-fuzz e2e [N] [SEED]` runs an end-to-end batch;
//! `linad-fuzz seeds SEED..` checks the given cases end to end;
//! `linad-fuzz regressions` compiles and checks the fixed-seed regression
//! cases end to end.

use linad_fuzz::*;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let num = |k: usize, d: u64| args.get(k).and_then(|s| s.parse().ok()).unwrap_or(d);
    match args.first().map(String::as_str) {
        Some("show") => {
            let seed = num(1, 0);
            let cfg = Config {
                features: env_features(),
                ..Config::default()
            };
            let case = generate(seed, &cfg, "f");
            match args.get(2) {
                Some(kind) => {
                    let kind = mutate::KINDS
                        .iter()
                        .find(|k| *k == kind)
                        .unwrap_or_else(|| panic!("unknown mutation {kind}"));
                    let mut rng = rng::Rng::new(seed);
                    let m = mutate::mutate(&case.program, kind, &mut rng, 8);
                    println!("{}", m.source());
                }
                None => {
                    println!("{}", case.program.source());
                    println!(
                        "// expected: {:?} (discarded {})",
                        case.expected, case.discarded
                    );
                }
            }
        }
        Some("regressions") => {
            let cases: Vec<(Features, u64)> = REGRESSIONS
                .iter()
                .map(|(f, s, _)| (Features::parse(f).expect("feature names"), *s))
                .collect();
            let ok = e2e::run_cases(&cases, 0, 1, env_features());
            std::process::exit(if ok { 0 } else { 1 });
        }
        Some("seeds") => {
            let fs = env_features();
            let cases: Vec<(Features, u64)> = args[1..]
                .iter()
                .map(|s| (fs, s.parse().expect("a seed")))
                .collect();
            let ok = e2e::run_cases(&cases, 0, 1, fs);
            std::process::exit(if ok { 0 } else { 1 });
        }
        Some("e2e") => {
            let n = num(1, env_num("LINAD_FUZZ_E2E", 200)) as usize;
            let seed = num(2, env_num("LINAD_FUZZ_SEED", 1));
            let ok = e2e::run_batch(n, seed, env_features());
            std::process::exit(if ok { 0 } else { 1 });
        }
        _ => {
            eprintln!("usage: linad-fuzz show SEED [MUTATION] | linad-fuzz e2e [N] [SEED] | linad-fuzz seeds SEED.. | linad-fuzz regressions");
            std::process::exit(2);
        }
    }
}
