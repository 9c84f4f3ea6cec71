//! The one entry point the macro calls: differentiate a function of a program.
//!
//! For `f` and the set of parameters to differentiate, [`differentiate`]
//! returns a program containing, for `f` and every function it calls:
//! - `f__jvp(x ; dx) -> (y ; dy)` — Linear A, primal and tangent together;
//! - `f__fwd(x) -> (y, r..)` — the primal with its residuals;
//! - `f__lin(r.. ; dx) -> (; dy)` — the linear (forward tangent) function;
//! - `f__lin_t(r.. ; ȳ) -> (; x̄)` — its transpose (reverse mode).
//!
//! Between passes the simplifier runs, residuals the linear function does not
//! read are removed from both sides, and (with [`Options::check`]) the checker
//! verifies every output — a checker failure is a compiler bug, reported as
//! [`DriverError::Internal`].

use crate::check::{check_func, Mode};
use crate::ir::*;
use crate::jvp::{jvp_func, jvp_name, linear_name, JvpError};
use crate::prune::prune_residuals;
use crate::transpose::{transpose_func, transpose_name, TransposeError};
use crate::unzip::{fwd_name, lin_name, unzip_func, UnzipError};
use std::collections::{BTreeSet, HashSet};
use std::fmt;

// The extern declarations the macro makes before differentiating, under the
// driver's name (their home is [`crate::externs`]).
pub use crate::externs::{
    declare_extern, declare_extern_residuals, declare_linear_extern, declare_wrt_extern,
    restricted_name,
};

/// Driver options.
#[derive(Clone, Debug)]
pub struct Options {
    /// Run the simplifier between passes.
    pub simplify: bool,
    /// Run the checker on every output.
    pub check: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            simplify: true,
            check: true,
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

impl From<JvpError> for DriverError {
    fn from(e: JvpError) -> Self {
        DriverError::Unsupported {
            msg: e.msg,
            src: e.src,
        }
    }
}
impl From<UnzipError> for DriverError {
    fn from(e: UnzipError) -> Self {
        DriverError::Internal(e.msg)
    }
}
impl From<TransposeError> for DriverError {
    fn from(e: TransposeError) -> Self {
        match e.msg.strip_prefix("unsupported: ") {
            Some(msg) => DriverError::Unsupported {
                msg: msg.to_string(),
                src: e.src,
            },
            None => DriverError::Internal(e.msg),
        }
    }
}

/// The names of the derived functions of one function.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Names {
    /// `f__jvp`.
    pub jvp: String,
    /// `f__fwd`.
    pub fwd: String,
    /// `f__lin`.
    pub lin: String,
    /// `f__lin_t`.
    pub lin_t: String,
    /// `f__linear`: an extern declared linear, as a linear function.
    pub linear: String,
    /// `f__linear_t`: its transpose.
    pub linear_t: String,
    /// `f__fwdres`: an extern's forward half keeping its residuals as one
    /// opaque value (see [`declare_extern_residuals`]).
    pub fwdres: String,
    /// `f__linres`: its linear map at those residuals.
    pub linres: String,
    /// `f__linres_t`: the transpose of that.
    pub linres_t: String,
}

impl Names {
    /// The derived names of `f`.
    pub fn of(f: &str) -> Names {
        Names {
            jvp: jvp_name(f),
            fwd: fwd_name(f),
            lin: lin_name(f),
            lin_t: transpose_name(&lin_name(f)),
            linear: linear_name(f),
            linear_t: transpose_name(&linear_name(f)),
            fwdres: format!("{f}__fwdres"),
            linres: format!("{f}__linres"),
            linres_t: transpose_name(&format!("{f}__linres")),
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
}

/// The functions `name` calls, transitively, callees first (then `name`).
fn call_order(prog: &Program, name: &str) -> Result<Vec<String>, DriverError> {
    fn visit(
        prog: &Program,
        name: &str,
        seen: &mut HashSet<String>,
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
    visit(prog, name, &mut HashSet::new(), &mut vec![], &mut out)?;
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

/// Applies the simplifier (when enabled) to one function.
fn simplify(f: &mut Func, prog: &Program, opts: &Options) {
    if opts.simplify {
        crate::simplify::simplify_func(f, prog, &crate::simplify::Options::default());
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
    let mut out = prog.clone();
    let mut n_results = 0;
    for fname in &order {
        // The primal, folds lowered to loops, with the value-exact rules
        // first (fusion into loops, tabulation): JVP then differentiates the
        // fused loops rather than the arrays between them.
        let mut f = crate::normalize::lower_folds(out.func(fname).expect("in the program"));
        if opts.simplify {
            crate::simplify::exact(&mut f, &crate::simplify::Options::default());
        }
        verify(&out, &f, Mode::LinearA, opts)?;
        let all = vec![true; f.params.len()];
        let mask = if fname == name { wrt } else { &all[..] };
        let mut j = jvp_func(&out, &f, mask)?;
        verify(&out, &j, Mode::LinearA, opts)?;
        simplify(&mut j, &out, opts);
        verify(&out, &j, Mode::LinearA, opts)?;
        out.insert(j.clone());
        let n = unzip_and_transpose(&mut out, &j, opts)?;
        if fname == name {
            n_results = n;
        }
    }
    Ok(Derivatives {
        program: out,
        names: Names::of(name),
        n_results,
    })
}

/// Unzips the JVP-form function `j` of `out` into `fwd` and `lin`, transposes
/// `lin`, and adds the three to `out`. Returns the number of primal results
/// of `fwd` (its residuals follow).
fn unzip_and_transpose(out: &mut Program, j: &Func, opts: &Options) -> Result<usize, DriverError> {
    let u = unzip_func(out, j)?;
    let (mut fwd, mut lin) = (u.fwd, u.lin);
    verify(out, &fwd, Mode::LinearB, opts)?;
    verify(out, &lin, Mode::LinearB, opts)?;
    simplify(&mut lin, out, opts);
    prune_residuals(&mut fwd, &mut lin, u.n_results);
    simplify(&mut fwd, out, opts);
    verify(out, &fwd, Mode::LinearB, opts)?;
    verify(out, &lin, Mode::LinearB, opts)?;
    out.insert(fwd);
    out.insert(lin.clone());
    let mut t = transpose_func(out, &lin)?;
    verify(out, &t, Mode::LinearB, opts)?;
    simplify(&mut t, out, opts);
    verify(out, &t, Mode::LinearB, opts)?;
    out.insert(t);
    Ok(u.n_results)
}

/// The derivatives of `name` given its forward rule instead of its body:
/// `jvp` is a Linear A function `(x.. ; dx..) -> (y.. ; dy..)` in JVP form
/// (e.g. a user's rule through [`crate::linear_form::linear_form`]). It is
/// checked, simplified, unzipped and transposed as the JVP pass's output
/// would be; the primal `name` is the rule's non-linear part (`fwd` without
/// its residuals), so every derived function agrees with the rule.
pub fn differentiate_rule(
    prog: &Program,
    name: &str,
    mut jvp: Func,
    opts: &Options,
) -> Result<Derivatives, DriverError> {
    let names = Names::of(name);
    let mut out = prog.clone();
    jvp.name = names.jvp.clone();
    verify(&out, &jvp, Mode::LinearA, opts)?;
    simplify(&mut jvp, &out, opts);
    verify(&out, &jvp, Mode::LinearA, opts)?;
    out.insert(jvp.clone());
    let n_results = unzip_and_transpose(&mut out, &jvp, opts)?;
    let mut primal = out
        .func(&names.fwd)
        .cloned()
        .ok_or_else(|| DriverError::Internal(format!("no `{}` after unzip", names.fwd)))?;
    primal.name = name.to_string();
    primal.body.results.truncate(n_results);
    crate::simplify::simplify_func(&mut primal, &out, &crate::simplify::Options::default());
    verify(&out, &primal, Mode::LinearA, opts)?;
    out.insert(primal);
    Ok(Derivatives {
        program: out,
        names,
        n_results,
    })
}
