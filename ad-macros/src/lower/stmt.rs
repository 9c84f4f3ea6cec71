//! Statements and blocks: `let` (patterns, annotations), assignments to
//! variables, tuple fields and array elements (`a[i] = e`, `m[[i, j]] += e`:
//! IR `Update`), compound assignments, the function body with its final
//! `return`, and the check of the result against the declared output.

use super::ctx::{span_of, Lowerer};
use super::errors;
use super::expr::strip;
use super::ops::{arith_prim, op_error};
use super::types::{classify, Elem, RTy};
use super::val::Val;
use crate::sig::Out;
use ad_core_ir::ir::{ArrayOp, Atom, Prim};
use proc_macro2::Span;
use quote::ToTokens;

impl Lowerer<'_> {
    /// The function body: statements, then the tail expression or a final
    /// `return e;`. Returns the value and the span of the expression giving it.
    pub fn lower_fn_body(&mut self, block: &syn::Block, out: &Out) -> (Val, Span) {
        let mut block = block.clone();
        // The zero a `return` inside a loop starts from: `f64` and tuple
        // outputs (an array's shape is not known before the loop).
        fn zero(o: &Out) -> Option<syn::Expr> {
            match o {
                Out::F64 => Some(syn::parse_quote!(0.0f64)),
                Out::Array(_) | Out::Fixed(_) => None,
                Out::Tuple(ps) => {
                    let parts = ps.iter().map(zero).collect::<Option<Vec<_>>>()?;
                    Some(syn::parse_quote!((#(#parts,)*)))
                }
            }
        }
        if let Err(e) = super::desugar::let_else(&mut block) {
            let span = e.span();
            self.errors.push(e);
            return (Val::Poison, span);
        }
        let ty_of =
            |e: &syn::Expr, lets: &[(String, super::syntax_ty::Local)]| self.syntax_ty(e, lets, 0);
        super::vec_push::rewrite_pushes(&mut block, &ty_of);
        if let Err(e) = super::desugar::lift_loop_returns(&mut block, zero(out).as_ref()) {
            // The body's `return` would be refused again below: one error.
            let span = e.span();
            self.errors.push(e);
            return (Val::Poison, span);
        }
        super::desugar::hoist_consts(&mut block);
        super::desugar::inline_mut_views(&mut block);
        super::desugar::lift_early_returns(&mut block);
        strip_tail_returns(&mut block);
        let block = &block;
        let stmts = &block.stmts;
        let (init, last) = match stmts.split_last() {
            Some((l, init)) => (init, Some(l)),
            None => (&stmts[..], None),
        };
        for (k, s) in init.iter().enumerate() {
            self.lower_stmt_before(s, &stmts[k + 1..]);
        }
        let ret = match last {
            Some(syn::Stmt::Expr(syn::Expr::Return(r), _)) => Some(r),
            _ => None,
        };
        match (ret, last) {
            (Some(r), _) => match &r.expr {
                Some(e) => (self.lower_expr(e), span_of(e)),
                None => (Val::Unit, span_of(r)),
            },
            (None, Some(syn::Stmt::Expr(e, None))) => (self.lower_expr(e), span_of(e)),
            (None, Some(s)) => {
                self.lower_stmt(s);
                (Val::Unit, block.brace_token.span.close())
            }
            (None, None) => (Val::Unit, block.brace_token.span.join()),
        }
    }

    /// A block in its own scope; its value is its tail expression (or `()`).
    pub fn lower_block(&mut self, block: &syn::Block) -> Option<Val> {
        self.env.push_scope();
        let v = self.lower_stmts(&block.stmts);
        self.env.pop_scope();
        v
    }

    /// Statements in the current scope; the value of a final expression
    /// without `;`, `()` otherwise.
    pub fn lower_stmts(&mut self, stmts: &[syn::Stmt]) -> Option<Val> {
        let mut value = Some(Val::Unit);
        for (k, s) in stmts.iter().enumerate() {
            match s {
                syn::Stmt::Expr(e, None) if k + 1 == stmts.len() => value = self.expr(e),
                s => self.lower_stmt_before(s, &stmts[k + 1..]),
            }
        }
        value
    }

    /// One statement followed in its block by `rest` (which a `let`
    /// without a value reads for the values assigned to its variable).
    fn lower_stmt_before(&mut self, s: &syn::Stmt, rest: &[syn::Stmt]) {
        match s {
            syn::Stmt::Local(l) if l.init.is_none() => self.deferred_let(l, rest),
            s => self.lower_stmt(s),
        }
    }

    /// One statement (its value, if any, is dropped).
    pub fn lower_stmt(&mut self, s: &syn::Stmt) {
        // an empty statement `;`
        if let syn::Stmt::Expr(syn::Expr::Verbatim(t), _) = s {
            if t.is_empty() {
                return;
            }
        }
        match s {
            syn::Stmt::Local(l) => self.local(l),
            syn::Stmt::Expr(e, _) => {
                let _ = self.expr(e);
            }
            syn::Stmt::Item(i) => {
                let _: Option<()> = self.fail(i, errors::ITEM);
            }
            syn::Stmt::Macro(m) => {
                let _: Option<()> =
                    self.fail(&m.mac, errors::macro_refused(&m.mac, self.asserts_on_entry));
            }
        }
    }

    fn local(&mut self, l: &syn::Local) {
        let Some(init) = &l.init else {
            let _: Option<()> = self.fail(l, errors::LET_NO_INIT);
            return self.bind_pat(&l.pat, Val::Poison);
        };
        if let Some((e, _)) = &init.diverge {
            let _: Option<()> = self.fail(e, errors::LET_ELSE);
        }
        let annot = match &l.pat {
            syn::Pat::Type(pt) => Some(&*pt.ty),
            _ => None,
        };
        let val = match strip(&init.expr) {
            syn::Expr::Call(c) if annot.is_some() => self.call(c, annot),
            syn::Expr::Loop(l) if annot.is_some() => match self.loop_with_value(l, annot) {
                Some(v) => v,
                None => self.expr(&init.expr),
            },
            e => self.expr(e),
        };
        let val = match val {
            Some(Val::Iter(_)) => {
                let _: Option<()> = self.fail(&init.expr, errors::ITER_VALUE);
                Val::Poison
            }
            Some(v) => v,
            None => Val::Poison,
        };
        self.bind_pat_checked(&l.pat, val, &init.expr);
    }

    /// Binds a pattern, checking a type annotation against the value
    /// (errors spanned on `value_node`).
    pub fn bind_pat_checked(&mut self, pat: &syn::Pat, val: Val, value_node: &dyn ToTokens) {
        if let syn::Pat::Type(pt) = pat {
            let val = self.annotate(&pt.ty, val, value_node);
            return self.bind_pat(&pt.pat, val);
        }
        self.bind_pat(pat, val)
    }

    /// Checks `val` against the written type `ty`; returns the value with
    /// its type refined (integer literals get the annotated integer type).
    pub fn annotate(&mut self, ty: &syn::Type, val: Val, value_node: &dyn ToTokens) -> Val {
        let want = match classify(ty) {
            Ok(d) => d.rty(),
            Err(e) => {
                self.errors.push(e);
                return Val::Poison;
            }
        };
        if val.is_poison() {
            return Val::Poison;
        }
        if want.unify(&val.ty()).is_none() {
            let _: Option<()> = self.fail(
                value_node,
                format!("mismatched types: expected `{want}`, found `{}`", val.ty()),
            );
            return Val::Poison;
        }
        val.with_ty(&want)
    }

    /// Binds a pattern to a value in the current scope.
    pub fn bind_pat(&mut self, pat: &syn::Pat, val: Val) {
        match pat {
            syn::Pat::Ident(pi) => {
                if pi.by_ref.is_some() {
                    let _: Option<()> = self.fail(pi, errors::REF_PATTERN);
                }
                if let Some((_, sub)) = &pi.subpat {
                    let _: Option<()> = self.fail(sub, errors::PATTERN);
                }
                self.env
                    .declare(&pi.ident.to_string(), val, pi.mutability.is_some());
            }
            syn::Pat::Wild(_) => {}
            syn::Pat::Paren(p) => self.bind_pat(&p.pat, val),
            syn::Pat::Reference(r) => self.bind_pat(&r.pat, val),
            syn::Pat::Type(pt) => {
                let val = self.annotate(&pt.ty, val, pt);
                self.bind_pat(&pt.pat, val)
            }
            syn::Pat::Tuple(t) => {
                let parts: Vec<Val> = match val {
                    Val::Tuple(vs) if vs.len() == t.elems.len() => vs,
                    Val::Poison => vec![Val::Poison; t.elems.len()],
                    other => {
                        let _: Option<()> = self.fail(
                            t,
                            format!(
                                "mismatched types: expected `{}`, found a tuple of {} elements",
                                other.ty(),
                                t.elems.len()
                            ),
                        );
                        vec![Val::Poison; t.elems.len()]
                    }
                };
                for (p, v) in t.elems.iter().zip(parts) {
                    if matches!(p, syn::Pat::Rest(_)) {
                        let _: Option<()> = self.fail(p, errors::PATTERN);
                        continue;
                    }
                    self.bind_pat(p, v);
                }
            }
            // `let [a, b, c] = p;` for a fixed-size array: its elements.
            syn::Pat::Slice(sl) if !sl.elems.iter().any(|p| matches!(p, syn::Pat::Rest(_))) => {
                let span = span_of(sl);
                for (k, p) in sl.elems.iter().enumerate() {
                    let v = match &val {
                        Val::Array(arr, elem, 1) => self
                            .array(
                                ArrayOp::Index {
                                    arr: *arr,
                                    idx: vec![Atom::I64(k as i64)],
                                },
                                span,
                            )
                            .map_or(Val::Poison, |x| Val::Scalar(x, *elem)),
                        Val::Poison => Val::Poison,
                        other => {
                            if k == 0 {
                                let _: Option<()> = self.fail(
                                    sl,
                                    format!(
                                        "mismatched types: expected `{}`, found an array pattern",
                                        other.ty()
                                    ),
                                );
                            }
                            Val::Poison
                        }
                    };
                    self.bind_pat(p, v);
                }
            }
            other => {
                let _: Option<()> = self.fail(other, errors::PATTERN);
                self.bind_unknown_names(other);
            }
        }
    }

    /// Declares the names of a refused pattern as poison (no cascade of
    /// "cannot find value").
    fn bind_unknown_names(&mut self, pat: &syn::Pat) {
        struct Names(Vec<syn::Ident>);
        impl<'a> syn::visit::Visit<'a> for Names {
            fn visit_pat_ident(&mut self, p: &'a syn::PatIdent) {
                self.0.push(p.ident.clone());
            }
        }
        let mut n = Names(vec![]);
        syn::visit::Visit::visit_pat(&mut n, pat);
        for i in n.0 {
            self.env.declare(&i.to_string(), Val::Poison, true);
        }
    }

    /// `place = value`.
    pub fn assign(&mut self, a: &syn::ExprAssign) -> Option<Val> {
        if let syn::Expr::Tuple(t) = strip(&a.left) {
            let v = self.lower_expr(&a.right);
            let parts = match v {
                Val::Tuple(vs) if vs.len() == t.elems.len() => vs,
                Val::Poison => return Some(Val::Unit),
                other => {
                    return self.fail(
                        &a.right,
                        format!(
                            "mismatched types: expected a tuple of {} elements, found `{}`",
                            t.elems.len(),
                            other.ty()
                        ),
                    )
                }
            };
            for (place, v) in t.elems.iter().zip(parts) {
                self.store(place, v, &a.right);
            }
            return Some(Val::Unit);
        }
        let v = self.lower_expr(&a.right);
        self.store(&a.left, v, &a.right);
        Some(Val::Unit)
    }

    /// `place op= value`.
    pub fn compound_assign(&mut self, e: &syn::ExprBinary) -> Option<Val> {
        let p = arith_prim(&e.op)?;
        let rhs = self.lower_expr(&e.right);
        // `a[i] += v` / `a[i] -= v` on an array element: an accumulating update.
        if let syn::Expr::Index(ix) = strip(&e.left) {
            if matches!(p, Prim::Add | Prim::Sub) {
                if let Some(done) = self.accumulate(ix, p, rhs.clone(), e) {
                    return done;
                }
            }
        }
        let cur = self.lower_expr(&e.left);
        if cur.is_poison() || rhs.is_poison() {
            return None;
        }
        if let (Val::Scalar(_, a), Val::Scalar(_, b)) = (&cur, &rhs) {
            if a.unify(*b).is_none() || *a == Elem::Bool {
                return self.fail(e, op_error(&e.op, &cur.ty(), &rhs.ty()));
            }
        }
        if matches!(cur, Val::Scalar(..)) && matches!(rhs, Val::Array(..)) {
            return self.fail(e, op_error(&e.op, &cur.ty(), &rhs.ty()));
        }
        let plain = match e.op {
            syn::BinOp::AddAssign(t) => syn::BinOp::Add(syn::Token![+](t.spans[0])),
            syn::BinOp::SubAssign(t) => syn::BinOp::Sub(syn::Token![-](t.spans[0])),
            syn::BinOp::MulAssign(t) => syn::BinOp::Mul(syn::Token![*](t.spans[0])),
            syn::BinOp::DivAssign(t) => syn::BinOp::Div(syn::Token![/](t.spans[0])),
            syn::BinOp::RemAssign(t) => syn::BinOp::Rem(syn::Token![%](t.spans[0])),
            _ => return None,
        };
        let new = self.binop(&plain, cur, rhs, e)?;
        self.store(&e.left, new, e);
        Some(Val::Unit)
    }

    /// `a[idx] += v` (`add`) or `-= v` as one `Update { add: true }`; `None`
    /// when the place is not an element of a local array (the caller then
    /// reads, computes and stores).
    fn accumulate(
        &mut self,
        ix: &syn::ExprIndex,
        p: Prim,
        rhs: Val,
        node: &syn::ExprBinary,
    ) -> Option<Option<Val>> {
        let syn::Expr::Path(path) = strip(&ix.expr) else {
            return None;
        };
        let name = path.path.get_ident()?.to_string();
        let id = self.env.lookup(&name)?;
        let Val::Array(arr, elem, rank) = self.env.get(id).val.clone() else {
            return None;
        };
        if !self.check_mutable(id, &ix.expr) {
            return Some(None);
        }
        let idx = self.indices(&ix.index, rank, &ix.expr)?;
        let span = span_of(node);
        let Val::Scalar(v, e) = rhs else {
            return Some(if rhs.is_poison() {
                None
            } else {
                self.fail(node, op_error(&node.op, &RTy::Scalar(elem), &rhs.ty()))
            });
        };
        if idx.len() != rank || elem.unify(e).is_none() {
            return Some(self.fail(
                node,
                op_error(&node.op, &RTy::Scalar(elem), &RTy::Scalar(e)),
            ));
        }
        let v = if p == Prim::Sub {
            match self.neg(Val::Scalar(v, e), node) {
                Some(Val::Scalar(a, _)) => a,
                _ => return Some(None),
            }
        } else {
            v
        };
        let Some(new) = self.array(
            ArrayOp::Update {
                arr,
                idx,
                val: v,
                add: true,
            },
            span,
        ) else {
            return Some(None);
        };
        self.env.set(id, Val::Array(new, elem, rank));
        Some(Some(Val::Unit))
    }

    /// Whether binding `id` may be assigned here (records the error if not).
    pub fn check_mutable(&mut self, id: usize, node: &dyn ToTokens) -> bool {
        let b = self.env.get(id);
        let name = b.name.clone();
        if id < self.closure_floor {
            let _: Option<()> = self.fail(
                node,
                format!("cannot assign to `{name}` inside a closure: array closures (`mapv`, `from_shape_fn`, `map`, ...) must not modify variables of the enclosing function; use a `for` loop"),
            );
            return false;
        }
        if !b.mutable {
            let _: Option<()> = self.fail(
                node,
                format!("cannot assign twice to immutable variable `{name}`: declare it with `let mut {name}`"),
            );
            return false;
        }
        true
    }

    /// Stores `v` into a place: a variable, a tuple field or an array element.
    pub fn store(&mut self, place: &syn::Expr, v: Val, value_node: &dyn ToTokens) {
        let place = strip(place);
        match place {
            syn::Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => {
                self.store(&u.expr, v, value_node)
            }
            syn::Expr::Path(p) => {
                let Some(id) = p
                    .path
                    .get_ident()
                    .and_then(|i| self.env.lookup(&i.to_string()))
                else {
                    let _ = self.expr(place);
                    return;
                };
                if !self.check_mutable(id, place) {
                    return;
                }
                let old = self.env.get(id).val.clone();
                if v.is_poison() || old.is_poison() {
                    self.env.set(id, Val::Poison);
                    return;
                }
                match old.ty().unify(&v.ty()) {
                    Some(t) => self.env.set(id, v.with_ty(&t)),
                    None => {
                        let _: Option<()> = self.fail(
                            value_node,
                            format!(
                                "mismatched types: expected `{}`, found `{}`",
                                old.ty(),
                                v.ty()
                            ),
                        );
                    }
                }
            }
            syn::Expr::Field(f) => {
                let syn::Member::Unnamed(i) = &f.member else {
                    let _ = self.expr(place);
                    return;
                };
                let Some(Val::Tuple(mut parts)) = self.expr(&f.base) else {
                    let _ = self.expr(place);
                    return;
                };
                let k = i.index as usize;
                if k >= parts.len() {
                    let _ = self.expr(place);
                    return;
                }
                let old = parts[k].clone();
                match old.ty().unify(&v.ty()) {
                    Some(t) => parts[k] = v.with_ty(&t),
                    None => {
                        let _: Option<()> = self.fail(
                            value_node,
                            format!(
                                "mismatched types: expected `{}`, found `{}`",
                                old.ty(),
                                v.ty()
                            ),
                        );
                        return;
                    }
                }
                self.store(&f.base, Val::Tuple(parts), value_node);
            }
            syn::Expr::Index(ix) => {
                let Some(Val::Array(arr, elem, rank)) = self.expr(&ix.expr) else {
                    return;
                };
                let Some(idx) = self.indices(&ix.index, rank, &ix.expr) else {
                    return;
                };
                let want = if idx.len() == rank {
                    RTy::Scalar(elem)
                } else {
                    RTy::Array(elem, rank - idx.len())
                };
                if v.is_poison() {
                    return;
                }
                let val = match (&v, want.unify(&v.ty())) {
                    (Val::Scalar(a, _) | Val::Array(a, _, _), Some(_)) => *a,
                    _ => {
                        let _: Option<()> = self.fail(
                            value_node,
                            format!("mismatched types: expected `{want}`, found `{}`", v.ty()),
                        );
                        return;
                    }
                };
                let span = span_of(place);
                let Some(new) = self.array(
                    ArrayOp::Update {
                        arr,
                        idx,
                        val,
                        add: false,
                    },
                    span,
                ) else {
                    return;
                };
                self.store(&ix.expr, Val::Array(new, elem, rank), value_node);
            }
            other => {
                let _: Option<()> = self.fail(
                    other,
                    "this place cannot be assigned: assign a variable, a tuple field (`t.0`) or an array element (`a[i]`, `m[[i, j]]`)",
                );
            }
        }
    }

    /// The IR results of the function: the leaves of `v` checked against
    /// the declared output.
    pub fn output(&mut self, v: &Val, out: &Out, span: Span) -> Option<Vec<Atom>> {
        if v.is_poison() {
            return None;
        }
        let ok = match (v, out) {
            (Val::Scalar(_, Elem::F64), Out::F64) => true,
            (Val::Array(_, Elem::F64, r), Out::Array(s)) => r == s,
            (Val::Array(_, Elem::F64, r), Out::Fixed(_)) => *r == 1,
            (Val::Tuple(vs), Out::Tuple(os)) if vs.len() == os.len() => {
                let mut all = vec![];
                for (v, o) in vs.iter().zip(os) {
                    all.extend(self.output(v, o, span)?);
                }
                return Some(all);
            }
            _ => false,
        };
        if !ok {
            return self.fail_at(
                span,
                format!(
                    "mismatched types: expected `{}`, found `{}`",
                    out_ty(out),
                    v.ty()
                ),
            );
        }
        v.leaves()
    }
}

/// Replaces `return e` in tail position (the last statement of the body, of
/// the branches of a tail `if`, of a tail block) by `e`: those returns are
/// not early, they give the function's value.
pub fn strip_tail_returns(block: &mut syn::Block) {
    let Some(last) = block.stmts.last_mut() else {
        return;
    };
    let expr = match last {
        syn::Stmt::Expr(syn::Expr::Return(r), _) => match r.expr.take() {
            Some(e) => *e,
            None => return,
        },
        syn::Stmt::Expr(e, None) => {
            strip_tail_returns_expr(e);
            return;
        }
        syn::Stmt::Expr(e @ syn::Expr::If(_), Some(_)) => {
            // `if c { return a; } else { return b; }` as the last statement.
            let mut e = e.clone();
            strip_tail_returns_expr(&mut e);
            e
        }
        _ => return,
    };
    *last = syn::Stmt::Expr(expr, None);
}

fn strip_tail_returns_expr(e: &mut syn::Expr) {
    match e {
        syn::Expr::If(i) => {
            strip_tail_returns(&mut i.then_branch);
            if let Some((_, els)) = &mut i.else_branch {
                strip_tail_returns_expr(els);
            }
        }
        syn::Expr::Block(b) => strip_tail_returns(&mut b.block),
        syn::Expr::Paren(p) => strip_tail_returns_expr(&mut p.expr),
        _ => {}
    }
}

/// The Rust type of an output.
pub fn out_ty(o: &Out) -> RTy {
    match o {
        Out::F64 => RTy::F64,
        Out::Array(r) => RTy::Array(Elem::F64, *r),
        Out::Fixed(_) => RTy::Array(Elem::F64, 1),
        Out::Tuple(ps) => RTy::Tuple(ps.iter().map(out_ty).collect()),
    }
}

#[cfg(test)]
mod tests {
    use crate::lower::testutil::*;

    #[test]
    fn lets_shadowing_blocks_and_return() {
        both! {
            fn f(x: f64, y: f64) -> f64 {
                let a: f64 = x * 2.0;
                let mut b = a + y;
                b = b * b;
                let a = { let t = b - x; t / 3.0 };
                b += a;
                b -= 1.0;
                b *= y;
                b /= 2.0;
                let _ = x;
                return b + a;
            }
        }
        for (x, y) in [(0.3, 1.2), (-2.0, 0.5)] {
            check(SRC, &[fv(x), fv(y)], &[fv(f(x, y))]);
        }
    }

    #[test]
    fn tuples_destructuring_fields_and_tuple_outputs() {
        both! {
            fn f(p: (f64, f64), x: f64) -> (f64, (f64, f64)) {
                let (a, b) = p;
                let mut t = (a * x, (b, 1.0));
                t.0 += b;
                (t.1).1 = t.0 * a;
                let ((c, _), &d) = ((t.1 .0, 2.0), &t.1 .1);
                let (mut u, mut v) = (c, d);
                (u, v) = (v, u);
                (u - v, (t.0, p.1 * u))
            }
        }
        for (a, b, x) in [(0.3, 1.2, 2.0), (-1.0, 0.5, 0.25)] {
            let (r0, (r1, r2)) = f((a, b), x);
            let args = [ad_core_ir::interp::Value::Tuple(vec![fv(a), fv(b)]), fv(x)];
            check(SRC, &args, &[fv(r0), fv(r1), fv(r2)]);
        }
    }

    #[test]
    fn mutable_parameters() {
        both! {
            fn f(mut x: f64, n: usize) -> f64 {
                x = x * x;
                x + n as f64
            }
        }
        check(SRC, &[fv(1.5), iv(2)], &[fv(f(1.5, 2))]);
    }

    #[test]
    fn annotations_refine_integer_literals() {
        both! {
            fn f(x: f64, n: u32) -> f64 {
                let k: u32 = 3;
                let m = k + n;
                x * m as f64
            }
        }
        check(SRC, &[fv(1.5), iv(2)], &[fv(f(1.5, 2))]);
        refuses(
            "fn f(x: f64) -> f64 { let k: usize = x; x }",
            "mismatched types: expected `usize`, found `f64`",
        );
        refuses(
            "fn f(x: f64) -> f64 { let k: (f64, f64) = x; x }",
            "mismatched types: expected `(f64, f64)`, found `f64`",
        );
        refuses(
            "fn f(x: f64) -> f64 { let k: String = x; x }",
            "unsupported type `String`",
        );
    }

    #[test]
    fn output_edge_cases() {
        check("fn f(x: f64) -> f64 { 1.0 }", &[fv(0.5)], &[fv(1.0)]);
        check(
            "fn f(x: f64) -> (f64, f64) { (x, x) }",
            &[fv(0.5)],
            &[fv(0.5), fv(0.5)],
        );
        check(
            "fn f(a: Array1<f64>) -> Array1<f64> { a }",
            &[v1(&[1.0, 2.0])],
            &[v1(&[1.0, 2.0])],
        );
        check(
            "fn f(n: usize, x: f64) -> f64 { n as f64 }",
            &[iv(3), fv(0.5)],
            &[fv(3.0)],
        );
        check(
            "fn f(n: usize) -> Array2<f64> { Array2::zeros((n, n)) }",
            &[iv(1)],
            &[m2(1, &[0.0])],
        );
        check(
            "fn f(x: f64, w: &Array1<f64>) -> ((f64, Array1<f64>), f64) { ((x, w.mapv(|v| v * x)), w.sum()) }",
            &[fv(2.0), v1(&[1.0, 3.0])],
            &[fv(2.0), v1(&[2.0, 6.0]), fv(4.0)],
        );
    }

    #[test]
    fn returns_in_tail_position() {
        both! {
            fn f(x: f64) -> f64 {
                let y = x * 2.0;
                if y > 1.0 {
                    return y;
                } else if y < -1.0 {
                    return -y
                } else {
                    { return x * x; }
                }
            }
        }
        for x in [0.8, -0.9, 0.1] {
            check(SRC, &[fv(x)], &[fv(f(x))]);
        }
        refuses(
            "fn f(x: f64) -> f64 { let y = if x > 1.0 { return x; } else { x }; y }",
            "early `return` is not supported",
        );
    }

    #[test]
    fn const_items_in_the_body_are_lets_visible_to_the_whole_block() {
        // Used before its declaration (an item is visible in its whole
        // block), in a nested block and a closure; `static` too.
        check(
            "fn f(x: f64) -> f64 { let y = x * C; const C: f64 = 2.0; \
             static S: f64 = 0.5; let g = |t: f64| t * S; \
             let mut s = 0.0; for _ in 0..N { s += y; { const D: f64 = 0.25; s += D; } } \
             const N: usize = 3; g(s) }",
            &[fv(1.5)],
            &[fv((1.5 * 2.0 + 0.25) * 3.0 * 0.5)],
        );
        // With attributes (`#[cfg]`, which the body's `cfg` handling does
        // not see on items): refused, as other items.
        refuses(
            "fn f(x: f64) -> f64 { #[cfg(test)] const C: f64 = 2.0; x }",
            "items (functions, `use`, a `const` or `static` with attributes, ...)",
        );
    }

    #[test]
    fn lets_without_a_value_start_from_a_zero_never_read() {
        check(
            "fn f(x: f64) -> f64 { let y; let t; let k: usize; \
             if x > 1.0 { y = x * 2.0; t = (x, true); k = 3; } else { y = -x; t = (1.0, false); k = 1; } \
             let s = if t.1 { t.0 } else { 0.5 }; y + s + k as f64 }",
            &[fv(1.5)],
            &[fv(1.5 * 2.0 + 1.5 + 3.0)],
        );
        check(
            "fn f(x: f64) -> f64 { let y; let t; let k: usize; \
             if x > 1.0 { y = x * 2.0; t = (x, true); k = 3; } else { y = -x; t = (1.0, false); k = 1; } \
             let s = if t.1 { t.0 } else { 0.5 }; y + s + k as f64 }",
            &[fv(0.5)],
            &[fv(-0.5 + 0.5 + 1.0)],
        );
        refuses(
            "fn f(x: Array1<f64>) -> f64 { let w; w = x.mapv(|e| e * 2.0); w.sum() }",
            "annotate a number or a tuple",
        );
        refuses(
            "fn f(x: Array1<f64>) -> f64 { let w: Array1<f64>; w = x.mapv(|e| e * 2.0); w.sum() }",
            "not arrays",
        );
    }

    #[test]
    fn refusals() {
        refuses(
            "fn f(x: f64) -> f64 { let [y, z]: [f64; 2]; y = x; z = x; y + z }",
            "`let` without a value is supported for a name or a tuple of names",
        );
        refuses(
            "fn f(x: f64) -> f64 { let y = x; y = 2.0; y }",
            "cannot assign twice to immutable variable `y`: declare it with `let mut y`",
        );
        refuses(
            "fn f(x: f64) -> f64 { x = 2.0; x }",
            "cannot assign twice to immutable variable `x`",
        );
        refuses(
            "fn f(x: f64) -> f64 { let mut y = x; y = 2; y }",
            "mismatched types: expected `f64`, found `{integer}`",
        );
        refuses(
            "fn f(x: f64) -> f64 { let v = vec![[x, 1.0]]; x }",
            "arrays of arrays are not supported",
        );
        refuses("fn f(x: f64) -> f64 { fn g() {} x }", "items (functions, `use`, a `const` or `static` with attributes, ...) inside a #[differentiable] function are not supported");
        refuses("fn f(x: f64) -> f64 { println!(\"{}\", x); x }", "macros are not supported in #[differentiable] functions: `println!` cannot be differentiated; remove it");
        refuses(
            "fn f(x: f64) -> f64 { vec![x]; x }",
            "`vec!` cannot be differentiated; bind the array with `let`",
        );
        refuses(
            "fn f(x: f64) -> Array1<f64> { for i in 0..3 { if x > 0.0 { return Array1::zeros(2); } } Array1::zeros(3) }",
            "a `return` inside a loop is supported for `f64` and tuple outputs",
        );
        refuses(
            "fn f(x: f64) -> f64 { for i in 0..3 { let y = { return x; }; } 2.0 * x }",
            "early `return` is not supported",
        );
        refuses(
            "fn f(x: f64) -> f64 { let n = 3; n }",
            "mismatched types: expected `f64`, found `{integer}`",
        );
        refuses(
            "fn f(x: f64) -> (f64, f64) { x }",
            "mismatched types: expected `(f64, f64)`, found `f64`",
        );
        refuses(
            "fn f(x: f64) -> f64 { let y = x; }",
            "mismatched types: expected `f64`, found `()`",
        );
        refuses(
            "fn f(x: f64) -> Array1<f64> { x }",
            "mismatched types: expected `Array1<f64>`, found `f64`",
        );
        refuses(
            "fn f(x: f64) -> f64 { let (a, b) = x; a }",
            "mismatched types: expected `f64`, found a tuple of 2 elements",
        );
        refuses(
            "fn f(x: f64) -> f64 { let Some(y) = x else { return 0.0 }; y }",
            "`let else` patterns are supported on numbers",
        );
        refuses(
            "fn f(x: f64) -> f64 { let ref y = x; *y }",
            "`ref` bindings are not supported",
        );
        refuses(
            "fn f(x: f64) -> f64 { let [a] = x; a }",
            "mismatched types: expected `f64`, found an array pattern",
        );
        refuses(
            "fn f(x: f64) -> f64 { let [a, ..] = [x, x]; a }",
            "this pattern is not supported",
        );
        refuses(
            "fn f(x: f64) -> f64 { 2.0 = x; x }",
            "this place cannot be assigned",
        );
    }
}
