//! Sums moved through linear maps: `Σ_i A(x_i) = A(Σ_i x_i)` for a linear
//! map `A` that is the same for every `i` (issue 16's factoring out of sums
//! at the level of linear maps).
//!
//! A linear sum (`lsum x, axis`) whose operand is made, for that sum alone,
//! by a linear operation is rewritten to sum that operation's linear
//! operands first and apply the operation to the (smaller) sums:
//!
//! ```text
//! lsum(lmatmul(x, a) lin_left, axis=0)    =  lmatmul(lsum(x, axis=0), a) lin_left   (vec·mat)
//! lsum(lmatmul(a, x), axis=1)             =  lmatmul(a, lsum(x, axis=1))             (mat·vec)
//! lsum(lmatmul(x, a) lin_left, axis=1)    =  lmatmul(reduce_sum(a, axis=1), x) lin_left
//! lsum(lmatmul(a, x), axis=0)             =  lmatmul(reduce_sum(a, axis=0), x)
//! lsum(ladd(p, q), ax)                    =  ladd(lsum(p, ax), lsum(q, ax))
//! lsum(lneg(p), ax)                       =  lneg(lsum(p, ax))
//! lsum(lscale(s, p), ax)    (s a scalar)  =  lscale(s, lsum(p, ax))
//! lsum(lsum_to(p, sh), axis=a)            =  lsum_to(lsum(p, axis=a), sh without a)
//! lsum(map(; xs) |; ps| body, ax)         =  map(; lsum(x, ax) ..) |; ps| body
//! ```
//!
//! The last rule needs a map with linear operands only and no captured
//! linear value: its body reads no element of a non-linear array and adds
//! nothing per element, so it applies one linear map to every element, and
//! the sum of its results is that map of the sums (inlined when the sums
//! are scalars). On NumPy-style code, the reverse pass of
//! `(x - &mu) .dot(&l.t())` summed over the points for `mu`'s cotangent
//! becomes one vector-matrix product instead of a matrix product and a sum.
//!
//! Not run on a linear map that is transposed next
//! ([`super::Options::sum_through`]): there a sum moved towards the inputs
//! becomes broadcasts moved towards the outputs.
//!
//! Exactness: the same value up to the rounding of the reordered sums
//! (fixed by the program, so the same bits for any thread count). Only
//! linear operations move, so primal values are untouched. The pass runs
//! after `lin_elementwise`, so a product rule's terms fused into one map
//! (`ladd(map(..).0, map(..).1)`) are summed once rather than split.

use super::facts::{count, stmt, Counts, CountsMemo};
use super::fusion::fuse_pairs;
use crate::fast_hash::FastMap;
use crate::ir::*;
use crate::types::Ty;
use crate::visit::substitute_block;

/// Moves the linear sums of `f` through the linear operations that make
/// their operands (see the module doc); returns whether anything changed.
pub fn sum_through_linear(f: &mut Func, memo: &mut CountsMemo) -> bool {
    fuse_pairs(f, is_producer, summed, through, memo)
}

/// A statement a sum can move through: a linear matrix product, `ladd`,
/// `lneg`, `lscale`, `lsum_to`, or a map with linear operands only and one
/// linear result.
fn is_producer(s: &Stmt, _: &VarTable) -> bool {
    match &s.expr {
        Expr::Lin(op) => matches!(
            op,
            LinOp::MatMul { .. }
                | LinOp::Add(..)
                | LinOp::Neg(_)
                | LinOp::Scale { .. }
                | LinOp::SumTo { .. }
        ),
        Expr::Map(m) => m.arrs.is_empty() && s.binds.is_empty() && s.lin_binds.len() == 1,
        _ => false,
    }
}

/// The operand of a linear sum.
fn summed(s: &Stmt) -> Vec<Var> {
    match &s.expr {
        Expr::Lin(LinOp::Sum { x, .. }) => vec![*x],
        _ => vec![],
    }
}

/// The type of `lsum` of a linear array of rank `rank` along `axis`.
fn summed_ty(rank: usize, axis: Option<usize>) -> Ty {
    match axis {
        Some(_) if rank >= 2 => Ty::f64s(rank - 1),
        _ => Ty::F64,
    }
}

/// `let ; s = lsum x, axis` for a fresh `s`.
pub(super) fn lsum(
    x: Var,
    axis: Option<usize>,
    vars: &mut VarTable,
    src: Option<SrcId>,
) -> (Var, Stmt) {
    let rank = vars.ty(x).rank().unwrap_or(0);
    let s = vars.fresh("sum", summed_ty(rank, axis), true);
    (
        s,
        stmt(vec![], vec![s], Expr::Lin(LinOp::Sum { x, axis }), src),
    )
}

/// The rewrite of `consumer = lsum(v, axis)` where `producer` makes `v`
/// for it alone.
fn through(
    producer: &Stmt,
    consumer: &Stmt,
    v: Var,
    counts: &Counts,
    vars: &mut VarTable,
) -> Option<Vec<Stmt>> {
    let Expr::Lin(LinOp::Sum { axis, .. }) = &consumer.expr else {
        return None;
    };
    let axis = *axis;
    let [y] = consumer.lin_binds.as_slice() else {
        return None;
    };
    if count(counts, v) != 1 || producer.lin_binds.as_slice() != [v] {
        return None;
    }
    let (y, src) = (*y, consumer.src);
    let lin = |op: LinOp| stmt(vec![], vec![y], Expr::Lin(op), src);
    match &producer.expr {
        Expr::Lin(LinOp::MatMul { a, x, lin_left }) => {
            matmul(*a, *x, *lin_left, axis, y, src, vars)
        }
        Expr::Lin(LinOp::Add(p, q)) => {
            let (sp, s1) = lsum(*p, axis, vars, src);
            let (sq, s2) = lsum(*q, axis, vars, src);
            Some(vec![s1, s2, lin(LinOp::Add(sp, sq))])
        }
        Expr::Lin(LinOp::Neg(p)) => {
            let (sp, s1) = lsum(*p, axis, vars, src);
            Some(vec![s1, lin(LinOp::Neg(sp))])
        }
        Expr::Lin(LinOp::Scale { s, x }) => {
            if crate::typing::atom_ty(s, vars) != Ty::F64 {
                return None;
            }
            let (sx, s1) = lsum(*x, axis, vars, src);
            Some(vec![s1, lin(LinOp::Scale { s: *s, x: sx })])
        }
        Expr::Lin(LinOp::SumTo { x, shape }) => match axis {
            // Everything summed (a vector's one axis too): the sum of `x`.
            None => Some(vec![lin(LinOp::Sum { x: *x, axis: None })]),
            Some(_) if shape.len() == 1 => Some(vec![lin(LinOp::Sum { x: *x, axis: None })]),
            Some(a) if a < shape.len() => {
                let mut shape = shape.clone();
                shape.remove(a);
                let (sx, s1) = lsum(*x, axis, vars, src);
                Some(vec![s1, lin(LinOp::SumTo { x: sx, shape })])
            }
            Some(_) => None,
        },
        Expr::Map(m) => map(m, axis, y, src, vars),
        _ => None,
    }
}

/// `lsum(matmul) `: the linear operand summed first where the summed axis
/// is its own, the non-linear operand reduced where it is the other's
/// (rank-2 products only).
fn matmul(
    a: Atom,
    x: Var,
    lin_left: bool,
    axis: Option<usize>,
    y: Var,
    src: Option<SrcId>,
    vars: &mut VarTable,
) -> Option<Vec<Stmt>> {
    let ranks = (crate::typing::atom_ty(&a, vars).rank(), vars.ty(x).rank());
    if ranks != (Some(2), Some(2)) {
        return None;
    }
    let ax = axis?;
    // The linear operand keeps the summed axis (rows of `x · a`, columns of
    // `a · x`): sum it, then multiply.
    if (lin_left && ax == 0) || (!lin_left && ax == 1) {
        let (sx, s1) = lsum(x, axis, vars, src);
        let mm = LinOp::MatMul { a, x: sx, lin_left };
        return Some(vec![s1, stmt(vec![], vec![y], Expr::Lin(mm), src)]);
    }
    // The non-linear operand does: `Σ_j (x · a)[i, j] = x · (Σ_j a[:, j])`.
    let r = vars.fresh("red", Ty::f64s(1), false);
    let reduce = ArrayOp::Reduce {
        op: ReduceOp::Sum,
        arr: a,
        axis: Some(if lin_left { 1 } else { 0 }),
    };
    let mm = LinOp::MatMul {
        a: Atom::Var(r),
        x,
        lin_left,
    };
    Some(vec![
        stmt(vec![r], vec![], Expr::Array(reduce), src),
        stmt(vec![], vec![y], Expr::Lin(mm), src),
    ])
}

/// `lsum` of a map with linear operands only: the map of the operands'
/// sums (arrays), or its body inlined on them (scalars).
fn map(
    m: &Map,
    axis: Option<usize>,
    y: Var,
    src: Option<SrcId>,
    vars: &mut VarTable,
) -> Option<Vec<Stmt>> {
    let first = *m.lin_arrs.first()?;
    let rank = vars.ty(first).rank()?;
    // Scalar elements (one linear scalar result per element), and no linear
    // value captured from outside: the body adds such a value once per
    // element (`Σ_i (x_i + c) = Σ_i x_i + n c`, not the body of the sums).
    if rank == 0
        || m.body.body.lin_results.len() != 1
        || !m.body.params.is_empty()
        || !crate::visit::free_vars_lambda(&m.body).lin.is_empty()
    {
        return None;
    }
    let mut out = vec![];
    let mut sums = vec![];
    for x in &m.lin_arrs {
        let (s, st) = lsum(*x, axis, vars, src);
        out.push(st);
        sums.push(s);
    }
    if matches!(summed_ty(rank, axis), Ty::Array { .. }) {
        let body = m.body.clone();
        let mapped = Map {
            arrs: vec![],
            lin_arrs: sums,
            body,
        };
        out.push(stmt(vec![], vec![y], Expr::Map(mapped), src));
        return Some(out);
    }
    // Scalars: the body on the sums, its result bound to `y`.
    let mut body = m.body.body.clone();
    let lin: FastMap<Var, Var> = m.body.lin_params.iter().copied().zip(sums).collect();
    substitute_block(&mut body, &FastMap::default(), &lin);
    let r = body.lin_results[0];
    let mut stmts = body.stmts;
    match stmts.iter_mut().find(|s| s.lin_binds.contains(&r)) {
        Some(s) => {
            for b in &mut s.lin_binds {
                if *b == r {
                    *b = y;
                }
            }
        }
        // The result is one of the sums: bind that sum to `y` instead.
        None => {
            for s in &mut out {
                for b in &mut s.lin_binds {
                    if *b == r {
                        *b = y;
                    }
                }
            }
        }
    }
    out.extend(stmts);
    Some(out)
}
