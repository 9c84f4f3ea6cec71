//! A zero row accumulated and then added into an outer accumulator is
//! accumulated in the outer accumulator's row instead.
//!
//! ```text
//! let ; r0 = lzero [k]                                   let ; r = loop k (; a = acc) |j| {
//! let ; r = loop k (; a = r0) |j| {                        ..
//!   ..                                                     let ; a1 = lupdate a[i, j] += v
//!   let ; a1 = lupdate a[j] += v               =>          yield ; a1
//!   yield ; a1                                           }
//! }                                                      let ; t = if c @ [n, k] {
//! let ; t = if c @ [k] {                                   let ; t1 = lupdate r[i, m] += w
//!   let ; t1 = lupdate r[m] += w                           yield ; t1
//!   yield ; t1                                           } else { yield ; r }
//! } else { yield ; r }                                   -- acc2 is t from here on
//! let ; acc2 = lupdate acc[i] += t
//! ```
//!
//! This is what the reverse of a per-row reduction looks like (a per-point
//! log-sum-exp's cotangent spread over its row, then added into the
//! matrix's cotangent): compiled as written, every row takes a zeroed
//! buffer, fills it and adds it into the matrix; in place, the updates go
//! to the matrix's row directly.
//!
//! The chain from `r0` to the final `lupdate acc[idx] += r` may pass
//! through `lupdate x[..] += v` of the chain's value, a loop's linear state
//! (the body's chain from the parameter ends at the same slot's result) and
//! an `if` (both branches' chains end at the same linear result); anything
//! else (a `dup`, a `drop`, a scaling, a read) leaves the program as it is.
//! `acc` and the indices `idx` must be in scope where the chain starts.
//!
//! Equation: each link adds terms to the chain's value, so
//! `chain(r0) = r0 + Δ` with `Δ` independent of `r0`, and
//! `acc + e_idx ⊗ (0 + Δ) = acc with [idx] = acc[idx] + Δ`: the same value
//! up to the order of the additions into `acc[idx]` (bit-identical when that
//! row was zero, as it is in a reverse pass that adds each row once). Linear
//! values only; the chain's variables take `acc`'s type, the indices of its
//! updates are prefixed with `idx`, and an `if`'s shape of the chain's
//! result becomes `acc`'s (found from the binders, as the transposer finds
//! shapes).

use crate::fast_hash::FastMap;
use crate::ir::*;
use crate::transpose::shapes::Binders;
use crate::types::Ty;
use crate::visit::{binders, reads_free_lin, substitute_stmt};

/// Accumulates zero rows in place everywhere in `f`; returns whether
/// anything changed.
pub fn accumulate_in_place(f: &mut Func) -> bool {
    if !has_zero_array(&f.body) {
        return false;
    }
    let shapes = Binders::of(f);
    let Func { body, vars, .. } = f;
    // One rewrite per call: `shapes` describes the function as it was.
    let mut done = false;
    super::rewrite_stmts(body, &mut |b, j| {
        if done {
            return None;
        }
        let p = plan(b, j)?;
        let acc_shape = if flow_has_if(&p.flow) {
            Some(shapes.shape_of(vars, p.acc).ok()?)
        } else {
            None
        };
        apply(b, j, &p, acc_shape.as_ref(), vars);
        done = true;
        // Statement `j` is gone: the next one moved to `j` (visited by the
        // next sweep if this one skips it).
        Some(j)
    })
}

/// Whether some statement of `b` (nested blocks included) is an array `lzero`.
fn has_zero_array(b: &Block) -> bool {
    b.stmts
        .iter()
        .any(|s| zero_array(s) || crate::visit::blocks(&s.expr).any(has_zero_array))
}

/// Whether `s` is `let ; r0 = lzero [..]` (an array).
fn zero_array(s: &Stmt) -> bool {
    matches!(&s.expr, Expr::Lin(LinOp::Zero(ShapeTree::Array(_)))) && s.lin_binds.len() == 1
}

/// A chain to rewrite: how it flows, and the update `acc[idx] += ..` (at
/// statement `term` of the block) that ends it.
struct Plan {
    flow: Flow,
    term: usize,
    acc: Var,
    idx: Vec<Atom>,
}

/// How the chain's value flows through one block.
#[derive(Debug)]
struct Flow {
    /// The statement that reads the block's first chain variable.
    first: usize,
    steps: Vec<Step>,
    /// The linear result the chain ends at (nested blocks), or `None` for
    /// the terminal update of the top block.
    slot: Option<usize>,
}

/// One link of the chain, by statement index in its block.
#[derive(Debug)]
enum Step {
    /// `let ; y = lupdate x[..] += v` with `x` the chain's value.
    Update(usize),
    /// A loop carrying the chain's value in linear state `slot`.
    Loop(usize, usize, Flow),
    /// An `if` whose branches make the chain's value linear result `slot`.
    If(usize, usize, Flow, Flow),
}

fn flow_has_if(f: &Flow) -> bool {
    f.steps.iter().any(|s| match s {
        Step::Update(_) => false,
        Step::Loop(_, _, body) => flow_has_if(body),
        Step::If(..) => true,
    })
}

/// The chain from statement `j` (`let ; r0 = lzero [..]`) to the update
/// of an outer accumulator that ends it; `None` when `j` starts no such
/// chain or the accumulator or its indices are bound after the chain
/// starts.
fn plan(b: &Block, j: usize) -> Option<Plan> {
    let s = &b.stmts[j];
    if !zero_array(s) {
        return None;
    }
    let (flow, term) = follow(b, j + 1, s.lin_binds[0], false)?;
    let Expr::Lin(LinOp::Update { x: acc, idx, .. }) = &b.stmts[term].expr else {
        return None;
    };
    let late = binders(&b.stmts[flow.first..term]);
    if late
        .iter()
        .any(|v| v == acc || idx.contains(&Atom::Var(*v)))
    {
        return None;
    }
    Some(Plan {
        flow,
        term,
        acc: *acc,
        idx: idx.clone(),
    })
}

/// Follows the chain variable `v` through `b` from statement `from`:
/// nested (`nested`) it must end as one of `b`'s linear results (`slot`),
/// at the top as the value added by an update of another array (the
/// returned statement index).
fn follow(b: &Block, from: usize, v: Var, nested: bool) -> Option<(Flow, usize)> {
    let mut cur = v;
    let mut steps = Vec::new();
    let mut first = None;
    let mut p = from;
    loop {
        let Some(q) = (p..b.stmts.len()).find(|&q| reads_free_lin(&b.stmts[q], cur)) else {
            // Not read by a statement: it must be a result of a nested block.
            let slot = b.lin_results.iter().position(|r| *r == cur)?;
            let at_most_once = b.lin_results.iter().filter(|r| **r == cur).count() == 1;
            return (nested && at_most_once).then_some((
                Flow {
                    first: first.unwrap_or(b.stmts.len()),
                    steps,
                    slot: Some(slot),
                },
                b.stmts.len(),
            ));
        };
        if b.lin_results.contains(&cur) {
            return None;
        }
        first.get_or_insert(q);
        let s = &b.stmts[q];
        match &s.expr {
            Expr::Lin(LinOp::Update {
                x, val, add: true, ..
            }) if *x == cur && *val != cur && s.lin_binds.len() == 1 => {
                steps.push(Step::Update(q));
                cur = s.lin_binds[0];
            }
            Expr::Lin(LinOp::Update {
                x, val, add: true, ..
            }) if *val == cur && *x != cur && !nested => {
                let flow = Flow {
                    first: first.unwrap_or(q),
                    steps,
                    slot: None,
                };
                return Some((flow, q));
            }
            Expr::Loop(l) => {
                let k = l.lin_init.iter().position(|x| *x == cur)?;
                let (body, _) = follow(&l.body.body, 0, *l.body.lin_params.get(k)?, true)?;
                if body.slot != Some(k) || s.lin_binds.len() <= k {
                    return None;
                }
                steps.push(Step::Loop(q, k, body));
                cur = s.lin_binds[k];
            }
            Expr::If(i) => {
                let (t, _) = follow(&i.then_, 0, cur, true)?;
                let (e, _) = follow(&i.else_, 0, cur, true)?;
                let k = t.slot?;
                if e.slot != Some(k) || s.lin_binds.len() <= k {
                    return None;
                }
                steps.push(Step::If(q, k, t, e));
                cur = s.lin_binds[k];
            }
            _ => return None,
        }
        p = q + 1;
    }
}

/// Rewrites the chain planned from statement `j`: it starts from the
/// accumulator, its updates index the accumulator's row, its variables
/// take the accumulator's type, the terminal update's result is the
/// chain's last value, and the `lzero` goes.
fn apply(b: &mut Block, j: usize, p: &Plan, acc_shape: Option<&ShapeTree>, vars: &mut VarTable) {
    let (flow, term, acc) = (&p.flow, p.term, p.acc);
    let r0 = b.stmts[j].lin_binds[0];
    let ty = vars.ty(acc).clone();
    let edit = Edit {
        idx: &p.idx,
        acc_shape,
        ty: &ty,
    };
    edit.steps(b, flow, vars);
    let none = FastMap::default();
    substitute_stmt(
        &mut b.stmts[flow.first],
        &none,
        &FastMap::from_iter([(r0, acc)]),
    );
    let Expr::Lin(LinOp::Update { val: last, .. }) = b.stmts[term].expr else {
        unreachable!("plan checked the terminal update")
    };
    let y = b.stmts.remove(term).lin_binds[0];
    let to_last = FastMap::from_iter([(y, last)]);
    for s in &mut b.stmts[term..] {
        substitute_stmt(s, &none, &to_last);
    }
    for v in &mut b.lin_results {
        if *v == y {
            *v = last;
        }
    }
    b.stmts.remove(j);
}

/// What every link of the chain changes.
struct Edit<'a> {
    idx: &'a [Atom],
    acc_shape: Option<&'a ShapeTree>,
    ty: &'a Ty,
}

impl Edit<'_> {
    fn retype(&self, v: Var, vars: &mut VarTable) {
        vars.vars[v.0 as usize].ty = self.ty.clone();
    }

    fn steps(&self, b: &mut Block, flow: &Flow, vars: &mut VarTable) {
        for step in &flow.steps {
            match step {
                Step::Update(q) => {
                    let s = &mut b.stmts[*q];
                    if let Expr::Lin(LinOp::Update { idx, .. }) = &mut s.expr {
                        idx.splice(0..0, self.idx.iter().copied());
                    }
                    self.retype(s.lin_binds[0], vars);
                }
                Step::Loop(q, k, body) => {
                    let s = &mut b.stmts[*q];
                    self.retype(s.lin_binds[*k], vars);
                    if let Expr::Loop(l) = &mut s.expr {
                        self.retype(l.body.lin_params[*k], vars);
                        self.steps(&mut l.body.body, body, vars);
                    }
                }
                Step::If(q, k, t, e) => {
                    let s = &mut b.stmts[*q];
                    self.retype(s.lin_binds[*k], vars);
                    if let Expr::If(i) = &mut s.expr {
                        if let Some(shape) = self.acc_shape {
                            i.lin_shapes[*k] = shape.clone();
                        }
                        self.steps(&mut i.then_, t, vars);
                        self.steps(&mut i.else_, e, vars);
                    }
                }
            }
        }
    }
}
