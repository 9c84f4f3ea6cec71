//! Dead code elimination.
//!
//! [`dce`]: a statement none of whose results is read goes away (statements
//! have no effects; one that could fail may be removed, since only runs
//! without error must agree). If it consumed linear values (operands or
//! captures), they are dropped explicitly instead. Unread results of loops
//! (stacked outputs, state that feeds nothing else), builds, maps and ifs are
//! removed from their bodies, and a linear map's unread element
//! parameters with their arrays (one stays; an array given twice is read
//! through its first parameter; a map with non-linear results keeps its
//! operands, whose layouts decide how the results are stored). Everything applies inside nested blocks.
//!
//! [`drop_dead_linear`]: a linear statement all of whose linear results are
//! dropped becomes drops of what it consumed (`drop(lscale(s, x)) = drop(x)`,
//! `drop(0) = ()`), `(a, b) = dup(x); drop(a)` becomes `b = x`, and a dropped
//! linear result of an `if`, build, map or loop output is dropped inside
//! instead (where the rules above continue).

use super::facts::{count, count_stmt, counts_of, drop_stmt, is_drop, Counts, Subst};
use crate::fast_hash::FastMap;
use crate::ir::*;
use crate::visit::{blocks_mut, free_vars_block, free_vars_stmt, substitute_block};
use std::collections::BTreeSet;

/// Removes dead statements and unread results everywhere; returns whether
/// anything changed.
pub fn dce(f: &mut Func) -> bool {
    let mut counts = counts_of(&f.body);
    dce_block(&mut f.body, &mut counts)
}

fn dce_block(b: &mut Block, counts: &mut Counts) -> bool {
    let mut changed = false;
    let old = std::mem::take(&mut b.stmts);
    let mut kept_rev: Vec<Stmt> = Vec::with_capacity(old.len());
    for mut s in old.into_iter().rev() {
        let dead = !is_drop(&s)
            && s.binds
                .iter()
                .chain(&s.lin_binds)
                .all(|v| count(counts, *v) == 0);
        if dead {
            changed = true;
            let lin: BTreeSet<Var> = free_vars_stmt(&s).lin;
            count_stmt(&s, counts, false);
            for v in lin.into_iter().rev() {
                counts.bump(v, true);
                kept_rev.push(drop_stmt(v, s.src));
            }
            continue;
        }
        changed |= prune_results(&mut s, counts);
        for nb in blocks_mut(&mut s.expr) {
            changed |= dce_block(nb, counts);
        }
        kept_rev.push(s);
    }
    kept_rev.reverse();
    b.stmts = kept_rev;
    changed
}

/// Removes the non-linear results nobody reads from a compound statement.
fn prune_results(s: &mut Stmt, counts: &mut Counts) -> bool {
    let unread = |v: &Var, counts: &Counts| count(counts, *v) == 0;
    match &mut s.expr {
        Expr::Loop(l) => {
            let k = l.init.len();
            let mut changed = false;
            // Stacked outputs.
            let mut j = s.binds.len();
            while j > k {
                j -= 1;
                if unread(&s.binds[j], counts) {
                    s.binds.remove(j);
                    let a = l.body.body.results.remove(j);
                    uncount_atom(&a, counts);
                    changed = true;
                }
            }
            // State: candidates are unread finals; a candidate whose parameter
            // feeds something that stays is not removable.
            let mut cand: BTreeSet<usize> =
                (0..k).filter(|j| unread(&s.binds[*j], counts)).collect();
            while !cand.is_empty() {
                let mut probe = l.body.body.clone();
                probe.results = probe
                    .results
                    .iter()
                    .enumerate()
                    .filter(|(j, _)| !cand.contains(j))
                    .map(|(_, a)| *a)
                    .collect();
                let mut pc = counts_of(&probe);
                dce_block(&mut probe, &mut pc);
                let fv = free_vars_block(&probe).nl;
                let keep: BTreeSet<usize> = cand
                    .iter()
                    .copied()
                    .filter(|j| fv.contains(&l.body.params[1 + j]))
                    .collect();
                if keep.is_empty() {
                    break;
                }
                cand = cand.difference(&keep).copied().collect();
            }
            for j in cand.into_iter().rev() {
                s.binds.remove(j);
                let a = l.init.remove(j);
                uncount_atom(&a, counts);
                l.body.params.remove(1 + j);
                let r = l.body.body.results.remove(j);
                uncount_atom(&r, counts);
                changed = true;
            }
            changed
        }
        Expr::Build(b) => prune_stacked(&mut s.binds, &mut b.body.body, counts),
        Expr::Map(m) => {
            let mut changed = prune_stacked(&mut s.binds, &mut m.body.body, counts);
            // The operands of a map with non-linear results stay: their
            // layouts decide how its results are stored (as ndarray stores
            // the user's elementwise result), and so the order of a later
            // sum of the primal.
            if !s.binds.is_empty() {
                return changed;
            }
            // An array read twice is read once: the later parameter reads
            // the earlier one (and goes below, unread).
            for j in 1..m.arrs.len() {
                let Some(i) = (0..j).find(|&i| m.arrs[i] == m.arrs[j]) else {
                    continue;
                };
                let (pi, pj) = (m.body.params[i], m.body.params[j]);
                let n = counts.get(pj);
                if n > 0 {
                    let to: FastMap<Var, Atom> = [(pj, Atom::Var(pi))].into_iter().collect();
                    substitute_block(&mut m.body.body, &to, &FastMap::default());
                    counts.set(pi, counts.get(pi) + n);
                    counts.set(pj, 0);
                    changed = true;
                }
            }
            // Unread element parameters go with their arrays (one
            // non-linear array stays: the map's shape, in both halves
            // after unzipping).
            for j in (0..m.arrs.len()).rev() {
                if m.arrs.len() > 1 && unread(&m.body.params[j], counts) {
                    m.body.params.remove(j);
                    let a = m.arrs.remove(j);
                    uncount_atom(&a, counts);
                    changed = true;
                }
            }
            changed
        }
        Expr::If(i) => {
            let mut changed = false;
            for j in (0..s.binds.len()).rev() {
                if unread(&s.binds[j], counts) {
                    s.binds.remove(j);
                    let a = i.then_.results.remove(j);
                    uncount_atom(&a, counts);
                    let a = i.else_.results.remove(j);
                    uncount_atom(&a, counts);
                    changed = true;
                }
            }
            changed
        }
        Expr::Atom(_)
        | Expr::Prim(..)
        | Expr::Array(_)
        | Expr::Tuple(_)
        | Expr::Untuple(_)
        | Expr::Lin(_)
        | Expr::Call(_)
        | Expr::Fold(_)
        | Expr::While(_) => false,
    }
}

/// Removes unread results of a build or map (one body result per binder).
fn prune_stacked(binds: &mut Vec<Var>, body: &mut Block, counts: &mut Counts) -> bool {
    let mut changed = false;
    for j in (0..binds.len()).rev() {
        if count(counts, binds[j]) == 0 {
            binds.remove(j);
            let a = body.results.remove(j);
            uncount_atom(&a, counts);
            changed = true;
        }
    }
    changed
}

fn uncount_atom(a: &Atom, counts: &mut Counts) {
    if let Atom::Var(v) = a {
        counts.bump(*v, false);
    }
}

/// Linear DCE through explicit drops (see the module docs); returns whether
/// anything changed.
pub fn drop_dead_linear(f: &mut Func) -> bool {
    // Only a drop starts a rewrite: a body without one is left as it is
    // (without counting its uses).
    if !has_drop(&f.body) {
        return false;
    }
    let counts = counts_of(&f.body);
    let mut subst = Subst::default();
    let changed = ddl_block(&mut f.body, &counts, &mut subst);
    subst.apply_block(&mut f.body);
    changed
}

/// Whether `b` or a block nested in it drops a variable.
fn has_drop(b: &Block) -> bool {
    b.stmts
        .iter()
        .any(|s| is_drop(s) || crate::visit::blocks(&s.expr).any(has_drop))
}

fn ddl_block(b: &mut Block, counts: &Counts, subst: &mut Subst) -> bool {
    let mut changed = false;
    for s in &mut b.stmts {
        for nb in blocks_mut(&mut s.expr) {
            changed |= ddl_block(nb, counts, subst);
        }
    }
    // A block without a drop of its own rewrites nothing here.
    if !b.stmts.iter().any(is_drop) {
        subst.apply_block(b);
        return changed;
    }
    // Slots: the statements at each original position (a replaced statement
    // becomes several drops).
    let mut slots: Vec<Vec<Option<Stmt>>> = std::mem::take(&mut b.stmts)
        .into_iter()
        .map(|s| vec![Some(s)])
        .collect();
    let mut drops: FastMap<Var, (usize, usize)> = FastMap::default();
    for (i, slot) in slots.iter().enumerate() {
        if let Some(Some(Stmt {
            expr: Expr::Lin(LinOp::Drop(x)),
            ..
        })) = slot.first()
        {
            drops.insert(*x, (i, 0));
        }
    }
    enum Action {
        /// Replace by drops of these linear variables.
        Drops(Vec<Var>, Vec<Var>, Option<SrcId>),
        /// `dup(x)` with one copy dropped, or `ltake x[i] keep` with its element
        /// dropped: (dropped result, kept result, x).
        Dup(Var, Var, Var),
        /// Drop these linear results inside the statement's blocks instead.
        PushDrops(Vec<usize>),
    }
    for i in (0..slots.len()).rev() {
        let action = {
            let Some(Some(s)) = slots[i].first() else {
                continue;
            };
            let dropped: Vec<bool> = s.lin_binds.iter().map(|v| drops.contains_key(v)).collect();
            if is_drop(s) || !dropped.iter().any(|d| *d) {
                continue;
            }
            let nl_dead = s.binds.iter().all(|v| count(counts, *v) == 0);
            if nl_dead && dropped.iter().all(|d| *d) {
                let lin: Vec<Var> = free_vars_stmt(s).lin.into_iter().collect();
                Action::Drops(s.lin_binds.clone(), lin, s.src)
            } else if let (Expr::Lin(LinOp::Dup(x)), [a, c]) = (&s.expr, s.lin_binds.as_slice()) {
                match (dropped[0], dropped[1]) {
                    (true, false) => Action::Dup(*a, *c, *x),
                    (false, true) => Action::Dup(*c, *a, *x),
                    _ => continue,
                }
            } else if let (Expr::Lin(LinOp::Take { x, zero: false, .. }), [e, a]) =
                (&s.expr, s.lin_binds.as_slice())
            {
                // `ltake x[i] keep` whose element is dropped is `x` itself.
                match (dropped[0], dropped[1]) {
                    (true, false) => Action::Dup(*e, *a, *x),
                    _ => continue,
                }
            } else {
                let first = match &s.expr {
                    Expr::If(_) | Expr::Build(_) | Expr::Map(_) => 0,
                    Expr::Loop(l) => l.lin_init.len(),
                    _ => continue,
                };
                let js: Vec<usize> = (first..dropped.len()).filter(|j| dropped[*j]).collect();
                if js.is_empty() {
                    continue;
                }
                Action::PushDrops(js)
            }
        };
        match action {
            Action::Drops(binds, lin, src) => {
                for v in &binds {
                    let (a, k) = drops.remove(v).expect("checked");
                    slots[a][k] = None;
                }
                slots[i] = lin.iter().map(|v| Some(drop_stmt(*v, src))).collect();
                for (k, v) in lin.iter().enumerate() {
                    drops.insert(*v, (i, k));
                }
            }
            Action::Dup(gone, kept, x) => {
                let (p, k) = drops.remove(&gone).expect("checked");
                slots[p][k] = None;
                slots[i] = vec![];
                subst.set_lin(kept, x);
            }
            Action::PushDrops(js) => {
                // For each dropped result: the captured variable both branches
                // of an `if` pass through (dropped outside instead), or none.
                let plan: Vec<(usize, Var, Option<Var>)> = match &slots[i][0] {
                    Some(s) => js
                        .iter()
                        .map(|j| (*j, s.lin_binds[*j], passed_through(s, *j)))
                        .collect(),
                    None => continue,
                };
                for (_, v, through) in &plan {
                    let (a, k) = drops.remove(v).expect("checked");
                    match through {
                        Some(x) => {
                            let src = slots[a][k].as_ref().and_then(|d| d.src);
                            slots[a][k] = Some(drop_stmt(*x, src));
                            drops.insert(*x, (a, k));
                        }
                        None => slots[a][k] = None,
                    }
                }
                if let Some(s) = &mut slots[i][0] {
                    for (j, _, through) in plan.into_iter().rev() {
                        push_drop(s, j, through.is_none());
                    }
                }
            }
        }
        changed = true;
    }
    b.stmts = slots.into_iter().flatten().flatten().collect();
    // The copies replaced here are read only in this block (or nested ones):
    // substitute now, so that enclosing blocks see the right free variables.
    subst.apply_block(b);
    changed
}

/// The variable captured from outside that both branches of an `if` return as
/// linear result `j`, if so.
fn passed_through(s: &Stmt, j: usize) -> Option<Var> {
    let Expr::If(i) = &s.expr else {
        return None;
    };
    let (a, b) = (*i.then_.lin_results.get(j)?, *i.else_.lin_results.get(j)?);
    // A block result is bound at the block's top level or outside it.
    let bound = |blk: &Block| blk.stmts.iter().any(|t| t.lin_binds.contains(&a));
    (a == b && !bound(&i.then_) && !bound(&i.else_)).then_some(a)
}

/// Removes linear result `j` of an `if`, build, map or loop (stacked output);
/// with `drop_inside`, drops it at the end of the blocks that produced it:
/// `let (..; .., y, ..) = if c { ..; yield ..; a } else { ..; yield ..; b }; drop(y)`
/// = `let (..; ..) = if c { ..; drop(a) } else { ..; drop(b) }`.
fn push_drop(s: &mut Stmt, j: usize, drop_inside: bool) {
    let src = s.src;
    let pop = |b: &mut Block| {
        let r = b.lin_results.remove(j);
        if drop_inside {
            b.stmts.push(drop_stmt(r, src));
        }
    };
    match &mut s.expr {
        Expr::If(i) => {
            pop(&mut i.then_);
            pop(&mut i.else_);
            if j < i.lin_shapes.len() {
                i.lin_shapes.remove(j);
            }
        }
        Expr::Build(b) => pop(&mut b.body.body),
        Expr::Map(m) => pop(&mut m.body.body),
        Expr::Loop(l) => pop(&mut l.body.body),
        Expr::Atom(_)
        | Expr::Prim(..)
        | Expr::Array(_)
        | Expr::Tuple(_)
        | Expr::Untuple(_)
        | Expr::Lin(_)
        | Expr::Call(_)
        | Expr::Fold(_)
        | Expr::While(_) => return,
    }
    s.lin_binds.remove(j);
}
