//! Dead linear loop state.
//!
//! [`dead_lin_state`]: `(.. ; ls_k ..) = loop n (.. ; ls0_k ..) |i ; p_k| {..}; drop ls_k`
//! where everything computed from `p_k` in the body flows only into dead
//! state slots or drops: slot `k` is removed — its parameter, the statements
//! it taints, its body result, its initial value (dropped before the loop)
//! and the final drop. Other linear values those statements consumed are
//! dropped where the statements stood.
//!
//! Equation: such a slot never influences a live result (linear values only
//! flow into linear values), so removing it preserves every live result; it
//! saves carrying (and, in reverse mode, zero-initialising and threading) a
//! tangent that nobody reads — typically the tangent of loop state whose
//! primal was already found dead.

use crate::ir::*;
use crate::visit::{for_each_operand, free_vars_stmt, reads_free_lin};
use std::collections::BTreeSet;

/// Removes dead linear loop state everywhere in `f`. Returns whether anything changed.
pub fn dead_lin_state(f: &mut Func) -> bool {
    super::rewrite_stmts(&mut f.body, &mut try_loop)
}

/// The linear variables a statement reads (operands and captures).
fn lin_reads(s: &Stmt) -> BTreeSet<Var> {
    let mut out: BTreeSet<Var> = free_vars_stmt(s).lin;
    for_each_operand(&s.expr, &mut |_| {}, &mut |v| {
        out.insert(v);
    });
    out
}

/// Whether `s` reads the linear variable `v` (`lin_reads(s).contains(&v)`
/// without the set of the others).
fn reads_lin(s: &Stmt, v: Var) -> bool {
    let mut direct = false;
    for_each_operand(&s.expr, &mut |_| {}, &mut |x| direct |= x == v);
    direct || reads_free_lin(s, v)
}

/// Index of the statement after `from` that drops `v`, if that is its only use.
fn dropped_at(b: &Block, from: usize, v: Var) -> Option<usize> {
    if b.lin_results.contains(&v) {
        return None;
    }
    b.stmts
        .iter()
        .enumerate()
        .skip(from + 1)
        .find(|(_, s)| reads_lin(s, v))
        .and_then(|(k, s)| matches!(s.expr, Expr::Lin(LinOp::Drop(x)) if x == v).then_some(k))
}

/// Variables tainted by `seeds` in a body, and whether a tainted statement
/// also has non-linear results (then nothing can be removed).
fn taint(body: &Block, seeds: &BTreeSet<Var>) -> (BTreeSet<Var>, bool) {
    let mut t = seeds.clone();
    let mut blocked = false;
    for s in &body.stmts {
        if lin_reads(s).iter().any(|v| t.contains(v)) {
            if !s.binds.is_empty() {
                blocked = true;
            }
            t.extend(s.lin_binds.iter().copied());
        }
    }
    (t, blocked)
}

/// Tries to remove dead state slots of the loop at `b.stmts[j]`; returns the
/// new index of the loop statement when it changed something.
fn try_loop(b: &mut Block, j: usize) -> Option<usize> {
    let Expr::Loop(l) = &b.stmts[j].expr else {
        return None;
    };
    let m = l.lin_init.len();
    if m == 0 {
        return None;
    }
    let outs = b.stmts[j].lin_binds.clone();
    let mut dead: BTreeSet<usize> = (0..m)
        .filter(|k| dropped_at(b, j, outs[*k]).is_some())
        .collect();
    // Shrink to a fixpoint: a slot stays dead only if what its parameter
    // taints reaches no live result.
    loop {
        let seeds: BTreeSet<Var> = dead.iter().map(|k| l.body.lin_params[*k]).collect();
        if seeds.is_empty() {
            return None;
        }
        let mut keep = dead.clone();
        for &k in &dead {
            let (t, blocked) = taint(&l.body.body, &BTreeSet::from([l.body.lin_params[k]]));
            let leaks = l
                .body
                .body
                .lin_results
                .iter()
                .enumerate()
                .any(|(r, v)| t.contains(v) && !(r < m && dead.contains(&r)));
            if blocked || leaks {
                keep.remove(&k);
            }
        }
        if keep == dead {
            break;
        }
        dead = keep;
    }
    // Rewrite the body.
    let seeds: BTreeSet<Var> = dead.iter().map(|k| l.body.lin_params[*k]).collect();
    let Expr::Loop(l) = &mut b.stmts[j].expr else {
        unreachable!()
    };
    let (t, _) = taint(&l.body.body, &seeds);
    let stmts = std::mem::take(&mut l.body.body.stmts);
    for s in stmts {
        let reads = lin_reads(&s);
        if reads.iter().any(|v| t.contains(v)) {
            for v in reads.into_iter().filter(|v| !t.contains(v)) {
                l.body.body.stmts.push(drop_stmt(v));
            }
        } else {
            l.body.body.stmts.push(s);
        }
    }
    // A dead slot's body result not computed from tainted values (e.g. reset
    // from a captured value each iteration) is no longer consumed: drop it.
    for &k in &dead {
        let r = l.body.body.lin_results[k];
        if !t.contains(&r) {
            l.body.body.stmts.push(drop_stmt(r));
        }
    }
    let keep_slot = |k: &usize| !dead.contains(k);
    l.body.lin_params = l
        .body
        .lin_params
        .iter()
        .enumerate()
        .filter(|(k, _)| keep_slot(k))
        .map(|(_, v)| *v)
        .collect();
    l.body.body.lin_results = l
        .body
        .body
        .lin_results
        .iter()
        .enumerate()
        .filter(|(k, _)| *k >= m || keep_slot(k))
        .map(|(_, v)| *v)
        .collect();
    let dropped_inits: Vec<Var> = dead.iter().map(|k| l.lin_init[*k]).collect();
    l.lin_init = l
        .lin_init
        .iter()
        .enumerate()
        .filter(|(k, _)| keep_slot(k))
        .map(|(_, v)| *v)
        .collect();
    let dead_outs: Vec<Var> = dead.iter().map(|k| outs[*k]).collect();
    b.stmts[j].lin_binds = outs
        .iter()
        .enumerate()
        .filter(|(k, _)| *k >= m || keep_slot(k))
        .map(|(_, v)| *v)
        .collect();
    // Remove the final drops, drop the initial values before the loop.
    b.stmts
        .retain(|s| !matches!(s.expr, Expr::Lin(LinOp::Drop(x)) if dead_outs.contains(&x)));
    let n = dropped_inits.len();
    for (k, v) in dropped_inits.into_iter().enumerate() {
        b.stmts.insert(j + k, drop_stmt(v));
    }
    Some(j + n)
}

fn drop_stmt(v: Var) -> Stmt {
    Stmt {
        binds: vec![],
        lin_binds: vec![],
        expr: Expr::Lin(LinOp::Drop(v)),
        src: None,
    }
}
