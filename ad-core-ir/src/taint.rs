//! Taint analysis: which IR variables depend on the differentiable
//! parameters (the seeds). The front end uses it to decide whether a called
//! function is differentiated; [`crate::linear_form`] to decide which values
//! of a declared-linear program are linear. Dependence flows through operands, branch results, loop
//! and fold state (to a fixpoint) and the bodies of maps and builds; only
//! variables of differentiable types (`f64`, `f64` arrays, tuples with
//! those) are tainted: an integer or a boolean computed from a
//! differentiable value (a shape, a comparison) carries no derivative.

use crate::fast_hash::FastSet;
use crate::ir::{Atom, Block, Expr, Func, Var, VarTable};
use crate::visit::{for_each_operand, free_vars_block};

/// The variables of `f` that depend on `seeds`.
pub fn tainted(f: &Func, seeds: &[Var]) -> FastSet<Var> {
    let mut t = Taint {
        set: seeds.iter().copied().collect(),
        vars: &f.vars,
    };
    // Each pass only adds variables; iterate to the fixpoint (loop state
    // that becomes tainted in a later iteration of the analysis).
    loop {
        let before = t.set.len();
        block(&f.body, &mut t);
        if t.set.len() == before {
            return t.set;
        }
    }
}

struct Taint<'f> {
    set: FastSet<Var>,
    vars: &'f VarTable,
}

impl Taint<'_> {
    fn insert(&mut self, v: Var) {
        if self.vars.ty(v).is_differentiable() {
            self.set.insert(v);
        }
    }

    fn contains(&self, v: &Var) -> bool {
        self.set.contains(v)
    }

    fn extend(&mut self, vs: impl IntoIterator<Item = Var>) {
        for v in vs {
            self.insert(v);
        }
    }
}

fn is(t: &Taint, a: &Atom) -> bool {
    matches!(a, Atom::Var(v) if t.contains(v))
}

fn block(b: &Block, t: &mut Taint) {
    for s in &b.stmts {
        let mut any = false;
        for_each_operand(&s.expr, &mut |a| any |= is(t, a), &mut |_| {});
        match &s.expr {
            Expr::If(i) => {
                block(&i.then_, t);
                block(&i.else_, t);
                for (k, v) in s.binds.iter().enumerate() {
                    if i.then_.results.get(k).is_some_and(|a| is(t, a))
                        || i.else_.results.get(k).is_some_and(|a| is(t, a))
                    {
                        t.insert(*v);
                    }
                }
            }
            Expr::Loop(l) => {
                for (p, a) in l.body.params[1..].iter().zip(&l.init) {
                    if is(t, a) {
                        t.insert(*p);
                    }
                }
                block(&l.body.body, t);
                let k = l.init.len();
                for (j, r) in l.body.body.results.iter().enumerate() {
                    if is(t, r) {
                        if j < k {
                            t.insert(l.body.params[1 + j]);
                        }
                        if let Some(v) = s.binds.get(j) {
                            t.insert(*v);
                        }
                    }
                }
                for (j, p) in l.body.params[1..].iter().enumerate() {
                    if t.contains(p) {
                        if let Some(v) = s.binds.get(j) {
                            t.insert(*v);
                        }
                    }
                }
            }
            Expr::Fold(fd) => {
                let k = fd.init.len();
                for (p, a) in fd.body.params.iter().zip(&fd.init) {
                    if is(t, a) {
                        t.insert(*p);
                    }
                }
                if is(t, &fd.arr) {
                    t.insert(fd.body.params[k]);
                }
                block(&fd.body.body, t);
                for (j, r) in fd.body.body.results.iter().enumerate() {
                    if is(t, r) {
                        t.insert(fd.body.params[j]);
                        if let Some(v) = s.binds.get(j) {
                            t.insert(*v);
                        }
                    }
                }
            }
            Expr::While(w) => {
                // State flows into both lambdas and around the body; the
                // trip count is an integer (never tainted).
                for (k, a) in w.init.iter().enumerate() {
                    if is(t, a) {
                        t.insert(w.cond.params[k]);
                        t.insert(w.body.params[k]);
                    }
                }
                block(&w.cond.body, t);
                block(&w.body.body, t);
                for (k, r) in w.body.body.results.iter().enumerate() {
                    if is(t, r) {
                        t.insert(w.cond.params[k]);
                        t.insert(w.body.params[k]);
                    }
                }
            }
            Expr::Map(m) => {
                for (p, a) in m.body.params.iter().zip(&m.arrs) {
                    if is(t, a) {
                        t.insert(*p);
                    }
                }
                block(&m.body.body, t);
                results(&m.body.body, &s.binds, t);
            }
            Expr::Build(b) => {
                block(&b.body.body, t);
                results(&b.body.body, &s.binds, t);
            }
            _ => {
                // Captured variables of nested blocks count as operands.
                for blk in crate::visit::blocks(&s.expr) {
                    any |= free_vars_block(blk).nl.iter().any(|v| t.contains(v));
                }
                if any {
                    t.extend(s.binds.iter().copied());
                }
            }
        }
    }
}

fn results(b: &Block, binds: &[Var], t: &mut Taint) {
    for (r, v) in b.results.iter().zip(binds) {
        if is(t, r) {
            t.insert(*v);
        }
    }
}
