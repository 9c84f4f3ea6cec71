//! Constant folding: primitives of literals, conditionals on a literal.
//!
//! Folding evaluates with the same Rust methods as the interpreter
//! ([`crate::interp`]); an operation that would fail at run time (`i64`
//! overflow, division by zero, a `powi` exponent outside `i32`) is never
//! folded, and neither is one whose result is not a finite number (so no NaN
//! or infinite literal is ever created).

use super::engine::{Cx, Rule};
use crate::ir::*;

/// Evaluates a primitive on literal operands: `None` if an operand is not a
/// literal, the operation would fail, or the result is not finite.
pub fn eval_prim(p: Prim, args: &[Atom]) -> Option<Atom> {
    use Atom::{Bool as B, F64 as F, I64 as I};
    let r = match (p, args) {
        (Prim::Select, [B(c), a, b]) if a.var().is_none() && b.var().is_none() => {
            if std::mem::discriminant(a) != std::mem::discriminant(b) {
                return None;
            }
            if *c {
                *a
            } else {
                *b
            }
        }
        (_, [F(a)]) => F(match p {
            Prim::Neg => -a,
            Prim::Abs => a.abs(),
            Prim::Sin => a.sin(),
            Prim::Cos => a.cos(),
            Prim::Tan => a.tan(),
            Prim::Exp => a.exp(),
            Prim::Ln => a.ln(),
            Prim::Log2 => a.log2(),
            Prim::Log10 => a.log10(),
            Prim::Sqrt => a.sqrt(),
            Prim::Tanh => a.tanh(),
            Prim::Sinh => a.sinh(),
            Prim::Cosh => a.cosh(),
            Prim::Atan => a.atan(),
            Prim::ExpM1 => a.exp_m1(),
            Prim::Ln1p => a.ln_1p(),
            Prim::ToI64 => return Some(I(*a as i64)),
            _ => return None,
        }),
        (_, [I(a)]) => match p {
            Prim::Neg => I(a.checked_neg()?),
            Prim::Abs => I(a.checked_abs()?),
            Prim::ToF64 => F(*a as f64),
            _ => return None,
        },
        (Prim::Not, [B(a)]) => B(!a),
        (_, [F(a), F(b)]) => match p {
            Prim::Add => F(a + b),
            Prim::Sub => F(a - b),
            Prim::Mul => F(a * b),
            Prim::Div => F(a / b),
            Prim::Max => F(a.max(*b)),
            Prim::Min => F(a.min(*b)),
            Prim::Powf => F(a.powf(*b)),
            Prim::Atan2 => F(a.atan2(*b)),
            Prim::Hypot => F(a.hypot(*b)),
            Prim::Lt => B(a < b),
            Prim::Le => B(a <= b),
            Prim::Gt => B(a > b),
            Prim::Ge => B(a >= b),
            Prim::Eq => B(a == b),
            Prim::Ne => B(a != b),
            _ => return None,
        },
        (Prim::Powi, [F(a), I(n)]) => F(a.powi(i32::try_from(*n).ok()?)),
        (_, [I(a), I(b)]) => match p {
            Prim::Add => I(a.checked_add(*b)?),
            Prim::Sub => I(a.checked_sub(*b)?),
            Prim::Mul => I(a.checked_mul(*b)?),
            Prim::Div => I(a.checked_div(*b)?),
            Prim::Rem => I(a.checked_rem(*b)?),
            Prim::Max => I(*a.max(b)),
            Prim::Min => I(*a.min(b)),
            Prim::Lt => B(a < b),
            Prim::Le => B(a <= b),
            Prim::Gt => B(a > b),
            Prim::Ge => B(a >= b),
            Prim::Eq => B(a == b),
            Prim::Ne => B(a != b),
            _ => return None,
        },
        (_, [B(a), B(b)]) => match p {
            Prim::Eq => B(a == b),
            Prim::Ne => B(a != b),
            Prim::And => B(*a && *b),
            Prim::Or => B(*a || *b),
            _ => return None,
        },
        _ => return None,
    };
    match r {
        F(x) if !x.is_finite() => None,
        other => Some(other),
    }
}

/// `p(c1, .., ck) = c` for literal operands (see [`eval_prim`]).
pub fn fold_prim(s: &Stmt, cx: &mut Cx<'_>) -> Option<Vec<Stmt>> {
    let Expr::Prim(p, xs) = &s.expr else {
        return None;
    };
    let [y] = s.binds.as_slice() else {
        return None;
    };
    let c = eval_prim(*p, xs)?;
    cx.replace_nl(*y, c);
    Some(vec![])
}

/// `if true { a } else { b } = a`, `if false { a } else { b } = b`: the taken
/// branch's statements move into the enclosing block (its binders stay
/// unique: the other branch is discarded), its results replace the `if`'s.
pub fn if_literal(s: &Stmt, cx: &mut Cx<'_>) -> Option<Vec<Stmt>> {
    let Expr::If(i) = &s.expr else {
        return None;
    };
    let Atom::Bool(c) = i.cond else {
        return None;
    };
    let (taken, other) = if c {
        (&i.then_, &i.else_)
    } else {
        (&i.else_, &i.then_)
    };
    if taken.results.len() != s.binds.len() || taken.lin_results.len() != s.lin_binds.len() {
        return None;
    }
    cx.forget_block(other);
    for (y, a) in s.binds.iter().zip(&taken.results) {
        cx.replace_nl(*y, *a);
    }
    for (y, x) in s.lin_binds.iter().zip(&taken.lin_results) {
        cx.replace_lin(*y, *x);
    }
    Some(taken.stmts.clone())
}

/// All rules of this family, in the order the simplifier tries them.
pub const RULES: &[Rule] = &[
    Rule {
        name: "fold_prim",
        apply: fold_prim,
    },
    Rule {
        name: "if_literal",
        apply: if_literal,
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folds_like_rust_and_refuses_failures() {
        assert_eq!(
            eval_prim(Prim::Add, &[Atom::I64(2), Atom::I64(3)]),
            Some(Atom::I64(5))
        );
        assert_eq!(eval_prim(Prim::Div, &[Atom::I64(1), Atom::I64(0)]), None);
        assert_eq!(
            eval_prim(Prim::Add, &[Atom::I64(i64::MAX), Atom::I64(1)]),
            None
        );
        assert_eq!(
            eval_prim(Prim::Div, &[Atom::F64(1.0), Atom::F64(0.0)]),
            None
        );
        assert_eq!(
            eval_prim(Prim::Powi, &[Atom::F64(2.0), Atom::I64(10)]),
            Some(Atom::F64(1024.0))
        );
        assert_eq!(
            eval_prim(Prim::Powi, &[Atom::F64(2.0), Atom::I64(1 << 40)]),
            None
        );
        assert_eq!(
            eval_prim(Prim::Lt, &[Atom::F64(1.0), Atom::F64(2.0)]),
            Some(Atom::Bool(true))
        );
        assert_eq!(
            eval_prim(
                Prim::Select,
                &[Atom::Bool(false), Atom::I64(1), Atom::I64(2)]
            ),
            Some(Atom::I64(2))
        );
        assert_eq!(
            eval_prim(Prim::ToI64, &[Atom::F64(-3.7)]),
            Some(Atom::I64(-3))
        );
        assert_eq!(eval_prim(Prim::Sin, &[Atom::Var(Var(0))]), None);
    }
}
