//! The rewrite engine: one forward walk over a function applying local rules.
//!
//! A [`Rule`] looks at one statement (whose operands are already rewritten)
//! and the [`Cx`] (facts about earlier statements, the variable table) and
//! either declines (`None`) or returns the statements replacing it. A rule may
//! also record substitutions (`y := x` for the rest of the function) and
//! *kill* the producer of a linear operand it bypassed.
//!
//! # Note [Bypassing a linear producer]
//!
//! A rule that rewrites a consumer so that it no longer reads the result of a
//! linear producer (`lneg(lneg x) = x`: the outer `lneg` now reads `x`, not the
//! inner result) must delete the producer, otherwise its operands would be
//! consumed twice. Rules do this with [`Cx::kill`], allowed only when the
//! producer's result has exactly one syntactic occurrence ([`Cx::single_use`]):
//! a linear variable read in both branches of an `if` has two, and bypassing
//! it in one branch would leave the other dangling. Killed statements are
//! removed at the end of the walk. [`Cx::replace_lin`] keeps the occurrence
//! counts of linear variables up to date as uses move.

use super::facts::{count_block, counts_of, Counts, Facts, Subst};
use crate::fast_hash::FastSet;
use crate::ir::*;
use crate::types::Ty;
use crate::visit::blocks_mut;
use std::collections::BTreeMap;

/// A named local rewrite rule. `apply` must not change the context when it
/// declines.
#[derive(Clone, Copy)]
pub struct Rule {
    /// A short name (used in statistics and tests).
    pub name: &'static str,
    /// The rewrite: `Some(replacement statements)` or `None` when it does not apply.
    pub apply: fn(&Stmt, &mut Cx<'_>) -> Option<Vec<Stmt>>,
}

impl std::fmt::Debug for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

/// How many times each rule fired.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Rule name to number of rewrites.
    pub fired: BTreeMap<&'static str, usize>,
}

impl Stats {
    /// Total number of rewrites.
    pub fn total(&self) -> usize {
        self.fired.values().sum()
    }

    /// How many times a rule fired.
    pub fn get(&self, name: &str) -> usize {
        self.fired.get(name).copied().unwrap_or(0)
    }

    /// Adds another statistics record.
    pub fn merge(&mut self, o: &Stats) {
        for (k, v) in &o.fired {
            *self.fired.entry(k).or_insert(0) += v;
        }
    }
}

/// The context of a rule: facts about earlier statements, the variables, and
/// the pending substitution / kills of the walk.
pub struct Cx<'a> {
    /// The function's variables (new variables come from here).
    pub vars: &'a mut VarTable,
    /// The program (callee signatures).
    pub prog: &'a Program,
    /// What is known about variables bound earlier.
    pub facts: Facts,
    uses: Counts,
    subst: Subst,
    killed: FastSet<Var>,
    src: Option<SrcId>,
}

impl<'a> Cx<'a> {
    fn new(vars: &'a mut VarTable, prog: &'a Program, body: &Block) -> Self {
        Cx {
            vars,
            prog,
            facts: Facts::default(),
            uses: counts_of(body),
            subst: Subst::default(),
            killed: FastSet::default(),
            src: None,
        }
    }

    /// The type of a variable.
    pub fn ty(&self, v: Var) -> &Ty {
        self.vars.ty(v)
    }

    /// The type of an atom.
    pub fn atom_ty(&self, a: &Atom) -> Ty {
        crate::typing::atom_ty(a, self.vars)
    }

    /// A fresh variable.
    pub fn fresh(&mut self, name: &str, ty: Ty, linear: bool) -> Var {
        self.vars.fresh(name, ty, linear)
    }

    /// A statement carrying the source id of the statement being rewritten.
    pub fn stmt(&self, binds: Vec<Var>, lin_binds: Vec<Var>, expr: Expr) -> Stmt {
        super::facts::stmt(binds, lin_binds, expr, self.src)
    }

    /// A linear statement `let ; y = op`.
    pub fn lin_stmt(&self, y: Var, op: LinOp) -> Stmt {
        self.stmt(vec![], vec![y], Expr::Lin(op))
    }

    /// `let ; y = zero(shape)`.
    pub fn zero_stmt(&self, y: Var, shape: ShapeTree) -> Stmt {
        self.lin_stmt(y, LinOp::Zero(shape))
    }

    /// Replaces the non-linear variable `y` by `a` in the rest of the function.
    pub fn replace_nl(&mut self, y: Var, a: Atom) {
        self.subst.set_nl(y, a);
    }

    /// Replaces the linear variable `y` by `x` in the rest of the function.
    /// The caller removed one occurrence of `x` (in the rewritten statement or
    /// in a killed producer); `x` takes over the occurrences of `y`.
    pub fn replace_lin(&mut self, y: Var, x: Var) {
        let x = self.subst.lin_var(x);
        let uy = self.uses.get(y);
        let ux = self.uses.get(x);
        self.uses.set(x, ux.saturating_sub(1) + uy);
        self.uses.set(y, 0);
        self.subst.set_lin(y, x);
    }

    /// Number of syntactic occurrences of a variable (both branches of an `if`
    /// count separately; a capture by a loop/build/map body counts once).
    pub fn uses(&self, v: Var) -> usize {
        self.uses.get(v)
    }

    /// Whether `v` occurs exactly once.
    pub fn single_use(&self, v: Var) -> bool {
        self.uses(v) == 1
    }

    /// Forgets the occurrences inside a block that is being discarded. A
    /// statement killed by a bypass ([`Cx::kill`]) is still in its block
    /// until the walk ends, but its operands' occurrences went to the
    /// statement that bypassed it: they are not forgotten twice (the
    /// scalings `lscale 2.0, lscale 0.9, d` merged in a branch that
    /// `if_literal` then drops left `d` one use short, and a later bypass
    /// deleted `d` while the other branch still dropped it).
    pub fn forget_block(&mut self, b: &Block) {
        if self.killed.is_empty() {
            count_block(b, &mut self.uses, false);
            return;
        }
        let mut live = b.clone();
        let killed = &self.killed;
        super::facts::for_each_block_mut(&mut live, &mut |blk| {
            blk.stmts.retain(|s| {
                !s.binds
                    .iter()
                    .chain(&s.lin_binds)
                    .any(|v| killed.contains(v))
            })
        });
        count_block(&live, &mut self.uses, false);
    }

    /// Records that the block's occurrences now exist (moved or copied code).
    pub fn count_block(&mut self, b: &Block) {
        count_block(b, &mut self.uses, true);
    }

    /// Sets the occurrence count of a variable (for fresh variables).
    pub fn set_uses(&mut self, v: Var, n: usize) {
        self.uses.set(v, n);
    }

    /// The shape of `v` if it is a linear zero that may be bypassed
    /// (bound by `LinOp::Zero`, read once).
    pub fn zero(&self, v: Var) -> Option<ShapeTree> {
        if self.single_use(v) {
            self.facts.zero_shape(v).cloned()
        } else {
            None
        }
    }

    /// The single-result linear operation producing `v`, if it may be bypassed.
    pub fn lin_producer(&self, v: Var) -> Option<LinOp> {
        if !self.single_use(v) || self.killed.contains(&v) {
            return None;
        }
        match self.facts.def(v) {
            // Several results (or none): not a single producer.
            Some((
                Expr::Lin(LinOp::Dup(_) | LinOp::Untuple(_) | LinOp::Drop(_) | LinOp::Take { .. }),
                _,
            )) => None,
            Some((Expr::Lin(op), 0)) => Some(op.clone()),
            _ => None,
        }
    }

    /// `(x, k)` when `v` is result `k` of `dup x`, read once, and may be
    /// bypassed (killing `v` deletes the `dup`, both its results).
    pub fn dup_half(&self, v: Var) -> Option<(Var, usize)> {
        if !self.single_use(v) || self.killed.contains(&v) {
            return None;
        }
        match self.facts.def(v) {
            Some((Expr::Lin(LinOp::Dup(x)), k)) => Some((*x, k)),
            _ => None,
        }
    }

    /// Deletes the statement binding `v` at the end of the walk (see the note
    /// on bypassing linear producers).
    pub fn kill(&mut self, v: Var) {
        self.killed.insert(v);
    }

    /// The simple expression binding `v` (see [`Facts::def`]).
    pub fn def(&self, v: Var) -> Option<(&Expr, usize)> {
        self.facts.def(v)
    }

    /// The simple expression binding the atom, if it is a variable.
    pub fn def_atom(&self, a: &Atom) -> Option<(&Expr, usize)> {
        a.var().and_then(|v| self.facts.def(v))
    }
}

/// Chooses the rules to try on an expression.
pub type Picker<'r> = dyn Fn(&Expr) -> &'r [Rule] + 'r;

/// Runs one forward walk of the function with the rules `pick` returns for
/// each statement; returns which rules fired.
pub fn run(f: &mut Func, prog: &Program, pick: &Picker<'_>) -> Stats {
    let mut stats = Stats::default();
    let Func { body, vars, .. } = f;
    let mut cx = Cx::new(vars, prog, body);
    walk_block(&mut cx, body, pick, &mut stats);
    let killed = std::mem::take(&mut cx.killed);
    let subst = std::mem::take(&mut cx.subst);
    if !killed.is_empty() {
        super::facts::for_each_block_mut(body, &mut |b| {
            b.stmts.retain(|s| {
                !s.binds
                    .iter()
                    .chain(&s.lin_binds)
                    .any(|v| killed.contains(v))
            })
        });
    }
    subst.apply_block(body);
    stats
}

/// Runs the given rules (tried in order on every statement) once over the function.
pub fn apply_rules(f: &mut Func, prog: &Program, rules: &[Rule]) -> Stats {
    run(f, prog, &|_| rules)
}

const MAX_DEPTH: usize = 24;

fn walk_block(cx: &mut Cx<'_>, b: &mut Block, pick: &Picker<'_>, stats: &mut Stats) {
    let old = std::mem::take(&mut b.stmts);
    let mut out = Vec::with_capacity(old.len());
    for mut s in old {
        cx.subst.apply_operands(&mut s.expr);
        cx.facts.enter(&s.expr);
        for nb in blocks_mut(&mut s.expr) {
            walk_block(cx, nb, pick, stats);
        }
        rewrite(cx, s, &mut out, pick, stats, 0);
    }
    b.stmts = out;
    cx.subst.apply_results(b);
}

fn rewrite(
    cx: &mut Cx<'_>,
    mut s: Stmt,
    out: &mut Vec<Stmt>,
    pick: &Picker<'_>,
    stats: &mut Stats,
    depth: usize,
) {
    // A statement killed earlier in the walk that comes round again (code
    // moved by a rule, e.g. an inlined branch) goes now.
    if s.binds
        .iter()
        .chain(&s.lin_binds)
        .any(|v| cx.killed.contains(v))
    {
        return;
    }
    cx.subst.apply_operands(&mut s.expr);
    if depth < MAX_DEPTH {
        cx.src = s.src;
        for rule in pick(&s.expr) {
            if let Some(new) = (rule.apply)(&s, cx) {
                *stats.fired.entry(rule.name).or_insert(0) += 1;
                for n in new {
                    rewrite(cx, n, out, pick, stats, depth + 1);
                }
                return;
            }
        }
    }
    cx.facts.record(&s, cx.vars);
    out.push(s);
}
