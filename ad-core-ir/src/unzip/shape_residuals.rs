//! Shape residuals: the sizes linear code needs (the shape of a zero, of a
//! call's or a branch's linear results, of the linear parameters) become
//! `i64` values computed on the primal side, so no array is kept alive only
//! for its shape.
//!
//! ```text
//! let ; z = lzero [shape v, 0]         fwd: let n = shape v, 0      lin: let ; z = lzero [n]
//! ```
//!
//! One `shape` statement per `(array, axis)` and block ([`ShapeCache`]).

use super::Unzip;
use crate::fast_hash::FastMap;
use crate::ir::*;
use crate::types::Ty;
use crate::visit::{blocks_mut, free_vars_stmt};
use std::collections::BTreeSet;

/// `(v, axis) -> i64 residual` computed on the primal side of the current block.
pub(super) type ShapeCache = FastMap<(Var, usize), Var>;

impl<'p> Unzip<'p> {
    /// Rewrites `Dim::Of(v, k)` into an `i64` variable computed by a `shape`
    /// statement appended to `prim`.
    pub(super) fn residual_shape(
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
    pub(super) fn residualise_dims(
        &mut self,
        s: &mut Stmt,
        prim: &mut Vec<Stmt>,
        cache: &mut ShapeCache,
    ) {
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

    /// Residualises the `Dim::Of` in the top-level shapes of a split statement
    /// (its own `lin_shapes` may name the primal statement's results).
    pub(super) fn dims_top(
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
