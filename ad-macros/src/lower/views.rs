//! Views and axis work of `ndarray`, lowered to builds, broadcasts and
//! reductions: `slice(s![..])`, `slice_axis`, `index_axis`, `diag`,
//! `insert_axis`, `broadcast`, reshapes (`into_shape_with_order`,
//! `to_shape`, `into_shape`), `mean`, `mean_axis`, `map_axis`, `fold_axis`,
//! and the lane iterators (`outer_iter`, `rows`, `columns`, `axis_iter`).
//!
//! A view becomes a `build` reading the source at computed indices (the
//! reverse of an element read is an accumulation into the source's
//! cotangent, so every view is differentiable in both modes):
//!
//! ```text
//! a.slice(s![1..;2, ..])   ==>   build [ceil((r - 1) / 2), c] |i, j| a[1 + 2 i, j]
//! ```
//!
//! Slices follow `ndarray`'s rules: negative indices count from the end, a
//! negative step takes the range from its end (`s![a..b;-1]` is `b-1, .., a`).

use super::construct::split_commas;
use super::ctx::{span_of, Lowerer};
use super::expr::strip;
use super::iter_val::IterVal;
use super::types::Elem;
use super::val::Val;
use ad_core_ir::ir::{ArrayOp, Atom, Expr, If, Prim, ReduceOp};
use proc_macro2::{Span, TokenStream, TokenTree};
use quote::ToTokens;

/// One axis of a slice: a range with a step, or a single index.
enum SliceElem {
    /// `start..end;step` (`end` absent: to the end).
    Range {
        start: Atom,
        end: Option<Atom>,
        step: i64,
    },
    /// One index (removes the axis).
    Index(Atom),
}

/// How one axis of an array is indexed by a slice: at one index (the axis
/// is removed), or from `first` in steps of `step` (negative: backwards).
enum Axis {
    Fixed(Atom),
    Strided { first: Atom, step: i64 },
}

impl Lowerer<'_> {
    /// The view and axis methods of arrays; `None` (no error) when `name` is
    /// not one of them.
    pub fn view_method(
        &mut self,
        m: &syn::ExprMethodCall,
        arr: Atom,
        elem: Elem,
        rank: usize,
    ) -> Option<Option<Val>> {
        let name = m.method.to_string();
        let span = span_of(m);
        Some(match name.as_str() {
            "slice" | "slice_move" => {
                let args = self.nargs(m, 1).map(|a| a[0]);
                args.and_then(|a| self.slice(arr, elem, rank, a))
            }
            "slice_axis" => (|| {
                let args = self.nargs(m, 2)?;
                let axis = self.axis_arg(args[0], rank)?;
                let e = self.slice_arg(args[1])?;
                let mut elems: Vec<SliceElem> = (0..rank).map(|_| full()).collect();
                elems[axis] = e;
                self.slice_with(arr, elem, elems, m)
            })(),
            "index_axis" => (|| {
                let args = self.nargs(m, 2)?;
                let axis = self.axis_arg(args[0], rank)?;
                let i = self.int_arg(args[1])?;
                let mut elems: Vec<SliceElem> = (0..rank).map(|_| full()).collect();
                elems[axis] = SliceElem::Index(i);
                self.slice_with(arr, elem, elems, m)
            })(),
            "diag" => (|| {
                self.nargs(m, 0)?;
                if rank != 2 {
                    return self.fail(m, "`diag` needs a matrix (`Array2`)");
                }
                let r = self.array(ArrayOp::Shape { arr, axis: 0 }, span)?;
                let c = self.array(ArrayOp::Shape { arr, axis: 1 }, span)?;
                let n = self.prim(Prim::Min, &[r, c], span)?;
                self.build_with(vec![n], m, |lw, ix| {
                    let i = Atom::Var(ix[0]);
                    let v = lw.array(
                        ArrayOp::Index {
                            arr,
                            idx: vec![i, i],
                        },
                        span,
                    )?;
                    Some(Val::Scalar(v, elem))
                })
            })(),
            "insert_axis" => (|| {
                let args = self.nargs(m, 1)?;
                let axis = self.axis_arg(args[0], rank + 1)?;
                let mut shape = vec![];
                let mut axes = vec![];
                for k in 0..rank {
                    let out = if k < axis { k } else { k + 1 };
                    axes.push(out);
                    shape.push(self.array(ArrayOp::Shape { arr, axis: k }, span)?);
                }
                shape.insert(axis, Atom::I64(1));
                let v = self.array(ArrayOp::Broadcast { arr, shape, axes }, span)?;
                if let Atom::Var(x) = v {
                    self.unit_axis.insert(x, (arr, axis));
                }
                Some(Val::Array(v, elem, rank + 1))
            })(),
            "broadcast" => (|| {
                // ndarray's rules: `arr`'s axes are the trailing ones; each has
                // the output's size or size 1 (repeated).
                let args = self.nargs(m, 1)?;
                let shape = self.shape_arg_pub(args[0])?;
                if shape.len() < rank {
                    return self.fail(args[0], "`broadcast` cannot lower the rank");
                }
                let off = shape.len() - rank;
                let mut ones = vec![];
                for axis in 0..rank {
                    // ndarray gives `None` (then `unwrap()` panics) unless
                    // the axis has the output's size or size 1: so do we.
                    let n = self.array(ArrayOp::Shape { arr, axis }, span)?;
                    let same = self.prim(Prim::Eq, &[n, shape[off + axis]], span)?;
                    let unit = self.prim(Prim::Eq, &[n, Atom::I64(1)], span)?;
                    let ok = self.prim(Prim::Or, &[same, unit], span)?;
                    let n = self.panic_unless(ok, n, span)?;
                    ones.push(self.prim(Prim::Eq, &[n, Atom::I64(1)], span)?);
                }
                self.build_with(shape, m, |lw, ix| {
                    let mut idx = vec![];
                    for (k, one) in ones.iter().enumerate() {
                        let i = Atom::Var(ix[off + k]);
                        idx.push(lw.prim(Prim::Select, &[*one, Atom::I64(0), i], span)?);
                    }
                    let v = lw.array(ArrayOp::Index { arr, idx }, span)?;
                    Some(Val::Scalar(v, elem))
                })
            })(),
            "into_shape_with_order" | "to_shape" | "into_shape" | "into_shape_clone" => (|| {
                let args = self.nargs(m, 1)?;
                let shape = self.shape_arg_pub(args[0])?;
                self.reshape(arr, elem, rank, shape, m)
            })(
            ),
            "mean" => (|| {
                self.nargs(m, 0)?;
                if elem != Elem::F64 {
                    return self.fail(m, "`mean` of integers is not supported");
                }
                let s = self.array(
                    ArrayOp::Reduce {
                        op: ReduceOp::Sum,
                        arr,
                        axis: None,
                    },
                    span,
                )?;
                let n = self.count(arr, rank, span)?;
                let n = self.nonzero_or_panic(n, span)?;
                let nf = self.prim(Prim::ToF64, &[n], span)?;
                Some(Val::f64(self.prim(Prim::Div, &[s, nf], span)?))
            })(),
            "var" | "std" => (|| {
                let args = self.nargs(m, 1)?;
                if elem != Elem::F64 {
                    return self.fail(m, format!("`{name}` of integers is not supported"));
                }
                let ddof = match self.expr(args[0])? {
                    Val::Scalar(d, Elem::F64) => d,
                    Val::Poison => return None,
                    other => {
                        return self.fail(
                            args[0],
                            format!("`{name}` takes the delta degrees of freedom as an `f64` (`a.{name}(1.0)`), found `{}`", other.ty()),
                        )
                    }
                };
                // ndarray's one pass visits the elements in memory order
                // (`for_each`, as `fold`): the recurrence is walked in it.
                let n = self.count(arr, rank, span)?;
                let plan = self.fold_plan(arr, rank, span)?;
                let flat = self.build_with(vec![n], m, |lw, ix| {
                    let idx = lw.plan_index(&plan, Atom::Var(ix[0]), span)?;
                    let x = lw.array(ArrayOp::Index { arr, idx }, span)?;
                    Some(Val::Scalar(x, elem))
                })?;
                let var = self.welford_var(flat, ddof, span)?;
                if name == "std" {
                    let Val::Scalar(v, _) = var else { return None };
                    return Some(Val::f64(self.prim(Prim::Sqrt, &[v], span)?));
                }
                Some(var)
            })(),
            "mean_axis" => (|| {
                let args = self.nargs(m, 1)?;
                let axis = self.axis_arg(args[0], rank)?;
                if rank < 2 {
                    return self.fail(m, "`mean_axis` of a one-dimensional array: use `mean()`");
                }
                let s = self.array(
                    ArrayOp::Reduce {
                        op: ReduceOp::Sum,
                        arr,
                        axis: Some(axis),
                    },
                    span,
                )?;
                let n = self.array(ArrayOp::Shape { arr, axis }, span)?;
                let n = self.nonzero_or_panic(n, span)?;
                let nf = self.prim(Prim::ToF64, &[n], span)?;
                // ndarray: `sum_axis(axis) / n`, elementwise.
                self.map_with(&[(s, Elem::F64)], rank - 1, m, |lw, xs| {
                    let Val::Scalar(x, _) = xs[0] else {
                        return None;
                    };
                    Some(Val::f64(lw.prim(Prim::Div, &[x, nf], span)?))
                })
            })(),
            "map_axis" | "fold_axis" | "var_axis" | "std_axis" => (|| {
                let n_args = if name == "fold_axis" { 3 } else { 2 };
                let args = self.nargs(m, n_args)?;
                if rank != 2 {
                    return self.fail(m, format!("`{name}` is supported on matrices (`Array2`)"));
                }
                let axis = self.axis_arg(args[0], rank)?;
                // `var_axis(axis, ddof)` / `std_axis(axis, ddof)`: ndarray runs
                // `var`'s one-pass recurrence on every lane along `axis` (so
                // the same values, and the same panic on a `ddof` out of
                // range), `std_axis` then takes square roots as `std` does.
                let statistic: Option<syn::Expr> = match name.as_str() {
                    "var_axis" | "std_axis" => {
                        let whole = syn::Ident::new(&name[..3], m.method.span());
                        let lane = syn::Ident::new("__linad_lane", Span::mixed_site());
                        let ddof = args[1];
                        Some(
                            syn::parse_quote_spanned!(m.method.span()=> |#lane| #lane.#whole(#ddof)),
                        )
                    }
                    _ => None,
                };
                // Lanes along `axis`: rows of `arr` (axis 1) or of its transpose.
                let src = if axis == 0 {
                    self.array(ArrayOp::Transpose { arr }, span)?
                } else {
                    arr
                };
                let n = self.array(ArrayOp::Shape { arr: src, axis: 0 }, span)?;
                let args: Vec<syn::Expr> = args.into_iter().cloned().collect();
                self.build_with(vec![n], m, |lw, ix| {
                    let lane = lw.array(
                        ArrayOp::Index {
                            arr: src,
                            idx: vec![Atom::Var(ix[0])],
                        },
                        span,
                    )?;
                    if name != "fold_axis" {
                        let f = statistic.as_ref().unwrap_or(&args[1]);
                        lw.apply_closure(f, vec![Val::Array(lane, elem, 1)])
                    } else {
                        let it = IterVal::of_array(lane, elem, 1);
                        lw.fold_iter(it, &args[1], &args[2], m)
                    }
                })
            })(),
            "outer_iter" | "rows" | "columns" | "axis_iter" | "lanes" => (|| {
                let axis = match name.as_str() {
                    "axis_iter" => {
                        let args = self.nargs(m, 1)?;
                        self.axis_arg(args[0], rank)?
                    }
                    // The lanes along axis 1 of a matrix are its rows, along
                    // axis 0 its columns.
                    "lanes" => {
                        let args = self.nargs(m, 1)?;
                        if rank == 3 {
                            let axis = self.axis_arg(args[0], rank)?;
                            let rows = self.lanes_as_rows(arr, elem, axis, m)?;
                            return Some(Val::Iter(Box::new(IterVal::of_lanes(rows, elem, 2))));
                        }
                        if rank != 2 {
                            return self.fail(m, "`lanes` is supported on matrices (`Array2`: `lanes(Axis(1))` are the rows, `lanes(Axis(0))` the columns) and rank-3 arrays");
                        }
                        1 - self.axis_arg(args[0], rank)?
                    }
                    "columns" => {
                        self.nargs(m, 0)?;
                        1
                    }
                    _ => {
                        self.nargs(m, 0)?;
                        0
                    }
                };
                if name != "outer_iter" && rank != 2 && !(name == "axis_iter" && axis == 0) {
                    return self.fail(m, format!("`{name}` is supported on matrices (`Array2`)"));
                }
                if rank < 2 {
                    return self.fail(m, format!("`{name}` needs an array of rank 2 or more: iterate a vector with `iter()`"));
                }
                let src = match axis {
                    0 => arr,
                    1 if rank == 2 => self.array(ArrayOp::Transpose { arr }, span)?,
                    _ => return self.fail(m, "lanes along axis 2 are not supported"),
                };
                Some(Val::Iter(Box::new(IterVal::of_lanes(src, elem, rank))))
            })(),
            _ => return None,
        })
    }

    /// The number of elements of an array.
    pub fn count(&mut self, arr: Atom, rank: usize, span: Span) -> Option<Atom> {
        let mut n = self.array(ArrayOp::Shape { arr, axis: 0 }, span)?;
        for axis in 1..rank {
            let s = self.array(ArrayOp::Shape { arr, axis }, span)?;
            n = self.prim(Prim::Mul, &[n, s], span)?;
        }
        Some(n)
    }

    /// `a.slice(s![..])`.
    fn slice(&mut self, arr: Atom, elem: Elem, rank: usize, arg: &syn::Expr) -> Option<Val> {
        let elems = self.slice_elems(rank, arg)?;
        self.slice_with(arr, elem, elems, arg)
    }

    /// The parts of `s![..]` for an array of rank `rank` (missing trailing
    /// parts are full ranges).
    fn slice_elems(&mut self, rank: usize, arg: &syn::Expr) -> Option<Vec<SliceElem>> {
        let syn::Expr::Macro(mac) = strip(arg) else {
            return self.fail(arg, "`slice` takes `s![..]` here");
        };
        if mac.mac.path.segments.last().is_none_or(|s| s.ident != "s") {
            return self.fail(arg, "`slice` takes `s![..]` here");
        }
        let parts = split_commas(mac.mac.tokens.clone());
        if parts.len() > rank {
            return self.fail(
                arg,
                format!(
                    "`s![..]` has {} parts, but the array has rank {rank}",
                    parts.len()
                ),
            );
        }
        let mut elems = vec![];
        for p in &parts {
            elems.push(self.slice_part(p.clone(), arg)?);
        }
        while elems.len() < rank {
            elems.push(full());
        }
        Some(elems)
    }

    /// One part of `s![..]`: `a..b`, `a..b;step`, `..`, or an index.
    fn slice_part(&mut self, ts: TokenStream, at: &syn::Expr) -> Option<SliceElem> {
        let mut range = TokenStream::new();
        let mut step = None;
        let mut it = ts.into_iter().peekable();
        while let Some(t) = it.next() {
            if matches!(&t, TokenTree::Punct(p) if p.as_char() == ';') {
                step = Some(it.collect::<TokenStream>());
                break;
            }
            range.extend([t]);
        }
        let e: syn::Expr =
            match syn::parse2(range) {
                Ok(e) => e,
                Err(_) => return self.fail(
                    at,
                    "a part of `s![..]` must be a range (`a..b`, `..`, `a..b;step`) or an index",
                ),
            };
        let step = match step {
            None => 1,
            Some(s) => match syn::parse2::<syn::Expr>(s)
                .ok()
                .and_then(|e| int_literal(&e))
            {
                Some(0) => return self.fail(at, "a slice step cannot be zero"),
                Some(k) => k,
                None => {
                    return self.fail(at, "a slice step must be an integer literal (`;2`, `;-1`)")
                }
            },
        };
        match strip(&e) {
            syn::Expr::Range(r) => {
                if matches!(r.limits, syn::RangeLimits::Closed(_)) && r.end.is_none() {
                    return self.fail(at, "`a..=` needs an end");
                }
                let start = match &r.start {
                    Some(s) => self.index_atom(s)?,
                    None => Atom::I64(0),
                };
                let end = match &r.end {
                    Some(x) => {
                        let a = self.index_atom(x)?;
                        Some(if matches!(r.limits, syn::RangeLimits::Closed(_)) {
                            self.add_i64(a, Atom::I64(1), span_of(x))?
                        } else {
                            a
                        })
                    }
                    None => None,
                };
                Some(SliceElem::Range { start, end, step })
            }
            _ => {
                if step != 1 {
                    return self.fail(at, "a single index takes no step");
                }
                Some(SliceElem::Index(self.index_atom(&e)?))
            }
        }
    }

    /// An integer index (any integer type; negative values count from the
    /// end later) as an `i64` atom.
    fn index_atom(&mut self, e: &syn::Expr) -> Option<Atom> {
        match self.expr(e)? {
            Val::Scalar(a, Elem::Int(_)) => Some(a),
            other => self.fail(
                e,
                format!("a slice index must be an integer, found `{}`", other.ty()),
            ),
        }
    }

    /// `Slice::from(a..b)`, `Slice::new(start, end, step)`, or a range.
    fn slice_arg(&mut self, e: &syn::Expr) -> Option<SliceElem> {
        match strip(e) {
            syn::Expr::Call(c) => {
                let segs: Vec<String> = match &*c.func {
                    syn::Expr::Path(p) => p
                        .path
                        .segments
                        .iter()
                        .map(|s| s.ident.to_string())
                        .collect(),
                    _ => vec![],
                };
                match (
                    segs.iter()
                        .map(String::as_str)
                        .collect::<Vec<_>>()
                        .as_slice(),
                    c.args.len(),
                ) {
                    ([.., "Slice", "from"], 1) => self.slice_part(c.args[0].to_token_stream(), e),
                    ([.., "Slice", "new"], 3) => {
                        let start = self.index_atom(&c.args[0])?;
                        let end = match strip(&c.args[1]) {
                            syn::Expr::Path(p) if p.path.is_ident("None") => None,
                            syn::Expr::Call(sc)
                                if sc.args.len() == 1
                                    && matches!(&*sc.func, syn::Expr::Path(p) if p.path.is_ident("Some")) =>
                            {
                                Some(self.index_atom(&sc.args[0])?)
                            }
                            _ => {
                                return self.fail(
                                    &c.args[1],
                                    "the end of `Slice::new` is `None` or `Some(end)`",
                                )
                            }
                        };
                        let step =
                            match int_literal(&c.args[2]) {
                                Some(0) | None => return self.fail(
                                    &c.args[2],
                                    "the step of `Slice::new` must be a non-zero integer literal",
                                ),
                                Some(k) => k,
                            };
                        Some(SliceElem::Range { start, end, step })
                    }
                    _ => self.fail(
                        e,
                        "expected `Slice::from(a..b)` or `Slice::new(start, end, step)`",
                    ),
                }
            }
            _ => self.slice_part(e.to_token_stream(), e),
        }
    }

    /// The view of `arr` selected by one element per axis, as a build (a
    /// scalar when every axis is indexed).
    fn slice_with(
        &mut self,
        arr: Atom,
        elem: Elem,
        elems: Vec<SliceElem>,
        node: &dyn ToTokens,
    ) -> Option<Val> {
        let span = span_of(node);
        let (axes, shape) = self.slice_plan(arr, elems, span)?;
        if shape.is_empty() {
            let idx: Vec<Atom> = axes
                .iter()
                .map(|a| match a {
                    Axis::Fixed(i) => *i,
                    Axis::Strided { first, .. } => *first,
                })
                .collect();
            let v = self.array(ArrayOp::Index { arr, idx }, span)?;
            return Some(Val::Scalar(v, elem));
        }
        let out_rank = shape.len();
        let v = self.build_with(shape, node, |lw, ix| {
            let mut idx = vec![];
            let mut next = ix.iter();
            for a in &axes {
                idx.push(match a {
                    Axis::Fixed(i) => *i,
                    Axis::Strided { first, step } => {
                        let k = Atom::Var(*next.next()?);
                        let off = if *step == 1 || *step == -1 {
                            k
                        } else {
                            lw.prim(Prim::Mul, &[k, Atom::I64(step.abs())], span)?
                        };
                        if *step > 0 {
                            lw.add_i64(*first, off, span)?
                        } else {
                            lw.sub_i64(*first, off, span)?
                        }
                    }
                });
            }
            let v = lw.array(ArrayOp::Index { arr, idx }, span)?;
            Some(Val::Scalar(v, elem))
        })?;
        let Val::Array(a, e, _) = v else { return None };
        Some(Val::Array(a, e, out_rank))
    }

    /// `a.slice_mut(s![..]).assign(&v)` or `a.index_axis_mut(Axis(k),
    /// i).assign(&v)` (`fill`: `.fill(x)`, `value` a
    /// scalar): `a` with the slice's elements replaced by `v`'s (or `x`), as
    /// a build over `a`'s shape that reads `v` inside the slice and `a`
    /// elsewhere. `v` must have the slice's shape (checked).
    pub fn assign_slice(
        &mut self,
        (arr, elem, rank): (Atom, Elem, usize),
        view: &syn::ExprMethodCall,
        value: Val,
        fill: bool,
        node: &dyn ToTokens,
    ) -> Option<Atom> {
        let span = span_of(node);
        let elems = match (view.method.to_string().as_str(), view.args.len()) {
            ("slice_mut", 1) => self.slice_elems(rank, &view.args[0])?,
            // `index_axis_mut(Axis(k), i)`: every axis whole but `k`.
            ("index_axis_mut", 2) => {
                let k = self.axis_arg(&view.args[0], rank)?;
                let i = self.index_atom(&view.args[1])?;
                (0..rank)
                    .map(|a| if a == k { SliceElem::Index(i) } else { full() })
                    .collect()
            }
            _ => {
                return self.fail(
                    view,
                    "expected `slice_mut(s![..])` or `index_axis_mut(Axis(k), i)`",
                )
            }
        };
        let (axes, shape) = self.slice_plan(arr, elems, span)?;
        // An index out of range panics in `f` (ndarray's `slice_mut`): the
        // same here.
        let mut checked = vec![];
        for (k, a) in axes.into_iter().enumerate() {
            checked.push(match a {
                Axis::Fixed(i) => {
                    let len = self.array(ArrayOp::Shape { arr, axis: k }, span)?;
                    let lo = self.prim(Prim::Ge, &[i, Atom::I64(0)], span)?;
                    let hi = self.prim(Prim::Lt, &[i, len], span)?;
                    let ok = self.prim(Prim::And, &[lo, hi], span)?;
                    Axis::Fixed(self.panic_unless(ok, i, span)?)
                }
                other => other,
            });
        }
        let axes = checked;
        // The new values: a scalar, or `v` checked to have the slice's shape.
        let (x, v) = match (fill, value) {
            (true, Val::Scalar(x, _)) => (Some(x), None),
            (false, Val::Array(v, _, r)) if r == shape.len() && r > 0 => {
                let checked = self.array(
                    ArrayOp::Broadcast {
                        arr: v,
                        shape: shape.clone(),
                        axes: (0..r).collect(),
                    },
                    span,
                )?;
                (None, Some(checked))
            }
            (_, Val::Poison) => return None,
            (_, other) => {
                return self.fail(
                    node,
                    format!(
                        "`{}` of a slice takes {} here, found `{}`",
                        if fill { "fill" } else { "assign" },
                        if fill {
                            "a number".to_string()
                        } else {
                            format!("an array of the slice's rank {}", shape.len())
                        },
                        other.ty()
                    ),
                )
            }
        };
        let mut full = vec![];
        for axis in 0..rank {
            full.push(self.array(ArrayOp::Shape { arr, axis }, span)?);
        }
        let v = self.build_with(full, node, |lw, ix| {
            // Whether `ix` is in the slice, and its index in the slice.
            let mut inside = Atom::Bool(true);
            let mut at = vec![];
            let mut extents = shape.iter();
            for (a, i) in axes.iter().zip(ix) {
                let i = Atom::Var(*i);
                match a {
                    Axis::Fixed(k) => {
                        let c = lw.prim(Prim::Eq, &[i, *k], span)?;
                        inside = lw.prim(Prim::And, &[inside, c], span)?;
                    }
                    Axis::Strided { first, step } => {
                        let d = if *step > 0 {
                            lw.sub_i64(i, *first, span)?
                        } else {
                            lw.sub_i64(*first, i, span)?
                        };
                        let s = step.abs();
                        let k = if s == 1 {
                            d
                        } else {
                            let r = lw.prim(Prim::Rem, &[d, Atom::I64(s)], span)?;
                            let c = lw.prim(Prim::Eq, &[r, Atom::I64(0)], span)?;
                            inside = lw.prim(Prim::And, &[inside, c], span)?;
                            lw.prim(Prim::Div, &[d, Atom::I64(s)], span)?
                        };
                        let c1 = lw.prim(Prim::Ge, &[d, Atom::I64(0)], span)?;
                        let n = *extents.next()?;
                        let c2 = lw.prim(Prim::Lt, &[k, n], span)?;
                        inside = lw.prim(Prim::And, &[inside, c1], span)?;
                        inside = lw.prim(Prim::And, &[inside, c2], span)?;
                        at.push(k);
                    }
                }
            }
            let idx: Vec<Atom> = ix.iter().map(|i| Atom::Var(*i)).collect();
            let old = |lw: &mut Self| lw.array(ArrayOp::Index { arr, idx }, span);
            let out = match (x, v) {
                (Some(x), _) => {
                    let o = old(lw)?;
                    lw.prim(Prim::Select, &[inside, x, o], span)?
                }
                (None, Some(v)) => {
                    lw.b.open();
                    let t = lw.array(ArrayOp::Index { arr: v, idx: at }, span);
                    let then_ = lw.b.close(t.into_iter().collect(), vec![]);
                    lw.b.open();
                    let e = old(lw);
                    let else_ = lw.b.close(e.into_iter().collect(), vec![]);
                    if then_.results.is_empty() || else_.results.is_empty() {
                        return None;
                    }
                    lw.emit1(
                        Expr::If(If {
                            cond: inside,
                            then_,
                            else_,
                            lin_shapes: vec![],
                        }),
                        span,
                    )?
                }
                (None, None) => return None,
            };
            Some(Val::Scalar(out, elem))
        })?;
        match v {
            Val::Array(a, _, _) => Some(a),
            _ => None,
        }
    }

    /// Per axis of `arr`, how a slice picks its indices, and the slice's
    /// shape (one extent per range axis).
    fn slice_plan(
        &mut self,
        arr: Atom,
        elems: Vec<SliceElem>,
        span: Span,
    ) -> Option<(Vec<Axis>, Vec<Atom>)> {
        let mut axes = vec![];
        let mut shape = vec![];
        for (k, e) in elems.into_iter().enumerate() {
            let len = self.array(ArrayOp::Shape { arr, axis: k }, span)?;
            match e {
                SliceElem::Index(i) => {
                    let i = self.count_from_end(i, len, span)?;
                    axes.push(Axis::Fixed(i));
                }
                SliceElem::Range { start, end, step } => {
                    let start = self.count_from_end(start, len, span)?;
                    let end = match end {
                        Some(e) => self.count_from_end(e, len, span)?,
                        None => len,
                    };
                    // ndarray: the end is raised to the start, then both
                    // must be within `0..=len` (else it panics: so do we).
                    let lo = self.prim(Prim::Ge, &[start, Atom::I64(0)], span)?;
                    let hi = self.prim(Prim::Le, &[start, len], span)?;
                    let ok = self.prim(Prim::And, &[lo, hi], span)?;
                    let start = self.panic_unless(ok, start, span)?;
                    let end = self.prim(Prim::Max, &[end, start], span)?;
                    let ok = self.prim(Prim::Le, &[end, len], span)?;
                    let end = self.panic_unless(ok, end, span)?;
                    let m = self.sub_i64(end, start, span)?;
                    let s = step.abs();
                    let n = if s == 1 {
                        m
                    } else {
                        let m1 = self.add_i64(m, Atom::I64(s - 1), span)?;
                        self.prim(Prim::Div, &[m1, Atom::I64(s)], span)?
                    };
                    let first = if step > 0 {
                        start
                    } else {
                        self.sub_i64(end, Atom::I64(1), span)?
                    };
                    shape.push(n);
                    axes.push(Axis::Strided { first, step });
                }
            }
        }
        Some((axes, shape))
    }

    /// ndarray's `var(ddof)` of the one-dimensional array `flat`, as
    /// ndarray computes it (Welford's one-pass update in element order, so
    /// the primal is bit-identical), panicking as ndarray does unless
    /// `0 <= ddof <= n`:
    ///
    /// ```text
    /// mean_k = mean_{k-1} + (x_k - mean_{k-1}) / k
    /// ss_k   = (x_k - mean_k).mul_add(x_k - mean_{k-1}, ss_{k-1})
    /// var    = ss_n / (n - ddof)
    /// ```
    fn welford_var(&mut self, flat: Val, ddof: Atom, span: Span) -> Option<Val> {
        self.env.push_scope();
        self.env.declare("__linad_var_x", flat, false);
        self.env.declare("__linad_var_ddof", Val::f64(ddof), false);
        let e: syn::Expr = syn::parse_quote_spanned!(span=> {
            let __linad_var_n = __linad_var_x.len() as f64;
            let __linad_var_ok: usize =
                if __linad_var_ddof < 0.0 || __linad_var_ddof > __linad_var_n { 0 } else { 1 };
            // `1 / 0` panics where ndarray's assertion does.
            let __linad_var_dof =
                (__linad_var_n - __linad_var_ddof) * ((1 / __linad_var_ok) as f64);
            let mut __linad_var_mean = 0.0;
            let mut __linad_var_ss = 0.0;
            for __linad_var_i in 0..__linad_var_x.len() {
                let __linad_var_xi = __linad_var_x[__linad_var_i];
                let __linad_var_count = (__linad_var_i + 1) as f64;
                let __linad_var_delta = __linad_var_xi - __linad_var_mean;
                __linad_var_mean = __linad_var_mean + __linad_var_delta / __linad_var_count;
                __linad_var_ss = (__linad_var_xi - __linad_var_mean)
                    .mul_add(__linad_var_delta, __linad_var_ss);
            }
            __linad_var_ss / __linad_var_dof
        });
        let v = self.expr(&e);
        self.env.pop_scope();
        v
    }

    /// `n` itself when it is positive; a panic otherwise. `mean()` and
    /// `mean_axis(..)` of an empty array are `None` in ndarray, and the only
    /// use linad accepts is `.unwrap()` / `.expect(..)`, which panics: so do
    /// the companions.
    pub(super) fn nonzero_or_panic(&mut self, n: Atom, span: Span) -> Option<Atom> {
        let ok = self.prim(Prim::Gt, &[n, Atom::I64(0)], span)?;
        self.panic_unless(ok, n, span)
    }

    /// The integer `x` when `ok` holds; a panic otherwise, through an
    /// integer division by zero (`x * (1 / [ok])`), which the simplifier
    /// keeps because `x` is used through it.
    pub(super) fn panic_unless(&mut self, ok: Atom, x: Atom, span: Span) -> Option<Atom> {
        let one = self.prim(Prim::Select, &[ok, Atom::I64(1), Atom::I64(0)], span)?;
        let guard = self.prim(Prim::Div, &[Atom::I64(1), one], span)?;
        self.prim(Prim::Mul, &[x, guard], span)
    }

    /// `i` if non-negative, `len + i` otherwise (ndarray's negative indices).
    fn count_from_end(&mut self, i: Atom, len: Atom, span: Span) -> Option<Atom> {
        match i {
            Atom::I64(k) if k >= 0 => Some(i),
            Atom::I64(_) => self.add_i64(len, i, span),
            _ => {
                let neg = self.prim(Prim::Lt, &[i, Atom::I64(0)], span)?;
                let wrapped = self.add_i64(len, i, span)?;
                self.prim(Prim::Select, &[neg, wrapped, i], span)
            }
        }
    }

    /// The lanes of the rank-3 array `arr` along `axis` as the rows of a
    /// matrix, in ndarray's order (the other two axes row-major):
    /// `rows[u * n_b + v, l] = arr[.., l, ..]` with `u`, `v` at the other
    /// axes `a < b`.
    fn lanes_as_rows(
        &mut self,
        arr: Atom,
        elem: Elem,
        axis: usize,
        node: &dyn ToTokens,
    ) -> Option<Atom> {
        let span = span_of(node);
        let dims: Vec<Atom> = (0..3)
            .map(|a| self.array(ArrayOp::Shape { arr, axis: a }, span))
            .collect::<Option<_>>()?;
        let (a, b) = match axis {
            0 => (1, 2),
            1 => (0, 2),
            _ => (0, 1),
        };
        let count = self.prim(Prim::Mul, &[dims[a], dims[b]], span)?;
        let (nb, len) = (dims[b], dims[axis]);
        let rows = self.build_with(vec![count, len], node, |lw, ix| {
            let p = Atom::Var(ix[0]);
            let mut idx = vec![Atom::I64(0); 3];
            idx[a] = lw.prim(Prim::Div, &[p, nb], span)?;
            idx[b] = lw.prim(Prim::Rem, &[p, nb], span)?;
            idx[axis] = Atom::Var(ix[1]);
            let v = lw.array(ArrayOp::Index { arr, idx }, span)?;
            Some(Val::Scalar(v, elem))
        })?;
        match rows {
            Val::Array(v, _, _) => Some(v),
            _ => None,
        }
    }

    /// `arr` with the same elements in row-major order and the given shape.
    pub fn reshape(
        &mut self,
        arr: Atom,
        elem: Elem,
        rank: usize,
        shape: Vec<Atom>,
        node: &dyn ToTokens,
    ) -> Option<Val> {
        let span = span_of(node);
        let dims: Vec<Atom> = (0..rank)
            .map(|axis| self.array(ArrayOp::Shape { arr, axis }, span))
            .collect::<Option<_>>()?;
        let out_dims = shape.clone();
        self.build_with(shape, node, |lw, ix| {
            // The flat (row-major) position of the output index ...
            let mut flat = Atom::I64(0);
            for (k, i) in ix.iter().enumerate() {
                let scaled = if k == 0 {
                    flat
                } else {
                    lw.prim(Prim::Mul, &[flat, out_dims[k]], span)?
                };
                flat = lw.add_i64(scaled, Atom::Var(*i), span)?;
            }
            // ... and the input index at that position.
            let mut idx = vec![Atom::I64(0); rank];
            let mut rest = flat;
            for k in (0..rank).rev() {
                if k == 0 {
                    idx[0] = rest;
                } else {
                    idx[k] = lw.prim(Prim::Rem, &[rest, dims[k]], span)?;
                    rest = lw.prim(Prim::Div, &[rest, dims[k]], span)?;
                }
            }
            let v = lw.array(ArrayOp::Index { arr, idx }, span)?;
            Some(Val::Scalar(v, elem))
        })
    }
}

/// `..` over a whole axis.
fn full() -> SliceElem {
    SliceElem::Range {
        start: Atom::I64(0),
        end: None,
        step: 1,
    }
}

/// An integer literal, possibly negated.
fn int_literal(e: &syn::Expr) -> Option<i64> {
    match strip(e) {
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(i),
            ..
        }) => i.base10_parse().ok(),
        syn::Expr::Unary(u) if matches!(u.op, syn::UnOp::Neg(_)) => {
            int_literal(&u.expr).map(|k: i64| -k)
        }
        _ => None,
    }
}
