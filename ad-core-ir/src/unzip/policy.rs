//! The residual policy of a stacked body (loop, build, map): which residuals
//! are stored (stacked per iteration or element) and which the linear side
//! recomputes ([`Unzip::split_stacked`]; the rule is stated there and in
//! `docs/ARCHITECTURE.md`, "Residual policy").
//!
//! ```text
//! loop n (s) |i| {               fwd: loop n (s) |i| {          lin: loop n |i| {
//!   let a = index x[i]                  let a = index x[i]            let a = index x[i]   (cheap: recomputed)
//!   let e = exp a                       let e = exp a                 let e = E[i]         (dear: stored)
//!   ..  uses a, e                       .. yield s', e  (E)           .. uses a, e
//! }                                   }                             }
//! ```

use super::fixed_shape::fixed_shape_vars;
use super::{Split, Unzip, UnzipError};
use crate::fast_hash::FastMap;
use crate::ir::*;
use crate::visit::free_vars_stmt;
use std::collections::BTreeSet;

/// A loop, build or map body being split: its primal statements, which
/// statement binds each variable, its parameters, and those of them the
/// linear side has without a stack (loop index, build indices, map
/// elements).
struct Body<'a> {
    prim: &'a [Stmt],
    binder: &'a FastMap<Var, usize>,
    params: &'a [Var],
    free_params: &'a [Var],
}

/// Which fixed-shape arrays computed in a stacked body are stored
/// ([`Unzip::split_stacked`]).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum ArrayResiduals {
    /// Loops: every one but cheap elementwise maps ([`cheap_array_slice`]).
    All,
    /// Builds: the `f64` arrays dear to recompute ([`dear_stmt`]); the
    /// rest are recomputed per element.
    Dear,
    /// Maps: none (recomputed).
    None,
}

impl<'p> Unzip<'p> {
    /// Splits the body of a loop, build or map, whose residuals are stacked.
    ///
    /// Residual policy: broadcasts (views in compiled code) are recomputed
    /// from their source, stored in their place when the body computes it;
    /// scalars computed in the body by a short chain of
    /// cheap statements from the free parameters (`free_params`: loop index,
    /// build indices, map elements), from values outside the body or from
    /// stored residuals are *recomputed* on the linear side ([`cheap_slice`]:
    /// a reload and a few arithmetic operations cost less than a stack write
    /// and read); other scalars computed in the body, parameters (loop state,
    /// map elements) and arrays whose shape is the same in every iteration
    /// ([`fixed_shape_vars`], the residual stacks of a nested loop with a
    /// fixed trip count included) are *stored* (stacked) as `arrays` says
    /// ([`ArrayResiduals`]): in loops all of them except those that an
    /// elementwise map of a few cheap operations on views of outer values
    /// makes, which are recomputed ([`cheap_array_slice`]); in builds only
    /// the dear ones ([`dear_stmt`]: a libm call or a function call to
    /// redo, the log-sum-exp's exponentials per point); in maps none (their
    /// operands all have the map's rank). Other arrays computed in the body
    /// are *recomputed* on the linear side from a backward slice of the
    /// primal body (the slice stops at stored residuals and parameters), so
    /// stacks are never ragged and map operands keep the map's rank.
    /// Returns `(primal, slice ++ linear, stored residuals)`.
    pub(super) fn split_stacked(
        &mut self,
        b: &Block,
        params: &[Var],
        free_params: &[Var],
        arrays: ArrayResiduals,
    ) -> Result<Split, UnzipError> {
        let (prim, lin, res) = self.split_nested(b, params)?;
        let binder: FastMap<Var, usize> = prim
            .iter()
            .enumerate()
            .flat_map(|(k, s)| s.binds.iter().map(move |v| (*v, k)))
            .collect();
        let is_array = |u: &Self, v: Var| u.vars.ty(v).rank().is_none_or(|r| r > 0);
        // The fixed-shape analysis walks the body: only when an array is
        // a residual.
        let array_residual = res
            .iter()
            .any(|v| binder.contains_key(v) && is_array(self, *v));
        let fixed = if arrays != ArrayResiduals::None && array_residual {
            fixed_shape_vars(&prim, params, &self.vars)
        } else {
            BTreeSet::new()
        };
        let mut stored: BTreeSet<Var> = BTreeSet::new();
        let mut todo: Vec<Var> = vec![];
        let mut scalars: Vec<Var> = vec![];
        let mut broadcasts: Vec<Var> = vec![];
        let mut fixed_arrays: Vec<Var> = vec![];
        for &v in &res {
            if binder.contains_key(&v) && is_array(self, v) && !fixed.contains(&v) {
                todo.push(v);
            } else if fixed.contains(&v)
                && arrays == ArrayResiduals::All
                && binder.get(&v).is_some_and(|k| {
                    matches!(prim[*k].expr, Expr::Array(ArrayOp::Broadcast { .. }))
                })
            {
                broadcasts.push(v);
            } else if binder.contains_key(&v) && !is_array(self, v) {
                scalars.push(v);
            } else if binder.contains_key(&v) && fixed.contains(&v) {
                fixed_arrays.push(v);
            } else {
                stored.insert(v);
            }
        }
        // Scalars: recompute cheap chains, store the rest. The non-cheap ones
        // are decided first, so that a cheap chain may start from them.
        let (cheap, dear): (Vec<Var>, Vec<Var>) = scalars
            .into_iter()
            .partition(|v| is_cheap_stmt(&prim[binder[v]], &self.vars));
        stored.extend(dear);
        let body = Body {
            prim: &prim,
            binder: &binder,
            params,
            free_params,
        };
        for v in cheap {
            if cheap_slice(v, &body, &stored, &self.top, &self.vars) {
                todo.push(v);
            } else {
                stored.insert(v);
            }
        }
        // Broadcasts (views in compiled code): recomputed from their
        // source, which is stored instead when the body computes it (it is
        // never larger), if their sizes are cheap to recompute.
        for v in broadcasts {
            let Expr::Array(ArrayOp::Broadcast { arr, shape, .. }) = &prim[binder[&v]].expr else {
                continue;
            };
            let src = arr.var().filter(|u| binder.contains_key(u));
            let sizes_cheap = shape.iter().filter_map(Atom::var).all(|u| {
                !binder.contains_key(&u)
                    || stored.contains(&u)
                    || cheap_slice(u, &body, &stored, &self.top, &self.vars)
            });
            if sizes_cheap && src.is_none_or(|u| fixed.contains(&u)) {
                stored.extend(src);
                todo.push(v);
            } else {
                stored.insert(v);
            }
        }
        // Fixed-shape arrays, as `arrays` says: in a loop stored unless an
        // elementwise map of a few cheap operations on views of outer
        // values makes them (the centred points `x - means[j]`: a pass over
        // the array costs no more than writing it to a stack and reading it
        // back); in a build stored only when dear (an `f64` array whose
        // making calls libm); in a map never.
        for v in fixed_arrays {
            let keep = match arrays {
                ArrayResiduals::All => !cheap_array_slice(v, &body, &stored, &self.top, &self.vars),
                ArrayResiduals::Dear => {
                    self.vars.ty(v).elem() == Some(crate::types::Scalar::F64)
                        && dear_stmt(&prim[binder[&v]])
                }
                ArrayResiduals::None => false,
            };
            if keep {
                stored.insert(v);
            } else {
                todo.push(v);
            }
        }
        let mut slice: BTreeSet<usize> = BTreeSet::new();
        while let Some(v) = todo.pop() {
            let k = binder[&v];
            if !slice.insert(k) {
                continue;
            }
            for u in free_vars_stmt(&prim[k]).nl {
                if stored.contains(&u) {
                    continue;
                }
                if binder.contains_key(&u) {
                    todo.push(u);
                } else if params.contains(&u) {
                    stored.insert(u);
                }
            }
        }
        // The slice is a second copy of primal statements: fresh binders.
        let copy: Vec<Stmt> = slice.iter().map(|k| prim[*k].clone()).collect();
        let out = self.with_fresh_copy(copy, lin);
        Ok((prim, out, stored.into_iter().collect()))
    }
}

/// Most statements a recomputed scalar residual may cost on the linear side.
const MAX_RECOMPUTE: usize = 12;

/// Whether `s` is a cheap scalar statement: a cheap primitive
/// ([`Prim::is_cheap`]), a scalar copy, an element read or a shape.
fn is_cheap_stmt(s: &Stmt, vars: &VarTable) -> bool {
    s.is_scalar_step(vars) && !matches!(&s.expr, Expr::Prim(p, _) if !p.is_cheap())
}

/// Whether the scalar residual `v` (bound in `body`) is recomputed on the
/// linear side rather than stored: its backward slice, stopping at `stored`
/// residuals, is at most [`MAX_RECOMPUTE`] cheap statements
/// ([`is_cheap_stmt`]), reads no parameter of the body other than its free
/// ones (the loop index, build indices, map elements: the linear side has
/// them without a stack; loop state would need one), and reads no array from
/// outside the body other than those in `top` (the function's parameters and
/// top-level values): an array of an enclosing loop body, such as its loop
/// state, would have to be stacked whole per enclosing iteration for the
/// reload, where storing `v` costs one scalar.
///
/// Invariant kept: recomputing never adds a stack, and the linear side's
/// extra work per iteration is bounded by a constant.
fn cheap_slice(
    v: Var,
    body: &Body,
    stored: &BTreeSet<Var>,
    top: &BTreeSet<Var>,
    vars: &VarTable,
) -> bool {
    let Some(&k) = body.binder.get(&v) else {
        return false;
    };
    let ok = |s: &Stmt| is_cheap_stmt(s, vars);
    ok(&body.prim[k]) && slice_fits(k, 1, body, stored, top, vars, &ok)
}

/// The walk both slices share: the backward slice of statement `k` of
/// `body` (already costed at `cost`), stopping at `stored` residuals, is
/// statements that `ok` allows, at most [`MAX_RECOMPUTE`] in all (each
/// costs one), reading no parameter of the body other than its free ones
/// and no array from outside the body other than those in `top`.
fn slice_fits(
    k: usize,
    mut cost: usize,
    body: &Body,
    stored: &BTreeSet<Var>,
    top: &BTreeSet<Var>,
    vars: &VarTable,
    ok: &dyn Fn(&Stmt) -> bool,
) -> bool {
    let mut seen: BTreeSet<usize> = BTreeSet::from([k]);
    let mut todo: Vec<Var> = free_vars_stmt(&body.prim[k]).nl.into_iter().collect();
    while let Some(u) = todo.pop() {
        if stored.contains(&u) {
            continue;
        }
        if let Some(&j) = body.binder.get(&u) {
            if !seen.insert(j) {
                continue;
            }
            cost += 1;
            if cost > MAX_RECOMPUTE || !ok(&body.prim[j]) {
                return false;
            }
            todo.extend(free_vars_stmt(&body.prim[j]).nl);
        } else if body.params.contains(&u) {
            if !body.free_params.contains(&u) {
                return false;
            }
        } else if vars.ty(u).rank().is_none_or(|r| r > 0) && !top.contains(&u) {
            return false;
        }
    }
    cost <= MAX_RECOMPUTE
}

/// Whether the fixed-shape array residual `v` (bound in `body`) is
/// recomputed on the linear side rather than stored: its backward slice,
/// stopping at `stored` residuals, is views (`broadcast`, `index` of an
/// array) and cheap scalar statements as for [`cheap_slice`], with `v`
/// itself made by an elementwise `map` (no linear operand) whose body is
/// cheap scalar statements; the slice and the map's body together are at
/// most [`MAX_RECOMPUTE`] statements, and the slice reads only what
/// [`cheap_slice`] allows (free parameters, top-level values, stored
/// residuals).
///
/// Invariant kept: recomputing adds no stack, and the linear side's extra
/// work per iteration is a bounded number of operations per element of
/// `v`, the work of storing `v` and reading it back.
fn cheap_array_slice(
    v: Var,
    body: &Body,
    stored: &BTreeSet<Var>,
    top: &BTreeSet<Var>,
    vars: &VarTable,
) -> bool {
    let Some(&k) = body.binder.get(&v) else {
        return false;
    };
    let Expr::Map(m) = &body.prim[k].expr else {
        return false;
    };
    let lam = &m.body.body;
    let map_cheap = m.lin_arrs.is_empty()
        && lam.lin_results.is_empty()
        && lam.stmts.iter().all(|s| is_cheap_stmt(s, vars));
    let ok = |s: &Stmt| {
        let view = s.lin_binds.is_empty()
            && matches!(
                s.expr,
                Expr::Array(ArrayOp::Broadcast { .. } | ArrayOp::Index { .. })
            );
        view || is_cheap_stmt(s, vars)
    };
    map_cheap && slice_fits(k, 1 + lam.stmts.len(), body, stored, top, vars, &ok)
}

/// Whether recomputing the array `s` binds costs a libm call (a primitive
/// that is not [`Prim::is_cheap`]) or a function call per element, at any
/// depth of its nested bodies: the exponentials of a log-sum-exp, stacked
/// by its loop over components. Storing such an array writes and reads
/// each element once; recomputing it redoes that call per element.
fn dear_stmt(s: &Stmt) -> bool {
    match &s.expr {
        Expr::Prim(p, _) => !p.is_cheap(),
        Expr::Call(_) => true,
        _ => crate::visit::blocks(&s.expr).any(|b| b.stmts.iter().any(dear_stmt)),
    }
}
