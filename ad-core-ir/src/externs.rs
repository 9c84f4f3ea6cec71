//! Declarations of functions defined elsewhere (*externs*): a callee the
//! caller's expansion cannot see, declared by its signature with the derived
//! functions the passes call ([`crate::ir::Program::externs`]). A declaration
//! is a function whose body has no statements and whose results are unbound
//! variables of the result types.
//!
//! ```text
//! declare_extern(prog, "g", [f64, [f64]], [f64])   adds to prog.externs:
//!   g(x: f64, v: [f64]) -> f64
//!   g__jvp(x: f64, v: [f64] ; dx: f64, dv: [f64]) -> (f64 ; f64)
//!   g__lin(x: f64, v: [f64] ; dx: f64, dv: [f64]) -> (; f64)
//!   g__lin_t(x: f64, v: [f64] ; ct: f64) -> (; f64, [f64])
//! ```
//!
//! The derived functions take the primal arguments (derivatives checkpoint
//! at the call); the variants here add a `wrt` subset
//! ([`declare_wrt_extern`]), kept residuals ([`declare_extern_residuals`])
//! and declared linearity ([`declare_linear_extern`]).

use crate::ir::*;
use crate::names::{restricted_name, Names};

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
