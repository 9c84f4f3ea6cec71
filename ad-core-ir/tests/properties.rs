//! Property tests of the compiler core on random programs (see
//! `common/gen.rs`): the generator's programs are well formed; jvp agrees with
//! finite differences; unzip reproduces jvp; transpose satisfies the
//! dot-product identity; the simplifier preserves results; the checker
//! accepts every pass output.

mod common;

use ad_core_ir::check::{check_program, Mode};
use ad_core_ir::interp::run;
use common::gen::{cases, GenConfig};
use proptest::prelude::*;
use proptest::test_runner::TestRunner;

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
                    ArrayOp::Index { idx, arr } => {
                        format!("index/{}", idx.len() + 0 * arr.var().map_or(0, |_| 0))
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
