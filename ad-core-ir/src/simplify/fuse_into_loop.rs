//! Fusion of a one-dimensional map or build into the loop that reads it
//! element by element, so the intermediate array is never built.
//!
//! ```text
//! let y = map(a) |x| { let e = exp x; yield e }      let s = loop n (acc = 0.0) |i| {
//! let s = loop n (acc = 0.0) |i| {           ==>       let x = index a[i]
//!   let t = index y[i]                                  let e = exp x
//!   ..                                                  let t = e
//! }                                                     ..
//!                                                     }
//! ```
//!
//! Conditions: the producer (a `map` over rank-1 arrays or a rank-1 `build`,
//! non-linear, one result `y`) is followed in its block by a loop (for a
//! build: whose trip count is the build's extent or `shape y, 0`) whose body
//! reads `y` exactly once, at its top level, at the loop's index, and `y` is
//! read nowhere else but by `shape y, 0` in the same block (which then reads
//! the length of the map's first input, or the build's extent). The loop visits each index at most once, so each
//! element is computed at most once (never more work than the producer);
//! an index past the end fails in the fused loop exactly where it failed
//! reading `y` (a map's inputs have `y`'s length; a build's loop does not
//! go past its extent). Elements the loop never reads
//! are no longer computed, so a failure may disappear, never appear. The
//! body moves into the loop (it is not copied), so binders stay unique.

use super::facts::{
    count, counts_of, for_each_block_mut, stmt, touches_linear, Counts, CountsMemo,
};
use crate::fast_hash::FastMap;
use crate::ir::*;
use crate::visit::substitute_block;

/// Fuses every eligible producer into its loop; returns whether anything
/// changed. `memo`: the body's counts shared between passes ([`CountsMemo`];
/// `&mut None` to count afresh).
pub fn fuse_into_loop(f: &mut Func, memo: &mut CountsMemo) -> bool {
    let counts = memo.take().unwrap_or_else(|| counts_of(&f.body));
    let vars = &f.vars;
    let mut changed = false;
    for_each_block_mut(&mut f.body, &mut |b| {
        let mut p = 0;
        while p < b.stmts.len() {
            let Some((q, pos)) = target(b, p, &counts, vars) else {
                p += 1;
                continue;
            };
            let Expr::Loop(l) = &b.stmts[q].expr else {
                p += 1;
                continue;
            };
            let read = &l.body.body.stmts[pos];
            let Some(inlined) = inline(&b.stmts[p], l.body.params[0], read.binds[0], read.src)
            else {
                p += 1;
                continue;
            };
            if let Expr::Loop(l) = &mut b.stmts[q].expr {
                l.body.body.stmts.splice(pos..=pos, inlined);
            }
            let producer = b.stmts.remove(p);
            // `shape y, 0` (as lowering a fold writes it) reads the length
            // from what `y` was made of.
            let len = match &producer.expr {
                Expr::Map(m) => Expr::Array(ArrayOp::Shape {
                    arr: m.arrs[0],
                    axis: 0,
                }),
                Expr::Build(bd) => Expr::Atom(bd.shape[0]),
                _ => producer.expr.clone(),
            };
            for t in b.stmts.iter_mut() {
                if is_shape_of(t, producer.binds[0]) {
                    t.expr = len.clone();
                }
            }
            changed = true;
        }
    });
    if !changed {
        *memo = Some(counts);
    }
    changed
}

/// For the producer at `p`: the position of the consuming loop in `b` and
/// of the element read in its body.
fn target(b: &Block, p: usize, counts: &Counts, vars: &VarTable) -> Option<(usize, usize)> {
    let s = &b.stmts[p];
    let rank1 = match &s.expr {
        Expr::Map(m) => {
            m.lin_arrs.is_empty()
                && !m.arrs.is_empty()
                && m.arrs
                    .iter()
                    .all(|a| crate::typing::atom_ty(a, vars).rank() == Some(1))
        }
        Expr::Build(bd) => bd.shape.len() == 1,
        _ => false,
    };
    let [y] = s.binds.as_slice() else {
        return None;
    };
    if !rank1 || touches_linear(s) || vars.ty(*y).rank() != Some(1) {
        return None;
    }
    let shapes = b.stmts.iter().filter(|t| is_shape_of(t, *y)).count();
    if count(counts, *y) != 1 + shapes {
        return None;
    }
    let q = (p + 1..b.stmts.len())
        .find(|&q| reads(&b.stmts[q], *y) && !is_shape_of(&b.stmts[q], *y))?;
    let Expr::Loop(l) = &b.stmts[q].expr else {
        return None;
    };
    // A build's body reads no array at the index, so the loop must not run
    // past the build's extent (where reading `y` failed): its trip count is
    // the extent itself or `shape y, 0`.
    if let Expr::Build(bd) = &s.expr {
        let is_len = |a: &Atom| {
            *a == bd.shape[0]
                || b.stmts[..q].iter().any(|t| {
                    is_shape_of(t, *y) && t.binds.first().map(|v| Atom::Var(*v)) == Some(*a)
                })
        };
        if !is_len(&l.n) {
            return None;
        }
    }
    let i = l.body.params[0];
    let pos = l.body.body.stmts.iter().position(|t| {
        matches!(&t.expr, Expr::Array(ArrayOp::Index { arr, idx })
            if arr.var() == Some(*y) && idx.as_slice() == [Atom::Var(i)])
            && t.binds.len() == 1
    })?;
    Some((q, pos))
}

/// Whether `s` is `shape v, 0`.
fn is_shape_of(s: &Stmt, v: Var) -> bool {
    matches!(&s.expr, Expr::Array(ArrayOp::Shape { arr, axis: 0 }) if arr.var() == Some(v))
}

/// Whether `s` reads `v` anywhere (operands or nested blocks).
fn reads(s: &Stmt, v: Var) -> bool {
    crate::visit::reads_free_nl(s, v)
}

/// The producer's body computing element `i`, ending in `let z = result`
/// (a map's elements read from its inputs at `i`, a build's index set to `i`).
fn inline(producer: &Stmt, i: Var, z: Var, src: Option<SrcId>) -> Option<Vec<Stmt>> {
    let mut out = vec![];
    let lam = match producer.expr.clone() {
        Expr::Map(m) => {
            for (a, x) in m.arrs.iter().zip(&m.body.params) {
                out.push(stmt(
                    vec![*x],
                    vec![],
                    Expr::Array(ArrayOp::Index {
                        arr: *a,
                        idx: vec![Atom::Var(i)],
                    }),
                    producer.src,
                ));
            }
            m.body
        }
        Expr::Build(bd) => {
            let mut body = bd.body;
            let nl: FastMap<Var, Atom> = [(body.params[0], Atom::Var(i))].into_iter().collect();
            substitute_block(&mut body.body, &nl, &FastMap::default());
            body
        }
        _ => return None,
    };
    let result = *lam.body.results.first()?;
    out.extend(lam.body.stmts);
    out.push(stmt(vec![z], vec![], Expr::Atom(result), src));
    Some(out)
}
