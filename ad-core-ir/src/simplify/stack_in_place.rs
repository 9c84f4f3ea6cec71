//! Stacked outputs of loop nests written in place: a loop whose
//! per-iteration output is the stack of an inner loop's scalar outputs
//! (residuals of a nest, as unzip makes them) keeps one array for the whole
//! nest as loop state and writes each scalar at its multi-index.
//!
//! ```text
//! let Y = loop n1 () |i| {                let d1 = max n1, 0
//!   let Z = loop n2 () |j| {              let g1 = gt d1, 0
//!     ..                                  let e2 = max n2, 0
//!     yield z                     =>      let d2 = select g1, e2, 0
//!   }                                     let B0 = broadcast 0.0, [d1, d2]
//!   yield Z                               let Y = loop n1 (b = B0) |i, b| {
//! }                                         let b2 = loop n2 (c = b) |j, c| {
//!                                             ..
//!                                             let c1 = update c[i, j] = z
//!                                             yield c1
//!                                           }
//!                                           yield b2
//!                                         }
//! ```
//!
//! Compiled as written, every outer iteration takes a buffer for `Z`, fills
//! it, copies it into `Y`'s stack and gives it back (an LSTM's forward half,
//! three loops deep, spent a fifth of its instructions so); in place, the
//! nest's residual is one array, made once.
//!
//! **Legality.** The chain runs from an outer loop's output `y` through
//! loops: `y` is a stacked output `Z` of a loop statement of the body, used
//! nowhere else in that body, and so on inwards until an output that is a
//! scalar. Every inner trip count is a literal or a variable bound outside
//! the outer loop, so the whole stack's shape is known before it starts.
//!
//! **Equation.** `Y[i1, .., im] = z` at iteration `(i1, .., im)` of the nest
//! (a loop's stack is indexed by the value of its index, forward or
//! reversed), and every element is written once: the final state equals the
//! stack, bit for bit. The sizes follow the stacking rule for empty loops
//! (a loop of no iterations stacks arrays with all sizes 0): axis `k` is
//! `max(n_k, 0)` if every axis before it is positive, else 0.

use super::facts::{count, counts_of, stmt};
use crate::fast_hash::FastSet;
use crate::ir::*;
use crate::types::{Scalar, Ty};
use crate::visit::binders;

/// Writes the stacked outputs of loop nests in place everywhere in `f`;
/// returns whether anything changed. Inner nests first: in a nest three
/// deep, the middle loop's stack of the inner loop's scalars becomes one
/// small array per outer iteration (filled while in cache), which the
/// outer loop's stack copies once; one array for the whole nest would be
/// filled with zeros and then written, twice the residual's memory traffic
/// (an LSTM's gradient, 2.5 MB of residuals: 8% fewer instructions than
/// with the inner pairs, no faster).
pub fn stacks_in_place(f: &mut Func) -> bool {
    let Func { body, vars, .. } = f;
    super::rewrite_stmts(body, &mut |b, j| {
        let (o, chain) = (0..outputs(&b.stmts[j]))
            .find_map(|o| chain_of(&b.stmts[j], o, vars).map(|c| (o, c)))?;
        let added = apply(b, j, o, &chain, vars);
        // The loop moved to `j + added`: the walk tries its other outputs.
        Some(j + added - 1)
    })
}

/// The number of non-linear per-iteration outputs of a loop statement (0
/// for any other statement).
fn outputs(s: &Stmt) -> usize {
    match &s.expr {
        Expr::Loop(l) => l.body.body.results.len().saturating_sub(l.init.len()),
        _ => 0,
    }
}

/// One inner level of a chain: the loop statement of the enclosing body
/// (by index) and which of its outputs is the enclosing output.
struct Level {
    stmt: usize,
    out: usize,
}

/// A nest whose output `o` of the outer loop (`s`) can be written in
/// place: the inner levels, outermost first, and the innermost output's
/// scalar type.
struct Chain {
    levels: Vec<Level>,
    elem: Scalar,
}

/// The chain from output `o` of loop statement `s`, if it is one (module
/// documentation: legality).
fn chain_of(s: &Stmt, o: usize, vars: &VarTable) -> Option<Chain> {
    let Expr::Loop(outer) = &s.expr else {
        return None;
    };
    // The variables bound in the outer loop, found once a level needs them.
    let mut inside: Option<FastSet<Var>> = None;
    let mut levels = vec![];
    let (mut l, mut out) = (outer, o);
    loop {
        let body = &l.body.body;
        let y = body.results[l.init.len() + out].var()?;
        match vars.ty(y) {
            Ty::Scalar(elem) if !levels.is_empty() => {
                return Some(Chain {
                    levels,
                    elem: *elem,
                });
            }
            Ty::Array { .. } => {}
            _ => return None,
        }
        let k = body.stmts.iter().position(|t| t.binds.contains(&y))?;
        let Expr::Loop(inner) = &body.stmts[k].expr else {
            return None;
        };
        let states = inner.init.len();
        let at = body.stmts[k].binds.iter().position(|v| *v == y)?;
        if at < states || count(&counts_of(body), y) != 1 {
            return None;
        }
        if let Atom::Var(n) = inner.n {
            let inside = inside
                .get_or_insert_with(|| binders(std::slice::from_ref(s)).into_iter().collect());
            if inside.contains(&n) {
                return None;
            }
        }
        levels.push(Level {
            stmt: k,
            out: at - states,
        });
        (l, out) = (inner, at - states);
    }
}

/// Rewrites output `o` of the loop at `b.stmts[j]` along `chain`; returns
/// how many statements were inserted before it.
fn apply(b: &mut Block, j: usize, o: usize, chain: &Chain, vars: &mut VarTable) -> usize {
    let src = b.stmts[j].src;
    let rank = chain.levels.len() + 1;
    let ty = Ty::array(chain.elem, rank);
    // The trip counts, outermost first.
    let mut trips = vec![];
    {
        let Expr::Loop(outer) = &b.stmts[j].expr else {
            unreachable!("chain_of found a loop")
        };
        let mut l = outer;
        trips.push(l.n);
        for lv in &chain.levels {
            let Expr::Loop(inner) = &l.body.body.stmts[lv.stmt].expr else {
                unreachable!("chain_of found a loop")
            };
            trips.push(inner.n);
            l = inner;
        }
    }
    // The sizes: `max(n_k, 0)` while every size before is positive.
    let mut pre = vec![];
    let mut dims: Vec<Atom> = vec![];
    for n in trips {
        let e = vars.fresh("ntrip", Ty::I64, false);
        pre.push(stmt(
            vec![e],
            vec![],
            Expr::Prim(Prim::Max, vec![n, Atom::I64(0)]),
            src,
        ));
        let d = match dims.last() {
            None => e,
            Some(prev) => {
                let (g, d) = (
                    vars.fresh("pos", Ty::BOOL, false),
                    vars.fresh("ntrip", Ty::I64, false),
                );
                pre.push(stmt(
                    vec![g],
                    vec![],
                    Expr::Prim(Prim::Gt, vec![*prev, Atom::I64(0)]),
                    src,
                ));
                pre.push(stmt(
                    vec![d],
                    vec![],
                    Expr::Prim(Prim::Select, vec![g.into(), e.into(), Atom::I64(0)]),
                    src,
                ));
                d
            }
        };
        dims.push(d.into());
    }
    let zero = match chain.elem {
        Scalar::F64 => Atom::F64(0.0),
        Scalar::I64 => Atom::I64(0),
        Scalar::Bool => Atom::Bool(false),
    };
    let init = vars.fresh("stk", ty.clone(), false);
    pre.push(stmt(
        vec![init],
        vec![],
        Expr::Array(ArrayOp::Broadcast {
            arr: zero,
            shape: dims,
            axes: vec![],
        }),
        src,
    ));
    // The outer loop: a new last state, the output's binder its final value.
    let s = &mut b.stmts[j];
    let Expr::Loop(l) = &mut s.expr else {
        unreachable!("chain_of found a loop")
    };
    let k = l.init.len();
    let y_final = s.binds.remove(k + o);
    s.binds.insert(k, y_final);
    l.init.push(init.into());
    thread(&mut l.body, o, &chain.levels, &ty, &mut vec![], vars, src);
    let added = pre.len();
    b.stmts.splice(j..j, pre);
    added
}

/// Threads the stack through loop body `lam` (the state parameter made
/// here) whose output `o` is the stack of `levels[0]`'s loop, and so on
/// inwards; `idx` holds the indices of the enclosing loops.
fn thread(
    lam: &mut Lambda,
    o: usize,
    levels: &[Level],
    ty: &Ty,
    idx: &mut Vec<Atom>,
    vars: &mut VarTable,
    src: Option<SrcId>,
) {
    let k = lam.params.len() - 1;
    let p = vars.fresh("stk", ty.clone(), false);
    lam.params.push(p);
    idx.push(lam.params[0].into());
    let body = &mut lam.body;
    let y = body.results.remove(k + o);
    let last = match levels.split_first() {
        // The innermost body: its output is the scalar written.
        None => {
            let w = vars.fresh("stk", ty.clone(), false);
            body.stmts.push(stmt(
                vec![w],
                vec![],
                Expr::Array(ArrayOp::Update {
                    arr: p.into(),
                    idx: idx.clone(),
                    val: y,
                    add: false,
                }),
                src,
            ));
            w
        }
        Some((lv, rest)) => {
            let s = &mut body.stmts[lv.stmt];
            let Expr::Loop(inner) = &mut s.expr else {
                unreachable!("chain_of found a loop")
            };
            let ki = inner.init.len();
            let at = s.binds.iter().position(|v| Atom::Var(*v) == y);
            let at = at.expect("the output is a binder of the level's loop");
            s.binds.remove(at);
            let w = vars.fresh("stk", ty.clone(), false);
            s.binds.insert(ki, w);
            inner.init.push(p.into());
            thread(&mut inner.body, lv.out, rest, ty, idx, vars, src);
            w
        }
    };
    body.results.insert(k, last.into());
    idx.pop();
}
