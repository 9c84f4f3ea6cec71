//! Scalar statements written into their one use: expressions instead of
//! chains of `let`s (issue 12: fewer tokens and MIR locals for rustc; the
//! same machine code).
//!
//! The IR is in A-normal form, so emitted one `let` per statement a scalar
//! formula becomes a chain of temporaries. A statement is *inlined* instead
//! (no `let`; its expression is written where its variable is read) when
//!
//! - it is a scalar primitive with an `f64` or `bool` result (never an
//!   integer operation, which may panic on overflow, nor `clamp`, which
//!   panics on bounds out of order: moving those could change which panic
//!   a function raises first), or a linear scalar `ladd`, `lneg` or
//!   `lscale` by a scalar;
//! - its variable (with its copies) is read exactly once in the function,
//!   and that read is an operand of a later statement of the same block
//!   that is itself such a scalar statement (not inside a closure or loop
//!   body, where it would be evaluated on every iteration, nor an element
//!   read, a call or a block's results).
//!
//! Scalar operations cannot fail or have effects and their operands are
//! immutable values of the block, so evaluating one where it is read
//! instead of where it is bound changes no value: Rust evaluates `a * b + c`
//! as the two roundings of the `let`s (it never contracts to a fused
//! multiply-add), bit for bit.
//!
//! ```text
//! let mul_3 = x_0 * 0.5f64;                    let add_5 = x_0 * y_1
//! let sin_4 = f64::sin(mul_3);           =>        + f64::sin(x_0 * 0.5f64);
//! let add_5 = mul_2 + sin_4;  (mul_2 = x_0 * y_1, read once here)
//! ```
//!
//! An inlined expression is parenthesised where Rust's precedence would
//! read it otherwise ([`Prec::bare_in`]): `x_0 * y_1 + f64::sin(..)`, but
//! `a_1 * (b_2 + c_3)` and `a_1 - (b_2 - c_3)`.

use super::func::{Emitter, R};
use super::types::Repr;
use ad_core_ir::ir::{Block, Expr, Func, LinOp, Prim, Stmt, Var};
use ad_core_ir::types::{Scalar, Ty};

impl Emitter<'_> {
    /// Per statement of `b`, whether it is inlined into its one use.
    pub(super) fn inlinable(&self, b: &Block) -> Vec<bool> {
        // The statements' sites, ascending (sites are numbered in order).
        let sites: Vec<usize> = b.stmts.iter().map(|s| self.uses.stmt(s)).collect();
        b.stmts
            .iter()
            .enumerate()
            .map(|(k, s)| {
                let Some(v) = scalar_binder(s, self.f) else {
                    return false;
                };
                let Some(j) = self
                    .uses
                    .single_use(v)
                    .and_then(|u| sites.binary_search(&u).ok())
                else {
                    return false;
                };
                j > k && scalar_binder(&b.stmts[j], self.f).is_some()
            })
            .collect()
    }

    /// Emits nothing for the inlined statement `s`: its expression is kept
    /// for the one read of its variable ([`Emitter::scalar`]).
    pub(super) fn inline_expr(&mut self, s: &Stmt) -> R<()> {
        let (v, e, prec) = match &s.expr {
            Expr::Prim(p, args) => (s.binds[0], self.prim(*p, args)?.expr, Prec::of(*p)),
            Expr::Lin(op) => {
                let site = self.uses.stmt(s);
                let prec = match op {
                    LinOp::Neg(_) => Prec::Unary,
                    LinOp::Scale { .. } => Prec::Mul,
                    _ => Prec::Add,
                };
                (
                    s.lin_binds[0],
                    self.lin_op(op, &s.lin_binds, site)?.expr,
                    prec,
                )
            }
            _ => return Err("an inlined statement that is not scalar".into()),
        };
        self.set_repr(v, Repr::Val);
        self.inlined.insert(v, (e, prec));
        Ok(())
    }
}

/// The variable of a statement that may be inlined (see the module doc),
/// or `None`.
fn scalar_binder(s: &Stmt, f: &Func) -> Option<Var> {
    let scalar = |v: &Var, t: &[Scalar]| matches!(f.vars.ty(*v), Ty::Scalar(x) if t.contains(x));
    match (&s.expr, &s.binds[..], &s.lin_binds[..]) {
        (Expr::Prim(p, _), [v], []) if *p != Prim::Clamp => {
            scalar(v, &[Scalar::F64, Scalar::Bool]).then_some(*v)
        }
        (Expr::Lin(LinOp::Add(..) | LinOp::Neg(_)), [], [v]) => {
            scalar(v, &[Scalar::F64]).then_some(*v)
        }
        (Expr::Lin(LinOp::Scale { s: k, .. }), [], [v]) => {
            let by_scalar = ad_core_ir::typing::atom_ty(k, &f.vars) == Ty::Scalar(Scalar::F64);
            (by_scalar && scalar(v, &[Scalar::F64])).then_some(*v)
        }
        _ => None,
    }
}

/// How tightly an inlined expression binds, by Rust's operator
/// precedence (weakest first): whether it needs parentheses where it is
/// written ([`Prec::bare_in`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Prec {
    /// `if c { a } else { b }`: parenthesised as any operand.
    If,
    /// `a || b`
    Or,
    /// `a && b`
    And,
    /// `a < b`, `a == b`, ..: non-associative.
    Cmp,
    /// `a + b`, `a - b`
    Add,
    /// `a * b`, `a / b`, `a % b`
    Mul,
    /// `a as T`: parenthesised as any operand (`a as f64 < b` would read
    /// `f64<` as generic arguments).
    Cast,
    /// `-a`, `!a`
    Unary,
    /// A call `f64::sin(a)`, a name or a literal: never parenthesised.
    Atom,
}

/// Where an operand is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pos {
    /// The argument of a call (or an operand `prim_tokens` parenthesises
    /// itself).
    Arg,
    /// The left operand of a binary operator of this precedence.
    Left(Prec),
    /// The right operand of a binary operator of this precedence.
    Right(Prec),
    /// Anywhere else (a unary operator's or a cast's operand, ..).
    Other,
}

impl Prec {
    /// Whether an expression of this precedence reads the same without
    /// parentheses at `pos` (binary operators are left-associative;
    /// comparisons do not chain).
    pub fn bare_in(self, pos: Pos) -> bool {
        match (self, pos) {
            (Prec::Atom, _) | (_, Pos::Arg) => true,
            (Prec::If | Prec::Cast, _) | (_, Pos::Other) => false,
            (e, Pos::Left(op)) => e > op || e == op && op != Prec::Cmp,
            (e, Pos::Right(op)) => e > op,
        }
    }

    /// The precedence of `p`'s expression (`prim_tokens`).
    pub fn of(p: Prim) -> Prec {
        match p {
            Prim::Add | Prim::Sub => Prec::Add,
            Prim::Mul | Prim::Div | Prim::Rem => Prec::Mul,
            Prim::Neg | Prim::Not => Prec::Unary,
            Prim::Lt | Prim::Le | Prim::Gt | Prim::Ge | Prim::Eq | Prim::Ne => Prec::Cmp,
            Prim::And => Prec::And,
            Prim::Or => Prec::Or,
            Prim::ToF64 | Prim::ToI64 => Prec::Cast,
            Prim::Select => Prec::If,
            // `(..) as t` and `::core::cmp::Ord::max(..) as i64`.
            Prim::IntArith(..)
            | Prim::IntCast(_)
            | Prim::FloatToInt(_)
            | Prim::U64ToF64
            | Prim::UMax
            | Prim::UMin => Prec::Cast,
            Prim::ULt | Prim::ULe | Prim::UGt | Prim::UGe => Prec::Cmp,
            Prim::Abs
            | Prim::Max
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
            | Prim::Powi
            | Prim::Powf
            | Prim::Atan2
            | Prim::Hypot
            | Prim::Copysign
            | Prim::MulAdd
            | Prim::Exp2
            | Prim::Cbrt
            | Prim::Floor
            | Prim::Ceil
            | Prim::Round
            | Prim::Trunc
            | Prim::Signum
            | Prim::Clamp => Prec::Atom,
        }
    }
}

/// Where `p` (`prim_tokens`) writes its operand `k`.
pub fn operand_pos(p: Prim, k: usize) -> Pos {
    let op = Prec::of(p);
    match op {
        Prec::Add | Prec::Mul | Prec::Cmp | Prec::And | Prec::Or if k == 0 => Pos::Left(op),
        Prec::Add | Prec::Mul | Prec::Cmp | Prec::And | Prec::Or => Pos::Right(op),
        // `if #a { #b } else { #c }`, calls, and the forms that put their
        // operands in parentheses themselves (`(#a) as u8`).
        Prec::If | Prec::Atom => Pos::Arg,
        Prec::Cast if matches!(p, Prim::ToF64 | Prim::ToI64) => Pos::Other,
        Prec::Cast => Pos::Arg,
        Prec::Unary => Pos::Other,
    }
}
