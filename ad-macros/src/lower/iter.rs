//! Iterator chains, lowered when consumed: `a.iter()`, `(a..b)`, `.zip(..)`,
//! `.skip(k)`/`.take(k)` (on the source), `.enumerate()`, `.rev()`,
//! `.cloned()`/`.copied()`, `.map(|x| ..)`, then one of
//! `.sum()`, `.product()`, `.fold(init, f)`, `.count()`, `.collect()`.
//!
//! - elements of arrays (no index needed): `Map` over the arrays, then
//!   `Reduce` (`sum`, `product`) or `Fold`; `fold(f64::NEG_INFINITY, f64::max)`
//!   is `Reduce Max` (and the `min` form `Reduce Min`);
//! - ranges, `enumerate` or `rev` (the index is needed): `Build` over the
//!   length with `Index` of the arrays, or a `Loop` for `fold` (order matters);
//! - `.filter(p)` before `sum`, `product` or `count`: the stages after it
//!   in an `If` on `p`, a dropped item the reduction's identity
//!   ([`Lowerer::apply_stages`]):
//!
//!   ```text
//!   a.iter().filter(|x| **x > 0.0).map(|x| x.ln()).sum::<f64>()
//!   ==>  fold(-0.0, map(a, |x| if x > 0.0 { ln x } else { -0.0 }), add)
//!   ```

use super::ctx::{span_of, Lowerer};
use super::expr::strip;
use super::iter_val::{Cut, Item, IterVal, Source};
use super::types::{classify, Elem, IntTy, TyDesc};
use super::val::Val;
use ad_core_ir::ir::{ArrayOp, Atom, Expr, Fold, If, Loop, Prim, ReduceOp};
use ad_core_ir::types::Ty;
use quote::ToTokens;

/// The value of an item of a zipped iterator, from its leaves' values.
impl Item {
    fn shifted(&self, by: usize) -> Item {
        match self {
            Item::Leaf(k) => Item::Leaf(k + by),
            Item::Pair(a, b) => Item::Pair(Box::new(a.shifted(by)), Box::new(b.shifted(by))),
        }
    }

    fn value(&self, elems: &[Val]) -> Val {
        match self {
            Item::Leaf(k) => elems.get(*k).cloned().unwrap_or(Val::Poison),
            Item::Pair(a, b) => Val::Tuple(vec![a.value(elems), b.value(elems)]),
        }
    }
}

/// A `filter` whose consumer is not `sum`, `product` or `count`.
const FILTERED: &str = "`filter` is supported before `sum`, `product` and `count` (an item it drops then adds nothing); elsewhere use `if` inside the loop or the `map`";

const ITER_METHODS: &str =
    "zip, enumerate, rev, cloned, copied, map, step_by (on ranges), skip, take, then sum, product, fold, count or collect";

impl Lowerer<'_> {
    /// `(a..b)` as the receiver of an iterator method.
    pub fn range_iter(&mut self, r: &syn::ExprRange) -> Option<Val> {
        let (start, n, ty) = self.range_bounds(r)?;
        Some(Val::Iter(Box::new(IterVal {
            src: Source::Range {
                start,
                n,
                ty,
                step: Atom::I64(1),
            },
            enumerate: false,
            rev: false,
            enum_after_rev: false,
            multi_index: false,
            maps: vec![],
            filters: vec![],
            order: None,
        })))
    }

    /// A method of an iterator.
    pub fn iter_method(&mut self, m: &syn::ExprMethodCall, recv: Val) -> Option<Val> {
        let name = m.method.to_string();
        let mut it = match recv {
            Val::Iter(it) => *it,
            Val::Array(a, e, r) => IterVal::of_array(a, e, r),
            _ => return None,
        };
        match name.as_str() {
            "iter" | "into_iter" | "cloned" | "copied" | "by_ref" => {
                self.nargs(m, 0)?;
                Some(Val::Iter(Box::new(it)))
            }
            "enumerate" => {
                self.nargs(m, 0)?;
                if it.enumerate || it.staged() {
                    return self.fail(&m.method, "call `enumerate` directly on the source (`a.iter().enumerate().map(..)`)");
                }
                it.enumerate = true;
                it.enum_after_rev = it.rev;
                Some(Val::Iter(Box::new(it)))
            }
            "rev" => {
                self.nargs(m, 0)?;
                if it.multi_index {
                    return self.fail(&m.method, "`rev` after `indexed_iter` is not supported (ndarray's `indexed_iter` is not double-ended): index the array in a reversed range");
                }
                if let Source::Arrays { rank, .. } = it.src {
                    if rank != 1 {
                        // ndarray's element iterators run backwards only in one dimension.
                        return self.fail(&m.method, "`rev` is supported on one-dimensional arrays only (ndarray's element iterator of a matrix is not double-ended)");
                    }
                }
                it.rev = !it.rev;
                Some(Val::Iter(Box::new(it)))
            }
            "map" => {
                let args = self.nargs(m, 1)?;
                if !matches!(strip(args[0]), syn::Expr::Closure(_) | syn::Expr::Path(_)) {
                    return self.fail(args[0], "`map` takes a closure here (`.map(|x| ..)`, a closure bound by `let`, or `f64::exp`)");
                }
                it.maps.push(args[0].clone());
                Some(Val::Iter(Box::new(it)))
            }
            "zip" => {
                let args = self.nargs(m, 1)?;
                let other = match self.receiver(args[0])? {
                    Val::Iter(o) => *o,
                    Val::Array(a, e, r) => IterVal::of_array(a, e, r),
                    v => return self.fail(args[0], format!("`zip` needs an array iterator (`b.iter()`), found `{}`", v.ty())),
                };
                let plain = |i: &IterVal| !i.enumerate && !i.rev && !i.staged();
                let both_plain = plain(&it) && plain(&other);
                match (&mut it.src, other.src.clone()) {
                    (
                        Source::Arrays { arrs, rank, item },
                        Source::Arrays { arrs: arrs2, rank: rank2, item: item2 },
                    ) if both_plain => {
                        if *rank != rank2 {
                            return self.fail(args[0], "`zip` of arrays of different ranks is not supported");
                        }
                        let shift = arrs.len();
                        arrs.extend(arrs2);
                        *item = Item::Pair(Box::new(item.clone()), Box::new(item2.shifted(shift)));
                        Some(Val::Iter(Box::new(it)))
                    }
                    _ => self.fail(
                        m,
                        "`zip` is supported between array iterators before `map`/`enumerate`/`rev` (`a.iter().zip(b.iter()).map(|(x, y)| ..)`); for indices use `enumerate`",
                    ),
                }
            }
            "sum" | "product" => {
                self.nargs(m, 0)?;
                let want = self.turbofish_elem(m)?;
                let op = if name == "sum" { ReduceOp::Sum } else { ReduceOp::Prod };
                let (arr, elem, rank) = self.materialize_skipping(&it, m, Some(op))?;
                if elem == Elem::Bool {
                    return self.fail(m, format!("cannot {name} `bool` items"));
                }
                if let Some(w) = want {
                    if w.unify(elem).is_none() {
                        return self.fail(m, format!("a value of type `{}` cannot be made by summing an iterator over elements of type `{}`", w.name(), elem.name()));
                    }
                }
                if elem == Elem::F64 {
                    // `Iterator::sum`/`product` of f64 is a sequential left
                    // fold from -0.0 / 1.0 (std's `impl Sum for f64`): lower it
                    // to exactly that, so the derivative's primal is
                    // bit-identical to the user's (ndarray's `sum` is a
                    // different, unrolled order). ndarray's `iter()` walks a
                    // matrix in logical (row-major) order, whatever its
                    // strides: so does the fold, over the flattened array.
                    let arr = if rank == 1 {
                        arr
                    } else {
                        let n = self.count(arr, rank, span_of(m))?;
                        let Val::Array(flat, ..) = self.reshape(arr, elem, rank, vec![n], m)? else {
                            return None;
                        };
                        flat
                    };
                    let (init, p) = if name == "sum" {
                        (Atom::F64(-0.0), Prim::Add)
                    } else {
                        (Atom::F64(1.0), Prim::Mul)
                    };
                    self.at(span_of(m));
                    let r = self.b.fold(&[init], arr, |b, acc, x| vec![b.prim(p, &[acc[0].into(), x.into()]).into()]);
                    return Some(Val::Scalar(Atom::Var(r[0]), elem));
                }
                let v = self.array(ArrayOp::Reduce { op, arr, axis: None }, span_of(m))?;
                Some(Val::Scalar(v, elem))
            }
            "count" => {
                self.nargs(m, 0)?;
                if it.filters.is_empty() {
                    let n = self.iter_len(&it, m)?;
                    return Some(Val::Scalar(n, Elem::Int(IntTy::Usize)));
                }
                // The items kept: a sum of ones.
                it.maps.push(syn::parse_quote!(|_| 1usize));
                let (arr, ..) = self.materialize_skipping(&it, m, Some(ReduceOp::Sum))?;
                let v = self.array(
                    ArrayOp::Reduce {
                        op: ReduceOp::Sum,
                        arr,
                        axis: None,
                    },
                    span_of(m),
                )?;
                Some(Val::Scalar(v, Elem::Int(IntTy::Usize)))
            }
            "collect" | "fold" if !it.filters.is_empty() => self.fail(&m.method, FILTERED),
            "collect" => {
                self.nargs(m, 0)?;
                self.collect(&it, m)
            }
            "fold" => {
                let args = self.nargs(m, 2)?;
                self.fold_iter(it, args[0], args[1], m)
            }
            "max" | "min" | "max_by" | "min_by" | "reduce" => {
                let node = m as *const syn::ExprMethodCall as usize;
                let unwrapped = match self.unwrapping.iter().position(|p| *p == node) {
                    Some(k) => {
                        self.unwrapping.swap_remove(k);
                        true
                    }
                    None => false,
                };
                self.reduce_iter(it, m, unwrapped)
            }
            "step_by" => {
                let args = self.nargs(m, 1)?;
                let Source::Range {
                    n: old_n,
                    step: old_step,
                    ..
                } = it.src
                else {
                    return self.fail(&m.method, "`step_by` is supported on ranges (`(a..b).step_by(k)`): index arrays with the stepped index, or slice them with `s![..;k]`");
                };
                if it.rev || it.enumerate || it.staged() {
                    return self.fail(&m.method, "call `step_by` directly on the range (`(a..b).step_by(k).rev()`, not after `rev`, `enumerate` or `map`)");
                }
                let k = self.int_arg(args[0])?;
                let span = span_of(m);
                // `step_by(0)` panics in Rust: so do the companions.
                let pos = self.prim(Prim::Gt, &[k, Atom::I64(0)], span)?;
                let k = self.panic_unless(pos, k, span)?;
                // ceil(n / k) items: (n - 1) / k + 1, or none.
                let m1 = self.sub_i64(old_n, Atom::I64(1), span)?;
                let q = self.prim(Prim::Div, &[m1, k], span)?;
                let q1 = self.add_i64(q, Atom::I64(1), span)?;
                let any = self.prim(Prim::Gt, &[old_n, Atom::I64(0)], span)?;
                let new_n = self.prim(Prim::Select, &[any, q1, Atom::I64(0)], span)?;
                let new_step = match old_step {
                    Atom::I64(1) => k,
                    _ => self.prim(Prim::Mul, &[old_step, k], span)?,
                };
                if let Source::Range { n, step, .. } = &mut it.src {
                    (*n, *step) = (new_n, new_step);
                }
                Some(Val::Iter(Box::new(it)))
            }
            "skip" | "take" => {
                let args = self.nargs(m, 1)?;
                if it.rev || it.enumerate || it.staged() {
                    return self.fail(&m.method, format!("call `{name}` directly on the source (`a.iter().{name}(k)`, `(a..b).{name}(k)`), before `rev`, `enumerate` or `map`"));
                }
                let k = self.int_arg(args[0])?;
                self.skip_take(it, name == "skip", k, m)
            }
            "filter" => {
                let args = self.nargs(m, 1)?;
                if !matches!(strip(args[0]), syn::Expr::Closure(_) | syn::Expr::Path(_)) {
                    return self.fail(args[0], "`filter` takes a closure here (`.filter(|x| ..)` or a closure bound by `let`)");
                }
                it.filters.push((it.maps.len(), args[0].clone()));
                Some(Val::Iter(Box::new(it)))
            }
            "filter_map" | "chain" | "flat_map" | "take_while" | "skip_while" => self.fail(
                &m.method,
                format!("`{name}` is not supported: iterate over the whole range and use `if` inside `map` (e.g. `.map(|x| if keep {{ x }} else {{ 0.0 }})`)"),
            ),
            _ => self.fail(
                &m.method,
                format!("no iterator method `{name}` is supported in #[differentiable] functions; supported: {ITER_METHODS}"),
            ),
        }
    }

    /// The element type named by `sum::<T>()`, if given.
    fn turbofish_elem(&mut self, m: &syn::ExprMethodCall) -> Option<Option<Elem>> {
        let Some(t) = &m.turbofish else {
            return Some(None);
        };
        match t.args.first() {
            Some(syn::GenericArgument::Type(ty)) => match classify(ty) {
                Ok(TyDesc::Scalar(e)) => Some(Some(e)),
                Ok(_) => self.fail(ty, "expected a scalar type (`sum::<f64>()`)"),
                Err(e) => {
                    self.errors.push(e);
                    None
                }
            },
            _ => Some(None),
        }
    }

    /// `it.skip(k)` (`skip`) or `it.take(k)` on a range or the elements of
    /// one-dimensional arrays, as Rust's: `k` past the end leaves no item
    /// (`skip`) or every item (`take`). A range moves its start and length;
    /// arrays become the builds of their kept elements.
    fn skip_take(
        &mut self,
        mut it: IterVal,
        skip: bool,
        k: Atom,
        m: &syn::ExprMethodCall,
    ) -> Option<Val> {
        let span = span_of(m);
        let n = self.iter_len(&it, m)?;
        let kept = self.prim(Prim::Min, &[k, n], span)?;
        // Items `first .. first + len` of the old order.
        let (first, len) = if skip {
            (kept, self.sub_i64(n, kept, span)?)
        } else {
            (Atom::I64(0), kept)
        };
        match &mut it.src {
            Source::Range { start, n, step, .. } => {
                let off = match step {
                    Atom::I64(1) => first,
                    _ => self.prim(Prim::Mul, &[first, *step], span)?,
                };
                *start = self.add_i64(*start, off, span)?;
                *n = len;
            }
            Source::Arrays { arrs, rank: 1, .. } => {
                let mut kept_arrs = Vec::with_capacity(arrs.len());
                for &(arr, elem) in arrs.iter() {
                    let v = self.build_with(vec![len], m, |lw, ix| {
                        let i = lw.add_i64(Atom::Var(ix[0]), first, span)?;
                        let x = lw.array(ArrayOp::Index { arr, idx: vec![i] }, span)?;
                        Some(Val::Scalar(x, elem))
                    })?;
                    let Val::Array(a, ..) = v else { return None };
                    kept_arrs.push((a, elem));
                }
                *arrs = kept_arrs;
            }
            _ => {
                return self.fail(&m.method, "`skip` and `take` are supported on ranges and on iterators over one-dimensional arrays");
            }
        }
        Some(Val::Iter(Box::new(it)))
    }

    /// The element of `arr` (of rank `rank`) at position `pos` of its
    /// logical (row-major) order.
    fn read_flat(
        &mut self,
        arr: Atom,
        elem: Elem,
        rank: usize,
        pos: Atom,
        span: proc_macro2::Span,
    ) -> Option<Val> {
        let idx = self.position_index(arr, rank, pos, span)?;
        let v = self.array(ArrayOp::Index { arr, idx }, span)?;
        Some(Val::Scalar(v, elem))
    }

    /// Whether every array of `arrs` (of rank `rank`) has the first's
    /// shape (a `bool` atom; `true` for one array).
    pub(super) fn same_shapes(
        &mut self,
        arrs: &[Atom],
        rank: usize,
        span: proc_macro2::Span,
    ) -> Option<Atom> {
        let mut same = Atom::Bool(true);
        for &a in arrs.iter().skip(1) {
            for axis in 0..rank {
                let s0 = self.array(ArrayOp::Shape { arr: arrs[0], axis }, span)?;
                let s = self.array(ArrayOp::Shape { arr: a, axis }, span)?;
                let eq = self.prim(Prim::Eq, &[s0, s], span)?;
                same = self.prim(Prim::And, &[same, eq], span)?;
            }
        }
        Some(same)
    }

    /// The multi-index of position `pos` of the logical (row-major) order
    /// of `arr` (of rank `rank`): `pos` cut by `%` and `/` of the trailing
    /// axes' lengths.
    pub(super) fn position_index(
        &mut self,
        arr: Atom,
        rank: usize,
        pos: Atom,
        span: proc_macro2::Span,
    ) -> Option<Vec<Atom>> {
        let mut idx = vec![Atom::I64(0); rank];
        let mut rest = pos;
        for axis in (1..rank).rev() {
            let s = self.array(ArrayOp::Shape { arr, axis }, span)?;
            idx[axis] = self.prim(Prim::Rem, &[rest, s], span)?;
            rest = self.prim(Prim::Div, &[rest, s], span)?;
        }
        idx[0] = rest;
        Some(idx)
    }

    /// The iterator an `IntoIterator` expression stands for (`&a`, `a`, an
    /// iterator chain): an array's elements, or an error saying what was
    /// `expected` and what was found.
    pub fn iterable(&mut self, expr: &syn::Expr, expected: &str) -> Option<IterVal> {
        let e = match strip(expr) {
            syn::Expr::Reference(r) => &*r.expr,
            e => e,
        };
        match self.receiver(e)? {
            Val::Iter(it) if !it.filters.is_empty() => self.fail(expr, FILTERED),
            Val::Iter(it) => Some(*it),
            Val::Array(a, el, r) => Some(IterVal::of_array(a, el, r)),
            Val::Poison => None,
            other => self.fail(expr, format!("{expected}, found `{}`", other.ty())),
        }
    }

    /// The items of `it` as a one-dimensional array (`.collect()`,
    /// `Array1::from_iter(..)`): a matrix's or rank-3 array's elements in
    /// logical row-major order, as ndarray's `iter()` yields them.
    pub fn collect(&mut self, it: &IterVal, node: &dyn ToTokens) -> Option<Val> {
        let (arr, elem, rank) = self.materialize(it, node)?;
        if rank == 1 {
            return Some(Val::Array(arr, elem, 1));
        }
        let n = self.count(arr, rank, span_of(node))?;
        self.reshape(arr, elem, rank, vec![n], node)
    }

    /// The multi-index of the element at position `pos` of the logical
    /// order of `indexed_iter`'s array: `pos` itself (a `usize`) for rank
    /// 1, else the tuple of `usize`s whose row-major position it is.
    fn multi_index(&mut self, it: &IterVal, pos: Atom, span: proc_macro2::Span) -> Option<Val> {
        let Source::Arrays { arrs, rank, .. } = &it.src else {
            return None;
        };
        let usize_of = |a: Atom| Val::Scalar(a, Elem::Int(IntTy::Usize));
        if *rank == 1 {
            return Some(usize_of(pos));
        }
        let idx = self.position_index(arrs[0].0, *rank, pos, span)?;
        Some(Val::Tuple(idx.into_iter().map(usize_of).collect()))
    }

    /// The number of items.
    pub fn iter_len(&mut self, it: &IterVal, node: &dyn ToTokens) -> Option<Atom> {
        let span = span_of(node);
        match &it.src {
            Source::Range { n, .. } => Some(*n),
            Source::Lanes { arr, .. } => self.array(ArrayOp::Shape { arr: *arr, axis: 0 }, span),
            Source::Windows { arr, size, cut, .. } => {
                let len = self.array(ArrayOp::Shape { arr: *arr, axis: 0 }, span)?;
                match cut {
                    // `len - size + 1` windows, none when `size > len`.
                    Cut::Windows => {
                        let d = self.sub_i64(len, *size, span)?;
                        let d = self.add_i64(d, Atom::I64(1), span)?;
                        self.prim(Prim::Max, &[d, Atom::I64(0)], span)
                    }
                    Cut::Exact => self.prim(Prim::Div, &[len, *size], span),
                    // `ceil(len / size)`
                    Cut::Partial => {
                        let d = self.add_i64(len, *size, span)?;
                        let d = self.sub_i64(d, Atom::I64(1), span)?;
                        self.prim(Prim::Div, &[d, *size], span)
                    }
                }
            }
            // A `zip` stops at the shortest of its arrays' sequences.
            Source::Arrays { arrs, rank, .. } => {
                let mut n = self.count(arrs[0].0, *rank, span)?;
                for (a, _) in &arrs[1..] {
                    let m = self.count(*a, *rank, span)?;
                    n = self.prim(Prim::Min, &[n, m], span)?;
                }
                Some(n)
            }
        }
    }

    /// The item at position `k` (an `i64` atom counting from the first
    /// item in iteration order is `pos`): `(index, item)` with `enumerate`.
    pub fn item_at(&mut self, it: &IterVal, pos: Atom, node: &dyn ToTokens) -> Option<Val> {
        let span = span_of(node);
        let base = match &it.src {
            Source::Range {
                start, ty, step, ..
            } => {
                let off = match step {
                    Atom::I64(1) => pos,
                    _ => self.prim(Prim::Mul, &[pos, *step], span)?,
                };
                let v = self.add_i64(*start, off, span)?;
                Val::Scalar(v, Elem::Int(*ty))
            }
            Source::Windows {
                arr,
                elem,
                size,
                cut,
            } => {
                let (arr, elem) = (*arr, *elem);
                // A window starts at `pos`, a chunk at `pos * size`; the
                // last of `chunks` ends at the vector's end.
                let (start, n) = match cut {
                    Cut::Windows => (pos, *size),
                    Cut::Exact => (self.prim(Prim::Mul, &[pos, *size], span)?, *size),
                    Cut::Partial => {
                        let start = self.prim(Prim::Mul, &[pos, *size], span)?;
                        let len = self.array(ArrayOp::Shape { arr, axis: 0 }, span)?;
                        let rest = self.sub_i64(len, start, span)?;
                        (start, self.prim(Prim::Min, &[*size, rest], span)?)
                    }
                };
                let v = self.build_with(vec![n], node, |lw, ix| {
                    let i = lw.add_i64(start, Atom::Var(ix[0]), span)?;
                    let x = lw.array(ArrayOp::Index { arr, idx: vec![i] }, span)?;
                    Some(Val::Scalar(x, elem))
                })?;
                let Val::Array(w, ..) = v else { return None };
                Val::Array(w, elem, 1)
            }
            Source::Lanes { arr, elem, rank } => {
                let v = self.array(
                    ArrayOp::Index {
                        arr: *arr,
                        idx: vec![pos],
                    },
                    span,
                )?;
                Val::Array(v, *elem, rank - 1)
            }
            // Elements in logical (row-major) order, as ndarray's `iter()`
            // yields them whatever the memory layout; in memory order for
            // `a.fold(..)`.
            Source::Arrays { arrs, item, rank } => {
                let mut elems = vec![];
                let planned = match &it.order {
                    Some(plan) => Some(self.plan_index(plan, pos, span)?),
                    None => None,
                };
                for (a, e) in arrs {
                    elems.push(match &planned {
                        Some(idx) => {
                            let x = self.array(
                                ArrayOp::Index {
                                    arr: *a,
                                    idx: idx.clone(),
                                },
                                span,
                            )?;
                            Val::Scalar(x, *e)
                        }
                        None => self.read_flat(*a, *e, *rank, pos, span)?,
                    });
                }
                item.value(&elems)
            }
        };
        Some(if it.multi_index {
            let index = self.multi_index(it, pos, span)?;
            Val::Tuple(vec![index, base])
        } else if it.enumerate {
            // `.rev().enumerate()` counts iterations: item `pos` is number `n - 1 - pos`.
            let index = if it.enum_after_rev {
                let n = self.iter_len(it, node)?;
                let last = self.sub_i64(n, Atom::I64(1), span)?;
                self.sub_i64(last, pos, span)?
            } else {
                pos
            };
            Val::Tuple(vec![Val::Scalar(index, Elem::Int(IntTy::Usize)), base])
        } else {
            base
        })
    }

    /// Applies the `map` closures to an item (a chain without `filter`:
    /// the consumers other than `sum`, `product` and `count`).
    pub fn apply_maps(&mut self, it: &IterVal, v: Val, node: &dyn ToTokens) -> Option<Val> {
        self.apply_stages(it, v, None, node)
    }

    /// Applies the `map` and `filter` closures to an item, in order. Under a
    /// `filter` the rest runs in an `If` on its predicate (only for the
    /// items it keeps, as in `f`: no `ln` of a rejected item, no index
    /// past the end), and an item it rejects is `skip`'s identity, which
    /// leaves the reduction's value exactly as skipping it does: `-0.0`
    /// for an `f64` sum (`s + -0.0 == s`, whatever `s`, `-0.0` included),
    /// `0` for an integer sum, `1` for a product.
    fn apply_stages(
        &mut self,
        it: &IterVal,
        v: Val,
        skip: Option<ReduceOp>,
        node: &dyn ToTokens,
    ) -> Option<Val> {
        if !it.filters.is_empty() && skip.is_none() {
            return self.fail(node, FILTERED);
        }
        self.stages_from(it, 0, 0, v, skip, node)
    }

    /// [`Self::apply_stages`] from map `k` and filter `f` on.
    fn stages_from(
        &mut self,
        it: &IterVal,
        mut k: usize,
        f: usize,
        mut v: Val,
        skip: Option<ReduceOp>,
        node: &dyn ToTokens,
    ) -> Option<Val> {
        loop {
            if let Some((_, pred)) = it.filters.get(f).filter(|(at, _)| *at == k) {
                return self.filtered(it, k, f, v, pred, skip, node);
            }
            let Some(c) = it.maps.get(k) else {
                return Some(v);
            };
            v = self.apply_closure(c, vec![v])?;
            k += 1;
        }
    }

    /// `if pred(&v) { rest(v) } else { identity }` (see [`Self::apply_stages`]).
    #[allow(clippy::too_many_arguments)]
    fn filtered(
        &mut self,
        it: &IterVal,
        k: usize,
        f: usize,
        v: Val,
        pred: &syn::Expr,
        skip: Option<ReduceOp>,
        node: &dyn ToTokens,
    ) -> Option<Val> {
        let keep = match self.apply_closure(pred, vec![v.clone()])? {
            Val::Scalar(c, Elem::Bool) => c,
            other => {
                return self.fail(
                    pred,
                    format!("a `filter` closure returns `bool`, found `{}`", other.ty()),
                )
            }
        };
        self.b.open();
        let kept = self.stages_from(it, k, f + 1, v, skip, node);
        let number = match &kept {
            Some(Val::Scalar(a, e)) if *e != Elem::Bool => Some((*a, *e)),
            _ => None,
        };
        let then_ = self
            .b
            .close(number.iter().map(|(a, _)| *a).collect(), vec![]);
        let Some((_, elem)) = number else {
            return match kept {
                Some(other) => self.fail(
                    node,
                    format!("the items of a filtered `sum`, `product` or `count` are numbers, found `{}`", other.ty()),
                ),
                None => None,
            };
        };
        let identity = match (skip, elem) {
            (Some(ReduceOp::Prod), Elem::F64) => Atom::F64(1.0),
            (Some(ReduceOp::Prod), _) => Atom::I64(1),
            (_, Elem::F64) => Atom::F64(-0.0),
            _ => Atom::I64(0),
        };
        let r = self.emit1(
            Expr::If(If {
                cond: keep,
                then_,
                else_: super::ctx::const_block(identity),
                lin_shapes: vec![],
            }),
            span_of(pred),
        )?;
        Some(Val::Scalar(r, elem))
    }

    /// The items as an array (rank of the source for plain array maps, 1
    /// otherwise): `(array, element type, rank)`.
    fn materialize(&mut self, it: &IterVal, node: &dyn ToTokens) -> Option<(Atom, Elem, usize)> {
        self.materialize_skipping(it, node, None)
    }

    /// [`Self::materialize`] for a consumer that reduces the items with
    /// `skip` (`sum`, `product`): a `filter` then makes a dropped item its
    /// identity ([`Self::apply_stages`]).
    fn materialize_skipping(
        &mut self,
        it: &IterVal,
        node: &dyn ToTokens,
        skip: Option<ReduceOp>,
    ) -> Option<(Atom, Elem, usize)> {
        if let (false, Source::Arrays { arrs, rank, item }) = (it.indexed(), &it.src) {
            if !it.staged() {
                if let (Item::Leaf(k), Some((a, e))) = (item, arrs.first()) {
                    return Some((arrs.get(*k).map_or(*a, |x| x.0), *e, *rank));
                }
                return self.fail(node, "the items of a `zip` are pairs: `map` them to numbers first (`.map(|(x, y)| x * y)`)");
            }
            let item = item.clone();
            let map = |lw: &mut Self| {
                let v = lw.map_with(arrs, *rank, node, |lw, elems| {
                    let v = item.value(&elems);
                    lw.apply_stages(it, v, skip, node)
                })?;
                let Val::Array(a, e, r) = v else { return None };
                Some((a, e, r))
            };
            if arrs.len() == 1 {
                return map(self);
            }
            // A `zip` stops at the shortest sequence (of the elements in
            // logical order, whatever the arrays' shapes): the elementwise
            // map when every array has the first's shape (the usual case),
            // else a build over the shortest that reads each array at the
            // item's position (`f` does not panic, nor do its companions).
            // Either way one dimension, as the reductions that consume it
            // (`sum`, `product`) flatten the items anyway.
            let (span, r) = (span_of(node), *rank);
            let n = self.iter_len(it, node)?;
            let atoms: Vec<Atom> = arrs.iter().map(|a| a.0).collect();
            let same = self.same_shapes(&atoms, r, span)?;
            self.b.open();
            let mapped = map(self).and_then(|(a, e, _)| {
                if r == 1 {
                    return Some((a, e));
                }
                match self.reshape(a, e, r, vec![n], node)? {
                    Val::Array(a, e, _) => Some((a, e)),
                    _ => None,
                }
            });
            let then_ = self.b.close(mapped.iter().map(|m| m.0).collect(), vec![]);
            let (_, elem) = mapped?;
            self.b.open();
            let built = self.build_with(vec![n], node, |lw, ix| {
                let mut elems = Vec::with_capacity(arrs.len());
                for &(a, e) in arrs.iter() {
                    elems.push(lw.read_flat(a, e, r, Atom::Var(ix[0]), span)?);
                }
                let v = item.value(&elems);
                lw.apply_stages(it, v, skip, node)
            });
            let else_ = self.b.close(
                built
                    .iter()
                    .filter_map(|v| match v {
                        Val::Array(a, ..) => Some(*a),
                        _ => None,
                    })
                    .collect(),
                vec![],
            );
            if else_.results.is_empty() {
                return None;
            }
            let v = self.emit1(
                Expr::If(If {
                    cond: same,
                    then_,
                    else_,
                    lin_shapes: vec![],
                }),
                span,
            )?;
            return Some((v, elem, 1));
        }
        let n = self.iter_len(it, node)?;
        let span = span_of(node);
        let v = self.build_with(vec![n], node, |lw, ix| {
            let pos = lw.position(it, n, Atom::Var(ix[0]), span)?;
            let item = lw.item_at(it, pos, node)?;
            lw.apply_stages(it, item, skip, node)
        })?;
        let Val::Array(a, e, r) = v else { return None };
        Some((a, e, r))
    }

    /// The position of the `k`-th item (`n - 1 - k` when reversed).
    fn position(
        &mut self,
        it: &IterVal,
        n: Atom,
        k: Atom,
        span: proc_macro2::Span,
    ) -> Option<Atom> {
        if it.rev {
            let last = self.sub_i64(n, Atom::I64(1), span)?;
            self.sub_i64(last, k, span)
        } else {
            Some(k)
        }
    }

    /// `.fold(init, f)`.
    pub fn fold_iter(
        &mut self,
        it: IterVal,
        init_e: &syn::Expr,
        f: &syn::Expr,
        m: &syn::ExprMethodCall,
    ) -> Option<Val> {
        let init = self.expr(init_e)?;
        let span = span_of(m);
        // `fold(init, f64::max)` / `fold(init, f64::min)`: a reduction.
        if let syn::Expr::Path(p) = strip(f) {
            let segs: Vec<String> = p
                .path
                .segments
                .iter()
                .map(|s| s.ident.to_string())
                .collect();
            let op = match segs
                .iter()
                .map(String::as_str)
                .collect::<Vec<_>>()
                .as_slice()
            {
                [.., "f64", "max"] => ReduceOp::Max,
                [.., "f64", "min"] => ReduceOp::Min,
                _ => {
                    return self.fail(
                        f,
                        "`fold` takes a closure (`|acc, x| ..`), or `f64::max` / `f64::min`",
                    )
                }
            };
            let Val::Scalar(init_a, Elem::F64) = init else {
                return self.fail(
                    init_e,
                    format!("mismatched types: expected `f64`, found `{}`", init.ty()),
                );
            };
            let (arr, elem, _) = self.materialize(&it, m)?;
            if elem != Elem::F64 {
                return self.fail(
                    m,
                    format!("`f64::max` folds `f64` items, found `{}`", elem.name()),
                );
            }
            let r = self.array(
                ArrayOp::Reduce {
                    op,
                    arr,
                    axis: None,
                },
                span,
            )?;
            let neutral = if op == ReduceOp::Max {
                f64::NEG_INFINITY
            } else {
                f64::INFINITY
            };
            return Some(match init_a {
                Atom::F64(x) if x == neutral => Val::f64(r),
                _ => {
                    let p = if op == ReduceOp::Max {
                        Prim::Max
                    } else {
                        Prim::Min
                    };
                    Val::f64(self.prim(p, &[init_a, r], span)?)
                }
            });
        }
        let Some(init_leaves) = init.leaves() else {
            return self.fail(init_e, format!("the initial value of `fold` must be numbers, arrays or tuples of these, found `{}`", init.ty()));
        };
        let tys: Vec<Ty> = init_leaves.iter().map(|a| self.b.atom_ty(a)).collect();
        let nacc = init_leaves.len();
        let body = |lw: &mut Self, accs: &[ad_core_ir::ir::Var], item: Val| -> Option<Vec<Atom>> {
            let acc = init.rebuild(&mut accs.iter().map(|v| Atom::Var(*v)));
            let r = lw.apply_closure(f, vec![acc, item])?;
            if r.is_poison() {
                return None;
            }
            if init.ty().unify(&r.ty()).is_none() {
                return lw.fail(f, format!("mismatched types: the closure of `fold` returns `{}` for an accumulator of type `{}`", r.ty(), init.ty()));
            }
            r.leaves()
        };
        let single_rank1 =
            matches!(&it.src, Source::Arrays { arrs, rank: 1, .. } if arrs.len() == 1);
        let outs = if !it.indexed() && (single_rank1 || !it.maps.is_empty()) {
            // A sequential IR fold over a (mapped) one-dimensional array.
            let (arr, elem, rank) = self.materialize(&it, m)?;
            if rank != 1 {
                return self.fail(
                    m,
                    "`fold` is supported over one-dimensional arrays and ranges only",
                );
            }
            let mut ptys = tys.clone();
            ptys.push(Ty::Scalar(elem.scalar()));
            let lam = self.lambda(&ptys, &["acc"], |lw, ps| {
                let item = Val::Scalar(Atom::Var(ps[nacc]), elem);
                body(lw, &ps[..nacc], item)
            })?;
            self.emit(
                Expr::Fold(Fold {
                    init: init_leaves.clone(),
                    arr,
                    body: lam,
                }),
                span,
            )?
        } else {
            // A counted loop over the positions, accumulators as state.
            let n = self.iter_len(&it, m)?;
            let mut ptys = vec![Ty::I64];
            ptys.extend(tys.iter().cloned());
            let lam = self.lambda(&ptys, &["k", "acc"], |lw, ps| {
                let item = lw.item_at(&it, Atom::Var(ps[0]), m)?;
                let item = lw.apply_maps(&it, item, m)?;
                body(lw, &ps[1..], item)
            })?;
            self.emit(
                Expr::Loop(Loop {
                    n,
                    rev: it.rev,
                    init: init_leaves.clone(),
                    lin_init: vec![],
                    body: lam,
                }),
                span,
            )?
        };
        Some(init.rebuild(&mut outs.into_iter().map(Atom::Var)))
    }
}

#[cfg(test)]
mod tests {
    use crate::lower::testutil::*;
    use ad_core_ir::interp::Value;

    #[test]
    fn map_sum_zip_and_product() {
        let src = "fn f(a: &Array1<f64>, b: &Array1<f64>, m: &Array2<f64>) -> f64 {
            let s1 = a.iter().map(|x| x * x).sum::<f64>();
            let s2: f64 = a.iter().zip(b.iter()).map(|(x, y)| x * y).sum();
            let s3 = a.iter().zip(b).zip(a.iter()).map(|((x, y), &z)| x * y * z).sum::<f64>();
            let s4 = m.iter().map(|&x| x.exp()).sum::<f64>() + m.iter().sum::<f64>();
            let s5 = b.iter().product::<f64>();
            s1 + s2 + s3 + s4 + s5 + a.iter().count() as f64
        }";
        let (a, b) = ([0.5, -1.0, 2.0], [1.0, 2.0, -3.0]);
        let mm = [0.1, 0.2, 0.3, 0.4];
        let s1: f64 = a.iter().map(|x| x * x).sum();
        let s2: f64 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
        let s3: f64 = a.iter().zip(&b).zip(&a).map(|((x, y), z)| x * y * z).sum();
        let s4: f64 = mm.iter().map(|x: &f64| x.exp()).sum::<f64>() + mm.iter().sum::<f64>();
        let s5: f64 = b.iter().product();
        check(
            src,
            &[v1(&a), v1(&b), Value::f64s(&[2, 2], mm.to_vec())],
            &[fv(s1 + s2 + s3 + s4 + s5 + 3.0)],
        );
    }

    #[test]
    fn ranges_enumerate_and_rev() {
        let src = "fn f(a: &Array1<f64>, x: f64, n: usize) -> (f64, Array1<f64>) {
            let s1 = (0..n).map(|i| x.powi(i as i32)).sum::<f64>();
            let s2 = (1..=n).rev().map(|i| i as f64 * x).sum::<f64>();
            let s3 = a.iter().enumerate().map(|(i, &v)| v * i as f64).sum::<f64>();
            let c: Array1<f64> = a.iter().rev().map(|v| v * x).collect();
            (s1 + s2 + s3, c)
        }";
        let (a, x, n) = ([0.5, -1.0, 2.0], 0.8f64, 4usize);
        let s1: f64 = (0..n).map(|i| x.powi(i as i32)).sum();
        let s2: f64 = (1..=n).rev().map(|i| i as f64 * x).sum();
        let s3: f64 = a.iter().enumerate().map(|(i, v)| v * i as f64).sum();
        let c: Vec<f64> = a.iter().rev().map(|v| v * x).collect();
        check(
            src,
            &[v1(&a), fv(x), iv(n as i64)],
            &[fv(s1 + s2 + s3), v1(&c)],
        );
    }

    #[test]
    fn folds() {
        let src = "fn f(a: &Array1<f64>, b: &Array1<f64>, x: f64) -> f64 {
            let mx = a.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let mn = a.iter().copied().fold(f64::INFINITY, f64::min);
            let m2 = b.iter().cloned().fold(x, f64::max);
            let h = a.iter().fold(0.0, |acc, &v| acc * x + v);
            let (p, q) = a.iter().zip(b.iter()).fold((1.0, 0.0), |(p, q), (u, w)| (p * u, q + u * w));
            let r = (0..3).rev().fold(x, |acc, i| acc * acc + i as f64);
            let t = a.iter().map(|v| v.sin()).fold(0.0, |acc, v| acc + v * v);
            let e = a.fold(0.0, |acc, v| acc + v);
            mx + mn + m2 + h + p + q + r + t + e
        }";
        let (a, b, x) = ([0.5, -1.0, 2.0], [1.0, 2.0, -3.0], 0.3f64);
        let mx = a.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let mn = a.iter().cloned().fold(f64::INFINITY, f64::min);
        let m2 = b.iter().cloned().fold(x, f64::max);
        let h = a.iter().fold(0.0, |acc, &v| acc * x + v);
        let (p, q) = a
            .iter()
            .zip(b.iter())
            .fold((1.0, 0.0), |(p, q), (u, w)| (p * u, q + u * w));
        let r = (0..3).rev().fold(x, |acc, i| acc * acc + i as f64);
        let t = a
            .iter()
            .map(|v: &f64| v.sin())
            .fold(0.0, |acc, v| acc + v * v);
        let e: f64 = a.iter().sum();
        check(
            src,
            &[v1(&a), v1(&b), fv(x)],
            &[fv(mx + mn + m2 + h + p + q + r + t + e)],
        );
    }

    /// `filter` before `sum`, `product` and `count`: the stages after it
    /// run only for the items it keeps (`ln` of a rejected `0` or negative
    /// item would make a NaN derivative; the interpreter's derivative check
    /// would see it).
    #[test]
    fn filters_before_reductions() {
        let src = "fn f(a: &Array1<f64>, b: &Array1<f64>) -> f64 {
            let s1 = a.iter().filter(|x| **x > 0.1).sum::<f64>();
            let s2 = a.iter().filter(|&&x| x > 0.1).map(|x| x.ln()).sum::<f64>();
            let s3: f64 = (0..a.len()).filter(|i| i % 2 == 0).map(|i| a[i] * b[i]).sum();
            let s4 = a.iter().enumerate().filter(|(i, _)| *i != 1).map(|(_, v)| v * v).sum::<f64>();
            let s5 = b.iter().map(|y| y * 2.0).filter(|y| *y < 3.0).product::<f64>();
            let c = a.iter().zip(b.iter()).filter(|(x, y)| **x < **y).count();
            s1 + s2 + s3 + s4 + s5 + c as f64
        }";
        let (a, b) = ([0.5, -1.0, 2.0, 0.0], [1.0, 2.0, -3.0, 0.25]);
        let s1: f64 = a.iter().filter(|x| **x > 0.1).sum();
        let s2: f64 = a.iter().filter(|x| **x > 0.1).map(|x| x.ln()).sum();
        let s3: f64 = (0..4).filter(|i| i % 2 == 0).map(|i| a[i] * b[i]).sum();
        let s4: f64 = a
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != 1)
            .map(|(_, v)| v * v)
            .sum();
        let s5: f64 = b.iter().map(|y| y * 2.0).filter(|y| *y < 3.0).product();
        let c = a.iter().zip(&b).filter(|(x, y)| x < y).count();
        check(
            src,
            &[v1(&a), v1(&b)],
            &[fv(s1 + s2 + s3 + s4 + s5 + c as f64)],
        );
        // Every item dropped: the sum is `f`'s `-0.0`.
        let l =
            lowered("fn f(a: &Array1<f64>) -> f64 { a.iter().filter(|x| **x > 9.0).sum::<f64>() }");
        let got = run_lowered(&l, &[v1(&[1.0, 2.0])]);
        assert!(
            matches!(got[..], [Value::F64(z)] if z.to_bits() == (-0.0f64).to_bits()),
            "{got:?}"
        );
    }

    #[test]
    fn refusals() {
        refuses(
            "fn f(a: &Array1<f64>) -> f64 { let it = a.iter(); 1.0 }",
            "iterators must be consumed in the expression that creates them",
        );
        refuses(
            "fn f(a: &Array1<f64>) -> f64 { a.iter().filter(|x| **x > 0.0).fold(0.0, |s, x| s + x) }",
            "`filter` is supported before `sum`, `product` and `count`",
        );
        refuses(
            "fn f(a: &Array1<f64>) -> f64 { let mut s = 0.0; for x in a.iter().filter(|x| **x > 0.0) { s += x; } s }",
            "`filter` is supported before `sum`, `product` and `count`",
        );
        refuses(
            "fn f(a: &Array1<f64>) -> f64 { let v: Array1<f64> = a.iter().filter(|x| **x > 0.0).cloned().collect(); v.sum() }",
            "`filter` is supported before `sum`, `product` and `count`",
        );
        refuses(
            "fn f(a: &Array1<f64>) -> f64 { a.iter().filter(|x| **x > 0.0).enumerate().map(|(i, x)| x).sum::<f64>() }",
            "call `enumerate` directly on the source",
        );
        refuses(
            "fn f(a: &Array1<f64>) -> f64 { *a.iter().max().unwrap() }",
            "`max()` needs items that are `Ord`, and `f64` is not: use `.fold(f64::NEG_INFINITY, f64::max)` or `.max_by(|a, b| a.total_cmp(b))`",
        );
        refuses(
            "fn f(a: &Array1<f64>) -> f64 { a.iter().zip(a.iter()).sum::<f64>() }",
            "the items of a `zip` are pairs",
        );
        refuses(
            "fn f(a: &Array1<f64>) -> f64 { a.iter().fold(0.0, |acc, x| (acc, x)) }",
            "the closure of `fold` returns `(f64, f64)` for an accumulator of type `f64`",
        );
        refuses(
            "fn f(a: &Array1<f64>) -> f64 { a.iter().fold(0.0, f64::powf) }",
            "`fold` takes a closure",
        );
        refuses(
            "fn f(a: &Array1<f64>) -> f64 { a.iter().map(|x, y| x).sum::<f64>() }",
            "this closure must take 1 parameter here, found 2",
        );
        refuses(
            "fn f(a: &Array1<f64>) -> f64 { a.iter().frob() }",
            "no iterator method `frob` is supported",
        );
        refuses(
            "fn f(a: &Array2<f64>) -> f64 { a.iter().rev().fold(0.0, |s, x| s + x) }",
            "`rev` is supported on one-dimensional arrays only",
        );
    }
}
