//! Scalar primitives and tuples: Rust operators and `f64` / `i64` functions
//! (function-call syntax, so a negative literal operand never needs parentheses).

use super::func::{Emitter, Out, R};
use super::types::{owned_repr, tuple, Repr};
use ad_core_ir::ir::{Atom, IntOp, Prim};
use ad_core_ir::types::{Scalar, Ty};
use proc_macro2::TokenStream;
use quote::quote;

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
        let x: Vec<_> = args.iter().map(|a| self.scalar(a)).collect();
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
            expr: if parts.len() == 1 { quote!(#x.0) } else { x },
            reprs: parts.iter().map(owned_repr).collect(),
        })
    }
}

/// The Rust expression of `p` applied to the operand expressions `x` (`int`:
/// the first operand is an `i64`). Used for scalar statements and, per lane,
/// for strip-mined ones (`strip.rs`).
pub(super) fn prim_tokens(p: Prim, x: &[TokenStream], int: bool) -> TokenStream {
    let a = &x[0];
    let b = x.get(1);
    let un = |f: proc_macro2::TokenStream| quote!(#f(#a));
    let bin = |f: proc_macro2::TokenStream| quote!(#f(#a, #b));
    let e = match p {
        Prim::Add => quote!(#a + #b),
        Prim::Sub => quote!(#a - #b),
        Prim::Mul => quote!(#a * #b),
        Prim::Div => quote!(#a / #b),
        Prim::Rem => quote!(#a % #b),
        Prim::Neg => quote!(-#a),
        Prim::Abs if int => un(quote!(i64::abs)),
        Prim::Abs => un(quote!(f64::abs)),
        Prim::Max if int => bin(quote!(::core::cmp::Ord::max)),
        Prim::Max => bin(quote!(f64::max)),
        Prim::Min if int => bin(quote!(::core::cmp::Ord::min)),
        Prim::Min => bin(quote!(f64::min)),
        Prim::Sin => un(quote!(f64::sin)),
        Prim::Cos => un(quote!(f64::cos)),
        Prim::Tan => un(quote!(f64::tan)),
        Prim::Exp => un(quote!(f64::exp)),
        Prim::Ln => un(quote!(f64::ln)),
        Prim::Log2 => un(quote!(f64::log2)),
        Prim::Log10 => un(quote!(f64::log10)),
        Prim::Sqrt => un(quote!(f64::sqrt)),
        Prim::Tanh => un(quote!(f64::tanh)),
        Prim::Sinh => un(quote!(f64::sinh)),
        Prim::Cosh => un(quote!(f64::cosh)),
        Prim::Atan => un(quote!(f64::atan)),
        Prim::Asin => un(quote!(f64::asin)),
        Prim::Acos => un(quote!(f64::acos)),
        Prim::Asinh => un(quote!(f64::asinh)),
        Prim::Acosh => un(quote!(f64::acosh)),
        Prim::Atanh => un(quote!(f64::atanh)),
        Prim::ExpM1 => un(quote!(f64::exp_m1)),
        Prim::Ln1p => un(quote!(f64::ln_1p)),
        Prim::Powi => quote!(f64::powi(#a, #b as i32)),
        Prim::Powf => bin(quote!(f64::powf)),
        Prim::Atan2 => bin(quote!(f64::atan2)),
        Prim::Hypot => bin(quote!(f64::hypot)),
        Prim::Copysign => bin(quote!(f64::copysign)),
        Prim::Lt => quote!(#a < #b),
        Prim::Le => quote!(#a <= #b),
        Prim::Gt => quote!(#a > #b),
        Prim::Ge => quote!(#a >= #b),
        Prim::Eq => quote!(#a == #b),
        Prim::Ne => quote!(#a != #b),
        Prim::And => quote!(#a && #b),
        Prim::Or => quote!(#a || #b),
        Prim::Not => quote!(!#a),
        Prim::ToF64 => quote!(#a as f64),
        Prim::ToI64 => quote!(#a as i64),
        Prim::Select => {
            let c = &x[2];
            quote!(if #a { #b } else { #c })
        }
        Prim::MulAdd => {
            let c = &x[2];
            quote!(f64::mul_add(#a, #b, #c))
        }
        Prim::Exp2 => un(quote!(f64::exp2)),
        Prim::Cbrt => un(quote!(f64::cbrt)),
        Prim::Floor => un(quote!(f64::floor)),
        Prim::Ceil => un(quote!(f64::ceil)),
        Prim::Round => un(quote!(f64::round)),
        Prim::Trunc => un(quote!(f64::trunc)),
        Prim::Signum => un(quote!(f64::signum)),
        Prim::Clamp => {
            let c = &x[2];
            quote!(f64::clamp(#a, #b, #c))
        }
        // In the user's integer type, so overflow follows the build
        // profile exactly as in the user's function.
        Prim::IntArith(op, t) => {
            let t = quote::format_ident!("{}", t.name());
            let op = match op {
                IntOp::Add => quote!(+),
                IntOp::Sub => quote!(-),
                IntOp::Mul => quote!(*),
                IntOp::Div => quote!(/),
                IntOp::Rem => quote!(%),
            };
            quote!((((#a) as #t) #op ((#b) as #t)) as i64)
        }
        Prim::IntCast(t) | Prim::FloatToInt(t) => {
            let t = quote::format_ident!("{}", t.name());
            quote!(((#a) as #t) as i64)
        }
        Prim::U64ToF64 => quote!(((#a) as u64) as f64),
        Prim::ULt => quote!(((#a) as u64) < ((#b) as u64)),
        Prim::ULe => quote!(((#a) as u64) <= ((#b) as u64)),
        Prim::UGt => quote!(((#a) as u64) > ((#b) as u64)),
        Prim::UGe => quote!(((#a) as u64) >= ((#b) as u64)),
        Prim::UMax => quote!(::core::cmp::Ord::max((#a) as u64, (#b) as u64) as i64),
        Prim::UMin => quote!(::core::cmp::Ord::min((#a) as u64, (#b) as u64) as i64),
    };
    e
}
