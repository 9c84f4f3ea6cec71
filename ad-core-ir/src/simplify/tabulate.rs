//! Tabulation: an expensive scalar computed inside a build from only some of
//! its indices is computed once per distinct value of those indices, in a
//! table built before the build, and read back by index.
//!
//! ```text
//! let b = build [n, k] |i, j| {                let tab = build [select(n > 0, k, 0), max(d, 0)] |j', r'| {
//!   let s = loop d (acc = 0.0) |r| {              let e' = index q[j', r']
//!     let e = index q[j, r]                       let x' = exp e'
//!     let x = exp e              ==>              yield x'
//!     ..                                        }
//!   }                                           let b = build [n, k] |i, j| {
//!   ..                                            let s = loop d (acc = 0.0) |r| {
//! }                                                 let x = index tab[j, r]
//!                                                   ..
//! ```
//!
//! A candidate is a statement applying a non-cheap primitive
//! ([`Prim::is_cheap`]: `exp`, `ln`, `sin`, `powf`, ..) at the top level of
//! a build body, or at the top level of a loop that is itself a top-level
//! statement of the build body with a trip count bound outside the build.
//! Its backward slice within that block must be pure non-linear scalar
//! statements (primitives, element reads, shapes, copies) reading only build
//! indices, the loop index and variables bound outside the build, and it must
//! leave out at least one build index (otherwise nothing is saved).
//!
//! Legality: the original evaluates the slice at every combination of the
//! indices it reads, exactly once per combination of those it does not,
//! whenever every index range it does not read is non-empty (the first
//! table extent is zeroed otherwise). So the table evaluates the same
//! operations on the same values: bit-identical results, and a failure (an
//! index out of range, an integer overflow) only where the original fails
//! too. Work drops by the product of the extents left out; memory grows by
//! the table.

use crate::fast_hash::{FastMap, FastSet};
use crate::ir::*;
use crate::types::{Scalar, Ty};
use crate::visit::{binders, blocks_mut, free_vars_stmt, rename_stmt};
use std::collections::BTreeSet;

/// Tabulates every candidate of every build; returns whether anything changed.
pub fn tabulate(f: &mut Func) -> bool {
    let mut vars = std::mem::take(&mut f.vars);
    let changed = tab_block(&mut f.body, &mut vars);
    f.vars = vars;
    changed
}

fn tab_block(b: &mut Block, vars: &mut VarTable) -> bool {
    let mut changed = false;
    for mut s in std::mem::take(&mut b.stmts) {
        for nb in blocks_mut(&mut s.expr) {
            changed |= tab_block(nb, vars);
        }
        if let Expr::Build(bd) = &mut s.expr {
            let tables = tab_build(bd, vars);
            changed |= !tables.is_empty();
            b.stmts.extend(tables);
        }
        b.stmts.push(s);
    }
    changed
}

/// Where candidates are looked for in one build.
struct Site<'a> {
    /// The build's indices and extents.
    idx: &'a [Var],
    shape: &'a [Atom],
    /// Everything bound in the build body (and its indices).
    inner: &'a FastSet<Var>,
    /// The loop index and trip count, for a loop at the body's top level.
    lp: Option<(Var, Atom)>,
}

/// The tables for the candidates of one build (statements to put before it);
/// rewrites each candidate into an element read of its table.
fn tab_build(bd: &mut Build, vars: &mut VarTable) -> Vec<Stmt> {
    let idx = bd.body.params.clone();
    let mut inner: FastSet<Var> = idx.iter().copied().collect();
    inner.extend(binders(&bd.body.body.stmts));
    let mut out = vec![];
    let site = Site {
        idx: &idx,
        shape: &bd.shape,
        inner: &inner,
        lp: None,
    };
    tab_in(&mut bd.body.body.stmts, &site, vars, &mut out);
    for st in bd.body.body.stmts.iter_mut() {
        if let Expr::Loop(l) = &mut st.expr {
            let invariant = l.n.var().is_none_or(|v| !inner.contains(&v));
            if invariant {
                let site = Site {
                    lp: Some((l.body.params[0], l.n)),
                    ..site
                };
                tab_in(&mut l.body.body.stmts, &site, vars, &mut out);
            }
        }
    }
    out
}

/// The backward slice of statement `p` within `stmts` (positions, in
/// order) and its free variables, or `None` when a statement in it is not a
/// [`Stmt::is_scalar_step`].
fn slice_of(stmts: &[Stmt], p: usize, vars: &VarTable) -> Option<(Vec<usize>, BTreeSet<Var>)> {
    let pos: FastMap<Var, usize> = stmts[..=p]
        .iter()
        .enumerate()
        .flat_map(|(q, s)| s.binds.iter().map(move |v| (*v, q)))
        .collect();
    let mut slice = BTreeSet::new();
    let mut free = BTreeSet::new();
    let mut todo = vec![p];
    while let Some(q) = todo.pop() {
        if !slice.insert(q) {
            continue;
        }
        if !stmts[q].is_scalar_step(vars) {
            return None;
        }
        for u in free_vars_stmt(&stmts[q]).nl {
            match pos.get(&u) {
                Some(&q2) => todo.push(q2),
                None => {
                    free.insert(u);
                }
            }
        }
    }
    Some((slice.into_iter().collect(), free))
}

fn tab_in(stmts: &mut [Stmt], site: &Site, vars: &mut VarTable, out: &mut Vec<Stmt>) {
    for p in 0..stmts.len() {
        let expensive = matches!(&stmts[p].expr, Expr::Prim(prim, _) if !prim.is_cheap());
        if !expensive || !stmts[p].is_scalar_step(vars) {
            continue;
        }
        let Some((slice, free)) = slice_of(stmts, p, vars) else {
            continue;
        };
        let r = site.lp.map(|(r, _)| r);
        let outside = |u: &Var| !site.inner.contains(u) || site.idx.contains(u) || Some(*u) == r;
        if !free.iter().all(outside) {
            continue;
        }
        // The table's axes: the build indices read (in order), then the loop index.
        let used: Vec<usize> = (0..site.idx.len())
            .filter(|t| free.contains(&site.idx[*t]))
            .collect();
        let uses_r = r.is_some_and(|r| free.contains(&r));
        if used.len() == site.idx.len() || (used.is_empty() && !uses_r) {
            continue;
        }
        let mut pre = vec![];
        let mut dims: Vec<Atom> = used.iter().map(|t| site.shape[*t]).collect();
        let mut left_out: Vec<Atom> = (0..site.idx.len())
            .filter(|t| !used.contains(t))
            .map(|t| site.shape[t])
            .collect();
        if let Some((_, n)) = site.lp {
            // A loop's trip count may be negative (no iteration).
            let n0 = prim_stmt(vars, &mut pre, Prim::Max, &[n, Atom::I64(0)], Ty::I64);
            if uses_r {
                dims.push(n0);
            } else {
                left_out.push(n0);
            }
        }
        // The first extent is zeroed unless every left-out range is non-empty.
        let mut cond: Option<Atom> = None;
        for e in left_out {
            let g = prim_stmt(vars, &mut pre, Prim::Gt, &[e, Atom::I64(0)], Ty::BOOL);
            cond = Some(match cond {
                None => g,
                Some(c) => prim_stmt(vars, &mut pre, Prim::And, &[c, g], Ty::BOOL),
            });
        }
        if let Some(c) = cond {
            dims[0] = prim_stmt(
                vars,
                &mut pre,
                Prim::Select,
                &[c, dims[0], Atom::I64(0)],
                Ty::I64,
            );
        }
        // The table's body: the slice with fresh binders, the indices renamed.
        let mut ren: FastMap<Var, Var> = FastMap::default();
        let mut params = vec![];
        let axes: Vec<Var> = used
            .iter()
            .map(|t| site.idx[*t])
            .chain(r.filter(|_| uses_r))
            .collect();
        for a in &axes {
            let p = vars.fresh(vars.info(*a).name.clone(), Ty::I64, false);
            ren.insert(*a, p);
            params.push(p);
        }
        let mut body = vec![];
        for q in &slice {
            let mut s = stmts[*q].clone();
            for v in &s.binds {
                let info = vars.info(*v).clone();
                ren.insert(*v, vars.fresh(info.name, info.ty, false));
            }
            rename_stmt(&mut s, &ren);
            s.src = None;
            body.push(s);
        }
        let y = stmts[p].binds[0];
        let elem = vars.ty(y).elem().unwrap_or(Scalar::F64);
        let tab = vars.fresh(
            format!("tab_{}", vars.info(y).name),
            Ty::Array {
                elem,
                rank: dims.len(),
            },
            false,
        );
        pre.push(Stmt {
            binds: vec![tab],
            lin_binds: vec![],
            expr: Expr::Build(Build {
                shape: dims,
                body: Lambda {
                    params,
                    lin_params: vec![],
                    body: Block {
                        stmts: body,
                        results: vec![Atom::Var(ren[&y])],
                        lin_results: vec![],
                    },
                },
            }),
            src: stmts[p].src,
        });
        out.extend(pre);
        stmts[p].expr = Expr::Array(ArrayOp::Index {
            arr: Atom::Var(tab),
            idx: axes.iter().map(|a| Atom::Var(*a)).collect(),
        });
    }
}

/// Appends `let v: ty = prim(args)` to `out`; returns `v`.
fn prim_stmt(vars: &mut VarTable, out: &mut Vec<Stmt>, p: Prim, args: &[Atom], ty: Ty) -> Atom {
    let v = vars.fresh(p.name(), ty, false);
    out.push(Stmt {
        binds: vec![v],
        lin_binds: vec![],
        expr: Expr::Prim(p, args.to_vec()),
        src: None,
    });
    Atom::Var(v)
}
