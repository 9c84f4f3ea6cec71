//! Transposition of a linear counted loop: the loop runs in the opposite
//! direction, its state the cotangents of the original state followed by
//! accumulators for the captured variables (seeded before the body is
//! transposed, so nested loops and branches thread them).
//!
//! ```text
//! let ; ds = loop n (; s = d0) |i ; s| {      let ; l̄, x̄ = loop n rev (; c = ct, acc = z) |i ; c, acc| {
//!   let ; a = lscale x, s                       let ; c1, c2 = dup c
//!   let ; b = lscale s_i, dx                    let ; a = lscale s_i, c1
//!   let ; t = ladd a, b                         let ; b = lscale x, c2
//!   yield ; t                                   let ; acc' = ladd acc, a
//! }                                             yield ; b, acc'
//!                                             }
//! ```

use super::{Contrib, TransposeError, Transposer};
use crate::ir::*;
use crate::visit::free_vars_lambda;

impl<'p> Transposer<'p> {
    /// A loop `(ls_n.., LY..) = loop n (ls_0..) |i ; ls| { body }` capturing `F`
    /// runs backwards: `(l̄s_0.., F̄..) = loop n rev (l̄s_n.., F̄_later..) |i ; c, acc| {
    /// bodyᵀ(c, L̄Y[i]) ; acc + contributions }`.
    pub(super) fn loop_(&mut self, s: &Stmt, l: &Loop) -> Result<(), TransposeError> {
        let cts = self.result_cts(s)?;
        if cts.iter().all(Option::is_none) {
            return Ok(());
        }
        let m = l.lin_init.len();
        let i = l.body.params[0];
        let caps: Vec<Var> = self.unique_roots(free_vars_lambda(&l.body).lin);
        let saved = self.stash(&caps);
        // Loop state of the transposed loop: state cotangents, then accumulators.
        let mut c_params = vec![];
        for k in 0..m {
            let t = self.b.ty(l.body.lin_params[k]).clone();
            c_params.push(self.b.fresh_lin("ct_state", t));
        }
        let mut acc_params = vec![];
        for &f in &caps {
            let t = self.b.ty(f).clone();
            acc_params.push(self.b.fresh_lin("acc", t));
        }
        // Body.
        self.b.open();
        let mut seeds: Vec<Option<Var>> = c_params.iter().map(|c| Some(*c)).collect();
        for ct in &cts[m..] {
            seeds.push(ct.map(|c| {
                self.b.lin(LinOp::Index {
                    x: c,
                    idx: vec![Atom::Var(i)],
                })
            }));
        }
        // The accumulators are contributions from the start, so nested loops
        // and branches thread them instead of starting from zeros.
        for (k, &f) in caps.iter().enumerate() {
            self.add(f, Contrib::Dense(acc_params[k]));
        }
        self.block(&l.body.body, &seeds)?;
        let mut state_out = vec![];
        for &p in &l.body.lin_params {
            state_out.push(self.materialize_or_zero(p)?);
        }
        let (used, acc_out) = self.collect_accumulators(&caps, &acc_params)?;
        let mut lin_results = state_out;
        lin_results.extend(&acc_out);
        let body = self.b.close(vec![], lin_results);
        // Initial values: the final state's cotangents and the outer contributions.
        let mut lin_init = vec![];
        for (ct, y) in cts.iter().zip(&s.lin_binds).take(m) {
            lin_init.push(match ct {
                Some(c) => *c,
                None => {
                    let sh = self.shape_of(*y)?;
                    self.b.lin(LinOp::Zero(sh))
                }
            });
        }
        let mut saved = saved;
        for &k in &used {
            let f = caps[k];
            if let Some(cs) = saved.remove(&f) {
                self.put(f, cs);
            }
            lin_init.push(self.materialize_or_zero(f)?);
        }
        self.restore(saved);
        let mut lin_params = c_params;
        lin_params.extend(used.iter().map(|k| acc_params[*k]));
        let (_, outs) = self.b.emit(Expr::Loop(Loop {
            n: l.n,
            rev: !l.rev,
            init: vec![],
            lin_init,
            body: Lambda {
                params: vec![i],
                lin_params,
                body,
            },
        }));
        for (k, o) in outs.iter().enumerate() {
            if k < m {
                self.add_dense(l.lin_init[k], Some(*o));
            } else {
                self.add_dense(caps[used[k - m]], Some(*o));
            }
        }
        Ok(())
    }
}
