//! Unzip of a mixed call.
//!
//! A call of `g__jvp` (a function of the program) becomes `g__fwd`,
//! returning `g`'s residuals, on the primal side and `g__lin` reading them
//! on the linear side:
//!
//! ```text
//! let y ; dy = g__jvp(x ; dx)    ==>   fwd: let y, r = g__fwd(x)     lin: let ; dy = g__lin(r ; dx)
//! ```
//!
//! A call of an extern `g` checkpoints (`g__lin` takes `g`'s arguments and
//! recomputes its primal), except at the top level of the body, where an
//! extern that keeps its residuals is called through `g__fwdres` and
//! `g__linres` ([`Unzip::split_extern_call`]).

use super::shape_residuals::ShapeCache;
use super::{jvp_base, Unzip, UnzipError};
use crate::ir::*;
use crate::names::{Derived, Names};
use crate::typing::func_sig;
use crate::visit::free_vars_stmt;
use std::collections::BTreeSet;

impl<'p> Unzip<'p> {
    pub(super) fn split_call(
        &mut self,
        s: &Stmt,
        c: &Call,
        prim: &mut Vec<Stmt>,
        lin: &mut Vec<Stmt>,
        cache: &mut ShapeCache,
    ) -> Result<(), UnzipError> {
        let base = jvp_base(&c.func);
        if self.prog.is_extern(&base) {
            return self.split_extern_call(s, c, &base, prim, lin, cache);
        }
        let fwd = self.prog.func(&Derived::Fwd.of(&base)).ok_or_else(|| {
            UnzipError::internal(
                format!("internal: `{}` not unzipped before its caller", c.func),
                s.src,
            )
        })?;
        let (_, _, results, _) = func_sig(fwd);
        let rtys = results[s.binds.len()..].to_vec();
        let rs: Vec<Var> = rtys
            .into_iter()
            .map(|t| self.vars.fresh("rcall", t, false))
            .collect();
        let mut binds = s.binds.clone();
        binds.extend(&rs);
        prim.push(Stmt {
            binds,
            lin_binds: vec![],
            expr: Expr::Call(Call {
                func: Derived::Fwd.of(&base),
                args: c.args.clone(),
                lin_args: vec![],
                lin_shapes: vec![],
            }),
            src: s.src,
        });
        let mut ls = Stmt {
            binds: vec![],
            lin_binds: s.lin_binds.clone(),
            expr: Expr::Call(Call {
                func: Derived::Lin.of(&base),
                args: rs.iter().map(|v| Atom::Var(*v)).collect(),
                lin_args: c.lin_args.clone(),
                lin_shapes: c.lin_shapes.clone(),
            }),
            src: s.src,
        };
        let own: BTreeSet<Var> = s.binds.iter().copied().collect();
        let free = free_vars_stmt(&ls).nl;
        self.dims_top(&mut ls, &free, &own, prim, cache);
        lin.push(ls);
        Ok(())
    }

    /// A call of an extern `g`: the primal side calls `g`, the linear side
    /// calls `g__lin(args ; dargs)`, which recomputes what it needs from the
    /// arguments (so the arguments are the residuals). At the top level of
    /// the function, where `g` keeps its residuals
    /// ([`crate::externs::declare_extern_residuals`]), the primal side calls
    /// `y, r = g__fwdres(args)` and the linear side `g__linres(r ; dargs)`:
    /// `g`'s primal is not recomputed.
    fn split_extern_call(
        &mut self,
        s: &Stmt,
        c: &Call,
        base: &str,
        prim: &mut Vec<Stmt>,
        lin: &mut Vec<Stmt>,
        cache: &mut ShapeCache,
    ) -> Result<(), UnzipError> {
        let names = Names::of(base);
        // The type of the residuals `g__fwdres` keeps (`g__linres`'s one
        // non-linear parameter), where they are used.
        let kept = match (self.depth, self.prog.func(&names.linres)) {
            (0, Some(f)) => f.params.first().map(|r| f.vars.ty(*r).clone()),
            _ => None,
        };
        let (prim_func, binds, lin_func, lin_args) = match kept {
            Some(res_ty) => {
                let r = self.vars.fresh("rcall", res_ty, false);
                let mut binds = s.binds.clone();
                binds.push(r);
                (names.fwdres, binds, names.linres, vec![Atom::Var(r)])
            }
            _ => (
                base.to_string(),
                s.binds.clone(),
                Derived::Lin.of(base),
                c.args.clone(),
            ),
        };
        prim.push(Stmt {
            binds,
            lin_binds: vec![],
            expr: Expr::Call(Call {
                func: prim_func,
                args: c.args.clone(),
                lin_args: vec![],
                lin_shapes: vec![],
            }),
            src: s.src,
        });
        let mut ls = Stmt {
            binds: vec![],
            lin_binds: s.lin_binds.clone(),
            expr: Expr::Call(Call {
                func: lin_func,
                args: lin_args,
                lin_args: c.lin_args.clone(),
                lin_shapes: c.lin_shapes.clone(),
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
