//! Loop-invariant code motion out of loop, build, map and fold bodies.
//!
//! `loop/build/map/fold |p| { let y = e; .. }` with `e` reading nothing bound
//! in the body = `let y = e; loop/build/map/fold |p| { .. }`, for `e` pure,
//! non-linear and *infallible*: the body may run zero times, so an operation
//! that can fail (indexing, `i64` arithmetic, matmul shapes, calls) is never
//! hoisted. A compound statement (an invariant map, say) is hoisted whole when
//! everything in it is infallible. Hoisting goes one level per statement; nested bodies are handled
//! first, so an invariant moves out of every lambda it does not depend on.

use crate::fast_hash::FastSet;
use crate::ir::*;
use crate::types::{Scalar, Ty};
use crate::typing::atom_ty;
use crate::visit::{blocks_mut, free_vars_stmt};

/// Hoists invariant statements everywhere; returns whether anything moved.
pub fn licm(f: &mut Func) -> bool {
    let mut nonneg = FastSet::default();
    super::facts::for_each_block_mut(&mut f.body, &mut |b| {
        for s in &b.stmts {
            if let (Expr::Array(ArrayOp::Shape { .. }), [y]) = (&s.expr, s.binds.as_slice()) {
                nonneg.insert(*y);
            }
        }
    });
    licm_block(&mut f.body, &f.vars, &nonneg)
}

fn licm_block(b: &mut Block, vars: &VarTable, nonneg: &FastSet<Var>) -> bool {
    let mut changed = false;
    let old = std::mem::take(&mut b.stmts);
    for mut s in old {
        for nb in blocks_mut(&mut s.expr) {
            changed |= licm_block(nb, vars, nonneg);
        }
        let lam = match &mut s.expr {
            Expr::Loop(l) => Some(&mut l.body),
            Expr::Build(bd) => Some(&mut bd.body),
            Expr::Map(m) => Some(&mut m.body),
            Expr::Fold(fd) => Some(&mut fd.body),
            // Two lambdas over one state: nothing is hoisted (yet).
            Expr::While(_) => None,
            Expr::Atom(_)
            | Expr::Prim(..)
            | Expr::Array(_)
            | Expr::Tuple(_)
            | Expr::Untuple(_)
            | Expr::Lin(_)
            | Expr::Call(_)
            | Expr::If(_) => None,
        };
        if let Some(lam) = lam {
            let hoisted = hoist_from(lam, vars, nonneg);
            changed |= !hoisted.is_empty();
            b.stmts.extend(hoisted);
        }
        b.stmts.push(s);
    }
    changed
}

/// Removes the invariant statements of a lambda body and returns them in order.
fn hoist_from(lam: &mut Lambda, vars: &VarTable, nonneg: &FastSet<Var>) -> Vec<Stmt> {
    let mut inner: FastSet<Var> = lam.params.iter().chain(&lam.lin_params).copied().collect();
    let mut out = vec![];
    let mut kept = vec![];
    for s in std::mem::take(&mut lam.body.stmts) {
        // The cheap test first: most statements of a body (the linear ones,
        // those that can fail) are not hoistable, whatever they read.
        let invariant = |s: &Stmt| {
            let fv = free_vars_stmt(s);
            fv.lin.is_empty() && fv.nl.iter().all(|v| !inner.contains(v))
        };
        if hoistable(&s, vars, nonneg) && invariant(&s) {
            out.push(s);
        } else {
            inner.extend(s.binds.iter().chain(&s.lin_binds).copied());
            kept.push(s);
        }
    }
    lam.body.stmts = kept;
    out
}

/// Whether a statement is pure, non-linear and cannot fail.
pub fn hoistable(s: &Stmt, vars: &VarTable, nonneg: &FastSet<Var>) -> bool {
    !s.binds.is_empty() && infallible(s, vars, nonneg)
}

/// Whether a statement binds and reads no linear value and cannot fail; a
/// compound statement qualifies when every statement of its bodies does
/// (and a map's arrays cannot differ in shape, a build's sizes are
/// non-negative).
fn infallible(s: &Stmt, vars: &VarTable, nonneg: &FastSet<Var>) -> bool {
    if !s.lin_binds.is_empty() {
        return false;
    }
    let elem = |a: &Atom| atom_ty(a, vars).elem();
    let size_ok = |a: &Atom| match a {
        Atom::I64(n) => *n >= 0,
        Atom::Var(v) => nonneg.contains(v),
        Atom::F64(_) | Atom::Bool(_) => false,
    };
    let scalars = |xs: &[Atom]| xs.iter().all(|a| atom_ty(a, vars).rank() == Some(0));
    let body_ok =
        |b: &Block| b.lin_results.is_empty() && b.stmts.iter().all(|t| infallible(t, vars, nonneg));
    match &s.expr {
        Expr::Atom(_) | Expr::Tuple(_) | Expr::Untuple(_) => true,
        Expr::Prim(p, xs) => prim_infallible(*p, xs, vars),
        Expr::Array(op) => match op {
            ArrayOp::Shape { .. }
            | ArrayOp::Stride { .. }
            | ArrayOp::Transpose { .. }
            | ArrayOp::ArgReduce { .. } => true,
            ArrayOp::Reduce { op, arr, .. } => {
                elem(arr) == Some(Scalar::F64) || matches!(op, ReduceOp::Max | ReduceOp::Min)
            }
            ArrayOp::Scan { arr, .. } => elem(arr) == Some(Scalar::F64),
            ArrayOp::Broadcast { arr, shape, axes } => {
                axes.is_empty() && atom_ty(arr, vars).rank() == Some(0) && shape.iter().all(size_ok)
            }
            ArrayOp::Index { .. }
            | ArrayOp::Update { .. }
            | ArrayOp::Gather { .. }
            | ArrayOp::ScatterAdd { .. }
            | ArrayOp::MatMul { .. } => false,
        },
        // Stacking element results of different shapes fails: scalars only.
        Expr::Map(m) => {
            m.lin_arrs.is_empty()
                && m.arrs.windows(2).all(|w| w[0] == w[1])
                && scalars(&m.body.body.results)
                && body_ok(&m.body.body)
        }
        Expr::Build(b) => {
            b.shape.iter().all(size_ok) && scalars(&b.body.body.results) && body_ok(&b.body.body)
        }
        Expr::Loop(l) => {
            l.lin_init.is_empty()
                && scalars(&l.body.body.results[l.init.len().min(l.body.body.results.len())..])
                && body_ok(&l.body.body)
        }
        Expr::Fold(fd) => body_ok(&fd.body.body),
        Expr::If(i) => body_ok(&i.then_) && body_ok(&i.else_),
        // A while loop may not end: never moved to where it would run more.
        Expr::Lin(_) | Expr::Call(_) | Expr::While(_) => false,
    }
}

/// Whether a primitive cannot fail on these operands: everything on `f64` and
/// `bool`, comparisons and max/min on `i64`, casts; not `i64` arithmetic.
fn prim_infallible(p: Prim, xs: &[Atom], vars: &VarTable) -> bool {
    let float = xs.first().map(|a| atom_ty(a, vars)) == Some(Ty::F64);
    match p {
        Prim::Add | Prim::Sub | Prim::Mul | Prim::Div | Prim::Rem | Prim::Neg | Prim::Abs => float,
        Prim::Powi => matches!(xs.get(1), Some(Atom::I64(n)) if i32::try_from(*n).is_ok()),
        // clamp panics unless lo <= hi; integer arithmetic may overflow
        Prim::Clamp | Prim::IntArith(..) => false,
        Prim::MulAdd
        | Prim::Exp2
        | Prim::Cbrt
        | Prim::Floor
        | Prim::Ceil
        | Prim::Round
        | Prim::Trunc
        | Prim::Signum
        | Prim::Copysign
        | Prim::IntCast(_)
        | Prim::FloatToInt(_)
        | Prim::U64ToF64
        | Prim::ULt
        | Prim::ULe
        | Prim::UGt
        | Prim::UGe
        | Prim::UMax
        | Prim::UMin => true,
        Prim::Max
        | Prim::Min
        | Prim::Sin
        | Prim::Cos
        | Prim::Tan
        | Prim::Exp
        | Prim::Ln
        | Prim::Log2
        | Prim::Log10
        | Prim::Sqrt
        | Prim::Tanh
        | Prim::Sinh
        | Prim::Cosh
        | Prim::Atan
        | Prim::Asin
        | Prim::Acos
        | Prim::Asinh
        | Prim::Acosh
        | Prim::Atanh
        | Prim::ExpM1
        | Prim::Ln1p
        | Prim::Powf
        | Prim::Atan2
        | Prim::Hypot
        | Prim::Lt
        | Prim::Le
        | Prim::Gt
        | Prim::Ge
        | Prim::Eq
        | Prim::Ne
        | Prim::And
        | Prim::Or
        | Prim::Not
        | Prim::ToF64
        | Prim::ToI64
        | Prim::Select => true,
    }
}
