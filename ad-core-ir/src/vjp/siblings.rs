//! Sibling loop fusion: a loop of the transposed linear map runs inside the
//! forward loop of the same trip count, one iteration of each per index.
//!
//! ```text
//! let y, ts = loop n (s = s0) |k| {           let y, ts ; g = loop n (s = s0 ; acc = z) |k| {
//!   B1                                          B1
//!   yield s2, t                                 B2   (`index ts[k]` read as `t`)
//! }                                  ==>        yield s2, t ; acc2
//! ..                                          }
//! let ; g = loop n rev (; acc = z) |k2| {     ..
//!   let u = index ts[k2]
//!   B2
//!   yield ; acc2
//! }
//! ```
//!
//! Legality, for a forward non-linear loop `L1` (`let ys = loop n ..`, no
//! linear state) and a later linear loop `L2` in the same block (no
//! non-linear state or results) of the same trip count:
//! - `L2` reads none of `L1`'s state results, and reads a stacked output of
//!   `L1` only as `index ts[k2]` at its own index, at the top level of its
//!   body (that element is what `L1`'s iteration `k2` yields);
//! - `L2` reads nothing bound between the two loops that depends on `L1`'s
//!   results: the statements in between that do not are moved before the
//!   fused loop, those that do after it (the IR is pure, so the order of
//!   independent statements does not matter);
//! - `L2` runs forward, or it is reversed and its iterations add into
//!   disjoint elements ([`is_disjoint_accumulation`]): then no bit of its
//!   result depends on the order, and running it forward changes nothing.
//!
//! `L1` keeps its order and its code, so its results keep every bit.

use crate::accumulate::is_disjoint_accumulation;
use crate::fast_hash::{FastMap, FastSet};
use crate::ir::*;
use crate::simplify::facts::{count, counts_of, for_each_block_mut};
use crate::visit::{free_vars_stmt, rename_stmt};

/// Fuses every legal pair of sibling loops in `f` (nested blocks included,
/// until none is left: fusing two loops makes their inner loops siblings);
/// returns whether anything fused.
pub fn fuse_siblings(f: &mut Func) -> bool {
    let mut changed = false;
    loop {
        let mut any = false;
        for_each_block_mut(&mut f.body, &mut |b| {
            while fuse_one(b) {
                any = true;
            }
        });
        if !any {
            return changed;
        }
        changed = true;
    }
}

/// Whether composing `fwd` and `lin_t` could fuse anything: a forward loop
/// at the top of `fwd` and a linear loop at the top of `lin_t` (nested
/// loops fuse only once their enclosing loops have). A cheap test that
/// spares the composition when it is false.
pub fn could_fuse(fwd: &Func, lin_t: &Func) -> bool {
    fwd.body.stmts.iter().any(|s| forward_loop(s).is_some())
        && lin_t.body.stmts.iter().any(|s| linear_loop(s).is_some())
}

/// Fuses the first legal pair of `b` (the latest forward loop before each
/// linear loop); returns whether one fused.
fn fuse_one(b: &mut Block) -> bool {
    let copies: FastMap<Var, Atom> = b
        .stmts
        .iter()
        .filter_map(|s| match (s.binds.as_slice(), &s.expr) {
            ([v], Expr::Atom(a)) => Some((*v, *a)),
            _ => None,
        })
        .collect();
    let resolve = |a: &Atom| match a {
        Atom::Var(v) => copies.get(v).copied().unwrap_or(*a),
        Atom::F64(_) | Atom::I64(_) | Atom::Bool(_) => *a,
    };
    for q in 0..b.stmts.len() {
        let Some(l2) = linear_loop(&b.stmts[q]) else {
            continue;
        };
        for p in (0..q).rev() {
            let Some(l1) = forward_loop(&b.stmts[p]) else {
                continue;
            };
            if resolve(&l1.n) != resolve(&l2.n) {
                continue;
            }
            if let Some(plan) = plan(b, p, q) {
                apply(b, p, q, plan);
                return true;
            }
        }
    }
    false
}

/// `s` as a forward loop with non-linear state only (an `L1`).
fn forward_loop(s: &Stmt) -> Option<&Loop> {
    match &s.expr {
        Expr::Loop(l) if !l.rev && l.lin_init.is_empty() && s.lin_binds.is_empty() => Some(l),
        _ => None,
    }
}

/// `s` as a linear loop that may run forward inside another loop (an `L2`):
/// linear state only, and forward or a disjoint accumulation.
fn linear_loop(s: &Stmt) -> Option<&Loop> {
    match &s.expr {
        Expr::Loop(l)
            if l.init.is_empty()
                && s.binds.is_empty()
                && !l.lin_init.is_empty()
                && (!l.rev || is_disjoint_accumulation(l)) =>
        {
            Some(l)
        }
        _ => None,
    }
}

/// How a legal pair fuses: which statements between the loops depend on
/// `L1` (they move after the fused loop), and for each stacked output of
/// `L1` that `L2` reads, the atom `L1`'s body yields for it.
struct Plan {
    after: FastSet<usize>,
    stacks: FastMap<Var, Atom>,
}

/// The plan fusing loops `p` and `q` of `b`, if legal (module doc).
fn plan(b: &Block, p: usize, q: usize) -> Option<Plan> {
    let (s1, s2) = (&b.stmts[p], &b.stmts[q]);
    let (Expr::Loop(l1), Expr::Loop(l2)) = (&s1.expr, &s2.expr) else {
        return None;
    };
    let n_state = l1.init.len();
    let mut tainted: FastSet<Var> = s1.binds.iter().copied().collect();
    let mut after = FastSet::default();
    for (j, s) in b.stmts.iter().enumerate().take(q).skip(p + 1) {
        let fv = free_vars_stmt(s);
        if fv.nl.iter().chain(&fv.lin).any(|v| tainted.contains(v)) {
            after.insert(j);
            tainted.extend(s.binds.iter().chain(&s.lin_binds));
        }
    }
    let fv2 = free_vars_stmt(s2);
    let mut stacks = FastMap::default();
    for v in fv2.nl.iter().chain(&fv2.lin) {
        if !tainted.contains(v) {
            continue;
        }
        // Only a stacked output of `L1`, read at `L2`'s index.
        let pos = s1.binds.iter().position(|b| b == v)?;
        if pos < n_state || !read_at_index(l2, *v) {
            return None;
        }
        stacks.insert(*v, *l1.body.body.results.get(pos)?);
    }
    Some(Plan { after, stacks })
}

/// Whether every read of `st` in `l`'s body is a top-level `index st[k]`
/// at the loop's index `k`.
fn read_at_index(l: &Loop, st: Var) -> bool {
    let Some(&k) = l.body.params.first() else {
        return false;
    };
    let at_k = l
        .body
        .body
        .stmts
        .iter()
        .filter(|s| stack_read(s, st, k))
        .count();
    at_k == count(&counts_of(&l.body.body), st)
}

/// Whether `s` is `let v = index st[k]`.
fn stack_read(s: &Stmt, st: Var, k: Var) -> bool {
    matches!(
        &s.expr,
        Expr::Array(ArrayOp::Index { arr: Atom::Var(a), idx })
            if *a == st && idx.as_slice() == [Atom::Var(k)]
    )
}

/// Fuses loops `p` and `q` of `b` by `plan`: the statements between them
/// that do not depend on `L1`, the fused loop, those that do, the rest.
fn apply(b: &mut Block, p: usize, q: usize, plan: Plan) {
    let (mut head, mut before, mut after, mut tail) = (vec![], vec![], vec![], vec![]);
    let (mut s1, mut s2) = (None, None);
    for (j, s) in std::mem::take(&mut b.stmts).into_iter().enumerate() {
        match j {
            _ if j < p => head.push(s),
            _ if j == p => s1 = Some(s),
            _ if j < q && plan.after.contains(&j) => after.push(s),
            _ if j < q => before.push(s),
            _ if j == q => s2 = Some(s),
            _ => tail.push(s),
        }
    }
    let (Some(s1), Some(s2)) = (s1, s2) else {
        unreachable!("p < q are statements of the block");
    };
    head.extend(before);
    head.push(fuse(s1, s2, &plan.stacks));
    head.extend(after);
    head.extend(tail);
    b.stmts = head;
}

/// The fused loop of `s1` (`L1`) and `s2` (`L2`): `L1`'s index, state and
/// outputs, `L2`'s linear state and outputs, `L2`'s body after `L1`'s with
/// its index renamed and its reads of `stacks` replaced by the yielded atoms.
fn fuse(s1: Stmt, s2: Stmt, stacks: &FastMap<Var, Atom>) -> Stmt {
    let (Expr::Loop(l1), Expr::Loop(l2)) = (s1.expr, s2.expr) else {
        unreachable!("fuse is called on two loops");
    };
    let k = l1.body.params[0];
    let rename: FastMap<Var, Var> = [(l2.body.params[0], k)].into_iter().collect();
    let mut body = l1.body.body;
    for mut s in l2.body.body.stmts {
        rename_stmt(&mut s, &rename);
        let read = match &s.expr {
            Expr::Array(ArrayOp::Index {
                arr: Atom::Var(st), ..
            }) if stack_read(&s, *st, k) => stacks.get(st).copied(),
            _ => None,
        };
        if let Some(a) = read {
            s.expr = Expr::Atom(a);
        }
        body.stmts.push(s);
    }
    body.lin_results = l2.body.body.lin_results;
    Stmt {
        binds: s1.binds,
        lin_binds: s2.lin_binds,
        expr: Expr::Loop(Loop {
            n: l1.n,
            rev: false,
            init: l1.init,
            lin_init: l2.lin_init,
            body: Lambda {
                params: l1.body.params,
                lin_params: l2.body.lin_params,
                body,
            },
        }),
        src: s1.src,
    }
}
