//! Unzip (partial evaluation): split a Linear A function into a primal function
//! that also returns *residuals* and a Linear B linear function that reads them.
//!
//! `f__jvp(x ; dx) -> (y ; dy)` becomes
//! `f__fwd(x) -> (y, r..)` and `f__lin(r.. ; dx) -> dy`, with
//! `f__jvp(x ; dx) = let (y, r) = f__fwd(x) in (y ; f__lin(r ; dx))`.
//!
//! ```text
//! def f__jvp(x ; dx) {                 def f__fwd(x) {            def f__lin(c ; dx) {
//!   let s = sin x                        let s = sin x              let ; ds = lscale c, dx
//!   let c = cos x                        let c = cos x              return (; ds)
//!   let ; ds = lscale c, dx              return (s, c)            }
//!   return (s ; ds)                    }
//! }
//! ```
//!
//! Rules (statements keep their binders, so both outputs share one variable
//! table and a residual has the same variable in both):
//! - a non-linear statement goes to the primal side; a linear statement (linear
//!   results only, including compound ones whose bodies compute non-linear
//!   values, which are then recomputed) goes to the linear side;
//! - a mixed `if` splits both branches; each branch's residuals are returned
//!   by the primal `if` (the other branch returns placeholders) and the linear
//!   `if` reads them;
//! - a mixed loop returns the residuals of iteration `i` as extra stacked
//!   outputs (`R[i]`, one array per residual: struct of arrays); the linear loop
//!   starts each iteration with `r = R[i]`; a residual that a few cheap
//!   statements compute from `i`, outer values or other stored residuals is
//!   recomputed there instead (see `Unzip::split_stacked`):
//!
//! ```text
//! loop n (s) |i| {               fwd: loop n (s) |i| {          lin: loop n |i| {
//!   let a = index x[i]                  let a = index x[i]            let a = index x[i]
//!   let e = exp a                       let e = exp a                 let e = E[i]
//!   ..  uses a, e                       .. yield s', e  (E)           .. uses a, e
//! }                                   }                             }
//! ```
//! - a mixed build/map returns per-element residuals as extra stacked results
//!   (arrays of the build/map shape); the linear map takes them as extra
//!   element inputs (a map element that is itself a residual is read from the
//!   original input array, not copied);
//! - a mixed call of `g__jvp` becomes `g__fwd` (returning `g`'s residuals) and
//!   `g__lin` reading them;
//! - `shape(v, k)` used by linear code (zeros, result shapes) becomes an `i64`
//!   residual computed on the primal side, so no array is kept alive only for
//!   its shape.

use crate::ir::*;
use crate::types::Ty;
use crate::typing::{atom_ty, func_sig};
use crate::visit::{
    binders, blocks_mut, free_vars_block, free_vars_stmt, lambdas, rename_stmt, substitute_block,
};
use std::collections::{BTreeSet, HashMap};
use std::fmt;

/// An unzip failure (an internal error: every JVP output can be unzipped).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnzipError {
    /// What went wrong.
    pub msg: String,
    /// The statement's source id.
    pub src: Option<SrcId>,
}

impl fmt::Display for UnzipError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.msg)
    }
}

impl std::error::Error for UnzipError {}

/// The base name of a `f__jvp` function (`f`).
pub fn base_name(jvp_name: &str) -> &str {
    jvp_name.strip_suffix("__jvp").unwrap_or(jvp_name)
}

/// Name of the primal-with-residuals function of `f`.
pub fn fwd_name(f: &str) -> String {
    format!("{f}__fwd")
}

/// Name of the linear function of `f`.
pub fn lin_name(f: &str) -> String {
    format!("{f}__lin")
}

/// The result of unzipping one function.
#[derive(Clone, Debug)]
pub struct Unzipped {
    /// `f__fwd(x) -> (y.., r..)`.
    pub fwd: Func,
    /// `f__lin(r.. ; dx..) -> (; dy..)`, Linear B.
    pub lin: Func,
    /// Number of primal results of `fwd` (the residuals follow them).
    pub n_results: usize,
}

/// Unzips a Linear A function `f__jvp`. `prog` must contain the `__fwd` and
/// `__lin` functions of every callee.
pub fn unzip_func(prog: &Program, f: &Func) -> Result<Unzipped, UnzipError> {
    let base = base_name(&f.name).to_string();
    let top: BTreeSet<Var> = f
        .params
        .iter()
        .chain(f.body.stmts.iter().flat_map(|s| &s.binds))
        .copied()
        .collect();
    let mut u = Unzip {
        prog,
        vars: f.vars.clone(),
        depth: 0,
        top,
    };
    let mut prim = vec![];
    let mut lin = vec![];
    // Shapes of the linear parameters become residuals computed first.
    let mut shapes = HashMap::new();
    let lin_param_shapes: Vec<ShapeTree> = f
        .lin_param_shapes
        .iter()
        .map(|s| u.residual_shape(s, &mut prim, &mut shapes))
        .collect();
    u.split(&f.body.stmts, &mut prim, &mut lin, &mut shapes)?;
    let lin_block = Block {
        stmts: lin,
        results: vec![],
        lin_results: f.body.lin_results.clone(),
    };
    let mut needed = free_vars_block(&lin_block).nl;
    for s in &lin_param_shapes {
        shape_vars(s, &mut needed);
    }
    let residuals: Vec<Var> = needed.into_iter().collect();
    let mut results = f.body.results.clone();
    results.extend(residuals.iter().map(|v| Atom::Var(*v)));
    let fwd = Func {
        name: fwd_name(&base),
        params: f.params.clone(),
        lin_params: vec![],
        lin_param_shapes: vec![],
        body: Block {
            stmts: prim,
            results,
            lin_results: vec![],
        },
        vars: u.vars.clone(),
    };
    let lin = Func {
        name: lin_name(&base),
        params: residuals,
        lin_params: f.lin_params.clone(),
        lin_param_shapes,
        body: lin_block,
        vars: u.vars,
    };
    Ok(Unzipped {
        fwd,
        lin,
        n_results: f.body.results.len(),
    })
}

fn shape_vars(s: &ShapeTree, out: &mut BTreeSet<Var>) {
    match s {
        ShapeTree::Scalar => {}
        ShapeTree::Array(ds) => {
            for d in ds {
                match d {
                    Dim::Atom(Atom::Var(v)) | Dim::Of(v, _) => {
                        out.insert(*v);
                    }
                    Dim::Atom(_) => {}
                }
            }
        }
        ShapeTree::Tuple(ts) => ts.iter().for_each(|t| shape_vars(t, out)),
    }
}

struct Unzip<'p> {
    prog: &'p Program,
    vars: VarTable,
    /// How many blocks deep the statements being split are (0: the
    /// function's body, where an extern call may keep its residuals).
    depth: usize,
    /// The values the linear side can read anywhere without a stack: the
    /// function's parameters and what its body binds at the top level.
    top: BTreeSet<Var>,
}

/// A loop, build or map body being split: its primal statements, which
/// statement binds each variable, its parameters, and those of them the
/// linear side has without a stack (loop index, build indices, map
/// elements).
struct Body<'a> {
    prim: &'a [Stmt],
    binder: &'a HashMap<Var, usize>,
    params: &'a [Var],
    free_params: &'a [Var],
}

/// A split nested block: primal statements, linear statements, residuals.
type Split = (Vec<Stmt>, Vec<Stmt>, Vec<Var>);

/// The primal side of a stacked construct returning residuals: its body
/// results, its binders and the new stack variables.
type StackedOutputs = (Vec<Atom>, Vec<Var>, Vec<Var>);

/// `(v, axis) -> i64 residual` computed on the primal side of the current block.
type ShapeCache = HashMap<(Var, usize), Var>;

impl<'p> Unzip<'p> {
    fn err(&self, msg: impl Into<String>, src: Option<SrcId>) -> UnzipError {
        UnzipError {
            msg: msg.into(),
            src,
        }
    }

    /// Rewrites `Dim::Of(v, k)` into an `i64` variable computed by a `shape`
    /// statement appended to `prim`.
    fn residual_shape(
        &mut self,
        s: &ShapeTree,
        prim: &mut Vec<Stmt>,
        cache: &mut ShapeCache,
    ) -> ShapeTree {
        match s {
            ShapeTree::Scalar => ShapeTree::Scalar,
            ShapeTree::Tuple(ts) => ShapeTree::Tuple(
                ts.iter()
                    .map(|t| self.residual_shape(t, prim, cache))
                    .collect(),
            ),
            ShapeTree::Array(ds) => ShapeTree::Array(
                ds.iter()
                    .map(|d| match d {
                        Dim::Atom(a) => Dim::Atom(*a),
                        Dim::Of(v, k) => Dim::Atom(Atom::Var(self.shape_var(*v, *k, prim, cache))),
                    })
                    .collect(),
            ),
        }
    }

    fn shape_var(&mut self, v: Var, k: usize, prim: &mut Vec<Stmt>, cache: &mut ShapeCache) -> Var {
        if let Some(s) = cache.get(&(v, k)) {
            return *s;
        }
        let s = self.vars.fresh("n", Ty::I64, false);
        prim.push(Stmt {
            binds: vec![s],
            lin_binds: vec![],
            expr: Expr::Array(ArrayOp::Shape {
                arr: Atom::Var(v),
                axis: k,
            }),
            src: None,
        });
        cache.insert((v, k), s);
        s
    }

    /// Rewrites the `Dim::Of` of variables free in a linear statement into
    /// primal-side shape residuals (variables bound inside it stay symbolic).
    fn residualise_dims(&mut self, s: &mut Stmt, prim: &mut Vec<Stmt>, cache: &mut ShapeCache) {
        let free = free_vars_stmt(s).nl;
        let own: BTreeSet<Var> = s.binds.iter().copied().collect();
        self.dims_in_stmt(s, &free, &own, prim, cache);
    }

    fn dims_in_stmt(
        &mut self,
        s: &mut Stmt,
        free: &BTreeSet<Var>,
        own: &BTreeSet<Var>,
        prim: &mut Vec<Stmt>,
        cache: &mut ShapeCache,
    ) {
        let mut fix = |u: &mut Self, t: &mut ShapeTree| {
            let mut todo = vec![];
            collect_of(t, &mut todo);
            for (v, k) in todo {
                if free.contains(&v) || own.contains(&v) {
                    let sv = u.shape_var(v, k, prim, cache);
                    replace_of(t, v, k, sv);
                }
            }
        };
        match &mut s.expr {
            Expr::Lin(LinOp::Zero(t)) => fix(self, t),
            Expr::Call(c) => c.lin_shapes.iter_mut().for_each(|t| fix(self, t)),
            Expr::If(i) => i.lin_shapes.iter_mut().for_each(|t| fix(self, t)),
            _ => {}
        }
        for blk in blocks_mut(&mut s.expr) {
            for st in &mut blk.stmts {
                self.dims_in_stmt(st, free, own, prim, cache);
            }
        }
    }

    /// Splits statements into the primal side and the linear side.
    fn split(
        &mut self,
        stmts: &[Stmt],
        prim: &mut Vec<Stmt>,
        lin: &mut Vec<Stmt>,
        cache: &mut ShapeCache,
    ) -> Result<(), UnzipError> {
        for s in stmts {
            if !has_linear(s) {
                prim.push(s.clone());
            } else if s.binds.is_empty() {
                let mut s = s.clone();
                self.linearize_nested(&mut s)?;
                self.residualise_dims(&mut s, prim, cache);
                lin.push(s);
            } else {
                match &s.expr {
                    Expr::If(i) => self.split_if(s, i, prim, lin, cache)?,
                    Expr::Loop(l) => self.split_loop(s, l, prim, lin)?,
                    Expr::Build(b) => self.split_build(s, b, prim, lin)?,
                    Expr::Map(m) => self.split_map(s, m, prim, lin)?,
                    Expr::Call(c) => self.split_call(s, c, prim, lin, cache)?,
                    Expr::Atom(_)
                    | Expr::Prim(..)
                    | Expr::Array(_)
                    | Expr::Tuple(_)
                    | Expr::Untuple(_)
                    | Expr::Lin(_)
                    | Expr::Fold(_)
                    | Expr::While(_) => {
                        return Err(self.err(
                            "internal: a simple statement mixes non-linear and linear values",
                            s.src,
                        ))
                    }
                }
            }
        }
        Ok(())
    }

    /// [`Unzip::split`] of the statements of a nested block (one level
    /// deeper: a call there keeps no residuals).
    fn split_inner(
        &mut self,
        stmts: &[Stmt],
        prim: &mut Vec<Stmt>,
        lin: &mut Vec<Stmt>,
        cache: &mut ShapeCache,
    ) -> Result<(), UnzipError> {
        self.depth += 1;
        let split = self.split(stmts, prim, lin, cache);
        self.depth -= 1;
        split
    }

    /// A compound statement moving to the linear side whole may still contain
    /// mixed statements (e.g. a call whose primal result became dead): split
    /// each nested block and keep both halves inside it, so the primal half is
    /// recomputed on the linear side and every statement is Linear B.
    fn linearize_nested(&mut self, s: &mut Stmt) -> Result<(), UnzipError> {
        for blk in blocks_mut(&mut s.expr) {
            let mut prim = vec![];
            let mut lin = vec![];
            let mut cache = ShapeCache::new();
            let stmts = std::mem::take(&mut blk.stmts);
            self.split_inner(&stmts, &mut prim, &mut lin, &mut cache)?;
            // Both halves now live in one function: the primal half gets
            // fresh binders (the split reuses binders across the two sides).
            blk.stmts = self.with_fresh_copy(prim, lin);
        }
        Ok(())
    }

    /// `copy ++ rest`, where `copy` (statements that also exist elsewhere in
    /// the function, or whose split counterpart reuses their binders) gets
    /// fresh variables for every binder, and `rest`'s reads of `copy`'s
    /// top-level results follow the renaming. Nested binders of `copy` are
    /// renamed only inside it (they may reappear in `rest` as lambda
    /// parameters or stack reads of the linear half).
    fn with_fresh_copy(&mut self, mut copy: Vec<Stmt>, rest: Vec<Stmt>) -> Vec<Stmt> {
        let mut ren: HashMap<Var, Var> = HashMap::new();
        for v in binders(&copy) {
            let info = self.vars.info(v).clone();
            ren.insert(v, self.vars.fresh(info.name, info.ty, info.linear));
        }
        let top: BTreeSet<Var> = copy.iter().flat_map(|s| s.binds.iter().copied()).collect();
        for st in &mut copy {
            rename_stmt(st, &ren);
        }
        let uses: HashMap<Var, Atom> = ren
            .iter()
            .filter(|(k, _)| top.contains(k))
            .map(|(k, v)| (*k, Atom::Var(*v)))
            .collect();
        let mut rest = Block {
            stmts: rest,
            results: vec![],
            lin_results: vec![],
        };
        substitute_block(&mut rest, &uses, &HashMap::new());
        copy.extend(rest.stmts);
        copy
    }

    /// Splits a nested block: `(primal stmts, linear stmts, residuals bound on
    /// the primal side of this block or among `params` that the linear side reads)`.
    fn split_nested(&mut self, b: &Block, params: &[Var]) -> Result<Split, UnzipError> {
        let mut prim = vec![];
        let mut lin = vec![];
        let mut cache = ShapeCache::new();
        self.split_inner(&b.stmts, &mut prim, &mut lin, &mut cache)?;
        let lin_block = Block {
            stmts: lin.clone(),
            results: vec![],
            lin_results: b.lin_results.clone(),
        };
        let free = free_vars_block(&lin_block).nl;
        let mut local: BTreeSet<Var> = params.iter().copied().collect();
        for s in &prim {
            local.extend(s.binds.iter().copied());
        }
        let res: Vec<Var> = free.into_iter().filter(|v| local.contains(v)).collect();
        Ok((prim, lin, res))
    }

    /// Splits the body of a loop, build or map, whose residuals are stacked.
    ///
    /// Residual policy: broadcasts (views in compiled code) are recomputed
    /// from their source, stored in their place when the body computes it;
    /// scalars computed in the body by a short chain of
    /// cheap statements from the free parameters (`free_params`: loop index,
    /// build indices, map elements), from values outside the body or from
    /// stored residuals are *recomputed* on the linear side ([`cheap_slice`]:
    /// a reload and a few arithmetic operations cost less than a stack write
    /// and read); other scalars computed in the body, parameters (loop state,
    /// map elements) and — in loops (`stack_arrays`; not in maps, whose
    /// operands all have the map's rank, nor yet in builds, whose emitted
    /// form stacks scalar elements only) — arrays whose shape is the same
    /// in every iteration ([`fixed_shape_vars`], the residual stacks of a
    /// nested loop with a fixed trip count included) are *stored* (stacked); other arrays computed in
    /// the body are *recomputed* on the linear side from a backward slice of
    /// the primal body (the slice stops at stored residuals and parameters),
    /// so stacks are never ragged and map operands keep the map's rank.
    /// Returns `(primal, slice ++ linear, stored residuals)`.
    fn split_stacked(
        &mut self,
        b: &Block,
        params: &[Var],
        free_params: &[Var],
        stack_arrays: bool,
    ) -> Result<Split, UnzipError> {
        let (prim, lin, res) = self.split_nested(b, params)?;
        let binder: HashMap<Var, usize> = prim
            .iter()
            .enumerate()
            .flat_map(|(k, s)| s.binds.iter().map(move |v| (*v, k)))
            .collect();
        let is_array = |u: &Self, v: Var| u.vars.ty(v).rank().is_none_or(|r| r > 0);
        let fixed = if stack_arrays {
            fixed_shape_vars(&prim, params, &self.vars)
        } else {
            BTreeSet::new()
        };
        let mut stored: BTreeSet<Var> = BTreeSet::new();
        let mut todo: Vec<Var> = vec![];
        let mut scalars: Vec<Var> = vec![];
        let mut broadcasts: Vec<Var> = vec![];
        for &v in &res {
            if binder.contains_key(&v) && is_array(self, v) && !fixed.contains(&v) {
                todo.push(v);
            } else if fixed.contains(&v)
                && binder.get(&v).is_some_and(|k| {
                    matches!(prim[*k].expr, Expr::Array(ArrayOp::Broadcast { .. }))
                })
            {
                broadcasts.push(v);
            } else if binder.contains_key(&v) && !is_array(self, v) {
                scalars.push(v);
            } else {
                stored.insert(v);
            }
        }
        // Scalars: recompute cheap chains, store the rest. The non-cheap ones
        // are decided first, so that a cheap chain may start from them.
        let (cheap, dear): (Vec<Var>, Vec<Var>) = scalars
            .into_iter()
            .partition(|v| is_cheap_stmt(&prim[binder[v]], &self.vars));
        stored.extend(dear);
        let body = Body {
            prim: &prim,
            binder: &binder,
            params,
            free_params,
        };
        for v in cheap {
            if cheap_slice(v, &body, &stored, &self.top, &self.vars) {
                todo.push(v);
            } else {
                stored.insert(v);
            }
        }
        // Broadcasts (views in compiled code): recomputed from their
        // source, which is stored instead when the body computes it (it is
        // never larger), if their sizes are cheap to recompute.
        for v in broadcasts {
            let Expr::Array(ArrayOp::Broadcast { arr, shape, .. }) = &prim[binder[&v]].expr else {
                continue;
            };
            let src = arr.var().filter(|u| binder.contains_key(u));
            let sizes_cheap = shape.iter().filter_map(Atom::var).all(|u| {
                !binder.contains_key(&u)
                    || stored.contains(&u)
                    || cheap_slice(u, &body, &stored, &self.top, &self.vars)
            });
            if sizes_cheap && src.is_none_or(|u| fixed.contains(&u)) {
                stored.extend(src);
                todo.push(v);
            } else {
                stored.insert(v);
            }
        }
        let mut slice: BTreeSet<usize> = BTreeSet::new();
        while let Some(v) = todo.pop() {
            let k = binder[&v];
            if !slice.insert(k) {
                continue;
            }
            for u in free_vars_stmt(&prim[k]).nl {
                if stored.contains(&u) {
                    continue;
                }
                if binder.contains_key(&u) {
                    todo.push(u);
                } else if params.contains(&u) {
                    stored.insert(u);
                }
            }
        }
        // The slice is a second copy of primal statements: fresh binders.
        let copy: Vec<Stmt> = slice.iter().map(|k| prim[*k].clone()).collect();
        let out = self.with_fresh_copy(copy, lin);
        Ok((prim, out, stored.into_iter().collect()))
    }

    fn placeholder(&mut self, ty: &Ty, stmts: &mut Vec<Stmt>) -> Result<Atom, UnzipError> {
        Ok(match ty {
            Ty::Scalar(crate::types::Scalar::F64) => Atom::F64(0.0),
            Ty::Scalar(crate::types::Scalar::I64) => Atom::I64(0),
            Ty::Scalar(crate::types::Scalar::Bool) => Atom::Bool(false),
            Ty::Array { elem, rank } => {
                let zero = match elem {
                    crate::types::Scalar::F64 => Atom::F64(0.0),
                    crate::types::Scalar::I64 => Atom::I64(0),
                    crate::types::Scalar::Bool => Atom::Bool(false),
                };
                let v = self.vars.fresh("empty", ty.clone(), false);
                stmts.push(Stmt {
                    binds: vec![v],
                    lin_binds: vec![],
                    expr: Expr::Array(ArrayOp::Broadcast {
                        arr: zero,
                        shape: vec![Atom::I64(0); *rank],
                        axes: vec![],
                    }),
                    src: None,
                });
                Atom::Var(v)
            }
            Ty::Tuple(_) | Ty::Opaque(_) => {
                return Err(self.err(
                    format!("internal: a residual of type {ty} in a branch"),
                    None,
                ))
            }
        })
    }

    fn split_if(
        &mut self,
        s: &Stmt,
        i: &If,
        prim: &mut Vec<Stmt>,
        lin: &mut Vec<Stmt>,
        cache: &mut ShapeCache,
    ) -> Result<(), UnzipError> {
        let (mut p1, l1, r1) = self.split_nested(&i.then_, &[])?;
        let (mut p2, l2, r2) = self.split_nested(&i.else_, &[])?;
        let mut res1: Vec<Atom> = i.then_.results.clone();
        let mut res2: Vec<Atom> = i.else_.results.clone();
        res1.extend(r1.iter().map(|v| Atom::Var(*v)));
        for v in &r2 {
            let t = self.vars.ty(*v).clone();
            res1.push(self.placeholder(&t, &mut p1)?);
        }
        for v in &r1 {
            let t = self.vars.ty(*v).clone();
            res2.push(self.placeholder(&t, &mut p2)?);
        }
        res2.extend(r2.iter().map(|v| Atom::Var(*v)));
        // Outer variables receiving the residuals.
        let mut ren: HashMap<Var, Atom> = HashMap::new();
        let mut binds = s.binds.clone();
        for v in r1.iter().chain(&r2) {
            let info = self.vars.info(*v).clone();
            let o = self.vars.fresh(info.name, info.ty, false);
            ren.insert(*v, Atom::Var(o));
            binds.push(o);
        }
        prim.push(Stmt {
            binds,
            lin_binds: vec![],
            expr: Expr::If(If {
                cond: i.cond,
                then_: Block {
                    stmts: p1,
                    results: res1,
                    lin_results: vec![],
                },
                else_: Block {
                    stmts: p2,
                    results: res2,
                    lin_results: vec![],
                },
                lin_shapes: vec![],
            }),
            src: s.src,
        });
        let none = HashMap::new();
        let mut then_ = Block {
            stmts: l1,
            results: vec![],
            lin_results: i.then_.lin_results.clone(),
        };
        let mut else_ = Block {
            stmts: l2,
            results: vec![],
            lin_results: i.else_.lin_results.clone(),
        };
        substitute_block(&mut then_, &ren, &none);
        substitute_block(&mut else_, &ren, &none);
        let mut ls = Stmt {
            binds: vec![],
            lin_binds: s.lin_binds.clone(),
            expr: Expr::If(If {
                cond: i.cond,
                then_,
                else_,
                lin_shapes: i.lin_shapes.clone(),
            }),
            src: s.src,
        };
        let own: BTreeSet<Var> = s.binds.iter().copied().collect();
        let free = free_vars_stmt(&ls).nl;
        self.dims_top(&mut ls, &free, &own, prim, cache);
        lin.push(ls);
        Ok(())
    }

    /// Residualises the `Dim::Of` in the top-level shapes of a split statement
    /// (its own `lin_shapes` may name the primal statement's results).
    fn dims_top(
        &mut self,
        s: &mut Stmt,
        free: &BTreeSet<Var>,
        own: &BTreeSet<Var>,
        prim: &mut Vec<Stmt>,
        cache: &mut ShapeCache,
    ) {
        let shapes: Vec<&mut ShapeTree> = match &mut s.expr {
            Expr::Call(c) => c.lin_shapes.iter_mut().collect(),
            Expr::If(i) => i.lin_shapes.iter_mut().collect(),
            _ => vec![],
        };
        for t in shapes {
            let mut todo = vec![];
            collect_of(t, &mut todo);
            for (v, k) in todo {
                if free.contains(&v) || own.contains(&v) {
                    let sv = self.shape_var(v, k, prim, cache);
                    replace_of(t, v, k, sv);
                }
            }
        }
    }

    /// The primal side of a stacked construct that also returns the residuals
    /// `rs`: `(body results ++ rs, binders ++ stacks, stacks)`, the stacks
    /// being fresh outer variables with `extra` leading axes.
    fn stack_outputs(
        &mut self,
        rs: &[Var],
        extra: usize,
        results: &[Atom],
        binds: &[Var],
    ) -> Result<StackedOutputs, UnzipError> {
        let stacks = self.stacked_vars(rs, extra)?;
        let mut results = results.to_vec();
        results.extend(rs.iter().map(|v| Atom::Var(*v)));
        let mut binds = binds.to_vec();
        binds.extend(&stacks);
        Ok((results, binds, stacks))
    }

    /// Stacks residuals `rs` by `extra` leading axes: fresh outer variables.
    fn stacked_vars(&mut self, rs: &[Var], extra: usize) -> Result<Vec<Var>, UnzipError> {
        rs.iter()
            .map(|v| {
                let info = self.vars.info(*v).clone();
                let t = info.ty.stacked(extra).ok_or_else(|| {
                    self.err(
                        format!(
                            "internal: residual {} of tuple type {} cannot be stacked",
                            info.name, info.ty
                        ),
                        None,
                    )
                })?;
                Ok(self.vars.fresh(format!("{}_s", info.name), t, false))
            })
            .collect()
    }

    fn split_loop(
        &mut self,
        s: &Stmt,
        l: &Loop,
        prim: &mut Vec<Stmt>,
        lin: &mut Vec<Stmt>,
    ) -> Result<(), UnzipError> {
        let i = l.body.params[0];
        let (pb, lb, res) = self.split_stacked(&l.body.body, &l.body.params, &[i], true)?;
        let res: Vec<Var> = res.into_iter().filter(|v| *v != i).collect();
        let (results, binds, stacks) =
            self.stack_outputs(&res, 1, &l.body.body.results, &s.binds)?;
        prim.push(Stmt {
            binds,
            lin_binds: vec![],
            expr: Expr::Loop(Loop {
                n: l.n,
                rev: l.rev,
                init: l.init.clone(),
                lin_init: vec![],
                body: Lambda {
                    params: l.body.params.clone(),
                    lin_params: vec![],
                    body: Block {
                        stmts: pb,
                        results,
                        lin_results: vec![],
                    },
                },
            }),
            src: s.src,
        });
        let mut stmts = stack_reads(&res, &stacks, &[Atom::Var(i)]);
        stmts.extend(lb);
        lin.push(Stmt {
            binds: vec![],
            lin_binds: s.lin_binds.clone(),
            expr: Expr::Loop(Loop {
                n: l.n,
                rev: l.rev,
                init: vec![],
                lin_init: l.lin_init.clone(),
                body: Lambda {
                    params: vec![i],
                    lin_params: l.body.lin_params.clone(),
                    body: Block {
                        stmts,
                        results: vec![],
                        lin_results: l.body.body.lin_results.clone(),
                    },
                },
            }),
            src: s.src,
        });
        Ok(())
    }

    fn split_build(
        &mut self,
        s: &Stmt,
        b: &Build,
        prim: &mut Vec<Stmt>,
        lin: &mut Vec<Stmt>,
    ) -> Result<(), UnzipError> {
        let idx = &b.body.params;
        let (pb, lb, res) = self.split_stacked(&b.body.body, idx, idx, false)?;
        let res: Vec<Var> = res.into_iter().filter(|v| !idx.contains(v)).collect();
        let (results, binds, stacks) =
            self.stack_outputs(&res, idx.len(), &b.body.body.results, &s.binds)?;
        prim.push(Stmt {
            binds,
            lin_binds: vec![],
            expr: Expr::Build(Build {
                shape: b.shape.clone(),
                body: Lambda {
                    params: idx.clone(),
                    lin_params: vec![],
                    body: Block {
                        stmts: pb,
                        results,
                        lin_results: vec![],
                    },
                },
            }),
            src: s.src,
        });
        let iatoms: Vec<Atom> = idx.iter().map(|v| Atom::Var(*v)).collect();
        let mut stmts = stack_reads(&res, &stacks, &iatoms);
        stmts.extend(lb);
        lin.push(Stmt {
            binds: vec![],
            lin_binds: s.lin_binds.clone(),
            expr: Expr::Build(Build {
                shape: b.shape.clone(),
                body: Lambda {
                    params: idx.clone(),
                    lin_params: vec![],
                    body: Block {
                        stmts,
                        results: vec![],
                        lin_results: b.body.body.lin_results.clone(),
                    },
                },
            }),
            src: s.src,
        });
        Ok(())
    }

    fn split_map(
        &mut self,
        s: &Stmt,
        m: &Map,
        prim: &mut Vec<Stmt>,
        lin: &mut Vec<Stmt>,
    ) -> Result<(), UnzipError> {
        let params = &m.body.params;
        let (pb, lb, res) = self.split_stacked(&m.body.body, params, params, false)?;
        // Element parameters read by the linear side come from the input arrays.
        let mut arrs = vec![];
        let mut lparams = vec![];
        for (a, p) in m.arrs.iter().zip(params) {
            if res.contains(p) {
                arrs.push(*a);
                lparams.push(*p);
            }
        }
        let computed: Vec<Var> = res.into_iter().filter(|v| !params.contains(v)).collect();
        let rank = m
            .arrs
            .first()
            .map(|a| atom_ty(a, &self.vars))
            .or_else(|| m.lin_arrs.first().map(|v| self.vars.ty(*v).clone()))
            .and_then(|t| t.rank())
            .unwrap_or(1);
        let (results, binds, stacks) =
            self.stack_outputs(&computed, rank, &m.body.body.results, &s.binds)?;
        prim.push(Stmt {
            binds,
            lin_binds: vec![],
            expr: Expr::Map(Map {
                arrs: m.arrs.clone(),
                lin_arrs: vec![],
                body: Lambda {
                    params: params.clone(),
                    lin_params: vec![],
                    body: Block {
                        stmts: pb,
                        results,
                        lin_results: vec![],
                    },
                },
            }),
            src: s.src,
        });
        arrs.extend(stacks.iter().map(|v| Atom::Var(*v)));
        lparams.extend(&computed);
        if arrs.is_empty() && m.lin_arrs.is_empty() {
            // Keep the index space: iterate over the first input, ignoring it.
            let a = m.arrs[0];
            let t = atom_ty(&a, &self.vars);
            let e = t.unstacked(t.rank().unwrap_or(0)).unwrap_or(t);
            arrs.push(a);
            lparams.push(self.vars.fresh("unused", e, false));
        }
        lin.push(Stmt {
            binds: vec![],
            lin_binds: s.lin_binds.clone(),
            expr: Expr::Map(Map {
                arrs,
                lin_arrs: m.lin_arrs.clone(),
                body: Lambda {
                    params: lparams,
                    lin_params: m.body.lin_params.clone(),
                    body: Block {
                        stmts: lb,
                        results: vec![],
                        lin_results: m.body.body.lin_results.clone(),
                    },
                },
            }),
            src: s.src,
        });
        Ok(())
    }

    fn split_call(
        &mut self,
        s: &Stmt,
        c: &Call,
        prim: &mut Vec<Stmt>,
        lin: &mut Vec<Stmt>,
        cache: &mut ShapeCache,
    ) -> Result<(), UnzipError> {
        let base = base_name(&c.func).to_string();
        if self.prog.is_extern(&base) {
            return self.split_extern_call(s, c, &base, prim, lin, cache);
        }
        let fwd = self.prog.func(&fwd_name(&base)).ok_or_else(|| {
            self.err(
                format!("internal: `{}` not unzipped before its caller", c.func),
                s.src,
            )
        })?;
        let (_, _, results, _) = func_sig(fwd);
        let rtys = results[s.binds.len()..].to_vec();
        let rs: Vec<Var> = rtys
            .into_iter()
            .map(|t| self.vars.fresh("rcall", t, false))
            .collect();
        let mut binds = s.binds.clone();
        binds.extend(&rs);
        prim.push(Stmt {
            binds,
            lin_binds: vec![],
            expr: Expr::Call(Call {
                func: fwd_name(&base),
                args: c.args.clone(),
                lin_args: vec![],
                lin_shapes: vec![],
            }),
            src: s.src,
        });
        let mut ls = Stmt {
            binds: vec![],
            lin_binds: s.lin_binds.clone(),
            expr: Expr::Call(Call {
                func: lin_name(&base),
                args: rs.iter().map(|v| Atom::Var(*v)).collect(),
                lin_args: c.lin_args.clone(),
                lin_shapes: c.lin_shapes.clone(),
            }),
            src: s.src,
        };
        let own: BTreeSet<Var> = s.binds.iter().copied().collect();
        let free = free_vars_stmt(&ls).nl;
        self.dims_top(&mut ls, &free, &own, prim, cache);
        lin.push(ls);
        Ok(())
    }
}

impl<'p> Unzip<'p> {
    /// A call of an extern `g`: the primal side calls `g`, the linear side
    /// calls `g__lin(args ; dargs)`, which recomputes what it needs from the
    /// arguments (so the arguments are the residuals). At the top level of
    /// the function, where `g` keeps its residuals
    /// ([`crate::driver::declare_extern_residuals`]), the primal side calls
    /// `y, r = g__fwdres(args)` and the linear side `g__linres(r ; dargs)`:
    /// `g`'s primal is not recomputed.
    fn split_extern_call(
        &mut self,
        s: &Stmt,
        c: &Call,
        base: &str,
        prim: &mut Vec<Stmt>,
        lin: &mut Vec<Stmt>,
        cache: &mut ShapeCache,
    ) -> Result<(), UnzipError> {
        let names = crate::driver::Names::of(base);
        // The type of the residuals `g__fwdres` keeps (`g__linres`'s one
        // non-linear parameter), where they are used.
        let kept = match (self.depth, self.prog.func(&names.linres)) {
            (0, Some(f)) => f.params.first().map(|r| f.vars.ty(*r).clone()),
            _ => None,
        };
        let (prim_func, binds, lin_func, lin_args) = match kept {
            Some(res_ty) => {
                let r = self.vars.fresh("rcall", res_ty, false);
                let mut binds = s.binds.clone();
                binds.push(r);
                (names.fwdres, binds, names.linres, vec![Atom::Var(r)])
            }
            _ => (
                base.to_string(),
                s.binds.clone(),
                lin_name(base),
                c.args.clone(),
            ),
        };
        prim.push(Stmt {
            binds,
            lin_binds: vec![],
            expr: Expr::Call(Call {
                func: prim_func,
                args: c.args.clone(),
                lin_args: vec![],
                lin_shapes: vec![],
            }),
            src: s.src,
        });
        let mut ls = Stmt {
            binds: vec![],
            lin_binds: s.lin_binds.clone(),
            expr: Expr::Call(Call {
                func: lin_func,
                args: lin_args,
                lin_args: c.lin_args.clone(),
                lin_shapes: c.lin_shapes.clone(),
            }),
            src: s.src,
        };
        let own: BTreeSet<Var> = s.binds.iter().copied().collect();
        let free = free_vars_stmt(&ls).nl;
        self.dims_top(&mut ls, &free, &own, prim, cache);
        lin.push(ls);
        Ok(())
    }
}

/// The largest rank of a nested loop's result that is stored across an
/// enclosing loop (whose stack adds one axis; the emitter supports rank 6).
const MAX_STACKED_RANK: usize = 5;

/// Variables bound by `body` (a loop, build or map body with parameters
/// `params`) that are the same in every iteration in the sense that matters
/// for stacking: arrays whose *shape* is fixed and scalars whose *value* is
/// fixed (so they can serve as fixed sizes). Variables from outside the body
/// and literals are fixed; loop-carried arrays keep their shape by
/// construction; shape-preserving operations of fixed-shape arrays, builds and
/// broadcasts to fixed sizes, `shape()` of fixed-shape arrays and primitives
/// of fixed scalars are fixed, and so are the results of a counted loop with
/// a fixed trip count and fixed initial state whose stacked outputs are
/// fixed in its own body (their shape is then the trip count by a fixed
/// element shape: what stores a nested loop's residual stacks instead of
/// recomputing the loop nest in every outer iteration of the reverse pass).
/// Everything else (indexed elements, reductions to scalars, calls,
/// branches) is conservatively not.
pub fn fixed_shape_vars(body: &[Stmt], params: &[Var], vars: &VarTable) -> BTreeSet<Var> {
    fixed_in(body, params, vars, &BTreeSet::new())
}

/// [`fixed_shape_vars`] of a nested body: `unfixed` are variables of the
/// enclosing bodies that are not fixed there (so not here either).
fn fixed_in(
    body: &[Stmt],
    params: &[Var],
    vars: &VarTable,
    unfixed: &BTreeSet<Var>,
) -> BTreeSet<Var> {
    let bound: BTreeSet<Var> = body.iter().flat_map(|s| s.binds.iter().copied()).collect();
    let rank = |v: &Var| vars.ty(*v).rank().unwrap_or(0);
    let mut fixed: BTreeSet<Var> = params.iter().copied().filter(|p| rank(p) > 0).collect();
    let fx = |a: &Atom, fixed: &BTreeSet<Var>| match a {
        Atom::Var(v) => {
            !bound.contains(v) && !params.contains(v) && !unfixed.contains(v) || fixed.contains(v)
        }
        _ => true,
    };
    for s in body {
        let all = |xs: &[Atom], fixed: &BTreeSet<Var>| xs.iter().all(|a| fx(a, fixed));
        let ok = match &s.expr {
            Expr::Atom(a) => fx(a, &fixed),
            Expr::Prim(_, args) => all(args, &fixed),
            Expr::Map(m) => {
                let r = m.arrs.first().and_then(|a| a.var()).map(|v| rank(&v));
                all(&m.arrs, &fixed)
                    && m.lin_arrs.is_empty()
                    && s.binds.iter().all(|b| Some(rank(b)) == r)
            }
            Expr::Build(b) => {
                all(&b.shape, &fixed) && s.binds.iter().all(|v| rank(v) == b.shape.len())
            }
            Expr::Array(op) => {
                let array_result = s.binds.iter().all(|b| rank(b) > 0);
                match op {
                    ArrayOp::Shape { arr, .. } => fx(arr, &fixed),
                    ArrayOp::Update { arr, .. }
                    | ArrayOp::Scan { arr, .. }
                    | ArrayOp::Transpose { arr } => fx(arr, &fixed),
                    ArrayOp::Index { arr, .. }
                    | ArrayOp::Reduce { arr, .. }
                    | ArrayOp::ArgReduce { arr, .. } => array_result && fx(arr, &fixed),
                    ArrayOp::Gather { arr, idx } => fx(arr, &fixed) && fx(idx, &fixed),
                    ArrayOp::ScatterAdd { len, vals, .. } => fx(len, &fixed) && fx(vals, &fixed),
                    ArrayOp::MatMul { a, b } => array_result && fx(a, &fixed) && fx(b, &fixed),
                    ArrayOp::Broadcast { shape, .. } => all(shape, &fixed),
                }
            }
            Expr::Tuple(_)
            | Expr::Untuple(_)
            | Expr::Lin(_)
            | Expr::Call(_)
            | Expr::If(_)
            | Expr::Fold(_)
            | Expr::While(_) => false,
            Expr::Loop(l) => {
                let k = l.init.len();
                // What is not fixed here is not fixed inside either.
                let mut outer: BTreeSet<Var> = unfixed.clone();
                outer.extend(bound.iter().chain(params).filter(|v| !fixed.contains(v)));
                let lam = &l.body;
                let inner = fixed_in(&lam.body.stmts, &lam.params, vars, &outer);
                let inner_bound: BTreeSet<Var> = lam
                    .body
                    .stmts
                    .iter()
                    .flat_map(|s| s.binds.iter().copied())
                    .chain(lam.params.iter().copied())
                    .collect();
                let elem_fixed = |a: &Atom| match a {
                    Atom::Var(v) if inner_bound.contains(v) => rank(v) == 0 || inner.contains(v),
                    a => fx(a, &fixed),
                };
                // Scalar state has a fixed shape whatever its value.
                let init_fixed = l
                    .init
                    .iter()
                    .all(|a| crate::typing::atom_ty(a, vars).rank() == Some(0) || fx(a, &fixed));
                l.lin_init.is_empty()
                    && fx(&l.n, &fixed)
                    && init_fixed
                    && lam
                        .body
                        .results
                        .get(k..)
                        .is_some_and(|r| r.iter().all(elem_fixed))
            }
        };
        if ok {
            // A loop's scalar state changes from one iteration to the next:
            // only its arrays (state and stacks) have fixed shapes.
            // Its arrays above `MAX_STACKED_RANK` are recomputed: stacked
            // once more by the enclosing loop, they would exceed the ranks
            // the emitter supports.
            let is_loop = matches!(s.expr, Expr::Loop(_));
            fixed.extend(
                s.binds
                    .iter()
                    .copied()
                    .filter(|v| !is_loop || (rank(v) > 0 && rank(v) <= MAX_STACKED_RANK)),
            );
        }
    }
    fixed
}

/// Most statements a recomputed scalar residual may cost on the linear side.
const MAX_RECOMPUTE: usize = 12;

/// Whether `s` is a cheap scalar statement: a cheap primitive
/// ([`Prim::is_cheap`]), a scalar copy, an element read or a shape.
fn is_cheap_stmt(s: &Stmt, vars: &VarTable) -> bool {
    s.is_scalar_step(vars) && !matches!(&s.expr, Expr::Prim(p, _) if !p.is_cheap())
}

/// Whether the scalar residual `v` (bound in `body`) is recomputed on the
/// linear side rather than stored: its backward slice, stopping at `stored`
/// residuals, is at most [`MAX_RECOMPUTE`] cheap statements
/// ([`is_cheap_stmt`]), reads no parameter of the body other than its free
/// ones (the loop index, build indices, map elements: the linear side has
/// them without a stack; loop state would need one), and reads no array from
/// outside the body other than those in `top` (the function's parameters and
/// top-level values): an array of an enclosing loop body, such as its loop
/// state, would have to be stacked whole per enclosing iteration for the
/// reload, where storing `v` costs one scalar.
///
/// Invariant kept: recomputing never adds a stack, and the linear side's
/// extra work per iteration is bounded by a constant.
fn cheap_slice(
    v: Var,
    body: &Body,
    stored: &BTreeSet<Var>,
    top: &BTreeSet<Var>,
    vars: &VarTable,
) -> bool {
    let mut seen: BTreeSet<usize> = BTreeSet::new();
    let mut todo = vec![v];
    while let Some(u) = todo.pop() {
        if stored.contains(&u) && u != v {
            continue;
        }
        if let Some(&k) = body.binder.get(&u) {
            if !seen.insert(k) {
                continue;
            }
            if seen.len() > MAX_RECOMPUTE || !is_cheap_stmt(&body.prim[k], vars) {
                return false;
            }
            todo.extend(free_vars_stmt(&body.prim[k]).nl);
        } else if body.params.contains(&u) {
            if !body.free_params.contains(&u) {
                return false;
            }
        } else if vars.ty(u).rank().is_none_or(|r| r > 0) && !top.contains(&u) {
            return false;
        }
    }
    true
}

/// `r = R[idx]` for each stored residual `r` and its stack `R`: the first
/// statements of a linear loop or build body.
fn stack_reads(res: &[Var], stacks: &[Var], idx: &[Atom]) -> Vec<Stmt> {
    res.iter()
        .zip(stacks)
        .map(|(r, st)| Stmt {
            binds: vec![*r],
            lin_binds: vec![],
            expr: Expr::Array(ArrayOp::Index {
                arr: Atom::Var(*st),
                idx: idx.to_vec(),
            }),
            src: None,
        })
        .collect()
}

/// Whether a statement binds, reads or contains (at any depth) linear values:
/// only statements without any go to the primal side unchanged.
fn has_linear(s: &Stmt) -> bool {
    !s.lin_binds.is_empty()
        || matches!(s.expr, Expr::Lin(_))
        || !free_vars_stmt(s).lin.is_empty()
        || lambdas(&s.expr).iter().any(|l| !l.lin_params.is_empty())
        || crate::visit::blocks(&s.expr)
            .iter()
            .any(|b| !b.lin_results.is_empty() || b.stmts.iter().any(has_linear))
}

fn collect_of(t: &ShapeTree, out: &mut Vec<(Var, usize)>) {
    match t {
        ShapeTree::Scalar => {}
        ShapeTree::Array(ds) => {
            for d in ds {
                if let Dim::Of(v, k) = d {
                    out.push((*v, *k));
                }
            }
        }
        ShapeTree::Tuple(ts) => ts.iter().for_each(|t| collect_of(t, out)),
    }
}

fn replace_of(t: &mut ShapeTree, v: Var, k: usize, with: Var) {
    match t {
        ShapeTree::Scalar => {}
        ShapeTree::Array(ds) => {
            for d in ds {
                if *d == Dim::Of(v, k) {
                    *d = Dim::Atom(Atom::Var(with));
                }
            }
        }
        ShapeTree::Tuple(ts) => ts.iter_mut().for_each(|t| replace_of(t, v, k, with)),
    }
}
