//! Activity analysis: which variables of a block get a (non-zero) tangent
//! from JVP, computed without differentiating anything.
//!
//! The rules mirror those of [`super::Jvp`] exactly (a variable is active iff
//! JVP gives it a tangent variable), so the loop state found here is the one
//! the former fixpoint of speculative differentiation found. Loop state is a
//! fixpoint of this cheap analysis over the body; activity only grows and
//! every variable is bound once, so a nested loop's analysis starts from what
//! its enclosing fixpoint already knows and the whole analysis visits each
//! loop body at most (number of state variables + 1) times per visit of its
//! parent that changed something: polynomial in depth, not exponential.

use super::scalar::has_rule;
use crate::build::FuncBuilder;
use crate::fast_hash::{FastMap, FastSet};
use crate::ir::*;

/// The analysis state: variables known to have a tangent, on top of the
/// tangents JVP has already produced (`base`).
pub(super) struct Activity<'a, 'p> {
    b: &'a FuncBuilder<'p>,
    base: &'a FastMap<Var, Var>,
    on: FastSet<Var>,
    off: FastSet<Var>,
}

impl<'a, 'p> Activity<'a, 'p> {
    pub(super) fn new(b: &'a FuncBuilder<'p>, base: &'a FastMap<Var, Var>) -> Self {
        Activity {
            b,
            base,
            on: FastSet::default(),
            off: FastSet::default(),
        }
    }

    fn var_on(&self, v: Var) -> bool {
        !self.off.contains(&v) && (self.on.contains(&v) || self.base.contains_key(&v))
    }

    fn atom_on(&self, a: &Atom) -> bool {
        a.var().is_some_and(|v| self.var_on(v))
    }

    fn set(&mut self, v: Var, on: bool) {
        if on {
            self.off.remove(&v);
            self.on.insert(v);
        } else {
            self.on.remove(&v);
            self.off.insert(v);
        }
    }

    fn diff(&self, v: Var) -> bool {
        self.b.ty(v).is_differentiable()
    }

    /// The active state of loop `l` (entered with the current activity):
    /// a state component is active if its initial value is, or its update
    /// in the body is for some active state.
    pub(super) fn loop_state(&mut self, l: &Loop) -> Vec<bool> {
        let k = l.init.len();
        let state = &l.body.params[1..];
        let mut active: Vec<bool> = (0..k)
            .map(|j| self.b.atom_ty(&l.init[j]).is_differentiable() && self.atom_on(&l.init[j]))
            .collect();
        loop {
            for (p, on) in state.iter().zip(&active) {
                self.set(*p, *on);
            }
            let res = self.block(&l.body.body);
            let next: Vec<bool> = (0..k).map(|j| active[j] || res[j]).collect();
            if next == active {
                return active;
            }
            active = next;
        }
    }

    /// Marks the variables a block's statements bind; returns the activity of
    /// its results.
    fn block(&mut self, blk: &Block) -> Vec<bool> {
        for s in &blk.stmts {
            self.stmt(s);
        }
        blk.results.iter().map(|a| self.atom_on(a)).collect()
    }

    fn stmt(&mut self, s: &Stmt) {
        match &s.expr {
            Expr::Atom(a) => {
                let on = self.atom_on(a);
                self.set(s.binds[0], on);
            }
            Expr::Prim(p, args) => {
                let y = s.binds[0];
                let on = self.diff(y) && has_rule(*p) && args.iter().any(|a| self.atom_on(a));
                self.set(y, on);
            }
            Expr::Array(op) => {
                let on = s.binds.len() == 1 && self.diff(s.binds[0]) && self.array_on(op);
                for v in &s.binds {
                    self.set(*v, on);
                }
            }
            Expr::Tuple(xs) => {
                let on = xs
                    .iter()
                    .any(|a| self.b.atom_ty(a).is_differentiable() && self.atom_on(a));
                self.set(s.binds[0], on);
            }
            Expr::Untuple(x) => {
                let on = self.atom_on(x);
                for v in &s.binds {
                    let d = on && self.diff(*v);
                    self.set(*v, d);
                }
            }
            Expr::Lin(_) | Expr::Fold(_) => {}
            // A trip count: an integer, never active.
            Expr::While(_) => self.set(s.binds[0], false),
            Expr::Call(c) => {
                let on = c
                    .args
                    .iter()
                    .any(|a| self.b.atom_ty(a).is_differentiable() && self.atom_on(a));
                for v in &s.binds {
                    let d = on && self.diff(*v);
                    self.set(*v, d);
                }
            }
            Expr::If(i) => {
                let t = self.block(&i.then_);
                let e = self.block(&i.else_);
                for (k, v) in s.binds.iter().enumerate() {
                    self.set(*v, t[k] || e[k]);
                }
            }
            Expr::Loop(l) => {
                let k = l.init.len();
                let active = self.loop_state(l);
                // `loop_state` leaves the body analysed for the final state.
                let res: Vec<bool> = l
                    .body
                    .body
                    .results
                    .iter()
                    .map(|a| self.atom_on(a))
                    .collect();
                for (j, v) in s.binds.iter().enumerate() {
                    let on = if j < k { active[j] } else { res[j] };
                    self.set(*v, on);
                }
            }
            Expr::Build(bd) => {
                let res = self.block(&bd.body.body);
                for (v, on) in s.binds.iter().zip(res) {
                    self.set(*v, on);
                }
            }
            Expr::Map(m) => {
                for (a, p) in m.arrs.iter().zip(&m.body.params) {
                    let on = self.atom_on(a) && self.diff(*p);
                    self.set(*p, on);
                }
                let res = self.block(&m.body.body);
                for (v, on) in s.binds.iter().zip(res) {
                    self.set(*v, on);
                }
            }
        }
    }

    fn array_on(&self, op: &ArrayOp) -> bool {
        match op {
            ArrayOp::Index { arr, .. }
            | ArrayOp::Gather { arr, .. }
            | ArrayOp::Reduce { arr, .. }
            | ArrayOp::Scan { arr, .. }
            | ArrayOp::Transpose { arr }
            | ArrayOp::Broadcast { arr, .. } => self.atom_on(arr),
            ArrayOp::Update { arr, val, .. } => self.atom_on(arr) || self.atom_on(val),
            ArrayOp::ScatterAdd { vals, .. } => self.atom_on(vals),
            ArrayOp::MatMul { a, b } => self.atom_on(a) || self.atom_on(b),
            ArrayOp::ArgReduce { .. } | ArrayOp::Shape { .. } | ArrayOp::Stride { .. } => false,
        }
    }
}
