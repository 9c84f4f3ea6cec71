//! Makes linear usage explicit: inserts [`LinOp::Dup`] and [`LinOp::Drop`] so that
//! every linear variable is consumed exactly once.
//!
//! Passes that create linear code (JVP, transpose, the front end) may read a
//! linear variable any number of times; this pass then rewrites the function:
//! - a linear variable read `k >= 2` times (counting a nested block that
//!   captures it as one read) is duplicated into `k` copies right after its
//!   binder (`dup` chain), and the reads are renamed to the copies in order;
//! - a linear variable never read is dropped right after its binder;
//! - inside a nested block, the captured linear variables are treated as bound
//!   at the block's entry; an `if` branch that does not read a variable the
//!   other branch reads drops it.
//!
//! Invariant: the output satisfies rule 4 of [`crate::check`]; values are
//! unchanged (`dup` copies, `drop` discards).

use crate::fast_hash::FastMap;
use crate::ir::*;
use crate::visit::{blocks_mut, free_vars_block, free_vars_lambda, map_operands, substitute_block};
use std::collections::BTreeSet;

/// Inserts dups and drops in a whole function.
pub fn insert_dup_drop(f: &mut Func) {
    let entry: Vec<Var> = f.lin_params.clone();
    let mut body = std::mem::take(&mut f.body);
    fix_block(&mut f.vars, &mut body, &entry);
    f.body = body;
}

/// Fixes a block whose `entry` linear variables (lambda linear parameters and
/// captured variables) must each be consumed exactly once by it.
fn fix_block(vars: &mut VarTable, b: &mut Block, entry: &[Var]) {
    // 1. Nested blocks first: each consumes its captured variables once.
    for s in &mut b.stmts {
        fix_nested(vars, &mut s.expr);
    }
    // 2. Count reads in this block.
    let mut counts: FastMap<Var, usize> = FastMap::default();
    for s in &b.stmts {
        for v in stmt_reads(s) {
            *counts.entry(v).or_insert(0) += 1;
        }
    }
    for v in &b.lin_results {
        *counts.entry(*v).or_insert(0) += 1;
    }
    // 3. Plan copies for entry variables and for linear binders of this block.
    let mut out: Vec<Stmt> = Vec::with_capacity(b.stmts.len());
    let mut copies: FastMap<Var, Vec<Var>> = FastMap::default();
    for &v in entry {
        plan(vars, v, &counts, &mut out, &mut copies);
    }
    let stmts = std::mem::take(&mut b.stmts);
    for mut s in stmts {
        rename_reads(&mut s, &mut copies);
        let binders = s.lin_binds.clone();
        out.push(s);
        for v in binders {
            plan(vars, v, &counts, &mut out, &mut copies);
        }
    }
    for v in &mut b.lin_results {
        if let Some(cs) = copies.get_mut(v) {
            *v = cs.pop().expect("one copy per read");
        }
    }
    b.stmts = out;
}

/// Fixes the nested blocks of one expression.
fn fix_nested(vars: &mut VarTable, e: &mut Expr) {
    match e {
        Expr::If(i) => {
            let mut captured: BTreeSet<Var> = free_vars_block(&i.then_).lin;
            captured.extend(free_vars_block(&i.else_).lin);
            let entry: Vec<Var> = captured.into_iter().collect();
            fix_block(vars, &mut i.then_, &entry);
            fix_block(vars, &mut i.else_, &entry);
        }
        Expr::Loop(Loop { body, .. })
        | Expr::Build(Build { body, .. })
        | Expr::Map(Map { body, .. })
        | Expr::Fold(Fold { body, .. }) => {
            let mut entry: Vec<Var> = body.lin_params.clone();
            entry.extend(free_vars_lambda(body).lin);
            fix_block(vars, &mut body.body, &entry);
        }
        // Non-linear only (the checker refuses linear reads inside).
        Expr::While(_) => {}
        Expr::Atom(_)
        | Expr::Prim(..)
        | Expr::Array(_)
        | Expr::Tuple(_)
        | Expr::Untuple(_)
        | Expr::Lin(_)
        | Expr::Call(_) => {}
    }
}

/// The linear reads of a statement, in order: direct operands (with
/// multiplicity), then captured variables of nested blocks (once each).
fn stmt_reads(s: &Stmt) -> Vec<Var> {
    let mut reads = vec![];
    let mut e = s.expr.clone();
    map_operands(&mut e, &mut |_| {}, &mut |v| reads.push(*v));
    reads.extend(captured(&s.expr));
    reads
}

/// Linear variables of enclosing scopes read by the nested blocks of `e`.
fn captured(e: &Expr) -> BTreeSet<Var> {
    let mut out = BTreeSet::new();
    match e {
        Expr::If(i) => {
            out.extend(free_vars_block(&i.then_).lin);
            out.extend(free_vars_block(&i.else_).lin);
        }
        Expr::Loop(Loop { body, .. })
        | Expr::Build(Build { body, .. })
        | Expr::Map(Map { body, .. })
        | Expr::Fold(Fold { body, .. }) => out.extend(free_vars_lambda(body).lin),
        Expr::While(w) => {
            out.extend(free_vars_lambda(&w.cond).lin);
            out.extend(free_vars_lambda(&w.body).lin);
        }
        Expr::Atom(_)
        | Expr::Prim(..)
        | Expr::Array(_)
        | Expr::Tuple(_)
        | Expr::Untuple(_)
        | Expr::Lin(_)
        | Expr::Call(_) => {}
    }
    out
}

/// Emits a drop (0 reads) or a dup chain (k >= 2 reads) for `v`, recording the
/// copies (consumed from the back, so stored in reverse read order).
fn plan(
    vars: &mut VarTable,
    v: Var,
    counts: &FastMap<Var, usize>,
    out: &mut Vec<Stmt>,
    copies: &mut FastMap<Var, Vec<Var>>,
) {
    let k = counts.get(&v).copied().unwrap_or(0);
    if k == 0 {
        out.push(Stmt {
            binds: vec![],
            lin_binds: vec![],
            expr: Expr::Lin(LinOp::Drop(v)),
            src: None,
        });
        return;
    }
    if k == 1 {
        return;
    }
    let info = vars.info(v).clone();
    let mut cs = Vec::with_capacity(k);
    let mut rest = v;
    for j in 0..k - 1 {
        let a = vars.fresh(info.name.clone(), info.ty.clone(), true);
        let last = j == k - 2;
        let b = vars.fresh(info.name.clone(), info.ty.clone(), true);
        out.push(Stmt {
            binds: vec![],
            lin_binds: vec![a, b],
            expr: Expr::Lin(LinOp::Dup(rest)),
            src: None,
        });
        cs.push(a);
        if last {
            cs.push(b);
        }
        rest = b;
    }
    cs.reverse();
    copies.insert(v, cs);
}

/// Renames the linear reads of a statement to the next planned copies.
fn rename_reads(s: &mut Stmt, copies: &mut FastMap<Var, Vec<Var>>) {
    if copies.is_empty() {
        return;
    }
    map_operands(&mut s.expr, &mut |_| {}, &mut |v| {
        if let Some(cs) = copies.get_mut(v) {
            *v = cs.pop().expect("one copy per read");
        }
    });
    let caps = captured(&s.expr);
    let mut ren: FastMap<Var, Var> = FastMap::default();
    for v in caps {
        if let Some(cs) = copies.get_mut(&v) {
            ren.insert(v, cs.pop().expect("one copy per read"));
        }
    }
    if !ren.is_empty() {
        let none = FastMap::default();
        for blk in blocks_mut(&mut s.expr) {
            substitute_block(blk, &none, &ren);
        }
    }
}
