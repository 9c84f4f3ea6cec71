//! Run-time shapes of the linear variables of a function, derived from their
//! binders: what the transposer needs to materialise a zero cotangent or the
//! base array of sparse contributions.
//!
//! `shape(v)` is a [`ShapeTree`] over non-linear atoms and `shape(w, k)` of
//! non-linear arrays `w`, all in scope wherever `v`'s cotangent is built:
//! parameters' shapes come from `lin_param_shapes`, results of calls and ifs
//! from their `lin_shapes`, loop state from its initial value, and every
//! linear operation from its operands (e.g. `shape(lindex(x, i)) =
//! shape(x)[1..]`, `shape(lmatmul(A; x)) = [shape(A, 0)]` for a mat·vec).

use crate::error::PassError;
use crate::fast_hash::FastMap;
use crate::ir::*;

/// How a linear variable got its value.
#[derive(Clone, Debug)]
enum Binder {
    /// Known directly.
    Shape(ShapeTree),
    /// Same shape as another linear variable.
    Same(Var),
    /// The `k`-th result of a linear operation.
    Op(LinOp, usize),
    /// Stacked over leading sizes; elements shaped like a variable (or scalar).
    Stacked(Vec<Dim>, Option<Var>),
    /// Stacked like a map over this first array operand (non-linear atom or
    /// linear variable), elements shaped like a variable (or scalar).
    MapOver(Result<Atom, Var>, Option<Var>),
}

/// The binders of every linear variable of a function.
#[derive(Clone, Debug, Default)]
pub(crate) struct Binders {
    map: FastMap<Var, Binder>,
}

impl Binders {
    /// Records the binders of every linear variable of `f`.
    pub(crate) fn of(f: &Func) -> Binders {
        let mut b = Binders::default();
        for (p, s) in f.lin_params.iter().zip(&f.lin_param_shapes) {
            b.map.insert(*p, Binder::Shape(s.clone()));
        }
        b.block(&f.body);
        b
    }

    fn block(&mut self, blk: &Block) {
        for s in &blk.stmts {
            self.stmt(s);
        }
    }

    fn elem(v: Option<&Var>) -> Option<Var> {
        v.copied()
    }

    fn stmt(&mut self, s: &Stmt) {
        let ins = |m: &mut FastMap<Var, Binder>, v: Var, b: Binder| {
            m.insert(v, b);
        };
        match &s.expr {
            Expr::Lin(op) => {
                for (k, &v) in s.lin_binds.iter().enumerate() {
                    let b = match op {
                        LinOp::Zero(t) => Binder::Shape(t.clone()),
                        LinOp::Add(x, _)
                        | LinOp::Neg(x)
                        | LinOp::Dup(x)
                        | LinOp::Update { x, .. }
                        | LinOp::Scan { x, .. } => Binder::Same(*x),
                        other => Binder::Op(other.clone(), k),
                    };
                    ins(&mut self.map, v, b);
                }
            }
            Expr::Call(c) => {
                for (v, t) in s.lin_binds.iter().zip(&c.lin_shapes) {
                    ins(&mut self.map, *v, Binder::Shape(t.clone()));
                }
            }
            Expr::If(i) => {
                for (v, t) in s.lin_binds.iter().zip(&i.lin_shapes) {
                    ins(&mut self.map, *v, Binder::Shape(t.clone()));
                }
                self.block(&i.then_);
                self.block(&i.else_);
            }
            Expr::Loop(l) => {
                let m = l.lin_init.len();
                for (p, x) in l.body.lin_params.iter().zip(&l.lin_init) {
                    ins(&mut self.map, *p, Binder::Same(*x));
                }
                for (k, &v) in s.lin_binds.iter().enumerate() {
                    if k < m {
                        ins(&mut self.map, v, Binder::Same(l.lin_init[k]));
                    } else {
                        let e = Self::elem(l.body.body.lin_results.get(k));
                        ins(&mut self.map, v, Binder::Stacked(vec![Dim::Atom(l.n)], e));
                    }
                }
                self.block(&l.body.body);
            }
            Expr::Build(bd) => {
                for (k, &v) in s.lin_binds.iter().enumerate() {
                    let e = Self::elem(bd.body.body.lin_results.get(k));
                    let lead = bd.shape.iter().map(|a| Dim::Atom(*a)).collect();
                    ins(&mut self.map, v, Binder::Stacked(lead, e));
                }
                self.block(&bd.body.body);
            }
            Expr::Map(mp) => {
                let first = match (mp.arrs.first(), mp.lin_arrs.first()) {
                    (Some(a), _) => Ok(*a),
                    (None, Some(x)) => Err(*x),
                    (None, None) => Ok(Atom::I64(0)),
                };
                for p in &mp.body.lin_params {
                    ins(&mut self.map, *p, Binder::Shape(ShapeTree::Scalar));
                }
                for (k, &v) in s.lin_binds.iter().enumerate() {
                    let e = Self::elem(mp.body.body.lin_results.get(k));
                    ins(&mut self.map, v, Binder::MapOver(first, e));
                }
                self.block(&mp.body.body);
            }
            Expr::Fold(fd) => self.block(&fd.body.body),
            // Non-linear only: no linear binders inside.
            Expr::While(_) => {}
            Expr::Atom(_) | Expr::Prim(..) | Expr::Array(_) | Expr::Tuple(_) | Expr::Untuple(_) => {
            }
        }
    }

    /// The shape of linear variable `v`.
    pub(crate) fn shape_of(&self, vars: &VarTable, v: Var) -> Result<ShapeTree, PassError> {
        let b = self.map.get(&v).ok_or_else(|| {
            PassError::internal(
                format!("internal: no binder recorded for linear variable %{}", v.0),
                None,
            )
        })?;
        match b {
            Binder::Shape(t) => Ok(t.clone()),
            Binder::Same(x) => self.shape_of(vars, *x),
            Binder::Stacked(lead, e) => {
                let mut dims = lead.clone();
                dims.extend(self.elem_dims(vars, *e)?);
                Ok(ShapeTree::Array(dims))
            }
            Binder::MapOver(first, e) => {
                let mut dims = match first {
                    Ok(Atom::Var(a)) => {
                        let r = vars.ty(*a).rank().unwrap_or(0);
                        (0..r).map(|k| Dim::Of(*a, k)).collect()
                    }
                    Ok(_) => return Err(PassError::internal("internal: map over a literal", None)),
                    Err(x) => array_dims(self.shape_of(vars, *x)?)?,
                };
                dims.extend(self.elem_dims(vars, *e)?);
                Ok(ShapeTree::Array(dims))
            }
            Binder::Op(op, k) => self.op_shape(vars, op, *k),
        }
    }

    /// Sizes of the elements of a stacked linear result. Array elements have
    /// sizes known only inside the body, so they are refused.
    fn elem_dims(&self, vars: &VarTable, e: Option<Var>) -> Result<Vec<Dim>, PassError> {
        match e {
            Some(e) if vars.ty(e).rank() != Some(0) => Err(
                PassError::unsupported("reverse mode of a loop, build or map whose differentiable per-iteration (or per-element) result is an array; return scalars per element", None),
            ),
            _ => Ok(vec![]),
        }
    }

    fn op_shape(&self, vars: &VarTable, op: &LinOp, k: usize) -> Result<ShapeTree, PassError> {
        let of = |a: &Atom| -> Result<Vec<Dim>, PassError> {
            match a {
                Atom::Var(v) => Ok((0..vars.ty(*v).rank().unwrap_or(0))
                    .map(|j| Dim::Of(*v, j))
                    .collect()),
                _ => Ok(vec![]),
            }
        };
        let arr = |dims: Vec<Dim>| {
            if dims.is_empty() {
                ShapeTree::Scalar
            } else {
                ShapeTree::Array(dims)
            }
        };
        match op {
            LinOp::Zero(t) => Ok(t.clone()),
            LinOp::Add(x, _)
            | LinOp::Neg(x)
            | LinOp::Dup(x)
            | LinOp::Update { x, .. }
            | LinOp::Scan { x, .. } => self.shape_of(vars, *x),
            LinOp::Drop(_) => Err(PassError::internal("internal: drop binds nothing", None)),
            LinOp::Scale { s, x } => {
                if vars.ty(*x).rank() == Some(0) {
                    Ok(arr(of(s)?))
                } else {
                    self.shape_of(vars, *x)
                }
            }
            LinOp::Tuple(xs) => Ok(ShapeTree::Tuple(
                xs.iter()
                    .map(|x| self.shape_of(vars, *x))
                    .collect::<Result<_, _>>()?,
            )),
            LinOp::Untuple(x) => match self.shape_of(vars, *x)? {
                ShapeTree::Tuple(ts) => ts
                    .get(k)
                    .cloned()
                    .ok_or_else(|| PassError::internal("internal: untuple out of range", None)),
                other => Err(PassError::internal(
                    format!("internal: untuple of shape {other:?}"),
                    None,
                )),
            },
            LinOp::Index { x, idx } => {
                let d = array_dims(self.shape_of(vars, *x)?)?;
                Ok(arr(d[idx.len().min(d.len())..].to_vec()))
            }
            // (element, array): the element as for `Index`, then `x`'s shape.
            LinOp::Take { x, idx, .. } => {
                if k == 1 {
                    return self.shape_of(vars, *x);
                }
                let d = array_dims(self.shape_of(vars, *x)?)?;
                Ok(arr(d[idx.len().min(d.len())..].to_vec()))
            }
            LinOp::Gather { x, idx } => {
                let mut d = array_dims(self.shape_of(vars, *x)?)?;
                let v = idx
                    .var()
                    .ok_or_else(|| PassError::internal("internal: gather by a literal", None))?;
                d[0] = Dim::Of(v, 0);
                Ok(arr(d))
            }
            LinOp::ScatterAdd { len, x, .. } => {
                let mut d = array_dims(self.shape_of(vars, *x)?)?;
                d[0] = Dim::Atom(*len);
                Ok(arr(d))
            }
            LinOp::Sum { x, axis } => match axis {
                None => Ok(ShapeTree::Scalar),
                Some(a) => {
                    let mut d = array_dims(self.shape_of(vars, *x)?)?;
                    d.remove(*a);
                    Ok(arr(d))
                }
            },
            LinOp::Broadcast { shape, .. } | LinOp::SumTo { shape, .. } => {
                Ok(arr(shape.iter().map(|a| Dim::Atom(*a)).collect()))
            }
            LinOp::Transpose(x) => {
                let mut d = array_dims(self.shape_of(vars, *x)?)?;
                d.reverse();
                Ok(arr(d))
            }
            LinOp::MatMul { a, x, lin_left } => {
                let da = of(a)?;
                let dx = array_dims(self.shape_of(vars, *x)?)?;
                let (l, r) = if *lin_left { (dx, da) } else { (da, dx) };
                // Result: all of l but its last axis, then all of r but its first.
                let mut out: Vec<Dim> = l[..l.len().saturating_sub(1)].to_vec();
                out.extend(r.iter().skip(1).copied());
                Ok(arr(out))
            }
            LinOp::Outer { x, b, lin_left } => {
                let dx = array_dims(self.shape_of(vars, *x)?)?;
                let db = of(b)?;
                Ok(if *lin_left {
                    ShapeTree::Array(vec![dx[0], db[0]])
                } else {
                    ShapeTree::Array(vec![db[0], dx[0]])
                })
            }
        }
    }
}

fn array_dims(t: ShapeTree) -> Result<Vec<Dim>, PassError> {
    match t {
        ShapeTree::Array(d) => Ok(d),
        ShapeTree::Scalar => Ok(vec![]),
        ShapeTree::Tuple(_) => Err(PassError::internal(
            "internal: expected an array shape, found a tuple",
            None,
        )),
    }
}
