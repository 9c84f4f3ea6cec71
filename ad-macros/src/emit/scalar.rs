//! Scalar primitives and tuples: Rust operators and `f64` / `i64` functions
//! (function-call syntax, so a negative literal operand never needs parentheses).

use super::func::{Emitter, Out, R};
use super::types::{owned_repr, tuple, Repr};
use crate::text::{text, Code};
use ad_core_ir::ir::{Atom, IntOp, Prim};
use ad_core_ir::types::{Scalar, Ty};

impl Emitter<'_> {
    /// `p(args)`.
    pub fn prim(&mut self, p: Prim, args: &[Atom]) -> R<Out> {
        if args.len() != p.arity() {
            return Err(format!("{} applied to {} operands", p.name(), args.len()));
        }
        // `-literal` is folded (`--0.5` would trip rustc's `double_negations`).
        match (p, args) {
            (Prim::Neg, [Atom::F64(v)]) => {
                return Ok(Out::one(Self::lit(&Atom::F64(-v)), Repr::Val))
            }
            (Prim::Neg, [Atom::I64(v)]) if *v != i64::MIN => {
                return Ok(Out::one(Self::lit(&Atom::I64(-v)), Repr::Val))
            }
            _ => {}
        }
        let x: Vec<_> = (args.iter().enumerate())
            .map(|(k, a)| self.scalar_at(a, super::inline_exprs::operand_pos(p, k)))
            .collect();
        let int = self.atom_ty(&args[0]) == Ty::Scalar(Scalar::I64);
        Ok(Out::one(prim_tokens(p, &x, int), Repr::Val))
    }

    /// `(a, b, ..)` of non-linear atoms (owned parts).
    pub fn tuple_expr(&mut self, xs: &[Atom], site: usize) -> Out {
        let parts: Vec<_> = xs.iter().map(|a| self.own(a, site)).collect();
        let ty = Ty::Tuple(xs.iter().map(|a| self.atom_ty(a)).collect());
        Out::one(tuple(&parts), owned_repr(&ty))
    }

    /// The parts of a non-linear tuple (bound by a tuple pattern).
    pub fn untuple_expr(&mut self, a: &Atom, site: usize) -> R<Out> {
        let Ty::Tuple(parts) = self.atom_ty(a) else {
            return Err("untuple of a non-tuple".into());
        };
        let x = self.own(a, site);
        Ok(Out {
            expr: if parts.len() == 1 { text!(#x.0) } else { x },
            reprs: parts.iter().map(owned_repr).collect(),
        })
    }
}

/// The Rust expression of `p` applied to the operand expressions `x` (`int`:
/// the first operand is an `i64`). Used for scalar statements and, per lane,
/// for strip-mined ones (`strip.rs`).
pub(super) fn prim_tokens(p: Prim, x: &[Code], int: bool) -> Code {
    let a = &x[0];
    let b = x.get(1);
    let un = |f: Code| text!(#f(#a));
    let bin = |f: Code| text!(#f(#a, #b));
    let e = match p {
        Prim::Add => text!(#a + #b),
        Prim::Sub => text!(#a - #b),
        Prim::Mul => text!(#a * #b),
        Prim::Div => text!(#a / #b),
        Prim::Rem => text!(#a % #b),
        Prim::Neg => text!(-#a),
        Prim::Abs if int => un(text!(i64::abs)),
        Prim::Abs => un(text!(f64::abs)),
        Prim::Max if int => bin(text!(::core::cmp::Ord::max)),
        Prim::Max => bin(text!(f64::max)),
        Prim::Min if int => bin(text!(::core::cmp::Ord::min)),
        Prim::Min => bin(text!(f64::min)),
        Prim::Sin => un(text!(f64::sin)),
        Prim::Cos => un(text!(f64::cos)),
        Prim::Tan => un(text!(f64::tan)),
        Prim::Exp => un(text!(f64::exp)),
        Prim::Ln => un(text!(f64::ln)),
        Prim::Log2 => un(text!(f64::log2)),
        Prim::Log10 => un(text!(f64::log10)),
        Prim::Sqrt => un(text!(f64::sqrt)),
        Prim::Tanh => un(text!(f64::tanh)),
        Prim::Sinh => un(text!(f64::sinh)),
        Prim::Cosh => un(text!(f64::cosh)),
        Prim::Atan => un(text!(f64::atan)),
        Prim::Asin => un(text!(f64::asin)),
        Prim::Acos => un(text!(f64::acos)),
        Prim::Asinh => un(text!(f64::asinh)),
        Prim::Acosh => un(text!(f64::acosh)),
        Prim::Atanh => un(text!(f64::atanh)),
        Prim::ExpM1 => un(text!(f64::exp_m1)),
        Prim::Ln1p => un(text!(f64::ln_1p)),
        Prim::Powi => text!(f64::powi(#a, #b as i32)),
        Prim::Powf => bin(text!(f64::powf)),
        Prim::Atan2 => bin(text!(f64::atan2)),
        Prim::Hypot => bin(text!(f64::hypot)),
        Prim::Copysign => bin(text!(f64::copysign)),
        Prim::Lt => text!(#a < #b),
        Prim::Le => text!(#a <= #b),
        Prim::Gt => text!(#a > #b),
        Prim::Ge => text!(#a >= #b),
        Prim::Eq => text!(#a == #b),
        Prim::Ne => text!(#a != #b),
        Prim::And => text!(#a && #b),
        Prim::Or => text!(#a || #b),
        Prim::Not => text!(!#a),
        Prim::ToF64 => text!(#a as f64),
        Prim::ToI64 => text!(#a as i64),
        Prim::Select => {
            let c = &x[2];
            text!(if #a { #b } else { #c })
        }
        Prim::MulAdd => {
            let c = &x[2];
            text!(f64::mul_add(#a, #b, #c))
        }
        Prim::Exp2 => un(text!(f64::exp2)),
        Prim::Cbrt => un(text!(f64::cbrt)),
        Prim::Floor => un(text!(f64::floor)),
        Prim::Ceil => un(text!(f64::ceil)),
        Prim::Round => un(text!(f64::round)),
        Prim::Trunc => un(text!(f64::trunc)),
        Prim::Signum => un(text!(f64::signum)),
        Prim::Clamp => {
            let c = &x[2];
            text!(f64::clamp(#a, #b, #c))
        }
        // In the user's integer type, so overflow follows the build
        // profile exactly as in the user's function.
        Prim::IntArith(op, t) => {
            let t = quote::format_ident!("{}", t.name());
            let op = match op {
                IntOp::Add => text!(+),
                IntOp::Sub => text!(-),
                IntOp::Mul => text!(*),
                IntOp::Div => text!(/),
                IntOp::Rem => text!(%),
            };
            text!((((#a) as #t) #op ((#b) as #t)) as i64)
        }
        Prim::IntCast(t) | Prim::FloatToInt(t) => {
            let t = quote::format_ident!("{}", t.name());
            text!(((#a) as #t) as i64)
        }
        Prim::U64ToF64 => text!(((#a) as u64) as f64),
        Prim::ULt => text!(((#a) as u64) < ((#b) as u64)),
        Prim::ULe => text!(((#a) as u64) <= ((#b) as u64)),
        Prim::UGt => text!(((#a) as u64) > ((#b) as u64)),
        Prim::UGe => text!(((#a) as u64) >= ((#b) as u64)),
        Prim::UMax => text!(::core::cmp::Ord::max((#a) as u64, (#b) as u64) as i64),
        Prim::UMin => text!(::core::cmp::Ord::min((#a) as u64, (#b) as u64) as i64),
    };
    e
}
