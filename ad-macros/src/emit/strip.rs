//! Strip-mining of builds and accumulation loops: [`LANES`] consecutive
//! indices of a build's first axis (or iterations of an accumulation loop,
//! the reverse of a build or of a reducing loop) computed together, every
//! value that depends on that index held as `[T; LANES]` (scalar
//! expansion), so that the per-index dependency chains of the body's inner
//! loops (a running sum `z += l * xc`) overlap instead of running one after
//! the other, and LLVM can put the lanes in vector registers. `P` =
//! [`LANES`] = 32: the running sums are latency-bound (each step waits for
//! the last addition), so more independent lanes per block buy throughput
//! until registers run out (measured on GMM's builds and reverse nests: 32
//! lanes take 0.86-0.93 of the time of 8, 16 lanes in between, 64 no
//! better than 32).
//!
//! ```text
//! build [n, k] |i, j| {                 build_lanes([n, k], f, |(i0, j)| {
//!   loop d (0.0) |r, s| {                 let i: [i64; P] = [i0, .., i0 + P - 1];
//!     let v = index x[i, r]               let x_i = [lane2(&x, i[l]) for l];
//!     let w = mul v, v                    let mut s: [f64; P] = [0.0; P];
//!     add s, w                            for r in 0..d {
//!   }                                       let v = [x_i[l][r] for l];
//! }                                         let w = [v[l] * v[l] for l]; s = [s[l] + w[l] for l];
//!                                         }
//!                                         s })
//! ```
//!
//! **Legality** ([`Emitter::strip_plan`]). A value *varies* when it depends
//! on the build's first index. The build is strip-mined when it has one
//! scalar result, it runs at least one loop whose state varies, and every
//! statement whose inputs vary is a scalar primitive, a copy, an element
//! read of an array bound outside the body, or a counted loop whose trip
//! count does not vary, with only non-linear state and no per-iteration
//! outputs, whose body obeys the same rule. Statements that do not vary
//! (a table row taken once per `j`, a trip count, a loop over invariants)
//! are emitted as in the scalar body. Anything else that varies (a branch
//! on a varying condition, an array built per index, a call) keeps the
//! build scalar. A linear build (one linear scalar result: the tangent of a
//! build in a linear map) is strip-mined by the same rule, its linear
//! values lanes like the others; it reads its captured linear arrays
//! (tangents) by element at any index, so an invariant read (a bone's
//! transform in a loop over bones) is taken once per block.
//!
//! An accumulation loop ([`Emitter::strip_accumulation_plan`]) obeys the
//! same rule, and its linear values are varying scalars, accumulators
//! (arrays updated by `+=`, scalars by `ladd`: one update per block adds the
//! lanes' sum), reads of captured linear arrays at a varying index, or
//! invariant linear scalars (a captured cotangent) that reach an
//! accumulator only through a varying factor.
//!
//! ```text
//! loop n (; g = g0) |i| {              while i0 + P <= hi {           (chunk lo..hi)
//!   let x = index x[i, 0]                let x: [f64; P] = ..
//!   let ; d = lscale x, ct               let d: [f64; 8] = [x[l] * ct for l]
//!   let ; g1 = lupdate g[0] += d  =>     g[0] += ct * lanes_sum(x)    (factor moved out)
//!   yield ; g1                           i0 += P
//! }                                    }
//!                                      for i in i0..hi { scalar body }
//! ```
//!
//! **Exactness.** In a build each lane performs the operations of the
//! scalar body at its index, in the same order: the result is the same bits
//! as the scalar build (`ad_runtime::build_lanes`'s contract; rows past the
//! last full block run the scalar body). An accumulator receives a block's
//! lanes summed in a fixed pairwise order (`ad_runtime::lanes_sum`), and
//! `accumulate_chunked` starts every chunk at a multiple of `P`: another
//! rounding than the scalar loop's, the same for any number of threads.

use super::func::{Emitter, R};
use super::lanes::{LaneKey, Lead};
use super::scalar::prim_tokens;
use super::types::{elem_ty, flat, owned_repr, owned_ty, rt};
use crate::text::{text, Code};
use ad_core_ir::fast_hash::{FastMap, FastSet};
use ad_core_ir::ir::{ArrayOp, Atom, Block, Expr, Lambda, LinOp, Loop, Prim, Stmt, Var};
use ad_core_ir::types::{Scalar, Ty};
use ad_core_ir::visit::{free_vars_lambda, free_vars_stmt};
use proc_macro2::Ident;
use std::collections::BTreeSet;

/// Indices of the first axis computed per call of a lane closure (the
/// runtime's `LANES`).
pub const LANES: usize = 32;

/// What a strip-mined body holds as lanes: the plan of
/// [`Emitter::strip_plan`] / [`Emitter::strip_accumulation_plan`]
/// (variables by alias root).
#[derive(Default)]
pub struct Strip {
    /// Scalars (non-linear and linear) that vary with the first index:
    /// `[T; LANES]`.
    vary: BTreeSet<Var>,
    /// Varying per-iteration outputs of loops: `&[T]` holding iteration
    /// `k`'s lanes at `k * LANES..`, read by element.
    arrays: BTreeSet<Var>,
    /// Accumulators (the accumulation loop's linear state, arrays or
    /// scalars, and what updates of them bind): invariant, each update adds
    /// every lane's contribution.
    sinks: BTreeSet<Var>,
    /// Linear arrays captured by an accumulation body: read only, by
    /// element at varying indices.
    captured: BTreeSet<Var>,
    /// Invariant linear scalars of an accumulation body (captured ones, say
    /// the output's cotangent, and their copies, negations and invariant
    /// multiples): they reach an accumulator only multiplied by a varying
    /// factor, never as they are.
    ulin: BTreeSet<Var>,
    /// A loop was seen.
    loops: bool,
    /// A loop with varying scalar state (non-linear, or a linear scalar
    /// that is not an accumulator) was seen: a dependency chain per index.
    chains: bool,
    /// Some accumulator update has a varying index (it adds lane by lane).
    scattered: bool,
    /// The plan of a linear build (one linear scalar result; [`Emitter::strip_plan`]):
    /// no accumulators, so invariant linear values need no care, and its
    /// captured linear arrays may be read at any index.
    linear_build: bool,
    /// Varying linear scalars that are invariant factors times a varying
    /// base: `v = ±(s_1 · (s_2 · .. base))`. An accumulator update of `v`
    /// adds `±(s_1 · (s_2 · .. lanes_sum(base)))` (sum_l a·b_l = a·sum_l
    /// b_l, the factor moved out of the sum over the block's lanes).
    factors: FastMap<Var, Factor>,
}

/// `±(scales[0] · (scales[1] · .. base))` (see [`Strip::factors`]).
#[derive(Clone)]
struct Factor {
    scales: Vec<Atom>,
    base: Var,
    neg: bool,
}

impl Strip {
    /// Whether the linear array `root` (an alias root) is captured by the
    /// planned accumulation body and read there by element.
    pub fn captures(&self, root: Var) -> bool {
        self.captured.contains(&root)
    }

    /// Whether every accumulator update of the planned accumulation body
    /// is at an index that does not vary (one add of the lanes' sum per
    /// block, none lane by lane).
    pub fn gathers(&self) -> bool {
        !self.scattered
    }
}

impl Emitter<'_> {
    /// The plan of the build body `lam` if it may be strip-mined (module
    /// doc: legality), else `None`.
    pub fn strip_plan(&self, lam: &Lambda) -> Option<Strip> {
        if lam.params.is_empty() || !lam.lin_params.is_empty() {
            return None;
        }
        let mut st = Strip::default();
        st.vary.insert(self.uses.root(lam.params[0]));
        // A linear build (the tangent of a build, in a linear map): its
        // captured linear arrays are read by element.
        st.linear_build = !lam.body.lin_results.is_empty();
        if st.linear_build {
            for v in &free_vars_lambda(lam).lin {
                if !matches!(self.ty(*v), Ty::Array { .. }) {
                    return None;
                }
                st.captured.insert(self.uses.root(*v));
            }
        }
        if !self.vary_block(&lam.body, &mut st) || !st.loops {
            return None;
        }
        let scalar = |t: Ty| matches!(t, Ty::Scalar(Scalar::F64 | Scalar::I64));
        match (lam.body.results.as_slice(), lam.body.lin_results.as_slice()) {
            ([a], []) if scalar(self.atom_ty(a)) => Some(st),
            ([], [v]) if scalar(self.ty(*v).clone()) => Some(st),
            _ => None,
        }
    }

    /// The plan of the body `lam` of an accumulation loop (linear state
    /// only) if it may be strip-mined, else `None`: as for a build, and
    /// every linear value is a varying scalar, an accumulator (an array
    /// updated by `+=`, a scalar by `ladd`, threaded through loops,
    /// returned), a captured array read by element at a varying index, or an
    /// invariant scalar that becomes varying when scaled by a varying factor
    /// before it reaches an accumulator. So no linear contribution is
    /// invariant (which one pass per block would count once instead of
    /// `LANES` times).
    pub fn strip_accumulation_plan(&self, lam: &Lambda) -> Option<Strip> {
        if lam.params.len() != 1 || !lam.body.results.is_empty() {
            return None;
        }
        let mut st = Strip::default();
        st.vary.insert(self.uses.root(lam.params[0]));
        for p in &lam.lin_params {
            if !matches!(self.ty(*p), Ty::Array { .. } | Ty::Scalar(_)) {
                return None;
            }
            st.sinks.insert(self.uses.root(*p));
        }
        let fv = free_vars_lambda(lam);
        for v in &fv.lin {
            match self.ty(*v) {
                Ty::Scalar(_) => st.ulin.insert(self.uses.root(*v)),
                _ => st.captured.insert(self.uses.root(*v)),
            };
        }
        // Profitability: lanes overlap the dependency chains of loops with
        // varying state (a running sum per index), and add a block's lanes
        // into an accumulator at an index they share once (`lanes_sum`). A
        // body with neither chains nor only shared indices gains nothing:
        // the reverse of `s += w[i, j] * x[j]` adds `ct_i * x[j]` into row
        // `i` of `w̄`, and its scalar form is a row loop LLVM vectorises,
        // where lanes would add element by element into LANES scattered
        // rows (2.4x slower at 64 rows of 2,000).
        if !self.vary_block(&lam.body, &mut st) || !st.loops || (st.scattered && !st.chains) {
            return None;
        }
        let sinks_out = lam
            .body
            .lin_results
            .iter()
            .all(|v| st.sinks.contains(&self.uses.root(*v)));
        sinks_out.then_some(st)
    }

    /// Adds the varying binders of `b` to the plan; `false` when a statement
    /// is not one of the legal forms.
    fn vary_block(&self, b: &Block, st: &mut Strip) -> bool {
        b.stmts.iter().all(|s| self.vary_stmt(s, st))
    }

    fn vary_stmt(&self, s: &Stmt, st: &mut Strip) -> bool {
        let root = |v: &Var| self.uses.root(*v);
        let fv = free_vars_stmt(s);
        // An invariant linear scalar is copied, negated, scaled (by a varying
        // factor it becomes varying) or dropped.
        if !matches!(s.expr, Expr::Loop(_)) && fv.lin.iter().any(|v| st.ulin.contains(&root(v))) {
            let ulin = |x: &Var| st.ulin.contains(&root(x));
            match &s.expr {
                Expr::Lin(LinOp::Drop(_)) => return true,
                Expr::Lin(LinOp::Dup(x) | LinOp::Neg(x)) if ulin(x) => {
                    st.ulin.extend(s.lin_binds.iter().map(root));
                    return true;
                }
                Expr::Lin(LinOp::Scale { s: a, x }) if ulin(x) => {
                    if !self.varying_atom(a, st) {
                        st.ulin.extend(s.lin_binds.iter().map(root));
                        return true;
                    }
                }
                _ => return false,
            }
        }
        // A captured linear array is only read by element at a varying index
        // (in a linear build at any index, and copied or dropped).
        if !matches!(s.expr, Expr::Loop(_)) && fv.lin.iter().any(|v| st.captured.contains(&root(v)))
        {
            let captured = |x: &Var| st.captured.contains(&root(x));
            let ok = match &s.expr {
                Expr::Lin(LinOp::Index { x, idx }) => {
                    captured(x)
                        && self.ty(*x).rank() == Some(idx.len())
                        && (st.linear_build || idx.iter().any(|a| self.varying_atom(a, st)))
                }
                Expr::Lin(LinOp::Dup(x)) if st.linear_build && captured(x) => {
                    st.captured.extend(s.lin_binds.iter().map(root));
                    return true;
                }
                Expr::Lin(LinOp::Drop(x)) => st.linear_build && captured(x),
                _ => false,
            };
            if !ok {
                return false;
            }
        }
        if !self.varies(s, st) {
            // Invariant: emitted as in the scalar body, once per block. In
            // an accumulation body its linear values can only be zeros
            // (module doc), and it must not touch an accumulator; in a
            // linear build every lane reads them.
            return !fv.lin.iter().any(|v| st.sinks.contains(&root(v)));
        }
        let scalar = |v: &Var| matches!(self.ty(*v), Ty::Scalar(_));
        let legal = match &s.expr {
            Expr::Atom(_) | Expr::Prim(..) => true,
            Expr::Array(ArrayOp::Index {
                arr: Atom::Var(a),
                idx,
            }) => {
                let rank = self.ty(*a).rank();
                !st.vary.contains(&root(a))
                    && (rank == Some(idx.len()))
                    && (!st.arrays.contains(&root(a)) || idx.len() == 1)
            }
            Expr::Lin(LinOp::Dup(x) | LinOp::Neg(x)) => scalar(x),
            Expr::Lin(LinOp::Scale { s: a, x }) => {
                scalar(x) && matches!(self.atom_ty(a), Ty::Scalar(_))
            }
            // A scalar accumulator: `acc + v` adds every lane's `v`.
            Expr::Lin(LinOp::Add(x, y))
                if st.sinks.contains(&root(x)) != st.sinks.contains(&root(y)) =>
            {
                if !scalar(x) || !scalar(y) {
                    return false;
                }
                st.sinks.extend(s.lin_binds.iter().map(root));
                return true;
            }
            Expr::Lin(LinOp::Add(x, y)) => scalar(x) && scalar(y),
            Expr::Lin(LinOp::Drop(x)) => scalar(x),
            Expr::Lin(LinOp::Index { x, .. }) => st.captured.contains(&root(x)),
            Expr::Lin(LinOp::Update { x, idx, val, add }) => {
                if !(*add && st.sinks.contains(&root(x)) && scalar(val))
                    || self.ty(*x).rank() != Some(idx.len())
                {
                    return false;
                }
                st.scattered |= idx.iter().any(|a| self.varying_atom(a, st));
                st.sinks.extend(s.lin_binds.iter().map(root));
                return true;
            }
            Expr::Loop(l) => {
                st.loops = true;
                return self.vary_loop(l, s, st);
            }
            _ => false,
        };
        if !legal || !s.binds.iter().chain(&s.lin_binds).all(scalar) {
            return false;
        }
        st.vary.extend(s.binds.iter().chain(&s.lin_binds).map(root));
        self.record_factor(s, st);
        true
    }

    /// Records the factored form of a varying linear scalar (see
    /// [`Strip::factors`]).
    fn record_factor(&self, s: &Stmt, st: &mut Strip) {
        let root = |v: &Var| self.uses.root(*v);
        let of = |st: &Strip, x: &Var| {
            st.factors.get(&root(x)).cloned().unwrap_or(Factor {
                scales: vec![],
                base: *x,
                neg: false,
            })
        };
        match &s.expr {
            Expr::Lin(LinOp::Scale { s: a, x }) if !self.varying_atom(a, st) => {
                let mut f = of(st, x);
                f.scales.insert(0, *a);
                st.factors.insert(root(&s.lin_binds[0]), f);
            }
            Expr::Lin(LinOp::Neg(x)) => {
                let mut f = of(st, x);
                f.neg = !f.neg;
                st.factors.insert(root(&s.lin_binds[0]), f);
            }
            Expr::Lin(LinOp::Dup(x)) if st.factors.contains_key(&root(x)) => {
                let f = of(st, x);
                for b in &s.lin_binds {
                    st.factors.insert(root(b), f.clone());
                }
            }
            _ => {}
        }
    }

    /// A varying loop: counted by an invariant; its state initialised from
    /// an accumulator accumulates, its other scalar state (non-linear and
    /// linear) varies; non-linear
    /// scalar per-iteration outputs become lane arrays; a legal body.
    fn vary_loop(&self, l: &Loop, s: &Stmt, st: &mut Strip) -> bool {
        let root = |v: &Var| self.uses.root(*v);
        let lam = &l.body;
        let (k, m) = (l.init.len(), l.lin_init.len());
        let shape_ok = lam.params.len() == k + 1
            && lam.lin_params.len() == m
            && lam.body.results.len() >= k
            && lam.body.lin_results.len() == m;
        if !shape_ok || self.varying_atom(&l.n, st) {
            return false;
        }
        if !lam.params[1..]
            .iter()
            .all(|p| matches!(self.ty(*p), Ty::Scalar(_)))
        {
            return false;
        }
        st.vary.extend(lam.params[1..].iter().map(root));
        st.chains |= k > 0;
        for (p, v) in lam.lin_params.iter().zip(&l.lin_init) {
            match self.ty(*p) {
                _ if st.sinks.contains(&root(v)) => st.sinks.insert(root(p)),
                Ty::Scalar(_) => {
                    st.chains = true;
                    st.vary.insert(root(p))
                }
                _ => return false,
            };
        }
        if !self.vary_block(&lam.body, st) {
            return false;
        }
        // Results: array state comes back as accumulators, outputs are
        // scalars.
        for (p, v) in lam.lin_params.iter().zip(&lam.body.lin_results) {
            if st.sinks.contains(&root(p)) != st.sinks.contains(&root(v)) {
                return false;
            }
        }
        let outs = &lam.body.results[k..];
        if !outs
            .iter()
            .all(|a| matches!(self.atom_ty(a), Ty::Scalar(_)))
        {
            return false;
        }
        st.vary.extend(s.binds[..k].iter().map(root));
        st.arrays.extend(s.binds[k..].iter().map(root));
        for (b, p) in s.lin_binds.iter().zip(&lam.lin_params) {
            if st.sinks.contains(&root(p)) {
                st.sinks.insert(root(b));
            } else {
                st.vary.insert(root(b));
            }
        }
        true
    }

    /// Whether a statement reads a varying variable (nested bodies included).
    fn varies(&self, s: &Stmt, st: &Strip) -> bool {
        let fv = free_vars_stmt(s);
        let root = |v: &Var| self.uses.root(*v);
        fv.nl
            .iter()
            .any(|v| st.vary.contains(&root(v)) || st.arrays.contains(&root(v)))
            || fv.lin.iter().any(|v| st.vary.contains(&root(v)))
    }

    fn varying_atom(&self, a: &Atom, st: &Strip) -> bool {
        matches!(a, Atom::Var(v) if st.vary.contains(&self.uses.root(*v)))
    }

    fn varying_var(&self, v: Var, st: &Strip) -> bool {
        st.vary.contains(&self.uses.root(v))
    }

    /// An operand inside a per-lane expression (lane `__l`).
    fn lane_operand(&self, a: &Atom, st: &Strip) -> Code {
        if self.varying_atom(a, st) {
            let n = self.scalar(a);
            text!(#n[__l])
        } else {
            self.scalar(a)
        }
    }

    /// Indices inside a per-lane expression (lane `__l`), as `usize`.
    fn lane_indices(&self, idx: &[Atom], st: &Strip) -> Vec<Code> {
        idx.iter()
            .map(|a| {
                let t = self.lane_operand(a, st);
                text!((#t) as usize)
            })
            .collect()
    }

    /// An operand as a whole value: `[T; LANES]` when `lanes`, splatting an
    /// invariant one.
    fn whole(&self, a: &Atom, st: &Strip, lanes: bool) -> Code {
        let x = self.scalar(a);
        if lanes && !self.varying_atom(a, st) {
            text!([#x; #LANES])
        } else {
            x
        }
    }

    /// The type of a varying scalar variable: `[T; LANES]`.
    fn lanes_ty(&self, v: Var) -> R<Code> {
        match self.ty(v) {
            Ty::Scalar(e) => {
                let t = elem_ty(*e);
                Ok(text!([#t; #LANES]))
            }
            t => Err(format!("a strip-mined value of type {t}")),
        }
    }

    /// The Rust type a strip-mined statement binds `v` with.
    fn strip_ty(&self, v: Var, st: &Strip) -> R<Code> {
        let r = self.uses.root(v);
        if st.sinks.contains(&r) {
            Ok(owned_ty(self.ty(v)))
        } else if st.arrays.contains(&r) {
            match self.ty(v) {
                Ty::Array { elem, rank: 1 } => {
                    let t = elem_ty(*elem);
                    Ok(text!(&[#t]))
                }
                t => Err(format!("a strip-mined lane array of type {t}")),
            }
        } else {
            self.lanes_ty(v)
        }
    }

    /// The statements of a strip-mined block (varying values as lanes).
    pub fn strip_block(&mut self, b: &Block, st: &Strip) -> R<Code> {
        let mut out = Code::new();
        for s in &b.stmts {
            out.extend(self.strip_stmt(s, st)?);
        }
        Ok(out)
    }

    /// The result of a strip-mined build body: `[T; LANES]`.
    pub fn strip_result(&self, b: &Block, st: &Strip) -> R<Code> {
        match (b.results.as_slice(), b.lin_results.as_slice()) {
            ([a], []) => Ok(self.whole(a, st, true)),
            ([], [v]) => Ok(self.whole(&Atom::Var(*v), st, true)),
            _ => Err("a strip-mined build with several results".into()),
        }
    }

    /// The iterations `lo..` of the accumulation body `lam` (index binder
    /// `ib`, state `names`) in blocks of [`LANES`] strip-mined by `plan`, as
    /// far as whole blocks go below `hi`: the lane buffers of the body's
    /// loops, then `let mut s0 = lo; while s0 + LANES <= hi { .. }`, each
    /// block starting with `per_block` (which may read `s0`). The
    /// remaining iterations start at `s0`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn strip_blocks(
        &mut self,
        lam: &Lambda,
        plan: &Strip,
        names: &[Ident],
        ib: &Ident,
        s0: &Ident,
        (lo, hi): (Code, Code),
        per_block: Code,
    ) -> R<Code> {
        // Lane buffers of the body's loops go before the blocks' loop.
        self.hoist.push(Some(Code::new()));
        let body = self.strip_block(&lam.body, plan);
        let buffers = self.hoist.pop().flatten().unwrap_or_default();
        let body = body?;
        let site = self.uses.results(&lam.body);
        let results: Vec<Code> = lam
            .body
            .lin_results
            .iter()
            .map(|v| self.own_lin(*v, site))
            .collect();
        let assign = super::control::assign_all(names, &results);
        Ok(text!(
            #buffers
            let mut #s0: usize = #lo;
            while #s0 + #LANES <= #hi {
                let #ib: [i64; #LANES] = ::core::array::from_fn(|__l| (#s0 + __l) as i64);
                #per_block
                #body
                #assign
                #s0 += #LANES;
            }
        ))
    }

    fn strip_stmt(&mut self, s: &Stmt, st: &Strip) -> R<Code> {
        if s.binds.iter().any(|v| self.col_skip.contains(v)) {
            return Ok(Code::new());
        }
        if !self.varies(s, st) {
            return self.stmt(s);
        }
        let site = self.uses.stmt(s);
        let lane = |e: &Self, v: &Var| {
            let n = e.name(*v);
            text!(#n[__l])
        };
        let per_lane = |e: Code| text!(::core::array::from_fn(|__l| #e));
        let expr = match &s.expr {
            _ if self.uses.aliases_only(s) => return Ok(Code::new()),
            // A column difference read from its block's table (`nest.rs`).
            Expr::Prim(Prim::Sub, _) if self.col_diffs.contains_key(&s.binds[0]) => {
                let (tab, k) = &self.col_diffs[&s.binds[0]];
                let (rt, k) = (rt(), self.usize_of(k));
                text!(#rt::lanes_at(#tab, #k))
            }
            Expr::Atom(a) => self.whole(a, st, true),
            Expr::Prim(p, args) => {
                let x: Vec<Code> = args.iter().map(|a| self.lane_operand(a, st)).collect();
                let int = self.atom_ty(&args[0]) == Ty::Scalar(Scalar::I64);
                per_lane(prim_tokens(*p, &x, int))
            }
            Expr::Array(ArrayOp::Index {
                arr: Atom::Var(a),
                idx,
            }) if st.arrays.contains(&self.uses.root(*a)) => {
                let (n, k) = (self.name(*a), self.lane_operand(&idx[0], st));
                per_lane(text!(#n[(#k) as usize * #LANES + __l]))
            }
            Expr::Array(ArrayOp::Index {
                arr: Atom::Var(a),
                idx,
            }) => self.strip_index(*a, idx, st)?,
            Expr::Lin(LinOp::Index { x, idx }) => self.strip_index(*x, idx, st)?,
            Expr::Lin(LinOp::Dup(x)) => {
                let n = self.name(*x);
                text!((#n, #n))
            }
            Expr::Lin(LinOp::Neg(x)) => {
                let a = lane(self, x);
                per_lane(text!(-#a))
            }
            Expr::Lin(LinOp::Scale { s: f, x }) => {
                let (f, a) = (
                    self.lane_operand(f, st),
                    self.lane_operand(&Atom::Var(*x), st),
                );
                per_lane(text!(#f * #a))
            }
            Expr::Lin(LinOp::Add(x, y))
                if st.sinks.contains(&self.uses.root(*x))
                    || st.sinks.contains(&self.uses.root(*y)) =>
            {
                let (acc, v) = if st.sinks.contains(&self.uses.root(*x)) {
                    (x, y)
                } else {
                    (y, x)
                };
                let (acc, total) = (self.name(*acc), self.lane_total(*v, st));
                text!(#acc + #total)
            }
            Expr::Lin(LinOp::Add(x, y)) => {
                let (a, b) = (
                    self.lane_operand(&Atom::Var(*x), st),
                    self.lane_operand(&Atom::Var(*y), st),
                );
                per_lane(text!(#a + #b))
            }
            Expr::Lin(LinOp::Drop(x)) => {
                let n = self.name(*x);
                return Ok(text!(let _ = #n;));
            }
            Expr::Lin(LinOp::Update { x, idx, val, .. }) => {
                self.strip_update(*x, idx, *val, st, site)
            }
            Expr::Loop(l) => self.strip_loop(l, st, site)?,
            _ => return Err("a varying statement outside the strip-mining plan".into()),
        };
        let before = std::mem::take(&mut self.before);
        let vars: Vec<Var> = s.binds.iter().chain(&s.lin_binds).copied().collect();
        for v in &vars {
            let r = if st.sinks.contains(&self.uses.root(*v)) {
                owned_repr(self.ty(*v))
            } else {
                super::types::Repr::Val
            };
            self.set_repr(*v, r);
        }
        let pats: Vec<Ident> = vars.iter().map(|v| self.binder(*v)).collect();
        let tys: Vec<Code> = vars
            .iter()
            .map(|v| self.strip_ty(*v, st))
            .collect::<R<_>>()?;
        let bind = match (pats.as_slice(), tys.as_slice()) {
            ([p], [t]) => text!(let #p: #t = #expr;),
            _ => text!(let (#(#pats,)*): (#(#tys,)*) = #expr;),
        };
        Ok(text!(#before #bind))
    }

    /// `acc[idx] += val` for every lane, on the owned accumulator: one add of
    /// the lanes' pairwise sum at an invariant index, else lane by lane.
    fn strip_update(&self, x: Var, idx: &[Atom], val: Var, st: &Strip, site: usize) -> Code {
        let acc = self.own_lin(x, site);
        let v = self.name(val);
        let varying_val = self.varying_var(val, st);
        if idx.iter().any(|a| self.varying_atom(a, st)) {
            let ix = self.element_index(Some(x), self.lane_indices(idx, st));
            let vl = if varying_val {
                text!(#v[__l])
            } else {
                text!(#v)
            };
            text!({ let mut __u = #acc; for __l in 0..#LANES { __u[[#(#ix),*]] += #vl; } __u })
        } else {
            let ix = self.element_index(Some(x), idx.iter().map(|a| self.usize_of(a)).collect());
            let sum = self.lane_total(val, st);
            text!({ let mut __u = #acc; __u[[#(#ix),*]] += #sum; __u })
        }
    }

    /// The sum over the block's lanes of the linear scalar `val`, in a fixed
    /// order: `lanes_sum(val)`, with the invariant factors of a factored
    /// value applied to the sum of its base ([`Strip::factors`]), and
    /// `LANES · val` for an invariant one.
    fn lane_total(&self, val: Var, st: &Strip) -> Code {
        let rt = rt();
        let v = self.name(val);
        if let Some(f) = st.factors.get(&self.uses.root(val)) {
            let base = self.name(f.base);
            let mut e = text!(#rt::lanes_sum(#base));
            for a in f.scales.iter().rev() {
                let a = self.scalar(a);
                e = text!((#a * #e));
            }
            if f.neg {
                text!(-#e)
            } else {
                e
            }
        } else if self.varying_var(val, st) {
            text!(#rt::lanes_sum(#v))
        } else {
            text!(#LANES as f64 * #v)
        }
    }

    /// A varying element read of `a` (non-linear, or a captured linear
    /// array): through a lane taken before an enclosing loop (invariant
    /// leading indices: one slice; varying ones: one slice per lane), else
    /// an ndarray index per lane.
    fn strip_index(&self, a: Var, idx: &[Atom], st: &Strip) -> R<Code> {
        let last = idx.last().ok_or("an element read without indices")?;
        let k = self.lane_operand(last, st);
        if let Some(key) = self.lane_key(a, idx) {
            if let Some(lane) = self.lanes.get(&key) {
                return Ok(text!(::core::array::from_fn(|__l| #lane[(#k) as usize])));
            }
            if let Some(lane) = self.strip_lanes.get(&key) {
                // One column of every lane; a column that varies is read
                // lane by lane.
                if self.varying_atom(last, st) {
                    return Ok(text!(::core::array::from_fn(|__l| #lane.at((#k) as usize)[__l])));
                }
                let k = self.usize_of(last);
                return Ok(text!(#lane.at(#k)));
            }
        }
        let x = self.name(a);
        let ix = self.lane_indices(idx, st);
        Ok(text!(::core::array::from_fn(|__l| #x[[#(#ix),*]])))
    }

    /// A varying counted loop: scalar state as lane arrays, accumulators
    /// owned, per-iteration outputs into an `ad_runtime::Scratch` (a
    /// per-thread reused buffer, iteration `k`'s lanes at `k * LANES..`)
    /// declared before the enclosing sequential loop (or closure).
    fn strip_loop(&mut self, l: &Loop, st: &Strip, site: usize) -> R<Code> {
        let lam = &l.body;
        let k = l.init.len();
        let n = self.fresh("n");
        let step = self.fresh("step");
        let trip = self.scalar(&l.n);
        let mut pre = text!(let #n: usize = usize::try_from(#trip).unwrap_or(0););
        let mut names = vec![];
        for (p, a) in lam.params[1..].iter().zip(&l.init) {
            let (name, t, init) = (self.name(*p), self.lanes_ty(*p)?, self.whole(a, st, true));
            pre.extend(text!(let mut #name: #t = #init;));
            self.set_repr(*p, super::types::Repr::Val);
            names.push(name);
        }
        let mut lin_names = vec![];
        for (p, v) in lam.lin_params.iter().zip(&l.lin_init) {
            let name = self.name(*p);
            if st.sinks.contains(&self.uses.root(*p)) {
                let (t, init) = (owned_ty(self.ty(*p)), self.own_lin(*v, site));
                pre.extend(text!(let mut #name: #t = #init;));
                self.set_repr(*p, owned_repr(self.ty(*p)));
            } else {
                let (t, init) = (self.lanes_ty(*p)?, self.whole(&Atom::Var(*v), st, true));
                pre.extend(text!(let mut #name: #t = #init;));
                self.set_repr(*p, super::types::Repr::Val);
            }
            lin_names.push(name);
        }
        // Per-iteration outputs: one lane vector each.
        let mut before = Code::new();
        let mut outs = vec![];
        for a in &lam.body.results[k..] {
            let Ty::Scalar(e) = self.atom_ty(a) else {
                return Err("a strip-mined loop output that is not a scalar".into());
            };
            let (ys, t, rt) = (self.fresh("ys"), elem_ty(e), rt());
            before.extend(text!(let mut #ys = #rt::Scratch::<#t>::new();));
            pre.extend(text!(#ys.reset_for_overwrite(#n * #LANES);));
            outs.push(ys);
        }
        let skip = |key: &LaneKey| {
            st.arrays.contains(&key.0)
                || key
                    .1
                    .iter()
                    .any(|l| matches!(l, Lead::Var(v) if st.vary.contains(v)))
        };
        let (lanes, keys) = self.take_lanes_except(lam, &skip);
        pre.extend(lanes);
        let (per_lane, strip_keys) = self.take_strip_lanes(lam, st, &n);
        pre.extend(per_lane);
        // `x[i, k] - m[k]` read at many `(r, k)`: one table per run.
        let (diff_bufs, tables, diffs) = self.loop_differences(lam, &keys);
        before.extend(diff_bufs);
        pre.extend(tables);
        // Element reads that vary with the strip-mined index but not with
        // this loop's (a vertex's coordinates in a loop over bones): each
        // is LANES values (a column of a lane tile, or a gather), read
        // once before the loop instead of once per iteration. Guarded by
        // the trip count: a loop that runs zero times reads nothing, and a
        // read it never made must not fail.
        let hoisted = self.invariant_lane_reads(lam, st);
        for &(v, a, idx) in &hoisted {
            let read = self.strip_index(a, idx, st)?;
            let (x, t) = (self.binder(v), self.lanes_ty(v)?);
            pre.extend(text!(
                let #x: #t = if #n > 0 { #read } else { [::core::default::Default::default(); #LANES] };
            ));
            self.set_repr(v, super::types::Repr::Val);
            self.col_skip.insert(v);
        }
        let i = lam.params[0];
        self.set_repr(i, super::types::Repr::Val);
        let ib = self.binder(i);
        self.hoist.push(Some(Code::new()));
        let body = self.strip_block(&lam.body, st);
        let inner = self.hoist.pop().flatten().unwrap_or_default();
        for (v, _, _) in &hoisted {
            self.col_skip.remove(v);
        }
        self.forget_differences(diffs);
        let stmts = body?;
        self.drop_lanes(keys);
        self.forget_strip_lanes(strip_keys);
        let res_site = self.uses.results(&lam.body);
        let mut results: Vec<Code> = lam
            .body
            .results
            .iter()
            .map(|a| self.whole(a, st, true))
            .collect();
        for v in &lam.body.lin_results {
            results.push(if st.sinks.contains(&self.uses.root(*v)) {
                self.own_lin(*v, res_site)
            } else {
                self.whole(&Atom::Var(*v), st, true)
            });
        }
        let temps: Vec<Ident> = results.iter().map(|_| self.fresh("r")).collect();
        let assign_state = names.iter().zip(&temps[..k]).map(|(n, t)| text!(#n = #t;));
        let push = outs
            .iter()
            .zip(&temps[k..lam.body.results.len()])
            .map(|(ys, t)| text!(#ys[#step * #LANES..(#step + 1) * #LANES].copy_from_slice(&#t);));
        let assign_lin = lin_names
            .iter()
            .zip(&temps[lam.body.results.len()..])
            .map(|(n, t)| text!(#n = #t;));
        let range = if l.rev {
            text!((0..#n).rev())
        } else {
            text!(0..#n)
        };
        before.extend(inner);
        self.declare_scratch(before);
        let mut finals: Vec<Code> = names.iter().map(|n| text!(#n)).collect();
        finals.extend(outs.iter().map(|ys| text!(&#ys[..])));
        finals.extend(lin_names.iter().map(|n| text!(#n)));
        let fin = flat(&finals);
        Ok(text!({
            #pre
            for #step in #range {
                let #ib: i64 = #step as i64;
                #stmts
                let (#(#temps,)*) = (#(#results,)*);
                #(#assign_state)*
                #(#push)*
                #(#assign_lin)*
            }
            #fin
        }))
    }

    /// The element reads of the loop body `lam` (top-level statements,
    /// non-linear scalars) that vary with the strip-mined index and read
    /// nothing bound in the loop: its index, its state or an earlier
    /// statement of its body (`strip_loop` reads them before the loop), as
    /// (binder, array, indices).
    fn invariant_lane_reads<'l>(&self, lam: &'l Lambda, st: &Strip) -> Vec<(Var, Var, &'l [Atom])> {
        let mut inner: FastSet<Var> = lam.params.iter().chain(&lam.lin_params).copied().collect();
        let mut out = vec![];
        for s in &lam.body.stmts {
            let read = match (&s.expr, s.binds.as_slice()) {
                (
                    Expr::Array(ArrayOp::Index {
                        arr: Atom::Var(a),
                        idx,
                    }),
                    [y],
                ) if !st.arrays.contains(&self.uses.root(*a))
                    && self.ty(*a).rank() == Some(idx.len())
                    && !self.col_skip.contains(y) =>
                {
                    Some((*y, *a, idx.as_slice()))
                }
                _ => None,
            };
            let fv = free_vars_stmt(s);
            let invariant = fv.lin.is_empty() && fv.nl.iter().all(|v| !inner.contains(v));
            match read {
                Some(r) if invariant && self.varies(s, st) && !self.uses.aliases_only(s) => {
                    out.push(r)
                }
                _ => inner.extend(s.binds.iter().chain(&s.lin_binds).copied()),
            }
        }
        out
    }

    /// Lanes with a varying leading index, taken before the loop `lam` (of
    /// `trip` iterations) for the element reads in it whose array and
    /// leading indices are bound outside it: an `ad_runtime::LaneRows`, one
    /// row per lane, read a column of all lanes at a time.
    fn take_strip_lanes(&mut self, lam: &Lambda, st: &Strip, trip: &Ident) -> (Code, Vec<LaneKey>) {
        let mut out = Code::new();
        let mut keys = vec![];
        for r in self.lane_reads(lam) {
            let held = if r.linear {
                st.captured.contains(&r.key.0)
            } else {
                !st.arrays.contains(&r.key.0)
            };
            let varying_lead = r
                .key
                .1
                .iter()
                .any(|l| matches!(l, Lead::Var(v) if st.vary.contains(v)));
            if !held || !varying_lead || self.strip_lanes.contains_key(&r.key) {
                continue;
            }
            let (lane, a) = (self.fresh("lane"), self.var_ref(r.key.0));
            let ix = self.lane_indices(r.leads(), st);
            let rows = super::lanes::lane_rows(&r.elem, &a, &ix, &text!(#trip));
            out.extend(text!(let #lane = #rows;));
            self.strip_lanes.insert(r.key.clone(), lane);
            self.lane_row_arrays.push(r.key.0);
            keys.push(r.key);
        }
        (out, keys)
    }
}

impl Emitter<'_> {
    /// The rows of a strip-mined build `lam` of rank 2 or more that depend
    /// only on its first index (`x[i, ..]`, `i` the first index, the other
    /// leading indices bound outside): taken once per block of `LANES`
    /// rows by the block context of `ad_runtime::build_lanes_ctx` instead
    /// of once per call of the lane closure (once per other index). Returns
    /// the context's body (a tuple of `LaneRows`, `calls` the lane
    /// closure's calls per block), the lane closure's prologue binding
    /// each to its lane name, and the keys to forget once the closure is
    /// emitted; `None` when there is no such row.
    pub(super) fn block_rows(
        &mut self,
        lam: &Lambda,
        st: &Strip,
        calls: &Code,
    ) -> Option<(Code, Code, Vec<LaneKey>)> {
        let i = self.uses.root(lam.params[0]);
        let outside: BTreeSet<Var> = free_vars_lambda(lam)
            .nl
            .iter()
            .map(|v| self.uses.root(*v))
            .collect();
        let mut reads = vec![];
        super::lanes::element_reads(&lam.body, &mut reads);
        let mut keys: Vec<(LaneKey, Vec<Atom>, Scalar)> = vec![];
        for (arr, idx, linear) in reads {
            let (Some(key), Some(elem)) = (self.lane_key(arr, &idx), self.ty(arr).elem()) else {
                continue;
            };
            let leads_ok = key.1.iter().all(|l| match l {
                Lead::Var(v) => *v == i || outside.contains(v),
                Lead::Lit(_) => true,
            });
            let by_i = key.1.contains(&Lead::Var(i));
            if linear
                || !outside.contains(&key.0)
                || st.arrays.contains(&key.0)
                || !leads_ok
                || !by_i
                || keys.iter().any(|(k, _, _)| *k == key)
            {
                continue;
            }
            keys.push((key, idx[..idx.len() - 1].to_vec(), elem));
        }
        if keys.is_empty() {
            return None;
        }
        let (mut rows, mut prologue, mut taken) = (vec![], Code::new(), vec![]);
        for (k, (key, leads, elem)) in keys.into_iter().enumerate() {
            let (t, lane, a) = (elem_ty(elem), self.fresh("lane"), self.var_ref(key.0));
            let ix = self.lane_indices(&leads, st);
            rows.push(super::lanes::lane_rows(&t, &a, &ix, calls));
            let field = syn::Index::from(k);
            prologue.extend(text!(let #lane = &__ctx.#field;));
            self.strip_lanes.insert(key.clone(), lane);
            self.lane_row_arrays.push(key.0);
            taken.push(key);
        }
        Some((text!((#(#rows,)*)), prologue, taken))
    }

    /// Forgets lanes taken by [`Emitter::take_strip_lanes`] or
    /// [`Emitter::block_rows`] (their loop or closure is emitted).
    pub(super) fn forget_strip_lanes(&mut self, keys: Vec<LaneKey>) {
        for key in keys {
            self.strip_lanes.remove(&key);
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::test_crate::TestCrate;
    use quote::quote;

    /// A build with an inner loop over invariant bounds is strip-mined, and
    /// so is its reverse (lane sums into the accumulators) when its updates
    /// are at indices the lanes share (`w̄[r]`), not when some are lane by
    /// lane and no loop carries a chain (`x̄[i, r]`: the scalar reverse adds
    /// rows); a branch on a value of the index or a trip count depending on
    /// it keeps the scalar code.
    #[test]
    fn legal_bodies_are_strip_mined_and_others_not() {
        let krate = TestCrate::new(
            "strip",
            "#[differentiable(wrt(w))] fn rows(w: &Array1<f64>, x: &Array2<f64>) -> Array1<f64> { x }\n\
             #[differentiable] fn rows_all(w: &Array1<f64>, x: &Array2<f64>) -> Array1<f64> { x }\n\
             #[differentiable] fn branch(w: &Array1<f64>, x: &Array2<f64>) -> Array1<f64> { x }\n\
             #[differentiable] fn tri(x: &Array1<f64>) -> Array1<f64> { x }\n\
             #[differentiable(wrt(w))] fn sum(w: &Array1<f64>, x: &Array2<f64>) -> f64 { 0.0 }\n\
             #[differentiable(wrt(a))] fn scale(a: f64, x: &Array2<f64>) -> f64 { 0.0 }",
        );
        let rows_body = quote! {
            Array1::from_shape_fn(x.nrows(), |i| {
                let mut s = 0.0;
                for r in 0..x.ncols() {
                    s += x[[i, r]] * w[r];
                }
                s * s
            })
        };
        let rows = krate.expand_idents_with(
            quote!(wrt(w)),
            quote!(fn rows(w: &Array1<f64>, x: &Array2<f64>) -> Array1<f64> { #rows_body }),
        );
        assert!(rows.iter().any(|t| t == "build_lanes"), "{rows:?}");
        assert!(rows.iter().any(|t| t == "lanes_sum"), "{rows:?}");
        // The lanes read rows of `x`: the build runs them only where those
        // rows fit a tile, else its scalar code.
        assert!(rows.iter().any(|t| t == "lane_rows_fit"), "{rows:?}");
        let rows_all = krate.expand_idents(
            quote!(fn rows_all(w: &Array1<f64>, x: &Array2<f64>) -> Array1<f64> { #rows_body }),
        );
        assert!(rows_all.iter().any(|t| t == "build_lanes"), "{rows_all:?}");
        assert!(!rows_all.iter().any(|t| t == "lanes_sum"), "{rows_all:?}");
        let branch = krate.expand_idents(quote! {
            fn branch(w: &Array1<f64>, x: &Array2<f64>) -> Array1<f64> {
                Array1::from_shape_fn(x.nrows(), |i| {
                    let mut s = 0.0;
                    for r in 0..x.ncols() {
                        if x[[i, r]] > 0.0 { s += w[r]; }
                    }
                    s
                })
            }
        });
        assert!(
            !branch
                .iter()
                .any(|t| t == "build_lanes" || t == "lanes_sum"),
            "{branch:?}"
        );
        let tri = krate.expand_idents(quote! {
            fn tri(x: &Array1<f64>) -> Array1<f64> {
                Array1::from_shape_fn(x.len(), |i| {
                    let mut s = 0.0;
                    for q in 0..i {
                        s += x[q] * x[i];
                    }
                    s
                })
            }
        });
        assert!(
            !tri.iter().any(|t| t == "build_lanes" || t == "lanes_sum"),
            "{tri:?}"
        );
        // The reverse of a loop reducing into a scalar (its cotangent made a
        // capture by the simplifier) with an inner loop.
        let sum = krate.expand_idents_with(
            quote!(wrt(w)),
            quote! {
                fn sum(w: &Array1<f64>, x: &Array2<f64>) -> f64 {
                    let mut s = 0.0;
                    for i in 0..x.nrows() {
                        let mut t = 0.0;
                        for r in 0..x.ncols() {
                            t += x[[i, r]] * w[r];
                        }
                        s += t.tanh();
                    }
                    s
                }
            },
        );
        assert!(sum.iter().any(|t| t == "lanes_sum"), "{sum:?}");
        // Only a scalar parameter differentiated: its cotangent is a scalar
        // accumulator of the reverse.
        let scale = krate.expand_idents(quote! {
            fn scale(a: f64, x: &Array2<f64>) -> f64 {
                let mut s = 0.0;
                for i in 0..x.nrows() {
                    let mut t = 0.0;
                    for r in 0..x.ncols() {
                        t += x[[i, r]];
                    }
                    s += (a * t).tanh();
                }
                s
            }
        });
        assert!(scale.iter().any(|t| t == "lanes_sum"), "{scale:?}");
    }

    /// A two-dimensional build reading rows of its first index takes them
    /// once per block (`build_lanes_ctx`), with a table of their
    /// differences with a row where a nested loop reads them; one reading
    /// none keeps `build_lanes`.
    #[test]
    fn rows_of_the_first_index_are_taken_once_per_block() {
        let krate = TestCrate::new(
            "strip_ctx",
            "#[differentiable] fn dist(c: &Array2<f64>, x: &Array2<f64>) -> Array2<f64> { x }\n\
             #[differentiable] fn cols(c: &Array2<f64>) -> Array2<f64> { c }",
        );
        let dist = krate.expand_idents(quote! {
            fn dist(c: &Array2<f64>, x: &Array2<f64>) -> Array2<f64> {
                Array2::from_shape_fn((x.nrows(), c.nrows()), |(i, j)| {
                    let mut s = 0.0;
                    for r in 0..x.ncols() {
                        let t = x[[i, r]] - c[[j, r]];
                        s += t * t;
                    }
                    s
                })
            }
        });
        assert!(dist.iter().any(|t| t == "build_lanes_ctx"), "{dist:?}");
        // Each difference read once per run of the loop: no table of them.
        assert!(!dist.iter().any(|t| t == "differences"), "{dist:?}");
        // Read at every `(r, q)` of a triangular loop: tabulated once per
        // run of the loop over `r` (the reverse is no nest: `x` is
        // differentiated too, so every table is the forward's).
        let tri = krate.expand_idents(quote! {
            fn dist(c: &Array2<f64>, x: &Array2<f64>) -> Array2<f64> {
                Array2::from_shape_fn((x.nrows(), c.nrows()), |(i, j)| {
                    let mut s = 0.0;
                    for r in 0..x.ncols() {
                        let mut z = x[[i, r]] - c[[j, r]];
                        for q in 0..r {
                            z += 0.5 * (x[[i, q]] - c[[j, q]]);
                        }
                        s += z * z;
                    }
                    s
                })
            }
        });
        for want in ["build_lanes_ctx", "differences", "lanes_at"] {
            assert!(tri.iter().any(|t| t == want), "{want}: {tri:?}");
        }
        assert!(!tri.iter().any(|t| t == "accumulate_rows"), "{tri:?}");
        let cols = krate.expand_idents(quote! {
            fn cols(c: &Array2<f64>) -> Array2<f64> {
                Array2::from_shape_fn((c.nrows(), c.nrows()), |(i, j)| {
                    let mut s = 0.0;
                    for r in 0..c.ncols() {
                        s += c[[j, r]] * (i as f64);
                    }
                    s
                })
            }
        });
        assert!(
            cols.iter().any(|t| t == "build_lanes") && !cols.iter().any(|t| t == "build_lanes_ctx"),
            "{cols:?}"
        );
    }

    /// The build of a linear map (the tangent of a build, reading a
    /// captured tangent array at the inner loop's index) is strip-mined
    /// like the primal's: no build of `skin` is scalar but for rows of `w`
    /// too long to tile.
    #[test]
    fn linear_builds_are_strip_mined() {
        let krate = TestCrate::new(
            "strip_linear",
            "#[differentiable(wrt(t))] fn skin(t: &Array2<f64>, w: &Array2<f64>) -> Array2<f64> { w }",
        );
        let skin = krate.expand_idents(quote! {
            fn skin(t: &Array2<f64>, w: &Array2<f64>) -> Array2<f64> {
                Array2::from_shape_fn((w.nrows(), 3), |(v, r)| {
                    let mut s = 0.0;
                    for b in 0..t.nrows() {
                        s += w[[v, b]] * t[[b, r]];
                    }
                    s
                })
            }
        });
        assert!(skin.iter().any(|t| t == "build_lanes_ctx"), "{skin:?}");
        // Scalar only as the guard's other branch, for rows of `w` too long
        // to tile.
        let count = |name: &str| skin.iter().filter(|t| *t == name).count();
        assert!(
            count("build_weighted") <= count("lane_rows_fit"),
            "{skin:?}"
        );
    }
}
