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
use crate::transpose::{transpose_func, transpose_name, TransposeError};
use crate::unzip::{fwd_name, lin_name, unzip_func, UnzipError};
use crate::visit::free_vars_block;
use std::collections::{BTreeSet, HashSet};
use std::fmt;

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

/// Removes the residuals that the linear function does not read from both
/// `fwd`'s results and `lin`'s parameters. Returns the number removed.
pub fn prune_residuals(fwd: &mut Func, lin: &mut Func, n_results: usize) -> usize {
    let mut used = free_vars_block(&lin.body).nl;
    for s in &lin.lin_param_shapes {
        shape_vars(s, &mut used);
    }
    let keep: Vec<bool> = lin.params.iter().map(|p| used.contains(p)).collect();
    let removed = keep.iter().filter(|k| !**k).count();
    if removed == 0 {
        return 0;
    }
    let mut k = 0;
    lin.params.retain(|_| {
        k += 1;
        keep[k - 1]
    });
    let mut j = 0;
    let res = std::mem::take(&mut fwd.body.results);
    for (i, a) in res.into_iter().enumerate() {
        if i < n_results {
            fwd.body.results.push(a);
        } else {
            if keep[j] {
                fwd.body.results.push(a);
            }
            j += 1;
        }
    }
    removed
}

/// Adds the variables a shape reads to `out`.
pub(crate) fn shape_vars(s: &ShapeTree, out: &mut BTreeSet<Var>) {
    match s {
        ShapeTree::Scalar => {}
        ShapeTree::Array(ds) => {
            for d in ds {
                match d {
                    Dim::Atom(Atom::Var(v)) | Dim::Of(v, _) => {
                        out.insert(*v);
                    }
                    Dim::Atom(_) => {}
                }
            }
        }
        ShapeTree::Tuple(ts) => ts.iter().for_each(|t| shape_vars(t, out)),
    }
}

/// Declares an extern function `name(params) -> results` of `prog` together
/// with its derivative building blocks (all differentiable parameters):
/// `name__jvp(x ; dx) -> (y ; dy)`, `name__lin(x ; dx) -> (; dy)` and
/// `name__lin_t(x ; ȳ) -> (; x̄)`. The derivative blocks take the primal
/// arguments, so a caller's residuals for the call are its arguments and the
/// callee recomputes its own primal (checkpointing at the call boundary).
pub fn declare_extern(
    prog: &mut Program,
    name: &str,
    params: &[crate::types::Ty],
    results: &[crate::types::Ty],
) {
    use crate::types::Ty;
    let tan = |ts: &[Ty]| -> Vec<Ty> { ts.iter().filter_map(Ty::tangent).collect() };
    let n = Names::of(name);
    let (tp, tr) = (tan(params), tan(results));
    for f in [
        extern_decl(name.to_string(), params, &[], results, &[]),
        extern_decl(n.jvp, params, &tp, results, &tr),
        extern_decl(n.lin, params, &tp, &[], &tr),
        extern_decl(n.lin_t, params, &tr, &[], &tp),
    ] {
        add_extern(prog, f);
    }
}

/// The declaration `name(ps ; lps) -> (rs ; lrs)`: a body with no
/// statements whose results are unbound variables of the result types.
fn extern_decl(
    name: String,
    ps: &[crate::types::Ty],
    lps: &[crate::types::Ty],
    rs: &[crate::types::Ty],
    lrs: &[crate::types::Ty],
) -> Func {
    let mut vars = VarTable::default();
    let params = ps
        .iter()
        .map(|t| vars.fresh("x", t.clone(), false))
        .collect();
    let lin_params = lps
        .iter()
        .map(|t| vars.fresh("dx", t.clone(), true))
        .collect();
    let results = rs
        .iter()
        .map(|t| Atom::Var(vars.fresh("y", t.clone(), false)))
        .collect();
    let lin_results = lrs
        .iter()
        .map(|t| vars.fresh("dy", t.clone(), true))
        .collect();
    Func {
        name,
        params,
        lin_params,
        lin_param_shapes: vec![],
        body: Block {
            stmts: vec![],
            results,
            lin_results,
        },
        vars,
    }
}

/// Adds (or replaces) the extern declaration `f`.
fn add_extern(prog: &mut Program, f: Func) {
    prog.externs.retain(|g| g.name != f.name);
    prog.externs.push(f);
}

/// The tangent types of the parameters flagged in `flags` (those with a
/// tangent), and of the results.
fn flagged_tangents(
    params: &[crate::types::Ty],
    flags: &[bool],
    results: &[crate::types::Ty],
) -> (Vec<crate::types::Ty>, Vec<crate::types::Ty>) {
    let tp = params
        .iter()
        .zip(flags)
        .filter(|(_, f)| **f)
        .filter_map(|(t, _)| t.tangent())
        .collect();
    (tp, results.iter().filter_map(|t| t.tangent()).collect())
}

/// The extern that is `g` differentiated with respect to the parameters its
/// [`Program::wrt_externs`] entry flags only: `g__w`.
pub fn restricted_name(g: &str) -> String {
    format!("{g}__w")
}

/// As [`declare_extern`], for an extern `g` whose derivatives also exist
/// with respect to the parameters flagged in `wrt` alone (a callee
/// declared `#[differentiable(wrt(..))]`): also declares `g__w` (`g`
/// itself) and `g__w__jvp(x ; dx_w) -> (y ; dy)`, `g__w__lin(x ; dx_w) ->
/// (; dy)` and `g__w__lin_t(x ; ȳ) -> (; x̄_w)`, where `dx_w` are the
/// tangents of the flagged parameters. JVP calls `g__w__jvp` where every
/// argument with a tangent is flagged:
///
/// ```text
/// y = g(theta, data)            (g declared wrt(theta); data constant)
/// ==>  y ; dy = g__w__jvp(theta, data ; dtheta)      (no zero tangent of data)
/// ```
pub fn declare_wrt_extern(
    prog: &mut Program,
    name: &str,
    params: &[crate::types::Ty],
    results: &[crate::types::Ty],
    wrt: &[bool],
) {
    declare_extern(prog, name, params, results);
    let w = restricted_name(name);
    let (tp, tr) = flagged_tangents(params, wrt, results);
    let n = Names::of(&w);
    for f in [
        extern_decl(w.clone(), params, &[], results, &[]),
        extern_decl(n.jvp, params, &tp, results, &tr),
        extern_decl(n.lin, params, &tp, &[], &tr),
        extern_decl(n.lin_t, params, &tr, &[], &tp),
    ] {
        add_extern(prog, f);
    }
    prog.wrt_externs.retain(|(g, _)| g != name);
    prog.wrt_externs.push((name.to_string(), wrt.to_vec()));
}

/// Declares, beside an extern `g` declared with [`declare_extern`] (or the
/// restricted `g__w` of [`declare_wrt_extern`]), its forward half and linear
/// maps at kept residuals: `g__fwdres(x) -> (y.., r)`, where `r` is one
/// value of the host's type `res` ([`crate::types::Ty::Opaque`]), `g__linres(r ; dx) ->
/// (; dy)` and `g__linres_t(r ; ȳ) -> (; x̄)` (the tangents of `tangents`,
/// the parameters flagged, in order). Unzip calls these for a call at the top
/// level of a function body, so the linear side reads `g`'s residuals instead
/// of recomputing `g`'s primal (a linear map called again and again, as
/// `f_linearize`'s is, then costs no primal of `g` per call):
///
/// ```text
/// y = g(x)       ==>   fwd: y, r = g__fwdres(x)      lin: dy = g__linres(r ; dx)
/// ```
///
/// Calls nested in loops, builds, maps and branches keep the checkpointing
/// rule (their residuals would have to be stacked).
pub fn declare_extern_residuals(
    prog: &mut Program,
    name: &str,
    params: &[crate::types::Ty],
    results: &[crate::types::Ty],
    tangents: &[bool],
    res: &str,
) {
    use crate::types::Ty;
    let (tp, tr) = flagged_tangents(params, tangents, results);
    let r = [Ty::Opaque(res.to_string())];
    let mut outs = results.to_vec();
    outs.push(r[0].clone());
    let n = Names::of(name);
    for f in [
        extern_decl(n.fwdres, params, &[], &outs, &[]),
        extern_decl(n.linres, &r, &tp, &[], &tr),
        extern_decl(n.linres_t, &r, &tr, &[], &tp),
    ] {
        add_extern(prog, f);
    }
}

/// As [`declare_extern`], for an extern linear in the parameters flagged in
/// `linear` (`#[linear(..)]`), and also declares `name__linear(a ; x) -> (; y)`
/// (the function itself: `a` the other parameters, `x` the linear ones,
/// whose tangent types they have) and its transpose
/// `name__linear_t(a ; ȳ) -> (; x̄)`. JVP calls them where only linear
/// arguments carry tangents: `d g(a, x) = g(a, dx)`, and reverse mode is
/// the user's transpose, with no linearisation of `g` and only `a` kept.
pub fn declare_linear_extern(
    prog: &mut Program,
    name: &str,
    params: &[crate::types::Ty],
    results: &[crate::types::Ty],
    linear: &[bool],
) {
    use crate::types::Ty;
    declare_extern(prog, name, params, results);
    // A flag on a parameter without tangent (not a linear type) is ignored.
    let linear: Vec<bool> = params
        .iter()
        .zip(linear)
        .map(|(t, l)| *l && t.tangent().is_some())
        .collect();
    let mut consts: Vec<Ty> = vec![];
    let mut lins: Vec<Ty> = vec![];
    for (t, l) in params.iter().zip(&linear) {
        match (l, t.tangent()) {
            (true, Some(tt)) => lins.push(tt),
            _ => consts.push(t.clone()),
        }
    }
    let outs: Vec<Ty> = results.iter().filter_map(Ty::tangent).collect();
    let n = Names::of(name);
    for (fname, lps, lrs) in [(n.linear, &lins, &outs), (n.linear_t, &outs, &lins)] {
        add_extern(prog, extern_decl(fname, &consts, lps, &[], lrs));
    }
    prog.linear_externs.retain(|(g, _)| g != name);
    prog.linear_externs.push((name.to_string(), linear));
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
