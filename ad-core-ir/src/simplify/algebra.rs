//! Algebraic identities that hold exactly (to the bit, the sign of a zero
//! included) for every input, NaN and infinities included. So `x * 1 = x` is here but `x * 0 = 0`
//! is not (`inf * 0` is NaN); linear identities may reassociate scalings.

use super::engine::{Cx, Rule};
use crate::ir::*;
use crate::types::Ty;

fn is_one(a: &Atom) -> bool {
    matches!(a, Atom::F64(x) if *x == 1.0) || matches!(a, Atom::I64(1))
}

/// The single non-linear result of a statement.
fn result(s: &Stmt) -> Option<Var> {
    match s.binds.as_slice() {
        [y] if s.lin_binds.is_empty() => Some(*y),
        _ => None,
    }
}

/// The single linear result of a statement.
fn lin_result(s: &Stmt) -> Option<Var> {
    match s.lin_binds.as_slice() {
        [y] if s.binds.is_empty() => Some(*y),
        _ => None,
    }
}

/// Replaces the statement's only result by an atom.
fn becomes(s: &Stmt, cx: &mut Cx<'_>, a: Atom) -> Option<Vec<Stmt>> {
    let y = result(s)?;
    cx.replace_nl(y, a);
    Some(vec![])
}

/// `x * 1 = x`, `1 * x = x`.
pub fn mul_one(s: &Stmt, cx: &mut Cx<'_>) -> Option<Vec<Stmt>> {
    let Expr::Prim(Prim::Mul, xs) = &s.expr else {
        return None;
    };
    match xs.as_slice() {
        [x, o] | [o, x] if is_one(o) => becomes(s, cx, *x),
        _ => None,
    }
}

/// `x / 1 = x`.
pub fn div_one(s: &Stmt, cx: &mut Cx<'_>) -> Option<Vec<Stmt>> {
    let Expr::Prim(Prim::Div, xs) = &s.expr else {
        return None;
    };
    match xs.as_slice() {
        [x, o] if is_one(o) => becomes(s, cx, *x),
        _ => None,
    }
}

/// `x + (-0.0) = x`, `(-0.0) + x = x`, and `x + 0 = x` on integers. For
/// `f64` only the negative zero is an identity: `-0.0 + 0.0` is `+0.0`, so
/// `x + 0.0 = x` would change the sign of a zero the primal must keep.
pub fn add_zero(s: &Stmt, cx: &mut Cx<'_>) -> Option<Vec<Stmt>> {
    let Expr::Prim(Prim::Add, xs) = &s.expr else {
        return None;
    };
    let identity = |a: &Atom| {
        matches!(a, Atom::F64(z) if *z == 0.0 && z.is_sign_negative()) || matches!(a, Atom::I64(0))
    };
    match xs.as_slice() {
        [x, z] | [z, x] if identity(z) => becomes(s, cx, *x),
        _ => None,
    }
}

/// `x - 0.0 = x` (the positive zero: `x - (-0.0)` is `x + 0.0`, which turns
/// `-0.0` into `+0.0`), and `x - 0 = x` on integers.
pub fn sub_zero(s: &Stmt, cx: &mut Cx<'_>) -> Option<Vec<Stmt>> {
    let Expr::Prim(Prim::Sub, xs) = &s.expr else {
        return None;
    };
    let identity = |a: &Atom| {
        matches!(a, Atom::F64(z) if *z == 0.0 && z.is_sign_positive()) || matches!(a, Atom::I64(0))
    };
    match xs.as_slice() {
        [x, z] if identity(z) => becomes(s, cx, *x),
        _ => None,
    }
}

/// `neg(neg x) = x`.
pub fn neg_neg(s: &Stmt, cx: &mut Cx<'_>) -> Option<Vec<Stmt>> {
    let Expr::Prim(Prim::Neg, xs) = &s.expr else {
        return None;
    };
    let Some((Expr::Prim(Prim::Neg, inner), 0)) = cx.def_atom(xs.first()?) else {
        return None;
    };
    let x = *inner.first()?;
    becomes(s, cx, x)
}

/// `not(not x) = x`.
pub fn not_not(s: &Stmt, cx: &mut Cx<'_>) -> Option<Vec<Stmt>> {
    let Expr::Prim(Prim::Not, xs) = &s.expr else {
        return None;
    };
    let Some((Expr::Prim(Prim::Not, inner), 0)) = cx.def_atom(xs.first()?) else {
        return None;
    };
    let x = *inner.first()?;
    becomes(s, cx, x)
}

/// `and(x, true) = x`, `and(x, false) = false`, `or(x, false) = x`,
/// `or(x, true) = true` (either operand order; operands have no effects).
pub fn bool_literal(s: &Stmt, cx: &mut Cx<'_>) -> Option<Vec<Stmt>> {
    let Expr::Prim(p @ (Prim::And | Prim::Or), xs) = &s.expr else {
        return None;
    };
    let (x, b) = match xs.as_slice() {
        [x, Atom::Bool(b)] | [Atom::Bool(b), x] => (*x, *b),
        _ => return None,
    };
    let neutral = *p == Prim::And;
    if b == neutral {
        becomes(s, cx, x)
    } else {
        becomes(s, cx, Atom::Bool(b))
    }
}

/// `select(true, a, b) = a`, `select(false, a, b) = b`, `select(c, a, a) = a`.
pub fn select_literal(s: &Stmt, cx: &mut Cx<'_>) -> Option<Vec<Stmt>> {
    let Expr::Prim(Prim::Select, xs) = &s.expr else {
        return None;
    };
    match xs.as_slice() {
        [Atom::Bool(true), a, _] => becomes(s, cx, *a),
        [Atom::Bool(false), _, b] => becomes(s, cx, *b),
        [_, a, b] if a == b => becomes(s, cx, *a),
        _ => None,
    }
}

/// Whether the `i64` atom is known to be at least 0: a literal `>= 0`, an
/// array's size (`shape`), an index or a trip count ([`Facts::is_index`]:
/// a loop's counter, a build's indices), or `max(x, c)` with a literal
/// `c >= 0`.
///
/// [`Facts::is_index`]: super::facts::Facts::is_index
fn non_negative(a: &Atom, cx: &Cx<'_>) -> bool {
    match a {
        Atom::I64(c) => *c >= 0,
        Atom::Var(v) if cx.facts.is_index(*v) => true,
        Atom::Var(_) => match cx.def_atom(a) {
            Some((Expr::Array(ArrayOp::Shape { .. }), 0)) => true,
            Some((Expr::Prim(Prim::Max, xs), 0)) => {
                xs.iter().any(|x| matches!(x, Atom::I64(c) if *c >= 0))
            }
            _ => false,
        },
        Atom::F64(_) | Atom::Bool(_) => false,
    }
}

/// For an `i64` `n >= 0` (see `non_negative`): `n < 0 = false`,
/// `n >= 0 = true`, `0 > n = false`, `0 <= n = true`, and `max(n, c) = n`,
/// `max(c, n) = n` for a literal `c <= 0`. A range's length
/// (`max(end - start, 0)`, guarded against a wrapped `usize` end) over an
/// array's size folds to the size.
pub fn non_negative_int(s: &Stmt, cx: &mut Cx<'_>) -> Option<Vec<Stmt>> {
    let Expr::Prim(p, xs) = &s.expr else {
        return None;
    };
    let zero = Atom::I64(0);
    match (p, xs.as_slice()) {
        (Prim::Lt, [n, z]) | (Prim::Gt, [z, n]) if *z == zero && non_negative(n, cx) => {
            becomes(s, cx, Atom::Bool(false))
        }
        (Prim::Ge, [n, z]) | (Prim::Le, [z, n]) if *z == zero && non_negative(n, cx) => {
            becomes(s, cx, Atom::Bool(true))
        }
        (Prim::Max, [n, Atom::I64(c)]) | (Prim::Max, [Atom::I64(c), n])
            if *c <= 0 && non_negative(n, cx) =>
        {
            let n = *n;
            becomes(s, cx, n)
        }
        _ => None,
    }
}

/// `lscale(1, x) = x`.
pub fn lscale_one(s: &Stmt, cx: &mut Cx<'_>) -> Option<Vec<Stmt>> {
    let Expr::Lin(LinOp::Scale {
        s: Atom::F64(one),
        x,
    }) = &s.expr
    else {
        return None;
    };
    if *one != 1.0 {
        return None;
    }
    let y = lin_result(s)?;
    cx.replace_lin(y, *x);
    Some(vec![])
}

/// `lscale(s, lscale(t, x)) = lscale(s * t, x)` for scalar `s`, `t`.
///
/// Reassociates: `(s * t) * x` may round differently from `s * (t * x)`.
pub fn lscale_lscale(s: &Stmt, cx: &mut Cx<'_>) -> Option<Vec<Stmt>> {
    let Expr::Lin(LinOp::Scale { s: f, x: inner }) = &s.expr else {
        return None;
    };
    let y = lin_result(s)?;
    if cx.atom_ty(f) != Ty::F64 {
        return None;
    }
    let LinOp::Scale { s: g, x } = cx.lin_producer(*inner)? else {
        return None;
    };
    if cx.atom_ty(&g) != Ty::F64 {
        return None;
    }
    let st = cx.fresh("st", Ty::F64, false);
    cx.kill(*inner);
    Some(vec![
        cx.stmt(vec![st], vec![], Expr::Prim(Prim::Mul, vec![*f, g])),
        cx.lin_stmt(y, LinOp::Scale { s: st.into(), x }),
    ])
}

/// `ladd(lscale(s, a), lscale(s, b)) = lscale(s, ladd(a, b))` for one
/// non-linear `s` (a scalar or an array) scaling two linear values of one
/// type: one scaling where there were two, as in the transpose of a value
/// read twice (`x · x`, `v * v`: `x * c + x * c` becomes `x * (c + c)`,
/// one pass over `x` instead of two and no array for the second term).
///
/// Reassociates: `s * (a + b)` may round differently from `s * a + s * b`.
pub fn ladd_lscale(s: &Stmt, cx: &mut Cx<'_>) -> Option<Vec<Stmt>> {
    let Expr::Lin(LinOp::Add(p, q)) = &s.expr else {
        return None;
    };
    let y = lin_result(s)?;
    let LinOp::Scale { s: f, x: a } = cx.lin_producer(*p)? else {
        return None;
    };
    let LinOp::Scale { s: g, x: b } = cx.lin_producer(*q)? else {
        return None;
    };
    let ty = cx.ty(a).clone();
    // The same factor: one variable, or literals of the same bits (`0.0`
    // and `-0.0` are equal as numbers, not as factors).
    let same = match (f, g) {
        (Atom::F64(x), Atom::F64(z)) => x.to_bits() == z.to_bits(),
        _ => f == g,
    };
    if !same || *cx.ty(b) != ty {
        return None;
    }
    let sum = cx.fresh("d", ty, true);
    cx.set_uses(sum, 1);
    cx.kill(*p);
    cx.kill(*q);
    Some(vec![
        cx.lin_stmt(sum, LinOp::Add(a, b)),
        cx.lin_stmt(y, LinOp::Scale { s: f, x: sum }),
    ])
}

/// `ladd(a, b) = lscale(2, x)` where `a` and `b` are the two copies of
/// one `dup x`: exact (`x + x` and `2 * x` are the same number, signed
/// zeros, infinities and NaN included), and for an array one pass instead
/// of a copy and a sum (the transpose of `v * v` after [`ladd_lscale`]).
pub fn ladd_dup(s: &Stmt, cx: &mut Cx<'_>) -> Option<Vec<Stmt>> {
    let Expr::Lin(LinOp::Add(p, q)) = &s.expr else {
        return None;
    };
    let y = lin_result(s)?;
    let (x, i) = cx.dup_half(*p)?;
    let (x2, j) = cx.dup_half(*q)?;
    if x != x2 || i == j {
        return None;
    }
    // Killing a copy deletes the `dup`, both its results.
    cx.kill(*p);
    cx.kill(*q);
    Some(vec![cx.lin_stmt(
        y,
        LinOp::Scale {
            s: Atom::F64(2.0),
            x,
        },
    )])
}

/// `lneg(lneg x) = x`.
pub fn lneg_lneg(s: &Stmt, cx: &mut Cx<'_>) -> Option<Vec<Stmt>> {
    let Expr::Lin(LinOp::Neg(inner)) = &s.expr else {
        return None;
    };
    let y = lin_result(s)?;
    let LinOp::Neg(x) = cx.lin_producer(*inner)? else {
        return None;
    };
    cx.kill(*inner);
    cx.replace_lin(y, x);
    Some(vec![])
}

/// `map(..; x) |..; e| { let ; a, b = dup e; yield ; a, b } = dup x`: a map
/// that only fans each element out (the transpose of a sum of two arrays)
/// is the fan-out of the whole array, one copy instead of two fresh arrays
/// filled element by element. Its non-linear operands, unread, go.
pub fn map_dup(s: &Stmt, cx: &mut Cx<'_>) -> Option<Vec<Stmt>> {
    let Expr::Map(m) = &s.expr else {
        return None;
    };
    let ([x], [e], [y0, y1], []) = (
        m.lin_arrs.as_slice(),
        m.body.lin_params.as_slice(),
        s.lin_binds.as_slice(),
        s.binds.as_slice(),
    ) else {
        return None;
    };
    let body = &m.body.body;
    let ([d], []) = (body.stmts.as_slice(), body.results.as_slice()) else {
        return None;
    };
    let (Expr::Lin(LinOp::Dup(v)), [a, b]) = (&d.expr, d.lin_binds.as_slice()) else {
        return None;
    };
    if v != e {
        return None;
    }
    let binds = match body.lin_results.as_slice() {
        [r0, r1] if (r0, r1) == (a, b) => vec![*y0, *y1],
        [r0, r1] if (r0, r1) == (b, a) => vec![*y1, *y0],
        _ => return None,
    };
    Some(vec![cx.stmt(vec![], binds, Expr::Lin(LinOp::Dup(*x)))])
}

/// All rules of this family, in the order the simplifier tries them.
pub const RULES: &[Rule] = &[
    Rule {
        name: "mul_one",
        apply: mul_one,
    },
    Rule {
        name: "div_one",
        apply: div_one,
    },
    Rule {
        name: "add_zero",
        apply: add_zero,
    },
    Rule {
        name: "sub_zero",
        apply: sub_zero,
    },
    Rule {
        name: "neg_neg",
        apply: neg_neg,
    },
    Rule {
        name: "not_not",
        apply: not_not,
    },
    Rule {
        name: "bool_literal",
        apply: bool_literal,
    },
    Rule {
        name: "select_literal",
        apply: select_literal,
    },
    Rule {
        name: "lscale_one",
        apply: lscale_one,
    },
    Rule {
        name: "lscale_lscale",
        apply: lscale_lscale,
    },
    Rule {
        name: "ladd_lscale",
        apply: ladd_lscale,
    },
    Rule {
        name: "ladd_dup",
        apply: ladd_dup,
    },
    Rule {
        name: "lneg_lneg",
        apply: lneg_lneg,
    },
    Rule {
        name: "map_dup",
        apply: map_dup,
    },
];
