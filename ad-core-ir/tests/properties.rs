//! End-to-end property tests of the compiler core on random programs (see
//! `common/gen/`): the generator's programs are well formed and use every
//! construct; (d) the simplifier preserves results; (e) the checker accepts
//! every pass output. The per-pass properties are in `jvp.rs` (a), `unzip.rs`
//! (b) and `transpose.rs` (c); the tools that explore and reduce failing
//! cases in `tools.rs`.
//!
//! `PROPTEST_CASES` sets the number of cases (default 256);
//! `LINAD_GEN_DISABLE=loop,fold` switches constructs off (see `GenConfig`).

mod common;

use ad_core_ir::check::{check_func, check_program, Mode};
use ad_core_ir::driver::differentiate;
use ad_core_ir::interp::run;
use ad_core_ir::pretty::func_to_string;
use common::gen::{cases, GenConfig};
use common::props::{at_most, driver_options, fail, run_prop};
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

/// The simplifier's early stop: `simplify_func` (the sweep's passes in a
/// cycle, stopping once all of them ran in a row without a change) gives
/// the function that repeating `sweep` until one changes nothing gives,
/// for the generator's programs and their derived programs, with the
/// options the driver uses.
#[test]
fn prop_simplify_stops_where_sweeps_do() {
    use ad_core_ir::simplify::{simplify_func, sweep, Options as SOptions};
    let variants = [
        SOptions::default(),
        SOptions {
            sum_through: false,
            ..SOptions::default()
        },
        SOptions {
            fuse: false,
            licm: false,
            ..SOptions::default()
        },
    ];
    run_prop("simplify stops where sweeps do", |c| {
        let mut progs = vec![c.prog.clone()];
        if let Ok(d) = differentiate(&c.prog, &c.entry, &c.wrt, &driver_options()) {
            progs.push(d.program);
        }
        for p in &progs {
            for f in &p.funcs {
                for o in &variants {
                    let mut a = f.clone();
                    simplify_func(&mut a, p, o);
                    let mut b = f.clone();
                    for _ in 0..o.max_sweeps {
                        if !sweep(&mut b, p, o) {
                            break;
                        }
                    }
                    let (sa, sb) = (func_to_string(&a), func_to_string(&b));
                    if sa != sb {
                        return Err(fail(format!(
                            "`{}`: the early stop gives\n{sa}\nrepeated sweeps give\n{sb}",
                            f.name
                        )));
                    }
                }
            }
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
                    ArrayOp::Stride { .. } => "stride".into(),
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

/// The free variables of every block, lambda and statement of the derived
/// programs (JVP, unzip and transpose outputs: nested bodies, linear
/// variables) are those of the recursive definition `visit::free_vars_*`
/// documents: a statement's are its operands' and nested blocks', less its
/// own non-linear results; a block's, each statement's less those bound by
/// earlier ones; a lambda's, its body's less its parameters.
#[test]
fn prop_free_vars_match_the_recursive_definition() {
    use ad_core_ir::ir::{Atom, Block, Expr, Lambda, Stmt};
    use ad_core_ir::visit::{
        for_each_operand, free_vars_block, free_vars_lambda, free_vars_stmt, lambdas,
        reads_free_lin, reads_free_nl, FreeVars,
    };
    use std::collections::BTreeSet;

    fn block_ref(b: &Block) -> FreeVars {
        let mut fv = FreeVars::default();
        let mut bound = BTreeSet::new();
        for s in &b.stmts {
            let sf = stmt_ref(s);
            fv.nl
                .extend(sf.nl.into_iter().filter(|v| !bound.contains(v)));
            fv.lin
                .extend(sf.lin.into_iter().filter(|v| !bound.contains(v)));
            bound.extend(s.binds.iter().chain(&s.lin_binds).copied());
        }
        for a in &b.results {
            if let Atom::Var(v) = a {
                if !bound.contains(v) {
                    fv.nl.insert(*v);
                }
            }
        }
        fv.lin
            .extend(b.lin_results.iter().filter(|v| !bound.contains(*v)));
        fv
    }
    fn lambda_ref(l: &Lambda) -> FreeVars {
        let mut fv = block_ref(&l.body);
        for p in l.params.iter().chain(&l.lin_params) {
            fv.nl.remove(p);
            fv.lin.remove(p);
        }
        fv
    }
    fn stmt_ref(s: &Stmt) -> FreeVars {
        let mut fv = FreeVars::default();
        for_each_operand(
            &s.expr,
            &mut |a| {
                if let Atom::Var(v) = a {
                    fv.nl.insert(*v);
                }
            },
            &mut |v| {
                fv.lin.insert(v);
            },
        );
        match &s.expr {
            Expr::If(i) => {
                fv.extend(block_ref(&i.then_));
                fv.extend(block_ref(&i.else_));
            }
            e => {
                for l in lambdas(e) {
                    fv.extend(lambda_ref(l));
                }
            }
        }
        for b in &s.binds {
            fv.nl.remove(b);
        }
        fv
    }
    fn compare(b: &Block, count: &mut usize) -> Result<(), String> {
        if free_vars_block(b) != block_ref(b) {
            return Err("a block".into());
        }
        for s in &b.stmts {
            *count += 1;
            let r = stmt_ref(s);
            if free_vars_stmt(s) != r {
                return Err(format!("statement binding {:?}", s.binds));
            }
            // The one-variable queries agree, on free variables and on
            // variables the statement binds.
            let probes =
                r.nl.iter()
                    .chain(&r.lin)
                    .chain(&s.binds)
                    .chain(&s.lin_binds);
            for v in probes {
                if reads_free_nl(s, *v) != r.nl.contains(v)
                    || reads_free_lin(s, *v) != r.lin.contains(v)
                {
                    return Err(format!("one-variable query of {v:?}"));
                }
            }
            match &s.expr {
                Expr::If(i) => {
                    compare(&i.then_, count)?;
                    compare(&i.else_, count)?;
                }
                e => {
                    for l in lambdas(e) {
                        if free_vars_lambda(l) != lambda_ref(l) {
                            return Err("a lambda".into());
                        }
                        compare(&l.body, count)?;
                    }
                }
            }
        }
        Ok(())
    }
    run_prop("free variables", |c| {
        let d = differentiate(&c.prog, &c.entry, &c.wrt, &driver_options())
            .map_err(|e| fail(format!("differentiate: {e}")))?;
        let mut count = 0;
        for f in &d.program.funcs {
            compare(&f.body, &mut count)
                .map_err(|e| fail(format!("`{}`: {e}\n{}", f.name, func_to_string(f))))?;
        }
        Ok(())
    });
}
