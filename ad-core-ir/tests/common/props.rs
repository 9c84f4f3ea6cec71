//! What the property tests share: the driver's options, deriving and
//! checking one generated case, running a property over generated cases, and
//! comparisons that fail on NaN.

// Each test binary uses some of it.
#![allow(dead_code)]

use super::gen::{cases, Case, GenConfig};
use ad_core_ir::driver::{differentiate, Derivatives, Options};
use ad_core_ir::interp::{run, Value};
use ad_core_ir::pretty::func_to_string;
use ad_core_ir::testing::{check_derived, Report, Rng};
use proptest::test_runner::{TestCaseError, TestRunner};

/// Finite-difference step.
pub const H: f64 = 1e-6;

/// The driver's options: the defaults (simplifier on, checker on), or
/// without the simplifier when `LINAD_NO_SIMPLIFY` is set (to tell pass bugs
/// from simplifier bugs).
pub fn driver_options() -> Options {
    Options {
        simplify: std::env::var("LINAD_NO_SIMPLIFY").is_err(),
        check: true,
        ..Options::default()
    }
}

pub fn fail(msg: impl Into<String>) -> TestCaseError {
    TestCaseError::fail(msg.into())
}

/// Differentiates the case's entry and checks it at its arguments.
pub fn derive(c: &Case) -> Result<(Derivatives, Report), TestCaseError> {
    let d = differentiate(&c.prog, &c.entry, &c.wrt, &driver_options())
        .map_err(|e| fail(format!("differentiate: {e}")))?;
    let r = check_derived(&c.prog, &d, &c.entry, &c.args, &c.wrt, c.seed, H).map_err(|e| {
        fail(format!(
            "running the derived functions: {e}\n{}",
            derived_to_string(&d)
        ))
    })?;
    Ok((d, r))
}

/// The derived functions of the entry, printed.
pub fn derived_to_string(d: &Derivatives) -> String {
    let n = &d.names;
    [&n.jvp, &n.fwd, &n.lin, &n.lin_t, &n.vjp]
        .iter()
        .filter_map(|f| d.program.func(f))
        .map(func_to_string)
        .collect::<Vec<_>>()
        .join("\n")
}

/// The tangent directions `check_derived` uses for a case: one per
/// differentiated non-integer argument, drawn from the case's seed in order.
pub fn directions(c: &Case) -> Vec<Value> {
    let mut rng = Rng(c.seed);
    c.args
        .iter()
        .zip(&c.wrt)
        .filter(|(a, w)| **w && !matches!(a, Value::I64(_)))
        .map(|(a, _)| rng.like(a))
        .collect()
}

/// The tangent outputs of `f__jvp` in the [`directions`] of the case.
pub fn jvp_tangents(c: &Case, d: &Derivatives) -> Result<Vec<Value>, TestCaseError> {
    let dx = directions(c);
    let (_, dy) =
        run(&d.program, &d.names.jvp, &c.args, &dx).map_err(|e| fail(format!("jvp: {e}")))?;
    Ok(dy)
}

/// Runs `test` on `super::cases()` generated cases (the configuration of
/// `super::config()`, the generator's of `GenConfig::from_env()`).
pub fn run_prop(name: &str, test: impl Fn(&Case) -> Result<(), TestCaseError>) {
    let mut runner = TestRunner::new(super::config());
    let t0 = std::time::Instant::now();
    let res = runner.run(&cases(GenConfig::from_env()), |c| test(&c));
    eprintln!("{name}: {} cases in {:.2?}", super::cases(), t0.elapsed());
    if let Err(e) = res {
        panic!("{name}: {e}");
    }
}

/// `x < tol`, false for NaN (a NaN error must fail the property).
pub fn below(x: f64, tol: f64) -> bool {
    x < tol
}

/// `x <= tol`, false for NaN.
pub fn at_most(x: f64, tol: f64) -> bool {
    x <= tol
}
