//! Captured variables in the transposition of linear control flow (`if`,
//! loops, builds and maps).
//!
//! A nested block may read linear variables of the enclosing scope
//! (*captured*). Their cotangent contributions made inside the block are
//! summed inside it and returned by the transposed construct; contributions
//! already collected outside (from later statements) are set aside while the
//! block is transposed and then either restored or, for loops, used as the
//! initial value of the accumulator.
//!
//! This file holds what the constructs share: one cotangent list per
//! captured variable (`unique_roots`), setting contributions aside and back
//! (`stash`, `restore`), and collecting what a transposed body added to the
//! captured variables (`collect_accumulators` for loop state,
//! `collect_caps` for block results). The constructs are in `branch.rs`
//! (`if`), `loops.rs`, `build.rs` and `map.rs`.
//!
//! ```text
//! let ; y = loop n (; s = s0) |i ; s| {     let ; s̄0, ḡ = loop n rev (; c = ȳ, acc = ḡ_later) |i ; c, acc| {
//!   let ; u = ladd s, g   (g captured)        let ; c1, c2 = dup c
//!   yield ; u                                 let ; acc' = ladd acc, c2
//! }                                           yield ; c1, acc'
//!                                           }
//! ```

use super::{Contrib, TransposeError, Transposer};
use crate::fast_hash::FastMap;
use crate::ir::*;
use std::collections::BTreeSet;

impl<'p> Transposer<'p> {
    /// Captured variables, one per cotangent list (copies made by `dup` share
    /// their source's list, so a construct capturing two of them accumulates
    /// once).
    pub(super) fn unique_roots(&self, caps: impl IntoIterator<Item = Var>) -> Vec<Var> {
        let mut seen = BTreeSet::new();
        caps.into_iter()
            .filter(|v| seen.insert(self.root(*v)))
            .collect()
    }

    /// Removes and returns the contributions of `vs`.
    pub(super) fn stash(&mut self, vs: &[Var]) -> FastMap<Var, Vec<Contrib>> {
        vs.iter()
            .filter_map(|v| self.take(*v).map(|c| (*v, c)))
            .collect()
    }

    /// Puts back contributions set aside by [`Transposer::stash`].
    pub(super) fn restore(&mut self, saved: FastMap<Var, Vec<Contrib>>) {
        for (v, cs) in saved {
            self.put(v, cs);
        }
    }

    /// Materialised cotangents of a statement's linear results.
    pub(super) fn result_cts(&mut self, s: &Stmt) -> Result<Vec<Option<Var>>, TransposeError> {
        s.lin_binds.iter().map(|y| self.materialize(*y)).collect()
    }

    /// After a loop body seeded with `Dense(acc[k])` for each captured `caps[k]`:
    /// the captured variables that received contributions (indices) and their
    /// updated accumulators. An accumulator with no new contribution is not
    /// loop state (its seed is removed unread).
    pub(super) fn collect_accumulators(
        &mut self,
        caps: &[Var],
        acc: &[Var],
    ) -> Result<(Vec<usize>, Vec<Var>), TransposeError> {
        let mut used = vec![];
        let mut outs = vec![];
        for (k, &f) in caps.iter().enumerate() {
            let untouched = matches!(self.peek(f).map(|c| c.as_slice()), Some([Contrib::Dense(d)]) if *d == acc[k]);
            if untouched {
                self.take(f);
            } else {
                outs.push(self.materialize(f)?.expect("seeded"));
                used.push(k);
            }
        }
        Ok((used, outs))
    }

    /// Materialises the contributions of the captured variables inside a
    /// nested block: `(indices of the variables with contributions, values)`.
    pub(super) fn collect_caps(
        &mut self,
        caps: &[Var],
    ) -> Result<(Vec<Var>, Vec<Var>), TransposeError> {
        let mut used = vec![];
        let mut outs = vec![];
        for &f in caps {
            if let Some(v) = self.materialize(f)? {
                used.push(f);
                outs.push(v);
            }
        }
        Ok((used, outs))
    }
}
