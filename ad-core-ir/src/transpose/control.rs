//! Transposition of linear control flow: `if`, loops, builds and maps.
//!
//! A nested block may read linear variables of the enclosing scope
//! (*captured*). Their cotangent contributions made inside the block are
//! summed inside it and returned by the transposed construct; contributions
//! already collected outside (from later statements) are set aside while the
//! block is transposed and then either restored or, for loops, used as the
//! initial value of the accumulator.

use super::{Contrib, TransposeError, Transposer};
use crate::ir::*;
use crate::types::Ty;
use crate::visit::{free_vars_block, free_vars_lambda};
use std::collections::{BTreeSet, HashMap};

impl<'p> Transposer<'p> {
    /// Captured variables, one per cotangent list (copies made by `dup` share
    /// their source's list, so a construct capturing two of them accumulates
    /// once).
    fn unique_roots(&self, caps: impl IntoIterator<Item = Var>) -> Vec<Var> {
        let mut seen = BTreeSet::new();
        caps.into_iter()
            .filter(|v| seen.insert(self.root(*v)))
            .collect()
    }

    /// Removes and returns the contributions of `vs`.
    fn stash(&mut self, vs: &[Var]) -> HashMap<Var, Vec<Contrib>> {
        vs.iter()
            .filter_map(|v| self.take(*v).map(|c| (*v, c)))
            .collect()
    }

    fn restore(&mut self, saved: HashMap<Var, Vec<Contrib>>) {
        for (v, cs) in saved {
            self.put(v, cs);
        }
    }

    /// Materialised cotangents of a statement's linear results.
    fn result_cts(&mut self, s: &Stmt) -> Result<Vec<Option<Var>>, TransposeError> {
        s.lin_binds.iter().map(|y| self.materialize(*y)).collect()
    }

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
        let mut base: HashMap<Var, Var> = HashMap::new();
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

    /// After a loop body seeded with `Dense(acc[k])` for each captured `caps[k]`:
    /// the captured variables that received contributions (indices) and their
    /// updated accumulators. An accumulator with no new contribution is not
    /// loop state (its seed is removed unread).
    fn collect_accumulators(
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
    fn collect_caps(&mut self, caps: &[Var]) -> Result<(Vec<Var>, Vec<Var>), TransposeError> {
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

    /// `for idx in shape { body }` transposed as nested sequential loops whose
    /// state accumulates the cotangents of the captured variables (`cts` are
    /// the cotangents of the stacked results, read at `idx`).
    fn loop_nest(
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

    /// A linear map. Capturing no arrays: a map of the transposed body over
    /// the result cotangents (captured scalars get per-element contributions,
    /// summed). Capturing arrays: as the equivalent build.
    pub(super) fn map(&mut self, s: &Stmt, m: &Map) -> Result<(), TransposeError> {
        let cts = self.result_cts(s)?;
        if cts.iter().all(Option::is_none) {
            return Ok(());
        }
        let caps: Vec<Var> = self.unique_roots(free_vars_lambda(&m.body).lin);
        if caps.iter().any(|v| self.b.ty(*v).rank() != Some(0)) {
            return self.map_as_build(s, m, &cts, &caps);
        }
        let saved = self.stash(&caps);
        let mut lin_arrs = vec![];
        let mut lin_params = vec![];
        let mut seeds = vec![];
        for ct in &cts {
            match ct {
                Some(c) => {
                    lin_arrs.push(*c);
                    let p = self.b.fresh_lin("ct_el", Ty::F64);
                    lin_params.push(p);
                    seeds.push(Some(p));
                }
                None => seeds.push(None),
            }
        }
        self.b.open();
        self.block(&m.body.body, &seeds)?;
        let mut outs = vec![];
        for &p in &m.body.lin_params {
            outs.push(self.materialize_or_zero(p)?);
        }
        let (used, cap_outs) = self.collect_caps(&caps)?;
        outs.extend(&cap_outs);
        let body = self.b.close(vec![], outs);
        self.restore(saved);
        let (_, arrs) = self.b.emit(Expr::Map(Map {
            arrs: m.arrs.clone(),
            lin_arrs,
            body: Lambda {
                params: m.body.params.clone(),
                lin_params,
                body,
            },
        }));
        let n_in = m.lin_arrs.len();
        for (x, a) in m.lin_arrs.iter().zip(&arrs[..n_in]) {
            self.add_dense(*x, Some(*a));
        }
        for (f, a) in used.into_iter().zip(&arrs[n_in..]) {
            let sum = self.b.lin(LinOp::Sum { x: *a, axis: None });
            self.add_dense(f, Some(sum));
        }
        Ok(())
    }

    /// `map(f, xs ; dxs)` capturing arrays, transposed as
    /// `build(shape(xs), |i| f(xs[i] ; dxs[i]))`.
    fn map_as_build(
        &mut self,
        s: &Stmt,
        m: &Map,
        cts: &[Option<Var>],
        caps: &[Var],
    ) -> Result<(), TransposeError> {
        let first = match (m.arrs.first(), m.lin_arrs.first()) {
            (Some(a), _) => Ok(*a),
            (None, Some(x)) => Err(*x),
            (None, None) => return Err(self.err("internal: map over no arrays", s.src)),
        };
        let dims: Vec<Dim> = match first {
            Ok(Atom::Var(a)) => {
                let r = self.b.ty(a).rank().unwrap_or(0);
                (0..r).map(|k| Dim::Of(a, k)).collect()
            }
            Ok(_) => return Err(self.err("internal: map over a literal", s.src)),
            Err(x) => self.dims_of(x)?,
        };
        let shape: Vec<Atom> = dims.iter().map(|d| self.dim_atom(d)).collect();
        let params: Vec<Var> = shape.iter().map(|_| self.b.fresh("i", Ty::I64)).collect();
        let idx: Vec<Atom> = params.iter().map(|v| Atom::Var(*v)).collect();
        let mut stmts = vec![];
        for (a, p) in m.arrs.iter().zip(&m.body.params) {
            stmts.push(Stmt {
                binds: vec![*p],
                lin_binds: vec![],
                expr: Expr::Array(ArrayOp::Index {
                    arr: *a,
                    idx: idx.clone(),
                }),
                src: None,
            });
        }
        for (x, p) in m.lin_arrs.iter().zip(&m.body.lin_params) {
            stmts.push(Stmt {
                binds: vec![],
                lin_binds: vec![*p],
                expr: Expr::Lin(LinOp::Index {
                    x: *x,
                    idx: idx.clone(),
                }),
                src: None,
            });
        }
        stmts.extend(m.body.body.stmts.iter().cloned());
        let body = Block {
            stmts,
            results: vec![],
            lin_results: m.body.body.lin_results.clone(),
        };
        let mut all_caps: Vec<Var> = caps.to_vec();
        for x in &m.lin_arrs {
            if !all_caps.contains(x) {
                all_caps.push(*x);
            }
        }
        let all_caps = self.unique_roots(all_caps);
        self.loop_nest(&shape, &params, &body, cts, &all_caps)
    }
}
