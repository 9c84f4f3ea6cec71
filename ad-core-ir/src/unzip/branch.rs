//! Unzip of a mixed `if`: both branches are split; the primal `if` returns
//! each branch's residuals (the other branch returns placeholders of the
//! same types) and the linear `if` reads them.
//!
//! ```text
//! let y ; dy = if c {           fwd: let y, r = if c {       lin: let ; dy = if c {
//!   let s = cos x                      let s = cos x                 let ; d = lscale r, dx
//!   let ; d = lscale s, dx             yield x, s                    yield ; d
//!   yield x ; d                      } else {                      } else {
//! } else {                             yield x, 0.0                  yield ; dx
//!   yield x ; dx                     }                             }
//! }
//! ```

use super::shape_residuals::ShapeCache;
use super::{Unzip, UnzipError};
use crate::fast_hash::FastMap;
use crate::ir::*;
use crate::types::Ty;
use crate::visit::{free_vars_stmt, substitute_block};
use std::collections::BTreeSet;

impl<'p> Unzip<'p> {
    /// A value of type `ty` for the branch that does not compute a residual
    /// (zeros, empty arrays, tuples of those), its statements pushed on
    /// `stmts`.
    fn placeholder(&mut self, ty: &Ty, stmts: &mut Vec<Stmt>) -> Result<Atom, UnzipError> {
        Ok(match ty {
            Ty::Scalar(elem) => Atom::zero(*elem),
            Ty::Array { elem, rank } => {
                let zero = Atom::zero(*elem);
                let v = self.vars.fresh("empty", ty.clone(), false);
                stmts.push(Stmt {
                    binds: vec![v],
                    lin_binds: vec![],
                    expr: Expr::Array(ArrayOp::Broadcast {
                        arr: zero,
                        shape: vec![Atom::I64(0); *rank],
                        axes: vec![],
                    }),
                    src: None,
                });
                Atom::Var(v)
            }
            // A tuple of placeholders (a tuple residual: an unused
            // `tuple x` kept by a branch).
            Ty::Tuple(ts) => {
                let parts = ts
                    .iter()
                    .map(|t| self.placeholder(t, stmts))
                    .collect::<Result<Vec<_>, _>>()?;
                let v = self.vars.fresh("empty", ty.clone(), false);
                stmts.push(Stmt {
                    binds: vec![v],
                    lin_binds: vec![],
                    expr: Expr::Tuple(parts),
                    src: None,
                });
                Atom::Var(v)
            }
            Ty::Opaque(_) => {
                return Err(UnzipError::internal(
                    format!("internal: a residual of type {ty} in a branch"),
                    None,
                ))
            }
        })
    }

    pub(super) fn split_if(
        &mut self,
        s: &Stmt,
        i: &If,
        prim: &mut Vec<Stmt>,
        lin: &mut Vec<Stmt>,
        cache: &mut ShapeCache,
    ) -> Result<(), UnzipError> {
        let (mut p1, l1, r1) = self.split_nested(&i.then_, &[])?;
        let (mut p2, l2, r2) = self.split_nested(&i.else_, &[])?;
        let mut res1: Vec<Atom> = i.then_.results.clone();
        let mut res2: Vec<Atom> = i.else_.results.clone();
        res1.extend(r1.iter().map(|v| Atom::Var(*v)));
        for v in &r2 {
            let t = self.vars.ty(*v).clone();
            res1.push(self.placeholder(&t, &mut p1)?);
        }
        for v in &r1 {
            let t = self.vars.ty(*v).clone();
            res2.push(self.placeholder(&t, &mut p2)?);
        }
        res2.extend(r2.iter().map(|v| Atom::Var(*v)));
        // Outer variables receiving the residuals.
        let mut ren: FastMap<Var, Atom> = FastMap::default();
        let mut binds = s.binds.clone();
        for v in r1.iter().chain(&r2) {
            let info = self.vars.info(*v).clone();
            let o = self.vars.fresh(info.name, info.ty, false);
            ren.insert(*v, Atom::Var(o));
            binds.push(o);
        }
        prim.push(Stmt {
            binds,
            lin_binds: vec![],
            expr: Expr::If(If {
                cond: i.cond,
                then_: Block {
                    stmts: p1,
                    results: res1,
                    lin_results: vec![],
                },
                else_: Block {
                    stmts: p2,
                    results: res2,
                    lin_results: vec![],
                },
                lin_shapes: vec![],
            }),
            src: s.src,
        });
        let none = FastMap::default();
        let mut then_ = Block {
            stmts: l1,
            results: vec![],
            lin_results: i.then_.lin_results.clone(),
        };
        let mut else_ = Block {
            stmts: l2,
            results: vec![],
            lin_results: i.else_.lin_results.clone(),
        };
        substitute_block(&mut then_, &ren, &none);
        substitute_block(&mut else_, &ren, &none);
        let mut ls = Stmt {
            binds: vec![],
            lin_binds: s.lin_binds.clone(),
            expr: Expr::If(If {
                cond: i.cond,
                then_,
                else_,
                lin_shapes: i.lin_shapes.clone(),
            }),
            src: s.src,
        };
        let own: BTreeSet<Var> = s.binds.iter().copied().collect();
        let free = free_vars_stmt(&ls).nl;
        self.dims_top(&mut ls, &free, &own, prim, cache);
        lin.push(ls);
        Ok(())
    }
}
