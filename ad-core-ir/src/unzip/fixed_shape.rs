//! Which values of a loop, build or map body have the same shape in every
//! iteration ([`fixed_shape_vars`]): the arrays that can be stacked as
//! residuals (a stack of them is a regular array), as opposed to arrays whose
//! shape may vary between iterations, which the linear side recomputes.
//!
//! ```text
//! loop n (a: [f64]) |i| {            fixed: a (loop state keeps its shape),
//!   let m = shape a, 0                      m, b (a build to a fixed size),
//!   let b = build [m] |j| { .. }     not:   k, c (an element read is a value
//!   let k = index idx[i]                     that changes; c's size depends on it)
//!   let c = build [k] |j| { .. }
//! }
//! ```

use crate::ir::*;
use std::collections::BTreeSet;

/// The largest rank of a nested loop's result that is stored across an
/// enclosing loop (whose stack adds one axis; the emitter supports rank 6).
const MAX_STACKED_RANK: usize = 5;

/// Variables bound by `body` (a loop, build or map body with parameters
/// `params`) that are the same in every iteration in the sense that matters
/// for stacking: arrays whose *shape* is fixed and scalars whose *value* is
/// fixed (so they can serve as fixed sizes). Variables from outside the body
/// and literals are fixed; loop-carried arrays keep their shape by
/// construction; shape-preserving operations of fixed-shape arrays, builds and
/// broadcasts to fixed sizes, `shape()` of fixed-shape arrays and primitives
/// of fixed scalars are fixed, and so are the results of a counted loop with
/// a fixed trip count and fixed initial state whose stacked outputs are
/// fixed in its own body (their shape is then the trip count by a fixed
/// element shape: what stores a nested loop's residual stacks instead of
/// recomputing the loop nest in every outer iteration of the reverse pass).
/// Everything else (indexed elements, reductions to scalars, calls,
/// branches) is conservatively not.
pub fn fixed_shape_vars(body: &[Stmt], params: &[Var], vars: &VarTable) -> BTreeSet<Var> {
    fixed_in(body, params, vars, &BTreeSet::new())
}

/// [`fixed_shape_vars`] of a nested body: `unfixed` are variables of the
/// enclosing bodies that are not fixed there (so not here either).
fn fixed_in(
    body: &[Stmt],
    params: &[Var],
    vars: &VarTable,
    unfixed: &BTreeSet<Var>,
) -> BTreeSet<Var> {
    let bound: BTreeSet<Var> = body.iter().flat_map(|s| s.binds.iter().copied()).collect();
    let rank = |v: &Var| vars.ty(*v).rank().unwrap_or(0);
    let mut fixed: BTreeSet<Var> = params.iter().copied().filter(|p| rank(p) > 0).collect();
    let fx = |a: &Atom, fixed: &BTreeSet<Var>| match a {
        Atom::Var(v) => {
            !bound.contains(v) && !params.contains(v) && !unfixed.contains(v) || fixed.contains(v)
        }
        _ => true,
    };
    for s in body {
        let all = |xs: &[Atom], fixed: &BTreeSet<Var>| xs.iter().all(|a| fx(a, fixed));
        let ok = match &s.expr {
            Expr::Atom(a) => fx(a, &fixed),
            Expr::Prim(_, args) => all(args, &fixed),
            Expr::Map(m) => {
                let r = m.arrs.first().and_then(|a| a.var()).map(|v| rank(&v));
                all(&m.arrs, &fixed)
                    && m.lin_arrs.is_empty()
                    && s.binds.iter().all(|b| Some(rank(b)) == r)
            }
            Expr::Build(b) => {
                all(&b.shape, &fixed) && s.binds.iter().all(|v| rank(v) == b.shape.len())
            }
            Expr::Array(op) => {
                let array_result = s.binds.iter().all(|b| rank(b) > 0);
                match op {
                    ArrayOp::Shape { arr, .. } => fx(arr, &fixed),
                    // a stride decides an order, never a size
                    ArrayOp::Stride { .. } => false,
                    ArrayOp::Update { arr, .. }
                    | ArrayOp::Scan { arr, .. }
                    | ArrayOp::Transpose { arr } => fx(arr, &fixed),
                    ArrayOp::Index { arr, .. }
                    | ArrayOp::Reduce { arr, .. }
                    | ArrayOp::ArgReduce { arr, .. } => array_result && fx(arr, &fixed),
                    ArrayOp::Gather { arr, idx } => fx(arr, &fixed) && fx(idx, &fixed),
                    ArrayOp::ScatterAdd { len, vals, .. } => fx(len, &fixed) && fx(vals, &fixed),
                    ArrayOp::MatMul { a, b } => array_result && fx(a, &fixed) && fx(b, &fixed),
                    ArrayOp::Broadcast { shape, .. } => all(shape, &fixed),
                }
            }
            Expr::Tuple(_)
            | Expr::Untuple(_)
            | Expr::Lin(_)
            | Expr::Call(_)
            | Expr::If(_)
            | Expr::Fold(_)
            | Expr::While(_) => false,
            Expr::Loop(l) => {
                let k = l.init.len();
                // What is not fixed here is not fixed inside either.
                let mut outer: BTreeSet<Var> = unfixed.clone();
                outer.extend(bound.iter().chain(params).filter(|v| !fixed.contains(v)));
                let lam = &l.body;
                let inner = fixed_in(&lam.body.stmts, &lam.params, vars, &outer);
                let inner_bound: BTreeSet<Var> = lam
                    .body
                    .stmts
                    .iter()
                    .flat_map(|s| s.binds.iter().copied())
                    .chain(lam.params.iter().copied())
                    .collect();
                let elem_fixed = |a: &Atom| match a {
                    Atom::Var(v) if inner_bound.contains(v) => rank(v) == 0 || inner.contains(v),
                    a => fx(a, &fixed),
                };
                // Scalar state has a fixed shape whatever its value.
                let init_fixed = l
                    .init
                    .iter()
                    .all(|a| crate::typing::atom_ty(a, vars).rank() == Some(0) || fx(a, &fixed));
                l.lin_init.is_empty()
                    && fx(&l.n, &fixed)
                    && init_fixed
                    && lam
                        .body
                        .results
                        .get(k..)
                        .is_some_and(|r| r.iter().all(elem_fixed))
            }
        };
        if ok {
            // A loop's scalar state changes from one iteration to the next:
            // only its arrays (state and stacks) have fixed shapes.
            // Its arrays above `MAX_STACKED_RANK` are recomputed: stacked
            // once more by the enclosing loop, they would exceed the ranks
            // the emitter supports.
            let is_loop = matches!(s.expr, Expr::Loop(_));
            fixed.extend(
                s.binds
                    .iter()
                    .copied()
                    .filter(|v| !is_loop || (rank(v) > 0 && rank(v) <= MAX_STACKED_RANK)),
            );
        }
    }
    fixed
}
