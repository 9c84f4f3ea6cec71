//! JVP rules of the array operations.
//!
//! Structural operations are linear and differentiate to their linear twin:
//! `index, gather, scatter_add, sum, scan, transpose, broadcast` (`d op(x) =
//! lop(dx)`); `matmul` is bilinear (`d(a·b) = da·b + a·db`); `update` is linear
//! in the array and the value jointly. `max`/`min` reductions select the
//! tangent at the arg-max/arg-min; `prod` uses the zero-count rule:
//! with `p` the product of the non-zero elements and `z` the number of zeros,
//! `∂prod/∂x_i = p / x_i` if `z = 0`, `p` if `z = 1` and `x_i = 0`, else `0`.

use super::{Jvp, JvpError};
use crate::ir::*;
use crate::types::Ty;

impl<'p> Jvp<'p> {
    /// The tangent of a non-linear array operation bound to `binds`, `None`
    /// when it is zero or the result has no tangent type.
    pub(super) fn array_jvp(
        &mut self,
        op: &ArrayOp,
        binds: &[Var],
    ) -> Result<Option<Var>, JvpError> {
        if binds.len() != 1 || !self.b.ty(binds[0]).is_differentiable() {
            return Ok(None);
        }
        Ok(match op {
            ArrayOp::Index { arr, idx } => self.tan_of(arr).map(|x| {
                self.lin(LinOp::Index {
                    x,
                    idx: idx.clone(),
                })
            }),
            ArrayOp::Update { arr, idx, val, add } => {
                let (dx, dv) = (self.tan_of(arr), self.tan_of(val));
                match (dx, dv) {
                    (None, None) => None,
                    (Some(dx), None) if *add => Some(dx),
                    _ => {
                        let x = self.tan_or_zero(arr)?;
                        let val = self.tan_or_zero(val)?;
                        Some(self.lin(LinOp::Update {
                            x,
                            idx: idx.clone(),
                            val,
                            add: *add,
                        }))
                    }
                }
            }
            ArrayOp::Gather { arr, idx } => self
                .tan_of(arr)
                .map(|x| self.lin(LinOp::Gather { x, idx: *idx })),
            ArrayOp::ScatterAdd { len, idx, vals } => self.tan_of(vals).map(|x| {
                self.lin(LinOp::ScatterAdd {
                    len: *len,
                    idx: *idx,
                    x,
                })
            }),
            ArrayOp::Reduce { op, arr, axis } => self.tan_of(arr).map(|dx| match op {
                ReduceOp::Sum => self.lin(LinOp::Sum { x: dx, axis: *axis }),
                ReduceOp::Max | ReduceOp::Min => self.select_at_arg(*op, *arr, *axis, dx),
                ReduceOp::Prod => self.prod_jvp(*arr, *axis, dx),
            }),
            ArrayOp::ArgReduce { .. } | ArrayOp::Shape { .. } | ArrayOp::Stride { .. } => None,
            ArrayOp::Scan { arr, reverse } => self.tan_of(arr).map(|x| {
                self.lin(LinOp::Scan {
                    x,
                    reverse: *reverse,
                })
            }),
            ArrayOp::MatMul { a, b } => {
                let l = self.tan_of(a).map(|x| {
                    self.lin(LinOp::MatMul {
                        a: *b,
                        x,
                        lin_left: true,
                    })
                });
                let r = self.tan_of(b).map(|x| {
                    self.lin(LinOp::MatMul {
                        a: *a,
                        x,
                        lin_left: false,
                    })
                });
                self.ladd(l, r)
            }
            ArrayOp::Transpose { arr } => self.tan_of(arr).map(|x| self.lin(LinOp::Transpose(x))),
            ArrayOp::Broadcast { arr, shape, axes } => self.tan_of(arr).map(|x| {
                self.lin(LinOp::Broadcast {
                    x,
                    shape: shape.clone(),
                    axes: axes.clone(),
                })
            }),
        })
    }

    /// Sizes of `arr` except along `axis`.
    fn reduced_shape(&mut self, arr: Atom, axis: usize) -> Vec<Atom> {
        let rank = self.b.atom_ty(&arr).rank().expect("an array");
        (0..rank)
            .filter(|k| *k != axis)
            .map(|k| Atom::Var(self.b.shape(arr, k)))
            .collect()
    }

    /// Tangent of a max/min reduction: `dx` at the arg-max/arg-min, and zero
    /// where the reduced lanes are empty (the result is then the constant
    /// ±inf, and there is no arg-max to index).
    fn select_at_arg(&mut self, op: ReduceOp, arr: Atom, axis: Option<usize>, dx: Var) -> Var {
        let rank = self.b.atom_ty(&arr).rank().expect("an array");
        let (count, out_shape) = match axis {
            Some(a) if rank > 1 => {
                let arr_v = arr.var().expect("an array variable");
                let dims = (0..rank)
                    .filter(|k| *k != a)
                    .map(|k| Dim::Of(arr_v, k))
                    .collect();
                (Atom::Var(self.b.shape(arr, a)), ShapeTree::Array(dims))
            }
            Some(a) => (Atom::Var(self.b.shape(arr, a)), ShapeTree::Scalar),
            None => {
                let mut n = Atom::Var(self.b.shape(arr, 0));
                for k in 1..rank {
                    let s = self.b.shape(arr, k);
                    n = Atom::Var(self.b.prim(Prim::Mul, &[n, Atom::Var(s)]));
                }
                (n, ShapeTree::Scalar)
            }
        };
        let nonempty = self.b.prim(Prim::Gt, &[count, Atom::I64(0)]);
        // the arg-reduction is defined (zeros) on empty lanes: computed here,
        // outside the branch, it stays a primal residual (not recomputed)
        let (ks, _) = self
            .b
            .emit(Expr::Array(ArrayOp::ArgReduce { op, arr, axis }));
        self.b.open();
        let d = self.select_at_arg_nonempty(arr, axis, ks, dx);
        let then_ = self.b.close(vec![], vec![d]);
        self.b.open();
        let z = self.lin(LinOp::Zero(out_shape.clone()));
        let else_ = self.b.close(vec![], vec![z]);
        self.b.emit1(Expr::If(If {
            cond: Atom::Var(nonempty),
            then_,
            else_,
            lin_shapes: vec![out_shape],
        }))
    }

    /// [`Self::select_at_arg`] where every reduced lane has an element.
    fn select_at_arg_nonempty(
        &mut self,
        arr: Atom,
        axis: Option<usize>,
        ks: Vec<Var>,
        dx: Var,
    ) -> Var {
        let rank = self.b.atom_ty(&arr).rank().expect("an array");
        match axis {
            None => self.lin(LinOp::Index {
                x: dx,
                idx: ks.into_iter().map(Atom::Var).collect(),
            }),
            Some(_) if rank == 1 => self.lin(LinOp::Index {
                x: dx,
                idx: vec![Atom::Var(ks[0])],
            }),
            Some(a) => {
                // build(reduced shape, |j| dx[j with K[j] inserted at a])
                let kk = ks[0];
                let shape = self.reduced_shape(arr, a);
                let idx_tys = vec![Ty::I64; shape.len()];
                let params: Vec<Var> = idx_tys
                    .iter()
                    .map(|t| self.b.fresh("j", t.clone()))
                    .collect();
                self.b.open();
                let pos = self.b.index(
                    Atom::Var(kk),
                    &params.iter().map(|p| Atom::Var(*p)).collect::<Vec<_>>(),
                );
                let mut full: Vec<Atom> = params.iter().map(|p| Atom::Var(*p)).collect();
                full.insert(a, Atom::Var(pos));
                let d = self.lin(LinOp::Index { x: dx, idx: full });
                let body = self.b.close(vec![], vec![d]);
                self.b.emit1(Expr::Build(Build {
                    shape,
                    body: Lambda {
                        params,
                        lin_params: vec![],
                        body,
                    },
                }))
            }
        }
    }

    /// Tangent of a product reduction by the zero-count rule (module docs).
    fn prod_jvp(&mut self, arr: Atom, axis: Option<usize>, dx: Var) -> Var {
        let rank = self.b.atom_ty(&arr).rank().expect("an array");
        // Whole-array (or rank-1) case: scalar p, z.
        let whole = axis.is_none() || rank == 1;
        let is_zero_f = self.b.map(&[arr], |b, xs| {
            let c = b.prim(Prim::Eq, &[xs[0].into(), Atom::F64(0.0)]);
            vec![b
                .prim(Prim::Select, &[c.into(), Atom::F64(1.0), Atom::F64(0.0)])
                .into()]
        })[0];
        let nonzero = self.b.map(&[arr], |b, xs| {
            let c = b.prim(Prim::Eq, &[xs[0].into(), Atom::F64(0.0)]);
            vec![b
                .prim(Prim::Select, &[c.into(), Atom::F64(1.0), xs[0].into()])
                .into()]
        })[0];
        let red_axis = if whole { None } else { axis };
        let z = self.b.array(ArrayOp::Reduce {
            op: ReduceOp::Sum,
            arr: is_zero_f.into(),
            axis: red_axis,
        });
        let p = self.b.array(ArrayOp::Reduce {
            op: ReduceOp::Prod,
            arr: nonzero.into(),
            axis: red_axis,
        });
        // g(x, p, z) = z == 0 ? p / x : (z == 1 && x == 0 ? p : 0)
        let partial = |b: &mut crate::build::FuncBuilder, x: Atom, p: Atom, z: Atom| -> Atom {
            let z0 = b.prim(Prim::Eq, &[z, Atom::F64(0.0)]);
            let z1 = b.prim(Prim::Eq, &[z, Atom::F64(1.0)]);
            let x0 = b.prim(Prim::Eq, &[x, Atom::F64(0.0)]);
            let one_zero = b.prim(Prim::And, &[z1.into(), x0.into()]);
            let q = b.prim(Prim::Div, &[p, x]);
            let inner = b.prim(Prim::Select, &[one_zero.into(), p, Atom::F64(0.0)]);
            b.prim(Prim::Select, &[z0.into(), q.into(), inner.into()])
                .into()
        };
        let g = if whole {
            self.b.map(&[arr], |b, xs| {
                vec![partial(b, xs[0].into(), p.into(), z.into())]
            })[0]
        } else {
            let a = axis.expect("not whole");
            let shape: Vec<Atom> = (0..rank).map(|k| Atom::Var(self.b.shape(arr, k))).collect();
            self.b.build(&shape, |b, idx| {
                let all: Vec<Atom> = idx.iter().map(|v| Atom::Var(*v)).collect();
                let x = b.index(arr, &all);
                let mut red = all.clone();
                red.remove(a);
                let pj = b.index(p.into(), &red);
                let zj = b.index(z.into(), &red);
                vec![partial(b, x.into(), pj.into(), zj.into())]
            })[0]
        };
        let scaled = self.lin(LinOp::Scale { s: g.into(), x: dx });
        self.lin(LinOp::Sum { x: scaled, axis })
    }
}
