//! Unzip of a mixed loop, build or map: the residuals of the body are
//! returned by the primal construct as extra *stacked* results (one array
//! per residual, struct of arrays, indexed by the loop index, the build
//! indices or the map's position), and the linear construct reads them back
//! at its start (`r = R[i]`); a map takes them as extra element inputs
//! instead. Which residuals are stored and which are recomputed is
//! `policy.rs`'s decision ([`Unzip::split_stacked`]).
//!
//! ```text
//! let y ; dy = build [n] |i| {      fwd: let y, E = build [n] |i| {    lin: let ; dy = build [n] |i| {
//!   let a = index x[i]                     let a = index x[i]                 let e = index E[i]
//!   let e = exp a                          let e = exp a                      let ; d = lindex dx[i]
//!   let ; d = lindex dx[i]                 yield e, e                         let ; t = lscale e, d
//!   let ; t = lscale e, d                }                                    yield ; t
//!   yield e ; t                                                             }
//! }
//! ```

use super::policy::ArrayResiduals;
use super::{Unzip, UnzipError};
use crate::ir::*;
use crate::typing::atom_ty;

/// The primal side of a stacked construct returning residuals: its body
/// results, its binders and the new stack variables.
type StackedOutputs = (Vec<Atom>, Vec<Var>, Vec<Var>);

impl<'p> Unzip<'p> {
    /// The primal side of a stacked construct that also returns the residuals
    /// `rs`: `(body results ++ rs, binders ++ stacks, stacks)`, the stacks
    /// being fresh outer variables with `extra` leading axes.
    fn stack_outputs(
        &mut self,
        rs: &[Var],
        extra: usize,
        results: &[Atom],
        binds: &[Var],
    ) -> Result<StackedOutputs, UnzipError> {
        let stacks = self.stacked_vars(rs, extra)?;
        let mut results = results.to_vec();
        results.extend(rs.iter().map(|v| Atom::Var(*v)));
        let mut binds = binds.to_vec();
        binds.extend(&stacks);
        Ok((results, binds, stacks))
    }

    /// Stacks residuals `rs` by `extra` leading axes: fresh outer variables.
    fn stacked_vars(&mut self, rs: &[Var], extra: usize) -> Result<Vec<Var>, UnzipError> {
        rs.iter()
            .map(|v| {
                let info = self.vars.info(*v).clone();
                let t = info.ty.stacked(extra).ok_or_else(|| {
                    UnzipError::internal(
                        format!(
                            "internal: residual {} of tuple type {} cannot be stacked",
                            info.name, info.ty
                        ),
                        None,
                    )
                })?;
                Ok(self.vars.fresh(format!("{}_s", info.name), t, false))
            })
            .collect()
    }

    pub(super) fn split_loop(
        &mut self,
        s: &Stmt,
        l: &Loop,
        prim: &mut Vec<Stmt>,
        lin: &mut Vec<Stmt>,
    ) -> Result<(), UnzipError> {
        let i = l.body.params[0];
        let (pb, lb, res) =
            self.split_stacked(&l.body.body, &l.body.params, &[i], ArrayResiduals::All)?;
        let res: Vec<Var> = res.into_iter().filter(|v| *v != i).collect();
        let (results, binds, stacks) =
            self.stack_outputs(&res, 1, &l.body.body.results, &s.binds)?;
        prim.push(Stmt {
            binds,
            lin_binds: vec![],
            expr: Expr::Loop(Loop {
                n: l.n,
                rev: l.rev,
                init: l.init.clone(),
                lin_init: vec![],
                body: Lambda {
                    params: l.body.params.clone(),
                    lin_params: vec![],
                    body: Block {
                        stmts: pb,
                        results,
                        lin_results: vec![],
                    },
                },
            }),
            src: s.src,
        });
        let mut stmts = stack_reads(&res, &stacks, &[Atom::Var(i)]);
        stmts.extend(lb);
        lin.push(Stmt {
            binds: vec![],
            lin_binds: s.lin_binds.clone(),
            expr: Expr::Loop(Loop {
                n: l.n,
                rev: l.rev,
                init: vec![],
                lin_init: l.lin_init.clone(),
                body: Lambda {
                    params: vec![i],
                    lin_params: l.body.lin_params.clone(),
                    body: Block {
                        stmts,
                        results: vec![],
                        lin_results: l.body.body.lin_results.clone(),
                    },
                },
            }),
            src: s.src,
        });
        Ok(())
    }

    pub(super) fn split_build(
        &mut self,
        s: &Stmt,
        b: &Build,
        prim: &mut Vec<Stmt>,
        lin: &mut Vec<Stmt>,
    ) -> Result<(), UnzipError> {
        let idx = &b.body.params;
        let (pb, lb, res) = self.split_stacked(&b.body.body, idx, idx, ArrayResiduals::Dear)?;
        let res: Vec<Var> = res.into_iter().filter(|v| !idx.contains(v)).collect();
        let (results, binds, stacks) =
            self.stack_outputs(&res, idx.len(), &b.body.body.results, &s.binds)?;
        prim.push(Stmt {
            binds,
            lin_binds: vec![],
            expr: Expr::Build(Build {
                shape: b.shape.clone(),
                body: Lambda {
                    params: idx.clone(),
                    lin_params: vec![],
                    body: Block {
                        stmts: pb,
                        results,
                        lin_results: vec![],
                    },
                },
            }),
            src: s.src,
        });
        let iatoms: Vec<Atom> = idx.iter().map(|v| Atom::Var(*v)).collect();
        let mut stmts = stack_reads(&res, &stacks, &iatoms);
        stmts.extend(lb);
        lin.push(Stmt {
            binds: vec![],
            lin_binds: s.lin_binds.clone(),
            expr: Expr::Build(Build {
                shape: b.shape.clone(),
                body: Lambda {
                    params: idx.clone(),
                    lin_params: vec![],
                    body: Block {
                        stmts,
                        results: vec![],
                        lin_results: b.body.body.lin_results.clone(),
                    },
                },
            }),
            src: s.src,
        });
        Ok(())
    }

    pub(super) fn split_map(
        &mut self,
        s: &Stmt,
        m: &Map,
        prim: &mut Vec<Stmt>,
        lin: &mut Vec<Stmt>,
    ) -> Result<(), UnzipError> {
        let params = &m.body.params;
        let (pb, lb, res) =
            self.split_stacked(&m.body.body, params, params, ArrayResiduals::None)?;
        // Element parameters read by the linear side come from the input arrays.
        let mut arrs = vec![];
        let mut lparams = vec![];
        for (a, p) in m.arrs.iter().zip(params) {
            if res.contains(p) {
                arrs.push(*a);
                lparams.push(*p);
            }
        }
        let computed: Vec<Var> = res.into_iter().filter(|v| !params.contains(v)).collect();
        let rank = m
            .arrs
            .first()
            .map(|a| atom_ty(a, &self.vars))
            .or_else(|| m.lin_arrs.first().map(|v| self.vars.ty(*v).clone()))
            .and_then(|t| t.rank())
            .unwrap_or(1);
        let (results, binds, stacks) =
            self.stack_outputs(&computed, rank, &m.body.body.results, &s.binds)?;
        prim.push(Stmt {
            binds,
            lin_binds: vec![],
            expr: Expr::Map(Map {
                arrs: m.arrs.clone(),
                lin_arrs: vec![],
                body: Lambda {
                    params: params.clone(),
                    lin_params: vec![],
                    body: Block {
                        stmts: pb,
                        results,
                        lin_results: vec![],
                    },
                },
            }),
            src: s.src,
        });
        arrs.extend(stacks.iter().map(|v| Atom::Var(*v)));
        lparams.extend(&computed);
        if arrs.is_empty() && m.lin_arrs.is_empty() {
            // Keep the index space: iterate over the first input, ignoring it.
            let a = m.arrs[0];
            let t = atom_ty(&a, &self.vars);
            let e = t.unstacked(t.rank().unwrap_or(0)).unwrap_or(t);
            arrs.push(a);
            lparams.push(self.vars.fresh("unused", e, false));
        }
        lin.push(Stmt {
            binds: vec![],
            lin_binds: s.lin_binds.clone(),
            expr: Expr::Map(Map {
                arrs,
                lin_arrs: m.lin_arrs.clone(),
                body: Lambda {
                    params: lparams,
                    lin_params: m.body.lin_params.clone(),
                    body: Block {
                        stmts: lb,
                        results: vec![],
                        lin_results: m.body.body.lin_results.clone(),
                    },
                },
            }),
            src: s.src,
        });
        Ok(())
    }
}

/// `r = R[idx]` for each stored residual `r` and its stack `R`: the first
/// statements of a linear loop or build body.
fn stack_reads(res: &[Var], stacks: &[Var], idx: &[Atom]) -> Vec<Stmt> {
    res.iter()
        .zip(stacks)
        .map(|(r, st)| Stmt {
            binds: vec![*r],
            lin_binds: vec![],
            expr: Expr::Array(ArrayOp::Index {
                arr: Atom::Var(*st),
                idx: idx.to_vec(),
            }),
            src: None,
        })
        .collect()
}
