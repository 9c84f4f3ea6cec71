//! Transposition of a linear `if`: each branch is transposed on its own and
//! returns the cotangents of the variables the `if` captures. Contributions
//! a captured variable already has (from later statements) are the base each
//! branch adds to, so a branch that does not touch it returns it unchanged.
//!
//! ```text
//! let ; y = if c @ () {             let ; x̄1 = if c @ [n] {      (x̄0: dx's cotangent so far)
//!   let ; d = lindex dx[k]            let ; x̄ = lupdate x̄0[k] += ȳ
//!   yield ; d                         yield ; x̄
//! } else {                          } else {
//!   drop dx                           drop ȳ
//!   let ; z = lzero ()                yield ; x̄0
//!   yield ; z                       }
//! }
//! ```

use super::{Contrib, TransposeError, Transposer};
use crate::fast_hash::FastMap;
use crate::ir::*;
use crate::visit::free_vars_block;
use std::collections::BTreeSet;

impl<'p> Transposer<'p> {
    /// `if c { A } else { B }` with captured linear variables `F`:
    /// `(F̄..) = if c { Aᵀ(ȳ) } else { Bᵀ(ȳ) }`.
    pub(super) fn if_(&mut self, s: &Stmt, i: &If) -> Result<(), TransposeError> {
        let cts = self.result_cts(s)?;
        if cts.iter().all(Option::is_none) {
            return Ok(());
        }
        let mut caps: BTreeSet<Var> = free_vars_block(&i.then_).lin;
        caps.extend(free_vars_block(&i.else_).lin);
        let caps: Vec<Var> = self.unique_roots(caps);
        // Captured variables that already have contributions (from later
        // statements, or an enclosing accumulator) are threaded: their sum is
        // the base each branch adds to, so a branch that does not touch one
        // returns it unchanged and no zero array is made.
        let mut base: FastMap<Var, Var> = FastMap::default();
        for &f in &caps {
            if let Some(b) = self.materialize(f)? {
                base.insert(f, b);
            }
        }
        // Transpose both branches; collect which captured variables get a cotangent.
        let mut branches = vec![];
        for blk in [&i.then_, &i.else_] {
            self.b.open();
            for (f, b) in &base {
                self.add(*f, Contrib::Dense(*b));
            }
            self.block(blk, &cts)?;
            let mut got = vec![];
            for &f in &caps {
                got.push(self.materialize(f)?);
            }
            branches.push((self.b.close(vec![], vec![]), got));
        }
        let used: Vec<usize> = (0..caps.len())
            .filter(|k| branches.iter().any(|(_, g)| g[*k].is_some()))
            .collect();
        let mut blocks = vec![];
        for (mut blk, got) in branches {
            self.b.open();
            for st in blk.stmts.drain(..) {
                self.b.push(st);
            }
            let mut res = vec![];
            for &k in &used {
                res.push(match got[k] {
                    Some(v) => v,
                    None => {
                        let sh = self.shape_of(caps[k])?;
                        self.b.lin(LinOp::Zero(sh))
                    }
                });
            }
            blocks.push(self.b.close(vec![], res));
        }
        let mut lin_shapes = vec![];
        for &k in &used {
            lin_shapes.push(self.shape_of(caps[k])?);
        }
        let else_ = blocks.pop().expect("two branches");
        let then_ = blocks.pop().expect("two branches");
        let (_, outs) = self.b.emit(Expr::If(If {
            cond: i.cond,
            then_,
            else_,
            lin_shapes,
        }));
        for (k, o) in used.into_iter().zip(outs) {
            self.add_dense(caps[k], Some(o));
        }
        Ok(())
    }
}
