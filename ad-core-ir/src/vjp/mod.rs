//! Reverse mode in one sweep where the loops allow it: `f__vjp(x ; ȳ) ->
//! (y ; x̄)`, the forward half and the transposed linear map composed, and
//! each reversed loop of the transpose fused into the forward loop it
//! mirrors ([`siblings`]), so the values both halves compute are computed
//! once (CSE merges the transpose's recomputations with the forward's
//! values) and residual stacks read at the loop's own index become the
//! iteration's values.
//!
//! ```text
//! def f__fwd(x) -> (y, x, n)                  def f__vjp(x ; ct) -> (y ; g)
//!   let n = shape x, 0                          let n = shape x, 0
//!   let y = loop n (s = 0.0) |k| {              let ; z = lzero [n]
//!     let a = index x[k]                        let y ; g = loop n (s = 0.0 ; acc = z) |k| {
//!     let t = mul a, a                            let a = index x[k]
//!     let s2 = add s, t                           let t = mul a, a
//!     yield s2                                    let s2 = add s, t
//!   }                                  ==>        let a2 = mul 2.0, a
//!   return y, x, n                                let ; d = lscale a2, ct
//! def f__lin_t(x, n ; ct) -> (; g)                let ; acc2 = lupdate acc[k] += d
//!   let ; z = lzero [n]                           yield s2 ; acc2
//!   let ; g = loop n rev (; acc = z) |k| {      }
//!     let a = index x[k]                        return y ; g
//!     let a2 = mul 2.0, a
//!     let ; d = lscale a2, ct
//!     let ; acc2 = lupdate acc[k] += d
//!     yield ; acc2
//!   }
//!   return ; g
//! ```
//!
//! The forward loop keeps its order, so the primal result is bit-identical
//! to `f`'s; the reversed loop runs forward, which [`siblings`] allows only
//! where no bit of the result depends on the order (its iterations add into
//! disjoint elements: [`crate::accumulate::is_disjoint_accumulation`]), so
//! `f__vjp`'s cotangents are bit-identical to `f__lin_t`'s too. When no loop
//! fuses, there is no `f__vjp`: callers run `f__fwd` then `f__lin_t`.
//!
//! The fused loop runs sequentially (the forward loop's state is ordered).
//! The transposed loop alone could run as parallel chunks, but a disjoint
//! accumulation's accumulators are as long as the loop, so the runtime
//! gives it few chunks (`accumulate_chunks` budgets private accumulators at
//! an eighth of the loop's work): measured on 1 and 2 threads at a million
//! elements, the one sweep is faster either way (`examples/rosenbrock.rs`
//! at 100,000: 0.085 against 0.110 ms).

pub mod siblings;

use crate::fast_hash::FastMap;
use crate::ir::*;
use crate::types::Ty;
use crate::visit::{binders, rename_stmt, substitute_block};

/// `name(fwd.params ; lin_t.lin_params) -> (y ; x̄)`: the body of `fwd`
/// (its first `n_out` results are `y`), then the body of `lin_t` reading
/// `fwd`'s residual results for its non-linear parameters. Every variable of
/// `lin_t` gets a fresh binder in the new function.
pub fn compose(fwd: &Func, lin_t: &Func, n_out: usize, name: &str) -> Option<Func> {
    let resid = fwd.body.results.get(n_out..)?;
    if resid.len() != lin_t.params.len() {
        return None;
    }
    let mut f = fwd.clone();
    f.name = name.to_string();
    // Fresh copies of `lin_t`'s variables.
    let mut ren: FastMap<Var, Var> = FastMap::default();
    let mut fresh = |v: Var, vars: &mut VarTable| {
        *ren.entry(v).or_insert_with(|| {
            let i = lin_t.vars.info(v);
            vars.fresh(i.name.clone(), i.ty.clone(), i.linear)
        })
    };
    let own: Vec<Var> = lin_t
        .params
        .iter()
        .chain(&lin_t.lin_params)
        .copied()
        .chain(binders(&lin_t.body.stmts))
        .collect();
    for v in own {
        fresh(v, &mut f.vars);
    }
    let mut body = lin_t.body.clone();
    for s in &mut body.stmts {
        rename_stmt(s, &ren);
    }
    body.lin_results.iter_mut().for_each(|v| *v = ren[v]);
    // The residual parameters read `fwd`'s residual results: a variable in
    // place, a literal through a copy (a shape may name only a variable).
    let mut subst = FastMap::default();
    let mut copies = vec![];
    for (p, r) in lin_t.params.iter().zip(resid) {
        let p = ren[p];
        match r {
            Atom::Var(_) => {
                subst.insert(p, *r);
            }
            Atom::F64(_) | Atom::I64(_) | Atom::Bool(_) => copies.push(Stmt {
                binds: vec![p],
                lin_binds: vec![],
                expr: Expr::Atom(*r),
                src: None,
            }),
        }
    }
    substitute_block(&mut body, &subst, &FastMap::default());
    f.lin_params = lin_t.lin_params.iter().map(|v| ren[v]).collect();
    f.body.results.truncate(n_out);
    f.body.stmts.extend(copies);
    f.body.stmts.extend(body.stmts);
    f.body.lin_results = body.lin_results;
    Some(f)
}

/// The fused reverse mode of `f` (see the module doc), named `name`: `None`
/// when no loop of the transpose fuses into one of the forward half (the
/// composition would only add code), or when a primal result is not a
/// scalar (a caller checks an array cotangent's shape against the result
/// before the reverse pass, so it runs the two halves).
pub fn fused_vjp(
    prog: &Program,
    fwd: &Func,
    lin_t: &Func,
    n_out: usize,
    name: &str,
) -> Option<Func> {
    let scalar = |a: &Atom| matches!(crate::typing::atom_ty(a, &fwd.vars), Ty::Scalar(_));
    if !fwd.body.results.get(..n_out)?.iter().all(scalar) || !siblings::could_fuse(fwd, lin_t) {
        return None;
    }
    let mut f = compose(fwd, lin_t, n_out, name)?;
    if !siblings::fuse_siblings(&mut f) {
        return None;
    }
    // No sum moves past what `lin_t`'s own simplification moved: a rule
    // that sees the forward half's broadcasts here (in `lin_t` they are
    // residual parameters) would reorder sums `lin_t` keeps, and the
    // one-sweep `f__vjp` must give `f__lin_t`'s bits.
    let opts = crate::simplify::Options {
        sum_through: false,
        ..crate::simplify::Options::default()
    };
    crate::simplify::simplify_func(&mut f, prog, &opts);
    Some(f)
}
