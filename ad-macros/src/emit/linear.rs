//! Linear operations: ordinary arithmetic on `f64`, arrays and tuples of
//! them. A linear variable is consumed by its one use, so an owned array
//! operand is updated in place (`add_assign`, `mapv_inplace`, `+=` at an
//! index) instead of allocating; views and captured variables are read.

use super::func::{Emitter, Out, R};
use super::inline_exprs::{Pos, Prec};
use super::types::{owned_repr, rt, tuple, Repr};
use crate::text::{text, Code};
use ad_core_ir::ir::{Atom, Dim, LinOp, ReduceOp, ShapeTree, Var};
use ad_core_ir::types::{Scalar, Ty};
use proc_macro2::Ident;

/// An operand of `add`/`neg` on (possibly tuple) values.
#[derive(Clone)]
struct Opnd {
    /// Its name.
    name: Ident,
    /// How it is held.
    repr: Repr,
    /// Whether it may be moved.
    movable: bool,
    /// Whether it is an owned array dead after this use that no view
    /// borrows: its buffer may go back to the pool once read.
    releasable: bool,
}

impl Opnd {
    fn owned(&self) -> Code {
        let n = &self.name;
        match self.repr {
            Repr::Val => text!(#n),
            Repr::Owned if self.movable => text!(#n),
            Repr::Owned => text!(#n.clone()),
            Repr::View => text!(#n.to_owned()),
        }
    }
    fn in_place(&self) -> bool {
        self.repr == Repr::Owned && self.movable
    }
    /// `ad_runtime::recycle(x);` when the operand was only read and is
    /// [`Opnd::releasable`], else nothing.
    fn release(&self) -> Code {
        if !self.releasable {
            return Code::new();
        }
        let (rt, n) = (rt(), &self.name);
        text!(#rt::recycle(#n);)
    }
}

impl Emitter<'_> {
    /// A `dup` of a local owned array one of whose copies is only read by
    /// element or borrowed by one statement (a matrix product, a reduction,
    /// a map: [`super::uses::Uses::lin_element_read`]), all before the other
    /// copy's one use (the linear read-then-update of an array, `a[p, k]`
    /// read, then `a[b, r] = ..`; a cotangent both summed and passed on):
    /// the other copy takes the array (moved, not cloned) and the read copy
    /// is a view of it, dead before that use (the borrow ends at its last
    /// read).
    ///
    /// ```text
    /// let ; r, a2 = dup a    =>    let a2 = a; let r = a2.view();
    /// ```
    pub fn dup_view_then_move(&mut self, x: Var, binds: &[Var], site: usize) -> Option<Code> {
        let [b0, b1] = *binds else { return None };
        // Both copies only read: two views of the array (`lin_op`).
        if self.uses.borrows_operand(b0) {
            return None;
        }
        let local_owned = matches!(self.ty(x), Ty::Array { .. })
            && self.repr(x) == Repr::Owned
            && self.uses.local(x, site);
        if !local_owned {
            return None;
        }
        let (read, other) = if self.uses.lin_element_read(b0) {
            (b0, b1)
        } else if self.uses.lin_element_read(b1) {
            (b1, b0)
        } else {
            return None;
        };
        if self.uses.last_use(read)? >= self.uses.last_use(other)? {
            return None;
        }
        let (n, o, r) = (self.name(x), self.binder(other), self.binder(read));
        self.set_repr(other, Repr::Owned);
        self.set_repr(read, Repr::View);
        // `other` is not marked viewed: the view's last use (a statement
        // that borrows it for its own duration) comes before `other`'s, so
        // `other` may go back to the pool where it dies.
        Some(text!(let #o = #n; let #r = #o.view();))
    }

    fn opnd(&self, v: Var, site: usize) -> Opnd {
        Opnd {
            name: self.name(v),
            repr: self.repr(v),
            movable: self.uses.local(v, site),
            releasable: self.releasable(v, site),
        }
    }

    /// A linear operation.
    pub fn lin_op(&mut self, op: &LinOp, binds: &[Var], site: usize) -> R<Out> {
        let var = |v: &Var| Atom::Var(*v);
        match op {
            LinOp::Zero(st) => {
                let ty = ad_core_ir::typing::shape_ty(st)?;
                // A zero array's buffer comes from the per-thread pool: one
                // that lives for one iteration of a loop or kernel body is
                // given back at its end, and the next iteration takes it
                // again; at the top level it is reused from calls before.
                Ok(Out::one(self.zeros(st)?, owned_repr(&ty)))
            }
            // Scalars by value: an inlined operand is its expression (`inline_exprs.rs`).
            LinOp::Add(x, y) if *self.ty(*x) == Ty::Scalar(Scalar::F64) => {
                let a = self.scalar_at(&var(x), Pos::Left(Prec::Add));
                let b = self.scalar_at(&var(y), Pos::Right(Prec::Add));
                Ok(Out::one(text!(#a + #b), Repr::Val))
            }
            LinOp::Neg(x) if *self.ty(*x) == Ty::Scalar(Scalar::F64) => {
                let a = self.scalar(&var(x));
                Ok(Out::one(text!(-#a), Repr::Val))
            }
            LinOp::Add(x, y) => {
                let ty = self.ty(*x).clone();
                let (a, b) = (self.opnd(*x, site), self.opnd(*y, site));
                let e = self.add(&ty, &a, &b)?;
                Ok(Out::one(e, owned_repr(&ty)))
            }
            LinOp::Neg(x) => {
                let ty = self.ty(*x).clone();
                let a = self.opnd(*x, site);
                let e = self.neg(&ty, &a)?;
                Ok(Out::one(e, owned_repr(&ty)))
            }
            LinOp::Scale { s, x } => self.scale(s, *x, site),
            LinOp::Dup(x) => {
                let a = self.opnd(*x, site);
                let n = &a.name;
                // Views also when the copies are views others stand for
                // (`Uses::borrows_operand`: the array then lives until the
                // last use of its views, and goes back to the pool there).
                let read_only = self.uses.borrows_operand(binds[0])
                    || matches!(self.ty(*x), Ty::Array { .. })
                        && binds.iter().all(|v| self.uses.lin_read_only(*v));
                Ok(match a.repr {
                    // Both copies are only read: two views of the one array.
                    Repr::Owned if read_only => Out {
                        expr: text!((#n.view(), #n.view())),
                        reprs: vec![Repr::View; 2],
                    },
                    Repr::Val => Out {
                        expr: text!((#n, #n)),
                        reprs: vec![Repr::Val; 2],
                    },
                    // Views of static rank are `Copy`.
                    Repr::View => Out {
                        expr: text!((#n, #n)),
                        reprs: vec![Repr::View; 2],
                    },
                    Repr::Owned if a.movable => {
                        let t = self.fresh("dup");
                        Out {
                            expr: text!({ let #t = #n; (#t.clone(), #t) }),
                            reprs: vec![Repr::Owned; 2],
                        }
                    }
                    Repr::Owned => Out {
                        expr: text!((#n.clone(), #n.clone())),
                        reprs: vec![Repr::Owned; 2],
                    },
                })
            }
            LinOp::Drop(_) => Ok(Out {
                expr: text!(()),
                reprs: vec![],
            }),
            LinOp::Tuple(xs) => {
                let parts: Vec<_> = xs.iter().map(|x| self.own_lin(*x, site)).collect();
                let ty = Ty::Tuple(xs.iter().map(|x| self.ty(*x).clone()).collect());
                Ok(Out::one(tuple(&parts), owned_repr(&ty)))
            }
            LinOp::Untuple(x) => {
                let Ty::Tuple(parts) = self.ty(*x).clone() else {
                    return Err("linear untuple of a non-tuple".into());
                };
                let e = self.own_lin(*x, site);
                Ok(Out {
                    expr: if parts.len() == 1 { text!(#e.0) } else { e },
                    reprs: parts.iter().map(owned_repr).collect(),
                })
            }
            LinOp::Index { x, idx } => self.index(&var(x), idx, site),
            LinOp::Update { x, idx, val, add } => {
                let rank = self.lin_rank(*x)?;
                let target = self.own_lin(*x, site);
                let v = self.scalar(&var(val));
                let vr = self.var_ref(*val);
                let mut out = self.update(target, Some(*x), Scalar::F64, rank, idx, v, vr, *add)?;
                // A sub-array added in is dead after the update: its buffer
                // goes back to the per-thread pool.
                let dead = self.repr(*val) == Repr::Owned
                    && self.ty(*val).rank().is_some_and(|r| r > 0)
                    && self.uses.local(*val, site);
                if dead {
                    let (rt, e, n, r) = (rt(), out.expr, self.name(*val), self.fresh("r"));
                    out.expr = text!({ let #r = #e; #rt::recycle(#n); #r });
                }
                Ok(out)
            }
            LinOp::Take {
                x,
                idx,
                zero: false,
            } => {
                // Read the element; the array is passed on as it is held (a
                // view stays a view, an owned array is moved), as for `dup`.
                let e = self.index(&var(x), idx, site)?;
                let a = self.opnd(*x, site);
                let (arr, repr) = match a.repr {
                    Repr::View => {
                        let n = &a.name;
                        (text!(#n), Repr::View)
                    }
                    Repr::Owned | Repr::Val => (a.owned(), Repr::Owned),
                };
                let (t, ex) = (self.fresh("e"), e.expr);
                Ok(Out {
                    expr: text!({ let #t = #ex; (#t, #arr) }),
                    reprs: vec![e.reprs[0], repr],
                })
            }
            LinOp::Take { x, idx, zero: true } => {
                let rank = self.lin_rank(*x)?;
                let target = self.own_lin(*x, site);
                self.take(target, rank, idx)
            }
            LinOp::Gather { x, idx } => self.gather(&var(x), idx),
            LinOp::ScatterAdd { len, idx, x } => self.scatter_add(len, idx, &var(x)),
            LinOp::Sum { x, axis } => self.reduce(ReduceOp::Sum, &var(x), *axis, false),
            // A scalar broadcast whose one use only borrows it (a map's
            // linear input, a reduction): a view of the one value, bound
            // just before the statement, instead of a filled array.
            LinOp::Broadcast { x, shape, axes }
                if axes.is_empty()
                    && !shape.is_empty()
                    && binds.len() == 1
                    && self.uses.lin_borrowed(binds[0]) =>
            {
                let nd = super::types::nd();
                let sizes: Vec<_> = shape.iter().map(|a| self.usize_of(a)).collect();
                let sh = super::array::list(&sizes);
                let (v, c, t) = (self.scalar(&var(x)), self.fresh("c"), self.fresh("t"));
                self.before
                    .extend(text!(let #c = #v; let #t = #nd::aview0(&#c);));
                Ok(Out::one(
                    text!(#t.broadcast(#sh).expect("linad: broadcast")),
                    Repr::View,
                ))
            }
            LinOp::Broadcast { x, shape, axes } => {
                let m = self.lin_movable(*x, site);
                self.broadcast(&var(x), shape, axes, site, m, None)
            }
            LinOp::SumTo { x, shape } => {
                let rt = rt();
                let sizes: Vec<_> = shape.iter().map(|a| self.usize_of(a)).collect();
                let sh = super::array::list(&sizes);
                if self.uses.borrows_operand(binds[0]) {
                    // A result only read: a view of `x` itself when nothing
                    // is summed (a broadcast that stretched nothing), so a
                    // cotangent read twice is not copied for it. `x` lives
                    // until the view's last use (`Uses::borrows_operand`).
                    let (c, s) = (self.fresh("c"), self.fresh("s"));
                    let (xr, n) = (self.var_ref(*x), self.name(*x));
                    self.before
                        .extend(text!(let #c = #rt::sum_to_if_needed(#xr, #sh);));
                    return Ok(Out::one(
                        text!(match &#c { Some(#s) => #s.view(), None => #n.view() }),
                        Repr::View,
                    ));
                }
                let e = if self.lin_movable(*x, site) {
                    let n = self.name(*x);
                    text!(#rt::sum_to_owned(#n, #sh))
                } else {
                    let xr = self.var_ref(*x);
                    text!(#rt::sum_to_shape(#xr, #sh))
                };
                Ok(Out::one(e, Repr::Owned))
            }
            LinOp::Transpose(x) => {
                let m = self.lin_movable(*x, site);
                self.transpose(&var(x), m, false)
            }
            LinOp::MatMul { a, x, lin_left } => {
                if *lin_left {
                    self.matmul(&var(x), a, false)
                } else {
                    self.matmul(a, &var(x), false)
                }
            }
            LinOp::Outer { x, b, lin_left } => {
                let rt = rt();
                let (xr, br) = (self.var_ref(*x), self.by_ref(b));
                let e = if *lin_left {
                    text!(#rt::outer(#xr, #br))
                } else {
                    text!(#rt::outer(#br, #xr))
                };
                Ok(Out::one(e, Repr::Owned))
            }
            LinOp::Scan { x, reverse } => self.scan(&var(x), *reverse),
        }
        .inspect(|o| {
            debug_assert!(o.reprs.len() == binds.len() || matches!(op, LinOp::Drop(_)));
        })
    }

    /// The zero of a shape tree; arrays take their buffer from the
    /// per-thread pool (`ad_runtime::pooled_zeros`).
    pub fn zeros(&self, st: &ShapeTree) -> R<Code> {
        Ok(match st {
            ShapeTree::Scalar => text!(0.0f64),
            ShapeTree::Array(ds) if ds.is_empty() => return Err("a zero array of rank 0".into()),
            ShapeTree::Array(ds) => {
                let sizes: Vec<_> = ds
                    .iter()
                    .map(|d| match d {
                        Dim::Atom(a) => self.usize_of(a),
                        Dim::Of(v, k) => {
                            let n = self.name(*v);
                            text!(#n.shape()[#k])
                        }
                    })
                    .collect();
                let rt = rt();
                text!(#rt::pooled_zeros::<f64, _>([#(#sizes),*]))
            }
            ShapeTree::Tuple(ts) => {
                let parts = ts.iter().map(|t| self.zeros(t)).collect::<R<Vec<_>>>()?;
                tuple(&parts)
            }
        })
    }

    /// `x + y` of linear values of type `ty`.
    fn add(&mut self, ty: &Ty, x: &Opnd, y: &Opnd) -> R<Code> {
        let rt = rt();
        let (a, b) = (&x.name, &y.name);
        Ok(match ty {
            Ty::Scalar(Scalar::F64) => text!(#a + #b),
            Ty::Array {
                elem: Scalar::F64, ..
            } => {
                // The operand only read goes back to the pool (dead: each
                // linear value has one use).
                let t = self.fresh("acc");
                if x.in_place() {
                    let rel = y.release();
                    text!({ let mut #t = #a; #rt::add_assign(&mut #t, &#b); #rel #t })
                } else if y.in_place() {
                    let rel = x.release();
                    text!({ let mut #t = #b; #rt::add_assign(&mut #t, &#a); #rel #t })
                } else {
                    let sum = text!(#rt::zip_map(&#a, &#b, |__a: f64, __b: f64| __a + __b));
                    let (ra, rb) = (x.release(), y.release());
                    if ra.is_empty() && rb.is_empty() {
                        sum
                    } else {
                        text!({ let #t = #sum; #ra #rb #t })
                    }
                }
            }
            Ty::Tuple(ts) => {
                let (xs, ys) = (self.parts(ts.len(), "x"), self.parts(ts.len(), "y"));
                let mut sums = vec![];
                for (k, t) in ts.iter().enumerate() {
                    let (p, q) = (part(&xs[k], t), part(&ys[k], t));
                    sums.push(self.add(t, &p, &q)?);
                }
                let (px, py) = (names_pat(&xs), names_pat(&ys));
                let (ox, oy) = (x.owned(), y.owned());
                let r = tuple(&sums);
                text!({ let #px = #ox; let #py = #oy; #r })
            }
            _ => return Err(format!("linear add of a {ty}")),
        })
    }

    /// `-x` of a linear value of type `ty`.
    fn neg(&mut self, ty: &Ty, x: &Opnd) -> R<Code> {
        let rt = rt();
        let a = &x.name;
        Ok(match ty {
            Ty::Scalar(Scalar::F64) => text!(-#a),
            Ty::Array {
                elem: Scalar::F64, ..
            } => {
                if x.in_place() {
                    let t = self.fresh("neg");
                    text!({ let mut #t = #a; #t.mapv_inplace(|__v: f64| -__v); #t })
                } else {
                    text!(#rt::map(&#a, |__v: f64| -__v))
                }
            }
            Ty::Tuple(ts) => {
                let xs = self.parts(ts.len(), "x");
                let mut negs = vec![];
                for (k, t) in ts.iter().enumerate() {
                    let p = part(&xs[k], t);
                    negs.push(self.neg(t, &p)?);
                }
                let px = names_pat(&xs);
                let ox = x.owned();
                let r = tuple(&negs);
                text!({ let #px = #ox; #r })
            }
            _ => return Err(format!("linear negation of a {ty}")),
        })
    }

    /// `s * x`, `s` a non-linear scalar or array (elementwise).
    fn scale(&mut self, s: &Atom, x: Var, site: usize) -> R<Out> {
        let rt = rt();
        let nd = super::types::nd();
        let a = self.opnd(x, site);
        let n = &a.name;
        let sv = self.scalar(s);
        let s_arr = matches!(self.atom_ty(s), Ty::Array { .. });
        let x_ty = self.ty(x).clone();
        let x_arr = matches!(x_ty, Ty::Array { .. });
        let e = match (s_arr, x_arr) {
            (false, false) => {
                let sv = self.scalar_at(s, Pos::Left(Prec::Mul));
                let n = self.scalar_at(&Atom::Var(x), Pos::Right(Prec::Mul));
                text!(#sv * #n)
            }
            (false, true) if a.in_place() => {
                let t = self.fresh("sc");
                text!({ let mut #t = #n; #t.mapv_inplace(|__v: f64| #sv * __v); #t })
            }
            (false, true) => text!(#rt::map(&#n, |__v: f64| #sv * __v)),
            (true, false) => text!(#rt::map(&#sv, |__s: f64| __s * #n)),
            (true, true) if a.in_place() => {
                let t = self.fresh("sc");
                text!({
                    let mut #t = #n;
                    #nd::Zip::from(&mut #t).and(&#sv).for_each(|__x: &mut f64, &__s: &f64| *__x = __s * *__x);
                    #t
                })
            }
            (true, true) => text!(#rt::zip_map(&#sv, &#n, |__s: f64, __v: f64| __s * __v)),
        };
        let repr = if s_arr || x_arr {
            Repr::Owned
        } else {
            Repr::Val
        };
        Ok(Out::one(e, repr))
    }

    fn parts(&mut self, n: usize, what: &str) -> Vec<Ident> {
        (0..n).map(|_| self.fresh(what)).collect()
    }
}

fn part(name: &Ident, ty: &Ty) -> Opnd {
    Opnd {
        name: name.clone(),
        repr: owned_repr(ty),
        movable: true,
        releasable: matches!(ty, Ty::Array { .. }),
    }
}

fn names_pat(ns: &[Ident]) -> Code {
    let ts: Vec<Code> = ns.iter().map(|n| text!(#n)).collect();
    tuple(&ts)
}
