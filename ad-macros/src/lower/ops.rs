//! Operators: arithmetic, comparisons, unary `-` `!` `*`, and `as` casts, on
//! scalars (arrays are delegated to `arrays.rs`), with rustc's wording for
//! type errors ("cannot add `usize` to `f64`").

use super::ctx::{span_of, Lowerer};
use super::types::{classify, Elem, IntTy, RTy, TyDesc};
use super::val::Val;
use ad_core_ir::ir::{Atom, IntOp, Prim};
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

/// The primitive computing `p` (an arithmetic primitive) on values of
/// element type `e`: the typed integer primitive for integer types other
/// than `i64`/`isize`, so that overflow behaves as in Rust.
pub fn typed_arith(p: Prim, e: Elem) -> Prim {
    let Elem::Int(t) = e else {
        return p;
    };
    let Some(t) = t.ir() else {
        return p;
    };
    let op = match p {
        Prim::Add => IntOp::Add,
        Prim::Sub => IntOp::Sub,
        Prim::Mul => IntOp::Mul,
        Prim::Div => IntOp::Div,
        Prim::Rem => IntOp::Rem,
        other => return other,
    };
    Prim::IntArith(op, t)
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
            let v = self.prim(typed_arith(p, e), &[*a, *b], span)?;
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
        let p = match ea.unify(*eb) {
            // `u64`/`usize` compare as unsigned (values past i64::MAX)
            Some(Elem::Int(t)) if t.ir() == Some(ad_core_ir::ir::IntTy::U64) => match p {
                Prim::Lt => Prim::ULt,
                Prim::Le => Prim::ULe,
                Prim::Gt => Prim::UGt,
                Prim::Ge => Prim::UGe,
                other => other,
            },
            _ => p,
        };
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
                let v = match t.ir() {
                    // `-a` as `0 - a` in the narrow type (overflows like `-i8::MIN`)
                    Some(t) => self.prim(
                        Prim::IntArith(IntOp::Sub, t),
                        &[Atom::I64(0), a],
                        span_of(node),
                    )?,
                    None => self.prim(Prim::Neg, &[a], span_of(node))?,
                };
                Some(Val::Scalar(v, e))
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
            (Elem::Int(s), Elem::F64) => {
                // a `u64`/`usize` is held as its bit pattern
                let p = if s.ir() == Some(ad_core_ir::ir::IntTy::U64) {
                    Prim::U64ToF64
                } else {
                    Prim::ToF64
                };
                Some(Val::f64(self.prim(p, &[a], span)?))
            }
            (Elem::Int(_), Elem::Int(t)) => {
                let t = if t == IntTy::Lit { IntTy::I64 } else { t };
                // wrapping to the target's width; `u64`/`i64` keep the bits
                let v = match t.ir() {
                    Some(ad_core_ir::ir::IntTy::U64) | None => a,
                    Some(n) => self.prim(Prim::IntCast(n), &[a], span)?,
                };
                Some(Val::Scalar(v, Elem::Int(t)))
            }
            (Elem::F64, Elem::Int(t)) => {
                // saturating, NaN to 0, as Rust's `as`
                let p = match t.ir() {
                    Some(n) => Prim::FloatToInt(n),
                    None => Prim::ToI64,
                };
                let v = self.prim(p, &[a], span)?;
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

#[cfg(test)]
mod tests {
    use crate::lower::testutil::*;

    #[test]
    fn scalar_arithmetic() {
        both! {
            fn f(x: f64, y: f64) -> f64 {
                let z = x * y + x / (y + 3.0) - -x;
                z * z - 2.0 * y
            }
        }
        for (x, y) in [(0.3, 1.2), (-2.0, 0.5)] {
            check(SRC, &[fv(x), fv(y)], &[fv(f(x, y))]);
        }
    }

    #[test]
    fn integer_arithmetic_and_casts() {
        both! {
            fn f(x: f64, n: usize, k: i32) -> f64 {
                let m = (n * 3 + 1) % 4 + n / 2;
                let j = -k + 2;
                x * (m as f64) + (j as f64) + (x as i64) as f64 + (2.7 as usize) as f64
            }
        }
        for (x, n, k) in [(1.5, 3usize, 2i32), (-0.25, 7, -4)] {
            check(SRC, &[fv(x), iv(n as i64), iv(k as i64)], &[fv(f(x, n, k))]);
        }
    }

    #[test]
    fn negative_f64_to_unsigned_saturates() {
        both! {
            fn f(x: f64) -> f64 {
                let n = x as usize;
                n as f64 + x
            }
        }
        for x in [-3.5, 2.5] {
            check(SRC, &[fv(x)], &[fv(f(x))]);
        }
    }

    #[test]
    fn comparisons_and_logic() {
        both! {
            fn f(x: f64, y: f64, n: i64, flag: bool) -> f64 {
                let a = x < y && !(n >= 3);
                let b = x == y || y != 1.0 && flag;
                let c = (a as i64) + (b as i64) * 2;
                x * (c as f64) + if n <= 2 && x > 0.0 { y } else { x }
            }
        }
        for (x, y, n, fl) in [
            (0.5, 1.25, 1, true),
            (2.0, 1.5, 5, false),
            (1.5, 0.5, 2, true),
        ] {
            check(SRC, &[fv(x), fv(y), iv(n), bv(fl)], &[fv(f(x, y, n, fl))]);
        }
        // At the discontinuity `x == y` only the value is compared.
        let got = run_lowered(&lowered(SRC), &[fv(1.0), fv(1.0), iv(2), bv(true)]);
        assert_eq!(got, [fv(f(1.0, 1.0, 2, true))]);
    }

    #[test]
    fn type_errors_mirror_rustc() {
        refuses(
            "fn f(x: f64, n: usize) -> f64 { x + n }",
            "cannot add `usize` to `f64`",
        );
        refuses(
            "fn f(x: f64) -> f64 { x * 2 }",
            "cannot multiply `f64` by `{integer}`",
        );
        refuses(
            "fn f(x: f64, n: i32) -> f64 { x - n }",
            "cannot subtract `i32` from `f64`",
        );
        refuses(
            "fn f(x: f64, n: usize) -> f64 { let k: i64 = 3; (n / k) as f64 }",
            "cannot divide `usize` by `i64`",
        );
        refuses(
            "fn f(x: f64, n: usize) -> f64 { if x < n { x } else { 0.0 } }",
            "mismatched types: expected `f64`, found `usize`",
        );
        refuses(
            "fn f(x: f64, b: bool) -> f64 { let c = b + b; x }",
            "cannot add `bool` to `bool`",
        );
        refuses(
            "fn f(x: f64) -> f64 { if x { x } else { 1.0 } }",
            "mismatched types: expected `bool`, found `f64`",
        );
        refuses(
            "fn f(x: f64) -> f64 { let b = !x; x }",
            "cannot apply unary operator `!` to type `f64`",
        );
        refuses(
            "fn f(x: f64, n: usize) -> f64 { let m = -n; x }",
            "cannot apply unary operator `-` to type `usize`",
        );
        refuses(
            "fn f(x: f64, k: i64) -> f64 { x * (k.saturating_sub(2) as f64) }",
            "`saturating_sub` is supported on unsigned integers",
        );
        refuses(
            "fn f(x: f64, n: usize) -> f64 { let m = n << 2; x }",
            "bitwise and shift operators are not supported",
        );
        refuses(
            "fn f(x: f64, b: bool) -> f64 { (b as f64) * x }",
            "casting `bool` as `f64` is invalid",
        );
        refuses(
            "fn f(x: f64, w: &Array1<f64>) -> f64 { w as f64 }",
            "non-primitive cast: `Array1<f64>` as `f64`",
        );
        refuses(
            "fn f(x: f64) -> f64 { x as f32 as f64 }",
            "`f32` is not supported",
        );
        refuses(
            "fn f(x: f64, p: (f64, f64)) -> f64 { let q = p + p; x }",
            "cannot add `(f64, f64)` to `(f64, f64)`",
        );
    }

    #[test]
    fn errors_do_not_cascade() {
        // One mistake, one error: the poisoned `y` is used silently afterwards.
        let es =
            errors("fn f(x: f64, n: usize) -> f64 { let y = x + n; let z = y * 2.0 + y.sin(); z }");
        assert_eq!(es, ["cannot add `usize` to `f64`"]);
        // Independent mistakes are all reported.
        let es = errors("fn f(x: f64, n: usize) -> f64 { let y = x + n; let z = x * 2; y }");
        assert_eq!(es.len(), 2, "{es:?}");
    }
}
