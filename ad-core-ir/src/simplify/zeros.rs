//! Symbolic zeros: a linear zero (`LinOp::Zero`) is propagated through linear
//! operations and never materialised where it can be avoided.
//!
//! ```text
//! let ; z = lzero [n]                     let ; y = lindex dx[i]
//! let ; s = lscale w, z          ==>
//! let ; t = ladd s, dx
//! let ; y = lindex t[i]
//! ```
//!
//! # Note [Symbolic zeros]
//!
//! A derivative that is identically zero is known statically more often
//! than not (a constant, a parameter outside `wrt`, a branch that does not
//! touch a value), and computing with it costs as much as with any other
//! array. So zeros are *symbolic* throughout the pipeline, and a zero value
//! exists only where a value must:
//!
//! - *JVP* ([`crate::jvp`]): a variable whose tangent is identically zero has
//!   no tangent variable at all; the rules skip zero operands (`d(x * c) =
//!   c * dx`, no term for `dc`) and materialise `lzero` only where a value
//!   is required: an operand beside a non-zero one (the other side of an
//!   element write `lupdate`, a tuple component), a branch result whose other
//!   branch is non-zero, loop state, a call argument, a function result.
//! - *Transposition* ([`crate::transpose`]): a linear variable with no
//!   cotangent contribution has a symbolic zero cotangent; statements whose
//!   results all have zero cotangents are skipped, and zeros are
//!   materialised only as loop state, branch results, call arguments, parts
//!   of a tuple or of an `ltake`, and function results.
//! - *The simplifier* (this module): the `lzero`s that remain, and those the
//!   front end writes (`linear_form`), are propagated through linear
//!   operations. Each rule here sees a linear operation one of whose linear
//!   operands `z` is bound by `zero(shape)` and read only there. It replaces
//!   the operation by a zero of the result's shape (computed from `shape`
//!   and the non-linear operands, with `Dim::Of(a, k)` for sizes of a
//!   non-linear array operand `a`) or by its other operand, and kills the
//!   zero's statement (see the note on bypassing linear producers in
//!   [`super::engine`]).
//!
//! Invariant: a zero's shape is used only when the zero is materialised, so
//! a fallible operation on a zero may become infallible; that is allowed
//! (only runs without error must agree). Every pass keeps the values of its
//! input: a symbolic zero stands for the zero of its shape exactly.

use super::engine::{Cx, Rule};
use crate::ir::*;
use crate::types::Ty;
use crate::visit::free_vars_block;

fn array_dims(s: &ShapeTree) -> Option<&[Dim]> {
    match s {
        ShapeTree::Array(ds) => Some(ds),
        ShapeTree::Scalar | ShapeTree::Tuple(_) => None,
    }
}

/// The shape of `dims`: a scalar when empty.
fn shape_of(dims: Vec<Dim>) -> ShapeTree {
    if dims.is_empty() {
        ShapeTree::Scalar
    } else {
        ShapeTree::Array(dims)
    }
}

/// The dims of a non-linear array atom (`Dim::Of`, canonicalised).
fn atom_dims(cx: &Cx<'_>, a: &Atom) -> Option<Vec<Dim>> {
    let v = a.var()?;
    let rank = cx.ty(v).rank()?;
    Some((0..rank).map(|k| cx.facts.dim_of(v, k)).collect())
}

/// The single linear result of a statement.
fn lin_result(s: &Stmt) -> Option<Var> {
    match s.lin_binds.as_slice() {
        [y] if s.binds.is_empty() => Some(*y),
        _ => None,
    }
}

/// Replaces `s` (one linear result) by `zero(shape)`, killing the zero operand `z`.
fn to_zero(s: &Stmt, cx: &mut Cx<'_>, z: Var, shape: ShapeTree) -> Option<Vec<Stmt>> {
    let y = lin_result(s)?;
    cx.kill(z);
    Some(vec![cx.zero_stmt(y, shape)])
}

/// `ladd(x, 0) = x`, `ladd(0, x) = x`.
pub fn ladd_zero(s: &Stmt, cx: &mut Cx<'_>) -> Option<Vec<Stmt>> {
    let Expr::Lin(LinOp::Add(a, b)) = &s.expr else {
        return None;
    };
    let y = lin_result(s)?;
    let (z, x) = if cx.zero(*b).is_some() {
        (*b, *a)
    } else if cx.zero(*a).is_some() {
        (*a, *b)
    } else {
        return None;
    };
    cx.kill(z);
    cx.replace_lin(y, x);
    Some(vec![])
}

/// `lneg(0) = 0`.
pub fn lneg_zero(s: &Stmt, cx: &mut Cx<'_>) -> Option<Vec<Stmt>> {
    let Expr::Lin(LinOp::Neg(z)) = &s.expr else {
        return None;
    };
    let shape = cx.zero(*z)?;
    to_zero(s, cx, *z, shape)
}

/// `lscale(s, 0) = 0` (an array factor times a scalar zero is an array zero
/// of the factor's shape).
pub fn lscale_zero(s: &Stmt, cx: &mut Cx<'_>) -> Option<Vec<Stmt>> {
    let Expr::Lin(LinOp::Scale { s: f, x: z }) = &s.expr else {
        return None;
    };
    let zs = cx.zero(*z)?;
    let shape = match (&zs, cx.atom_ty(f).rank()) {
        (ShapeTree::Scalar, Some(r)) if r > 0 => ShapeTree::Array(atom_dims(cx, f)?),
        _ => zs,
    };
    to_zero(s, cx, *z, shape)
}

/// `dup(0) = (0, 0)`.
pub fn dup_zero(s: &Stmt, cx: &mut Cx<'_>) -> Option<Vec<Stmt>> {
    let Expr::Lin(LinOp::Dup(z)) = &s.expr else {
        return None;
    };
    let shape = cx.zero(*z)?;
    let [a, b] = s.lin_binds.as_slice() else {
        return None;
    };
    cx.kill(*z);
    Some(vec![
        cx.zero_stmt(*a, shape.clone()),
        cx.zero_stmt(*b, shape),
    ])
}

/// `drop(0) = ()` (nothing).
pub fn drop_zero(s: &Stmt, cx: &mut Cx<'_>) -> Option<Vec<Stmt>> {
    let Expr::Lin(LinOp::Drop(z)) = &s.expr else {
        return None;
    };
    cx.zero(*z)?;
    cx.kill(*z);
    Some(vec![])
}

/// `lindex(0, i..) = 0` of the element (or sub-array) shape.
pub fn lindex_zero(s: &Stmt, cx: &mut Cx<'_>) -> Option<Vec<Stmt>> {
    let Expr::Lin(LinOp::Index { x: z, idx }) = &s.expr else {
        return None;
    };
    let zs = cx.zero(*z)?;
    let ds = array_dims(&zs)?;
    if idx.len() > ds.len() {
        return None;
    }
    let shape = shape_of(ds[idx.len()..].to_vec());
    to_zero(s, cx, *z, shape)
}

/// `lupdate(x, i.., 0, add) = x` when `add` (adding a zero).
pub fn lupdate_zero(s: &Stmt, cx: &mut Cx<'_>) -> Option<Vec<Stmt>> {
    let Expr::Lin(LinOp::Update {
        x,
        val: z,
        add: true,
        ..
    }) = &s.expr
    else {
        return None;
    };
    let y = lin_result(s)?;
    cx.zero(*z)?;
    cx.kill(*z);
    cx.replace_lin(y, *x);
    Some(vec![])
}

/// `ltake(0, i..) = (0, 0)`: a zero of the element (or sub-array) shape and
/// the zero itself.
pub fn ltake_zero(s: &Stmt, cx: &mut Cx<'_>) -> Option<Vec<Stmt>> {
    let Expr::Lin(LinOp::Take { x: z, idx, .. }) = &s.expr else {
        return None;
    };
    let zs = cx.zero(*z)?;
    let ds = array_dims(&zs)?;
    if idx.len() > ds.len() {
        return None;
    }
    let [e, a] = s.lin_binds.as_slice() else {
        return None;
    };
    let shape = shape_of(ds[idx.len()..].to_vec());
    cx.kill(*z);
    Some(vec![cx.zero_stmt(*e, shape), cx.zero_stmt(*a, zs.clone())])
}

/// `lgather(0, idx) = 0` of shape `[len(idx), ..]`.
pub fn lgather_zero(s: &Stmt, cx: &mut Cx<'_>) -> Option<Vec<Stmt>> {
    let Expr::Lin(LinOp::Gather { x: z, idx }) = &s.expr else {
        return None;
    };
    let zs = cx.zero(*z)?;
    let ds = array_dims(&zs)?;
    let mut out = vec![cx.facts.dim_of(idx.var()?, 0)];
    out.extend_from_slice(ds.get(1..)?);
    to_zero(s, cx, *z, ShapeTree::Array(out))
}

/// `lscatter_add(len, idx, 0) = 0` of shape `[len, ..]`.
pub fn lscatter_add_zero(s: &Stmt, cx: &mut Cx<'_>) -> Option<Vec<Stmt>> {
    let Expr::Lin(LinOp::ScatterAdd { len, x: z, .. }) = &s.expr else {
        return None;
    };
    let zs = cx.zero(*z)?;
    let ds = array_dims(&zs)?;
    let mut out = vec![Dim::Atom(*len)];
    out.extend_from_slice(ds.get(1..)?);
    to_zero(s, cx, *z, ShapeTree::Array(out))
}

/// `lsum(0) = 0` (a scalar, or the shape without the summed axis).
pub fn lsum_zero(s: &Stmt, cx: &mut Cx<'_>) -> Option<Vec<Stmt>> {
    let Expr::Lin(LinOp::Sum { x: z, axis }) = &s.expr else {
        return None;
    };
    let zs = cx.zero(*z)?;
    let ds = array_dims(&zs)?;
    let shape = match axis {
        None => ShapeTree::Scalar,
        Some(a) if *a < ds.len() => {
            let mut d = ds.to_vec();
            d.remove(*a);
            shape_of(d)
        }
        Some(_) => return None,
    };
    to_zero(s, cx, *z, shape)
}

/// `lbroadcast(0, shape) = 0` of that shape.
pub fn lbroadcast_zero(s: &Stmt, cx: &mut Cx<'_>) -> Option<Vec<Stmt>> {
    let Expr::Lin(LinOp::Broadcast { x: z, shape, .. }) = &s.expr else {
        return None;
    };
    cx.zero(*z)?;
    let out = ShapeTree::Array(shape.iter().map(|a| Dim::Atom(*a)).collect());
    to_zero(s, cx, *z, out)
}

/// `lsum_to(0, shape) = 0` of that shape.
pub fn lsum_to_zero(s: &Stmt, cx: &mut Cx<'_>) -> Option<Vec<Stmt>> {
    let Expr::Lin(LinOp::SumTo { x: z, shape }) = &s.expr else {
        return None;
    };
    cx.zero(*z)?;
    let out = ShapeTree::Array(shape.iter().map(|a| Dim::Atom(*a)).collect());
    to_zero(s, cx, *z, out)
}

/// `ltranspose(0) = 0` with the two sizes swapped.
pub fn ltranspose_zero(s: &Stmt, cx: &mut Cx<'_>) -> Option<Vec<Stmt>> {
    let Expr::Lin(LinOp::Transpose(z)) = &s.expr else {
        return None;
    };
    let zs = cx.zero(*z)?;
    let [a, b] = array_dims(&zs)? else {
        return None;
    };
    let out = ShapeTree::Array(vec![*b, *a]);
    to_zero(s, cx, *z, out)
}

/// `lmatmul(a, 0) = 0`, `lmatmul(0, a) = 0` with the product's shape.
pub fn lmatmul_zero(s: &Stmt, cx: &mut Cx<'_>) -> Option<Vec<Stmt>> {
    let Expr::Lin(LinOp::MatMul { a, x: z, lin_left }) = &s.expr else {
        return None;
    };
    let zs = cx.zero(*z)?;
    let zd = array_dims(&zs)?.to_vec();
    let ad = atom_dims(cx, a)?;
    let (l, r) = if *lin_left { (&zd, &ad) } else { (&ad, &zd) };
    let out = match (l.len(), r.len()) {
        (1, 1) => vec![],
        (2, 1) => vec![l[0]],
        (1, 2) => vec![r[1]],
        (2, 2) => vec![l[0], r[1]],
        _ => return None,
    };
    to_zero(s, cx, *z, shape_of(out))
}

/// `louter(0, b) = 0`, `louter(b, 0) = 0`.
pub fn louter_zero(s: &Stmt, cx: &mut Cx<'_>) -> Option<Vec<Stmt>> {
    let Expr::Lin(LinOp::Outer { x: z, b, lin_left }) = &s.expr else {
        return None;
    };
    let zs = cx.zero(*z)?;
    let [n] = array_dims(&zs)? else {
        return None;
    };
    let m = cx.facts.dim_of(b.var()?, 0);
    let out = if *lin_left { vec![*n, m] } else { vec![m, *n] };
    to_zero(s, cx, *z, ShapeTree::Array(out))
}

/// `lscan(0) = 0`.
pub fn lscan_zero(s: &Stmt, cx: &mut Cx<'_>) -> Option<Vec<Stmt>> {
    let Expr::Lin(LinOp::Scan { x: z, .. }) = &s.expr else {
        return None;
    };
    let shape = cx.zero(*z)?;
    to_zero(s, cx, *z, shape)
}

/// `ltuple(0, .., 0) = 0` of the tuple shape.
pub fn ltuple_zero(s: &Stmt, cx: &mut Cx<'_>) -> Option<Vec<Stmt>> {
    let Expr::Lin(LinOp::Tuple(xs)) = &s.expr else {
        return None;
    };
    let y = lin_result(s)?;
    let shapes: Option<Vec<ShapeTree>> = xs.iter().map(|x| cx.zero(*x)).collect();
    let shapes = shapes?;
    // A variable listed twice would be read twice: not a valid program, leave it.
    let distinct: std::collections::BTreeSet<Var> = xs.iter().copied().collect();
    if distinct.len() != xs.len() {
        return None;
    }
    for x in xs {
        cx.kill(*x);
    }
    Some(vec![cx.zero_stmt(y, ShapeTree::Tuple(shapes))])
}

/// `luntuple(0) = (0, .., 0)`.
pub fn luntuple_zero(s: &Stmt, cx: &mut Cx<'_>) -> Option<Vec<Stmt>> {
    let Expr::Lin(LinOp::Untuple(z)) = &s.expr else {
        return None;
    };
    let ShapeTree::Tuple(parts) = cx.zero(*z)? else {
        return None;
    };
    if parts.len() != s.lin_binds.len() {
        return None;
    }
    cx.kill(*z);
    Some(
        s.lin_binds
            .iter()
            .zip(parts)
            .map(|(v, p)| cx.zero_stmt(*v, p))
            .collect(),
    )
}

/// `if c { ..z.. } else { ..z.. }` with `z = 0` read by both branches: each
/// branch gets its own zero (so the rules above can work inside), the outer
/// zero goes.
pub fn zero_into_if(s: &Stmt, cx: &mut Cx<'_>) -> Option<Vec<Stmt>> {
    let Expr::If(i) = &s.expr else {
        return None;
    };
    let ft = free_vars_block(&i.then_).lin;
    let fe = free_vars_block(&i.else_).lin;
    let zs: Vec<(Var, ShapeTree)> = ft
        .intersection(&fe)
        .filter(|z| cx.uses(**z) == 2)
        .filter_map(|z| cx.facts.zero_shape(*z).map(|sh| (*z, sh.clone())))
        .collect();
    if zs.is_empty() {
        return None;
    }
    let mut new = i.clone();
    for (z, shape) in zs {
        let ty = cx.ty(z).clone();
        for blk in [&mut new.then_, &mut new.else_] {
            let zb: Var = cx.fresh("z", ty.clone(), true);
            cx.set_uses(zb, 1);
            let lin = std::iter::once((z, zb)).collect();
            crate::visit::substitute_block(blk, &Default::default(), &lin);
            blk.stmts.insert(0, cx.zero_stmt(zb, shape.clone()));
        }
        cx.set_uses(z, 0);
        cx.kill(z);
    }
    Some(vec![cx.stmt(
        s.binds.clone(),
        s.lin_binds.clone(),
        Expr::If(new),
    )])
}

/// A linear map whose linear array operand is a zero: the element parameter
/// becomes a scalar zero inside the body (`map(|..; dx| e, ..; 0) = map(|..| let
/// dx = 0; e, ..)`), as long as another array operand keeps the map's shape.
pub fn lmap_zero_arg(s: &Stmt, cx: &mut Cx<'_>) -> Option<Vec<Stmt>> {
    let Expr::Map(m) = &s.expr else {
        return None;
    };
    let j = m.lin_arrs.iter().position(|x| cx.zero(*x).is_some())?;
    if m.arrs.len() + m.lin_arrs.len() < 2 {
        return None;
    }
    let mut new = m.clone();
    let z = new.lin_arrs.remove(j);
    let p = new.body.lin_params.remove(j);
    if *cx.ty(p) != Ty::F64 {
        return None;
    }
    new.body
        .body
        .stmts
        .insert(0, cx.zero_stmt(p, ShapeTree::Scalar));
    cx.kill(z);
    Some(vec![cx.stmt(
        s.binds.clone(),
        s.lin_binds.clone(),
        Expr::Map(new),
    )])
}

/// All rules of this family, in the order the simplifier tries them.
pub const RULES: &[Rule] = &[
    Rule {
        name: "ladd_zero",
        apply: ladd_zero,
    },
    Rule {
        name: "lneg_zero",
        apply: lneg_zero,
    },
    Rule {
        name: "lscale_zero",
        apply: lscale_zero,
    },
    Rule {
        name: "dup_zero",
        apply: dup_zero,
    },
    Rule {
        name: "drop_zero",
        apply: drop_zero,
    },
    Rule {
        name: "lindex_zero",
        apply: lindex_zero,
    },
    Rule {
        name: "lupdate_zero",
        apply: lupdate_zero,
    },
    Rule {
        name: "ltake_zero",
        apply: ltake_zero,
    },
    Rule {
        name: "lgather_zero",
        apply: lgather_zero,
    },
    Rule {
        name: "lscatter_add_zero",
        apply: lscatter_add_zero,
    },
    Rule {
        name: "lsum_zero",
        apply: lsum_zero,
    },
    Rule {
        name: "lbroadcast_zero",
        apply: lbroadcast_zero,
    },
    Rule {
        name: "ltranspose_zero",
        apply: ltranspose_zero,
    },
    Rule {
        name: "lmatmul_zero",
        apply: lmatmul_zero,
    },
    Rule {
        name: "louter_zero",
        apply: louter_zero,
    },
    Rule {
        name: "lscan_zero",
        apply: lscan_zero,
    },
    Rule {
        name: "ltuple_zero",
        apply: ltuple_zero,
    },
    Rule {
        name: "luntuple_zero",
        apply: luntuple_zero,
    },
    Rule {
        name: "zero_into_if",
        apply: zero_into_if,
    },
    Rule {
        name: "lmap_zero_arg",
        apply: lmap_zero_arg,
    },
];
