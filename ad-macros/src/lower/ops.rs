//! Operators: arithmetic, comparisons, unary `-` `!` `*`, and `as` casts, on
//! scalars (arrays are delegated to `arrays.rs`), with rustc's wording for
//! type errors ("cannot add `usize` to `f64`").

use super::ctx::{span_of, Lowerer};
use super::types::{classify, Elem, IntTy, RTy, TyDesc};
use super::val::Val;
use ad_core_ir::ir::{Atom, Prim};
use syn::BinOp;

/// rustc's message for an arithmetic operator applied to the wrong types.
pub fn op_error(op: &BinOp, l: &RTy, r: &RTy) -> String {
    match op {
        BinOp::Add(_) => format!("cannot add `{r}` to `{l}`"),
        BinOp::Sub(_) => format!("cannot subtract `{r}` from `{l}`"),
        BinOp::Mul(_) => format!("cannot multiply `{l}` by `{r}`"),
        BinOp::Div(_) => format!("cannot divide `{l}` by `{r}`"),
        BinOp::Rem(_) => format!("cannot calculate the remainder of `{l}` divided by `{r}`"),
        BinOp::AddAssign(_) => format!("cannot add-assign `{r}` to `{l}`"),
        BinOp::SubAssign(_) => format!("cannot subtract-assign `{r}` from `{l}`"),
        BinOp::MulAssign(_) => format!("cannot multiply-assign `{l}` by `{r}`"),
        BinOp::DivAssign(_) => format!("cannot divide-assign `{l}` by `{r}`"),
        BinOp::RemAssign(_) => {
            format!("cannot calculate and assign the remainder of `{l}` divided by `{r}`")
        }
        _ => format!("mismatched types: expected `{l}`, found `{r}`"),
    }
}

/// The arithmetic primitive of an operator (compound assignments map to
/// their operator).
pub fn arith_prim(op: &BinOp) -> Option<Prim> {
    Some(match op {
        BinOp::Add(_) | BinOp::AddAssign(_) => Prim::Add,
        BinOp::Sub(_) | BinOp::SubAssign(_) => Prim::Sub,
        BinOp::Mul(_) | BinOp::MulAssign(_) => Prim::Mul,
        BinOp::Div(_) | BinOp::DivAssign(_) => Prim::Div,
        BinOp::Rem(_) | BinOp::RemAssign(_) => Prim::Rem,
        _ => return None,
    })
}

fn cmp_prim(op: &BinOp) -> Option<Prim> {
    Some(match op {
        BinOp::Lt(_) => Prim::Lt,
        BinOp::Le(_) => Prim::Le,
        BinOp::Gt(_) => Prim::Gt,
        BinOp::Ge(_) => Prim::Ge,
        BinOp::Eq(_) => Prim::Eq,
        BinOp::Ne(_) => Prim::Ne,
        _ => return None,
    })
}

impl Lowerer<'_> {
    /// `a op b` (compound assignments go to `stmt.rs`, `&&`/`||` to `control.rs`).
    pub fn binary(&mut self, e: &syn::ExprBinary) -> Option<Val> {
        match &e.op {
            BinOp::AddAssign(_)
            | BinOp::SubAssign(_)
            | BinOp::MulAssign(_)
            | BinOp::DivAssign(_)
            | BinOp::RemAssign(_) => return self.compound_assign(e),
            BinOp::And(_) | BinOp::Or(_) => return self.short_circuit(e),
            BinOp::BitAnd(_)
            | BinOp::BitOr(_)
            | BinOp::BitXor(_)
            | BinOp::Shl(_)
            | BinOp::Shr(_)
            | BinOp::BitAndAssign(_)
            | BinOp::BitOrAssign(_)
            | BinOp::BitXorAssign(_)
            | BinOp::ShlAssign(_)
            | BinOp::ShrAssign(_) => {
                return self.fail(
                    &e.op,
                    "bitwise and shift operators are not supported in #[differentiable] functions",
                )
            }
            _ => {}
        }
        let l = self.lower_expr(&e.left);
        let r = self.lower_expr(&e.right);
        self.binop(&e.op, l, r, e)
    }

    /// `l op r` on lowered operands; `node` locates errors and statements.
    pub fn binop(&mut self, op: &BinOp, l: Val, r: Val, node: &dyn quote::ToTokens) -> Option<Val> {
        if l.is_poison() || r.is_poison() {
            return None;
        }
        let span = span_of(node);
        if matches!(l, Val::Array(..)) || matches!(r, Val::Array(..)) {
            return self.elementwise(op, l, r, node);
        }
        let (Val::Scalar(a, ea), Val::Scalar(b, eb)) = (&l, &r) else {
            return self.fail(node, op_error(op, &l.ty(), &r.ty()));
        };
        if let Some(p) = arith_prim(op) {
            let Some(e) = ea.unify(*eb).filter(|e| *e != Elem::Bool) else {
                return self.fail(node, op_error(op, &l.ty(), &r.ty()));
            };
            if p == Prim::Rem && e == Elem::F64 {
                return self.fail(
                    node,
                    "the remainder `%` of `f64` values is not supported: it has no useful derivative",
                );
            }
            let v = self.prim(p, &[*a, *b], span)?;
            return Some(Val::Scalar(v, e));
        }
        let p = cmp_prim(op)?;
        if ea.unify(*eb).is_none() {
            return self.fail(
                &node,
                format!(
                    "mismatched types: expected `{}`, found `{}`",
                    ea.name(),
                    eb.name()
                ),
            );
        }
        if *ea == Elem::Bool && !matches!(p, Prim::Eq | Prim::Ne) {
            return self.fail(
                node,
                "ordering comparisons of `bool` values are not supported",
            );
        }
        let v = self.prim(p, &[*a, *b], span)?;
        Some(Val::Scalar(v, Elem::Bool))
    }

    /// `-x`, `!x`, `*x`.
    pub fn unary(&mut self, u: &syn::ExprUnary) -> Option<Val> {
        let x = self.expr(&u.expr)?;
        match u.op {
            syn::UnOp::Deref(_) => Some(x),
            syn::UnOp::Neg(_) => self.neg(x, u),
            syn::UnOp::Not(_) => match x {
                Val::Scalar(Atom::Bool(b), Elem::Bool) => {
                    Some(Val::Scalar(Atom::Bool(!b), Elem::Bool))
                }
                Val::Scalar(a, Elem::Bool) => {
                    let v = self.prim(Prim::Not, &[a], span_of(u))?;
                    Some(Val::Scalar(v, Elem::Bool))
                }
                Val::Scalar(_, Elem::Int(_)) => {
                    self.fail(u, "the bitwise `!` of integers is not supported")
                }
                other => self.fail(
                    u,
                    format!("cannot apply unary operator `!` to type `{}`", other.ty()),
                ),
            },
            _ => self.fail(u, "this operator is not supported"),
        }
    }

    /// `-x` on a lowered value.
    pub fn neg(&mut self, x: Val, node: &dyn quote::ToTokens) -> Option<Val> {
        match x {
            Val::Scalar(Atom::F64(v), Elem::F64) => Some(Val::f64(-v)),
            Val::Scalar(Atom::I64(v), Elem::Int(t)) if !t.unsigned() && v != i64::MIN => {
                Some(Val::Scalar(Atom::I64(-v), Elem::Int(t)))
            }
            Val::Scalar(a, e @ Elem::F64) => {
                Some(Val::Scalar(self.prim(Prim::Neg, &[a], span_of(node))?, e))
            }
            Val::Scalar(a, e @ Elem::Int(t)) if !t.unsigned() => {
                Some(Val::Scalar(self.prim(Prim::Neg, &[a], span_of(node))?, e))
            }
            Val::Array(a, e, r)
                if e != Elem::Bool && !matches!(e, Elem::Int(t) if t.unsigned()) =>
            {
                self.map_unary(a, e, r, Prim::Neg, node)
            }
            other => self.fail(
                node,
                format!("cannot apply unary operator `-` to type `{}`", other.ty()),
            ),
        }
    }

    /// `x as T`.
    pub fn cast(&mut self, c: &syn::ExprCast) -> Option<Val> {
        let x = self.expr(&c.expr)?;
        let target = match classify(&c.ty) {
            Ok(TyDesc::Scalar(e)) => e,
            Ok(_) => return self.fail(
                &c.ty,
                "only casts to `f64` and integer types are supported (`as f64`, `as usize`, ...)",
            ),
            Err(e) => {
                self.errors.push(e);
                return None;
            }
        };
        let span = span_of(c);
        let Val::Scalar(a, from) = x else {
            return self.fail(
                c,
                format!("non-primitive cast: `{}` as `{}`", x.ty(), target.name()),
            );
        };
        match (from, target) {
            (Elem::F64, Elem::F64) => Some(Val::Scalar(a, Elem::F64)),
            (Elem::Int(_), Elem::F64) => match a {
                Atom::I64(v) => Some(Val::f64(v as f64)),
                _ => Some(Val::f64(self.prim(Prim::ToF64, &[a], span)?)),
            },
            (Elem::Int(_), Elem::Int(t)) => {
                let t = if t == IntTy::Lit { IntTy::I64 } else { t };
                Some(Val::Scalar(a, Elem::Int(t)))
            }
            (Elem::F64, Elem::Int(t)) => {
                let v = self.prim(Prim::ToI64, &[a], span)?;
                let v = if t.unsigned() {
                    self.clamp0(v, span)?
                } else {
                    v
                };
                Some(Val::Scalar(v, Elem::Int(t)))
            }
            (Elem::Bool, Elem::Int(t)) => {
                let v = self.prim(Prim::Select, &[a, Atom::I64(1), Atom::I64(0)], span)?;
                Some(Val::Scalar(v, Elem::Int(t)))
            }
            (Elem::Bool, Elem::Bool) => Some(Val::Scalar(a, Elem::Bool)),
            (f, t) => self.fail(
                c,
                format!("casting `{}` as `{}` is invalid", f.name(), t.name()),
            ),
        }
    }
}
