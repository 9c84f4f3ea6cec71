//! The one entry point the macro calls: differentiate a function of a program.
//!
//! For `f` and the set of parameters to differentiate, [`differentiate`]
//! returns a program containing, for `f` and every function it calls:
//! - `f__jvp(x ; dx) -> (y ; dy)` — Linear A, primal and tangent together;
//! - `f__fwd(x) -> (y, r..)` — the primal with its residuals;
//! - `f__lin(r.. ; dx) -> (; dy)` — the linear (forward tangent) function;
//! - `f__lin_t(r.. ; ȳ) -> (; x̄)` — its transpose (reverse mode);
//! - for `f` alone, when one of its loops fuses, `f__vjp(x ; ȳ) -> (y ; x̄)`
//!   — `f__fwd` then `f__lin_t` in one sweep ([`crate::vjp`]).
//!
//! The pipeline, for each function (callees first), one named step each:
//!
//! ```text
//! normalize     folds lowered to counted loops           crate::normalize
//! exact         value-exact rules on the primal          crate::simplify::exact
//! jvp           f__jvp, tangents read freely             crate::jvp::jvp_func_raw
//! dupdrop       sharing made explicit (Linear A)         crate::dupdrop
//! simplify      f__jvp
//! unzip         f__fwd and f__lin (Linear B)             crate::unzip
//! simplify lin  f__lin
//! prune         residuals f__lin does not read           crate::prune
//! simplify fwd  f__fwd
//! transpose     f__lin_t, cotangents read freely         crate::transpose::transpose_func_raw
//! dupdrop       sharing made explicit (Linear B)         crate::dupdrop
//! simplify      f__lin_t
//! simplify primal  f itself (what callers run for its value alone)
//! fused vjp     f__vjp (f only, with simplify)   crate::vjp::fused_vjp
//! ```
//!
//! The `exact` and `simplify` steps run with [`Options::simplify`]. After
//! every step (with [`Options::check`]) the checker verifies the step's
//! output — a checker failure is a compiler bug, reported as
//! [`DriverError::Internal`] — except after `jvp` and `transpose`, whose
//! outputs read linear variables any number of times until `dupdrop` has
//! run; with [`Options::check_every_pass`] off, only after the steps that
//! end a final function. With [`Options::trace`], [`Derivatives::trace`] records every step's
//! output. [`differentiate_rule`] starts at `simplify` from a given `f__jvp`.

use crate::check::{check_func, Mode};
use crate::dupdrop::insert_dup_drop;
use crate::error::{ErrorKind, PassError};
use crate::fast_hash::FastSet;
use crate::ir::*;
use crate::jvp::jvp_func_raw;
use crate::normalize::lower_folds;
use crate::prune::prune_residuals;
use crate::transpose::transpose_func_raw;
use crate::unzip::unzip_func;
use std::collections::BTreeSet;
use std::fmt;

// The extern declarations the macro makes before differentiating and the
// derived names it looks calls up by, under the driver's name (their homes
// are [`crate::externs`] and [`crate::names`]).
pub use crate::externs::{
    declare_extern, declare_extern_residuals, declare_linear_extern, declare_wrt_extern,
};
pub use crate::names::{restricted_name, Names};

/// Driver options.
#[derive(Clone, Debug)]
pub struct Options {
    /// Run the simplifier between passes.
    pub simplify: bool,
    /// Run the checker on the outputs.
    pub check: bool,
    /// With [`Options::check`], check the output of every pass, not only
    /// the final functions (`__jvp`, `__fwd`, `__lin`, `__lin_t`, `__vjp`,
    /// a rule's): a failure then names the pass that broke the program.
    /// On by default; the macro turns it off (the final functions are still
    /// checked: nothing the checker refuses is emitted), which spares it
    /// about 6% of its expansion time.
    pub check_every_pass: bool,
    /// Record every pass's output in [`Derivatives::trace`] (a debug dump;
    /// off by default, and nothing is printed when off).
    pub trace: bool,
    /// Build `f__vjp` where a loop fuses ([`crate::vjp`]; with
    /// [`Options::simplify`]). Off for derivatives whose reverse mode no
    /// public item runs.
    pub fused_vjp: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            simplify: true,
            check: true,
            check_every_pass: true,
            trace: false,
            fused_vjp: true,
        }
    }
}

/// Why differentiation failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DriverError {
    /// A construct that cannot be differentiated (a user-facing limitation).
    Unsupported {
        /// What and why.
        msg: String,
        /// Where, if known.
        src: Option<SrcId>,
    },
    /// A compiler bug: a pass produced ill-formed IR.
    Internal(String),
}

impl fmt::Display for DriverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DriverError::Unsupported { msg, .. } => f.write_str(msg),
            DriverError::Internal(m) => write!(f, "internal compiler error: {m}"),
        }
    }
}

impl std::error::Error for DriverError {}

/// A pass's error by its kind ([`crate::error`]), the message as raised.
impl From<PassError> for DriverError {
    fn from(e: PassError) -> Self {
        match e.kind {
            ErrorKind::Unsupported => DriverError::Unsupported {
                msg: e.msg,
                src: e.src,
            },
            ErrorKind::Internal => DriverError::Internal(e.msg),
        }
    }
}

/// The result of [`differentiate`].
#[derive(Clone, Debug)]
pub struct Derivatives {
    /// The input program plus every derived function.
    pub program: Program,
    /// Names of the derived functions of the differentiated function.
    pub names: Names,
    /// Number of primal results of `fwd` (residuals follow).
    pub n_results: usize,
    /// `f__vjp` ([`Names::vjp`]) when it was built: a loop of `f__lin_t`
    /// fused into one of `f__fwd` ([`crate::vjp`]).
    pub vjp: Option<String>,
    /// With [`Options::trace`], `(pass, output)` for every pass in the order
    /// they ran (callees first): the pass's name and the function(s) it
    /// produced, pretty-printed. Empty without it.
    pub trace: Vec<(String, String)>,
}

/// The functions `name` calls, transitively, callees first (then `name`).
fn call_order(prog: &Program, name: &str) -> Result<Vec<String>, DriverError> {
    fn visit(
        prog: &Program,
        name: &str,
        seen: &mut FastSet<String>,
        stack: &mut Vec<String>,
        out: &mut Vec<String>,
    ) -> Result<(), DriverError> {
        if seen.contains(name) || prog.is_extern(name) {
            return Ok(());
        }
        if stack.iter().any(|s| s == name) {
            return Err(DriverError::Unsupported {
                msg: format!("recursive call of `{name}` cannot be differentiated"),
                src: None,
            });
        }
        let f = prog.func(name).ok_or_else(|| DriverError::Unsupported {
            msg: format!("unknown function `{name}`"),
            src: None,
        })?;
        stack.push(name.to_string());
        let mut callees = BTreeSet::new();
        collect_calls(&f.body, &mut callees);
        for c in callees {
            visit(prog, &c, seen, stack, out)?;
        }
        stack.pop();
        seen.insert(name.to_string());
        out.push(name.to_string());
        Ok(())
    }
    let mut out = vec![];
    visit(prog, name, &mut FastSet::default(), &mut vec![], &mut out)?;
    Ok(out)
}

fn collect_calls(b: &Block, out: &mut BTreeSet<String>) {
    for s in &b.stmts {
        if let Expr::Call(c) = &s.expr {
            out.insert(c.func.clone());
        }
        for blk in crate::visit::blocks(&s.expr) {
            collect_calls(blk, out);
        }
    }
}

fn verify(prog: &Program, f: &Func, mode: Mode, opts: &Options) -> Result<(), DriverError> {
    if !opts.check {
        return Ok(());
    }
    check_func(prog, f, mode).map_err(|es| {
        let msgs: Vec<String> = es.iter().take(5).map(|e| e.to_string()).collect();
        DriverError::Internal(format!(
            "`{}` fails the checker after its pass: {}",
            f.name,
            msgs.join("; ")
        ))
    })
}

/// One run of the driver: its options and, with [`Options::trace`], the
/// record of every pass's output.
struct Pipeline<'o> {
    opts: &'o Options,
    trace: Vec<(String, String)>,
}

impl<'o> Pipeline<'o> {
    fn new(opts: &'o Options) -> Self {
        Pipeline {
            opts,
            trace: vec![],
        }
    }

    /// Ends step `pass`, whose outputs are `fs` (intermediate programs):
    /// records them (with [`Options::trace`]) and runs the checker on each
    /// in `mode` (with [`Options::check`] and [`Options::check_every_pass`]).
    /// `mode` is `None` for an output that reads linear variables freely
    /// (before `dupdrop`), which the checker would refuse.
    fn after(
        &mut self,
        pass: &str,
        prog: &Program,
        fs: &[&Func],
        mode: Option<Mode>,
    ) -> Result<(), DriverError> {
        let mode = mode.filter(|_| self.opts.check_every_pass);
        self.record_and_check(pass, prog, fs, mode)
    }

    /// [`Pipeline::after`] for a step whose outputs include final
    /// functions: checked whenever [`Options::check`] is on.
    fn after_final(
        &mut self,
        pass: &str,
        prog: &Program,
        fs: &[&Func],
        mode: Mode,
    ) -> Result<(), DriverError> {
        self.record_and_check(pass, prog, fs, Some(mode))
    }

    fn record_and_check(
        &mut self,
        pass: &str,
        prog: &Program,
        fs: &[&Func],
        mode: Option<Mode>,
    ) -> Result<(), DriverError> {
        if self.opts.trace {
            let printed: Vec<String> = fs
                .iter()
                .map(|f| crate::pretty::func_to_string(f))
                .collect();
            self.trace.push((pass.to_string(), printed.join("\n")));
        }
        match mode {
            Some(mode) => fs.iter().try_for_each(|f| verify(prog, f, mode, self.opts)),
            None => Ok(()),
        }
    }

    /// The step `pass` that runs the simplifier on `f` (only with
    /// [`Options::simplify`]); `last` when `f` is then final (checked
    /// whenever [`Options::check`] is on, also without the simplifier);
    /// `transposed_next` when `f` is a linear map transposed next (its sums
    /// are not moved: `simplify::Options::sum_through`).
    fn simplify(
        &mut self,
        pass: &str,
        prog: &Program,
        f: &mut Func,
        mode: Mode,
        last: bool,
        transposed_next: bool,
    ) -> Result<(), DriverError> {
        if self.opts.simplify {
            // A function transposed next keeps its sums where they are (see
            // `simplify::Options::sum_through`).
            let opts = crate::simplify::Options {
                sum_through: !transposed_next,
                ..crate::simplify::Options::default()
            };
            crate::simplify::simplify_func(f, prog, &opts);
        } else if !last {
            return Ok(());
        }
        if last {
            self.after_final(pass, prog, &[f], mode)
        } else {
            self.after(pass, prog, &[f], Some(mode))
        }
    }

    /// Differentiates `fname` of `out` with respect to the parameters
    /// flagged in `wrt` and adds `__jvp`, `__fwd`, `__lin` and `__lin_t` to
    /// `out`. Returns the number of primal results of `fwd`.
    fn derive(
        &mut self,
        out: &mut Program,
        fname: &str,
        wrt: &[bool],
    ) -> Result<usize, DriverError> {
        let mut f = lower_folds(out.func(fname).expect("in the program"));
        self.after("normalize", out, &[&f], Some(Mode::LinearA))?;
        // The value-exact rules first (fusion into loops, tabulation): JVP
        // then differentiates the fused loops rather than the arrays
        // between them.
        if self.opts.simplify {
            crate::simplify::exact(&mut f, &crate::simplify::Options::default());
            self.after("exact", out, &[&f], Some(Mode::LinearA))?;
        }
        let mut j = jvp_func_raw(out, &f, wrt)?;
        self.after("jvp", out, &[&j], None)?;
        insert_dup_drop(&mut j);
        self.after("dupdrop", out, &[&j], Some(Mode::LinearA))?;
        self.simplify("simplify", out, &mut j, Mode::LinearA, true, false)?;
        out.insert(j.clone());
        let n_results = self.unzip_and_transpose(out, &j)?;
        self.simplify_primal(out, f)?;
        Ok(n_results)
    }

    /// Replaces the primal `f` of `out` by its simplified form (with
    /// [`Options::simplify`]): the function the macro emits as
    /// `__linad_f_primal`, for callers that need `f`'s value alone. The
    /// simplifier is value-exact on non-linear code (the property tests'
    /// `fwd_primal_exact`), so the primal keeps `f`'s bits; it drops what
    /// `f` as lowered computes to no use (a range's trip count of a length,
    /// which is never negative: `max(n, 0)`, the `n < 0` guard).
    fn simplify_primal(&mut self, out: &mut Program, mut f: Func) -> Result<(), DriverError> {
        if !self.opts.simplify {
            return Ok(());
        }
        crate::simplify::simplify_func(&mut f, out, &crate::simplify::Options::default());
        self.after_final("simplify primal", out, &[&f], Mode::LinearA)?;
        out.insert(f);
        Ok(())
    }

    /// Unzips the JVP-form function `j` of `out` into `fwd` and `lin`,
    /// transposes `lin`, and adds the three to `out`. Returns the number of
    /// primal results of `fwd` (its residuals follow).
    fn unzip_and_transpose(&mut self, out: &mut Program, j: &Func) -> Result<usize, DriverError> {
        let u = unzip_func(out, j)?;
        let (mut fwd, mut lin) = (u.fwd, u.lin);
        self.after("unzip", out, &[&fwd, &lin], Some(Mode::LinearB))?;
        self.simplify("simplify lin", out, &mut lin, Mode::LinearB, false, true)?;
        prune_residuals(&mut fwd, &mut lin, u.n_results);
        self.after_final("prune", out, &[&fwd, &lin], Mode::LinearB)?;
        self.simplify("simplify fwd", out, &mut fwd, Mode::LinearB, true, false)?;
        out.insert(fwd);
        out.insert(lin.clone());
        let mut t = transpose_func_raw(out, &lin)?;
        self.after("transpose", out, &[&t], None)?;
        insert_dup_drop(&mut t);
        self.after("dupdrop", out, &[&t], Some(Mode::LinearB))?;
        self.simplify("simplify", out, &mut t, Mode::LinearB, true, false)?;
        out.insert(t);
        Ok(u.n_results)
    }

    /// Adds `f__vjp` to `out` when a loop fuses (only with
    /// [`Options::simplify`] and [`Options::fused_vjp`]: it is an
    /// optimisation) and returns its name.
    fn fused_vjp(
        &mut self,
        out: &mut Program,
        names: &Names,
        n_out: usize,
    ) -> Result<Option<String>, DriverError> {
        if !(self.opts.simplify && self.opts.fused_vjp) {
            return Ok(None);
        }
        let (Some(fwd), Some(lin_t)) = (out.func(&names.fwd), out.func(&names.lin_t)) else {
            return Err(DriverError::Internal(format!(
                "no `{}` or `{}` to compose",
                names.fwd, names.lin_t
            )));
        };
        let Some(f) = crate::vjp::fused_vjp(out, fwd, lin_t, n_out, &names.vjp) else {
            return Ok(None);
        };
        self.after_final("fused vjp", out, &[&f], Mode::LinearA)?;
        out.insert(f);
        Ok(Some(names.vjp.clone()))
    }
}

/// Differentiates `name` with respect to the parameters flagged in `wrt`
/// (callees with respect to all their differentiable parameters).
pub fn differentiate(
    prog: &Program,
    name: &str,
    wrt: &[bool],
    opts: &Options,
) -> Result<Derivatives, DriverError> {
    let order = call_order(prog, name)?;
    let mut pipeline = Pipeline::new(opts);
    let mut out = prog.clone();
    let mut n_results = 0;
    for fname in &order {
        let all = vec![true; out.func(fname).expect("in the program").params.len()];
        let mask = if fname == name { wrt } else { &all[..] };
        let n = pipeline.derive(&mut out, fname, mask)?;
        if fname == name {
            n_results = n;
        }
    }
    let names = Names::of(name);
    let vjp = pipeline.fused_vjp(&mut out, &names, n_results)?;
    Ok(Derivatives {
        program: out,
        names,
        n_results,
        vjp,
        trace: pipeline.trace,
    })
}

/// The derivatives of `name` given its forward rule instead of its body:
/// `jvp` is a Linear A function `(x.. ; dx..) -> (y.. ; dy..)` in JVP form
/// (e.g. a user's rule through [`crate::linear_form::linear_form`]). It is
/// checked, simplified, unzipped and transposed as the JVP pass's output
/// would be; the primal `name` is the rule's non-linear part (`fwd` without
/// its residuals, simplified whatever [`Options::simplify`] says), so every
/// derived function agrees with the rule.
pub fn differentiate_rule(
    prog: &Program,
    name: &str,
    mut jvp: Func,
    opts: &Options,
) -> Result<Derivatives, DriverError> {
    let names = Names::of(name);
    let mut pipeline = Pipeline::new(opts);
    let mut out = prog.clone();
    jvp.name = names.jvp.clone();
    pipeline.after("rule", &out, &[&jvp], Some(Mode::LinearA))?;
    pipeline.simplify("simplify", &out, &mut jvp, Mode::LinearA, true, false)?;
    out.insert(jvp.clone());
    let n_results = pipeline.unzip_and_transpose(&mut out, &jvp)?;
    let mut primal = out
        .func(&names.fwd)
        .cloned()
        .ok_or_else(|| DriverError::Internal(format!("no `{}` after unzip", names.fwd)))?;
    primal.name = name.to_string();
    primal.body.results.truncate(n_results);
    crate::simplify::simplify_func(&mut primal, &out, &crate::simplify::Options::default());
    pipeline.after_final("primal", &out, &[&primal], Mode::LinearA)?;
    out.insert(primal);
    Ok(Derivatives {
        program: out,
        names,
        n_results,
        vjp: None,
        trace: pipeline.trace,
    })
}
