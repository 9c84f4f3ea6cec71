//! Transposition of a linear build. Capturing only scalars, it is a build of
//! the per-element contributions, summed; capturing arrays, a nest of
//! sequential loops over the index space whose state accumulates the
//! captured arrays' cotangents (an *accumulation loop*, see
//! [`crate::accumulate`]), so an element read costs one element in reverse.
//!
//! ```text
//! let ; dm = build [n] |i| {            let ; ū, v̄ = loop n (; acc1 = zeros, acc2 = zeros) |i ; acc1, acc2| {
//!   let ; a = lindex du[i]                let ; c = lindex ct[i]
//!   let ; b = lindex dv[i]                let ; c1, c2 = dup c
//!   let ; p = lscale v_i, a               let ; p = lscale u_i, c1
//!   let ; q = lscale u_i, b               let ; q = lscale v_i, c2
//!   let ; s = ladd p, q                   let ; acc1' = lupdate acc1[i] += q
//!   yield ; s                             let ; acc2' = lupdate acc2[i] += p
//! }                                       yield ; acc1', acc2'
//!                                       }
//! ```

use super::{Contrib, TransposeError, Transposer};
use crate::ir::*;
use crate::types::Ty;
use crate::visit::free_vars_lambda;

impl<'p> Transposer<'p> {
    /// A linear build. Capturing only scalars (or nothing): a build of the
    /// per-element contributions, summed. Capturing arrays: a loop nest over
    /// the index space accumulating into the captured variables' cotangents.
    pub(super) fn build(&mut self, s: &Stmt, bd: &Build) -> Result<(), TransposeError> {
        let cts = self.result_cts(s)?;
        if cts.iter().all(Option::is_none) {
            return Ok(());
        }
        let caps: Vec<Var> = self.unique_roots(free_vars_lambda(&bd.body).lin);
        let all_scalar = caps.iter().all(|v| self.b.ty(*v).rank() == Some(0));
        let idx: Vec<Atom> = bd.body.params.iter().map(|v| Atom::Var(*v)).collect();
        if all_scalar {
            let saved = self.stash(&caps);
            self.b.open();
            let mut seeds = vec![];
            for ct in &cts {
                seeds.push(ct.map(|c| {
                    self.b.lin(LinOp::Index {
                        x: c,
                        idx: idx.clone(),
                    })
                }));
            }
            self.block(&bd.body.body, &seeds)?;
            let (used, outs) = self.collect_caps(&caps)?;
            let body = self.b.close(vec![], outs);
            self.restore(saved);
            if used.is_empty() {
                return Ok(());
            }
            let (_, arrs) = self.b.emit(Expr::Build(Build {
                shape: bd.shape.clone(),
                body: Lambda {
                    params: bd.body.params.clone(),
                    lin_params: vec![],
                    body,
                },
            }));
            for (f, a) in used.into_iter().zip(arrs) {
                let sum = self.b.lin(LinOp::Sum { x: a, axis: None });
                self.add_dense(f, Some(sum));
            }
            return Ok(());
        }
        self.loop_nest(&bd.shape, &bd.body.params, &bd.body.body, &cts, &caps)
    }

    /// `for idx in shape { body }` transposed as nested sequential loops whose
    /// state accumulates the cotangents of the captured variables (`cts` are
    /// the cotangents of the stacked results, read at `idx`).
    pub(super) fn loop_nest(
        &mut self,
        shape: &[Atom],
        params: &[Var],
        body: &Block,
        cts: &[Option<Var>],
        caps: &[Var],
    ) -> Result<(), TransposeError> {
        let saved = self.stash(caps);
        let r = shape.len();
        let idx: Vec<Atom> = params.iter().map(|v| Atom::Var(*v)).collect();
        let tys: Vec<Ty> = caps.iter().map(|f| self.b.ty(*f).clone()).collect();
        // Accumulator parameters of the innermost body.
        let inner_acc: Vec<Var> = tys
            .iter()
            .map(|t| self.b.fresh_lin("acc", t.clone()))
            .collect();
        self.b.open();
        let mut seeds = vec![];
        for ct in cts {
            seeds.push(ct.map(|c| {
                self.b.lin(LinOp::Index {
                    x: c,
                    idx: idx.clone(),
                })
            }));
        }
        for (k, &f) in caps.iter().enumerate() {
            self.add(f, Contrib::Dense(inner_acc[k]));
        }
        self.block(body, &seeds)?;
        let (used, outs) = self.collect_accumulators(caps, &inner_acc)?;
        let mut blk = self.b.close(vec![], outs);
        let mut saved = saved;
        if used.is_empty() {
            self.restore(saved);
            return Ok(());
        }
        // Wrap in loops from the innermost axis outwards.
        let mut acc = inner_acc;
        for level in (0..r).rev() {
            let outer_acc: Vec<Var> = used
                .iter()
                .map(|k| self.b.fresh_lin("acc", tys[*k].clone()))
                .collect();
            let lin_params: Vec<Var> = used.iter().map(|k| acc[*k]).collect();
            let outs: Vec<Var> = used
                .iter()
                .map(|k| self.b.fresh_lin("acc", tys[*k].clone()))
                .collect();
            let stmt = Stmt {
                binds: vec![],
                lin_binds: outs.clone(),
                expr: Expr::Loop(Loop {
                    n: shape[level],
                    rev: false,
                    init: vec![],
                    lin_init: outer_acc.clone(),
                    body: Lambda {
                        params: vec![params[level]],
                        lin_params,
                        body: blk,
                    },
                }),
                src: None,
            };
            if level == 0 {
                // Outermost: initial values are the outer contributions (or zeros).
                let mut inits = vec![];
                for &k in &used {
                    let f = caps[k];
                    if let Some(cs) = saved.remove(&f) {
                        self.put(f, cs);
                    }
                    inits.push(self.materialize_or_zero(f)?);
                }
                let mut st = stmt;
                if let Expr::Loop(lp) = &mut st.expr {
                    lp.lin_init = inits;
                }
                self.b.push(st);
                self.restore(saved);
                for (k, o) in used.iter().zip(outs) {
                    self.add_dense(caps[*k], Some(o));
                }
                return Ok(());
            }
            blk = Block {
                stmts: vec![stmt],
                results: vec![],
                lin_results: outs,
            };
            let mut next = acc.clone();
            for (j, k) in used.iter().enumerate() {
                next[*k] = outer_acc[j];
            }
            acc = next;
        }
        unreachable!("a build has at least one axis")
    }
}
