//! The order in which ndarray's `a.fold(..)` and `Zip` visit elements:
//! their *memory* order, which for a column-major, transposed or reversed
//! array is not the logical row-major order of `iter()`. A loop that adds
//! in another order than `f` gives other bits, so these are lowered as
//! a loop over positions `k` in ndarray's order: a [`Plan`] computed once
//! from the arrays' shapes and strides (`stride`, the IR's view of the
//! memory layout), then the multi-index of the element visited `k`-th.
//!
//! ```text
//! a.fold(0.0, |s, &x| s + x)            a: [[f64]]
//! ==>  n0 = shape a, 0    n1 = shape a, 1    s0 = stride a, 0    s1 = stride a, 1
//!      div0, div1, rev0, rev1 = (integer and boolean steps on n0, n1, s0, s1)
//!      loop n0 * n1 (s = 0.0) |k| {
//!        t0 = rem (div k, div0), n0    i0 = select rev0, (n0 - 1 - t0), t0
//!        t1 = rem (div k, div1), n1    i1 = select rev1, (n1 - 1 - t1), t1
//!        x = index a[i0, i1]
//!        yield add s, x
//!      }
//! ```
//!
//! The rules are ndarray 0.17's:
//! - `ArrayBase::fold`: a contiguous array (`as_slice_memory_order`) in
//!   memory order (axes from the largest |stride| to the smallest, an axis
//!   of negative stride backwards); any other with the axes in order, the
//!   smallest-|stride| axis of length > 1 swapped with the last
//!   (`move_min_stride_axis_to_last`; two axes: swapped when
//!   `n1 <= 1 || n0 > 1 && |s0| < |s1|`), forwards.
//! - `Zip` (`for_each`, `fold`): every axis forwards, column-major when not
//!   every producer is row-major contiguous and either every producer is
//!   column-major contiguous or (not all contiguous alike) the producers'
//!   layout tendencies sum below zero; row-major otherwise, and always for
//!   vectors.
//!
//! In generated code `stride` reads the array's own strides: the emitter
//! keeps the memory layout `f`'s arrays have (a transpose or a slice stays
//! a view), so the order is the one ndarray follows in `f`. The
//! interpreter's arrays are row-major (the plan is then row-major too).

use super::ctx::Lowerer;
use ad_core_ir::ir::{ArrayOp, Atom, Prim};
use proc_macro2::Span;

/// Where the element visited `k`-th is: per axis, `t = (k / div) % len`,
/// backwards (`len - 1 - t`) when `rev` holds.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    axes: Vec<AxisOrder>,
}

#[derive(Clone, Debug, PartialEq)]
struct AxisOrder {
    /// The axis' length.
    len: Atom,
    /// The number of positions one step along the axis spans.
    div: Atom,
    /// Whether the axis is visited backwards (a `bool`).
    rev: Atom,
}

impl Lowerer<'_> {
    /// The order `arr.fold(..)` visits the elements of `arr` (of rank
    /// `rank`) in.
    pub fn fold_plan(&mut self, arr: Atom, rank: usize, span: Span) -> Option<Plan> {
        if rank == 1 {
            // contiguous when the stride is 1 or -1 (or for one element):
            // backwards when it is -1
            let len = self.array(ArrayOp::Shape { arr, axis: 0 }, span)?;
            let s = self.array(ArrayOp::Stride { arr, axis: 0 }, span)?;
            let rev = self.prim(Prim::Eq, &[s, Atom::I64(-1)], span)?;
            let div = Atom::I64(1);
            return Some(Plan {
                axes: vec![AxisOrder { len, div, rev }],
            });
        }
        let mut lens = vec![];
        let mut abs = vec![];
        let mut strides = vec![];
        for axis in 0..rank {
            lens.push(self.array(ArrayOp::Shape { arr, axis }, span)?);
            let s = self.array(ArrayOp::Stride { arr, axis }, span)?;
            abs.push(self.prim(Prim::Abs, &[s], span)?);
            strides.push(s);
        }
        // Memory order: axis `b` is faster than `a` when its |stride| is
        // smaller (ties: the earlier axis, as a stable sort puts it).
        let mut mem_div = vec![];
        let mut contiguous = Atom::Bool(true);
        for a in 0..rank {
            let mut div = Atom::I64(1);
            for b in (0..rank).filter(|&b| b != a) {
                let tie = if b < a { Prim::Le } else { Prim::Lt };
                let faster = self.prim(tie, &[abs[b], abs[a]], span)?;
                let f = self.prim(Prim::Select, &[faster, lens[b], Atom::I64(1)], span)?;
                div = self.prim(Prim::Mul, &[div, f], span)?;
            }
            // contiguous: each axis of length > 1 steps over the faster ones
            let single = self.prim(Prim::Eq, &[lens[a], Atom::I64(1)], span)?;
            let packed = self.prim(Prim::Eq, &[abs[a], div], span)?;
            let ok = self.prim(Prim::Or, &[single, packed], span)?;
            contiguous = self.prim(Prim::And, &[contiguous, ok], span)?;
            mem_div.push(div);
        }
        // Otherwise: positions `p(a)` of the axes after the swap.
        let pos = self.swapped_positions(&lens, &abs, span)?;
        let mut axes = vec![];
        for a in 0..rank {
            let mut div = Atom::I64(1);
            for b in (0..rank).filter(|&b| b != a) {
                let inner = self.prim(Prim::Gt, &[pos[b], pos[a]], span)?;
                let f = self.prim(Prim::Select, &[inner, lens[b], Atom::I64(1)], span)?;
                div = self.prim(Prim::Mul, &[div, f], span)?;
            }
            let div = self.prim(Prim::Select, &[contiguous, mem_div[a], div], span)?;
            let neg = self.prim(Prim::Lt, &[strides[a], Atom::I64(0)], span)?;
            let rev = self.prim(Prim::And, &[contiguous, neg], span)?;
            axes.push(AxisOrder {
                len: lens[a],
                div,
                rev,
            });
        }
        Some(Plan { axes })
    }

    /// The position of each axis (0 outermost) after
    /// `move_min_stride_axis_to_last`.
    fn swapped_positions(&mut self, lens: &[Atom], abs: &[Atom], span: Span) -> Option<Vec<Atom>> {
        let rank = lens.len();
        let last = Atom::I64(rank as i64 - 1);
        let swap_with = match rank {
            0 | 1 => return Some(vec![Atom::I64(0); rank]),
            2 => {
                // swapped when `n1 <= 1 || n0 > 1 && |s0| < |s1|`: axis 0 goes last
                let short = self.prim(Prim::Le, &[lens[1], Atom::I64(1)], span)?;
                let long = self.prim(Prim::Gt, &[lens[0], Atom::I64(1)], span)?;
                let smaller = self.prim(Prim::Lt, &[abs[0], abs[1]], span)?;
                let both = self.prim(Prim::And, &[long, smaller], span)?;
                let swap = self.prim(Prim::Or, &[short, both], span)?;
                self.prim(Prim::Select, &[swap, Atom::I64(0), Atom::I64(1)], span)?
            }
            _ => {
                // the first axis of length > 1 with the least |stride|, or
                // the last (no swap) when none is longer than 1
                let mut best = last;
                let mut best_abs = Atom::I64(i64::MAX);
                for a in (0..rank).rev() {
                    let long = self.prim(Prim::Gt, &[lens[a], Atom::I64(1)], span)?;
                    let le = self.prim(Prim::Le, &[abs[a], best_abs], span)?;
                    let take = self.prim(Prim::And, &[long, le], span)?;
                    best = self.prim(Prim::Select, &[take, Atom::I64(a as i64), best], span)?;
                    best_abs = self.prim(Prim::Select, &[take, abs[a], best_abs], span)?;
                }
                best
            }
        };
        let mut pos = vec![];
        for a in 0..rank {
            let is_min = self.prim(Prim::Eq, &[swap_with, Atom::I64(a as i64)], span)?;
            let p = if a == rank - 1 {
                self.prim(Prim::Select, &[is_min, last, swap_with], span)?
            } else {
                self.prim(Prim::Select, &[is_min, last, Atom::I64(a as i64)], span)?
            };
            pos.push(p);
        }
        Some(pos)
    }

    /// The order `Zip` visits arrays of one shape (of rank `rank`) in;
    /// `None` for vectors (in order).
    pub fn zip_plan(&mut self, arrs: &[Atom], rank: usize, span: Span) -> Option<Option<Plan>> {
        if rank <= 1 {
            return Some(None);
        }
        let lens: Vec<Atom> = (0..rank)
            .map(|axis| self.array(ArrayOp::Shape { arr: arrs[0], axis }, span))
            .collect::<Option<_>>()?;
        let (mut all_c, mut all_f, mut tendency) =
            (Atom::Bool(true), Atom::Bool(true), Atom::I64(0));
        for &arr in arrs {
            let (c, f, t) = self.zip_layout(arr, rank, span)?;
            all_c = self.prim(Prim::And, &[all_c, c], span)?;
            all_f = self.prim(Prim::And, &[all_f, f], span)?;
            tendency = self.prim(Prim::Add, &[tendency, t], span)?;
        }
        // column-major: `!all_c && (all_f || tendency < 0)`
        let leans_f = self.prim(Prim::Lt, &[tendency, Atom::I64(0)], span)?;
        let f_ish = self.prim(Prim::Or, &[all_f, leans_f], span)?;
        let not_c = self.prim(Prim::Not, &[all_c], span)?;
        let column_major = self.prim(Prim::And, &[not_c, f_ish], span)?;
        let mut axes = vec![];
        for a in 0..rank {
            let (mut c_div, mut f_div) = (Atom::I64(1), Atom::I64(1));
            for &len in &lens[a + 1..] {
                c_div = self.prim(Prim::Mul, &[c_div, len], span)?;
            }
            for &len in &lens[..a] {
                f_div = self.prim(Prim::Mul, &[f_div, len], span)?;
            }
            let div = self.prim(Prim::Select, &[column_major, f_div, c_div], span)?;
            axes.push(AxisOrder {
                len: lens[a],
                div,
                rev: Atom::Bool(false),
            });
        }
        Some(Some(Plan { axes }))
    }

    /// ndarray's layout of one `Zip` producer of rank `rank >= 2`
    /// (`array_layout`): whether it is row-major contiguous, whether
    /// column-major contiguous, and its tendency (`+2` row-major, `-2`
    /// column-major, `0` both (one axis longer than 1), `-1` / `+1` when
    /// only the first / last axis has unit stride, `0` otherwise).
    fn zip_layout(&mut self, arr: Atom, rank: usize, span: Span) -> Option<(Atom, Atom, Atom)> {
        let mut lens = vec![];
        let mut strides = vec![];
        for axis in 0..rank {
            lens.push(self.array(ArrayOp::Shape { arr, axis }, span)?);
            strides.push(self.array(ArrayOp::Stride { arr, axis }, span)?);
        }
        let mut empty = Atom::Bool(false);
        let mut long_axes = Atom::I64(0);
        for &len in &lens {
            let zero = self.prim(Prim::Eq, &[len, Atom::I64(0)], span)?;
            empty = self.prim(Prim::Or, &[empty, zero], span)?;
            let long = self.prim(Prim::Gt, &[len, Atom::I64(1)], span)?;
            let one = self.prim(Prim::Select, &[long, Atom::I64(1), Atom::I64(0)], span)?;
            long_axes = self.prim(Prim::Add, &[long_axes, one], span)?;
        }
        // contiguous in one order: each axis of length != 1 has the product
        // of the lengths after (row-major) or before (column-major) it as
        // its stride (positive); an empty array is both
        let packed = |lw: &mut Self, order: &[usize]| -> Option<Atom> {
            let mut ok = Atom::Bool(true);
            let mut expect = Atom::I64(1);
            for &a in order {
                let single = lw.prim(Prim::Eq, &[lens[a], Atom::I64(1)], span)?;
                let eq = lw.prim(Prim::Eq, &[strides[a], expect], span)?;
                let fine = lw.prim(Prim::Or, &[single, eq], span)?;
                ok = lw.prim(Prim::And, &[ok, fine], span)?;
                expect = lw.prim(Prim::Mul, &[expect, lens[a]], span)?;
            }
            lw.prim(Prim::Or, &[empty, ok], span)
        };
        let row: Vec<usize> = (0..rank).rev().collect();
        let col: Vec<usize> = (0..rank).collect();
        let is_c = packed(self, &row)?;
        let is_f = packed(self, &col)?;
        // row-major with at most one axis longer than 1 is both
        let few = self.prim(Prim::Le, &[long_axes, Atom::I64(1)], span)?;
        let one_dim = self.prim(Prim::And, &[is_c, few], span)?;
        let not_c = self.prim(Prim::Not, &[is_c], span)?;
        let only_f = self.prim(Prim::And, &[not_c, is_f], span)?;
        let f_flag = self.prim(Prim::Or, &[one_dim, only_f], span)?;
        // tendency of a layout that is neither: by the unit-stride end
        let first_unit = self.unit_end(lens[0], strides[0], span)?;
        let last_unit = self.unit_end(lens[rank - 1], strides[rank - 1], span)?;
        let pref = self.prim(Prim::Select, &[last_unit, Atom::I64(1), Atom::I64(0)], span)?;
        let pref = self.prim(Prim::Select, &[first_unit, Atom::I64(-1), pref], span)?;
        let t = self.prim(Prim::Select, &[only_f, Atom::I64(-2), pref], span)?;
        let c_t = self.prim(Prim::Select, &[few, Atom::I64(0), Atom::I64(2)], span)?;
        let t = self.prim(Prim::Select, &[is_c, c_t, t], span)?;
        Some((is_c, f_flag, t))
    }

    /// `len > 1 && stride == 1`.
    fn unit_end(&mut self, len: Atom, stride: Atom, span: Span) -> Option<Atom> {
        let long = self.prim(Prim::Gt, &[len, Atom::I64(1)], span)?;
        let unit = self.prim(Prim::Eq, &[stride, Atom::I64(1)], span)?;
        self.prim(Prim::And, &[long, unit], span)
    }

    /// The multi-index of the element visited at position `pos` (an `i64`
    /// in `0..` the number of elements).
    pub fn plan_index(&mut self, plan: &Plan, pos: Atom, span: Span) -> Option<Vec<Atom>> {
        let mut idx = vec![];
        let single = plan.axes.len() == 1;
        for ax in &plan.axes {
            // one axis: `pos` itself (below its length)
            let t = if single && ax.div == Atom::I64(1) {
                pos
            } else {
                let q = self.prim(Prim::Div, &[pos, ax.div], span)?;
                self.prim(Prim::Rem, &[q, ax.len], span)?
            };
            let i = match ax.rev {
                Atom::Bool(false) => t,
                rev => {
                    let last = self.sub_i64(ax.len, Atom::I64(1), span)?;
                    let back = self.sub_i64(last, t, span)?;
                    self.prim(Prim::Select, &[rev, back, t], span)?
                }
            };
            idx.push(i);
        }
        Some(idx)
    }
}
