//! Shape folding: sizes known from how an array was computed.
//!
//! The known sizes come from [`super::facts::Facts`]: `map(f, y)`, elementwise
//! and index-preserving operations keep the sizes of their operand, `build`
//! and `broadcast` state theirs, a zero's shape tree states its own.

use super::engine::{Cx, Rule};
use crate::ir::*;

/// `shape(x, k) = n` when axis `k` of `x` is known to have size `n` (an atom),
/// else `shape(x, k) = shape(y, j)` when it equals axis `j` of an array `y`
/// that `x` was computed from (so CSE can merge sizes of related arrays).
pub fn fold_shape(s: &Stmt, cx: &mut Cx<'_>) -> Option<Vec<Stmt>> {
    let Expr::Array(ArrayOp::Shape {
        arr: Atom::Var(x),
        axis,
    }) = &s.expr
    else {
        return None;
    };
    let [y] = s.binds.as_slice() else {
        return None;
    };
    match cx.facts.dim_of(*x, *axis) {
        Dim::Atom(a) => {
            cx.replace_nl(*y, a);
            Some(vec![])
        }
        Dim::Of(r, k) if (r, k) != (*x, *axis) => Some(vec![cx.stmt(
            vec![*y],
            vec![],
            Expr::Array(ArrayOp::Shape {
                arr: Atom::Var(r),
                axis: k,
            }),
        )]),
        Dim::Of(..) => None,
    }
}

/// `zero(.. shape(x, k) ..) = zero(.. n ..)`: sizes in a zero's shape tree are
/// canonicalised like [`fold_shape`] (an array kept alive only for its size
/// may then go away).
pub fn zero_dims(s: &Stmt, cx: &mut Cx<'_>) -> Option<Vec<Stmt>> {
    let Expr::Lin(LinOp::Zero(shape)) = &s.expr else {
        return None;
    };
    fn canon(t: &ShapeTree, cx: &Cx<'_>, changed: &mut bool) -> ShapeTree {
        match t {
            ShapeTree::Scalar => ShapeTree::Scalar,
            ShapeTree::Array(ds) => ShapeTree::Array(
                ds.iter()
                    .map(|d| match d {
                        Dim::Of(v, k) => {
                            let c = cx.facts.dim_of(*v, *k);
                            if c != *d {
                                *changed = true;
                            }
                            c
                        }
                        Dim::Atom(_) => *d,
                    })
                    .collect(),
            ),
            ShapeTree::Tuple(ts) => {
                ShapeTree::Tuple(ts.iter().map(|t| canon(t, cx, changed)).collect())
            }
        }
    }
    let mut changed = false;
    let new = canon(shape, cx, &mut changed);
    if !changed {
        return None;
    }
    Some(vec![cx.stmt(
        s.binds.clone(),
        s.lin_binds.clone(),
        Expr::Lin(LinOp::Zero(new)),
    )])
}

/// All rules of this family, in the order the simplifier tries them.
pub const RULES: &[Rule] = &[
    Rule {
        name: "fold_shape",
        apply: fold_shape,
    },
    Rule {
        name: "zero_dims",
        apply: zero_dims,
    },
];

/// `broadcast(x, shape, all axes) = x` when every size in `shape` is known
/// to be `x`'s own along that axis (nothing is stretched): same-rank
/// elementwise arithmetic broadcasts both operands to their common shape,
/// and for operands of one shape this leaves the operands themselves.
pub fn broadcast_same(s: &Stmt, cx: &mut Cx<'_>) -> Option<Vec<Stmt>> {
    let Expr::Array(ArrayOp::Broadcast {
        arr: Atom::Var(x),
        shape,
        axes,
    }) = &s.expr
    else {
        return None;
    };
    let [y] = s.binds.as_slice() else {
        return None;
    };
    let all = axes.len() == shape.len() && axes.iter().enumerate().all(|(k, a)| k == *a);
    let same = shape.iter().enumerate().all(|(k, a)| {
        cx.facts
            .same_dim(cx.facts.dim_of(*x, k), cx.facts.canon_atom(*a))
    });
    if !(all && same) {
        return None;
    }
    cx.replace_nl(*y, Atom::Var(*x));
    Some(vec![])
}
