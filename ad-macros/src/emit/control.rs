//! Structured control: `if`, counted loops, `build`, `map` and `fold`.
//!
//! - `If` is a Rust `if` whose branches are blocks ending in their results.
//! - An accumulation loop ([`ad_core_ir::accumulate`], the transpose of a
//!   build) runs its body as a closure over ranges of iterations through
//!   `ad_runtime::accumulate_chunked`: fixed chunks, in parallel when large;
//!   within a chunk, blocks of `LANES` (32) iterations strip-mined when legal
//!   (`strip.rs`), then the rest one by one.
//! - Another `Loop` is a `for` loop over `0..n` (or reversed) with the state in
//!   `let mut` variables named after the body's state parameters; each
//!   iteration's results are evaluated into temporaries, then assigned (so
//!   a permutation of the state is fine). Per-iteration outputs are written at
//!   index `i` of a preallocated vector (scalars) or pushed and stacked after
//!   the loop (arrays, whose size is known only once computed). A scalar
//!   output read only element by element goes to an `ad_runtime::Scratch`
//!   (a per-thread reused buffer) declared before the statement, and is
//!   bound as a view of it: a loop nested in a loop or kernel allocates
//!   nothing after its first run.
//! - A `Build` whose body may be strip-mined (`strip.rs`) calls
//!   `ad_runtime::build_lanes` with the scalar body and the lane body.
//! - `Build` and `Map` call the runtime's `build`/`map`/`zip_map`/`zip3_map`
//!   (parallel above its threshold, sequential when nested in another
//!   kernel) with the body as a closure returning all its results; several
//!   results come back as an array of tuples and are split, array results
//!   are stacked by the runtime's `stack_arrays`.
//! - `Fold` (only in the primal, before normalisation) is a `for` loop over
//!   axis 0.

use super::func::{Emitter, Out, R};
use super::types::{dim_ty, elem_ty, flat, nd, owned_repr, owned_ty, rt, tuple, Repr};
use crate::text::{text, Code};
use ad_core_ir::ir::{Atom, Build, Fold, If, Lambda, Loop, Map, Stmt, Var, While};
use ad_core_ir::types::{Scalar, Ty};
use proc_macro2::Ident;

impl Emitter<'_> {
    /// `if c { .. } else { .. }`.
    pub fn if_(&mut self, i: &If, s: &Stmt) -> R<Out> {
        let c = self.scalar(&i.cond);
        let t = self.block_expr(&i.then_)?;
        let e = self.block_expr(&i.else_)?;
        Ok(Out {
            expr: text!(if #c #t else #e),
            reprs: self.owned_reprs(s),
        })
    }

    pub(super) fn owned_reprs(&self, s: &Stmt) -> Vec<Repr> {
        s.binds
            .iter()
            .chain(&s.lin_binds)
            .map(|v| owned_repr(self.ty(*v)))
            .collect()
    }

    /// Types of a lambda's results from `from` on (non-linear) and `lin_from`
    /// on (linear): the stacked outputs.
    fn out_tys(&self, lam: &Lambda, from: usize, lin_from: usize) -> Vec<Ty> {
        lam.body.results[from..]
            .iter()
            .map(|a| self.atom_ty(a))
            .chain(
                lam.body.lin_results[lin_from..]
                    .iter()
                    .map(|v| self.ty(*v).clone()),
            )
            .collect()
    }

    /// A counted loop.
    pub fn loop_(&mut self, l: &Loop, s: &Stmt, site: usize) -> R<Out> {
        let lam = &l.body;
        let (k, m) = (l.init.len(), l.lin_init.len());
        if lam.params.len() != k + 1 || lam.lin_params.len() != m {
            return Err("a loop body's parameters do not match its state".into());
        }
        let (nr, nlr) = (lam.body.results.len(), lam.body.lin_results.len());
        if nr < k || nlr < m {
            return Err("a loop body's results do not match its state".into());
        }
        if let Some(nested) = self.take_nested(s) {
            return self.nested_accumulation(l, s, site, nested);
        }
        if self.uses.depth(site) == 0
            && ad_core_ir::accumulate::is_accumulation(l)
            && lam
                .lin_params
                .iter()
                .all(|p| self.ty(*p).elem() == Some(Scalar::F64) && self.ty(*p).rank().is_some())
        {
            return self.accumulation_loop(l, s, site);
        }
        let n = self.fresh("n");
        let step = self.fresh("step");
        let trip = self.scalar(&l.n);
        let mut pre = text!(let #n: usize = usize::try_from(#trip).unwrap_or(0););
        // State variables.
        let mut state: Vec<Var> = vec![];
        for (p, a) in lam.params[1..].iter().zip(&l.init) {
            let init = self.own(a, site);
            state.push(*p);
            self.declare_mut(*p, init, &mut pre);
        }
        for (p, v) in lam.lin_params.iter().zip(&l.lin_init) {
            let init = self.own_lin(*v, site);
            state.push(*p);
            self.declare_mut(*p, init, &mut pre);
        }
        // Stacks for the per-iteration outputs (non-linear, then linear).
        let out_tys = self.out_tys(lam, k, m);
        let stacks: Vec<Ident> = out_tys.iter().map(|_| self.fresh("ys")).collect();
        // Scalar stacks read only element by element live in a reused
        // per-thread buffer declared before the statement (no allocation
        // when the loop runs inside another loop or kernel).
        let scratch: Vec<bool> = out_tys
            .iter()
            .enumerate()
            .map(|(j, ty)| {
                j < nr - k
                    && matches!(ty, Ty::Scalar(_))
                    && self.uses.only_element_reads(s.binds[k + j])
            })
            .collect();
        let mut before = Code::new();
        for ((st, ty), scratch) in stacks.iter().zip(&out_tys).zip(&scratch) {
            let t = owned_ty(ty);
            if *scratch {
                let rt = rt();
                before.extend(text!(let mut #st = #rt::Scratch::<#t>::new();));
                pre.extend(text!(#st.reset_for_overwrite(#n);));
                continue;
            }
            pre.extend(match ty {
                // A pooled buffer: made an array after the loop, it goes
                // back to the pool once dead, for the next run of the loop.
                Ty::Scalar(_) => {
                    let rt = rt();
                    text!(let mut #st: ::std::vec::Vec<#t> = #rt::pooled_vec::<#t>(#n);)
                }
                Ty::Array { .. } => {
                    let rt = rt();
                    text!(let mut #st = #rt::ArrayStack::with_capacity(#n);)
                }
                _ => text!(let mut #st: ::std::vec::Vec<#t> = ::std::vec::Vec::with_capacity(#n);),
            });
        }
        // The body.
        let i = lam.params[0];
        self.set_repr(i, Repr::Val);
        let ib = self.binder(i);
        let (lanes, lane_keys) = self.take_lanes(lam);
        pre.extend(lanes);
        // Scratch buffers of loops in the body are declared before this
        // loop (or an enclosing one): one per call, not one per iteration.
        self.hoist.push(Some(Code::new()));
        let body = self.block_parts(&lam.body, false);
        let inner = self.hoist.pop().flatten().unwrap_or_default();
        let (stmts, results, _) = body?;
        self.drop_lanes(lane_keys);
        before.extend(inner);
        // results = [s'.., y.., ls'.., ly..]
        let (p, q) = (nr - k, nlr - m);
        let order: Vec<usize> = (0..k).chain(nr..nr + m).collect();
        let outs: Vec<usize> = (k..nr).chain(nr + m..nr + m + q).collect();
        debug_assert_eq!(outs.len(), p + q);
        let assign = if out_tys.iter().all(|t| matches!(t, Ty::Scalar(_))) {
            // Every result goes to a place: the state, or a slot of a stack.
            let places: Vec<Code> = state
                .iter()
                .map(|v| {
                    let n = self.name(*v);
                    text!(#n)
                })
                .chain(stacks.iter().map(|st| text!(#st[#step])))
                .collect();
            let rs: Vec<Code> = order
                .iter()
                .chain(&outs)
                .map(|j| results[*j].clone())
                .collect();
            assign_all(&places, &rs)
        } else {
            let temps: Vec<Ident> = results.iter().map(|_| self.fresh("r")).collect();
            let tpat: Vec<Code> = temps.iter().map(|t| text!(#t)).collect();
            let (tpat, rv) = (tuple(&tpat), tuple(&results));
            let assign_state = state.iter().zip(&order).map(|(v, j)| {
                let (n, t) = (self.name(*v), &temps[*j]);
                text!(#n = #t;)
            });
            let push = stacks.iter().zip(&outs).zip(&out_tys).map(|((st, j), ty)| {
                let t = &temps[*j];
                match ty {
                    Ty::Scalar(_) => text!(#st[#step] = #t;),
                    _ => text!(#st.push(#t);),
                }
            });
            text!(let #tpat = #rv; #(#assign_state)* #(#push)*)
        };
        let range = if l.rev {
            text!((0..#n).rev())
        } else {
            text!(0..#n)
        };
        let body = text!(
            for #step in #range {
                let #ib: i64 = #step as i64;
                #stmts
                #assign
            }
        );
        // Final values: state, then stacked outputs (non-linear before linear).
        let mut finals = vec![];
        let state_name = |e: &Self, v: &Var| {
            let n = e.name(*v);
            text!(#n)
        };
        let stacked: Vec<Code> = stacks
            .iter()
            .zip(&out_tys)
            .zip(&scratch)
            .map(|((st, ty), scratch)| match scratch {
                true => Ok(text!(#st.view())),
                false => self.finish_stack(st, ty, l.rev),
            })
            .collect::<R<_>>()?;
        finals.extend(state[..k].iter().map(|v| state_name(self, v)));
        finals.extend(stacked[..p].iter().cloned());
        finals.extend(state[k..].iter().map(|v| state_name(self, v)));
        finals.extend(stacked[p..].iter().cloned());
        let r = flat(&finals);
        let mut reprs = self.owned_reprs(s);
        for (j, scratch) in scratch.iter().enumerate() {
            if *scratch {
                reprs[k + j] = Repr::View;
            }
        }
        self.declare_scratch(before);
        Ok(Out {
            expr: text!({ #pre #body #r }),
            reprs,
        })
    }

    /// An accumulation loop ([`ad_core_ir::accumulate`]): the body becomes a
    /// closure over a range of iterations and runs through
    /// `ad_runtime::accumulate_chunked` (fixed chunks from zero accumulators,
    /// in parallel when large, added in order: the same bits for every thread
    /// count).
    fn accumulation_loop(&mut self, l: &Loop, s: &Stmt, site: usize) -> R<Out> {
        let lam = &l.body;
        let rt = rt();
        let (n, step, lo, hi) = (
            self.fresh("n"),
            self.fresh("step"),
            self.fresh("lo"),
            self.fresh("hi"),
        );
        let (init, st, a, b) = (
            self.fresh("init"),
            self.fresh("st"),
            self.fresh("a"),
            self.fresh("b"),
        );
        let trip = self.scalar(&l.n);
        let inits: Vec<Code> = l.lin_init.iter().map(|v| self.own_lin(*v, site)).collect();
        let mut unused = Code::new();
        for p in &lam.lin_params {
            self.declare_mut(*p, Code::new(), &mut unused);
        }
        let names: Vec<Ident> = lam.lin_params.iter().map(|p| self.name(*p)).collect();
        let tys: Vec<Ty> = lam.lin_params.iter().map(|p| self.ty(*p).clone()).collect();
        let owned: Vec<Code> = tys.iter().map(owned_ty).collect();
        let i = lam.params[0];
        self.set_repr(i, Repr::Val);
        let ib = self.binder(i);
        // An interchanged nest (`nest.rs`): the inner loop strip-mined in
        // every iteration, matrices read by point copied as columns first,
        // chunks of whole iterations.
        let nested = self.nested_plan(lam);
        let is_nested = nested.is_some();
        // Its iterations owning rows of every accumulator: chunks of rows
        // copied and written back, no private accumulators.
        let rows = if is_nested { self.row_plan(l) } else { None };
        // The chunking runtime call (whole iterations for a nest; blocks
        // of LANES otherwise), copies made before it, the work estimate.
        let ((chunked, unit), columns, work) = match nested {
            Some((plan, prologue, inner_work)) => {
                self.nested = Some(plan);
                (
                    (text!(accumulate_chunked_by), text!(1usize,)),
                    prologue,
                    inner_work,
                )
            }
            None => {
                let w = work_estimate(&lam.body, 8).max(1);
                (
                    (text!(accumulate_chunked), Code::new()),
                    Code::new(),
                    text!(#w),
                )
            }
        };
        let (mut views, saved) = self.local_views(lam, false);
        let (lanes, lane_keys) = self.take_lanes(lam);
        views.extend(lanes);
        let parts = self.closed_block_parts(&lam.body, false);
        let unused_plan = self.nested.take().is_some();
        let (stmts, results, _) = parts?;
        if unused_plan {
            return Err("an interchanged nest's inner loop was not emitted".into());
        }
        let assign = assign_all(&names, &results);
        // Blocks of LANES iterations strip-mined (`strip.rs`), then the
        // remaining ones one by one (ascending blocks also for a reversed
        // loop: its iterations only add into the state, in any order).
        let mut lo_scalar = text!(#lo);
        let mut lanes_loop = Code::new();
        let own_plan = if is_nested {
            None
        } else {
            self.strip_accumulation_plan(lam)
        };
        if let Some(plan) = own_plan {
            let s0 = self.fresh("s");
            let bounds = (text!(#lo), text!(#hi));
            lanes_loop = self.strip_blocks(lam, &plan, &names, &ib, &s0, bounds, Code::new())?;
            lo_scalar = text!(#s0);
        }
        self.drop_lanes(lane_keys);
        self.restore_reprs(saved);
        let range = if l.rev {
            text!((#lo_scalar..#hi).rev())
        } else {
            text!(#lo_scalar..#hi)
        };
        let fields: Vec<syn::Index> = (0..tys.len()).map(syn::Index::from).collect();
        // Private accumulators' zeros, sizes and sums (not for row ranges).
        let mut dims = Code::new();
        let mut zeros = vec![];
        let mut lens = vec![];
        let mut adds = vec![];
        let private = if rows.is_some() { &[][..] } else { &tys[..] };
        for (k, ty) in private.iter().enumerate() {
            let f = &fields[k];
            if ty.rank() == Some(0) {
                zeros.push(text!(0.0f64));
                lens.push(text!(1usize));
                adds.push(text!(#a.#f += #b.#f;));
            } else {
                let d = self.fresh("dim");
                dims.extend(text!(let #d = #init.#f.raw_dim();));
                let t = &owned[k];
                zeros.push(text!(<#t>::zeros(#d.clone())));
                lens.push(text!(#init.#f.len()));
                adds.push(text!(#a.#f += &#b.#f;));
            }
        }
        let finals: Vec<Code> = fields.iter().map(|f| text!(#st.#f)).collect();
        let r = flat(&finals);
        let offsets = rows.iter().flatten().map(|(_, c, off)| {
            let first = strided(c, &lo);
            text!(let #off: usize = #first;)
        });
        let body = text!(|__state, #lo, #hi| {
            #(#offsets)*
            #views
            let (#(mut #names,)*) = __state;
            #lanes_loop
            for #step in #range {
                let #ib: i64 = #step as i64;
                #stmts
                #assign
            }
            (#(#names,)*)
        });
        let call = match &rows {
            Some(rows) => {
                let mut takes = vec![];
                let mut puts = vec![];
                for ((axis, c, _), f) in rows.iter().zip(&fields) {
                    let (first, last) = (strided(c, &lo), strided(c, &hi));
                    takes.push(text!(#rt::rows_copy(&__s.#f, #axis, #first, #last)));
                    puts.push(text!(#rt::rows_put(&mut __s.#f, #axis, #first, &__p.#f);));
                }
                text!(#rt::accumulate_rows(
                    #n,
                    #n.saturating_mul(#work),
                    #init,
                    |__s: &(#(#owned,)*), #lo: usize, #hi: usize| (#(#takes,)*),
                    #body,
                    |__s, __p, #lo, _| { #(#puts)* },
                ))
            }
            None => text!(#rt::#chunked(
                #unit
                #n,
                __len,
                #n.saturating_mul(#work),
                #init,
                || (#(#zeros,)*),
                #body,
                |#a, #b| { #(#adds)* },
            )),
        };
        let len = (rows.is_none()).then(|| text!(let __len: usize = 0usize #(+ #lens)*;));
        let expr = text!({
            let #n: usize = usize::try_from(#trip).unwrap_or(0);
            let #init: (#(#owned,)*) = (#(#inits,)*);
            #dims
            #columns
            #len
            let #st = #call;
            #r
        });
        for v in rows.iter().flatten().map(|(_, _, off)| off) {
            self.row_shifts.retain(|_, (_, o)| o != v);
        }
        Ok(Out {
            expr,
            reprs: self.owned_reprs(s),
        })
    }

    /// Rebinds the non-linear arrays that `lam` reads from outside (all of
    /// them, or with `in_loops` those read inside its nested bodies) as local
    /// views, and the scalars as local copies, at the top of the closure
    /// emitting it: inside the closure they
    /// are then locals whose data pointer and strides stay in registers,
    /// instead of being reloaded through the closure's captures after every
    /// store of a hot loop. Returns the rebinding and the representations to
    /// restore with [`Emitter::restore_reprs`] once the body is emitted.
    fn local_views(&mut self, lam: &Lambda, in_loops: bool) -> (Code, Vec<(Var, Repr)>) {
        let mut free = std::collections::BTreeSet::new();
        if in_loops {
            nested_free(&lam.body, &mut free);
        } else {
            free = ad_core_ir::visit::free_vars_lambda(lam).nl;
        }
        let inner: std::collections::BTreeSet<Var> = lam.params.iter().copied().collect();
        let mut out = Code::new();
        let mut saved: Vec<(Var, Repr)> = vec![];
        let mut scalars = std::collections::BTreeSet::new();
        for v in free {
            let root = self.uses.root(v);
            // A scalar read in the hot loop: a local copy (not a load
            // through the closure's captures after every store).
            if !inner.contains(&v)
                && matches!(self.ty(root), Ty::Scalar(_))
                && self.repr(root) == Repr::Val
                && scalars.insert(root)
            {
                let n = self.name(root);
                out.extend(text!(let #n = #n;));
                continue;
            }
            if inner.contains(&v)
                || saved.iter().any(|(r, _)| *r == root)
                || self.ty(root).rank().is_none_or(|r| r == 0)
            {
                continue;
            }
            let repr = self.repr(root);
            if repr == Repr::Val {
                continue;
            }
            let n = self.name(root);
            out.extend(text!(let #n = #n.view();));
            saved.push((root, repr));
            self.set_repr(root, Repr::View);
        }
        (out, saved)
    }

    /// Restores representations changed by [`Emitter::local_views`].
    fn restore_reprs(&mut self, saved: Vec<(Var, Repr)>) {
        for (v, r) in saved {
            self.set_repr(v, r);
        }
    }

    /// `let mut p: T = init;` for a loop-carried variable.
    pub(super) fn declare_mut(&mut self, p: Var, init: Code, out: &mut Code) {
        let ty = self.ty(p).clone();
        self.set_repr(p, owned_repr(&ty));
        let (n, t) = (self.name(p), owned_ty(&ty));
        out.extend(text!(let mut #n: #t = #init;));
    }

    /// The stacked array of a loop output collected in `st` (a vector of
    /// scalars indexed by iteration, an `ad_runtime::ArrayStack` of arrays in
    /// execution order).
    fn finish_stack(&mut self, st: &Ident, ty: &Ty, rev: bool) -> R<Code> {
        let nd = nd();
        Ok(match ty {
            Ty::Scalar(_) => text!(#nd::Array1::from_vec(#st)),
            // `ArrayStack`: each iteration's array copied as it comes.
            Ty::Array { .. } => text!(#st.finish(#rev)),
            Ty::Tuple(_) | Ty::Opaque(_) => return Err(format!("a loop output of type {ty}")),
        })
    }

    /// Splits the output `b` of a build/map kernel whose elements are the
    /// body's results (`flat`) into one stacked array per result.
    fn unstack(&mut self, b: &Ident, lead_rank: usize, tys: &[Ty]) -> R<Vec<Code>> {
        let nd = nd();
        let one = tys.len() == 1;
        let mut out = vec![];
        for (k, ty) in tys.iter().enumerate() {
            let field = syn::Index::from(k);
            let get = if one { text!(__t) } else { text!(__t.#field) };
            out.push(match ty {
                Ty::Scalar(_) if one => text!(#b),
                Ty::Scalar(_) => text!(#b.map(|__t| #get)),
                Ty::Array { rank, .. } => {
                    let rt = rt();
                    let d = dim_ty(lead_rank + rank);
                    text!(#rt::stack_arrays(#b.shape(), #rank, #b.iter().map(|__t| #get.view().into_dyn()).collect())
                        .into_dimensionality::<#d>().expect("linad: rank"))
                }
                Ty::Tuple(_) | Ty::Opaque(_) => return Err(format!("a stacked {ty}")),
            });
        }
        let _ = nd;
        Ok(out)
    }

    /// `build(shape, |i..| body)`.
    pub fn build(&mut self, b: &Build, s: &Stmt) -> R<Out> {
        let lam = &b.body;
        let r = b.shape.len();
        if lam.params.len() != r || r == 0 || !lam.lin_params.is_empty() {
            return Err("a build body's parameters do not match its shape".into());
        }
        let rt = rt();
        let sizes: Vec<_> = b.shape.iter().map(|a| self.usize_of(a)).collect();
        let ixs: Vec<Ident> = (0..r).map(|_| self.fresh("i")).collect();
        let closure_param = if r == 1 {
            let i = &ixs[0];
            text!(#i: usize)
        } else {
            let us = ixs.iter().map(|_| text!(usize));
            text!((#(#ixs),*): (#(#us),*))
        };
        let mut binds = vec![];
        for p in &lam.params {
            self.set_repr(*p, Repr::Val);
            binds.push(self.binder(*p));
        }
        let casts = ixs.iter().map(|i| text!(#i as i64));
        let ity = lam.params.iter().map(|_| text!(i64));
        let (views, saved) = self.local_views(lam, true);
        let bind = text!(#views let (#(#binds,)*): (#(#ity,)*) = (#(#casts,)*););
        let tys = self.out_tys(lam, 0, 0);
        let work = work_estimate(&lam.body, 4).max(1);
        let rows = array_elements(&tys).filter(|_| lam.body.lin_results.is_empty());
        if let Some(elem) = rows {
            let e = self.build_rows(lam, &tys, elem, &sizes, &closure_param, &bind, work);
            self.restore_reprs(saved);
            return Ok(Out {
                expr: e?,
                reprs: self.owned_reprs(s),
            });
        }
        let (stmts, results, _) = self.closed_block_parts(&lam.body, false)?;
        self.restore_reprs(saved);
        let res = flat(&results);
        if let Some(e) = self.one_pass(
            &tys,
            r,
            text!([#(#sizes),*]),
            &[],
            0,
            text!(|#closure_param| { #bind #stmts #res }),
            work,
        ) {
            return Ok(Out {
                expr: e,
                reprs: self.owned_reprs(s),
            });
        }
        let out = self.fresh("b");
        let parts = self.unstack(&out, r, &tys)?;
        let fin = flat(&parts);
        let scalar = text!(|#closure_param| { #bind #stmts #res });
        let call = match self.strip_plan(lam) {
            Some(vs) => {
                // Rows read by the first index only: once per block.
                let rest = &sizes[1..];
                let calls = text!(1usize #(* #rest)*);
                let mark = self.lane_row_arrays.len();
                let per_block = if r >= 2 {
                    self.block_rows(lam, &vs, &calls)
                } else {
                    None
                };
                let (param, prologue) = match &per_block {
                    Some((_, prologue, _)) => (text!(__ctx, #closure_param), prologue.clone()),
                    None => (closure_param.clone(), Code::new()),
                };
                let lanes = self.strip_closure(lam, &vs, &param, &ixs, prologue);
                let fits = self.lane_rows_fit(lam, mark);
                let f = self.fresh("f");
                let strip = match per_block {
                    Some((rows, _, keys)) => {
                        self.forget_strip_lanes(keys);
                        let (lanes, ib, i0) = (lanes?, self.binder(lam.params[0]), &ixs[0]);
                        let p = super::strip::LANES;
                        let ctx = text!(|#i0: usize| {
                            let #ib: [i64; #p] = ::core::array::from_fn(|__l| (#i0 + __l) as i64);
                            #rows
                        });
                        text!(#rt::build_lanes_ctx([#(#sizes),*], #work, &#f, #ctx, #lanes))
                    }
                    None => {
                        let lanes = lanes?;
                        text!(#rt::build_lanes([#(#sizes),*], #work, &#f, #lanes))
                    }
                };
                match fits {
                    None => text!({ let #f = #scalar; #strip }),
                    Some(fits) => text!({
                        let #f = #scalar;
                        if #fits {
                            #strip
                        } else {
                            #rt::build_weighted([#(#sizes),*], #work, &#f)
                        }
                    }),
                }
            }
            None => text!(#rt::build_weighted([#(#sizes),*], #work, #scalar)),
        };
        Ok(Out {
            expr: text!({
                let #out = #call;
                #fin
            }),
            reprs: self.owned_reprs(s),
        })
    }

    /// A build whose elements hold arrays as well as scalars (a stored
    /// fixed-shape residual: a log-sum-exp's exponentials per point):
    /// `ad_runtime::build_rows`, the body putting each array result into
    /// the sink (copied into its row of an output allocated once) and
    /// returning its scalar results; the outputs in the body's result order.
    #[allow(clippy::too_many_arguments)]
    fn build_rows(
        &mut self,
        lam: &Lambda,
        tys: &[Ty],
        elem: Scalar,
        sizes: &[Code],
        closure_param: &Code,
        bind: &Code,
        work: usize,
    ) -> R<Code> {
        let (rt, nd) = (rt(), nd());
        let stmts = self.closed_stmts(&lam.body)?;
        let site = self.uses.results(&lam.body);
        let (sink, scal, arrs) = (self.fresh("sink"), self.fresh("b"), self.fresh("arrs"));
        let mut puts = Code::new();
        let mut scalars = vec![];
        let mut ranks = vec![];
        let mut copied = vec![];
        for a in &lam.body.results {
            match self.atom_ty(a) {
                Ty::Array { rank, .. } => {
                    let k = ranks.len();
                    let r = self.by_ref(a);
                    puts.extend(text!(#sink.put(#k, #r);));
                    ranks.push(rank);
                    copied.extend(a.var().filter(|v| self.releasable(*v, site)));
                }
                _ => scalars.push(self.own(a, site)),
            }
        }
        // The sink copies each array result into its row of the output: a
        // temporary of the body goes back to the pool, for the next
        // element's body to take again.
        copied.sort();
        copied.dedup();
        for v in copied {
            let n = self.name(v);
            puts.extend(text!(#rt::recycle(#n);));
        }
        let res = flat(&scalars);
        let e = elem_ty(elem);
        let lead = sizes.len();
        let mut parts = vec![];
        let mut nk = 0;
        for ty in tys {
            parts.push(match ty {
                Ty::Array { rank, .. } => {
                    let d = dim_ty(lead + rank);
                    text!(#arrs.next().expect("linad: array result").into_dimensionality::<#d>().expect("linad: rank"))
                }
                _ => {
                    let f = syn::Index::from(nk);
                    nk += 1;
                    if scalars.len() == 1 {
                        text!(#scal)
                    } else {
                        text!(#scal.map(|__t| __t.#f))
                    }
                }
            });
        }
        let fin = flat(&parts);
        Ok(text!({
            let (#scal, #arrs): (#nd::Array<_, _>, Vec<#nd::ArrayD<#e>>) = #rt::build_rows(
                [#(#sizes),*],
                #work,
                &[#(#ranks),*],
                |#closure_param, #sink: &mut #rt::RowSink<'_, #e>| { #bind #stmts #puts #res },
            );
            let mut #arrs = #arrs.into_iter();
            #fin
        }))
    }

    /// The lane closure of a strip-mined build (`strip.rs`): the same
    /// parameters as the scalar closure, the first index being the first of
    /// [`super::strip::LANES`]; returns `[T; LANES]`.
    fn strip_closure(
        &mut self,
        lam: &Lambda,
        vs: &super::strip::Strip,
        closure_param: &Code,
        ixs: &[Ident],
        prologue: Code,
    ) -> R<Code> {
        let lanes = super::strip::LANES;
        let mut binds = vec![];
        for (k, p) in lam.params.iter().enumerate() {
            let (b, i) = (self.binder(*p), &ixs[k]);
            binds.push(if k == 0 {
                text!(let #b: [i64; #lanes] = ::core::array::from_fn(|__l| (#i + __l) as i64);)
            } else {
                text!(let #b: i64 = #i as i64;)
            });
        }
        let (views, saved) = self.local_views(lam, true);
        self.hoist.push(None);
        let stmts = self.strip_block(&lam.body, vs);
        self.hoist.pop();
        self.restore_reprs(saved);
        let stmts = stmts?;
        let res = self.strip_result(&lam.body, vs)?;
        Ok(text!(|#closure_param| { #views #prologue #(#binds)* #stmts #res }))
    }

    /// The condition under which the strip-mined build `lam` runs its lane
    /// closure, the arrays it reads as `LaneRows` being those recorded
    /// since `mark` (which it takes): every such array free in the build
    /// has rows a tile holds (`ad_runtime::lane_rows_fit`). Longer rows are
    /// read in place, 32 loads from 32 rows for every column, which costs
    /// more than the scalar code's one dependency chain per row (a 2,000-
    /// column matrix-vector build's linear map: 210 us strip-mined, 70 us
    /// scalar). `None` when no free array is read so.
    fn lane_rows_fit(&mut self, lam: &Lambda, mark: usize) -> Option<Code> {
        let free: std::collections::BTreeSet<Var> = ad_core_ir::visit::free_vars_lambda(lam)
            .nl
            .iter()
            .map(|v| self.uses.root(*v))
            .collect();
        let mut arrays: Vec<Var> = self.lane_row_arrays.drain(mark..).collect();
        arrays.retain(|a| free.contains(a));
        arrays.sort();
        arrays.dedup();
        if arrays.is_empty() {
            return None;
        }
        let rt = rt();
        let fits = arrays.iter().map(|a| {
            let a = self.var_ref(*a);
            text!(#rt::lane_rows_fit(#a))
        });
        Some(text!(#(#fits)&&*))
    }

    /// Several scalar results of a build (no inputs) or a map (inputs
    /// `inputs`, by reference) in one pass writing every output in place.
    /// A map calls the runtime's `multi_map_K_M` (K outputs, M inputs:
    /// outputs stored as ndarray stores elementwise results, broadcast
    /// inputs read in blocks of slices); a build runs a `Zip` over its
    /// indexed outputs by `zip_passN` (N producers). Either runs in parallel
    /// when the elements times the body's estimated work reach the
    /// runtime's threshold, unless already inside a parallel kernel. `None`
    /// when not applicable (one result, an array result, or more than
    /// ndarray's six `Zip` producers).
    #[allow(clippy::too_many_arguments)]
    fn one_pass(
        &mut self,
        tys: &[Ty],
        rank: usize,
        shape: Code,
        inputs: &[Code],
        order_from: usize,
        body: Code,
        work_per_elem: usize,
    ) -> Option<Code> {
        let scalars: Option<Vec<Scalar>> = tys
            .iter()
            .map(|t| match t {
                Ty::Scalar(e) => Some(*e),
                _ => None,
            })
            .collect();
        let elems = scalars?;
        let build = inputs.is_empty();
        if elems.len() < 2 || elems.len() + inputs.len() + usize::from(build) > 6 {
            return None;
        }
        let (nd, rt) = (nd(), rt());
        let f = self.fresh("body");
        if !build {
            let pass = quote::format_ident!("multi_map_{}_{}", elems.len(), inputs.len());
            return Some(text!({
                let #f = #body;
                #rt::#pass(#(#inputs,)* #order_from, #work_per_elem, #f)
            }));
        }
        let sh = self.fresh("sh");
        let par = self.fresh("par");
        let outs: Vec<Ident> = elems.iter().map(|_| self.fresh("o")).collect();
        let rs: Vec<Ident> = elems.iter().map(|_| self.fresh("r")).collect();
        let d = dim_ty(rank);
        // Every element is written by the pass: no fill first.
        let allocs = outs.iter().zip(&elems).map(|(o, e)| {
            let t = elem_ty(*e);
            text!(let mut #o: #nd::Array<#t, #d> = #rt::pooled_for_overwrite(#sh.clone());)
        });
        let ix = self.fresh("ix");
        let (o0, rest) = (&outs[0], &outs[1..]);
        let zip = text!(#nd::Zip::indexed(&mut #o0)#(.and(&mut #rest))*);
        let rpat = tuple(&rs.iter().map(|r| text!(#r)).collect::<Vec<_>>());
        let shim = text!(|#ix, #(#outs),*| { let #rpat = #f(#ix); #(*#outs = #rs;)* });
        let fin = flat(&outs.iter().map(|o| text!(#o)).collect::<Vec<_>>());
        let pass = quote::format_ident!("zip_pass{}", outs.len() + 1);
        Some(text!({
            let #f = #body;
            let #sh = #shape;
            #(#allocs)*
            let #par = #rt::go_parallel(#o0.len().saturating_mul(#work_per_elem));
            #rt::#pass(#zip, #par, #shim);
            #fin
        }))
    }

    /// `map(|x..| body, arrays)`.
    pub fn map(&mut self, m: &Map, s: &Stmt) -> R<Out> {
        let lam = &m.body;
        if lam.params.len() != m.arrs.len() || lam.lin_params.len() != m.lin_arrs.len() {
            return Err("a map body's parameters do not match its arrays".into());
        }
        let rt = rt();
        let mut arrs = vec![];
        let mut elems = vec![];
        let mut rank = 0;
        for a in &m.arrs {
            let (e, r) = self.array_of(a)?;
            arrs.push(self.by_ref(a));
            elems.push(e);
            rank = r;
        }
        for v in &m.lin_arrs {
            let (e, r) = self.array_of(&ad_core_ir::ir::Atom::Var(*v))?;
            arrs.push(self.var_ref(*v));
            elems.push(e);
            rank = r;
        }
        if arrs.is_empty() {
            return Err("a map over no arrays".into());
        }
        let params: Vec<Var> = lam.params.iter().chain(&lam.lin_params).copied().collect();
        let mut pats = vec![];
        for (p, e) in params.iter().zip(&elems) {
            self.set_repr(*p, Repr::Val);
            let (b, t) = (self.binder(*p), elem_ty(*e));
            pats.push(text!(#b: #t));
        }
        let (stmts, results, _) = self.closed_block_parts(&lam.body, false)?;
        let res = flat(&results);
        let tys = self.out_tys(lam, 0, 0);
        let a0 = arrs[0].clone();
        // A forward-mode map (a primal beside its tangent) stores its
        // results as the primal operands alone make ndarray store the
        // user's elementwise result: the tangents' layouts do not vote.
        let order_from = if s.binds.is_empty() { 0 } else { m.arrs.len() };
        if let Some(e) = self.one_pass(
            &tys,
            rank,
            text!((#a0).raw_dim()),
            &arrs,
            order_from,
            text!(|#(#pats),*| { #stmts #res }),
            work_estimate(&lam.body, 4).max(1),
        ) {
            return Ok(Out {
                expr: e,
                reprs: self.owned_reprs(s),
            });
        }
        let out = self.fresh("b");
        let parts = self.unstack(&out, rank, &tys)?;
        let fin = flat(&parts);
        let kernel = match arrs.len() {
            1 => {
                let (a, p) = (&arrs[0], &pats[0]);
                text!(#rt::map(#a, |#p| { #stmts #res }))
            }
            2 => {
                let (a, b) = (&arrs[0], &arrs[1]);
                let (p, q) = (&pats[0], &pats[1]);
                text!(#rt::zip_map(#a, #b, |#p, #q| { #stmts #res }))
            }
            3 => {
                let (a, b, c) = (&arrs[0], &arrs[1], &arrs[2]);
                let (p, q, r) = (&pats[0], &pats[1], &pats[2]);
                text!(#rt::zip3_map(#a, #b, #c, |#p, #q, #r| { #stmts #res }))
            }
            _ => {
                let a0 = &arrs[0];
                let checks = arrs[1..].iter().map(|a| {
                    text!(assert_eq!((#a0).shape(), (#a).shape(), "linad: map over arrays of different shapes");)
                });
                let ix = self.fresh("ix");
                let fetch = params.iter().zip(&arrs).zip(&elems).map(|((p, a), e)| {
                    let (b, t) = (self.binder(*p), elem_ty(*e));
                    text!(let #b: #t = (#a)[#ix];)
                });
                // Stored as ndarray would store the same elementwise
                // operation's result (see `one_pass`).
                let voting = if order_from == 0 {
                    arrs.len()
                } else {
                    order_from
                };
                let lays = arrs[..voting].iter().map(|x| text!(#rt::layout_of(&(#x))));
                text!({
                    #(#checks)*
                    let __order = #rt::result_order(&[#(#lays),*]);
                    #rt::stored_in(
                        #rt::build((#a0).raw_dim(), |#ix| { #(#fetch)* #stmts #res }),
                        &__order,
                    )
                })
            }
        };
        Ok(Out {
            expr: text!({ let #out = #kernel; #fin }),
            reprs: self.owned_reprs(s),
        })
    }

    /// `lsum(map(|x..| body, arrays), axis=0)` over matrices as one pass
    /// (`ad_runtime::map_sum_rows1/2/3`): the map's `n x d` result is never
    /// made. `None` (nothing emitted) unless the map reads one to three
    /// `f64` matrices.
    pub fn map_sum_rows(&mut self, m: &Map) -> R<Option<Code>> {
        let lam = &m.body;
        let n = m.arrs.len() + m.lin_arrs.len();
        if !(1..=3).contains(&n)
            || lam.params.len() != m.arrs.len()
            || lam.lin_params.len() != m.lin_arrs.len()
        {
            return Ok(None);
        }
        let atoms: Vec<Atom> = m
            .arrs
            .iter()
            .copied()
            .chain(m.lin_arrs.iter().map(|v| Atom::Var(*v)))
            .collect();
        for a in &atoms {
            if self.array_of(a)? != (Scalar::F64, 2) {
                return Ok(None);
            }
        }
        let arrs: Vec<Code> = m
            .arrs
            .iter()
            .map(|a| self.by_ref(a))
            .chain(m.lin_arrs.iter().map(|v| self.var_ref(*v)))
            .collect();
        let mut pats = vec![];
        for p in lam.params.iter().chain(&lam.lin_params) {
            self.set_repr(*p, Repr::Val);
            let (b, t) = (self.binder(*p), elem_ty(Scalar::F64));
            pats.push(text!(#b: #t));
        }
        let (stmts, results, _) = self.closed_block_parts(&lam.body, false)?;
        let res = flat(&results);
        let work = work_estimate(&lam.body, 4).max(1);
        let (rt, kernel) = (rt(), quote::format_ident!("map_sum_rows{}", n));
        Ok(Some(
            text!(#rt::#kernel(#(#arrs,)* #work, |#(#pats),*| { #stmts #res })),
        ))
    }

    /// `fold(init, |acc.., x| body, arr)`: a loop over axis 0.
    pub fn fold(&mut self, fd: &Fold, s: &Stmt, site: usize) -> R<Out> {
        let lam = &fd.body;
        let k = fd.init.len();
        if lam.params.len() != k + 1 || lam.body.results.len() != k {
            return Err("a fold body's parameters do not match its accumulators".into());
        }
        let nd = nd();
        let (_, rank) = self.array_of(&fd.arr)?;
        let arr = self.scalar(&fd.arr);
        let arr_var = fd.arr.var().ok_or("a fold over a literal")?;
        let mut pre = Code::new();
        for (p, a) in lam.params[..k].iter().zip(&fd.init) {
            let init = self.own(a, site);
            self.declare_mut(*p, init, &mut pre);
        }
        let x = lam.params[k];
        let row = self.fresh("k");
        let (xrepr, fetch) = if rank == 1 {
            (Repr::Val, text!(#arr[[#row]]))
        } else if self.repr(arr_var) == Repr::View {
            (Repr::View, text!(#arr.index_axis_move(#nd::Axis(0), #row)))
        } else {
            (Repr::View, text!(#arr.index_axis(#nd::Axis(0), #row)))
        };
        self.set_repr(x, xrepr);
        let xb = self.binder(x);
        let (stmts, results, _) = self.closed_block_parts(&lam.body, false)?;
        let accs: Vec<Ident> = lam.params[..k].iter().map(|p| self.name(*p)).collect();
        let assign = assign_all(&accs, &results);
        let fin: Vec<Code> = accs.iter().map(|a| text!(#a)).collect();
        let fin = flat(&fin);
        Ok(Out {
            expr: text!({
                #pre
                for #row in 0..#arr.shape()[0] {
                    let #xb = #fetch;
                    #stmts
                    #assign
                }
                #fin
            }),
            reprs: self.owned_reprs(s),
        })
    }
    /// `While`: the state lives in the body's parameters (mutable); the
    /// condition's parameters see it (arrays as views) before every
    /// iteration; the result is the trip count.
    ///
    /// ```text
    /// { let mut s = init; let mut trips: i64 = 0;
    ///   loop { let c = { let cs = s.view(); ..; cond }; if !c { break; }
    ///          ..; s = s'; trips += 1; }
    ///   trips }
    /// ```
    pub fn while_(&mut self, w: &While, s: &Stmt, site: usize) -> R<Out> {
        let k = w.init.len();
        if w.cond.params.len() != k || w.body.params.len() != k || w.body.body.results.len() != k {
            return Err("a while loop's lambdas do not match its state".into());
        }
        let [cres] = w.cond.body.results.as_slice() else {
            return Err("a while condition returns one bool".into());
        };
        let mut pre = Code::new();
        for (p, a) in w.body.params.iter().zip(&w.init) {
            let init = self.own(a, site);
            self.declare_mut(*p, init, &mut pre);
        }
        // The condition reads the state without taking it.
        let mut see = Code::new();
        for (cp, bp) in w.cond.params.iter().zip(&w.body.params) {
            let (cb, b) = (self.binder(*cp), self.name(*bp));
            let ty = self.ty(*cp).clone();
            let (e, r) = match ty {
                Ty::Scalar(_) => (text!(#b), Repr::Val),
                Ty::Array { .. } => (text!(#b.view()), Repr::View),
                Ty::Tuple(_) | Ty::Opaque(_) => (text!(#b.clone()), owned_repr(&ty)),
            };
            self.set_repr(*cp, r);
            see.extend(text!(let #cb = #e;));
        }
        let (cstmts, _, _) = self.closed_block_parts(&w.cond.body, false)?;
        let c = self.scalar(cres);
        let (stmts, results, _) = self.closed_block_parts(&w.body.body, false)?;
        let state: Vec<Ident> = w.body.params.iter().map(|p| self.name(*p)).collect();
        let assign = assign_all(&state, &results);
        let (trips, go) = (self.fresh("trips"), self.fresh("go"));
        Ok(Out {
            expr: text!({
                #pre
                let mut #trips: i64 = 0;
                loop {
                    let #go: bool = { #see #cstmts #c };
                    if !#go { break; }
                    #stmts
                    #assign
                    #trips += 1;
                }
                #trips
            }),
            reprs: self.owned_reprs(s),
        })
    }
}

/// `c · i` for the `usize` variable `i`, `i` itself for `c = 1`.
fn strided(c: &usize, i: &Ident) -> Code {
    if *c == 1 {
        text!(#i)
    } else {
        let c = proc_macro2::Literal::usize_suffixed(*c);
        text!(#c * #i)
    }
}

/// The non-linear variables read inside the lambdas nested in `b` (at any
/// depth) that are not bound in `b`.
fn nested_free(b: &ad_core_ir::ir::Block, out: &mut std::collections::BTreeSet<Var>) {
    let fv = ad_core_ir::visit::free_vars_block(b).nl;
    let mut inside = std::collections::BTreeSet::new();
    for s in &b.stmts {
        for l in ad_core_ir::visit::lambdas(&s.expr) {
            inside.extend(ad_core_ir::visit::free_vars_lambda(l).nl);
        }
        for nb in ad_core_ir::visit::blocks(&s.expr) {
            let mut deeper = std::collections::BTreeSet::new();
            nested_free(nb, &mut deeper);
            inside.extend(deeper);
        }
    }
    out.extend(inside.intersection(&fv).copied());
}

/// A static estimate of the element operations of one run of `b`: one per
/// statement, a nested body counted `per_nest` times (its trip count is
/// unknown). Builds use 4 (a build over a few thousand elements with short
/// inner loops stays sequential: waking threads would cost more than it
/// saves); accumulation loops use 8 (their chunks may then keep larger
/// private accumulators when the body nests loops).
pub(super) fn work_estimate(b: &ad_core_ir::ir::Block, per_nest: usize) -> usize {
    b.stmts
        .iter()
        .map(|s| {
            let nested: usize = ad_core_ir::visit::blocks(&s.expr)
                .map(|nb| work_estimate(nb, per_nest).saturating_mul(per_nest))
                .sum();
            1usize.saturating_add(nested)
        })
        .fold(0usize, usize::saturating_add)
}

/// `(a, b) = (x, y);` (`a = x;` for one): the state takes the body's
/// results at once (a destructuring assignment evaluates every right-hand
/// side before it assigns).
pub(super) fn assign_all<N: crate::text::ToText>(names: &[N], results: &[Code]) -> Code {
    match (names, results) {
        ([n], [r]) => text!(#n = #r;),
        _ => text!((#(#names,)*) = (#(#results,)*);),
    }
}

/// The element type shared by the array results of a build with scalar
/// and array results (`Emitter::build_rows`); `None` when no result is an
/// array, or when the arrays' element types differ, or a result is a tuple.
fn array_elements(tys: &[Ty]) -> Option<Scalar> {
    let mut elem = None;
    for t in tys {
        match t {
            Ty::Array { elem: e, .. } => match elem {
                None => elem = Some(*e),
                Some(x) if x == *e => {}
                Some(_) => return None,
            },
            Ty::Scalar(_) => {}
            Ty::Tuple(_) | Ty::Opaque(_) => return None,
        }
    }
    elem
}
