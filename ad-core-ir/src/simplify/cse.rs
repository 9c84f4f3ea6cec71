//! Common subexpression elimination of pure non-linear statements.
//!
//! `let y1 = e; .. let y2 = e` with `e` a primitive, array operation, tuple,
//! untuple or call (no linear operands or results) and the first statement in
//! scope at the second: `y2 := y1`. Operands are compared after earlier
//! replacements, commutative primitives with sorted operands. A statement of
//! an enclosing block is visible in nested blocks, not the other way round.
//! Linear statements are never merged (a linear value is used once).
//!
//! A merged statement that could fail (an index) is dominated by an identical
//! one that ran first, so no failure is introduced. Arrays filled with one
//! value (`broadcast 0.0, [n]`) are not merged: their users take them as
//! their own, so a shared fill would be copied for each.

use super::facts::Subst;
use crate::fast_hash::FastMap;
use crate::ir::*;
use crate::visit::blocks_mut;

/// What identifies a pure statement.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Key {
    Prim(Prim, Vec<Atom>),
    Array(&'static str, Vec<Atom>, Vec<usize>),
    Tuple(Vec<Atom>),
    Untuple(Atom),
    Call(String, Vec<Atom>),
}

fn atom_rank(a: &Atom) -> (u8, u64) {
    match a {
        Atom::Var(v) => (0, v.0 as u64),
        Atom::F64(x) => (1, x.to_bits()),
        Atom::I64(x) => (2, *x as u64),
        Atom::Bool(b) => (3, *b as u64),
    }
}

fn commutative(p: Prim) -> bool {
    matches!(
        p,
        Prim::Add | Prim::Mul | Prim::Max | Prim::Min | Prim::Eq | Prim::Ne | Prim::And | Prim::Or
    )
}

/// The key of an array operation: its name ([`ArrayOp::name`]), operands
/// and parameters; two operations with equal keys compute the same value.
fn array_key(op: &ArrayOp) -> Key {
    let mut atoms = vec![];
    op.for_each_atom(&mut |a| atoms.push(*a));
    Key::Array(op.name(), atoms, op.params())
}

/// The key of a statement that may be merged, `None` for others.
fn key(s: &Stmt) -> Option<Key> {
    if !s.lin_binds.is_empty() || s.binds.is_empty() {
        return None;
    }
    match &s.expr {
        Expr::Prim(p, xs) => {
            let mut xs = xs.clone();
            if commutative(*p) {
                xs.sort_by_key(atom_rank);
            }
            Some(Key::Prim(*p, xs))
        }
        // An array filled with one value is left unmerged: its users take
        // it as their own (an accumulator, a loop's state written in
        // place), so one fill each costs less than copies of a shared one.
        Expr::Array(ArrayOp::Broadcast { axes, .. }) if axes.is_empty() => None,
        Expr::Array(op) => Some(array_key(op)),
        Expr::Tuple(xs) => Some(Key::Tuple(xs.clone())),
        Expr::Untuple(a) => Some(Key::Untuple(*a)),
        Expr::Call(c) if c.lin_args.is_empty() && c.lin_shapes.is_empty() => {
            Some(Key::Call(c.func.clone(), c.args.clone()))
        }
        Expr::Call(_)
        | Expr::Atom(_)
        | Expr::Lin(_)
        | Expr::If(_)
        | Expr::Loop(_)
        | Expr::Build(_)
        | Expr::Map(_)
        | Expr::Fold(_)
        | Expr::While(_) => None,
    }
}

/// Merges identical pure statements; returns whether anything changed.
pub fn cse(f: &mut Func) -> bool {
    let mut subst = Subst::default();
    let mut scopes: Vec<FastMap<Key, Vec<Var>>> = vec![];
    let changed = cse_block(&mut f.body, &mut scopes, &mut subst);
    subst.apply_block(&mut f.body);
    changed
}

fn cse_block(b: &mut Block, scopes: &mut Vec<FastMap<Key, Vec<Var>>>, subst: &mut Subst) -> bool {
    let mut changed = false;
    scopes.push(FastMap::default());
    let old = std::mem::take(&mut b.stmts);
    for mut s in old {
        subst.apply_operands(&mut s.expr);
        for nb in blocks_mut(&mut s.expr) {
            changed |= cse_block(nb, scopes, subst);
        }
        if let Some(k) = key(&s) {
            let found = scopes.iter().rev().find_map(|m| m.get(&k)).cloned();
            match found {
                Some(prev) if prev.len() == s.binds.len() => {
                    for (y, x) in s.binds.iter().zip(prev) {
                        subst.set_nl(*y, Atom::Var(x));
                    }
                    changed = true;
                    continue;
                }
                _ => {
                    scopes
                        .last_mut()
                        .expect("a scope")
                        .insert(k, s.binds.clone());
                }
            }
        }
        b.stmts.push(s);
    }
    subst.apply_results(b);
    scopes.pop();
    changed
}
