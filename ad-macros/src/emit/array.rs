//! Non-linear array operations, and the kernels they share with their linear
//! twins (indexing, update, gather, scatter-add, sums, broadcast, transpose,
//! matrix products, scans). Float kernels go to the runtime (parallel and
//! deterministic), and so do arg-reductions, integer scans and integer
//! scatter-adds (`arg_index`, `scan_i64`, `scatter_add_i64`: the
//! interpreter's rules, NaNs skipped); max/min value reductions and other
//! integer operations are emitted inline.

use super::func::{Emitter, Out, R};
use super::types::{array_ty, dim_ty, nd, owned_repr, rt, Repr};
use crate::text::{text, Code};
use ad_core_ir::ir::{ArrayOp, Atom, ReduceOp, Var};
use ad_core_ir::types::Scalar;
use proc_macro2::Literal;

/// `[a, b, c]`: a static shape / index list.
pub fn list(xs: &[Code]) -> Code {
    text!([#(#xs),*])
}

impl Emitter<'_> {
    /// A non-linear array operation.
    pub fn array_op(&mut self, op: &ArrayOp, binds: &[Var], site: usize) -> R<Out> {
        match op {
            ArrayOp::Index { arr, idx } => self.index(arr, idx, site),
            ArrayOp::Update { arr, idx, val, add } => {
                let (elem, rank) = self.array_of(arr)?;
                let target = self.own(arr, site);
                let val_ref = self.by_ref(val);
                let v = self.scalar(val);
                self.update(target, None, elem, rank, idx, v, val_ref, *add)
            }
            ArrayOp::Gather { arr, idx } => self.gather(arr, idx),
            ArrayOp::ScatterAdd { len, idx, vals } => self.scatter_add(len, idx, vals),
            ArrayOp::Reduce { op, arr, axis } => self.reduce(*op, arr, *axis, true),
            ArrayOp::ArgReduce { op, arr, axis } => self.arg_reduce(*op, arr, *axis, binds.len()),
            ArrayOp::Scan { arr, reverse } => self.scan(arr, *reverse),
            ArrayOp::MatMul { a, b } => self.matmul(a, b, true),
            ArrayOp::Transpose { arr } => {
                let m = self.nl_movable(arr, site);
                let lent = binds.first().is_some_and(|y| self.uses.borrows_operand(*y));
                self.transpose(arr, m, lent)
            }
            ArrayOp::Broadcast { arr, shape, axes } => {
                let m = self.nl_movable(arr, site);
                self.broadcast(arr, shape, axes, site, m, binds.first().copied())
            }
            ArrayOp::Shape { arr, axis } => {
                let x = self.scalar(arr);
                Ok(Out::one(text!(#x.shape()[#axis] as i64), Repr::Val))
            }
            // The array's own stride: the emitter keeps the memory layout
            // `f`'s array has (views stay views), so an order computed from
            // it is the order ndarray visits `f`'s array in.
            ArrayOp::Stride { arr, axis } => {
                let x = self.scalar(arr);
                Ok(Out::one(text!(#x.strides()[#axis] as i64), Repr::Val))
            }
        }
    }

    /// `arr[i0, .., ik]`: an element, or the sub-array (a view of a view,
    /// a copy of an owned array).
    ///
    /// A sub-array of an array bound outside the current lambda (a loop,
    /// build or map body) is a view of it, not a copy: the array cannot be
    /// moved or changed while the body runs.
    pub fn index(&mut self, arr: &Atom, idx: &[Atom], site: usize) -> R<Out> {
        let (_, rank) = self.array_of(arr)?;
        let x = self.scalar(arr);
        if idx.len() == rank {
            if let Some(read) = arr.var().and_then(|v| self.lane_read(v, idx)) {
                return Ok(Out::one(read, Repr::Val));
            }
            let ix: Vec<_> = idx.iter().map(|a| self.usize_of(a)).collect();
            let ix = list(&ix);
            return Ok(Out::one(text!(#x[#ix]), Repr::Val));
        }
        if idx.len() > rank {
            return Err(format!(
                "{} indices into an array of rank {rank}",
                idx.len()
            ));
        }
        let var = arr.var().expect("an array operand is a variable");
        let sub = |first: Code| self.leading_axes(first, idx);
        Ok(match self.repr(var) {
            Repr::View => Out::one(sub(text!(#x)), Repr::View),
            _ if !self.uses.local(var, site) => Out::one(sub(text!(#x.view())), Repr::View),
            _ => {
                let v = sub(text!(#x.view()));
                Out::one(text!(#v.to_owned()), Repr::Owned)
            }
        })
    }

    /// The view `view` with its leading axes fixed at `idx`:
    /// `view.index_axis_move(Axis(0), i0).index_axis_move(Axis(0), i1)..`
    /// (ndarray's cheapest sub-view: no slice descriptor to interpret, the
    /// same panic on an index out of range).
    fn leading_axes(&self, view: Code, idx: &[Atom]) -> Code {
        let nd = nd();
        let ix = idx.iter().map(|a| self.usize_of(a));
        text!(#view #(.index_axis_move(#nd::Axis(0), #ix))*)
    }

    /// [`Emitter::leading_axes`] of the owned array `u`, mutably:
    /// `u.view_mut().index_axis_move(Axis(0), i0)..`.
    fn leading_axes_mut(&self, u: &proc_macro2::Ident, idx: &[Atom]) -> Code {
        let nd = nd();
        let ix = idx.iter().map(|a| self.usize_of(a));
        text!(#u.view_mut() #(.index_axis_move(#nd::Axis(0), #ix))*)
    }

    /// `target with [idx] = val` (`+=` when `add`), in place on the owned
    /// `target` (the linear variable `x`, when it is one: its rows may be
    /// held from an offset, [`Emitter::element_index`]).
    #[allow(clippy::too_many_arguments)]
    pub fn update(
        &mut self,
        target: Code,
        x: Option<Var>,
        elem: Scalar,
        rank: usize,
        idx: &[Atom],
        val: Code,
        val_ref: Code,
        add: bool,
    ) -> R<Out> {
        let u = self.fresh("u");
        let write = if idx.len() == rank {
            let ix = self.element_index(x, idx.iter().map(|a| self.usize_of(a)).collect());
            let ix = list(&ix);
            if add {
                text!(#u[#ix] += #val;)
            } else {
                text!(#u[#ix] = #val;)
            }
        } else {
            if x.is_some_and(|x| self.row_shifts.contains_key(&x)) {
                return Err("a sub-array update of rows held from an offset".into());
            }
            let sub = self.leading_axes_mut(&u, idx);
            let d = self.fresh("d");
            if add && elem == Scalar::F64 {
                let rt = rt();
                text!(#rt::add_assign(&mut #sub, #val_ref);)
            } else {
                let op = if add {
                    text!(#d += #val_ref;)
                } else {
                    text!(#d.assign(#val_ref);)
                };
                text!({
                    let mut #d = #sub;
                    assert_eq!(#d.shape(), (#val_ref).shape(), "linad: update of a sub-array of another shape");
                    #op
                })
            }
        };
        Ok(Out::one(
            text!({ let mut #u = #target; #write #u }),
            Repr::Owned,
        ))
    }

    /// The `usize` indices `ix` of an element of the linear array `x`, as
    /// held: a chunk of an accumulation loop whose iterations own rows
    /// (`nest.rs`) holds only its rows, from an offset along one axis
    /// (`Emitter::row_shifts`), so that index is taken relative to it.
    pub fn element_index(&self, x: Option<Var>, mut ix: Vec<Code>) -> Vec<Code> {
        if let Some((axis, off)) = x.and_then(|x| self.row_shifts.get(&x)) {
            if let Some(t) = ix.get_mut(*axis) {
                *t = text!((#t).wrapping_sub(#off));
            }
        }
        ix
    }

    /// `(target[idx], target with [idx] = 0)`: reads and clears the element
    /// (or sub-array) in place on the owned `target`, so the cost is that of
    /// the element.
    pub fn take(&mut self, target: Code, rank: usize, idx: &[Atom]) -> R<Out> {
        let (u, e) = (self.fresh("u"), self.fresh("e"));
        if idx.len() > rank {
            return Err(format!(
                "{} indices into an array of rank {rank}",
                idx.len()
            ));
        }
        let (read, clear, elem) = if idx.len() == rank {
            let ix: Vec<_> = idx.iter().map(|a| self.usize_of(a)).collect();
            let ix = list(&ix);
            (text!(#u[#ix]), text!(#u[#ix] = 0.0;), Repr::Val)
        } else {
            let (sub, sub_mut) = (
                self.leading_axes(text!(#u.view()), idx),
                self.leading_axes_mut(&u, idx),
            );
            (
                text!(#sub.to_owned()),
                text!(#sub_mut.fill(0.0);),
                Repr::Owned,
            )
        };
        Ok(Out {
            expr: text!({ let mut #u = #target; let #e = #read; #clear (#e, #u) }),
            reprs: vec![elem, Repr::Owned],
        })
    }

    /// `i64` index array to `usize` (`idx.mapv(|i| i as usize)`).
    fn usize_indices(&self, idx: &Atom) -> Code {
        let i = self.scalar(idx);
        text!(#i.mapv(|__i: i64| __i as usize))
    }

    /// Rows of `arr` picked by `idx`.
    pub fn gather(&mut self, arr: &Atom, idx: &Atom) -> R<Out> {
        let rt = rt();
        let x = self.by_ref(arr);
        let ix = self.usize_indices(idx);
        Ok(Out::one(text!(#rt::gather(#x, &#ix)), Repr::Owned))
    }

    /// `out[idx[k], ..] += vals[k, ..]` into `len` rows of zeros.
    pub fn scatter_add(&mut self, len: &Atom, idx: &Atom, vals: &Atom) -> R<Out> {
        let (elem, rank) = self.array_of(vals)?;
        let n = self.usize_of(len);
        let x = self.by_ref(vals);
        let e = match elem {
            Scalar::F64 => {
                let rt = rt();
                let ix = self.usize_indices(idx);
                text!(#rt::scatter_add(#x, &#ix, #n))
            }
            Scalar::I64 => {
                let rt = rt();
                let i = self.scalar(idx);
                let d = dim_ty(rank);
                let v = self.scalar(vals);
                text!(#rt::scatter_add_i64(#n, #i.view(), #v.view().into_dyn())
                    .into_dimensionality::<#d>().expect("linad: rank"))
            }
            Scalar::Bool => return Err("scatter-add of a bool array".into()),
        };
        Ok(Out::one(e, Repr::Owned))
    }

    /// A reduction of a whole array or along an axis.
    ///
    /// A primal (`primal`) float sum is ndarray's own `sum` / `sum_axis`,
    /// so that `f_jvp` and `f_vjp` return the bits of the user's `a.sum()`;
    /// sums of linear values use the runtime's parallel kernels.
    pub fn reduce(
        &mut self,
        op: ReduceOp,
        arr: &Atom,
        axis: Option<usize>,
        primal: bool,
    ) -> R<Out> {
        let (elem, rank) = self.array_of(arr)?;
        let rt = rt();
        let nd = nd();
        let x = self.scalar(arr);
        let xr = self.by_ref(arr);
        let scalar_out = axis.is_none() || rank == 1;
        let (init, comb) = match (op, elem) {
            // ndarray's own sum and product, as the user's `a.sum()` /
            // `a.product()` (8 lanes in memory order, then the rest in
            // turn): a left fold rounds differently from 8 elements on.
            (ReduceOp::Sum | ReduceOp::Prod, Scalar::F64) if primal => {
                let (whole, along) = if op == ReduceOp::Sum {
                    (text!(sum), text!(sum_axis))
                } else {
                    (text!(product), text!(product_axis))
                };
                let e = match axis {
                    None => text!(#x.#whole()),
                    Some(a) if rank == 1 => text!(#x.#along(#nd::Axis(#a)).into_scalar()),
                    Some(a) => text!(#x.#along(#nd::Axis(#a))),
                };
                let repr = if scalar_out { Repr::Val } else { Repr::Owned };
                return Ok(Out::one(e, repr));
            }
            (ReduceOp::Sum, Scalar::F64) => {
                let e = match axis {
                    None => text!(#rt::sum(#xr)),
                    Some(a) if rank == 1 => text!(#rt::sum_axis(#xr, #a).into_scalar()),
                    Some(a) => text!(#rt::sum_axis(#xr, #a)),
                };
                let repr = if scalar_out { Repr::Val } else { Repr::Owned };
                return Ok(Out::one(e, repr));
            }
            (_, Scalar::Bool) => return Err("reduction of a bool array".into()),
            (ReduceOp::Sum, _) => (text!(0i64), text!(__p + __v)),
            (ReduceOp::Prod, Scalar::F64) => (text!(1.0f64), text!(__p * __v)),
            (ReduceOp::Prod, _) => (text!(1i64), text!(__p * __v)),
            (ReduceOp::Max, Scalar::F64) => (text!(f64::NEG_INFINITY), text!(f64::max(__p, __v))),
            (ReduceOp::Max, _) => (text!(i64::MIN), text!(::core::cmp::Ord::max(__p, __v))),
            (ReduceOp::Min, Scalar::F64) => (text!(f64::INFINITY), text!(f64::min(__p, __v))),
            (ReduceOp::Min, _) => (text!(i64::MAX), text!(::core::cmp::Ord::min(__p, __v))),
        };
        let e = match axis {
            None => text!(#x.iter().fold(#init, |__p, &__v| #comb)),
            Some(a) => {
                let f = text!(#x.fold_axis(#nd::Axis(#a), #init, |&__p, &__v| #comb));
                if rank == 1 {
                    text!(#f.into_scalar())
                } else {
                    f
                }
            }
        };
        let repr = if scalar_out { Repr::Val } else { Repr::Owned };
        Ok(Out::one(e, repr))
    }

    /// Position of the first maximum / minimum (NaNs skipped): the
    /// multi-index (`rank` results), or an `i64` array along an axis.
    pub fn arg_reduce(
        &mut self,
        op: ReduceOp,
        arr: &Atom,
        axis: Option<usize>,
        n_binds: usize,
    ) -> R<Out> {
        let (_, rank) = self.array_of(arr)?;
        let max = match op {
            ReduceOp::Max => true,
            ReduceOp::Min => false,
            _ => return Err("arg-reduction by sum or product".into()),
        };
        let rt = rt();
        let x = self.scalar(arr);
        let xr = self.by_ref(arr);
        Ok(match axis {
            None => {
                let v = self.fresh("arg");
                let parts: Vec<_> = (0..n_binds).map(|k| text!(#v[#k])).collect();
                let r = super::types::flat(&parts);
                Out {
                    expr: text!({ let #v = #rt::arg_index(#xr, #max); #r }),
                    reprs: vec![Repr::Val; n_binds],
                }
            }
            Some(a) => {
                let e = text!(#rt::arg_index_axis(#x.view().into_dyn(), #a, #max));
                if rank == 1 {
                    let d = dim_ty(0);
                    Out::one(
                        text!(#e.into_dimensionality::<#d>().expect("linad: rank").into_scalar()),
                        Repr::Val,
                    )
                } else {
                    let d = dim_ty(rank - 1);
                    Out::one(
                        text!(#e.into_dimensionality::<#d>().expect("linad: rank")),
                        Repr::Owned,
                    )
                }
            }
        })
    }

    /// Inclusive prefix (or suffix) sums along axis 0.
    pub fn scan(&mut self, arr: &Atom, reverse: bool) -> R<Out> {
        let (elem, rank) = self.array_of(arr)?;
        let e = match elem {
            Scalar::F64 => {
                let rt = rt();
                let x = self.by_ref(arr);
                let kind = if reverse {
                    text!(#rt::ScanKind::ReverseInclusive)
                } else {
                    text!(#rt::ScanKind::Inclusive)
                };
                text!(#rt::scan_axis(#x, 0, #kind))
            }
            Scalar::I64 => {
                let rt = rt();
                let x = self.scalar(arr);
                let d = dim_ty(rank);
                text!(#rt::scan_i64(#x.view().into_dyn(), #reverse)
                    .into_dimensionality::<#d>().expect("linad: rank"))
            }
            Scalar::Bool => return Err("scan of a bool array".into()),
        };
        Ok(Out::one(e, Repr::Owned))
    }

    /// Matrix product by ranks: dot, mat·vec, vec·mat, mat·mat.
    ///
    /// A primal product is ndarray's `dot` (the bits of the user's
    /// `a.dot(&b)`); products with a linear operand use the runtime.
    pub fn matmul(&mut self, a: &Atom, b: &Atom, primal: bool) -> R<Out> {
        let ((_, ra), (_, rb)) = (self.array_of(a)?, self.array_of(b)?);
        let rt = rt();
        let (x, y) = (self.by_ref(a), self.by_ref(b));
        if primal {
            let (xn, yr) = (self.scalar(a), y.clone());
            let repr = if ra == 1 && rb == 1 {
                Repr::Val
            } else {
                Repr::Owned
            };
            if !(1..=2).contains(&ra) || !(1..=2).contains(&rb) {
                return Err(format!("matmul of ranks {ra} and {rb}"));
            }
            return Ok(Out::one(text!(#xn.dot(#yr)), repr));
        }
        Ok(match (ra, rb) {
            (1, 1) => Out::one(text!(#rt::dot(#x, #y)), Repr::Val),
            (2, 1) => Out::one(text!(#rt::matvec(#x, #y)), Repr::Owned),
            (1, 2) => Out::one(text!(#rt::vecmat(#x, #y)), Repr::Owned),
            (2, 2) => Out::one(text!(#rt::matmul(#x, #y)), Repr::Owned),
            _ => return Err(format!("matmul of ranks {ra} and {rb}")),
        })
    }

    /// Transpose of a rank-2 array: free for a view, a movable owned array,
    /// or an owned array that outlives the result (`lent`: a view of it
    /// that `Uses::lenders` tracks).
    pub fn transpose(&mut self, arr: &Atom, movable: bool, lent: bool) -> R<Out> {
        let x = self.scalar(arr);
        let var = arr.var().ok_or("transpose of a literal")?;
        Ok(match self.repr(var) {
            Repr::View => Out::one(text!(#x.reversed_axes()), Repr::View),
            Repr::Owned if lent => Out::one(text!(#x.view().reversed_axes()), Repr::View),
            Repr::Owned if movable => Out::one(text!(#x.reversed_axes()), Repr::Owned),
            _ => Out::one(text!(#x.t().to_owned()), Repr::Owned),
        })
    }

    /// Broadcast to `shape` with `arr`'s axes at `axes`, stretching axes of
    /// length 1 (ndarray's `broadcast`).
    ///
    /// No copy where the source can be borrowed: a view, an array bound
    /// outside the current lambda (never moved inside it) or a linear
    /// variable (used once, here) gives a view of it, through a view with
    /// the new axes bound just before the statement (views never leave the
    /// block they are bound in: block results are owned); so does an owned
    /// array whose last use comes after every use of the result `bind` (it
    /// is moved, if at all, only at its last use, when the view is dead;
    /// never so when this is its last use), and one whose result is only
    /// read by reference (`Uses::lenders`: the array then lives until the
    /// view's last use).
    /// An owned array used for the last time here and broadcast along all
    /// its axes is moved and stretched only if its shape differs. Otherwise
    /// the result is a copy.
    pub fn broadcast(
        &mut self,
        arr: &Atom,
        shape: &[Atom],
        axes: &[usize],
        site: usize,
        movable: bool,
        bind: Option<Var>,
    ) -> R<Out> {
        let nd = nd();
        let sizes: Vec<_> = shape.iter().map(|a| self.usize_of(a)).collect();
        let sh = list(&sizes);
        let ty = self.atom_ty(arr);
        let elem = ty.elem().ok_or("broadcast of a tuple")?;
        let out_ty = array_ty(elem, shape.len());
        let x = self.scalar(arr);
        if axes.is_empty() {
            let rt = rt();
            let e = text!({ let __b: #out_ty = #rt::pooled_full(#sh, #x); __b });
            if let Some(v) = bind {
                self.fills.insert(v, e.clone());
            }
            return Ok(Out::one(e, Repr::Owned));
        }
        let var = arr.var().ok_or("broadcast of a literal array")?;
        let mut view = text!(#x.view());
        for p in 0..shape.len() {
            if !axes.contains(&p) {
                view = text!(#view.insert_axis(#nd::Axis(#p)));
            }
        }
        let s = self.fresh("s");
        let checks = axes.iter().enumerate().map(|(k, ax)| {
            let (k, ax) = (Literal::usize_unsuffixed(k), Literal::usize_unsuffixed(*ax));
            text!((#x.shape()[#k] == #s[#ax] || #x.shape()[#k] == 1))
        });
        let check = text!(assert!(#(#checks)&&*, "linad: broadcast of shape {:?} to {:?}", #x.shape(), #s););
        let dies_first = bind.is_some_and(|y| {
            let (ly, lx) = (self.uses.last_use(y), self.uses.last_use(var));
            ly.zip(lx).is_some_and(|(ly, lx)| ly < lx)
        });
        let borrow = self.repr(var) == Repr::View
            || !self.uses.local(var, site)
            || self.f.vars.is_linear(var)
            || dies_first
            || bind.is_some_and(|y| self.uses.borrows_operand(y));
        if borrow {
            let t = self.fresh("t");
            self.before
                .extend(text!(let #s = #sh; #check let #t = #view;));
            return Ok(Out::one(
                text!(#t.broadcast(#s).expect("linad: broadcast")),
                Repr::View,
            ));
        }
        if movable && axes.len() == shape.len() {
            let rt = rt();
            return Ok(Out::one(
                text!({
                    let #s = #sh;
                    #check
                    #rt::stretch_owned(#x, #s)
                }),
                Repr::Owned,
            ));
        }
        let rt = rt();
        Ok(Out::one(
            text!({
                let #s = #sh;
                #check
                #rt::map(&#view.broadcast(#s).expect("linad: broadcast"), |__v| __v)
            }),
            owned_repr(&ad_core_ir::types::Ty::array(elem, shape.len().max(1))),
        ))
    }
}
