//! The passes one at a time, as the driver runs them without the simplifier
//! (and without pruning residuals), for the per-pass unit tests: each output
//! is checked (Linear A after JVP, Linear B after unzip and transposition)
//! and added to the program.

// Each test binary uses some of it.
#![allow(dead_code)]

use ad_core_ir::check::{check_func, Mode};
use ad_core_ir::interp::{run, Value};
use ad_core_ir::ir::{Func, Program};
use ad_core_ir::pretty::func_to_string;
use ad_core_ir::testing::Rng;

/// Checks `f` in `mode`, adds it to `prog`, returns its name.
fn add_checked(prog: &mut Program, f: Func, mode: Mode) -> String {
    if let Err(es) = check_func(prog, &f, mode) {
        let msgs: Vec<String> = es.iter().map(|e| e.to_string()).collect();
        panic!(
            "`{}` is not {mode:?}: {}\n{}",
            f.name,
            msgs.join("; "),
            func_to_string(&f)
        );
    }
    let name = f.name.clone();
    prog.insert(f);
    name
}

/// Adds `f__jvp` (`jvp::jvp_func`: folds lowered, the JVP rules, sharing
/// made explicit) with respect to the parameters flagged in `wrt`; returns
/// its name.
pub fn jvp(prog: &mut Program, f: &str, wrt: &[bool]) -> String {
    let func = prog.func(f).expect("the function is in the program");
    let j = ad_core_ir::jvp::jvp_func(prog, func, wrt).unwrap_or_else(|e| panic!("jvp: {e}"));
    add_checked(prog, j, Mode::LinearA)
}

/// The names of `f__fwd` and `f__lin`, and the number of primal results of
/// `f__fwd` (its residuals follow).
pub struct Unzipped {
    pub fwd: String,
    pub lin: String,
    pub n_results: usize,
}

/// Adds `f__fwd` and `f__lin` of the JVP-form function `jvp`
/// (`unzip::unzip_func`).
pub fn unzip(prog: &mut Program, jvp: &str) -> Unzipped {
    let j = prog.func(jvp).expect("the jvp is in the program");
    let u = ad_core_ir::unzip::unzip_func(prog, j).unwrap_or_else(|e| panic!("unzip: {e}"));
    Unzipped {
        fwd: add_checked(prog, u.fwd, Mode::LinearB),
        lin: add_checked(prog, u.lin, Mode::LinearB),
        n_results: u.n_results,
    }
}

/// Adds the transpose of the linear function `lin`
/// (`transpose::transpose_func`: the rules, sharing made explicit); returns
/// its name.
pub fn transpose(prog: &mut Program, lin: &str) -> String {
    let l = prog
        .func(lin)
        .expect("the linear function is in the program");
    let t =
        ad_core_ir::transpose::transpose_func(prog, l).unwrap_or_else(|e| panic!("transpose: {e}"));
    add_checked(prog, t, Mode::LinearB)
}

/// `func(args ; lin_args)` by the interpreter (panics on an error).
pub fn eval(
    prog: &Program,
    func: &str,
    args: &[Value],
    lin_args: &[Value],
) -> (Vec<Value>, Vec<Value>) {
    run(prog, func, args, lin_args).unwrap_or_else(|e| panic!("running `{func}`: {e}"))
}

/// Random directions (elements in [-1, 1]) for the arguments flagged in
/// `wrt`, integers left out: the linear arguments of `f__jvp` and `f__lin`.
pub fn directions(args: &[Value], wrt: &[bool], seed: u64) -> Vec<Value> {
    let mut rng = Rng(seed);
    args.iter()
        .zip(wrt)
        .filter(|(a, w)| **w && !matches!(a, Value::I64(_)))
        .map(|(a, _)| rng.like(a))
        .collect()
}

/// `|a - b| <= tol * max(1, |a|)` elementwise over two lists of values.
#[track_caller]
pub fn assert_close(a: &[Value], b: &[Value], tol: f64) {
    assert_eq!(a.len(), b.len(), "{a:?} vs {b:?}");
    for (x, y) in a.iter().zip(b) {
        let scale = x.max_abs_diff(&x.zeros_like()).max(1.0);
        assert!(x.max_abs_diff(y) <= tol * scale, "{x:?} vs {y:?}");
    }
}
