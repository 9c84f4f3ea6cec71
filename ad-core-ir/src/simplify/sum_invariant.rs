//! Invariant factors out of linear sums: `Σ_i g(a, x_i) = g(a, Σ_i x_i)`
//! for a linear element function `g` whose non-linear operand `a` is the
//! same for every `i` (issue 16's factoring out of sums, the half that
//! [`super::sum_through`] leaves: maps that read non-linear arrays).
//!
//! A linear sum `lsum v, axis` where `v` is one linear result of a map is
//! rewritten when every non-linear array that result's part of the body
//! reads is a broadcast stretched along the summed axes (its elements do
//! not change along them): the sum moves onto the map's linear operands,
//! and the body runs once per element of the smaller, summed shape, on
//! the broadcast's source.
//!
//! ```text
//! let bc = broadcast diag, [n, d], axes=[1]              let bc = broadcast diag, [n, d], axes=[1]
//! let ; p, q = map(xc, bc ; ct) |x, w ; c| {             let ; ct1, ct2 = dup ct
//!   let ; c1, c2 = dup c                                 let ; p, q0 = map(xc, bc ; ct1) |..| { .. }
//!   let ; a = lscale x, c1                               drop q0
//!   let ; b = lscale w, c2                    =>         ..
//!   yield ; a, b                                         let bc2 = broadcast diag, [d], axes=[0]
//! }                                                      let ; s = lsum ct2, axis=0
//! ..                                                     let ; y = map(bc2 ; s) |w ; c| {
//! let ; y = lsum q, axis=0                                 let ; b = lscale w, c
//!                                                          yield ; b
//!                                                        }
//! ```
//!
//! The map keeps its other results (the dropped one is pruned by
//! [`super::dce::drop_dead_linear`], which also turns a `dup` whose half
//! is dropped back into the value); a map left with nothing to compute goes
//! away. On the NumPy-style GMM's reverse pass the cotangent of the centred
//! points scaled by `exp(q)` and summed over the points for `mu`'s
//! cotangent becomes `exp(q) ⊙ Σ_i ct_i`: one `n x d` result and one pass
//! over it fewer per component.
//!
//! Only a result that reads a broadcast operand (maps of linear operands
//! alone are [`super::sum_through`]'s: one result, no `dup` of the
//! operands), and only maps with linear results alone: a map that
//! also makes non-linear values (forward mode's primal beside its tangent)
//! runs anyway, and the linear map unzipped from it is transposed next,
//! where split sums would become separately filled arrays (as
//! [`super::Options::sum_through`] says).
//!
//! Legality: the element function is linear in its linear parameters and
//! captures no linear value (the checker's rules; a captured one would be
//! added once per element), and each non-linear parameter its result
//! reads is a broadcast whose source axes miss the summed ones, so every
//! term of the sum applies the same linear map. A body reading anything
//! else per element (an array that is not such a broadcast) is left alone.
//! Exactness: the same value up to the rounding of the reordered sums (a
//! fixed order, the same bits for any thread count); only linear values
//! move. Like [`super::sum_through`] it is off for a linear map about to be
//! transposed ([`super::Options::sum_through`]).

use super::facts::{drop_stmt, for_each_block_mut, stmt};
use super::sum_through::lsum;
use crate::fast_hash::{FastMap, FastSet};
use crate::ir::*;
use crate::types::Ty;
use crate::visit::{
    binders, blocks, free_vars_lambda, free_vars_stmt, rename_stmt, substitute_block,
};

/// A broadcast's source, output shape and source axes.
type Bcast = (Atom, Vec<Atom>, Vec<usize>);

/// Moves linear sums of map results past the maps' invariant factors (see
/// the module doc); returns whether anything changed.
pub fn sum_invariant_factors(f: &mut Func) -> bool {
    let mut bcs: FastMap<Var, Bcast> = FastMap::default();
    collect_broadcasts(&f.body, &mut bcs);
    if bcs.is_empty() {
        return false;
    }
    let Func { body, vars, .. } = f;
    let mut changed = false;
    for_each_block_mut(body, &mut |b| changed |= rewrite_block(b, &bcs, vars));
    changed
}

/// Every `broadcast` of `b` and its nested blocks, by result.
fn collect_broadcasts(b: &Block, out: &mut FastMap<Var, Bcast>) {
    for s in &b.stmts {
        if let (Expr::Array(ArrayOp::Broadcast { arr, shape, axes }), [y]) =
            (&s.expr, s.binds.as_slice())
        {
            out.insert(*y, (*arr, shape.clone(), axes.clone()));
        }
        for nb in blocks(&s.expr) {
            collect_broadcasts(nb, out);
        }
    }
}

/// Rewrites the sums of `b` whose operand a map of `b` makes; a map is
/// rewritten at most once per call (the next sweep sees it pruned).
fn rewrite_block(b: &mut Block, bcs: &FastMap<Var, Bcast>, vars: &mut VarTable) -> bool {
    if !b.stmts.iter().any(|s| matches!(s.expr, Expr::Map(_))) {
        return false;
    }
    let mut slots: Vec<Vec<Stmt>> = std::mem::take(&mut b.stmts)
        .into_iter()
        .map(|s| vec![s])
        .collect();
    let mut maps: FastMap<Var, usize> = FastMap::default();
    let mut changed = false;
    for j in 0..slots.len() {
        let [s] = slots[j].as_slice() else {
            continue;
        };
        if let Expr::Lin(LinOp::Sum { x, .. }) = &s.expr {
            if let Some(&i) = maps.get(x) {
                if let [producer] = slots[i].as_slice() {
                    if let Some((p, c)) = factor(producer, s, bcs, vars) {
                        slots[i] = p;
                        slots[j] = c;
                        changed = true;
                        continue;
                    }
                }
            }
        }
        if matches!(s.expr, Expr::Map(_)) {
            for v in &s.lin_binds {
                maps.insert(*v, j);
            }
        }
    }
    b.stmts = slots.into_iter().flatten().collect();
    changed
}

/// The rewrite of `consumer = lsum(v, axis)` for the map `producer` making
/// `v`: the statements replacing the producer (a `dup` of each linear
/// operand the sum needs, the map with `v` dropped) and the consumer (the
/// sums of those operands and the map of the summed shape, or its body
/// inlined when that shape is a scalar).
fn factor(
    producer: &Stmt,
    consumer: &Stmt,
    bcs: &FastMap<Var, Bcast>,
    vars: &mut VarTable,
) -> Option<(Vec<Stmt>, Vec<Stmt>)> {
    let (Expr::Map(m), Expr::Lin(LinOp::Sum { x: v, axis })) = (&producer.expr, &consumer.expr)
    else {
        return None;
    };
    let [y] = consumer.lin_binds.as_slice() else {
        return None;
    };
    // A map that also makes non-linear values (a tangent beside its
    // primal, in forward mode) runs anyway; the sums it would split go on
    // into the linear map that unzipping takes from it, to be transposed.
    if !producer.binds.is_empty() {
        return None;
    }
    let r = producer.lin_binds.iter().position(|w| w == v)?;
    let rank = vars.ty(*v).rank().filter(|&k| k >= 1)?;
    let summed: Vec<usize> = match axis {
        Some(a) if *a < rank => vec![*a],
        None => (0..rank).collect(),
        Some(_) => return None,
    };
    if !free_vars_lambda(&m.body).lin.is_empty() {
        return None;
    }
    let body = &m.body.body;
    let (keep, needed) = slice(&body.stmts, body.lin_results[r]);
    let src = consumer.src;
    let scalar = summed.len() == rank;
    // Only a result that reads an invariant factor (a broadcast operand):
    // maps of linear operands alone are `sum_through`'s, and a result
    // reading no operand is a zero, for other rules.
    if !m.body.params.iter().any(|p| needed.contains(p)) {
        return None;
    }
    // The non-linear operands, each a broadcast invariant along the sums.
    let mut pre = vec![];
    let mut arrs = vec![];
    let mut params = vec![];
    let mut inline_nl: FastMap<Var, Atom> = FastMap::default();
    for (p, a) in m.body.params.iter().zip(&m.arrs) {
        if !needed.contains(p) {
            continue;
        }
        let (arr, shape, axes) = bcs.get(&a.var()?)?;
        if axes.iter().any(|ax| summed.contains(ax)) {
            return None;
        }
        if scalar {
            // No axis left: the source is the element itself.
            inline_nl.insert(*p, *arr);
            continue;
        }
        let kept = |k: &usize| !summed.contains(k);
        let shape: Vec<Atom> = (0..shape.len()).filter(kept).map(|k| shape[k]).collect();
        let axes: Vec<usize> = axes
            .iter()
            .map(|ax| ax - summed.iter().filter(|s| *s < ax).count())
            .collect();
        let elem = crate::typing::atom_ty(a, vars).elem()?;
        let bc = vars.fresh("bc", Ty::array(elem, shape.len()), false);
        pre.push(stmt(
            vec![bc],
            vec![],
            Expr::Array(ArrayOp::Broadcast {
                arr: *arr,
                shape,
                axes,
            }),
            src,
        ));
        arrs.push(Atom::Var(bc));
        params.push(*p);
    }
    // The linear operands the result reads: one copy stays with the map,
    // the other is summed.
    let mut new_producer = producer.clone();
    let Expr::Map(pm) = &mut new_producer.expr else {
        return None;
    };
    let mut lead = vec![];
    let mut sums = vec![];
    let mut lin_params = vec![];
    for (q, x) in pm.body.lin_params.iter().zip(pm.lin_arrs.iter_mut()) {
        if !needed.contains(q) {
            continue;
        }
        let ty = vars.ty(*x).clone();
        let (x1, x2) = (
            vars.fresh("ct", ty.clone(), true),
            vars.fresh("ct", ty, true),
        );
        lead.push(stmt(vec![], vec![x1, x2], Expr::Lin(LinOp::Dup(*x)), src));
        *x = x1;
        let (s, sum) = lsum(x2, *axis, vars, src);
        pre.push(sum);
        sums.push(s);
        lin_params.push(*q);
    }
    let dropped = vars.fresh(vars.info(*v).name.clone(), vars.ty(*v).clone(), true);
    new_producer.lin_binds[r] = dropped;
    lead.push(new_producer);
    lead.push(drop_stmt(dropped, producer.src));
    // The body's part that makes the result; its other linear values are
    // dropped where they are made.
    let mut stmts = vec![];
    for (s, k) in body.stmts.iter().zip(&keep) {
        if !k {
            continue;
        }
        stmts.push(s.clone());
        for w in &s.lin_binds {
            if !needed.contains(w) {
                stmts.push(drop_stmt(*w, s.src));
            }
        }
    }
    let result = body.lin_results[r];
    if scalar {
        // Inline the body on the sources and the sums, its result bound to `y`.
        let lin: FastMap<Var, Var> = lin_params
            .iter()
            .copied()
            .zip(sums.iter().copied())
            .collect();
        let mut block = Block {
            stmts,
            results: vec![],
            lin_results: vec![result],
        };
        substitute_block(&mut block, &inline_nl, &lin);
        // The result reads a broadcast operand, so a statement of the body
        // binds it (it is not one of the sums): bound to `y` instead.
        let mut fresh = fresh_binders(&block.stmts, vars);
        fresh.insert(result, *y);
        for s in &mut block.stmts {
            rename_stmt(s, &fresh);
        }
        pre.extend(block.stmts);
        return Some((lead, pre));
    }
    let mapped = Map {
        arrs,
        lin_arrs: sums,
        body: Lambda {
            params,
            lin_params,
            body: Block {
                stmts,
                results: vec![],
                lin_results: vec![result],
            },
        },
    };
    let mut s = stmt(vec![], vec![*y], Expr::Map(mapped), src);
    let mut fresh = fresh_binders(std::slice::from_ref(&s), vars);
    fresh.remove(y);
    rename_stmt(&mut s, &fresh);
    pre.push(s);
    Some((lead, pre))
}

/// Which statements of a body `result` depends on, and the variables they
/// read and bind on the way (`result` included).
fn slice(stmts: &[Stmt], result: Var) -> (Vec<bool>, FastSet<Var>) {
    let mut needed: FastSet<Var> = FastSet::default();
    needed.insert(result);
    let mut keep = vec![false; stmts.len()];
    for (k, s) in stmts.iter().enumerate().rev() {
        if s.binds
            .iter()
            .chain(&s.lin_binds)
            .any(|w| needed.contains(w))
        {
            keep[k] = true;
            let fv = free_vars_stmt(s);
            needed.extend(fv.nl);
            needed.extend(fv.lin);
        }
    }
    (keep, needed)
}

/// A fresh variable for every variable bound in `stmts` (binders, lambda
/// parameters, nested blocks): the copy of a body must not bind what the
/// map it came from binds.
fn fresh_binders(stmts: &[Stmt], vars: &mut VarTable) -> FastMap<Var, Var> {
    binders(stmts)
        .into_iter()
        .map(|v| {
            let info = vars.info(v).clone();
            (v, vars.fresh(info.name, info.ty, info.linear))
        })
        .collect()
}
