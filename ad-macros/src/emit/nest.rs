//! Interchanged accumulation nests: an accumulation loop whose body is one
//! accumulation loop (what `ad_core_ir::simplify::interchange` makes of the
//! reverse of a build over points and components: components outer, points
//! inner) runs its outer iterations in chunks (`accumulate_chunked_by`, one
//! component per unit: each owns its gradient rows), and for each of them
//! the inner loop strip-mined over the points (`strip.rs`: blocks of
//! `LANES` (32) points, then the remaining points one by one).
//!
//! ```text
//! loop k (; a) |j| {                   accumulate_chunked_by(1, k, .., |a, lo, hi| {
//!   let ; a1 = loop n (; a) |i| {        for j in lo..hi {
//!     let x = index x[i, r]                let mut s = 0;
//!     ..                                   while s + 8 <= n {
//!   }                          =>            let x_i = x_cols.block(s);   // x[s + l, ..]
//!   yield ; a1                               .. lanes ..
//! }                                          s += 8;
//!                                          }
//!                                          for i in s..n { scalar body }
//!                                        }
//!                                      })
//! ```
//!
//! The nest takes this form when the inner body may be strip-mined and
//! every accumulator update in it is at an index that does not depend on
//! the inner index (each block adds its lanes' sum); otherwise the outer
//! loop runs as any accumulation loop.
//!
//! The inner body reads rows of the points (`x[i, r]`, `i` the points'
//! index) in every outer iteration: such a matrix, bound outside the nest,
//! is copied once per call as columns (`ad_runtime::Columns`, before the
//! chunks), so that a block of points at column `r` is one contiguous load,
//! instead of a tile of the block's rows made once per block and component.

use super::control::work_estimate;
use super::func::{Emitter, Out, R};
use super::lanes::LaneKey;
use super::strip::Strip;
use super::types::rt;
use crate::text::{text, Code};
use ad_core_ir::fast_hash::FastMap;
use ad_core_ir::ir::{ArrayOp, Atom, Block, Expr, Lambda, Loop, Prim, Stmt, Var};
use ad_core_ir::types::{Scalar, Ty};
use ad_core_ir::visit::free_vars_lambda;
use ad_core_ir::visit::reads_free_nl;
use proc_macro2::Ident;
use std::collections::BTreeSet;

/// A difference of a point's column and an invariant row in a strip-mined
/// body ([`Emitter::column_differences`]).
pub(super) struct ColumnDiff {
    /// The difference's binder, and the two reads it subtracts.
    at: Var,
    point: Var,
    row: Var,
    /// The lane keys of the columns and of the row.
    cols: LaneKey,
    lane: LaneKey,
    /// The column index.
    k: Atom,
    /// How many loops deep in the body it is (0: in the body's own block).
    depth: usize,
}

/// How the outer loop of an interchanged nest runs its inner loop
/// ([`Emitter::nested_plan`]).
pub struct Nested {
    /// The strip-mining plan of the inner loop's body.
    plan: Strip,
    /// The matrices read by point, copied as columns before the chunks:
    /// their lane keys and the names of the copies.
    cols: Vec<(LaneKey, Ident)>,
    /// The inner loop's first binder (the statement it applies to).
    at: Var,
}

impl Emitter<'_> {
    /// The plan of the accumulation loop body `lam` when it is one
    /// accumulation loop, with a trip count bound outside `lam`, whose body
    /// may be strip-mined; then also the statements making the column
    /// copies (to go before the chunks) and the work estimate of the whole
    /// nest (element operations, for the chunking). `None` otherwise.
    pub fn nested_plan(&mut self, lam: &Lambda) -> Option<(Nested, Code, Code)> {
        let [s] = lam.body.stmts.as_slice() else {
            return None;
        };
        let Expr::Loop(inner) = &s.expr else {
            return None;
        };
        let j = *lam.params.first()?;
        let inner_trip_outside = match &inner.n {
            Atom::Var(v) => self.uses.root(*v) != self.uses.root(j),
            _ => true,
        };
        if !inner_trip_outside
            || s.lin_binds.is_empty()
            || !ad_core_ir::accumulate::is_accumulation(inner)
        {
            return None;
        }
        // The outer index owns the rows: the inner iterations add at the
        // same places (one lane sum per block), none lane by lane.
        let plan = self
            .strip_accumulation_plan(&inner.body)
            .filter(Strip::gathers)?;
        let (cols, prologue) = self.column_copies(lam, &inner.body, &plan);
        let m = self.scalar(&inner.n);
        let w = work_estimate(&inner.body.body, 8).max(1);
        let work = text!(usize::try_from(#m).unwrap_or(0).saturating_mul(#w));
        let nested = Nested {
            plan,
            cols,
            at: s.lin_binds[0],
        };
        Some((nested, prologue, work))
    }

    /// For the outer loop `l` of a nest whose every accumulator is an array
    /// each iteration owns rows of (`ad_core_ir::accumulate::owned_rows`:
    /// updates of whole elements, at `c·j + b` on one axis), for each the
    /// axis, `c` and the name of the offset of a chunk's first row, with
    /// the shifts of its element indices recorded ([`Emitter::row_shifts`],
    /// for every variable holding it). `None` otherwise.
    pub fn row_plan(&mut self, l: &Loop) -> Option<Vec<(usize, usize, Ident)>> {
        let rows = ad_core_ir::accumulate::owned_rows(l)?;
        // Every stride checked before any shift is recorded: a plan
        // refused half-way would leave shifts behind for the chunks' code.
        let strides = rows
            .iter()
            .zip(&l.body.lin_params)
            .map(|(r, p)| {
                let whole = r.index_len > 0 && self.ty(*p).rank() == Some(r.index_len);
                usize::try_from(r.stride).ok().filter(|c| whole && *c >= 1)
            })
            .collect::<Option<Vec<usize>>>()?;
        let mut plan = vec![];
        for (r, c) in rows.into_iter().zip(strides) {
            let off = self.fresh("off");
            for v in &r.vars {
                self.row_shifts.insert(*v, (r.axis, off.clone()));
            }
            plan.push((r.axis, c, off));
        }
        Some(plan)
    }

    /// The matrices the inner body `ilam` reads as `a[i, r]`, `i` its index
    /// (the points), bound outside the outer body `lam`: their lane keys,
    /// with the statements copying their columns.
    fn column_copies(
        &mut self,
        lam: &Lambda,
        ilam: &Lambda,
        plan: &Strip,
    ) -> (Vec<(LaneKey, Ident)>, Code) {
        let outer_free = free_vars_lambda(lam);
        let outside: BTreeSet<Var> = outer_free
            .nl
            .iter()
            .chain(&outer_free.lin)
            .map(|v| self.uses.root(*v))
            .collect();
        let i = self.uses.root(ilam.params[0]);
        let mut reads = vec![];
        super::lanes::element_reads(&ilam.body, &mut reads);
        let (mut cols, mut prologue) = (vec![], Code::new());
        let rt = rt();
        for (arr, idx, linear) in reads {
            let root = self.uses.root(arr);
            let by_point = matches!(idx.first(), Some(Atom::Var(v)) if self.uses.root(*v) == i);
            if idx.len() != 2
                || self.ty(root).rank() != Some(2)
                || !by_point
                || !outside.contains(&root)
                || (linear && !plan.captures(root))
            {
                continue;
            }
            let Some(key) = self.lane_key(arr, &idx) else {
                continue;
            };
            if cols.iter().any(|(k, _)| *k == key) {
                continue;
            }
            let (t, a) = (self.fresh("cols"), self.var_view(root));
            prologue.extend(text!(let #t = #rt::Columns::new(&#a);));
            cols.push((key, t));
        }
        (cols, prologue)
    }

    /// The inner loop `l` (statement `s` at `site`) of an interchanged nest,
    /// strip-mined over its iterations as [`Emitter::nested_plan`] planned:
    /// blocks of `LANES` (32) iterations, then the rest one by one. The same
    /// accumulators in, the same out.
    pub fn nested_accumulation(
        &mut self,
        l: &Loop,
        s: &Stmt,
        site: usize,
        nested: Nested,
    ) -> R<Out> {
        let lam = &l.body;
        let (n, step, s0) = (self.fresh("n"), self.fresh("step"), self.fresh("s"));
        let trip = self.scalar(&l.n);
        let mut pre = text!(let #n: usize = usize::try_from(#trip).unwrap_or(0););
        for (p, v) in lam.lin_params.iter().zip(&l.lin_init) {
            let init = self.own_lin(*v, site);
            self.declare_mut(*p, init, &mut pre);
        }
        let names: Vec<Ident> = lam.lin_params.iter().map(|p| self.name(*p)).collect();
        let i = lam.params[0];
        self.set_repr(i, super::types::Repr::Val);
        let ib = self.binder(i);
        let (lanes, lane_keys) = self.take_lanes(lam);
        pre.extend(lanes);
        // The points one by one (the last `n % LANES`).
        let (stmts, results, _) = self.closed_block_parts(&lam.body, false)?;
        let assign = super::control::assign_all(&names, &results);
        // Blocks of points: their column blocks, then the body in lanes.
        let mut blocks = Code::new();
        for (key, t) in &nested.cols {
            let lane = self.fresh("lane");
            blocks.extend(text!(let #lane = #t.block(#s0);));
            self.strip_lanes.insert(key.clone(), lane);
        }
        // Differences of the points' columns and an invariant row, once
        // per block.
        let mut diffs = vec![];
        let (root_i, lanes) = (self.uses.root(i), &self.lanes);
        let by_point = |ck: &LaneKey, pi: &[Atom]| {
            matches!(pi.first(), Some(Atom::Var(v)) if self.uses.root(*v) == root_i)
                && nested.cols.iter().any(|(c, _)| c == ck)
        };
        self.column_differences(
            &lam.body,
            &by_point,
            &|lk| lanes.contains_key(lk),
            0,
            &mut diffs,
        );
        let (bufs, tables) = self.tabulate_differences(&diffs);
        pre.extend(bufs);
        blocks.extend(tables);
        let bounds = (text!(0usize), text!(#n));
        let lanes_loop = self.strip_blocks(lam, &nested.plan, &names, &ib, &s0, bounds, blocks);
        self.col_diffs.clear();
        self.col_skip.clear();
        self.forget_strip_lanes(nested.cols.into_iter().map(|(k, _)| k).collect());
        self.drop_lanes(lane_keys);
        let lanes_loop = lanes_loop?;
        let fin = super::types::flat(&names.iter().map(|n| text!(#n)).collect::<Vec<_>>());
        Ok(Out {
            expr: text!({
                #pre
                #lanes_loop
                for #step in #s0..#n {
                    let #ib: i64 = #step as i64;
                    #stmts
                    #assign
                }
                #fin
            }),
            reprs: self.owned_reprs(s),
        })
    }

    /// The differences `t = x[i, k] - m[.., k]` in `b` (nested loops'
    /// bodies included) of a point's column (`x[i, k]` whose lane key and
    /// indices `point` accepts: `i` the strip-mined index) and an invariant
    /// lane at the same `k` (a row of `m` taken before the loop, whose key
    /// `row` accepts), with both reads bound in the same block as `t` and
    /// used only by it: in a triangular product over `x - m` each is
    /// evaluated at every `(r, k)` where a table of the `k` differences made
    /// once per block does (`ad_runtime::LaneCols::differences`,
    /// `LaneRows::differences`). Differences already tabulated are skipped.
    fn column_differences(
        &self,
        b: &Block,
        point: &dyn Fn(&LaneKey, &[Atom]) -> bool,
        row: &dyn Fn(&LaneKey) -> bool,
        depth: usize,
        out: &mut Vec<ColumnDiff>,
    ) {
        let mut reads: FastMap<Var, (Var, &[Atom])> = FastMap::default();
        for s in &b.stmts {
            if let (
                [v],
                Expr::Array(ArrayOp::Index {
                    arr: Atom::Var(a),
                    idx,
                }),
            ) = (s.binds.as_slice(), &s.expr)
            {
                reads.insert(*v, (*a, idx));
            }
            let deeper = depth + usize::from(matches!(s.expr, Expr::Loop(_)));
            for inner in ad_core_ir::visit::blocks(&s.expr) {
                self.column_differences(inner, point, row, deeper, out);
            }
        }
        let used_once = |v: Var| {
            b.stmts.iter().filter(|s| reads_free_nl(s, v)).count() == 1
                && !b.results.contains(&Atom::Var(v))
        };
        for s in &b.stmts {
            let ([t], Expr::Prim(Prim::Sub, args)) = (s.binds.as_slice(), &s.expr) else {
                continue;
            };
            let [Atom::Var(p), Atom::Var(r)] = args.as_slice() else {
                continue;
            };
            let (Some(&(x, pi)), Some(&(m, ri))) = (reads.get(p), reads.get(r)) else {
                continue;
            };
            let same_k = pi.len() == 2 && ri.last() == pi.last();
            let f64s = [*t, *p, *r]
                .iter()
                .all(|v| *self.ty(*v) == Ty::Scalar(Scalar::F64));
            if !(same_k && f64s && used_once(*p) && used_once(*r)) || self.col_diffs.contains_key(t)
            {
                continue;
            }
            let (Some(ck), Some(lk)) = (self.lane_key(x, pi), self.lane_key(m, ri)) else {
                continue;
            };
            if !point(&ck, pi) || !row(&lk) {
                continue;
            }
            out.push(ColumnDiff {
                at: *t,
                point: *p,
                row: *r,
                cols: ck,
                lane: lk,
                k: pi[1],
                depth,
            });
        }
    }

    /// The column differences of the strip-mined loop `lam` whose lanes
    /// `keys` were just taken: a block row read through a lane of rows
    /// (`ad_runtime::LaneRows`, `x[i, k]`) minus one of those lanes at the
    /// same `k` (see [`Emitter::column_differences`]), when some are read
    /// in a loop nested in it, tabulated once per run of the loop (the
    /// forward triangular product of a build over points and components:
    /// `d` subtractions per lane instead of `d (d + 1) / 2`). Returns the scratch declarations (for
    /// `declare_scratch`), the tables (to go before the loop) and the
    /// differences registered, for [`Emitter::forget_differences`].
    pub(super) fn loop_differences(
        &mut self,
        lam: &Lambda,
        keys: &[LaneKey],
    ) -> (Code, Code, Vec<ColumnDiff>) {
        let mut diffs = vec![];
        let strip_lanes = &self.strip_lanes;
        self.column_differences(
            &lam.body,
            &|ck, _| strip_lanes.contains_key(ck),
            &|lk| keys.contains(lk),
            0,
            &mut diffs,
        );
        // Only pairs read in a nested loop (many times per run): a table
        // of differences each read once costs a store and a load more.
        let nested: Vec<(LaneKey, LaneKey)> = diffs
            .iter()
            .filter(|d| d.depth > 0)
            .map(|d| (d.cols.clone(), d.lane.clone()))
            .collect();
        diffs.retain(|d| nested.contains(&(d.cols.clone(), d.lane.clone())));
        let (bufs, tables) = self.tabulate_differences(&diffs);
        (bufs, tables, diffs)
    }

    /// One table per pair of point lanes and row lane among `diffs`
    /// (`ad_runtime::LaneCols::differences` / `LaneRows::differences`),
    /// every difference registered to be read from its table and its two
    /// reads to be skipped. Returns the tables' scratch buffers and the
    /// tables' bindings (made where the point lanes are bound).
    fn tabulate_differences(&mut self, diffs: &[ColumnDiff]) -> (Code, Code) {
        let (mut bufs, mut tabs) = (Code::new(), Code::new());
        let mut tables: Vec<(&LaneKey, &LaneKey, Ident)> = vec![];
        let rt = super::types::rt();
        for d in diffs {
            let known = tables
                .iter()
                .find(|(c, m, _)| **c == d.cols && **m == d.lane);
            let tab = match known {
                Some((_, _, t)) => t.clone(),
                None => {
                    let (buf, tab) = (self.fresh("diffs"), self.fresh("tab"));
                    let points = &self.strip_lanes[&d.cols];
                    let lane = &self.lanes[&d.lane];
                    bufs.extend(text!(let mut #buf = #rt::Scratch::<f64>::new();));
                    tabs.extend(text!(let #tab: &[f64] = #points.differences(&mut #buf, #lane);));
                    tables.push((&d.cols, &d.lane, tab.clone()));
                    tab
                }
            };
            self.col_diffs.insert(d.at, (tab, d.k));
            self.col_skip.extend([d.point, d.row]);
        }
        (bufs, tabs)
    }

    /// Forgets differences registered by [`Emitter::loop_differences`]
    /// (their loop is emitted).
    pub(super) fn forget_differences(&mut self, diffs: Vec<ColumnDiff>) {
        for d in diffs {
            self.col_diffs.remove(&d.at);
            self.col_skip.remove(&d.point);
            self.col_skip.remove(&d.row);
        }
    }

    /// The nested plan for the loop statement `s`, if the enclosing
    /// accumulation loop made one for it.
    pub fn take_nested(&mut self, s: &Stmt) -> Option<Nested> {
        match &self.nested {
            Some(n) if s.lin_binds.first() == Some(&n.at) => self.nested.take(),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::test_crate::TestCrate;
    use quote::quote;

    /// The reverse of a (point, component) build differentiated with
    /// respect to the components' rows runs components outer, the points
    /// strip-mined inside, `x` read as columns (their differences with a
    /// component's row tabulated per block), ranges of components on
    /// their own rows (`accumulate_rows`); with respect to a scalar too
    /// (every component adds into it) the components run in chunks of
    /// private accumulators; with respect to `x` too (its rows are added
    /// into by point), there is no nest (and no strip-mining: see
    /// `strip_accumulation_plan`).
    #[test]
    fn component_rows_make_a_nest_and_point_rows_do_not() {
        let krate = TestCrate::new(
            "nest",
            "#[differentiable(wrt(c))] fn comps(c: &Array2<f64>, x: &Array2<f64>) -> f64 { 0.0 }\n\
             #[differentiable(wrt(c, s))] fn scaled(c: &Array2<f64>, x: &Array2<f64>, s: f64) -> f64 { 0.0 }\n\
             #[differentiable] fn both(c: &Array2<f64>, x: &Array2<f64>) -> f64 { 0.0 }",
        );
        let body = quote! {
            let e = Array2::from_shape_fn((x.nrows(), c.nrows()), |(i, j)| {
                let mut s = 0.0;
                for r in 0..x.ncols() {
                    let t = x[[i, r]] - c[[j, r]];
                    s += t * t;
                }
                s.sqrt()
            });
            e.sum()
        };
        let comps = krate.expand_idents_with(
            quote!(wrt(c)),
            quote!(fn comps(c: &Array2<f64>, x: &Array2<f64>) -> f64 { #body }),
        );
        // `x[[i, r]] - c[[j, r]]` is read from a table made once per block.
        for want in [
            "accumulate_rows",
            "rows_copy",
            "wrapping_sub",
            "Columns",
            "lanes_sum",
            "differences",
            "lanes_at",
        ] {
            assert!(comps.iter().any(|t| t == want), "{want}: {comps:?}");
        }
        assert!(!comps.iter().any(|t| t == "accumulate_chunked_by"));
        let scaled_body = quote! {
            let e = Array2::from_shape_fn((x.nrows(), c.nrows()), |(i, j)| {
                let mut t = 0.0;
                for r in 0..x.ncols() {
                    let u = x[[i, r]] - c[[j, r]];
                    t += u * u;
                }
                (s * t).sqrt()
            });
            e.sum()
        };
        let scaled = krate.expand_idents_with(
            quote!(wrt(c, s)),
            quote!(fn scaled(c: &Array2<f64>, x: &Array2<f64>, s: f64) -> f64 { #scaled_body }),
        );
        for want in ["accumulate_chunked_by", "Columns", "lanes_sum"] {
            assert!(scaled.iter().any(|t| t == want), "{want}: {scaled:?}");
        }
        assert!(!scaled.iter().any(|t| t == "accumulate_rows"));
        // With respect to `x` too: no nest, and no strip-mined reverse (its
        // updates of `x̄[i, r]` are lane by lane and no loop carries a
        // chain: the scalar reverse adds rows).
        let both =
            krate.expand_idents(quote!(fn both(c: &Array2<f64>, x: &Array2<f64>) -> f64 { #body }));
        assert!(
            !both
                .iter()
                .any(|t| t == "accumulate_chunked_by" || t == "Columns" || t == "lanes_sum"),
            "{both:?}"
        );
    }
}
