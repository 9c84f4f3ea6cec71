//! Lowered values: what a Rust expression evaluates to in the IR.
//!
//! Scalars and arrays are single IR atoms; Rust tuples stay trees of values
//! (never IR tuples, except where an IR signature needs one), so tuple fields,
//! destructuring and tuple-valued loop state need no IR statements.

use super::iter_val::IterVal;
use super::types::{Elem, RTy};
use ad_core_ir::ir::Atom;

/// The value of a lowered expression.
#[derive(Clone, Debug, PartialEq)]
pub enum Val {
    /// A scalar atom.
    Scalar(Atom, Elem),
    /// An array atom of the given element type and rank.
    Array(Atom, Elem, usize),
    /// A Rust tuple.
    Tuple(Vec<Val>),
    /// An iterator chain not yet consumed.
    Iter(Box<IterVal>),
    /// `()`.
    Unit,
    /// A closure bound to a name (`let f = |x: f64| ..;`): its syntax and
    /// the environment it captured, applied where it is called.
    Closure(Box<ClosureVal>),
    /// The value of an expression that failed to lower (its error is
    /// reported); every operation on it silently gives `Poison` again.
    Poison,
}

/// A closure value: lowered again at each application, in the environment
/// of its definition (what it captured then, as a `move` closure would).
#[derive(Clone, Debug, PartialEq)]
pub struct ClosureVal {
    /// The closure as written.
    pub syntax: syn::ExprClosure,
    /// The environment at its definition.
    pub env: super::env::Env,
}

impl Val {
    /// An `f64` scalar.
    pub fn f64(a: impl Into<Atom>) -> Val {
        Val::Scalar(a.into(), Elem::F64)
    }

    /// The Rust-level type.
    pub fn ty(&self) -> RTy {
        match self {
            Val::Scalar(_, e) => RTy::Scalar(*e),
            Val::Array(_, e, r) => RTy::Array(*e, *r),
            Val::Tuple(vs) => RTy::Tuple(vs.iter().map(Val::ty).collect()),
            Val::Iter(_) => RTy::Iter,
            Val::Closure(_) => RTy::Closure,
            Val::Unit => RTy::Unit,
            Val::Poison => RTy::Error,
        }
    }

    /// Whether the value (or a part of it) failed to lower.
    pub fn is_poison(&self) -> bool {
        match self {
            Val::Poison => true,
            Val::Tuple(vs) => vs.iter().any(Val::is_poison),
            _ => false,
        }
    }

    /// The atoms of the scalar and array leaves, in order; `None` if the value
    /// has a part that is not an IR value (poison, iterator, unit).
    pub fn leaves(&self) -> Option<Vec<Atom>> {
        let mut out = vec![];
        self.collect_leaves(&mut out).then_some(out)
    }

    fn collect_leaves(&self, out: &mut Vec<Atom>) -> bool {
        match self {
            Val::Scalar(a, _) | Val::Array(a, _, _) => {
                out.push(*a);
                true
            }
            Val::Tuple(vs) => vs.iter().all(|v| v.collect_leaves(out)),
            Val::Iter(_) | Val::Closure(_) | Val::Unit | Val::Poison => false,
        }
    }

    /// The same structure with the leaf atoms taken from `atoms` in order
    /// (`Poison` if `atoms` runs out).
    pub fn rebuild(&self, atoms: &mut dyn Iterator<Item = Atom>) -> Val {
        match self {
            Val::Scalar(_, e) => atoms.next().map_or(Val::Poison, |a| Val::Scalar(a, *e)),
            Val::Array(_, e, r) => atoms.next().map_or(Val::Poison, |a| Val::Array(a, *e, *r)),
            Val::Tuple(vs) => Val::Tuple(vs.iter().map(|v| v.rebuild(atoms)).collect()),
            other => other.clone(),
        }
    }

    /// The value with its type replaced by `ty` where they unify (refines
    /// integer literals to a named integer type); unchanged otherwise.
    pub fn with_ty(self, ty: &RTy) -> Val {
        match (self, ty) {
            (Val::Scalar(a, e), RTy::Scalar(t)) => Val::Scalar(a, e.unify(*t).unwrap_or(e)),
            (Val::Array(a, e, r), RTy::Array(t, _)) => Val::Array(a, e.unify(*t).unwrap_or(e), r),
            (Val::Tuple(vs), RTy::Tuple(ts)) if vs.len() == ts.len() => {
                Val::Tuple(vs.into_iter().zip(ts).map(|(v, t)| v.with_ty(t)).collect())
            }
            (v, _) => v,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lower::types::IntTy;
    use ad_core_ir::ir::Var;

    #[test]
    fn leaves_and_rebuild() {
        let v = Val::Tuple(vec![
            Val::f64(Var(0)),
            Val::Tuple(vec![
                Val::Scalar(Atom::I64(3), Elem::Int(IntTy::Lit)),
                Val::Array(Atom::Var(Var(1)), Elem::F64, 2),
            ]),
        ]);
        let l = v.leaves().unwrap();
        assert_eq!(l.len(), 3);
        let w = v.rebuild(&mut [Atom::F64(1.0), Atom::I64(4), Atom::Var(Var(7))].into_iter());
        assert_eq!(w.leaves().unwrap()[2], Atom::Var(Var(7)));
        assert_eq!(w.ty(), v.ty());
        assert!(Val::Tuple(vec![Val::Poison]).leaves().is_none());
        let refined = v.with_ty(&RTy::Tuple(vec![
            RTy::F64,
            RTy::Tuple(vec![
                RTy::Scalar(Elem::Int(IntTy::Usize)),
                RTy::Array(Elem::F64, 2),
            ]),
        ]));
        assert_eq!(refined.ty().to_string(), "(f64, (usize, Array2<f64>))");
    }
}
