//! The `ndarray` API: indexing (`v[i]`, `m[[i, j]]`), shapes, reductions,
//! `dot`, transposes, rows and columns, `mapv`, elementwise operators,
//! constructors (`zeros`, `ones`, `from_elem`, `from_shape_fn`, `eye`), and
//! the helpers that build IR `Map`s and `Build`s from Rust closures.

use super::ctx::{span_of, Lowerer};
use super::expr::strip;
use super::ops::{arith_prim, op_error};
use super::types::{classify, Elem, IntTy, RTy, TyDesc};
use super::val::Val;
use ad_core_ir::ir::{ArrayOp, Atom, Build, Expr, Map, Prim, ReduceOp, Var};
use ad_core_ir::types::Ty;
use quote::ToTokens;

/// `f64` methods that also exist elementwise on `f64` arrays.
pub const ELEMENTWISE_METHODS: &[&str] = &[
    "sin", "cos", "tan", "exp", "ln", "log2", "log10", "sqrt", "abs", "tanh", "sinh", "cosh",
    "atan", "exp_m1", "ln_1p", "recip", "powi", "powf",
];

const ARRAY_METHODS: &str = "len, nrows, ncols, dim, shape()[k], len_of, is_empty, sum, product, sum_axis, dot, t, reversed_axes, row, column, mapv, map, fold, iter, to_owned, clone, view, into_owned, and elementwise sin, cos, exp, ln, sqrt, abs, tanh, powi, powf, ...";

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
            return self.fail(
                &ix.expr,
                format!("cannot index into a value of type `{}`", base.ty()),
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
        match name.as_str() {
            "to_owned" | "clone" | "view" | "into_owned" | "as_standard_layout" => {
                self.nargs(m, 0)?;
                Some(Val::Array(arr, elem, rank))
            }
            "len" => {
                self.nargs(m, 0)?;
                let mut n = self.array(ArrayOp::Shape { arr, axis: 0 }, span)?;
                for axis in 1..rank {
                    let s = self.array(ArrayOp::Shape { arr, axis }, span)?;
                    n = self.prim(Prim::Mul, &[n, s], span)?;
                }
                Some(usize_(n))
            }
            "is_empty" => {
                self.nargs(m, 0)?;
                let mut n = self.array(ArrayOp::Shape { arr, axis: 0 }, span)?;
                for axis in 1..rank {
                    let s = self.array(ArrayOp::Shape { arr, axis }, span)?;
                    n = self.prim(Prim::Mul, &[n, s], span)?;
                }
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
                Some(Val::Iter(Box::new(super::iter::IterVal::of_array(arr, elem, rank))))
            }
            "fold" => {
                let iter = Val::Iter(Box::new(super::iter::IterVal::of_array(arr, elem, rank)));
                self.iter_method(m, iter)
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
                format!("mutating array methods (`{name}`) are not supported: assign elements with `a[i] = ..` in a `for` loop, or build a new array with `mapv` / `from_shape_fn`"),
            ),
            "slice" | "slice_move" | "select" | "outer_iter" | "rows" | "columns" | "axis_iter"
            | "lanes" | "windows" => self.fail(
                &m.method,
                format!("`{name}` is not supported: index elements (`m[[i, j]]`), use `.row(i)` / `.column(j)`, or build the part you need with `from_shape_fn`"),
            ),
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
    fn axis_arg(&mut self, e: &syn::Expr, rank: usize) -> Option<usize> {
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
    pub fn apply_closure(&mut self, c: &syn::Expr, args: Vec<Val>) -> Option<Val> {
        let syn::Expr::Closure(cl) = strip(c) else {
            return self.fail(c, "expected a closure (`|x| ..`)");
        };
        if cl.inputs.len() != args.len() {
            return self.fail(
                &cl.inputs,
                format!(
                    "this closure takes {} parameters here, found {}",
                    args.len(),
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
        if p == Prim::Rem && elem == Elem::F64 {
            return self.fail(node, "the remainder `%` of `f64` values is not supported");
        }
        let span = span_of(node);
        match (l.clone(), r.clone()) {
            (Val::Array(a, _, ra), Val::Array(b, _, rb)) => {
                if ra != rb {
                    return self.fail(
                        node,
                        format!("elementwise operations on arrays of different ranks (`{}` and `{}`) are not supported (no broadcasting): use `from_shape_fn`", l.ty(), r.ty()),
                    );
                }
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
            "from_vec" | "from" | "from_shape_vec" | "linspace" | "range" | "default" => {
                return self.fail(
                    func,
                    format!("`{ty_name}::{name}` is not supported: build arrays with `from_shape_fn`, `zeros`, `ones` or `from_elem`"),
                )
            }
            _ => {
                return self.fail(
                    func,
                    format!("`{ty_name}::{name}` is not supported: supported constructors are `zeros`, `ones`, `from_elem`, `from_shape_fn` and `eye`"),
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
