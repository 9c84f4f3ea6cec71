//! End-to-end property tests of the compiler core on random programs (see
//! `common/gen/`): the generator's programs are well formed and use every
//! construct; (d) the simplifier preserves results; (e) the checker accepts
//! every pass output. The per-pass properties are in `jvp.rs` (a), `unzip.rs`
//! (b) and `transpose.rs` (c).
//!
//! `PROPTEST_CASES` sets the number of cases (default 256);
//! `LINAD_GEN_DISABLE=loop,fold` switches constructs off (see `GenConfig`).

mod common;

use ad_core_ir::check::{check_func, check_program, Mode};
use ad_core_ir::driver::{differentiate, Options};
use ad_core_ir::interp::{run, Value};
use ad_core_ir::pretty::func_to_string;
use ad_core_ir::testing::{check_derived, Rng};
use common::gen::{cases, Case, GenConfig};
use common::props::{at_most, below, derived_to_string, driver_options, fail, run_prop, H};
use proptest::prelude::*;
use proptest::test_runner::TestRunner;

/// (d) the simplifier preserves interpreter results and checker acceptance.
#[test]
fn prop_simplify_preserves_results() {
    use ad_core_ir::simplify::{simplify_func, Options as SOptions};
    run_prop("simplify preserves results", |c| {
        let mut p = c.prog.clone();
        for k in 0..p.funcs.len() {
            let mut f = p.funcs[k].clone();
            simplify_func(&mut f, &p, &SOptions::default());
            p.funcs[k] = f;
        }
        if let Err(es) = check_program(&p, Mode::LinearA) {
            let msgs: Vec<String> = es.iter().take(5).map(|e| e.to_string()).collect();
            return Err(fail(format!(
                "checker rejects the simplified program: {}\n{}",
                msgs.join("; "),
                ad_core_ir::pretty::program_to_string(&p)
            )));
        }
        let (y0, _) = run(&c.prog, &c.entry, &c.args, &[]).map_err(|e| fail(e.to_string()))?;
        let (y1, _) = run(&p, &c.entry, &c.args, &[]).map_err(|e| {
            fail(format!(
                "the simplified program fails: {e}\n{}",
                ad_core_ir::pretty::program_to_string(&p)
            ))
        })?;
        let bad = y0.len() != y1.len()
            || y0.iter().zip(&y1).any(|(a, b)| {
                let scale = a.max_abs_diff(&a.zeros_like()).max(1.0);
                !at_most(a.max_abs_diff(b), 1e-12 * scale)
            });
        if bad {
            return Err(fail(format!(
                "results differ: {y0:?} vs {y1:?}\n{}",
                ad_core_ir::pretty::program_to_string(&p)
            )));
        }
        Ok(())
    });
}

/// (e) the checker accepts every pass output: the driver checks after every
/// pass (an error would be an internal compiler error); the whole derived
/// program is Linear A and the unzipped/transposed functions Linear B.
#[test]
fn prop_checker_accepts_pass_outputs() {
    run_prop("checker accepts pass outputs", |c| {
        let d = differentiate(&c.prog, &c.entry, &c.wrt, &driver_options())
            .map_err(|e| fail(format!("differentiate: {e}")))?;
        if let Err(es) = check_program(&d.program, Mode::LinearA) {
            let msgs: Vec<String> = es.iter().take(5).map(|e| e.to_string()).collect();
            return Err(fail(format!("Linear A: {}", msgs.join("; "))));
        }
        for f in &d.program.funcs {
            if f.name.ends_with("__fwd") || f.name.ends_with("__lin") || f.name.ends_with("__lin_t")
            {
                if let Err(es) = check_func(&d.program, f, Mode::LinearB) {
                    let msgs: Vec<String> = es.iter().take(5).map(|e| e.to_string()).collect();
                    return Err(fail(format!(
                        "`{}` is not Linear B: {}\n{}",
                        f.name,
                        msgs.join("; "),
                        func_to_string(f)
                    )));
                }
            }
        }
        Ok(())
    });
}

#[test]
fn generated_programs_check_and_run() {
    let mut runner = TestRunner::new(common::config());
    runner
        .run(&cases(GenConfig::from_env()), |c| {
            if let Err(es) = check_program(&c.prog, Mode::LinearA) {
                let msgs: Vec<String> = es.iter().map(|e| e.to_string()).collect();
                return Err(TestCaseError::fail(format!("checker: {}", msgs.join("; "))));
            }
            run(&c.prog, &c.entry, &c.args, &[])
                .map_err(|e| TestCaseError::fail(format!("interp: {e}")))?;
            Ok(())
        })
        .unwrap();
}

/// Names of the constructs a program uses (expression kinds, primitives,
/// array operations with their variants), for the coverage test.
fn constructs(prog: &ad_core_ir::ir::Program, out: &mut std::collections::BTreeMap<String, usize>) {
    use ad_core_ir::ir::*;
    fn block(b: &Block, out: &mut std::collections::BTreeMap<String, usize>) {
        for s in &b.stmts {
            let name = match &s.expr {
                Expr::Atom(_) => "atom".to_string(),
                Expr::Prim(p, args) => {
                    if args.is_empty() {
                        p.name().to_string()
                    } else {
                        format!("prim {}", p.name())
                    }
                }
                Expr::Array(op) => match op {
                    ArrayOp::Index { idx, .. } => {
                        format!("index/{}", idx.len())
                    }
                    ArrayOp::Update { add, idx, .. } => format!("update add={add} /{}", idx.len()),
                    ArrayOp::Gather { .. } => "gather".into(),
                    ArrayOp::ScatterAdd { .. } => "scatter_add".into(),
                    ArrayOp::Reduce { op, axis, .. } => format!("reduce {op:?} axis={axis:?}"),
                    ArrayOp::ArgReduce { op, axis, .. } => {
                        format!("argreduce {op:?} axis={}", axis.is_some())
                    }
                    ArrayOp::Scan { reverse, .. } => format!("scan rev={reverse}"),
                    ArrayOp::MatMul { .. } => "matmul".into(),
                    ArrayOp::Transpose { .. } => "transpose".into(),
                    ArrayOp::Broadcast { axes, .. } => format!("broadcast axes={axes:?}"),
                    ArrayOp::Shape { .. } => "shape".into(),
                },
                Expr::Tuple(_) => "tuple".into(),
                Expr::Untuple(_) => "untuple".into(),
                Expr::Lin(_) => "lin".into(),
                Expr::Call(_) => "call".into(),
                Expr::If(_) => "if".into(),
                Expr::Loop(l) => format!("loop rev={}", l.rev),
                Expr::Build(b) => format!("build rank={}", b.shape.len()),
                Expr::Map(m) => format!("map arrs={}", m.arrs.len()),
                Expr::Fold(_) => "fold".into(),
                Expr::While(_) => "while".into(),
            };
            *out.entry(name).or_default() += 1;
            for b in ad_core_ir::visit::blocks(&s.expr) {
                block(b, out);
            }
        }
    }
    for f in &prog.funcs {
        block(&f.body, out);
    }
}

#[test]
fn generator_covers_every_construct() {
    let mut runner = TestRunner::new(common::config());
    let counts = std::cell::RefCell::new(std::collections::BTreeMap::new());
    let sizes = std::cell::RefCell::new(vec![]);
    runner
        .run(&cases(GenConfig::from_env()), |c| {
            constructs(&c.prog, &mut counts.borrow_mut());
            sizes.borrow_mut().push((
                ad_core_ir::visit::size_func(c.prog.func(&c.entry).unwrap()),
                c.used_choices,
            ));
            Ok(())
        })
        .unwrap();
    let counts = counts.into_inner();
    for (k, n) in &counts {
        eprintln!("{n:6}  {k}");
    }
    let sizes = sizes.into_inner();
    let max_size = sizes.iter().map(|s| s.0).max().unwrap_or(0);
    let mean_size = sizes.iter().map(|s| s.0).sum::<usize>() as f64 / sizes.len().max(1) as f64;
    let max_used = sizes.iter().map(|s| s.1).max().unwrap_or(0);
    eprintln!("entry size: mean {mean_size:.1}, max {max_size}; choices used: max {max_used}");
}

/// `cargo test --test properties print_samples -- --ignored --nocapture` shows
/// a few generated cases.
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

/// Exploration: `LINAD_EXPLORE=2000 cargo test --release --test properties
/// explore -- --ignored --nocapture` runs every property on that many cases,
/// groups the failures by kind and shrinks one per kind.
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

/// Reduction helper: `LINAD_REPRO=file.ir LINAD_REPRO_ARGS=... cargo test
/// --release --test properties repro -- --ignored --nocapture` parses a
/// printed program (entry `f`, all parameters f64/arrays filled with values
/// from seed 1, the first differentiated) and prints its violations; exit
/// status tells whether it still fails (for line-deletion scripts).
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
