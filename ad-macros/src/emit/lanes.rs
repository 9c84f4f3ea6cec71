//! Lanes taken once before a loop (loop-invariant code motion of the array
//! part of element reads).
//!
//! An element read `a[i, k]` inside a counted loop, where `a` and the
//! leading index `i` are bound outside the loop, reads the same row on
//! every iteration. The loop's emitter takes that row once, before the loop,
//! as a slice (`ad_runtime::lane2`), and the read becomes `lane[k]`:
//!
//! ```text
//! loop n |k| { let v = index x[i, k] ... }
//!   =>  let __lane = lane2(&x, i as usize); let __lane: &[f64] = &__lane;
//!       for k in 0..n { let v = __lane[k as usize]; ... }
//! ```
//!
//! Reads in nested loops and branches of the body count too: each lane is
//! taken at the outermost loop outside which all its operands are bound, so
//! a row read in a triangular inner loop is taken once per outer iteration.
//! Ranks 1 to 3 (the leading indices fixed, the last one read). The lane
//! holds the same elements as the array (borrowed, or copied when the lane is
//! strided) and is empty when a leading index is out of bounds, so every read
//! panics exactly where the ndarray index it replaces would have panicked.
//!
//! Linear arrays are lane-read only when they are only read (see
//! `uses.rs`): they are never updated while the lane is borrowed.

use super::func::Emitter;
use super::types::{elem_ty, rt};
use crate::text::{text, Code};
use ad_core_ir::ir::{ArrayOp, Atom, Block, Expr, Lambda, LinOp, Var};
use ad_core_ir::visit::{blocks, free_vars_lambda};
use std::collections::BTreeSet;

/// A leading index of a lane: a variable (its alias root) or a literal.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Lead {
    /// A variable bound outside the loop.
    Var(Var),
    /// An integer literal.
    Lit(i64),
}

/// Which lane an element read reads: the array (alias root) and its leading
/// indices.
pub type LaneKey = (Var, Vec<Lead>);

/// An element read a loop may take a lane for ([`Emitter::lane_reads`]).
pub struct LaneRead {
    /// The lane: the array's alias root and the leading indices.
    pub key: LaneKey,
    /// The array as read.
    pub arr: Var,
    /// All the indices of the read.
    pub idx: Vec<Atom>,
    /// Whether the array is linear.
    pub linear: bool,
    /// The element's Rust type.
    pub elem: Code,
}

impl LaneRead {
    /// The leading indices (all but the last).
    pub fn leads(&self) -> &[Atom] {
        &self.idx[..self.idx.len() - 1]
    }
}

impl Emitter<'_> {
    /// The lane key of the element read `arr[idx]`, if it is one of a rank
    /// 1-3 array.
    pub fn lane_key(&self, arr: Var, idx: &[Atom]) -> Option<LaneKey> {
        let rank = self.ty(self.uses.root(arr)).rank()?;
        if !(1..=3).contains(&rank) || idx.len() != rank {
            return None;
        }
        let lead = idx[..rank - 1]
            .iter()
            .map(|a| match a {
                Atom::Var(v) => Some(Lead::Var(self.uses.root(*v))),
                Atom::I64(k) => Some(Lead::Lit(*k)),
                Atom::F64(_) | Atom::Bool(_) => None,
            })
            .collect::<Option<Vec<_>>>()?;
        Some((self.uses.root(arr), lead))
    }

    /// The element read `arr[idx]` through a lane taken before an enclosing
    /// loop, if there is one.
    pub fn lane_read(&self, arr: Var, idx: &[Atom]) -> Option<Code> {
        let key = self.lane_key(arr, idx)?;
        let lane = self.lanes.get(&key)?;
        let k = self.usize_of(idx.last()?);
        Some(text!(#lane[#k]))
    }

    /// Takes, before the loop whose body is `lam`, the lanes of the element
    /// reads in it (nested blocks included) whose array and leading indices
    /// are bound outside it and that no enclosing loop took already. Returns
    /// the statements and the keys to drop with [`Emitter::drop_lanes`] once
    /// the loop is emitted.
    pub fn take_lanes(&mut self, lam: &Lambda) -> (Code, Vec<LaneKey>) {
        self.take_lanes_except(lam, &|_| false)
    }

    /// [`Emitter::take_lanes`] but for the reads whose key `skip` names (in
    /// a strip-mined body: leading indices that vary, arrays held as lanes;
    /// `strip.rs`).
    pub fn take_lanes_except(
        &mut self,
        lam: &Lambda,
        skip: &dyn Fn(&LaneKey) -> bool,
    ) -> (Code, Vec<LaneKey>) {
        let mut out = Code::new();
        let mut keys = vec![];
        for r in self.lane_reads(lam) {
            let read_only = !r.linear || self.uses.lin_read_only(r.arr);
            if !read_only || skip(&r.key) || self.lanes.contains_key(&r.key) {
                continue;
            }
            let (t, lane, a) = (&r.elem, self.fresh("lane"), self.var_ref(r.key.0));
            let ix: Vec<Code> = r.leads().iter().map(|a| self.usize_of(a)).collect();
            let f = lane_fn(ix.len());
            let rt = rt();
            out.extend(text!(
                let #lane = #rt::#f(#a #(, #ix)*);
                let #lane: &[#t] = &#lane;
            ));
            self.lanes.insert(r.key.clone(), lane);
            keys.push(r.key);
        }
        (out, keys)
    }

    /// The element reads in the loop body `lam` (nested blocks included)
    /// of rank 1-3 arrays whose array and leading indices are bound outside
    /// it: the lanes the loop may take before it (`take_lanes_except`, and
    /// per strip-mined lane in `strip.rs`).
    pub(super) fn lane_reads(&self, lam: &Lambda) -> Vec<LaneRead> {
        let free = free_vars_lambda(lam);
        let outside: BTreeSet<Var> = free.nl.iter().map(|v| self.uses.root(*v)).collect();
        let lin_outside: BTreeSet<Var> = free.lin.iter().map(|v| self.uses.root(*v)).collect();
        let mut reads = vec![];
        element_reads(&lam.body, &mut reads);
        reads
            .into_iter()
            .filter_map(|(arr, idx, linear)| {
                let key = self.lane_key(arr, &idx)?;
                let bound = if linear { &lin_outside } else { &outside };
                if !bound.contains(&key.0) || !leads_in(&key, &outside) {
                    return None;
                }
                let elem = elem_ty(self.ty(key.0).elem()?);
                Some(LaneRead {
                    key,
                    arr,
                    idx,
                    linear,
                    elem,
                })
            })
            .collect()
    }

    /// Forgets lanes taken by [`Emitter::take_lanes`] (their loop is
    /// emitted; the names are out of scope).
    pub fn drop_lanes(&mut self, keys: Vec<LaneKey>) {
        for k in keys {
            self.lanes.remove(&k);
        }
    }
}

/// Whether every leading index of `key` is a literal or a variable of
/// `outside`.
pub(super) fn leads_in(key: &LaneKey, outside: &BTreeSet<Var>) -> bool {
    key.1.iter().all(|l| match l {
        Lead::Var(v) => outside.contains(v),
        Lead::Lit(_) => true,
    })
}

/// The runtime function taking the lane of an array read with `leads`
/// leading indices (`ad_runtime::lane1/2/3`).
pub(super) fn lane_fn(leads: usize) -> Code {
    match leads {
        0 => text!(lane1),
        1 => text!(lane2),
        _ => text!(lane3),
    }
}

/// An `ad_runtime::LaneRows` of element type `t` over the rows of `a` at
/// the per-lane leading indices `ix` (expressions of `__l`), read by a
/// loop of `trip` iterations: a matrix's rows are sliced out of its buffer
/// (`LaneRows::of_matrix`), other arrays' taken through `lane1`/`lane3`.
pub(super) fn lane_rows(t: &Code, a: &Code, ix: &[Code], trip: &Code) -> Code {
    let rt = super::types::rt();
    if let [i] = ix {
        return text!(#rt::LaneRows::<#t>::of_matrix(#a, |__l: usize| #i, #trip));
    }
    let f = lane_fn(ix.len());
    text!(#rt::LaneRows::<#t>::new(|__l: usize| #rt::#f(#a #(, #ix)*), #trip))
}

/// The element reads of `b` and its nested blocks: `(array, indices,
/// linear)`.
pub(super) fn element_reads(b: &Block, out: &mut Vec<(Var, Vec<Atom>, bool)>) {
    for s in &b.stmts {
        match &s.expr {
            Expr::Array(ArrayOp::Index {
                arr: Atom::Var(a),
                idx,
            }) => out.push((*a, idx.clone(), false)),
            Expr::Lin(LinOp::Index { x, idx }) => out.push((*x, idx.clone(), true)),
            e => {
                for nested in blocks(e) {
                    element_reads(nested, out);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::test_crate::TestCrate;
    use quote::quote;

    /// A row read in a loop is taken once before it; a column read (the
    /// leading index is the loop's) is not.
    #[test]
    fn rows_read_in_loops_are_taken_before_them() {
        let krate = TestCrate::new(
            "lanes",
            "#[differentiable] fn rows(a: &Array2<f64>, i: usize) -> f64 { 0.0 }\n\
             #[differentiable] fn cols(a: &Array2<f64>, j: usize) -> f64 { 0.0 }",
        );
        let rows = krate.expand_idents(quote! {
            fn rows(a: &Array2<f64>, i: usize) -> f64 {
                let mut s = 0.0;
                for k in 0..a.ncols() {
                    s += a[[i, k]] * a[[i, k]];
                }
                s
            }
        });
        assert!(rows.iter().any(|t| t == "lane2"), "{rows:?}");
        let cols = krate.expand_idents(quote! {
            fn cols(a: &Array2<f64>, j: usize) -> f64 {
                let mut s = 0.0;
                for k in 0..a.nrows() {
                    s += a[[k, j]] * a[[k, j]];
                }
                s
            }
        });
        assert!(!cols.iter().any(|t| t == "lane2"), "{cols:?}");
    }
}
