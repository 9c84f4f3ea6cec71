//! Method calls: the dispatcher by receiver type, and the methods of `f64`
//! (`x.sin()`, `x.powi(2)`, `x.max(y)`, `x.mul_add(a, b)`, ...) and of integers
//! (`max`, `min`, `abs`, `pow`). Array methods are in `arrays.rs`, iterator
//! methods in `iter.rs`.

use super::ctx::{span_of, Lowerer};
use super::expr::strip;
use super::ops::typed_arith;
use super::types::{Elem, IntTy};
use super::val::Val;
use ad_core_ir::ir::{ArrayOp, Atom, Prim};
use proc_macro2::Span;

const F64_METHODS: &str = "sin, cos, tan, exp, ln, log2, log10, sqrt, abs, tanh, sinh, cosh, atan, asin, acos, asinh, acosh, atanh, exp_m1, ln_1p, recip, powi, powf, atan2, hypot, max, min, mul_add, sin_cos, exp2, cbrt, log, clamp, to_degrees, to_radians, floor, ceil, round, trunc, fract, signum, copysign, rem_euclid, div_euclid, is_nan, is_finite, is_infinite, is_sign_negative, is_sign_positive";

/// Array methods that return an `Option` or a `Result` in `ndarray` (the
/// value is taken with `unwrap()` / `expect(..)`).
const OPTION_METHODS: &[&str] = &[
    "first",
    "last",
    "mean",
    "mean_axis",
    "broadcast",
    "into_shape_with_order",
    "to_shape",
    "into_shape",
    "into_shape_clone",
    "from_shape_vec",
    "concatenate",
    "stack",
];

/// `a.get(i).copied().unwrap_or(d)` (also `.cloned()`; `a` a variable)
/// as the bounds test it stands for, `{ let k = i; if k < a.len() { a[k] }
/// else { d } }` (for `a.get((i, j))` / `a.get([i, j])`, `i < a.nrows() &&
/// j < a.ncols()`, `a[[i, j]]`), and `a.get(i).copied().unwrap()` /
/// `a.get(i).unwrap()` as the read `a[i]` (whose panic stands for the
/// `unwrap`'s). `None` for anything else.
fn checked_get(m: &syn::ExprMethodCall) -> Option<syn::Expr> {
    let method = m.method.to_string();
    let (get, copied) = through_copied(&m.receiver);
    let default = match (method.as_str(), m.args.len()) {
        // `unwrap_or` needs the `Option<f64>` of `copied()` / `cloned()`.
        ("unwrap_or", 1) if copied => Some(&m.args[0]),
        ("unwrap", 0) => None,
        _ => return None,
    };
    let syn::Expr::MethodCall(g) = get else {
        return None;
    };
    if g.method != "get" || g.args.len() != 1 || !matches!(strip(&g.receiver), syn::Expr::Path(_)) {
        return None;
    }
    let (a, span) = (&g.receiver, g.method.span());
    let k = syn::Ident::new("__linad_get", span);
    let parts: Vec<&syn::Expr> = match strip(&g.args[0]) {
        syn::Expr::Tuple(t) => t.elems.iter().collect(),
        syn::Expr::Array(t) => t.elems.iter().collect(),
        _ => vec![],
    };
    let Some(d) = default else {
        let i = &g.args[0];
        return Some(match parts.as_slice() {
            [i, j] => syn::parse_quote_spanned!(span=> #a[[#i, #j]]),
            _ => syn::parse_quote_spanned!(span=> #a[#i]),
        });
    };
    Some(match parts.as_slice() {
        [i, j] => syn::parse_quote_spanned!(span=> {
            let #k = (#i, #j);
            if #k.0 < #a.nrows() && #k.1 < #a.ncols() { #a[[#k.0, #k.1]] } else { #d }
        }),
        _ => {
            let i = &g.args[0];
            syn::parse_quote_spanned!(span=> {
                let #k = #i;
                if #k < #a.len() { #a[#k] } else { #d }
            })
        }
    })
}

/// The call an `unwrap` unwraps, looking through `.copied()` / `.cloned()`
/// (`x.first().copied().unwrap()`), and whether it looked through one.
fn through_copied(e: &syn::Expr) -> (&syn::Expr, bool) {
    match strip(e) {
        syn::Expr::MethodCall(m)
            if m.args.is_empty()
                && matches!(m.method.to_string().as_str(), "copied" | "cloned") =>
        {
            (strip(&m.receiver), true)
        }
        other => (other, false),
    }
}

/// The primitive of a one-argument `f64` method.
fn unary_prim(name: &str) -> Option<Prim> {
    Some(match name {
        "sin" => Prim::Sin,
        "cos" => Prim::Cos,
        "tan" => Prim::Tan,
        "exp" => Prim::Exp,
        "ln" => Prim::Ln,
        "log2" => Prim::Log2,
        "log10" => Prim::Log10,
        "sqrt" => Prim::Sqrt,
        "abs" => Prim::Abs,
        "tanh" => Prim::Tanh,
        "sinh" => Prim::Sinh,
        "cosh" => Prim::Cosh,
        "atan" => Prim::Atan,
        "asin" => Prim::Asin,
        "acos" => Prim::Acos,
        "asinh" => Prim::Asinh,
        "acosh" => Prim::Acosh,
        "atanh" => Prim::Atanh,
        "exp_m1" => Prim::ExpM1,
        "ln_1p" => Prim::Ln1p,
        "cbrt" => Prim::Cbrt,
        // Piecewise constant: no tangent (zero almost everywhere), as JAX.
        "floor" => Prim::Floor,
        "ceil" => Prim::Ceil,
        "round" => Prim::Round,
        "trunc" => Prim::Trunc,
        "signum" => Prim::Signum,
        _ => return None,
    })
}

/// The primitive of a two-argument `f64` method.
fn binary_prim(name: &str) -> Option<Prim> {
    Some(match name {
        "powf" => Prim::Powf,
        "atan2" => Prim::Atan2,
        "hypot" => Prim::Hypot,
        "copysign" => Prim::Copysign,
        "max" => Prim::Max,
        "min" => Prim::Min,
        _ => return None,
    })
}

impl Lowerer<'_> {
    /// The receiver of a method call (a range `(a..b)` starts an iterator).
    pub fn receiver(&mut self, e: &syn::Expr) -> Option<Val> {
        match strip(e) {
            syn::Expr::Range(r) => self.range_iter(r),
            _ => self.expr(e),
        }
    }

    /// `recv.method(args)`.
    pub fn method_call(&mut self, m: &syn::ExprMethodCall) -> Option<Val> {
        if let Some(e) = checked_get(m) {
            return self.expr(&e);
        }
        if let Some(v) = self.assign_lane(m) {
            return v;
        }
        if let Some(e) = self.in_place_rewrite(m) {
            return self.expr(&e);
        }
        if let Some(v) = self.mapv_inplace(m) {
            return v;
        }
        if let Some(v) = self.map_inplace(m) {
            return v;
        }
        if let Some(v) = self.iter_mut_for_each(m) {
            return v;
        }
        if let Some(v) = self.zip_call(m) {
            return v;
        }
        // `it.max_by(..).unwrap()`: the reduction may give its `Option`'s
        // value (`iter_reduce.rs`), which `unwrap` passes on.
        let unwraps_reduction = match strip(&m.receiver) {
            syn::Expr::MethodCall(inner)
                if matches!(m.method.to_string().as_str(), "unwrap" | "expect")
                    && super::iter_reduce::UNWRAPPED_REDUCTIONS
                        .contains(&inner.method.to_string().as_str()) =>
            {
                self.unwrapping
                    .push(inner as *const syn::ExprMethodCall as usize);
                true
            }
            _ => false,
        };
        let recv = self.receiver(&m.receiver)?;
        if unwraps_reduction && matches!(recv, Val::Scalar(..) | Val::Tuple(..)) {
            return Some(recv);
        }
        if m.turbofish.is_some()
            && !matches!(m.method.to_string().as_str(), "sum" | "product" | "collect")
        {
            return self.fail(
                &m.turbofish,
                "generic arguments on this method are not supported",
            );
        }
        // `x.first().copied()`: the `Option<&f64>` of an element made an
        // `Option<f64>` (`unwrap` below passes the value on).
        if matches!(m.method.to_string().as_str(), "copied" | "cloned")
            && m.args.is_empty()
            && matches!(recv, Val::Scalar(..))
            && matches!(strip(&m.receiver), syn::Expr::MethodCall(inner) if matches!(inner.method.to_string().as_str(), "first" | "last"))
        {
            return Some(recv);
        }
        // `x.mean().unwrap()`, `a.broadcast(..).unwrap()`, `into_shape_with_order(..).unwrap()`:
        // the methods that return an `Option` / `Result` here give the value.
        if matches!(m.method.to_string().as_str(), "unwrap" | "expect")
            && matches!(recv, Val::Scalar(..) | Val::Array(..))
            && match through_copied(&m.receiver).0 {
                syn::Expr::MethodCall(inner) => {
                    OPTION_METHODS.contains(&inner.method.to_string().as_str())
                }
                syn::Expr::Call(c) => {
                    matches!(&*c.func, syn::Expr::Path(p) if p.path.segments.last().is_some_and(|s| OPTION_METHODS.contains(&s.ident.to_string().as_str())))
                }
                _ => false,
            }
        {
            return Some(recv);
        }
        match recv {
            Val::Scalar(a, Elem::F64) => {
                let mut args = vec![];
                for e in &m.args {
                    args.push((self.expr(e)?, e));
                }
                self.f64_method(&m.method, Val::f64(a), args, span_of(m))
            }
            Val::Scalar(a, e @ Elem::Int(_)) => {
                let mut args = vec![];
                for x in &m.args {
                    args.push((self.expr(x)?, x));
                }
                self.int_method(&m.method, a, e, args, span_of(m))
            }
            Val::Array(a, e, r) => self.array_method(m, a, e, r),
            it @ Val::Iter(_) => self.iter_method(m, it),
            other => self.fail(
                &m.method,
                format!(
                    "no method `{}` on `{}` is supported in #[differentiable] functions",
                    m.method,
                    other.ty()
                ),
            ),
        }
    }

    /// `a.assign(&v)`, `a.fill(x)`, `a.row_mut(i).assign(&v)`,
    /// `a.column_mut(j).fill(x)`, ... on a local `let mut` array: the
    /// variable is rebound to the updated array (a functional update: the
    /// row, the column of the transpose, or the whole array). `None` when
    /// `m` is not of this form.
    fn assign_lane(&mut self, m: &syn::ExprMethodCall) -> Option<Option<Val>> {
        use ad_core_ir::ir::ArrayOp;
        let name = m.method.to_string();
        if !matches!(name.as_str(), "assign" | "fill") || m.args.len() != 1 {
            return None;
        }
        // `a.slice_mut(s![..]).assign(&v)`, `a.index_axis_mut(Axis(k),
        // i).fill(x)`, ...
        if let syn::Expr::MethodCall(inner) = strip(&m.receiver) {
            let view = matches!(
                (inner.method.to_string().as_str(), inner.args.len()),
                ("slice_mut", 1) | ("index_axis_mut", 2)
            );
            if view {
                let syn::Expr::Path(p) = strip(&inner.receiver) else {
                    return None;
                };
                let id = self.env.lookup(&p.path.get_ident()?.to_string())?;
                return Some((|| {
                    let Val::Array(arr, elem, rank) = self.env.get(id).val.clone() else {
                        return self.fail(&inner.receiver, "`slice_mut` needs an array");
                    };
                    if !self.check_mutable(id, &inner.receiver) {
                        return None;
                    }
                    let arg = match strip(&m.args[0]) {
                        syn::Expr::Reference(r) => &*r.expr,
                        e => e,
                    };
                    let value = self.expr(arg)?;
                    let new =
                        self.assign_slice((arr, elem, rank), inner, value, name == "fill", m)?;
                    self.env.set(id, Val::Array(new, elem, rank));
                    Some(Val::Unit)
                })());
            }
        }
        let (target, lane) = match strip(&m.receiver) {
            syn::Expr::MethodCall(inner)
                if matches!(inner.method.to_string().as_str(), "row_mut" | "column_mut")
                    && inner.args.len() == 1 =>
            {
                (
                    strip(&inner.receiver),
                    Some((inner.method.to_string(), &inner.args[0])),
                )
            }
            e @ syn::Expr::Path(_) => (e, None),
            _ => return None,
        };
        let syn::Expr::Path(p) = target else {
            return None;
        };
        let id = self.env.lookup(&p.path.get_ident()?.to_string())?;
        let span = span_of(m);
        Some((|| {
            let Val::Array(arr, elem, rank) = self.env.get(id).val.clone() else {
                return self.fail(target, "`assign` / `fill` need an array");
            };
            if !self.check_mutable(id, target) {
                return None;
            }
            let arg = match strip(&m.args[0]) {
                syn::Expr::Reference(r) => &*r.expr,
                e => e,
            };
            let value = self.expr(arg)?;
            let lane_rank = if lane.is_some() { rank - 1 } else { rank };
            if lane.is_some() && rank != 2 {
                return self.fail(
                    &m.receiver,
                    "`row_mut` / `column_mut` need a matrix (`Array2`)",
                );
            }
            // The transposed array for a column; its row `i` is the lane.
            let (base, index) = match &lane {
                Some((which, i)) => {
                    let i = self.int_arg(i)?;
                    let base = if which == "column_mut" {
                        self.array(ArrayOp::Transpose { arr }, span)?
                    } else {
                        arr
                    };
                    (base, Some(i))
                }
                None => (arr, None),
            };
            let new_lane = match (name.as_str(), value) {
                ("fill", Val::Scalar(x, _)) => {
                    let mut shape = vec![];
                    for axis in 0..lane_rank {
                        let a = match index {
                            Some(_) => axis + 1,
                            None => axis,
                        };
                        shape.push(self.array(ArrayOp::Shape { arr: base, axis: a }, span)?);
                    }
                    self.array(
                        ArrayOp::Broadcast {
                            arr: x,
                            shape,
                            axes: vec![],
                        },
                        span,
                    )?
                }
                ("assign", Val::Array(v, _, r)) if r == lane_rank => v,
                (_, Val::Poison) => return None,
                (_, other) => {
                    return self.fail(
                        &m.args[0],
                        format!(
                            "`{name}` takes {} here, found `{}`",
                            if name == "fill" {
                                "a number"
                            } else {
                                "an array of the same rank"
                            },
                            other.ty()
                        ),
                    )
                }
            };
            let new = match index {
                Some(i) => {
                    let u = self.array(
                        ArrayOp::Update {
                            arr: base,
                            idx: vec![i],
                            val: new_lane,
                            add: false,
                        },
                        span,
                    )?;
                    match &lane {
                        Some((w, _)) if w == "column_mut" => {
                            self.array(ArrayOp::Transpose { arr: u }, span)?
                        }
                        _ => u,
                    }
                }
                None => new_lane,
            };
            self.env.set(id, Val::Array(new, elem, rank));
            Some(Val::Unit)
        })())
    }

    /// In-place updates of a local array written as the updates the
    /// lowering knows, with ndarray's element operations (same values):
    ///
    /// ```text
    /// a.scaled_add(s, &v)                 ==>  a += &(s * &v)
    /// a.row_mut(i).mapv_inplace(f)        ==>  a.row_mut(i).assign(&a.row(i).mapv(f))
    /// a.column_mut(j).scaled_add(s, &v)   ==>  a.column_mut(j).assign(&(&a.column(j) + &(s * &v)))
    /// ```
    ///
    /// (ndarray's `scaled_add` is `*y = *y + s * x`, `+=` is `*y = *y + t`;
    /// `row_mut` / `column_mut` / `slice_mut` / `index_axis_mut`, read
    /// through `row` / `column` / `slice` / `index_axis`.) `None` when `m`
    /// is not of this form or `a` is not a local variable.
    fn in_place_rewrite(&self, m: &syn::ExprMethodCall) -> Option<syn::Expr> {
        let name = m.method.to_string();
        let span = m.method.span();
        let local = |e: &syn::Expr| -> bool {
            matches!(strip(e), syn::Expr::Path(p)
                if p.path.get_ident().is_some_and(|id| self.env.lookup(&id.to_string()).is_some()))
        };
        // `s * &v` of `scaled_add(s, &v)` (two arguments).
        let scaled = |m: &syn::ExprMethodCall| -> syn::Expr {
            let (s, v) = (&m.args[0], &m.args[1]);
            let v = match strip(v) {
                syn::Expr::Reference(r) => &*r.expr,
                e => e,
            };
            syn::parse_quote_spanned!(span=> ((#s) * &(#v)))
        };
        match (name.as_str(), m.args.len(), strip(&m.receiver)) {
            ("scaled_add", 2, a) if local(a) => {
                let t = scaled(m);
                Some(syn::parse_quote_spanned!(span=> #a += &#t))
            }
            ("mapv_inplace" | "scaled_add", _, syn::Expr::MethodCall(lane)) => {
                let read = match (lane.method.to_string().as_str(), lane.args.len()) {
                    ("row_mut", 1) => "row",
                    ("column_mut", 1) => "column",
                    ("slice_mut", 1) => "slice",
                    ("index_axis_mut", 2) => "index_axis",
                    _ => return None,
                };
                let a = strip(&lane.receiver);
                if !local(a) {
                    return None;
                }
                let read = syn::Ident::new(read, lane.method.span());
                let args = &lane.args;
                let current: syn::Expr = syn::parse_quote_spanned!(span=> #a.#read(#args));
                let value: syn::Expr = match (name.as_str(), m.args.len()) {
                    ("mapv_inplace", 1) => {
                        let f = &m.args[0];
                        syn::parse_quote_spanned!(span=> #current.mapv(#f))
                    }
                    ("scaled_add", 2) => {
                        let t = scaled(m);
                        syn::parse_quote_spanned!(span=> (&#current + &#t))
                    }
                    _ => return None,
                };
                Some(syn::parse_quote_spanned!(span=> #lane.assign(&#value)))
            }
            _ => None,
        }
    }

    /// `a.mapv_inplace(f)` on a local `let mut` array: `a` is rebound to
    /// `a.mapv(f)` (elementwise, so the same values as ndarray's in-place
    /// update). `None` when `m` is not of this form.
    fn mapv_inplace(&mut self, m: &syn::ExprMethodCall) -> Option<Option<Val>> {
        if m.method != "mapv_inplace" || m.args.len() != 1 {
            return None;
        }
        let syn::Expr::Path(p) = strip(&m.receiver) else {
            return None;
        };
        let id = self.env.lookup(&p.path.get_ident()?.to_string())?;
        Some((|| {
            let Val::Array(arr, elem, rank) = self.env.get(id).val.clone() else {
                return self.fail(&m.receiver, "`mapv_inplace` needs an array");
            };
            if !self.check_mutable(id, &m.receiver) {
                return None;
            }
            let mut as_mapv = m.clone();
            as_mapv.method = syn::Ident::new("mapv", m.method.span());
            let new = self.array_method(&as_mapv, arr, elem, rank)?;
            self.env.set(id, new);
            Some(Val::Unit)
        })())
    }

    /// `Zip::from(a).and(b)..map_collect(|x, y| ..)`: a map over the arrays;
    /// `Zip::from(a).and(b)..for_each(|x, y| ..)` and
    /// `..fold(init, |acc, x, y| ..)`: a loop over the elements in `Zip`'s
    /// order ([`Self::zip_loop`]). `None` when `m` is not of this form.
    fn zip_call(&mut self, m: &syn::ExprMethodCall) -> Option<Option<Val>> {
        let name = m.method.to_string();
        let nargs = match name.as_str() {
            "map_collect" | "for_each" => 1,
            "fold" => 2,
            _ => return None,
        };
        if m.args.len() != nargs {
            return None;
        }
        // The arrays, innermost `Zip::from(a)` first.
        let mut arrs: Vec<&syn::Expr> = vec![];
        let mut e = strip(&m.receiver);
        loop {
            match e {
                syn::Expr::MethodCall(and) if and.method == "and" && and.args.len() == 1 => {
                    arrs.push(&and.args[0]);
                    e = strip(&and.receiver);
                }
                syn::Expr::Call(c)
                    if c.args.len() == 1
                        && matches!(&*c.func, syn::Expr::Path(p)
                            if p.path.segments.len() >= 2
                                && p.path.segments[p.path.segments.len() - 2].ident == "Zip"
                                && p.path.segments.last().is_some_and(|s| s.ident == "from")) =>
                {
                    arrs.push(&c.args[0]);
                    break;
                }
                _ => return None,
            }
        }
        arrs.reverse();
        let cl = &m.args[nargs - 1];
        if name != "map_collect" {
            let init = (name == "fold").then(|| &m.args[0]);
            return Some(self.zip_loop(m, &arrs, init, cl));
        }
        if let Some(a) = arrs.iter().find(|a| mut_ref(a).is_some()) {
            return Some(self.fail(a, "`map_collect` reads its arrays: pass them as `&a`"));
        }
        let arrs: Vec<syn::Expr> = arrs.iter().map(|a| deref(a)).collect();
        Some((|| {
            let mut vals = vec![];
            let mut rank = None;
            for a in &arrs {
                match self.expr(a)? {
                    Val::Array(x, e, r) => {
                        if rank.is_some_and(|k| k != r) {
                            return self.fail(a, "`Zip` needs arrays of one shape");
                        }
                        rank = Some(r);
                        vals.push((x, e));
                    }
                    other => {
                        return self.fail(a, format!("`Zip` takes arrays, found `{}`", other.ty()))
                    }
                }
            }
            self.map_with(&vals, rank?, m, |lw, xs| lw.apply_closure(cl, xs))
        })())
    }

    /// `Zip::from(&mut y).and(&x)..for_each(|y, &x| ..)` and
    /// `Zip::from(&a).and(&b)..fold(init, |acc, &x, &y| ..)`: a loop over
    /// the positions of the arrays (one shape, else a panic as in `f`) in
    /// the order `Zip` visits them (its memory order,
    /// [`Self::zip_plan`]), which decides the bits of what the body
    /// accumulates. Each closure parameter is bound to its array's element
    /// there; the parameter of a mutable array (`&mut y`, a local
    /// variable) is its element as a place: `*y` reads and writes
    /// `y[[i, j]]`. `fold` carries the accumulator as loop state.
    ///
    /// ```text
    /// Zip::from(&mut y).and(&x).for_each(|y, &x| *y += 2.0 * x)
    /// ==>  for ((i,), x) in <positions of x, with x[i]> { y[i] += 2.0 * x; }
    /// ```
    pub(super) fn zip_loop(
        &mut self,
        m: &syn::ExprMethodCall,
        arrs: &[&syn::Expr],
        init: Option<&syn::Expr>,
        cl: &syn::Expr,
    ) -> Option<Val> {
        let what = if init.is_some() { "fold" } else { "for_each" };
        let syn::Expr::Closure(c) = strip(cl) else {
            return self.fail(cl, format!("`{what}` takes a closure here"));
        };
        let skip = usize::from(init.is_some());
        if c.inputs.len() != arrs.len() + skip {
            return self.fail(
                &c.inputs,
                format!(
                    "this closure must take {} parameters here",
                    arrs.len() + skip
                ),
            );
        }
        let span = m.method.span();
        let untyped = |p: &syn::Pat| -> syn::Pat {
            match p {
                syn::Pat::Type(pt) => (*pt.pat).clone(),
                p => p.clone(),
            }
        };
        // The arrays' values (a mutable one's current value), one rank.
        let mut vals: Vec<(Atom, Elem)> = vec![];
        let mut rank = None;
        for a in arrs {
            match self.expr(&deref(a))? {
                Val::Array(x, e, r) => {
                    if rank.is_some_and(|k| k != r) {
                        return self.fail(*a, "`Zip` needs arrays of one shape");
                    }
                    rank = Some(r);
                    vals.push((x, e));
                }
                other => {
                    return self.fail(*a, format!("`Zip` takes arrays, found `{}`", other.ty()))
                }
            }
        }
        let rank = rank?;
        if rank == 0 {
            return self.fail(arrs[0], "`Zip` over arrays of rank 1 or more");
        }
        let idx: Vec<syn::Ident> = (0..rank)
            .map(|k| syn::Ident::new(&format!("__linad_zip_{k}"), span))
            .collect();
        // Patterns bound per position: the index, then the elements of the
        // arrays read; `*y` of a mutable array's `y` becomes its place.
        let mut pats: Vec<syn::Pat> = vec![syn::parse_quote_spanned!(span=> (#(#idx,)*))];
        let mut read: Vec<(Atom, Elem)> = vec![];
        let mut writes: Vec<(String, syn::Expr)> = vec![];
        for ((a, p), &v) in arrs.iter().zip(c.inputs.iter().skip(skip)).zip(&vals) {
            let p = untyped(p);
            if let Some(y) = mut_ref(a) {
                let syn::Pat::Ident(pi) = &p else {
                    return self.fail(
                        &p,
                        "the parameter of a mutable `Zip` array must be a name, used as `*name`",
                    );
                };
                let place: syn::Expr = if rank == 1 {
                    let i = &idx[0];
                    syn::parse_quote_spanned!(span=> #y[#i])
                } else {
                    syn::parse_quote_spanned!(span=> #y[[#(#idx),*]])
                };
                writes.push((pi.ident.to_string(), place));
            } else {
                // `&x` binds the element; `x` a reference to it (`*x` is
                // read as `x`: references are values here).
                pats.push(match p {
                    syn::Pat::Reference(r) => (*r.pat).clone(),
                    p => p,
                });
                read.push(v);
            }
        }
        let mut body = (*c.body).clone();
        let mut rw = super::element_places::DerefWrites {
            writes: &writes,
            bad: None,
        };
        syn::visit_mut::VisitMut::visit_expr_mut(&mut rw, &mut body);
        if let Some(bad) = rw.bad {
            return self.fail(
                &bad,
                "use the element of a mutable `Zip` array as `*name` (to read or to write it)",
            );
        }
        // One shape, or a panic (as ndarray's `and`).
        let mut n = self.count(vals[0].0, rank, span)?;
        let atoms: Vec<Atom> = vals.iter().map(|v| v.0).collect();
        let same = self.same_shapes(&atoms, rank, span)?;
        if same != Atom::Bool(true) {
            n = self.panic_unless(same, n, span)?;
        }
        let plan = self.zip_plan(&atoms, rank, span)?;
        let first = vals[0].0;
        let item = |lw: &mut Self, k: Atom| -> Option<Val> {
            let ix = match &plan {
                Some(plan) => lw.plan_index(plan, k, span)?,
                None => lw.position_index(first, rank, k, span)?,
            };
            let mut items = vec![Val::Tuple(
                ix.iter()
                    .map(|i| Val::Scalar(*i, Elem::Int(IntTy::Usize)))
                    .collect(),
            )];
            for &(a, e) in &read {
                let x = lw.array(
                    ArrayOp::Index {
                        arr: a,
                        idx: ix.clone(),
                    },
                    span,
                )?;
                items.push(Val::Scalar(x, e));
            }
            Some(Val::Tuple(items))
        };
        let pat: syn::Pat = syn::parse_quote_spanned!(span=> (#(#pats,)*));
        let Some(init) = init else {
            let block: syn::Block = syn::parse_quote_spanned!(span=> { #body; });
            return self.counted_loop(&block, Some(&pat), span, n, false, &item);
        };
        // `fold`: the accumulator is a hidden variable the body assigns.
        let acc = syn::Ident::new("__linad_zip_acc", span);
        let acc_pat = untyped(&c.inputs[0]);
        let start = self.expr(init)?;
        self.env.push_scope();
        let id = self.env.declare(&acc.to_string(), start.clone(), true);
        let block: syn::Block = syn::parse_quote_spanned!(span=> {
            #acc = { let #acc_pat = #acc; #body };
        });
        let done = self.counted_loop(&block, Some(&pat), span, n, false, &item);
        let out = self.env.get(id).val.clone();
        self.env.pop_scope();
        done?;
        if start.ty().unify(&out.ty()).is_none() {
            return self.fail(cl, format!("mismatched types: the closure of `fold` returns `{}` for an accumulator of type `{}`", out.ty(), start.ty()));
        }
        Some(out)
    }

    /// An `f64` method on lowered operands (also used for `f64::sin(x)` and
    /// elementwise on arrays).
    pub fn f64_method(
        &mut self,
        name: &syn::Ident,
        x: Val,
        args: Vec<(Val, &syn::Expr)>,
        span: Span,
    ) -> Option<Val> {
        let Val::Scalar(x, Elem::F64) = x else {
            return None;
        };
        let n = name.to_string();
        let want = match n.as_str() {
            _ if unary_prim(&n).is_some() => 0,
            "recip" | "exp2" | "to_degrees" | "to_radians" | "sin_cos" | "fract" => 0,
            "is_nan" | "is_finite" | "is_infinite" | "is_sign_negative" | "is_sign_positive" => 0,
            "powi" | "log" | "rem_euclid" | "div_euclid" => 1,
            _ if binary_prim(&n).is_some() => 1,
            "mul_add" | "clamp" => 2,
            _ => {
                let hint = self.defaulted_hint(&x);
                return self.fail(
                    name,
                    format!("no method `{n}` on `f64` is supported in #[differentiable] functions; supported: {F64_METHODS}{hint}"),
                );
            }
        };
        if args.len() != want {
            let s = |k: usize| if k == 1 { "argument" } else { "arguments" };
            let were = if args.len() == 1 { "was" } else { "were" };
            return self.fail_at(
                span,
                format!(
                    "this method takes {want} {} but {} {} {were} supplied",
                    s(want),
                    args.len(),
                    s(args.len())
                ),
            );
        }
        // Arguments: `f64`, except `powi`'s exponent (an integer).
        let mut ops = vec![];
        for (k, (v, e)) in args.iter().enumerate() {
            let int = n == "powi" && k == 0;
            match v {
                Val::Scalar(a, Elem::Int(_)) if int => ops.push(*a),
                Val::Scalar(a, Elem::F64) if !int => ops.push(*a),
                Val::Poison => return None,
                other => {
                    let want = if int { "i32" } else { "f64" };
                    return self.fail(
                        *e,
                        format!(
                            "mismatched types: expected `{want}`, found `{}`",
                            other.ty()
                        ),
                    );
                }
            }
        }
        let f = |a: Atom| Some(Val::f64(a));
        if let Some(p) = unary_prim(&n) {
            return f(self.prim(p, &[x], span)?);
        }
        if let Some(p) = binary_prim(&n) {
            return f(self.prim(p, &[x, ops[0]], span)?);
        }
        match n.as_str() {
            "recip" => f(self.prim(Prim::Div, &[Atom::F64(1.0), x], span)?),
            "powi" => f(self.prim(Prim::Powi, &[x, ops[0]], span)?),
            "mul_add" => f(self.prim(Prim::MulAdd, &[x, ops[0], ops[1]], span)?),
            "clamp" => f(self.prim(Prim::Clamp, &[x, ops[0], ops[1]], span)?),
            "exp2" => f(self.prim(Prim::Exp2, &[x], span)?),
            // Rust's `fract` is `x - x.trunc()`: derivative 1.
            "fract" => {
                let t = self.prim(Prim::Trunc, &[x], span)?;
                f(self.prim(Prim::Sub, &[x, t], span)?)
            }
            "log" => {
                let a = self.prim(Prim::Ln, &[x], span)?;
                let b = self.prim(Prim::Ln, &[ops[0]], span)?;
                f(self.prim(Prim::Div, &[a, b], span)?)
            }
            "to_degrees" => f(self.prim(
                Prim::Mul,
                &[x, Atom::F64(180.0 / std::f64::consts::PI)],
                span,
            )?),
            "to_radians" => f(self.prim(
                Prim::Mul,
                &[x, Atom::F64(std::f64::consts::PI / 180.0)],
                span,
            )?),
            "sin_cos" => {
                let s = self.prim(Prim::Sin, &[x], span)?;
                let c = self.prim(Prim::Cos, &[x], span)?;
                Some(Val::Tuple(vec![Val::f64(s), Val::f64(c)]))
            }
            "rem_euclid" => f(self.rem_euclid(x, ops[0], span)?),
            "div_euclid" => f(self.div_euclid(x, ops[0], span)?),
            _ => self.f64_predicate(&n, x, span),
        }
    }

    /// `x.rem_euclid(b)` as std computes it: `r = x % b`, then `r + |b|`
    /// where `r < 0` (derivatives: 1 in `x`, piecewise constant in `b`
    /// through `%`'s quotient).
    fn rem_euclid(&mut self, x: Atom, b: Atom, span: Span) -> Option<Atom> {
        let r = self.prim(Prim::Rem, &[x, b], span)?;
        let neg = self.prim(Prim::Lt, &[r, Atom::F64(0.0)], span)?;
        let m = self.prim(Prim::Abs, &[b], span)?;
        let up = self.prim(Prim::Add, &[r, m], span)?;
        self.prim(Prim::Select, &[neg, up, r], span)
    }

    /// `x.div_euclid(b)` as std computes it: `q = trunc(x / b)`, moved one
    /// toward `-b`'s side where `x % b < 0` (piecewise constant: no
    /// tangent).
    fn div_euclid(&mut self, x: Atom, b: Atom, span: Span) -> Option<Atom> {
        let d = self.prim(Prim::Div, &[x, b], span)?;
        let q = self.prim(Prim::Trunc, &[d], span)?;
        let r = self.prim(Prim::Rem, &[x, b], span)?;
        let neg = self.prim(Prim::Lt, &[r, Atom::F64(0.0)], span)?;
        let pos_b = self.prim(Prim::Gt, &[b, Atom::F64(0.0)], span)?;
        let down = self.prim(Prim::Sub, &[q, Atom::F64(1.0)], span)?;
        let up = self.prim(Prim::Add, &[q, Atom::F64(1.0)], span)?;
        let moved = self.prim(Prim::Select, &[pos_b, down, up], span)?;
        self.prim(Prim::Select, &[neg, moved, q], span)
    }

    /// The `bool` methods of `f64`, as std defines them: `is_nan` (`x != x`),
    /// `is_finite` (`|x| < ∞`), `is_infinite` (`|x| == ∞`), and the sign
    /// bit's `is_sign_negative` / `is_sign_positive` (read through
    /// `copysign(1, x)`, NaNs and zeros included).
    fn f64_predicate(&mut self, n: &str, x: Atom, span: Span) -> Option<Val> {
        let inf = Atom::F64(f64::INFINITY);
        let b = match n {
            "is_nan" => self.prim(Prim::Ne, &[x, x], span)?,
            "is_finite" | "is_infinite" => {
                let a = self.prim(Prim::Abs, &[x], span)?;
                let p = if n == "is_finite" { Prim::Lt } else { Prim::Eq };
                self.prim(p, &[a, inf], span)?
            }
            "is_sign_negative" | "is_sign_positive" => {
                let s = self.prim(Prim::Copysign, &[Atom::F64(1.0), x], span)?;
                let p = if n == "is_sign_negative" {
                    Prim::Lt
                } else {
                    Prim::Gt
                };
                self.prim(p, &[s, Atom::F64(0.0)], span)?
            }
            _ => return None,
        };
        Some(Val::Scalar(b, Elem::Bool))
    }

    /// An integer method: `max`, `min`, `abs`, `pow` (literal exponent).
    pub fn int_method(
        &mut self,
        name: &syn::Ident,
        x: Atom,
        elem: Elem,
        args: Vec<(Val, &syn::Expr)>,
        span: Span,
    ) -> Option<Val> {
        let n = name.to_string();
        let arg = |lw: &mut Self, k: usize| -> Option<(Atom, Elem)> {
            match args.get(k) {
                Some((Val::Scalar(a, e @ Elem::Int(_)), _)) => Some((*a, *e)),
                Some((Val::Poison, _)) => None,
                Some((v, e)) => lw.fail(
                    *e,
                    format!(
                        "mismatched types: expected `{}`, found `{}`",
                        elem.name(),
                        v.ty()
                    ),
                ),
                None => lw.fail_at(span, format!("`{n}` takes 1 argument")),
            }
        };
        match n.as_str() {
            "max" | "min" => {
                let (y, ey) = arg(self, 0)?;
                let Some(e) = elem.unify(ey) else {
                    return self.fail(args[0].1, format!("mismatched types: expected `{}`, found `{}`", elem.name(), ey.name()));
                };
                let unsigned64 = matches!(e, Elem::Int(t) if t.ir() == Some(ad_core_ir::ir::IntTy::U64));
                let p = match (n == "max", unsigned64) {
                    (true, false) => Prim::Max,
                    (false, false) => Prim::Min,
                    (true, true) => Prim::UMax,
                    (false, true) => Prim::UMin,
                };
                Some(Val::Scalar(self.prim(p, &[x, y], span)?, e))
            }
            "abs" => {
                let v = match elem {
                    // `|x|` in the narrow type: `0 - x` for negatives (overflows like `i8::MIN.abs()`)
                    Elem::Int(t) if t.ir().is_some() => {
                        let neg = self.prim(typed_arith(Prim::Sub, elem), &[Atom::I64(0), x], span)?;
                        let c = self.prim(Prim::Lt, &[x, Atom::I64(0)], span)?;
                        self.prim(Prim::Select, &[c, neg, x], span)?
                    }
                    _ => self.prim(Prim::Abs, &[x], span)?,
                };
                Some(Val::Scalar(v, elem))
            }
            "pow" => {
                let k = match args.first().map(|(_, e)| strip(e)) {
                    Some(syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(i), .. })) => i.base10_parse::<u32>().ok(),
                    _ => None,
                };
                let Some(k) = k.filter(|k| *k <= 16) else {
                    return self.fail_at(span, "`pow` of integers is supported with a literal exponent up to 16");
                };
                let mut acc = Atom::I64(1);
                for _ in 0..k {
                    acc = match acc {
                        Atom::I64(1) => x,
                        a => self.prim(typed_arith(Prim::Mul, elem), &[a, x], span)?,
                    };
                }
                Some(Val::Scalar(acc, elem))
            }
            "saturating_sub" | "abs_diff" => {
                let (y, ey) = arg(self, 0)?;
                let e = match elem.unify(ey) {
                    Some(e @ Elem::Int(t)) if t.unsigned() => e,
                    Some(_) => {
                        return self.fail(name, format!("`{n}` is supported on unsigned integers (`usize`, `u8`..`u64`), not on `{}`", elem.name()));
                    }
                    None => {
                        return self.fail(args[0].1, format!("mismatched types: expected `{}`, found `{}`", elem.name(), ey.name()));
                    }
                };
                // `x > y` as unsigned values; every subtraction below takes
                // the smaller from the larger (no overflow).
                let gt = self.prim(Prim::UGt, &[x, y], span)?;
                let sub = typed_arith(Prim::Sub, e);
                let v = if n == "saturating_sub" {
                    // `x - y` where `x > y`, else `x - x = 0`.
                    let y_or_x = self.prim(Prim::Select, &[gt, y, x], span)?;
                    self.prim(sub, &[x, y_or_x], span)?
                } else {
                    let hi = self.prim(Prim::Select, &[gt, x, y], span)?;
                    let lo = self.prim(Prim::Select, &[gt, y, x], span)?;
                    self.prim(sub, &[hi, lo], span)?
                };
                Some(Val::Scalar(v, e))
            }
            _ => self.fail(
                name,
                format!("no method `{n}` on `{}` is supported in #[differentiable] functions; supported integer methods: max, min, abs, pow, saturating_sub, abs_diff (unsigned)", elem.name()),
            ),
        }
    }
}

/// Whether `name` is a method of `f64` the front end knows (for `f64::name(x)`).
pub fn is_f64_method(name: &str) -> bool {
    unary_prim(name).is_some()
        || binary_prim(name).is_some()
        || [
            "recip",
            "powi",
            "mul_add",
            "clamp",
            "exp2",
            "log",
            "to_degrees",
            "to_radians",
            "sin_cos",
            "fract",
        ]
        .contains(&name)
}

/// `name` of `&mut name` (a mutable `Zip` array).
/// `e` without a leading `&` (or `&mut`).
fn deref(e: &syn::Expr) -> syn::Expr {
    match strip(e) {
        syn::Expr::Reference(r) => (*r.expr).clone(),
        e => e.clone(),
    }
}

fn mut_ref(e: &syn::Expr) -> Option<&syn::Ident> {
    match strip(e) {
        syn::Expr::Reference(r) if r.mutability.is_some() => match strip(&r.expr) {
            syn::Expr::Path(p) if p.qself.is_none() => p.path.get_ident(),
            _ => None,
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use crate::lower::testutil::*;

    /// `Zip::fold`, `Zip::for_each` over read and written arrays, and
    /// `a.fold`: the values Rust computes (the interpreter's arrays are
    /// row-major, so ndarray's memory order is the logical one here;
    /// `tests/layouts.rs` runs other layouts) and the derivatives. The
    /// rank-2 loops read the arrays' strides; a shape mismatch panics as
    /// ndarray's `and` does.
    #[test]
    fn zip_and_array_folds_follow_memory_order() {
        const SRC: &str = "fn f(a: &Array2<f64>, b: &Array2<f64>, v: &Array1<f64>) -> f64 {
            let mut s = 0.0;
            let mut y = Array2::zeros(a.dim());
            Zip::from(&mut y).and(a).and(b).for_each(|y, &x, w| {
                s = s * 0.5 + x * w;
                *y = s;
            });
            let t = Zip::from(a).and(&y).fold(1.0, |acc, &x, &z| acc * 0.75 + x * z);
            let u = Zip::from(v).and(v).fold(0.0, |acc: f64, x: &f64, w: &f64| acc + x.sin() * w);
            s + t + u + a.fold(0.0, |acc, &x| acc * 0.5 + x) + v.fold(2.0, |acc, x| acc * x)
        }";
        let a = [0.5, -1.0, 2.0, 0.25, 1.5, -0.75];
        let b = [1.0, 0.5, -0.5, 2.0, 0.3, 0.9];
        let v = [0.7, -1.1, 1.3];
        // `f` on row-major 2 x 3 arrays, in row-major order
        let (mut s, mut y) = (0.0, [0.0; 6]);
        for k in 0..6 {
            s = s * 0.5 + a[k] * b[k];
            y[k] = s;
        }
        let t = (0..6).fold(1.0, |acc, k| acc * 0.75 + a[k] * y[k]);
        let u = v.iter().fold(0.0, |acc: f64, x: &f64| acc + x.sin() * x);
        let want = s
            + t
            + u
            + a.iter().fold(0.0, |acc, &x| acc * 0.5 + x)
            + v.iter().fold(2.0, |acc: f64, x| acc * x);
        check(SRC, &[m2(2, &a), m2(2, &b), v1(&v)], &[fv(want)]);
        let l = lowered(SRC);
        let ir = ad_core_ir::pretty::func_to_string(l.program.func("f").unwrap());
        assert!(ir.contains("stride"), "{ir}");
        // arrays of different shapes: a panic, as in `f`
        let bad = ad_core_ir::interp::run(&l.program, "f", &[m2(2, &a), m2(3, &b), v1(&v)], &[]);
        assert!(bad.is_err(), "{bad:?}");
    }

    #[test]
    fn f64_methods() {
        both! {
            fn f(x: f64, y: f64) -> f64 {
                let a = x.sin() + x.cos() + x.tan() + x.exp() + y.ln() + y.log2() + y.log10() + y.sqrt();
                let b = x.abs() + x.tanh() + x.sinh() + x.cosh() + x.atan() + x.exp_m1() + y.ln_1p() + y.recip();
                let c = x.powi(3) + y.powf(x) + x.atan2(y) + x.hypot(y) + x.max(y) + x.min(y) + x.mul_add(y, 2.0);
                let (s, co) = x.sin_cos();
                let d = s * co + x.exp2() + y.log(3.0) + x.clamp(-0.5, 0.5) + x.to_degrees() + y.to_radians() + y.cbrt();
                a + b + c + d
            }
        }
        for (x, y) in [(0.3, 1.2), (-0.7, 2.5)] {
            check(SRC, &[fv(x), fv(y)], &[fv(f(x, y))]);
        }
    }

    /// The remainders, `copysign`, the `bool` methods of `f64` and the
    /// unsigned `saturating_sub` / `abs_diff`, lowered, give Rust's values
    /// (signs, zeros, infinities and NaN included).
    #[test]
    fn remainders_signs_and_predicates() {
        both! {
            fn f(x: f64, y: f64, n: usize) -> f64 {
                let a = x % y + x.rem_euclid(y) + x.div_euclid(y) + x.copysign(y);
                let b = if x.is_nan() { 1.0 } else { 0.0 } + if y.is_finite() { 2.0 } else { 0.0 };
                let c = if x.is_infinite() { 4.0 } else { 0.0 } + if y.is_sign_negative() { 8.0 } else { 0.0 };
                let d = if x.is_sign_positive() { 16.0 } else { 0.0 };
                let k = n.saturating_sub(3) + n.abs_diff(5);
                a + b + c + d + k as f64
            }
        }
        for (x, y) in [(5.3, 2.1), (-5.3, 2.1), (5.3, -2.1), (-0.25, 1.0)] {
            for n in [0usize, 4, 9] {
                check(SRC, &[fv(x), fv(y), iv(n as i64)], &[fv(f(x, y, n))]);
            }
        }
        // Edges: the same bits (NaNs as one value), no derivatives.
        let l = lowered(SRC);
        let inf = f64::INFINITY;
        for (x, y) in [
            (-0.0, 1.0),
            (inf, 2.0),
            (1.0, -inf),
            (f64::NAN, -0.0),
            (0.0, -0.0),
        ] {
            let want = f(x, y, 4);
            match run_lowered(&l, &[fv(x), fv(y), iv(4)]).as_slice() {
                [ad_core_ir::interp::Value::F64(got)] => assert!(
                    got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
                    "f({x}, {y}): {got} against Rust's {want}"
                ),
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn associated_function_forms() {
        both! {
            fn f(x: f64, y: f64, n: usize, k: i64) -> f64 {
                let m = usize::max(n, 2) + std::cmp::min(n, 1) + n.max(3) + n.min(0);
                let j = k.abs() + i64::min(k, 0) + k.pow(2);
                f64::sin(x) + f64::powi(y, 2) + f64::max(x, y) + f64::hypot(x, y)
                    + f64::mul_add(x, y, 1.0) + (m as f64) + (j as f64)
            }
        }
        for (x, y, n, k) in [(0.3, 1.2, 4usize, -3i64), (1.7, -2.5, 0, 2)] {
            check(
                SRC,
                &[fv(x), fv(y), iv(n as i64), iv(k)],
                &[fv(f(x, y, n, k))],
            );
        }
    }

    #[test]
    fn refusals() {
        refuses("fn f(x: f64) -> f64 { x.frobnicate() }", "no method `frobnicate` on `f64` is supported in #[differentiable] functions; supported: sin, cos");
        refuses(
            "fn f(x: f64) -> f64 { f64::frobnicate(x) }",
            "no method `frobnicate` on `f64` is supported",
        );
        refuses(
            "fn f(x: f64) -> f64 { x.powi(2.0) }",
            "mismatched types: expected `i32`, found `f64`",
        );
        refuses(
            "fn f(x: f64, n: usize) -> f64 { x.powf(n) }",
            "mismatched types: expected `f64`, found `usize`",
        );
        refuses(
            "fn f(x: f64) -> f64 { x.sin(2.0) }",
            "this method takes 0 arguments but 1 argument was supplied",
        );
        refuses(
            "fn f(x: f64) -> f64 { x.atan2() }",
            "this method takes 1 argument but 0 arguments were supplied",
        );
        refuses(
            "fn f(x: f64, n: usize) -> f64 { n.count_ones() as f64 }",
            "no method `count_ones` on `usize` is supported",
        );
        refuses(
            "fn f(x: f64, n: usize) -> f64 { n.pow(n as u32) as f64 }",
            "`pow` of integers is supported with a literal exponent up to 16",
        );
        refuses(
            "fn f(x: f64, b: bool) -> f64 { b.then(|| x); x }",
            "no method `then` on `bool` is supported",
        );
        refuses(
            "fn f(x: f64, n: usize) -> f64 { n.max(x) as f64 }",
            "mismatched types: expected `usize`, found `f64`",
        );
        refuses(
            "fn f(x: f64) -> f64 { f64::sin(2) }",
            "mismatched types: expected `f64`, found `{integer}`",
        );
    }
}
