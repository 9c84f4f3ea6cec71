//! Constant folding: primitives of literals, conditionals on a literal.
//!
//! Folding evaluates with the interpreter's one evaluation of each primitive
//! (`interp/prim.rs`); an operation that would fail at run time (`i64`
//! overflow, division by zero, a `powi` exponent outside `i32`) is never
//! folded, and neither is one whose result is not a finite number (so no NaN
//! or infinite literal is ever created). `powi` is never folded either: rustc
//! folds `c.powi(k)` of constants with LLVM's own `pow`, whose last bit can
//! differ from the run-time `powi`; left in the generated code with the same
//! literal operands, it is folded exactly as in the user's function, under
//! every optimisation level.

use super::engine::{Cx, Rule};
use crate::interp::prim::{eval_prim as interp_prim, Sc};
use crate::ir::*;

/// Evaluates a primitive on literal operands: `None` if an operand is not a
/// literal, the operation would fail, or the result is not finite.
pub fn eval_prim(p: Prim, args: &[Atom]) -> Option<Atom> {
    let scalars = args
        .iter()
        .map(|a| match a {
            Atom::F64(x) => Some(Sc::F(*x)),
            Atom::I64(x) => Some(Sc::I(*x)),
            Atom::Bool(x) => Some(Sc::B(*x)),
            Atom::Var(_) => None,
        })
        .collect::<Option<Vec<Sc>>>()?;
    if p == Prim::Powi {
        return None;
    }
    match interp_prim(p, &scalars).ok()? {
        Sc::F(x) if !x.is_finite() => None,
        Sc::F(x) => Some(Atom::F64(x)),
        Sc::I(x) => Some(Atom::I64(x)),
        Sc::B(x) => Some(Atom::Bool(x)),
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
        // Left to rustc, which folds it as in the user's function.
        assert_eq!(
            eval_prim(Prim::Powi, &[Atom::F64(2.0), Atom::I64(10)]),
            None
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
