//! The `ndarray` API: indexing (`v[i]`, `m[[i, j]]`), shapes, reductions,
//! `dot`, transposes, rows and columns, `mapv`, elementwise operators,
//! constructors (`zeros`, `ones`, `from_elem`, `from_shape_fn`, `eye`), and
//! the helpers that build IR `Map`s and `Build`s from Rust closures.

use super::ctx::{span_of, Lowerer};
use super::expr::strip;
use super::ops::{arith_prim, op_error, typed_arith};
use super::types::{classify, Elem, IntTy, RTy, TyDesc};
use super::val::Val;
use ad_core_ir::ir::{ArrayOp, Atom, Build, Expr, Map, Prim, ReduceOp, Var};
use ad_core_ir::types::Ty;
use quote::ToTokens;

/// `f64` methods that also exist elementwise on `f64` arrays.
pub const ELEMENTWISE_METHODS: &[&str] = &[
    "sin",
    "cos",
    "tan",
    "exp",
    "ln",
    "log2",
    "log10",
    "sqrt",
    "abs",
    "tanh",
    "sinh",
    "cosh",
    "atan",
    "asin",
    "acos",
    "asinh",
    "acosh",
    "atanh",
    "exp_m1",
    "ln_1p",
    "recip",
    "powi",
    "powf",
    "exp2",
    "cbrt",
    "to_degrees",
    "to_radians",
    "log",
    "hypot",
    "clamp",
    "floor",
    "ceil",
    "round",
    "trunc",
    "fract",
    "signum",
];

const ARRAY_METHODS: &str = "len, nrows, ncols, dim, shape()[k], len_of, is_empty, sum, product, mean, var, std, sum_axis, mean_axis, var_axis, std_axis, map_axis, fold_axis, dot, t, reversed_axes, row, column, rows, columns, outer_iter, axis_iter, lanes (of a matrix), windows, exact_chunks, chunks, chunks_exact (of a vector), select, mapv, map, mapv_inplace (of a local array), fold, iter, indexed_iter, first, last (then `unwrap`), get(i).copied().unwrap_or(d), to_owned, clone, view, into_owned, to_vec (rank 1), and elementwise sin, cos, exp, ln, sqrt, abs, tanh, powi, powf, ...";

impl Lowerer<'_> {
    /// `a[i]`, `m[[i, j]]`, `m[(i, j)]`, `a.shape()[k]`.
    pub fn index(&mut self, ix: &syn::ExprIndex) -> Option<Val> {
        if let syn::Expr::MethodCall(m) = strip(&ix.expr) {
            if m.method == "shape" && m.args.is_empty() {
                let Val::Array(arr, _, rank) = self.expr(&m.receiver)? else {
                    return self.fail(&m.receiver, "`shape()` needs an array");
                };
                let axis = match strip(&ix.index) {
                    syn::Expr::Lit(syn::ExprLit {
                        lit: syn::Lit::Int(i),
                        ..
                    }) => i.base10_parse::<usize>().ok(),
                    _ => None,
                };
                return match axis {
                    Some(k) if k < rank => {
                        let v = self.array(ArrayOp::Shape { arr, axis: k }, span_of(ix))?;
                        Some(Val::Scalar(v, Elem::Int(IntTy::Usize)))
                    }
                    _ => self.fail(
                        &ix.index,
                        format!("index `.shape()` with a literal axis below the rank {rank} (`a.shape()[0]`)"),
                    ),
                };
            }
        }
        let base = self.expr(&ix.expr)?;
        let Val::Array(arr, elem, rank) = base else {
            let hint = match &base {
                Val::Scalar(a, _) => self.defaulted_hint(a),
                _ => String::new(),
            };
            return self.fail(
                &ix.expr,
                format!("cannot index into a value of type `{}`{hint}", base.ty()),
            );
        };
        let idx = self.indices(&ix.index, rank, &ix.expr)?;
        let v = self.array(ArrayOp::Index { arr, idx }, span_of(ix))?;
        Some(Val::Scalar(v, elem))
    }

    /// The indices of an element of an array of rank `rank`: `i`, `[i, j]`
    /// or `(i, j)`, integers, exactly `rank` of them.
    pub fn indices(
        &mut self,
        index: &syn::Expr,
        rank: usize,
        base: &dyn ToTokens,
    ) -> Option<Vec<Atom>> {
        let parts: Vec<&syn::Expr> = match strip(index) {
            syn::Expr::Array(a) => a.elems.iter().collect(),
            syn::Expr::Tuple(t) => t.elems.iter().collect(),
            syn::Expr::Range(r) => {
                return self.fail(
                    r,
                    "indexing with a range (slicing) is not supported: index elements one at a time, or build the part you need with `from_shape_fn`",
                )
            }
            e => vec![e],
        };
        let mut out = vec![];
        let mut failed = false;
        for p in &parts {
            match self.expr(p) {
                Some(Val::Scalar(a, Elem::Int(_))) => out.push(a),
                Some(other) => {
                    let _: Option<()> = self.fail(
                        p,
                        format!(
                            "arrays are indexed by integers (`usize`), found `{}`",
                            other.ty()
                        ),
                    );
                    failed = true;
                }
                None => failed = true,
            }
        }
        if failed {
            return None;
        }
        if parts.len() != rank {
            let how = match rank {
                1 => "`v[i]`".to_string(),
                2 => "`m[[i, j]]`".to_string(),
                _ => "`a[[i, j, k]]`".to_string(),
            };
            let _ = base;
            return self.fail(
                index,
                format!("an array of rank {rank} is indexed by {rank} indices ({how}), found {}: use `.row(i)` / `.column(j)` for a row or a column", parts.len()),
            );
        }
        Some(out)
    }

    /// A method of an array.
    pub fn array_method(
        &mut self,
        m: &syn::ExprMethodCall,
        arr: Atom,
        elem: Elem,
        rank: usize,
    ) -> Option<Val> {
        let name = m.method.to_string();
        let span = span_of(m);
        let ty = RTy::Array(elem, rank);
        let usize_ = |a: Atom| Val::Scalar(a, Elem::Int(IntTy::Usize));
        if let Some(v) = self.view_method(m, arr, elem, rank) {
            return v;
        }
        match name.as_str() {
            "to_owned" | "clone" | "view" | "into_owned" | "as_standard_layout" => {
                self.nargs(m, 0)?;
                Some(Val::Array(arr, elem, rank))
            }
            // A `Vec` is a rank-1 array to linad (`&[f64]`, `Vec<f64>`
            // parameters); ndarray has `to_vec` on rank 1 only.
            "to_vec" if rank == 1 => {
                self.nargs(m, 0)?;
                Some(Val::Array(arr, elem, rank))
            }
            // `x.first()` / `x.last()`: ndarray's `Option` of the element at
            // index 0 / the last index of every axis, which `unwrap` passes
            // on (`methods::OPTION_METHODS`); an empty array fails at the
            // index (where `f` fails at the `unwrap`).
            "first" | "last" => {
                self.nargs(m, 0)?;
                let mut idx = vec![];
                for axis in 0..rank {
                    if name == "first" {
                        idx.push(Atom::I64(0));
                    } else {
                        let n = self.array(ArrayOp::Shape { arr, axis }, span)?;
                        idx.push(self.prim(Prim::Sub, &[n, Atom::I64(1)], span)?);
                    }
                }
                let v = self.array(ArrayOp::Index { arr, idx }, span)?;
                Some(Val::Scalar(v, elem))
            }
            "len" => {
                self.nargs(m, 0)?;
                Some(usize_(self.count(arr, rank, span)?))
            }
            "is_empty" => {
                self.nargs(m, 0)?;
                let n = self.count(arr, rank, span)?;
                let v = self.prim(Prim::Eq, &[n, Atom::I64(0)], span)?;
                Some(Val::Scalar(v, Elem::Bool))
            }
            "nrows" | "ncols" => {
                self.nargs(m, 0)?;
                if rank != 2 {
                    return self.fail(&m.method, format!("`{name}` needs a matrix (`Array2`), found `{ty}`"));
                }
                let axis = usize::from(name == "ncols");
                Some(usize_(self.array(ArrayOp::Shape { arr, axis }, span)?))
            }
            "dim" | "raw_dim" => {
                self.nargs(m, 0)?;
                let mut dims = vec![];
                for axis in 0..rank {
                    dims.push(usize_(self.array(ArrayOp::Shape { arr, axis }, span)?));
                }
                Some(if rank == 1 { dims.pop()? } else { Val::Tuple(dims) })
            }
            "len_of" => {
                let args = self.nargs(m, 1)?;
                let axis = self.axis_arg(args[0], rank)?;
                Some(usize_(self.array(ArrayOp::Shape { arr, axis }, span)?))
            }
            "sum" | "product" => {
                self.nargs(m, 0)?;
                if elem == Elem::Bool {
                    return self.fail(&m.method, format!("no method `{name}` on `{ty}`"));
                }
                let op = if name == "sum" { ReduceOp::Sum } else { ReduceOp::Prod };
                let v = self.array(ArrayOp::Reduce { op, arr, axis: None }, span)?;
                Some(Val::Scalar(v, elem))
            }
            "sum_axis" => {
                let args = self.nargs(m, 1)?;
                let axis = self.axis_arg(args[0], rank)?;
                if rank == 1 {
                    return self.fail(m, "`sum_axis` of a one-dimensional array is not supported: use `sum()`");
                }
                let v = self.array(ArrayOp::Reduce { op: ReduceOp::Sum, arr, axis: Some(axis) }, span)?;
                Some(Val::Array(v, elem, rank - 1))
            }
            "dot" => {
                let args = self.nargs(m, 1)?;
                let other = self.expr(args[0])?;
                let Val::Array(b, Elem::F64, rb) = other else {
                    return self.fail(args[0], format!("`dot` needs an `f64` array, found `{}`", other.ty()));
                };
                if elem != Elem::F64 {
                    return self.fail(m, format!("`dot` needs `f64` arrays, found `{ty}`"));
                }
                let out = match (rank, rb) {
                    (1, 1) => None,
                    (2, 1) | (1, 2) => Some(1),
                    (2, 2) => Some(2),
                    _ => {
                        return self.fail(m, format!("`dot` of `{ty}` and `{}` is not supported: `dot` takes vectors and matrices", other.ty()))
                    }
                };
                let v = self.array(ArrayOp::MatMul { a: arr, b }, span)?;
                Some(match out {
                    None => Val::f64(v),
                    Some(r) => Val::Array(v, Elem::F64, r),
                })
            }
            "t" | "reversed_axes" => {
                self.nargs(m, 0)?;
                match rank {
                    1 => Some(Val::Array(arr, elem, 1)),
                    2 => Some(Val::Array(self.array(ArrayOp::Transpose { arr }, span)?, elem, 2)),
                    _ => self.fail(m, format!("`{name}` of a rank-3 array is not supported")),
                }
            }
            "row" | "column" => {
                let args = self.nargs(m, 1)?;
                if rank != 2 {
                    return self.fail(&m.method, format!("`{name}` needs a matrix (`Array2`), found `{ty}`"));
                }
                let i = self.int_arg(args[0])?;
                let src = if name == "column" {
                    self.array(ArrayOp::Transpose { arr }, span)?
                } else {
                    arr
                };
                let v = self.array(ArrayOp::Index { arr: src, idx: vec![i] }, span)?;
                Some(Val::Array(v, elem, 1))
            }
            "mapv" | "map" | "mapv_into" => {
                let args = self.nargs(m, 1)?;
                let c = args[0];
                self.map_with(&[(arr, elem)], rank, m, |lw, xs| lw.apply_closure(c, xs))
            }
            "iter" | "into_iter" => {
                self.nargs(m, 0)?;
                Some(Val::Iter(Box::new(super::iter_val::IterVal::of_array(arr, elem, rank))))
            }
            "indexed_iter" => {
                self.nargs(m, 0)?;
                let it = super::iter_val::IterVal::of_indexed_array(arr, elem, rank);
                Some(Val::Iter(Box::new(it)))
            }
            // ndarray's `fold` visits the elements in memory order.
            "fold" => {
                let mut it = super::iter_val::IterVal::of_array(arr, elem, rank);
                it.order = Some(self.fold_plan(arr, rank, span)?);
                self.iter_method(m, Val::Iter(Box::new(it)))
            }
            n if ELEMENTWISE_METHODS.contains(&n) && elem == Elem::F64 => {
                let mut args = vec![];
                for a in &m.args {
                    args.push((self.expr(a)?, a));
                }
                let method = m.method.clone();
                self.map_with(&[(arr, elem)], rank, m, |lw, xs| {
                    lw.f64_method(&method, xs[0].clone(), args, span)
                })
            }
            "fill" | "assign" | "row_mut" | "column_mut" | "iter_mut" | "map_inplace"
            | "mapv_inplace" | "slice_mut" | "get_mut" | "swap" | "zip_mut_with"
            | "scaled_add" => self.fail(
                &m.method,
                format!("mutating array methods (`{name}`) are supported on local `let mut` arrays (`a.fill(x)`, `a.assign(&b)`, `a.mapv_inplace(f)`, `a.map_inplace(|v| *v = ..)`, `for v in a.iter_mut() {{ *v = .. }}`, `a.scaled_add(s, &b)`, `a.row_mut(i).assign(&v)`, `a.slice_mut(s![..]).fill(x)`); elsewhere assign elements with `a[i] = ..` in a `for` loop, or build a new array with `mapv` / `from_shape_fn`"),
            ),
            // ndarray's `windows` and `exact_chunks` of a vector; a slice's
            // (or `Vec`'s) `windows`, `chunks` and `chunks_exact`.
            "windows" | "exact_chunks" | "chunks_exact" | "chunks" if rank == 1 => {
                use super::iter_val::{Cut, IterVal};
                let args = self.nargs(m, 1)?;
                let size = match self.expr(args[0])? {
                    Val::Scalar(k, Elem::Int(_)) => k,
                    Val::Poison => return None,
                    other => {
                        return self.fail(
                            args[0],
                            format!("`{name}` takes the length (`usize`), found `{}`", other.ty()),
                        )
                    }
                };
                // ndarray and slices panic on a length of zero.
                let size = self.nonzero_or_panic(size, span)?;
                let cut = match name.as_str() {
                    "windows" => Cut::Windows,
                    "chunks" => Cut::Partial,
                    _ => Cut::Exact,
                };
                Some(Val::Iter(Box::new(IterVal::of_windows(arr, elem, size, cut))))
            }
            "select" => {
                let args = self.nargs(m, 2)?;
                let axis = self.axis_arg(args[0], rank)?;
                match self.expr(args[1])? {
                    idx @ Val::Array(_, Elem::Int(_), 1) => {
                        self.select(Val::Array(arr, elem, rank), idx, axis, m)
                    }
                    Val::Poison => None,
                    other => self.fail(
                        args[1],
                        format!("`select` takes the indices as integers (`&[0, 2]`, `&idx` of a `Vec<usize>`), found `{}`", other.ty()),
                    ),
                }
            }
            "windows" | "exact_chunks" | "chunks_exact" | "chunks" => {
                // Those of a vector are taken above.
                let which = format!(" on arrays of rank 2 or more (`v.{name}(k)` of a vector is)");
                self.fail(
                    &m.method,
                    format!("`{name}` is not supported{which}: index elements (`m[[i, j]]`), slice with `s![..]`, or build the part you need with `from_shape_fn`"),
                )
            }
            _ => self.fail(
                &m.method,
                format!("no method `{name}` on `{ty}` is supported in #[differentiable] functions; supported array methods: {ARRAY_METHODS}"),
            ),
        }
    }

    /// Checks the argument count of a method call; returns the arguments.
    pub fn nargs<'m>(
        &mut self,
        m: &'m syn::ExprMethodCall,
        n: usize,
    ) -> Option<Vec<&'m syn::Expr>> {
        if m.args.len() != n {
            let s = |k: usize| if k == 1 { "argument" } else { "arguments" };
            let were = if m.args.len() == 1 { "was" } else { "were" };
            return self.fail(
                m,
                format!(
                    "this method takes {n} {} but {} {} {were} supplied",
                    s(n),
                    m.args.len(),
                    s(m.args.len())
                ),
            );
        }
        Some(m.args.iter().collect())
    }

    /// An integer argument.
    pub fn int_arg(&mut self, e: &syn::Expr) -> Option<Atom> {
        match self.expr(e)? {
            Val::Scalar(a, Elem::Int(_)) => Some(a),
            other => self.fail(
                e,
                format!("mismatched types: expected `usize`, found `{}`", other.ty()),
            ),
        }
    }

    /// `Axis(k)` with a literal `k < rank`.
    pub fn axis_arg(&mut self, e: &syn::Expr, rank: usize) -> Option<usize> {
        if let syn::Expr::Call(c) = strip(e) {
            if let syn::Expr::Path(p) = &*c.func {
                if p.path.segments.last().is_some_and(|s| s.ident == "Axis") && c.args.len() == 1 {
                    if let syn::Expr::Lit(syn::ExprLit {
                        lit: syn::Lit::Int(i),
                        ..
                    }) = strip(&c.args[0])
                    {
                        if let Ok(k) = i.base10_parse::<usize>() {
                            if k < rank {
                                return Some(k);
                            }
                        }
                    }
                }
            }
        }
        self.fail(
            e,
            format!("expected `Axis(k)` with a literal axis `k` below the rank {rank}"),
        )
    }

    /// `map(|x..| f, arrs)`: `f` gets the element values and must return a
    /// scalar.
    pub fn map_with(
        &mut self,
        arrs: &[(Atom, Elem)],
        rank: usize,
        node: &dyn ToTokens,
        f: impl FnOnce(&mut Self, Vec<Val>) -> Option<Val>,
    ) -> Option<Val> {
        let tys: Vec<Ty> = arrs.iter().map(|(_, e)| Ty::Scalar(e.scalar())).collect();
        let elems: Vec<Elem> = arrs.iter().map(|(_, e)| *e).collect();
        let mut out_elem = None;
        let lam = self.lambda(&tys, &["x", "y", "z"], |lw, ps| {
            let xs = ps
                .iter()
                .zip(&elems)
                .map(|(p, e)| Val::Scalar(Atom::Var(*p), *e))
                .collect();
            let r = f(lw, xs)?;
            lw.scalar_result(r, node, &mut out_elem)
        })?;
        let v = self.emit1(
            Expr::Map(Map {
                arrs: arrs.iter().map(|(a, _)| *a).collect(),
                lin_arrs: vec![],
                body: lam,
            }),
            span_of(node),
        )?;
        Some(Val::Array(v, out_elem?, rank))
    }

    /// `build(shape, |idx| f)`: `f` gets the index variables and must return
    /// a scalar.
    pub fn build_with(
        &mut self,
        shape: Vec<Atom>,
        node: &dyn ToTokens,
        f: impl FnOnce(&mut Self, &[Var]) -> Option<Val>,
    ) -> Option<Val> {
        let rank = shape.len();
        let tys = vec![Ty::I64; rank];
        let mut out_elem = None;
        let lam = self.lambda(&tys, &["i", "j", "k"], |lw, ps| {
            let r = f(lw, ps)?;
            lw.scalar_result(r, node, &mut out_elem)
        })?;
        let v = self.emit1(Expr::Build(Build { shape, body: lam }), span_of(node))?;
        Some(Val::Array(v, out_elem?, rank))
    }

    fn scalar_result(
        &mut self,
        r: Val,
        node: &dyn ToTokens,
        out: &mut Option<Elem>,
    ) -> Option<Vec<Atom>> {
        match r {
            Val::Scalar(a, e) => {
                *out = Some(if e == Elem::Int(IntTy::Lit) {
                    Elem::Int(IntTy::I64)
                } else {
                    e
                });
                Some(vec![a])
            }
            Val::Poison => None,
            other => self.fail(
                node,
                format!(
                    "the closure must return a scalar (`f64`) here, found `{}`",
                    other.ty()
                ),
            ),
        }
    }

    /// Lowers closure `c` applied to `args` (one value per closure
    /// parameter) as an array closure: captured variables are read-only.
    ///
    /// `c` may also name a closure bound by `let`, an `f64` method
    /// (`f64::exp`, `f64::max` for two arguments), or a function (applied
    /// as `|a| f(a)`: a `#[differentiable]` function, a custom rule's).
    pub fn apply_closure(&mut self, c: &syn::Expr, args: Vec<Val>) -> Option<Val> {
        if let syn::Expr::Path(p) = strip(c) {
            let segs: Vec<String> = p
                .path
                .segments
                .iter()
                .map(|s| s.ident.to_string())
                .collect();
            if let [name] = segs.as_slice() {
                if let Some(id) = self.env.lookup(name) {
                    if let Val::Closure(cv) = self.env.get(id).val.clone() {
                        return self.apply_closure_val(&cv, args);
                    }
                }
            }
            let segs: Vec<&str> = segs.iter().map(String::as_str).collect();
            if let [.., "f64", m] = segs.as_slice() {
                if super::methods::is_f64_method(m) {
                    let name = p.path.segments.last()?.ident.clone();
                    let mut it = args.into_iter();
                    let Some(x) = it.next() else {
                        return self.fail(c, format!("`f64::{m}` takes at least one argument"));
                    };
                    if !matches!(x, Val::Scalar(_, Elem::F64)) {
                        return self.fail(c, format!("`f64::{m}` takes `f64`, found `{}`", x.ty()));
                    }
                    let rest: Vec<(Val, &syn::Expr)> = it.map(|v| (v, c)).collect();
                    return self.f64_method(&name, x, rest, span_of(c));
                }
            }
        }
        if let syn::Expr::Path(p) = strip(c) {
            // A function (`mapv(softplus)`): as `|a| softplus(a)`, lowered
            // as any call (a differentiable function, a custom rule, a
            // linear function; a plain one only with constant arguments).
            // (A local variable that is not a closure is not a function.)
            let local = p
                .path
                .get_ident()
                .is_some_and(|i| self.env.lookup(&i.to_string()).is_some());
            if !local && p.qself.is_none() && p.path.segments.iter().all(|s| s.arguments.is_none())
            {
                let span = span_of(c);
                let params: Vec<syn::Ident> = (0..args.len())
                    .map(|k| syn::Ident::new(&format!("__linad_arg{k}"), span))
                    .collect();
                let cl: syn::ExprClosure =
                    syn::parse_quote_spanned!(span=> |#(#params),*| #p(#(#params),*));
                return self.apply_closure_syntax(&cl, args);
            }
        }
        let syn::Expr::Closure(cl) = strip(c) else {
            return self.fail(c, "expected a closure (`|x| ..`), a closure bound by `let`, an `f64` method (`f64::exp`) or a function's name");
        };
        self.apply_closure_syntax(cl, args)
    }

    /// Applies a closure bound by `let`, in the environment of its
    /// definition.
    pub fn apply_closure_val(
        &mut self,
        cv: &super::val::ClosureVal,
        args: Vec<Val>,
    ) -> Option<Val> {
        let saved = std::mem::replace(&mut self.env, cv.env.clone());
        let saved_floor = self.closure_floor;
        self.closure_floor = 0;
        let r = self.apply_closure_syntax(&cv.syntax, args);
        self.closure_floor = saved_floor;
        self.env = saved;
        r
    }

    fn apply_closure_syntax(&mut self, cl: &syn::ExprClosure, args: Vec<Val>) -> Option<Val> {
        if cl.inputs.len() != args.len() {
            return self.fail(
                &cl.inputs,
                format!(
                    "this closure must take {} parameter{} here, found {}",
                    args.len(),
                    if args.len() == 1 { "" } else { "s" },
                    cl.inputs.len()
                ),
            );
        }
        if let Some(a) = &cl.asyncness {
            return self.fail(a, super::errors::ASYNC);
        }
        self.in_closure(|lw| {
            for (p, v) in cl.inputs.iter().zip(args) {
                lw.bind_pat_checked(p, v, p);
            }
            let v = lw.expr(&cl.body)?;
            match &cl.output {
                syn::ReturnType::Type(_, t) => Some(lw.annotate(t, v, &cl.body)),
                syn::ReturnType::Default => Some(v),
            }
        })
    }

    /// Elementwise `l op r` where at least one side is an array.
    pub fn elementwise(
        &mut self,
        op: &syn::BinOp,
        l: Val,
        r: Val,
        node: &dyn ToTokens,
    ) -> Option<Val> {
        let Some(p) = arith_prim(op) else {
            return self.fail(
                node,
                format!("comparison operators on arrays (`{}` and `{}`) are not supported: compare elements", l.ty(), r.ty()),
            );
        };
        let bad = |lw: &mut Self| lw.fail::<Val>(node, op_error(op, &l.ty(), &r.ty()));
        let (elem_l, elem_r) = match (&l, &r) {
            (Val::Array(_, a, _), Val::Array(_, b, _))
            | (Val::Array(_, a, _), Val::Scalar(_, b))
            | (Val::Scalar(_, a), Val::Array(_, b, _)) => (*a, *b),
            _ => return bad(self),
        };
        let Some(elem) = elem_l.unify(elem_r).filter(|e| *e != Elem::Bool) else {
            return bad(self);
        };
        let p = typed_arith(p, elem);
        let span = span_of(node);
        match (l.clone(), r.clone()) {
            (Val::Array(a, _, ra), Val::Array(b, _, rb)) => {
                let (a, b, ra) = self.co_broadcast(a, b, ra, rb, span)?;
                self.map_with(&[(a, elem), (b, elem)], ra, node, |lw, xs| {
                    let (Val::Scalar(x, _), Val::Scalar(y, _)) = (&xs[0], &xs[1]) else {
                        return None;
                    };
                    Some(Val::Scalar(lw.prim(p, &[*x, *y], span)?, elem))
                })
            }
            (Val::Array(a, _, ra), Val::Scalar(s, _)) => {
                self.map_with(&[(a, elem)], ra, node, |lw, xs| {
                    let Val::Scalar(x, _) = &xs[0] else {
                        return None;
                    };
                    Some(Val::Scalar(lw.prim(p, &[*x, s], span)?, elem))
                })
            }
            (Val::Scalar(s, _), Val::Array(b, _, rb)) => {
                self.map_with(&[(b, elem)], rb, node, |lw, xs| {
                    let Val::Scalar(y, _) = &xs[0] else {
                        return None;
                    };
                    Some(Val::Scalar(lw.prim(p, &[s, *y], span)?, elem))
                })
            }
            _ => bad(self),
        }
    }

    /// The operands of elementwise arithmetic broadcast to their common
    /// shape, as ndarray's arithmetic broadcasts: axes aligned at the end,
    /// missing leading axes added to the lower-rank side, and along each
    /// aligned axis a size of 1 stretched to the other side's size. Which
    /// sizes are 1 is known only when the program runs, so each common size
    /// is `if a_k == 1 { b_k } else { a_k }` and both operands are
    /// broadcast to that shape (the simplifier drops a broadcast whose
    /// sizes are known to be the operand's own; the broadcast itself
    /// panics on sizes that differ and are not 1, as ndarray does). A
    /// length-1 axis made by `insert_axis` is known statically
    /// ([`Self::unit_co_broadcast`]: no run-time choice, the reverse sums
    /// that axis directly, and it works in exact-shape bodies too).
    fn co_broadcast(
        &mut self,
        a: Atom,
        b: Atom,
        ra: usize,
        rb: usize,
        span: proc_macro2::Span,
    ) -> Option<(Atom, Atom, usize)> {
        if ra == rb && a == b {
            return Some((a, b, ra));
        }
        let unit = |lw: &Self, x: &Atom| x.var().and_then(|v| lw.unit_axis.get(&v).copied());
        if ra == rb && (unit(self, &a).is_some() || unit(self, &b).is_some()) {
            let (a, b) = self.unit_co_broadcast(a, b, ra, span)?;
            return Some((a, b, ra));
        }
        if self.exact_shapes {
            return self.exact_broadcast(a, b, ra, rb, span);
        }
        let rank = ra.max(rb);
        let hi = if ra >= rb { a } else { b };
        let mut shape = vec![];
        for axis in 0..rank {
            // The axis of each operand aligned with output axis `axis`; a
            // leading axis only the higher-rank side has keeps its size.
            let of = |r: usize| (axis + r).checked_sub(rank);
            let size = match (of(ra), of(rb)) {
                (Some(ka), Some(kb)) => {
                    let sa = self.array(ArrayOp::Shape { arr: a, axis: ka }, span)?;
                    let sb = self.array(ArrayOp::Shape { arr: b, axis: kb }, span)?;
                    let one = self.prim(Prim::Eq, &[sa, Atom::I64(1)], span)?;
                    self.prim(Prim::Select, &[one, sb, sa], span)?
                }
                _ => self.array(ArrayOp::Shape { arr: hi, axis }, span)?,
            };
            shape.push(size);
        }
        let mut stretch = |x: Atom, r: usize| {
            self.array(
                ArrayOp::Broadcast {
                    arr: x,
                    shape: shape.clone(),
                    axes: (rank - r..rank).collect(),
                },
                span,
            )
        };
        let a2 = stretch(a, ra)?;
        let b2 = stretch(b, rb)?;
        Some((a2, b2, rank))
    }

    /// Operands of elementwise arithmetic when shapes must be exact
    /// ([`Lowerer::exact_shapes`]): the lower-rank side is repeated along
    /// the leading axes of the other (its sizes must match the trailing
    /// ones); same-rank operands must have equal shapes.
    fn exact_broadcast(
        &mut self,
        a: Atom,
        b: Atom,
        ra: usize,
        rb: usize,
        span: proc_macro2::Span,
    ) -> Option<(Atom, Atom, usize)> {
        if ra == rb {
            return Some((a, b, ra));
        }
        let (hi, lo, rh, rl) = if ra > rb {
            (a, b, ra, rb)
        } else {
            (b, a, rb, ra)
        };
        let mut shape = vec![];
        for axis in 0..rh {
            shape.push(self.array(ArrayOp::Shape { arr: hi, axis }, span)?);
        }
        let lo = self.array(
            ArrayOp::Broadcast {
                arr: lo,
                shape,
                axes: (rh - rl..rh).collect(),
            },
            span,
        )?;
        Some(if ra > rb { (hi, lo, rh) } else { (lo, hi, rh) })
    }

    /// Same-rank operands of elementwise arithmetic, with ndarray's
    /// co-broadcasting of a length-1 axis made by `insert_axis`: such an
    /// operand is rebuilt from the array it was made from, repeated along
    /// that axis to the other operand's size (unless the other has the
    /// axis from `insert_axis` too).
    fn unit_co_broadcast(
        &mut self,
        a: Atom,
        b: Atom,
        rank: usize,
        span: proc_macro2::Span,
    ) -> Option<(Atom, Atom)> {
        let unit = |lw: &Self, x: &Atom| x.var().and_then(|v| lw.unit_axis.get(&v).copied());
        let (ua, ub) = (unit(self, &a), unit(self, &b));
        if ua.is_none() && ub.is_none() {
            return Some((a, b));
        }
        // The output's size along each axis: the operand's without a unit
        // axis there.
        let mut shape = vec![];
        for axis in 0..rank {
            let from = match (ua, ub) {
                (Some((_, k)), ub) if k == axis && ub.is_none_or(|(_, j)| j != axis) => b,
                _ => a,
            };
            shape.push(self.array(ArrayOp::Shape { arr: from, axis }, span)?);
        }
        let stretch = |lw: &mut Self,
                       x: Atom,
                       u: Option<(Atom, usize)>,
                       other: Option<(Atom, usize)>| {
            match u {
                Some((src, k)) if other.is_none_or(|(_, j)| j != k) => lw.array(
                    ArrayOp::Broadcast {
                        arr: src,
                        shape: shape.clone(),
                        axes: (0..rank).filter(|ax| *ax != k).collect(),
                    },
                    span,
                ),
                _ => Some(x),
            }
        };
        let a2 = stretch(self, a, ua, ub)?;
        let b2 = stretch(self, b, ub, ua)?;
        Some((a2, b2))
    }

    /// A unary primitive elementwise.
    pub fn map_unary(
        &mut self,
        a: Atom,
        elem: Elem,
        rank: usize,
        p: Prim,
        node: &dyn ToTokens,
    ) -> Option<Val> {
        let span = span_of(node);
        self.map_with(&[(a, elem)], rank, node, |lw, xs| {
            let Val::Scalar(x, e) = xs[0] else {
                return None;
            };
            Some(Val::Scalar(lw.prim(p, &[x], span)?, e))
        })
    }

    /// The sizes of a shape argument: `n`, `(r, c)`, `[r, c]` or a value of
    /// those types (`a.dim()`).
    pub fn shape_arg_pub(&mut self, e: &syn::Expr) -> Option<Vec<Atom>> {
        self.shape_arg(e)
    }

    /// The sizes of a shape argument (see [`Self::shape_arg_pub`]).
    fn shape_arg(&mut self, e: &syn::Expr) -> Option<Vec<Atom>> {
        let parts: Vec<Val> = match strip(e) {
            syn::Expr::Array(a) => a.elems.iter().map(|x| self.lower_expr(x)).collect(),
            _ => match self.expr(e)? {
                Val::Tuple(vs) => vs,
                v => vec![v],
            },
        };
        let mut out = vec![];
        for p in parts {
            match p {
                Val::Scalar(a, Elem::Int(_)) => out.push(a),
                Val::Poison => return None,
                other => {
                    return self.fail(
                        e,
                        format!("a shape is an integer or a tuple of integers (`n`, `(rows, cols)`), found `{}`", other.ty()),
                    )
                }
            }
        }
        if !(1..=3).contains(&out.len()) {
            return self.fail(e, "arrays of rank 1 to 3 are supported");
        }
        Some(out)
    }

    /// `a.select(Axis(axis), &idx)`: the sub-arrays of `a` at the indices
    /// along `axis`, in their order (repeats allowed; an index out of
    /// bounds panics, as in ndarray). ndarray concatenates them along
    /// `axis`, which leaves a matrix selected along axis 1 column-major:
    /// the result is the transposed view of a row-major build, so that
    /// memory-order sums add as `f`'s do.
    ///
    /// ```text
    /// m.select(Axis(1), &idx)
    /// ==>  Array2::from_shape_fn((idx.len(), m.nrows()), |(k, r)| m[[r, idx[k]]]).reversed_axes()
    /// ```
    fn select(&mut self, a: Val, idx: Val, axis: usize, node: &dyn ToTokens) -> Option<Val> {
        let Val::Array(_, _, rank) = a else {
            return None;
        };
        let span = span_of(node);
        self.env.push_scope();
        self.env.declare("__linad_sel_a", a, false);
        self.env.declare("__linad_sel_i", idx, false);
        let e: Option<syn::Expr> = match (rank, axis) {
            (1, _) => Some(syn::parse_quote_spanned!(span=>
            Array1::from_shape_fn(__linad_sel_i.len(), |__linad_k: usize| {
                __linad_sel_a[__linad_sel_i[__linad_k]]
            }))),
            (2, 0) => Some(syn::parse_quote_spanned!(span=>
            Array2::from_shape_fn((__linad_sel_i.len(), __linad_sel_a.ncols()), |(__linad_k, __linad_j): (usize, usize)| {
                __linad_sel_a[[__linad_sel_i[__linad_k], __linad_j]]
            }))),
            (2, _) => Some(syn::parse_quote_spanned!(span=>
                Array2::from_shape_fn((__linad_sel_i.len(), __linad_sel_a.nrows()), |(__linad_k, __linad_r): (usize, usize)| {
                    __linad_sel_a[[__linad_r, __linad_sel_i[__linad_k]]]
                }).reversed_axes())),
            (3, 0) => Some(syn::parse_quote_spanned!(span=>
            Array3::from_shape_fn(
                (__linad_sel_i.len(), __linad_sel_a.shape()[1], __linad_sel_a.shape()[2]),
                |(__linad_k, __linad_j, __linad_l): (usize, usize, usize)| {
                    __linad_sel_a[[__linad_sel_i[__linad_k], __linad_j, __linad_l]]
                },
            ))),
            _ => None,
        };
        let v = match e {
            Some(e) => self.expr(&e),
            // ndarray's result is in neither row- nor column-major order.
            None => self.fail(node, "`select` along axis 1 or 2 of a rank-3 array is not supported (axis 0 is): build the part you need with `from_shape_fn`"),
        };
        self.env.pop_scope();
        v
    }

    /// `Array1::linspace(a, b, n)` as ndarray computes it: `n` points
    /// `a + step * i` with `step = (b - a) / (n - 1)` (`0` when `n <= 1`):
    ///
    /// ```text
    /// Array1::linspace(a, b, n)
    /// ==>  { let (a, b, n) = (a, b, n);
    ///        let step = if n > 1 { (b - a) / ((n - 1) as f64) } else { 0.0 };
    ///        Array1::from_shape_fn(n, |i| a + step * (i as f64)) }
    /// ```
    fn linspace(
        &mut self,
        a: &syn::Expr,
        b: &syn::Expr,
        n: &syn::Expr,
        span: proc_macro2::Span,
    ) -> Option<Val> {
        let hidden = |s: &str| syn::Ident::new(s, proc_macro2::Span::mixed_site());
        let (sa, sb, sn) = (
            hidden("__linad_a"),
            hidden("__linad_b"),
            hidden("__linad_n"),
        );
        let (step, i) = (hidden("__linad_step"), hidden("__linad_i"));
        let e: syn::Expr = syn::parse_quote_spanned!(span=> {
            let #sa: f64 = #a;
            let #sb: f64 = #b;
            let #sn: usize = #n;
            let #step: f64 = if #sn > 1 { (#sb - #sa) / ((#sn - 1) as f64) } else { 0.0 };
            Array1::from_shape_fn(#sn, |#i: usize| #sa + #step * (#i as f64))
        });
        self.expr(&e)
    }

    /// `Array1::range(a, b, step)` as ndarray computes it: `len =
    /// ceil((b - a) / step)` points `a + step * i`, and ndarray's panic
    /// where `len` is no `usize` (negative, infinite or NaN: `step` of the
    /// wrong sign, or zero):
    ///
    /// ```text
    /// Array1::range(a, b, step)
    /// ==>  { let (a, b, step) = (a, b, step);
    ///        let len = ((b - a) / step).ceil();
    ///        let n = (len as usize) * (1 / (if len > -1.0 && len < 2^64 { 1 } else { 0 }));
    ///        Array1::from_shape_fn(n, |i| a + step * (i as f64)) }
    /// ```
    fn range_ctor(
        &mut self,
        a: &syn::Expr,
        b: &syn::Expr,
        step: &syn::Expr,
        span: proc_macro2::Span,
    ) -> Option<Val> {
        let hidden = |s: &str| syn::Ident::new(s, proc_macro2::Span::mixed_site());
        let (sa, sb, ss) = (
            hidden("__linad_a"),
            hidden("__linad_b"),
            hidden("__linad_step"),
        );
        let (len, n, i) = (
            hidden("__linad_len"),
            hidden("__linad_n"),
            hidden("__linad_i"),
        );
        let e: syn::Expr = syn::parse_quote_spanned!(span=> {
            let #sa: f64 = #a;
            let #sb: f64 = #b;
            let #ss: f64 = #step;
            let #len: f64 = ((#sb - #sa) / #ss).ceil();
            // ndarray: `len.to_usize().expect(..)`, `Some` on (-1, 2^64).
            let #n: usize = (#len as usize)
                * (1usize / (if #len > -1.0 && #len < 18446744073709551616.0 { 1usize } else { 0usize }));
            Array1::from_shape_fn(#n, |#i: usize| #sa + #ss * (#i as f64))
        });
        self.expr(&e)
    }

    /// `Array1::from_iter(it)` (`Array::from_iter` too): the items of an
    /// iterator chain (`x.iter().map(..)`, a range) or of an array or `Vec`
    /// (a matrix's elements in logical order), as
    /// `it.collect::<Array1<_>>()` gives them.
    fn iter_ctor(&mut self, arg: &syn::Expr) -> Option<Val> {
        let it = self.iterable(
            arg,
            "`from_iter` takes an iterator (`x.iter().map(..)`, a range) or an array",
        )?;
        self.collect(&it, arg)
    }

    /// `ArrayN::zeros(shape)`, `ones`, `from_elem`, `from_shape_fn`, `eye`;
    /// `ty_seg` is the path segment naming the array type.
    pub fn array_ctor(
        &mut self,
        c: &syn::ExprCall,
        ty_seg: &syn::PathSegment,
        func: &syn::Ident,
    ) -> Option<Val> {
        let ty_name = ty_seg.ident.to_string();
        let rank: Option<usize> = ty_name.strip_prefix("Array").and_then(|r| r.parse().ok());
        let mut elem = None;
        if let syn::PathArguments::AngleBracketed(a) = &ty_seg.arguments {
            if let Some(syn::GenericArgument::Type(t)) = a.args.first() {
                match classify(t) {
                    Ok(TyDesc::Scalar(e @ (Elem::F64 | Elem::Int(_)))) => elem = Some(e),
                    Ok(_) => {
                        return self.fail(t, "array elements must be `f64` or an integer type")
                    }
                    Err(e) => {
                        self.errors.push(e);
                        return None;
                    }
                }
            }
        }
        let args: Vec<&syn::Expr> = c.args.iter().collect();
        let span = span_of(c);
        let name = func.to_string();
        let want_args = match name.as_str() {
            "zeros" | "ones" | "eye" => 1,
            "from_elem" | "from_shape_fn" => 2,
            "from_vec" | "from" | "from_shape_vec" => return self.vec_ctor(&name, c),
            "from_diag" => return self.diag_ctor(c),
            "from_iter" if rank.unwrap_or(1) == 1 && args.len() == 1 => {
                return self.iter_ctor(args[0])
            }
            "linspace" if rank.unwrap_or(1) == 1 && args.len() == 3 => {
                return self.linspace(args[0], args[1], args[2], func.span())
            }
            "range" if rank.unwrap_or(1) == 1 && args.len() == 3 => {
                return self.range_ctor(args[0], args[1], args[2], func.span())
            }
            "linspace" | "range" | "default" => {
                return self.fail(
                    func,
                    format!("`{ty_name}::{name}` is not supported: build arrays with `from_shape_fn`, `zeros`, `ones` or `from_elem`"),
                )
            }
            _ => {
                return self.fail(
                    func,
                    format!("`{ty_name}::{name}` is not supported: supported constructors are `zeros`, `ones`, `from_elem`, `from_shape_fn`, `eye`, `from(vec![..])`, `from_vec(vec![..])`, `from_shape_vec(shape, vec![..])` and `Array1::from_iter(iterator)`"),
                )
            }
        };
        if args.len() != want_args {
            return self.fail(
                c,
                format!(
                    "this function takes {want_args} argument{} but {} were supplied",
                    if want_args == 1 { "" } else { "s" },
                    args.len()
                ),
            );
        }
        let shape = if name == "eye" {
            let n = self.int_arg(args[0])?;
            vec![n, n]
        } else {
            self.shape_arg(args[0])?
        };
        if let Some(r) = rank {
            if r != shape.len() {
                return self.fail(
                    args[0],
                    format!(
                        "`{ty_name}` has rank {r} but this shape has {} sizes",
                        shape.len()
                    ),
                );
            }
        }
        let r = shape.len();
        match name.as_str() {
            "zeros" | "ones" => {
                let e = elem.unwrap_or(Elem::F64);
                let one = name == "ones";
                let fill = match e {
                    Elem::F64 => Atom::F64(if one { 1.0 } else { 0.0 }),
                    _ => Atom::I64(i64::from(one)),
                };
                let v = self.array(
                    ArrayOp::Broadcast {
                        arr: fill,
                        shape,
                        axes: vec![],
                    },
                    span,
                )?;
                Some(Val::Array(v, e, r))
            }
            "eye" => {
                let v = self.build_with(shape, c, |lw, ix| {
                    let same = lw.prim(Prim::Eq, &[Atom::Var(ix[0]), Atom::Var(ix[1])], span)?;
                    let v = lw.prim(Prim::Select, &[same, Atom::F64(1.0), Atom::F64(0.0)], span)?;
                    Some(Val::f64(v))
                })?;
                Some(v)
            }
            "from_elem" => {
                let v = self.expr(args[1])?;
                let Val::Scalar(a, e) = v else {
                    return self.fail(
                        args[1],
                        format!(
                            "`from_elem` fills an array with a scalar, found `{}`",
                            v.ty()
                        ),
                    );
                };
                if let Some(want) = elem {
                    if want.unify(e).is_none() {
                        return self.fail(
                            args[1],
                            format!(
                                "mismatched types: expected `{}`, found `{}`",
                                want.name(),
                                e.name()
                            ),
                        );
                    }
                }
                let e = if e == Elem::Int(IntTy::Lit) {
                    Elem::Int(IntTy::I64)
                } else {
                    e
                };
                let v = self.array(
                    ArrayOp::Broadcast {
                        arr: a,
                        shape,
                        axes: vec![],
                    },
                    span,
                )?;
                Some(Val::Array(v, e, r))
            }
            "from_shape_fn" => {
                let closure = args[1];
                self.build_with(shape, c, |lw, ix| {
                    let idx: Vec<Val> = ix
                        .iter()
                        .map(|v| Val::Scalar(Atom::Var(*v), Elem::Int(IntTy::Usize)))
                        .collect();
                    let arg = if idx.len() == 1 {
                        idx[0].clone()
                    } else {
                        Val::Tuple(idx)
                    };
                    lw.apply_closure(closure, vec![arg])
                })
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::lower::testutil::*;
    use ad_core_ir::interp::Value;

    fn m(r: usize, c: usize, xs: &[f64]) -> Value {
        Value::f64s(&[r, c], xs.to_vec())
    }

    #[test]
    fn indexing_and_shapes() {
        let src = "fn f(w: &Array1<f64>, m: &Array2<f64>, t: ArrayView3<f64>) -> f64 {
            let (r, c) = m.dim();
            w[0] * m[[1, 0]] + m[(0, 1)] + t[[1, 0, 1]] + w.len() as f64
                + (m.nrows() * 10 + m.ncols()) as f64 * 100.0 + (r + c) as f64 + m.shape()[1] as f64
                + m.len() as f64 + t.len_of(Axis(2)) as f64 + w.dim() as f64
        }";
        let w = [1.5, 2.0, -1.0];
        let mm = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]; // 2 x 3
        let t: Vec<f64> = (0..8).map(|k| k as f64 * 0.5).collect(); // 2 x 2 x 2
        let want = w[0] * mm[3] + mm[1] + t[5] + 3.0 + 23.0 * 100.0 + 5.0 + 3.0 + 6.0 + 2.0 + 3.0;
        check(
            src,
            &[v1(&w), m(2, 3, &mm), Value::f64s(&[2, 2, 2], t)],
            &[fv(want)],
        );
    }

    #[test]
    fn integer_index_arrays() {
        let src = "fn f(w: &Array1<f64>, idx: &Array1<usize>) -> f64 {
            let mut s = 0.0;
            for k in 0..idx.len() { s += w[idx[k]] * w[idx[k]]; }
            s + idx.sum() as f64
        }";
        let w = [1.5, 2.0, -1.0];
        let want = 2.0 * 2.0 + (-1.0f64) * -1.0 + 1.5 * 1.5 + 3.0;
        check(src, &[v1(&w), i1(&[1, 2, 0])], &[fv(want)]);
    }

    #[test]
    fn reductions_products_and_transposes() {
        let src = "fn f(a: &Array2<f64>, v: ArrayView1<f64>) -> (f64, Array1<f64>, Array2<f64>, Array1<f64>) {
            let mv = a.dot(&v);
            let vm = v.dot(a);
            let aat = a.dot(&a.t());
            let s = v.dot(&v) + a.sum() + a.row(1).sum() * a.column(0)[1] + v.t().sum() + a.product();
            (s, &mv + &vm, aat, a.sum_axis(Axis(0)))
        }";
        let a = [1.0, 2.0, 3.0, 4.0];
        let v = [0.5, -1.5];
        let mv = [a[0] * v[0] + a[1] * v[1], a[2] * v[0] + a[3] * v[1]];
        let vm = [v[0] * a[0] + v[1] * a[2], v[0] * a[1] + v[1] * a[3]];
        let aat = [
            a[0] * a[0] + a[1] * a[1],
            a[0] * a[2] + a[1] * a[3],
            a[2] * a[0] + a[3] * a[1],
            a[2] * a[2] + a[3] * a[3],
        ];
        let s = v[0] * v[0] + v[1] * v[1] + 10.0 + (a[2] + a[3]) * a[2] + (v[0] + v[1]) + 24.0;
        check(
            src,
            &[m(2, 2, &a), v1(&v)],
            &[
                fv(s),
                v1(&[mv[0] + vm[0], mv[1] + vm[1]]),
                m(2, 2, &aat),
                v1(&[a[0] + a[2], a[1] + a[3]]),
            ],
        );
    }

    #[test]
    fn mapv_and_elementwise_operators() {
        let src = "fn f(a: &Array1<f64>, b: Array1<f64>, s: f64) -> Array1<f64> {
            let c = a.mapv(|x| x.sin() * s);
            let d = &c + &b;
            let e = &d * s - 1.0;
            let g = 2.0 / (&e * &e + 1.0);
            let h = a.map(|&x| x * x);
            -g + a.exp() + a.powi(2) - &h / &b
        }";
        let (a, b, s): ([f64; 3], [f64; 3], f64) = ([0.5, -1.0, 2.0], [1.0, 2.0, -3.0], 0.7);
        let want: Vec<f64> = (0..3)
            .map(|k| {
                let c = a[k].sin() * s;
                let d = c + b[k];
                let e = d * s - 1.0;
                let g = 2.0 / (e * e + 1.0);
                -g + a[k].exp() + a[k].powi(2) - a[k] * a[k] / b[k]
            })
            .collect();
        check(src, &[v1(&a), v1(&b), fv(s)], &[v1(&want)]);
    }

    #[test]
    fn array_accumulation_operators() {
        let src = "fn f(a: &Array1<f64>, x: f64) -> Array1<f64> {
            let mut acc = a.to_owned();
            acc += a;
            acc *= x;
            acc -= &a.mapv(|v| v * v);
            acc
        }";
        let (a, x) = ([0.5, -1.0, 2.0], 1.3);
        let want: Vec<f64> = a.iter().map(|v| (v + v) * x - v * v).collect();
        check(src, &[v1(&a), fv(x)], &[v1(&want)]);
    }

    #[test]
    fn constructors() {
        let src = "fn f(x: f64, n: usize) -> (Array1<f64>, Array2<f64>, Array2<f64>, Array1<f64>) {
            let z = Array1::<f64>::zeros(n);
            let o = Array2::ones((n, 2));
            let e = Array1::from_elem(n, x * 2.0);
            let b = Array2::from_shape_fn((n, 2), |(i, j)| x * (i as f64) + j as f64);
            let c = Array1::from_shape_fn(n, |i| if i == 0 { x } else { x * x });
            (&z + &e + &c, &o * &b, Array2::eye(2) * x, ndarray::Array::zeros(2))
        }";
        let (x, n) = (0.6f64, 3usize);
        let first: Vec<f64> = (0..n)
            .map(|i| 2.0 * x + if i == 0 { x } else { x * x })
            .collect();
        let b: Vec<f64> = (0..n)
            .flat_map(|i| (0..2).map(move |j| x * i as f64 + j as f64))
            .collect();
        check(
            src,
            &[fv(x), iv(n as i64)],
            &[
                v1(&first),
                m(n, 2, &b),
                m(2, 2, &[x, 0.0, 0.0, x]),
                v1(&[0.0, 0.0]),
            ],
        );
    }

    #[test]
    fn loops_inside_array_closures() {
        let src = "fn f(w: &Array1<f64>, k: usize) -> Array1<f64> {
            Array1::from_shape_fn(w.len(), |i| {
                let mut s = 0.0;
                for j in 0..k { s += w[(i + j) % w.len()]; }
                s
            })
        }";
        let w = [1.0, 2.0, 4.0];
        let want: Vec<f64> = (0..3)
            .map(|i| (0..2).map(|j| w[(i + j) % 3]).sum())
            .collect();
        check(src, &[v1(&w), iv(2)], &[v1(&want)]);
    }

    #[test]
    fn refusals() {
        refuses(
            "fn f(w: &Array1<f64>) -> f64 { w[1..].sum() }",
            "indexing with a range (slicing) is not supported",
        );
        refuses(
            "fn f(m: &Array2<f64>) -> f64 { m[0].sum() }",
            "an array of rank 2 is indexed by 2 indices (`m[[i, j]]`), found 1",
        );
        refuses(
            "fn f(w: &Array1<f64>, x: f64) -> f64 { w[x] }",
            "arrays are indexed by integers (`usize`), found `f64`",
        );
        refuses(
            "fn f(w: &Array1<f64>) -> f64 { w.frobnicate() }",
            "no method `frobnicate` on `Array1<f64>` is supported",
        );
        refuses(
            "fn f(w: &Array1<f64>) -> f64 { w.to_owned().scaled_add(2.0, w); w.sum() }",
            "mutating array methods (`scaled_add`) are supported on local `let mut` arrays",
        );
        refuses(
            "fn f(a: &Array1<f64>, w: &Array1<f64>) -> f64 { if a < w { 1.0 } else { 0.0 } }",
            "comparison operators on arrays",
        );
        refuses(
            "fn f(a: &Array3<f64>, w: &Array1<f64>) -> f64 { a.dot(w) }",
            "`dot` of `Array3<f64>` and `Array1<f64>` is not supported",
        );
        refuses(
            "fn f(x: f64, n: usize) -> Array1<f64> { Array1::zeros((n, n)) }",
            "`Array1` has rank 1 but this shape has 2 sizes",
        );
        refuses(
            "fn f(x: f64, n: usize) -> Array1<f64> { Array1::from_shape_fn(n, |i| (x, x)) }",
            "the closure must return a scalar (`f64`) here, found `(f64, f64)`",
        );
        refuses(
            "fn f(x: f64) -> f64 { let mut t = 0.0; let mut c = |y: f64| t += y; c(x); t }",
            "assign",
        );
        refuses(
            "fn f(w: &Array1<f64>) -> f64 { w.len(1) as f64 }",
            "this method takes 0 arguments but 1 argument was supplied",
        );
        refuses(
            "fn f(w: &Array1<usize>, x: f64) -> f64 { (w * x).sum() }",
            "cannot multiply `Array1<usize>` by `f64`",
        );
        refuses(
            "fn f(w: &Array1<f64>) -> f64 { w.sum_axis(Axis(3)).sum() }",
            "expected `Axis(k)` with a literal axis",
        );
    }
}
