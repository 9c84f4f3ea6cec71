//! Tools for the property tests, not tests: each is `#[ignore]`d and run by
//! hand, with `--ignored --nocapture` to see what it prints. Every one reads
//! the generator's and the driver's variables as the properties do:
//! `LINAD_GEN_DISABLE=loop,fold,..` and `LINAD_GEN_STACK_ARRAYS=1` (see
//! `GenConfig`), `LINAD_NO_SIMPLIFY` (the driver without the simplifier).
//!
//! - `print_samples` prints three generated cases (program, arguments,
//!   `wrt`, seed):
//!   `cargo test -p ad-core-ir --release --test tools print_samples -- --ignored --nocapture`
//! - `explore` runs every property at once (jvp vs finite differences,
//!   primal bit-identity and `__lin` vs `__jvp`, the dot-product identity,
//!   the checker; a panic in a pass counts too) on `LINAD_EXPLORE` fresh
//!   cases (default 1000), groups the failures by kind (the message without
//!   names and numbers), shrinks one case per kind and prints it with its
//!   derived functions:
//!   `LINAD_EXPLORE=2000 cargo test -p ad-core-ir --release --test tools explore -- --ignored --nocapture`
//! - `repro` parses the printed program in the file `LINAD_REPRO` (absolute,
//!   or relative to `ad-core-ir/`, where cargo runs the tests; entry
//!   `f`; arguments made up: `f64` parameters from seed 1, `[f64]` of length
//!   2, `[[f64]]` of 2 × 2, `i64` parameters 2; only the first parameter
//!   differentiated), prints its violations and fails while there are any,
//!   so a line-deletion script can reduce a failing case by its exit status
//!   (it panics with `NOT-PARSED`, `NOT-WELL-FORMED` or `NOT-RUNNING` for a
//!   candidate that is no longer a valid program); without `LINAD_REPRO` it
//!   does nothing:
//!   `LINAD_REPRO=case.ir cargo test -p ad-core-ir --release --test tools repro -- --ignored --nocapture`
//!
//! `examples/repro.rs` is the other half of reducing a case: it checks no
//! property but prints the derived functions (or the error) of a printed
//! program for a given entry and `wrt`
//! (`cargo run -p ad-core-ir --example repro -- FILE ENTRY WRT`), to read
//! what the passes make of the case `explore` or `repro` found.

mod common;

use ad_core_ir::check::{check_program, Mode};
use ad_core_ir::driver::{differentiate, Options};
use ad_core_ir::interp::{run, Value};
use ad_core_ir::testing::{check_derived, Rng};
use common::gen::{cases, Case, GenConfig};
use common::props::{at_most, below, derived_to_string, driver_options, H};
use proptest::test_runner::TestRunner;

/// Prints three generated cases (see the module doc).
#[test]
#[ignore]
fn print_samples() {
    let mut runner = TestRunner::new(proptest::test_runner::Config {
        cases: 3,
        failure_persistence: None,
        ..Default::default()
    });
    runner
        .run(&cases(GenConfig::from_env()), |c| {
            eprintln!("{c:?}\n");
            Ok(())
        })
        .unwrap();
}

/// Every property at once: a list of `(class, detail)` violations; a panic
/// in a pass is one too.
fn violations(c: &Case) -> Vec<(String, String)> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| violations_inner(c))) {
        Ok(v) => v,
        Err(p) => {
            let msg = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            vec![(normalize(&format!("panic: {msg}")), msg)]
        }
    }
}

fn violations_inner(c: &Case) -> Vec<(String, String)> {
    let mut out = vec![];
    let mut add = |class: &str, detail: String| out.push((class.to_string(), detail));
    match differentiate(&c.prog, &c.entry, &c.wrt, &driver_options()) {
        Err(e) => add(&normalize(&format!("differentiate: {e}")), e.to_string()),
        Ok(d) => {
            if let Err(es) = check_program(&d.program, Mode::LinearA) {
                add("(e) Linear A", es[0].to_string());
            }
            match check_derived(&c.prog, &d, &c.entry, &c.args, &c.wrt, c.seed, H) {
                Err(e) => add(&normalize(&format!("run: {e}")), e),
                Ok(r) => {
                    if !below(r.fd_rel_err, 1e-5) {
                        add("(a) fd", format!("{r:?}"));
                    }
                    if !(r.jvp_primal_exact && r.fwd_primal_exact) {
                        add("(b) primal", format!("{r:?}"));
                    }
                    if !at_most(r.lin_vs_jvp, 1e-9) {
                        add("(b) lin vs jvp", format!("{r:?}"));
                    }
                    if !below(r.dot_rel_err, 1e-9) {
                        add("(c) dot", format!("{r:?}"));
                    }
                }
            }
        }
    }
    out
}

/// A failure message without names and numbers, cut at its first error, for
/// grouping.
fn normalize(msg: &str) -> String {
    let first = msg.split("; in `").next().unwrap_or(msg);
    let mut s = String::new();
    let mut in_tick = false;
    let mut last_digit = false;
    let mut depth = 0;
    for ch in first.lines().next().unwrap_or("").chars().take(200) {
        if ch == '(' || ch == '[' {
            depth += 1;
            continue;
        }
        if ch == ')' || ch == ']' {
            depth -= 1;
            if depth == 0 {
                s.push_str("..");
            }
            continue;
        }
        if depth > 0 {
            continue;
        }
        if ch == '`' {
            in_tick = !in_tick;
            if in_tick {
                s.push_str("`_`");
            }
            continue;
        }
        if in_tick {
            continue;
        }
        if ch.is_ascii_digit() {
            if !last_digit {
                s.push('#');
            }
            last_digit = true;
        } else {
            s.push(ch);
            last_digit = false;
        }
    }
    s
}

/// Runs every property on `LINAD_EXPLORE` cases, groups the failures by
/// kind and shrinks one per kind (see the module doc).
#[test]
#[ignore]
fn explore() {
    use common::gen::{ChoiceStrategy, ChoiceTree, Choices};
    use proptest::strategy::{Strategy, ValueTree};
    let n: usize = std::env::var("LINAD_EXPLORE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1000);
    let cfg = GenConfig::from_env();
    std::panic::set_hook(Box::new(|_| {}));
    let mut runner = TestRunner::default();
    let mut classes: std::collections::BTreeMap<String, (usize, Choices)> = Default::default();
    for _ in 0..n {
        let ch = ChoiceStrategy { len: 2048 }
            .new_tree(&mut runner)
            .unwrap()
            .current();
        let c = common::gen::generate(&ch, &cfg);
        for (class, _) in violations(&c) {
            classes
                .entry(class)
                .and_modify(|e| e.0 += 1)
                .or_insert((1, ch.clone()));
        }
    }
    eprintln!("{n} cases; failure classes:");
    for (class, (count, _)) in &classes {
        eprintln!("{count:6}  {class}");
    }
    for (class, (count, ch)) in classes {
        let fails = |ch: &Choices| {
            let gen = std::panic::catch_unwind(|| common::gen::generate(ch, &cfg));
            match gen {
                Ok(c) => violations(&c).iter().any(|(k, _)| *k == class),
                Err(p) => {
                    let msg = p
                        .downcast_ref::<String>()
                        .cloned()
                        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                        .unwrap_or_default();
                    eprintln!("GENERATOR PANIC: {msg}\n{ch:?}");
                    false
                }
            }
        };
        let mut tree = ChoiceTree::new(ch);
        if tree.simplify() {
            loop {
                let more = if fails(&tree.current()) {
                    tree.simplify()
                } else {
                    tree.complicate()
                };
                if !more {
                    break;
                }
            }
        }
        let c = common::gen::generate(&tree.current(), &cfg);
        let detail = violations(&c)
            .into_iter()
            .find(|(k, _)| *k == class)
            .map(|x| x.1)
            .unwrap_or_default();
        eprintln!("==================== {class} ({count} cases)\n{c:?}\n{detail}");
        let unchecked = Options {
            check: false,
            ..driver_options()
        };
        let d = std::panic::catch_unwind(|| differentiate(&c.prog, &c.entry, &c.wrt, &unchecked));
        if let Ok(Ok(d)) = d {
            eprintln!("--- derived:\n{}", derived_to_string(&d));
        }
    }
}

/// Reduction helper: parses the printed program of `LINAD_REPRO` and prints
/// its violations; fails while it still violates a property (see the module
/// doc).
#[test]
#[ignore]
fn repro() {
    let Ok(path) = std::env::var("LINAD_REPRO") else {
        return;
    };
    let text = std::fs::read_to_string(path).unwrap();
    let prog = match ad_core_ir::parse::parse_program(&text) {
        Ok(p) => p,
        Err(e) => panic!("NOT-PARSED {e:?}"),
    };
    if check_program(&prog, Mode::LinearA).is_err() {
        panic!("NOT-WELL-FORMED");
    }
    let f = prog.func("f").expect("entry f");
    let mut rng = Rng(1);
    let args: Vec<Value> = f
        .params
        .iter()
        .map(|p| match f.vars.ty(*p) {
            ad_core_ir::types::Ty::Array { rank: 1, .. } => {
                Value::f64s(&[2], vec![rng.unit(), rng.unit()])
            }
            ad_core_ir::types::Ty::Array { rank: 2, .. } => {
                Value::f64s(&[2, 2], (0..4).map(|_| rng.unit()).collect::<Vec<_>>())
            }
            ad_core_ir::types::Ty::Scalar(ad_core_ir::types::Scalar::I64) => Value::I64(2),
            _ => Value::F64(rng.unit()),
        })
        .collect();
    if run(&prog, "f", &args, &[]).is_err() {
        panic!("NOT-RUNNING");
    }
    let wrt: Vec<bool> = (0..args.len()).map(|k| k == 0).collect();
    let c = Case {
        prog,
        entry: "f".into(),
        args,
        wrt,
        seed: 7,
        used_choices: 0,
    };
    let v = violations(&c);
    for (k, d) in &v {
        eprintln!("VIOLATION {k}\n{d}");
    }
    assert!(v.is_empty(), "FAILS");
}
