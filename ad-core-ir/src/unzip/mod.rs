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
//!
//! Files: this one holds the entry point ([`unzip_func`]) and the
//! dispatcher (`Unzip::split`), which sends a statement without linear
//! values to the primal side, a linear-only one to the linear side, and a
//! mixed compound statement to its construct's rule: `branch.rs` (`if`),
//! `stacked.rs` (loop, build, map), `calls.rs` (calls). `policy.rs` decides
//! which residuals of a stacked body are stored and which are recomputed,
//! `fixed_shape.rs` which arrays of a loop body have the same shape in
//! every iteration (so they can be stacked), and `shape_residuals.rs`
//! turns the sizes linear code needs into `i64` residuals.

mod branch;
mod calls;
mod fixed_shape;
mod policy;
mod shape_residuals;
mod stacked;

pub use fixed_shape::fixed_shape_vars;

use crate::fast_hash::FastMap;
use crate::ir::*;
use crate::names::{Derived, DerivedName};
use crate::visit::{
    binders, blocks_mut, free_vars_block, free_vars_stmt, lambdas, rename_stmt, shape_vars,
    substitute_block,
};
use shape_residuals::ShapeCache;
use std::collections::BTreeSet;

/// An unzip failure: always [`crate::error::ErrorKind::Internal`] (every
/// JVP output can be unzipped).
pub type UnzipError = crate::error::PassError;

/// The base of `f__jvp` (`f`); any other name is its own base.
fn jvp_base(name: &str) -> String {
    match DerivedName::parse(name) {
        Some(DerivedName {
            base,
            kind: Derived::Jvp,
        }) => base,
        _ => name.to_string(),
    }
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
    let base = jvp_base(&f.name);
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
    let mut shapes = FastMap::default();
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
        name: Derived::Fwd.of(&base),
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
        name: Derived::Lin.of(&base),
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

/// The state of unzipping one function: the program (for callees' halves)
/// and the variable table both halves share (fresh variables are added to
/// it, so a residual is the same variable on both sides).
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

/// A split nested block: primal statements, linear statements, residuals.
type Split = (Vec<Stmt>, Vec<Stmt>, Vec<Var>);

impl<'p> Unzip<'p> {
    /// Splits statements into the primal side and the linear side, trying
    /// the simple cases first: a statement without linear values goes to
    /// `prim` unchanged; one binding no non-linear value goes to `lin` whole
    /// (its nested mixed statements split inside it, its sizes made shape
    /// residuals); a mixed compound statement goes to its construct's rule
    /// (`branch.rs`, `stacked.rs`, `calls.rs`).
    ///
    /// Invariant kept: `prim` holds no linear value and `lin` is Linear B
    /// (no statement mixes kinds); the two sides keep the input's binders.
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
                        return Err(UnzipError::internal(
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
            let mut cache = ShapeCache::default();
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
        let mut ren: FastMap<Var, Var> = FastMap::default();
        for v in binders(&copy) {
            let info = self.vars.info(v).clone();
            ren.insert(v, self.vars.fresh(info.name, info.ty, info.linear));
        }
        let top: BTreeSet<Var> = copy.iter().flat_map(|s| s.binds.iter().copied()).collect();
        for st in &mut copy {
            rename_stmt(st, &ren);
        }
        let uses: FastMap<Var, Atom> = ren
            .iter()
            .filter(|(k, _)| top.contains(k))
            .map(|(k, v)| (*k, Atom::Var(*v)))
            .collect();
        let mut rest = Block {
            stmts: rest,
            results: vec![],
            lin_results: vec![],
        };
        substitute_block(&mut rest, &uses, &FastMap::default());
        copy.extend(rest.stmts);
        copy
    }

    /// Splits a nested block: `(primal stmts, linear stmts, residuals bound on
    /// the primal side of this block or among `params` that the linear side reads)`.
    fn split_nested(&mut self, b: &Block, params: &[Var]) -> Result<Split, UnzipError> {
        let mut prim = vec![];
        let mut lin = vec![];
        let mut cache = ShapeCache::default();
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
}

/// Whether a statement binds, reads or contains (at any depth) linear values:
/// only statements without any go to the primal side unchanged.
fn has_linear(s: &Stmt) -> bool {
    !s.lin_binds.is_empty()
        || matches!(s.expr, Expr::Lin(_))
        || !free_vars_stmt(s).lin.is_empty()
        || lambdas(&s.expr).any(|l| !l.lin_params.is_empty())
        || crate::visit::blocks(&s.expr)
            .any(|b| !b.lin_results.is_empty() || b.stmts.iter().any(has_linear))
}
