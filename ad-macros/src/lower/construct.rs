//! Arrays built from their elements or from other arrays: `array![..]`
//! (rank 1-3), `Array1::from(vec![..])`, `Array::from_vec(vec![..])`,
//! `ArrayN::from_shape_vec(shape, vec![..])`, `vec![x; n]`,
//! `concatenate(Axis(k), &[a.view(), b.view()])` (and `concatenate![..]`),
//! `stack(Axis(k), &[..])` (and `stack![..]`).
//!
//! Literal elements become a zeros array updated element by element (the
//! updates are linear in the elements, so derivatives flow to each);
//! concatenation and stacking become a build that reads the part an index
//! falls in, inside an `if` (only that part is read):
//!
//! ```text
//! array![x, y]              ==>  let z = zeros [2]; let a = z with [0] = x; a with [1] = y
//! concatenate(Axis(0), [a, b])  ==>  build [na + nb] |i| if i < na { a[i] } else { b[i - na] }
//! concatenate(Axis(1), [a, b])  ==>  transpose(concatenate(Axis(0), [transpose(a), transpose(b)]))
//! ```
//!
//! A matrix joined along axis 1 is the transposed view of the join along
//! axis 0 of the transposes: ndarray grows its result along the joined
//! axis, which makes that axis outermost in memory (column-major strides
//! `[1, n]`), and the transposed view has those strides. What walks the
//! elements in memory order (`sum()`, `fold`, `Zip`) then adds them in
//! `f`'s order: the same bits.

use super::ctx::{span_of, Lowerer};
use super::expr::strip;
use super::types::Elem;
use super::val::Val;
use ad_core_ir::ir::{ArrayOp, Atom, Expr, If, Prim};
use proc_macro2::{Span, TokenStream, TokenTree};
use quote::ToTokens;

impl Lowerer<'_> {
    /// `array![..]`, `vec![..]` (inside a constructor), `concatenate![..]`,
    /// `stack![..]`; `None` (no error) for other macros.
    pub fn array_macro(&mut self, m: &syn::ExprMacro) -> Option<Option<Val>> {
        let name = m.mac.path.segments.last()?.ident.to_string();
        Some(match name.as_str() {
            "array" => self.array_literal(m.mac.tokens.clone(), m),
            "vec" => self.vec_macro(m),
            "concatenate" | "stack" => (|| {
                let parts = split_commas(m.mac.tokens.clone());
                let Some((axis, arrs)) = parts.split_first() else {
                    return self.fail(
                        m,
                        format!("`{name}!` takes an axis and arrays: `{name}![Axis(0), a, b]`"),
                    );
                };
                let axis: syn::Expr = syn::parse2(axis.clone()).ok()?;
                let mut vals = vec![];
                for a in arrs {
                    let e: syn::Expr = match syn::parse2(a.clone()) {
                        Ok(e) => e,
                        Err(_) => return self.fail(m, "expected an array expression"),
                    };
                    vals.push((self.expr(&e)?, e));
                }
                self.join(&name, &axis, vals, m)
            })(),
            _ => return None,
        })
    }

    /// `vec![a, b]` / `vec![x; n]`: a one-dimensional array, as the
    /// fixed-size array literal it would be ([`Self::fixed_array`]).
    fn vec_macro(&mut self, m: &syn::ExprMacro) -> Option<Val> {
        let tokens = &m.mac.tokens;
        if tokens.is_empty() {
            return self.fail(m, super::errors::VEC_PUSH);
        }
        let span = m.mac.delimiter.span().join();
        match syn::parse2::<syn::Expr>(quote::quote_spanned!(span=> [#tokens])) {
            Ok(e @ (syn::Expr::Array(_) | syn::Expr::Repeat(_))) => self.fixed_array(&e),
            _ => self.fail(m, "expected `vec![a, b, ..]` or `vec![x; n]`"),
        }
    }

    /// A fixed-size array literal, `[a, b, c]` or `[x; n]`: a
    /// one-dimensional array (as `array![a, b, c]` / `vec![x; n]`), read and
    /// updated as arrays are (`v[i]`, `v.iter()`, `v[i] = e`). Arrays of
    /// arrays are refused (an `Array2` holds a matrix).
    pub fn fixed_array(&mut self, e: &syn::Expr) -> Option<Val> {
        let nested = |x: &syn::Expr| matches!(strip(x), syn::Expr::Array(_) | syn::Expr::Repeat(_));
        match e {
            syn::Expr::Array(a) => {
                if let Some(inner) = a.elems.iter().find(|x| nested(x)) {
                    return self.fail(inner, super::errors::NESTED_ARRAY);
                }
                let elems = &a.elems;
                self.array_literal(quote::quote!(#elems), a)
            }
            syn::Expr::Repeat(r) => {
                if nested(&r.expr) {
                    return self.fail(&r.expr, super::errors::NESTED_ARRAY);
                }
                let Val::Scalar(x, elem) = self.expr(&r.expr)? else {
                    return self.fail(&r.expr, "`[x; n]` repeats a number here");
                };
                let n = self.int_arg(&r.len)?;
                let arr = self.array(
                    ArrayOp::Broadcast {
                        arr: x,
                        shape: vec![n],
                        axes: vec![],
                    },
                    span_of(r),
                )?;
                Some(Val::Array(arr, elem, 1))
            }
            other => self.fail(other, "expected an array literal"),
        }
    }

    /// `concatenate(Axis(k), &[..])` / `stack(Axis(k), &[..])` called as
    /// functions.
    pub fn join_call(&mut self, name: &str, c: &syn::ExprCall) -> Option<Val> {
        if c.args.len() != 2 {
            return self.fail(c, format!("`{name}` takes an axis and a slice of arrays: `{name}(Axis(0), &[a.view(), b.view()])`"));
        }
        let list = match strip(&c.args[1]) {
            syn::Expr::Reference(r) => strip(&r.expr),
            e => e,
        };
        let syn::Expr::Array(list) = list else {
            return self.fail(
                &c.args[1],
                format!("`{name}` takes the arrays as a slice literal: `&[a.view(), b.view()]`"),
            );
        };
        let mut vals = vec![];
        for e in &list.elems {
            vals.push((self.expr(e)?, e.clone()));
        }
        self.join(name, &c.args[0], vals, c)
    }

    /// The arrays joined along (`concatenate`) or stacked on a new
    /// (`stack`) axis.
    fn join(
        &mut self,
        name: &str,
        axis_e: &syn::Expr,
        vals: Vec<(Val, syn::Expr)>,
        node: &dyn ToTokens,
    ) -> Option<Val> {
        let span = span_of(node);
        let mut arrs = vec![];
        let mut elem_rank = None;
        for (v, e) in vals {
            match v {
                Val::Array(a, el, r) => {
                    if elem_rank.is_some_and(|x| x != (el, r)) {
                        return self.fail(
                            &e,
                            format!("`{name}` needs arrays of one element type and rank"),
                        );
                    }
                    elem_rank = Some((el, r));
                    arrs.push(a);
                }
                Val::Poison => return None,
                other => {
                    return self.fail(&e, format!("`{name}` joins arrays, found `{}`", other.ty()))
                }
            }
        }
        let Some((elem, rank)) = elem_rank else {
            return self.fail(node, format!("`{name}` needs at least one array"));
        };
        let stack = name == "stack";
        let out_rank = if stack { rank + 1 } else { rank };
        let axis = self.axis_arg(axis_e, out_rank)?;
        if out_rank > 3 {
            return self.fail(node, "arrays of rank 1 to 3 are supported");
        }
        if out_rank == 2 && axis == 1 {
            // ndarray's column-major result: the transposed view of the
            // join along axis 0 (of the transposed matrices; vectors
            // stack as they are).
            let mut parts = vec![];
            for a in arrs {
                parts.push(if stack {
                    a
                } else {
                    self.array(ArrayOp::Transpose { arr: a }, span)?
                });
            }
            let joined = self.join_atoms(&parts, elem, rank, 0, stack, node)?;
            let t = self.array(ArrayOp::Transpose { arr: joined }, span)?;
            return Some(Val::Array(t, elem, 2));
        }
        let joined = self.join_atoms(&arrs, elem, rank, axis, stack, node)?;
        Some(Val::Array(joined, elem, out_rank))
    }

    /// The build joining `arrs` (of `rank`) along `axis` of the result
    /// (`stack`: a new axis).
    fn join_atoms(
        &mut self,
        arrs: &[Atom],
        elem: Elem,
        rank: usize,
        axis: usize,
        stack: bool,
        node: &dyn ToTokens,
    ) -> Option<Atom> {
        let span = span_of(node);
        // The output shape: the first array's, with the joined axis summed
        // (or a new axis of the number of arrays).
        let first = arrs[0];
        let mut shape = vec![];
        for k in 0..rank {
            shape.push(self.array(
                ArrayOp::Shape {
                    arr: first,
                    axis: k,
                },
                span,
            )?);
        }
        // Where each part starts along the axis.
        let mut starts = vec![Atom::I64(0)];
        if stack {
            shape.insert(axis, Atom::I64(arrs.len() as i64));
            for k in 1..arrs.len() {
                starts.push(Atom::I64(k as i64));
            }
        } else {
            let mut total = Atom::I64(0);
            for (k, a) in arrs.iter().enumerate() {
                let n = self.array(ArrayOp::Shape { arr: *a, axis }, span)?;
                total = self.add_i64(total, n, span)?;
                if k + 1 < arrs.len() {
                    starts.push(total);
                }
            }
            shape[axis] = total;
        }
        match self.build_with(shape, node, |lw, ix| {
            let i = Atom::Var(ix[axis]);
            lw.pick(arrs, &starts, i, ix, axis, stack, elem, span)
        })? {
            Val::Array(a, ..) => Some(a),
            _ => None,
        }
    }

    /// The element at output index `ix` of the part index `i` along `axis`
    /// falls in: `if i < starts[1] { a0[..] } else if .. { .. } else { last[..] }`.
    #[allow(clippy::too_many_arguments)]
    fn pick(
        &mut self,
        arrs: &[Atom],
        starts: &[Atom],
        i: Atom,
        ix: &[ad_core_ir::ir::Var],
        axis: usize,
        stack: bool,
        elem: Elem,
        span: Span,
    ) -> Option<Val> {
        let read = |lw: &mut Self, k: usize| -> Option<Atom> {
            let mut idx: Vec<Atom> = ix.iter().map(|v| Atom::Var(*v)).collect();
            if stack {
                idx.remove(axis);
            } else {
                idx[axis] = lw.sub_i64(i, starts[k], span)?;
            }
            lw.array(ArrayOp::Index { arr: arrs[k], idx }, span)
        };
        if arrs.len() == 1 {
            return Some(Val::Scalar(read(self, 0)?, elem));
        }
        let cond = self.prim(Prim::Lt, &[i, starts[1]], span)?;
        self.b.open();
        let t = read(self, 0);
        let then_ = self.b.close(t.into_iter().collect(), vec![]);
        self.b.open();
        let e = self
            .pick(&arrs[1..], &starts[1..], i, ix, axis, stack, elem, span)
            .and_then(|v| match v {
                Val::Scalar(a, _) => Some(a),
                _ => None,
            });
        let else_ = self.b.close(e.into_iter().collect(), vec![]);
        if then_.results.is_empty() || else_.results.is_empty() {
            return None;
        }
        let v = self.emit1(
            Expr::If(If {
                cond,
                then_,
                else_,
                lin_shapes: vec![],
            }),
            span,
        )?;
        Some(Val::Scalar(v, elem))
    }

    /// `array![a, b, ..]` (nested brackets for rank 2 and 3).
    fn array_literal(&mut self, ts: TokenStream, node: &dyn ToTokens) -> Option<Val> {
        let e: syn::Expr = match syn::parse2(quote::quote!([#ts])) {
            Ok(e) => e,
            Err(_) => {
                return self.fail(
                    node,
                    "expected `array![a, b, ..]` or `array![[a, b], [c, d]]`",
                )
            }
        };
        // The nested element expressions and the shape.
        fn walk<'e>(
            e: &'e syn::Expr,
            depth: usize,
            shape: &mut Vec<usize>,
            out: &mut Vec<&'e syn::Expr>,
        ) -> bool {
            match e {
                syn::Expr::Array(a) => {
                    if shape.len() <= depth {
                        shape.push(a.elems.len());
                    } else if shape[depth] != a.elems.len() {
                        return false;
                    }
                    a.elems.iter().all(|x| walk(x, depth + 1, shape, out))
                }
                _ => {
                    if depth != shape.len() {
                        return false;
                    }
                    out.push(e);
                    true
                }
            }
        }
        let mut shape = vec![];
        let mut elems = vec![];
        if !walk(&e, 0, &mut shape, &mut elems) || shape.is_empty() || shape.len() > 3 {
            return self.fail(node, "`array![..]` must be rectangular, of rank 1 to 3");
        }
        let mut vals = vec![];
        for x in &elems {
            vals.push(((*x).clone(), self.expr(x)?));
        }
        self.array_of_elements(
            shape.iter().map(|n| Atom::I64(*n as i64)).collect(),
            &shape,
            vals,
            node,
        )
    }

    /// The elements `vals` (row-major) as an array of the literal `sizes`
    /// (`shape` as atoms).
    fn array_of_elements(
        &mut self,
        shape: Vec<Atom>,
        sizes: &[usize],
        vals: Vec<(syn::Expr, Val)>,
        node: &dyn ToTokens,
    ) -> Option<Val> {
        let span = span_of(node);
        let mut elem = None;
        for (e, v) in &vals {
            match v {
                Val::Scalar(_, el) => {
                    let u = match elem {
                        None => Some(*el),
                        Some(prev) => Elem::unify(prev, *el),
                    };
                    let Some(u) = u else {
                        return self.fail(e, "the elements of an array must have one type");
                    };
                    elem = Some(u);
                }
                Val::Poison => return None,
                other => {
                    return self.fail(
                        e,
                        format!("array elements must be numbers, found `{}`", other.ty()),
                    )
                }
            }
        }
        let elem = match elem.unwrap_or(Elem::F64) {
            Elem::Int(super::types::IntTy::Lit) => Elem::Int(super::types::IntTy::I64),
            e => e,
        };
        let zero = match elem {
            Elem::F64 => Atom::F64(0.0),
            _ => Atom::I64(0),
        };
        let rank = shape.len();
        let mut arr = self.array(
            ArrayOp::Broadcast {
                arr: zero,
                shape,
                axes: vec![],
            },
            span,
        )?;
        for (k, (_, v)) in vals.into_iter().enumerate() {
            let Val::Scalar(a, _) = v else { return None };
            let mut idx = vec![];
            let mut rest = k;
            for s in sizes.iter().rev() {
                idx.push(Atom::I64((rest % s) as i64));
                rest /= s;
            }
            idx.reverse();
            arr = self.array(
                ArrayOp::Update {
                    arr,
                    idx,
                    val: a,
                    add: false,
                },
                span,
            )?;
        }
        Some(Val::Array(arr, elem, rank))
    }

    /// `Array1::from(vec![..])`, `Array::from_vec(vec![..])`,
    /// `ArrayN::from_shape_vec(shape, vec![..])` (then `.unwrap()`).
    pub fn vec_ctor(&mut self, name: &str, c: &syn::ExprCall) -> Option<Val> {
        let want = if name == "from_shape_vec" { 2 } else { 1 };
        if c.args.len() != want {
            return self.fail(c, format!("`{name}` takes {want} argument(s)"));
        }
        let v = &c.args[want - 1];
        let m = match strip(v) {
            syn::Expr::Macro(m) if m.mac.path.is_ident("vec") => m,
            // Any other `Vec` value (a parameter, a `.collect()`, `to_vec()`):
            // a `Vec` is a one-dimensional array in the IR already.
            _ => {
                return match self.expr(v)? {
                    flat @ Val::Array(_, _, 1) => self.shaped(name, c, flat),
                    other => self.fail(
                        v,
                        format!(
                            "`{name}` takes a `Vec` (a `vec![..]` literal, a `Vec` parameter or a `.collect()`), found {}",
                            other.ty()
                        ),
                    ),
                };
            }
        };
        let flat = self.vec_macro(m)?;
        self.shaped(name, c, flat)
    }

    /// `Array2::from_diag(&v)`: `m[i, j] = if i == j { v[i] } else { 0 }`.
    pub fn diag_ctor(&mut self, c: &syn::ExprCall) -> Option<Val> {
        if c.args.len() != 1 {
            return self.fail(c, "`from_diag` takes one vector");
        }
        let arg = match strip(&c.args[0]) {
            syn::Expr::Reference(r) => &*r.expr,
            e => e,
        };
        let Val::Array(v, elem, 1) = self.expr(arg)? else {
            return self.fail(&c.args[0], "`from_diag` takes a one-dimensional array");
        };
        let span = span_of(c);
        let n = self.array(ArrayOp::Shape { arr: v, axis: 0 }, span)?;
        self.build_with(vec![n, n], c, |lw, ix| {
            let (i, j) = (Atom::Var(ix[0]), Atom::Var(ix[1]));
            let same = lw.prim(Prim::Eq, &[i, j], span)?;
            // Read at (i, i): always in range, selected on the diagonal.
            let x = lw.array(
                ArrayOp::Index {
                    arr: v,
                    idx: vec![i],
                },
                span,
            )?;
            let zero = if elem == Elem::F64 {
                Atom::F64(0.0)
            } else {
                Atom::I64(0)
            };
            Some(Val::Scalar(
                lw.prim(Prim::Select, &[same, x, zero], span)?,
                elem,
            ))
        })
    }

    /// `from_shape_vec`'s reshape of the flat vector (others: unchanged).
    fn shaped(&mut self, name: &str, c: &syn::ExprCall, flat: Val) -> Option<Val> {
        if name != "from_shape_vec" {
            return Some(flat);
        }
        let shape = self.shape_arg_pub(&c.args[0])?;
        let Val::Array(a, e, _) = flat else {
            return None;
        };
        self.reshape(a, e, 1, shape, c)
    }
}

/// The tokens of a macro's arguments split at top-level commas.
pub fn split_commas(ts: TokenStream) -> Vec<TokenStream> {
    let mut parts = vec![TokenStream::new()];
    for t in ts {
        if matches!(&t, TokenTree::Punct(p) if p.as_char() == ',') {
            parts.push(TokenStream::new());
        } else if let Some(last) = parts.last_mut() {
            last.extend([t]);
        }
    }
    parts.retain(|p| !p.is_empty());
    parts
}
