//! Control flow and the SSA conversion of mutable variables.
//!
//! A mutable variable is a binding whose value the lowering replaces on
//! every assignment (`env.rs`). Around control flow:
//! - `if`: both branches are lowered from the same snapshot of the bindings;
//!   the variables either branch changed become extra results of the IR
//!   `If` (each branch yields its own value, or the value from before), and
//!   are rebound to those results afterwards.
//! - `for i in a..b`: the variables the body assigns (found syntactically
//!   beforehand by [`assigned_names`], respecting shadowing) become the loop
//!   state: the body is lowered with them bound to the lambda's state
//!   parameters, and yields their new values; afterwards they are rebound to
//!   the loop's final state. The IR loop runs `k` in `0..n` with
//!   `n = max(b - a, 0)` and `i = a + k` (reversed for `.rev()`).
//! - `a && b`, `a || b`: evaluated as the IR's eager `and`/`or` when `b` is
//!   plain comparisons, as an `If` otherwise (so `i < n && v[i] > 0.0` never
//!   reads out of range).

use super::ctx::{span_of, Lowerer};
use super::expr::strip;
use super::types::{Elem, IntTy};
use super::val::Val;
use ad_core_ir::ir::{Atom, Block, Expr, If, Loop, Prim, Var, While};
use ad_core_ir::types::Ty;
use std::collections::BTreeSet;
use syn::visit::Visit;

/// The first `break` of a loop body that leaves this loop (not one of a
/// nested loop or closure).
fn first_break(body: &syn::Block) -> Option<&syn::ExprBreak> {
    struct Find<'a>(Option<&'a syn::ExprBreak>);
    impl<'a> Visit<'a> for Find<'a> {
        fn visit_expr_break(&mut self, b: &'a syn::ExprBreak) {
            self.0 = self.0.or(Some(b));
        }
        fn visit_expr_for_loop(&mut self, _: &'a syn::ExprForLoop) {}
        fn visit_expr_while(&mut self, _: &'a syn::ExprWhile) {}
        fn visit_expr_loop(&mut self, _: &'a syn::ExprLoop) {}
        fn visit_expr_closure(&mut self, _: &'a syn::ExprClosure) {}
    }
    let mut f = Find(None);
    f.visit_block(body);
    f.0
}

/// A variable carried by a loop: its binding, its value before the loop
/// (the template of its shape) and that value's leaves.
type LoopVar = (usize, Val, Vec<Atom>);

impl Lowerer<'_> {
    /// A condition: a `bool` scalar atom.
    pub fn cond(&mut self, e: &syn::Expr) -> Option<Atom> {
        match self.expr(e)? {
            Val::Scalar(a, Elem::Bool) => Some(a),
            other => self.fail(
                e,
                format!("mismatched types: expected `bool`, found `{}`", other.ty()),
            ),
        }
    }

    /// `if c { .. } else { .. }` as an expression or a statement.
    pub fn lower_if(&mut self, e: &syn::ExprIf) -> Option<Val> {
        if let syn::Expr::Let(l) = strip(&e.cond) {
            // `if let P = e`: a `match` (patterns on numbers, `bool`, enums)
            let m = super::desugar::if_let_to_match(e, l);
            return match super::desugar::match_to_if(&m, self.spans.len()) {
                Ok(x) => self.expr(&x),
                Err(_) => self.fail(&l.pat, super::errors::IF_LET_PATTERN),
            };
        }
        let cond = self.cond(&e.cond);
        let start = self.env.len();
        let before = self.env.snapshot(start);

        self.b.open();
        let tv = self.lower_block(&e.then_branch).unwrap_or(Val::Poison);
        let then_env = self.env.snapshot(start);
        let then_blk = self.b.close(vec![], vec![]);
        self.env.restore(&before);

        self.b.open();
        let ev = match &e.else_branch {
            Some((_, els)) => self.lower_expr(els),
            None => Val::Unit,
        };
        let else_env = self.env.snapshot(start);
        let else_blk = self.b.close(vec![], vec![]);
        self.env.restore(&before);

        // The value of the `if`.
        let value_ty = match tv.ty().unify(&ev.ty()) {
            Some(t) => t,
            None if e.else_branch.is_none() => {
                let _: Option<()> = self.fail(
                    &e.then_branch,
                    format!(
                        "`if` may be missing an `else` clause: expected `()`, found `{}`",
                        tv.ty()
                    ),
                );
                return self.if_changed(
                    cond?, then_blk, else_blk, &before, &then_env, &else_env, None, e,
                );
            }
            None => {
                let node: &dyn quote::ToTokens = match &e.else_branch {
                    Some((_, els)) => els,
                    None => &e.then_branch,
                };
                let _: Option<()> = self.fail(
                    node,
                    format!(
                        "`if` and `else` have incompatible types: expected `{}`, found `{}`",
                        tv.ty(),
                        ev.ty()
                    ),
                );
                return self.if_changed(
                    cond?, then_blk, else_blk, &before, &then_env, &else_env, None, e,
                );
            }
        };
        let unit = matches!(tv, Val::Unit);
        let value = match (tv.leaves(), ev.leaves()) {
            (Some(t), Some(el)) => Some((tv.with_ty(&value_ty), t, el)),
            _ => None,
        };
        let cond = cond?;
        let v = self.if_changed(
            cond, then_blk, else_blk, &before, &then_env, &else_env, value, e,
        );
        if unit {
            return Some(Val::Unit);
        }
        v
    }

    /// Emits the `If` whose results are the branch values (if any) then the
    /// variables either branch changed; rebinds those variables.
    #[allow(clippy::too_many_arguments)]
    fn if_changed(
        &mut self,
        cond: Atom,
        mut then_blk: Block,
        mut else_blk: Block,
        before: &[Val],
        then_env: &[Val],
        else_env: &[Val],
        value: Option<(Val, Vec<Atom>, Vec<Atom>)>,
        node: &syn::ExprIf,
    ) -> Option<Val> {
        let mut changed = vec![];
        for id in 0..before.len() {
            if then_env[id] == before[id] && else_env[id] == before[id] {
                continue;
            }
            let (t, el) = (&then_env[id], &else_env[id]);
            match (t.leaves(), el.leaves(), t.ty().unify(&el.ty())) {
                (Some(tl), Some(ell), Some(ty)) if tl.len() == ell.len() => {
                    then_blk.results.extend(tl);
                    else_blk.results.extend(ell);
                    changed.push((id, t.clone().with_ty(&ty)));
                }
                _ => self.env.set(id, Val::Poison),
            }
        }
        let (template, nv) = match value {
            Some((v, t, el)) => {
                let n = t.len();
                then_blk.results.splice(0..0, t);
                else_blk.results.splice(0..0, el);
                (Some(v), n)
            }
            None => (None, 0),
        };
        let outs = self.emit(
            Expr::If(If {
                cond,
                then_: then_blk,
                else_: else_blk,
                lin_shapes: vec![],
            }),
            span_of(node),
        );
        let Some(outs) = outs else {
            for (id, _) in changed {
                self.env.set(id, Val::Poison);
            }
            return None;
        };
        let mut rest = outs[nv..].iter().map(|v| Atom::Var(*v));
        for (id, template) in changed {
            let v = template.rebuild(&mut rest);
            self.env.set(id, v);
        }
        template.map(|t| t.rebuild(&mut outs[..nv].iter().map(|v| Atom::Var(*v))))
    }

    /// `a && b`, `a || b`.
    pub fn short_circuit(&mut self, e: &syn::ExprBinary) -> Option<Val> {
        let and = matches!(e.op, syn::BinOp::And(_));
        let a = self.cond(&e.left);
        self.b.open();
        let b = self.cond(&e.right);
        let blk = self.b.close(b.into_iter().collect(), vec![]);
        let (a, b) = (a?, b?);
        let span = span_of(e);
        let eager = blk
            .stmts
            .iter()
            .all(|s| matches!(&s.expr, Expr::Prim(p, _) if !matches!(p, Prim::Div | Prim::Rem)));
        if eager {
            for s in blk.stmts {
                self.b.push(s);
            }
            let p = if and { Prim::And } else { Prim::Or };
            let v = self.prim(p, &[a, b], span)?;
            return Some(Val::Scalar(v, Elem::Bool));
        }
        let short = crate::lower::ctx::const_block(Atom::Bool(!and));
        let (then_, else_) = if and { (blk, short) } else { (short, blk) };
        let v = self.emit1(
            Expr::If(If {
                cond: a,
                then_,
                else_,
                lin_shapes: vec![],
            }),
            span,
        )?;
        Some(Val::Scalar(v, Elem::Bool))
    }

    /// `for pat in a..b { body }` and `for pat in (a..b).rev() { body }`.
    /// With `break`s: `{ let mut go = true; for pat in .. { if go { body' }
    /// } }`, the iterations after the `break` doing nothing (see
    /// [`super::desugar::lift_breaks`]).
    pub fn lower_for(&mut self, f: &syn::ExprForLoop) -> Option<Val> {
        if let Some(l) = &f.label {
            let mut f = f.clone();
            f.label = None;
            if let Err(b) = super::labels::unlabel(&mut f.body, &l.name) {
                return self.fail(&b, super::errors::BREAK_VALUE);
            }
            return self.lower_for(&f);
        }
        if let Some(v) = self.iter_mut_loop(f) {
            return v;
        }
        let mut body = f.body.clone();
        let span = f.for_token.span;
        if super::desugar::lift_breaks(&mut body, span) > 0 {
            super::desugar::lift_continues(&mut body);
            let go = syn::Ident::new(super::desugar::GO, span);
            let (pat, it) = (&f.pat, &f.expr);
            let e: syn::Expr = syn::parse_quote_spanned!(span=> {
                let mut #go = true;
                for #pat in #it { if #go #body }
            });
            return self.expr(&e);
        }
        let (range, rev) = match strip(&f.expr) {
            syn::Expr::MethodCall(m) if m.method == "rev" && m.args.is_empty() => {
                match strip(&m.receiver) {
                    syn::Expr::Range(r) => (r, true),
                    _ => return self.lower_for_iter(f),
                }
            }
            syn::Expr::Range(r) => (r, false),
            _ => return self.lower_for_iter(f),
        };
        let (start, n, ity) = self.range_bounds(range)?;
        let span = span_of(f);
        self.counted_for(f, n, rev, &|lw: &mut Self, k: Atom| {
            let i = lw.add_i64(start, k, span)?;
            Some(Val::Scalar(i, Elem::Int(ity)))
        })
    }

    /// `for pat in <iterator> { body }`: array elements (`a.iter()`, `&a`),
    /// `enumerate`, `rev`, `zip`, `map`, and lanes (`a.outer_iter()`,
    /// `rows()`, `columns()`, `axis_iter(Axis(k))`), as a counted loop over
    /// the positions.
    fn lower_for_iter(&mut self, f: &syn::ExprForLoop) -> Option<Val> {
        let it = self.iterable(&f.expr, "`for` loops over ranges (`a..b`), arrays (`a.iter()`, `&a`) and their lanes (`a.outer_iter()`, `rows()`, `columns()`)")?;
        let n = self.iter_len(&it, f)?;
        let rev = it.rev;
        self.counted_for(f, n, rev, &|lw: &mut Self, k: Atom| {
            let item = lw.item_at(&it, k, f)?;
            lw.apply_maps(&it, item, f)
        })
    }

    /// A counted loop of `n` iterations (reversed when `rev`) binding the
    /// `for` pattern to `item(k)` at position `k`; the outer variables the
    /// body assigns are its state.
    fn counted_for(
        &mut self,
        f: &syn::ExprForLoop,
        n: Atom,
        rev: bool,
        item: &dyn Fn(&mut Self, Atom) -> Option<Val>,
    ) -> Option<Val> {
        let mut body = f.body.clone();
        super::desugar::lift_continues(&mut body);
        self.counted_loop(&body, Some(&f.pat), span_of(f), n, rev, item)
    }

    /// The loop state of a body: the outer mutable variables it assigns,
    /// with their values now and those values' leaves (IR atoms).
    fn loop_state(&self, body: &syn::Block) -> Vec<LoopVar> {
        let mut state = vec![];
        for name in assigned_names(body) {
            let Some(id) = self.env.lookup(&name) else {
                continue;
            };
            let b = self.env.get(id);
            if id < self.closure_floor || !b.mutable {
                continue; // refused at the assignment
            }
            if let Some(leaves) = b.val.leaves() {
                state.push((id, b.val.clone(), leaves));
            }
        }
        state
    }

    /// The types and names of lambda parameters carrying `state` (after
    /// `lead`, the types and names of leading parameters).
    fn state_params(&self, state: &[LoopVar], lead: &[(Ty, &str)]) -> (Vec<Ty>, Vec<String>) {
        let mut tys: Vec<Ty> = lead.iter().map(|(t, _)| t.clone()).collect();
        let mut names: Vec<String> = lead.iter().map(|(_, n)| n.to_string()).collect();
        for (id, _, l) in state {
            for a in l {
                tys.push(self.b.atom_ty(a));
            }
            names.extend(std::iter::repeat_n(self.env.get(*id).name.clone(), l.len()));
        }
        (tys, names)
    }

    /// Binds the state variables to the parameters `ps` (one per leaf).
    fn bind_state(&mut self, state: &[LoopVar], ps: &[Var]) {
        let mut params = ps.iter().map(|v| Atom::Var(*v));
        for (id, template, _) in state {
            let v = template.rebuild(&mut params);
            self.env.set(*id, v);
        }
    }

    /// Lowers a loop body (no value allowed) and returns the state's new
    /// leaves, `None` when they changed type or the body failed.
    fn state_body(
        &mut self,
        state: &[LoopVar],
        body: &syn::Block,
        what: &str,
    ) -> Option<Vec<Atom>> {
        let v = self.lower_block(body);
        if let Some(v) = &v {
            if !matches!(v, Val::Unit) {
                let _: Option<()> = self.fail(
                    body,
                    format!(
                        "mismatched types: a `{what}` loop body must not have a value, found `{}`",
                        v.ty()
                    ),
                );
            }
        }
        let mut results = vec![];
        let mut ok = true;
        for (id, template, leaves) in state {
            let now = self.env.get(*id).val.clone();
            match now.leaves() {
                Some(l) if l.len() == leaves.len() && template.ty().unify(&now.ty()).is_some() => {
                    results.extend(l)
                }
                _ => ok = false,
            }
        }
        ok.then_some(results)
    }

    /// Marks the state variables as failed (after an error in the loop).
    fn poison_state(&mut self, state: &[LoopVar]) -> Option<Val> {
        for (id, _, _) in state {
            self.env.set(*id, Val::Poison);
        }
        Some(Val::Unit)
    }

    /// A counted loop of `n` iterations over `body` (already rid of its
    /// `continue`s), binding `pat` (if any) to `item(k)` at position `k`.
    pub(super) fn counted_loop(
        &mut self,
        body: &syn::Block,
        pat: Option<&syn::Pat>,
        span: proc_macro2::Span,
        n: Atom,
        rev: bool,
        item: &dyn Fn(&mut Self, Atom) -> Option<Val>,
    ) -> Option<Val> {
        let state = self.loop_state(body);
        let init: Vec<Atom> = state.iter().flat_map(|(_, _, l)| l.clone()).collect();
        let (tys, names) = self.state_params(&state, &[(Ty::I64, "k")]);
        let name_refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let before = self.env.snapshot(self.env.len());
        let lam = self.lambda(&tys, &name_refs, |lw, ps| {
            lw.bind_state(&state, &ps[1..]);
            lw.env.push_scope();
            let it = item(lw, Atom::Var(ps[0]));
            if let Some(pat) = pat {
                match it {
                    Some(v) => lw.bind_pat(pat, v),
                    None => lw.bind_pat(pat, Val::Poison),
                }
            }
            let results = lw.state_body(&state, body, if pat.is_some() { "for" } else { "while" });
            lw.env.pop_scope();
            results
        });
        self.env.restore(&before);
        let Some(lam) = lam else {
            return self.poison_state(&state);
        };
        let outs = self.emit(
            Expr::Loop(Loop {
                n,
                rev,
                init,
                lin_init: vec![],
                body: lam,
            }),
            span,
        );
        let Some(outs) = outs else {
            return self.poison_state(&state);
        };
        let mut rest = outs.iter().map(|v| Atom::Var(*v));
        for (id, template, _) in &state {
            let v = template.rebuild(&mut rest);
            self.env.set(*id, v);
        }
        Some(Val::Unit)
    }

    /// `while c { body }`: the trip count first (an IR `While` running the
    /// condition and the body on the state), then the body again as a
    /// counted loop of that many iterations, which is what gets
    /// differentiated (reverse mode needs no bound from the user). With
    /// `break`s: `{ let mut go = true; while go && c { body' } }` (see
    /// [`super::desugar::lift_breaks`]).
    pub fn lower_while(&mut self, w: &syn::ExprWhile) -> Option<Val> {
        if let Some(l) = &w.label {
            let mut w = w.clone();
            w.label = None;
            if let Err(b) = super::labels::unlabel(&mut w.body, &l.name) {
                return self.fail(&b, super::errors::BREAK_VALUE);
            }
            return self.lower_while(&w);
        }
        if let syn::Expr::Let(l) = strip(&w.cond) {
            return self.fail(l, super::errors::WHILE_LET);
        }
        let mut body = w.body.clone();
        let span = w.while_token.span;
        if super::desugar::lift_breaks(&mut body, span) > 0 {
            let go = syn::Ident::new(super::desugar::GO, span);
            let cond = &w.cond;
            let e: syn::Expr = syn::parse_quote_spanned!(span=> {
                let mut #go = true;
                while #go && (#cond) #body
            });
            return self.expr(&e);
        }
        super::desugar::lift_continues(&mut body);
        self.while_loop(&w.cond, &body, span_of(w))
    }

    /// `loop { body }` ending by `break`: `{ let mut go = true; while go {
    /// body' } }` (see [`super::desugar::lift_breaks`]).
    pub fn lower_loop(&mut self, l: &syn::ExprLoop) -> Option<Val> {
        if let Some(v) = self.loop_with_value(l, None) {
            return v;
        }
        if let Some(lb) = &l.label {
            let mut l = l.clone();
            l.label = None;
            if let Err(b) = super::labels::unlabel(&mut l.body, &lb.name) {
                return self.fail(&b, super::errors::BREAK_VALUE);
            }
            return self.lower_loop(&l);
        }
        let mut body = l.body.clone();
        let span = l.loop_token.span;
        if super::desugar::lift_breaks(&mut body, span) == 0 {
            return match first_break(&l.body) {
                Some(b) if b.expr.is_some() => self.fail(b, super::errors::BREAK_VALUE),
                Some(b) => self.fail(b, super::errors::BREAK),
                None => self.fail(&l.loop_token, super::errors::LOOP_WITHOUT_BREAK),
            };
        }
        let go = syn::Ident::new(super::desugar::GO, span);
        let e: syn::Expr = syn::parse_quote_spanned!(span=> {
            let mut #go = true;
            while #go #body
        });
        self.expr(&e)
    }

    /// `while cond { body }` on the outer variables `body` assigns.
    fn while_loop(
        &mut self,
        cond: &syn::Expr,
        body: &syn::Block,
        span: proc_macro2::Span,
    ) -> Option<Val> {
        let state = self.loop_state(body);
        let init: Vec<Atom> = state.iter().flat_map(|(_, _, l)| l.clone()).collect();
        let (tys, names) = self.state_params(&state, &[]);
        let name_refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let errors = self.errors.len();
        let before = self.env.snapshot(self.env.len());
        let cond_lam = self.lambda(&tys, &name_refs, |lw, ps| {
            lw.bind_state(&state, ps);
            Some(vec![lw.cond(cond)?])
        });
        self.env.restore(&before);
        let body_lam = self.lambda(&tys, &name_refs, |lw, ps| {
            lw.bind_state(&state, ps);
            lw.env.push_scope();
            let r = lw.state_body(&state, body, "while");
            lw.env.pop_scope();
            r
        });
        self.env.restore(&before);
        let (Some(cond), Some(body_lam)) = (cond_lam, body_lam) else {
            return self.poison_state(&state);
        };
        if self.errors.len() > errors {
            // Lowering the body again would report its errors twice.
            return self.poison_state(&state);
        }
        let Some(n) = self.emit(
            Expr::While(While {
                init,
                cond,
                body: body_lam,
            }),
            span,
        ) else {
            return self.poison_state(&state);
        };
        self.counted_loop(body, None, span, Atom::Var(n[0]), false, &|_, _| {
            Some(Val::Unit)
        })
    }

    /// The start, the (non-negative) length and the integer type of `a..b`
    /// or `a..=b`.
    pub fn range_bounds(&mut self, r: &syn::ExprRange) -> Option<(Atom, Atom, IntTy)> {
        let (Some(a), Some(b)) = (&r.start, &r.end) else {
            return self.fail(r, "a range needs both bounds here: write `a..b`");
        };
        let (va, vb) = (self.lower_expr(a), self.lower_expr(b));
        let (Val::Scalar(a_at, Elem::Int(ta)), Val::Scalar(b_at, Elem::Int(tb))) = (&va, &vb)
        else {
            if va.is_poison() || vb.is_poison() {
                return None;
            }
            return self.fail(
                r,
                format!(
                    "ranges must be of integers, found `{}` and `{}`",
                    va.ty(),
                    vb.ty()
                ),
            );
        };
        let Some(t) = ta.unify(*tb) else {
            return self.fail(
                r,
                format!(
                    "mismatched types: expected `{ta}`, found `{tb}`",
                    ta = ta.name(),
                    tb = tb.name()
                ),
            );
        };
        let span = span_of(r);
        let len = self.sub_i64(*b_at, *a_at, span)?;
        let len = match r.limits {
            syn::RangeLimits::Closed(_) => self.add_i64(len, Atom::I64(1), span)?,
            syn::RangeLimits::HalfOpen(_) => len,
        };
        let mut n = self.clamp0(len, span)?;
        let t = if t == IntTy::Lit { IntTy::Usize } else { t };
        if t.ir() == Some(ad_core_ir::ir::IntTy::U64) && !matches!(b_at, Atom::I64(_)) {
            // A `u64`/`usize` end past `i64::MAX` (a wrapped `n - 1`, held as
            // a negative bit pattern) after a small start: Rust iterates
            // (practically) without end, until the body panics; so do we.
            let huge = self.prim(Prim::Lt, &[*b_at, Atom::I64(0)], span)?;
            let small = self.prim(Prim::Ge, &[*a_at, Atom::I64(0)], span)?;
            let both = self.prim(Prim::And, &[huge, small], span)?;
            n = self.prim(Prim::Select, &[both, Atom::I64(i64::MAX), n], span)?;
        }
        Some((*a_at, n, t))
    }
}

/// The names of variables declared outside `block` that it assigns (by `=`,
/// compound assignment, or an element/field assignment), in first-assignment
/// order. Shadowing by `let`, closure parameters and loop patterns inside
/// the block is respected.
pub fn assigned_names(block: &syn::Block) -> Vec<String> {
    let mut v = Assigned {
        scopes: vec![BTreeSet::new()],
        out: vec![],
    };
    v.visit_block(block);
    v.out
}

struct Assigned {
    scopes: Vec<BTreeSet<String>>,
    out: Vec<String>,
}

impl Assigned {
    fn declared(&self, name: &str) -> bool {
        self.scopes.iter().any(|s| s.contains(name))
    }

    fn declare_pat(&mut self, p: &syn::Pat) {
        struct Names<'s>(&'s mut BTreeSet<String>);
        impl<'a> Visit<'a> for Names<'_> {
            fn visit_pat_ident(&mut self, p: &'a syn::PatIdent) {
                self.0.insert(p.ident.to_string());
            }
        }
        let scope = self.scopes.last_mut().expect("a scope");
        Names(scope).visit_pat(p);
    }

    fn place(&mut self, e: &syn::Expr) {
        match strip(e) {
            syn::Expr::Path(p) => {
                if let Some(i) = p.path.get_ident() {
                    let n = i.to_string();
                    if !self.declared(&n) && !self.out.contains(&n) {
                        self.out.push(n);
                    }
                }
            }
            syn::Expr::Index(i) => {
                self.place(&i.expr);
                self.visit_expr(&i.index);
            }
            syn::Expr::Field(f) => self.place(&f.base),
            syn::Expr::Unary(u) => self.place(&u.expr),
            syn::Expr::Tuple(t) => t.elems.iter().for_each(|e| self.place(e)),
            other => self.visit_expr(other),
        }
    }
}

impl<'a> Visit<'a> for Assigned {
    fn visit_block(&mut self, b: &'a syn::Block) {
        self.scopes.push(BTreeSet::new());
        for s in &b.stmts {
            self.visit_stmt(s);
        }
        self.scopes.pop();
    }

    fn visit_local(&mut self, l: &'a syn::Local) {
        if let Some(init) = &l.init {
            self.visit_expr(&init.expr);
        }
        self.declare_pat(&l.pat);
    }

    fn visit_expr_closure(&mut self, c: &'a syn::ExprClosure) {
        self.scopes.push(BTreeSet::new());
        for p in &c.inputs {
            self.declare_pat(p);
        }
        self.visit_expr(&c.body);
        self.scopes.pop();
    }

    fn visit_expr_for_loop(&mut self, f: &'a syn::ExprForLoop) {
        self.visit_expr(&f.expr);
        self.scopes.push(BTreeSet::new());
        self.declare_pat(&f.pat);
        self.visit_block(&f.body);
        self.scopes.pop();
    }

    fn visit_expr_assign(&mut self, a: &'a syn::ExprAssign) {
        self.visit_expr(&a.right);
        self.place(&a.left);
    }

    /// `&mut a` (`Zip::from(&mut a)`, `for v in &mut a`): what borrows `a`
    /// mutably writes it.
    fn visit_expr_reference(&mut self, r: &'a syn::ExprReference) {
        if r.mutability.is_some() {
            self.place(&r.expr);
        } else {
            self.visit_expr(&r.expr);
        }
    }

    /// `a.assign(..)`, `a.fill(..)`, `a.row_mut(i).assign(..)`,
    /// `a.mapv_inplace(..)`, `a.map_inplace(..)`, `a.iter_mut()`, ...: `a`
    /// is assigned (see `methods.rs`, `assign_lane`, `mapv_inplace`,
    /// `inplace.rs`).
    fn visit_expr_method_call(&mut self, m: &'a syn::ExprMethodCall) {
        for a in &m.args {
            self.visit_expr(a);
        }
        if matches!(
            m.method.to_string().as_str(),
            "assign" | "fill" | "mapv_inplace" | "map_inplace" | "iter_mut" | "scaled_add"
        ) {
            match strip(&m.receiver) {
                syn::Expr::MethodCall(inner)
                    if matches!(
                        inner.method.to_string().as_str(),
                        "row_mut" | "column_mut" | "slice_mut" | "index_axis_mut"
                    ) =>
                {
                    inner.args.iter().for_each(|a| self.visit_expr(a));
                    self.place(&inner.receiver);
                }
                other => self.place(other),
            }
            return;
        }
        self.visit_expr(&m.receiver);
    }

    fn visit_expr_binary(&mut self, b: &'a syn::ExprBinary) {
        use syn::BinOp::*;
        self.visit_expr(&b.right);
        match b.op {
            AddAssign(_) | SubAssign(_) | MulAssign(_) | DivAssign(_) | RemAssign(_)
            | BitAndAssign(_) | BitOrAssign(_) | BitXorAssign(_) | ShlAssign(_) | ShrAssign(_) => {
                self.place(&b.left)
            }
            _ => self.visit_expr(&b.left),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(src: &str) -> Vec<String> {
        assigned_names(&syn::parse_str::<syn::Block>(src).unwrap())
    }

    #[test]
    fn assigned_names_respect_shadowing() {
        assert_eq!(names("{ s += x; a[i] = 1.0; t.0 = 2.0; }"), ["s", "a", "t"]);
        assert_eq!(
            names("{ let mut s = 0.0; s += 1.0; }"),
            Vec::<String>::new()
        );
        assert_eq!(names("{ s += 1.0; let mut s = 0.0; s += 1.0; }"), ["s"]);
        assert_eq!(
            names("{ for j in 0..n { acc *= 2.0; let mut q = 1.0; q += 1.0; } }"),
            ["acc"]
        );
        assert_eq!(names("{ { let mut z = 0.0; z = 1.0; } z = 2.0; }"), ["z"]);
        assert_eq!(names("{ (a, b) = (b, a); }"), ["a", "b"]);
        assert_eq!(names("{ if c { x = 1.0 } else { y -= 2.0 } }"), ["x", "y"]);
        assert_eq!(
            names("{ b.column_mut(j).assign(&v); c.fill(0.0); v.sum(); }"),
            ["b", "c"]
        );
        // Writes through a mutable borrow or an element place.
        assert_eq!(
            names("{ Zip::from(&mut y).and(&x).for_each(|y, &x| *y += x); for v in a.iter_mut() { *v = 1.0; } for v in &mut b { *v = 2.0; } c.map_inplace(|v| *v = 0.0); }"),
            ["y", "a", "b", "c"]
        );
    }
}

#[cfg(test)]
mod lowering_tests {
    use crate::lower::testutil::*;

    #[test]
    fn if_as_expression_and_else_if() {
        both! {
            fn f(x: f64, n: usize) -> f64 {
                let y = if x > 1.0 { x * x } else if x > 0.0 { x.sin() } else { -x };
                let z = if n % 2 == 0 { (y, 1.0) } else { (2.0 * y, x) };
                z.0 + z.1
            }
        }
        for (x, n) in [(1.5, 2usize), (0.5, 3), (-0.7, 4)] {
            check(SRC, &[fv(x), iv(n as i64)], &[fv(f(x, n))]);
        }
    }

    #[test]
    fn if_statement_assigns_mutable_variables() {
        both! {
            fn f(x: f64, y: f64) -> f64 {
                let mut a = x;
                let mut b = (y, 0.0);
                let c = 3.0;
                if x > y {
                    a = a * y;
                    b.1 = x;
                } else if x < 0.0 {
                    b = (x, y);
                }
                if a > 1.0 {
                    a += c;
                }
                a + b.0 * b.1
            }
        }
        for (x, y) in [(2.0, 0.75), (-1.0, 0.5), (0.25, 0.5), (0.8, 0.3)] {
            check(SRC, &[fv(x), fv(y)], &[fv(f(x, y))]);
        }
    }

    #[test]
    fn for_loops_carry_scalars_and_tuples() {
        both! {
            fn f(x: f64, n: usize) -> f64 {
                let mut s = 0.0;
                let mut p = (1.0, x);
                for i in 0..n {
                    let t = (i as f64) * x;
                    s += t.sin();
                    p = (p.0 * x, p.1 + s);
                }
                for i in (1..=n).rev() {
                    s = s * 0.5 + i as f64;
                }
                for _ in 3..2 {
                    s = 100.0;
                }
                s + p.0 - p.1
            }
        }
        for (x, n) in [(0.3, 4usize), (-1.1, 0), (0.9, 1)] {
            check(SRC, &[fv(x), iv(n as i64)], &[fv(f(x, n))]);
        }
    }

    #[test]
    fn nested_loops_and_branches_in_loops() {
        both! {
            fn f(x: f64, n: usize, m: usize) -> f64 {
                let mut acc = 0.0;
                for i in 0..n {
                    let mut row = 0.0;
                    for j in i..m {
                        if (i + j) % 2 == 0 {
                            row += x * j as f64;
                        } else {
                            row -= x.cos();
                        }
                    }
                    acc = acc * x + row;
                }
                acc
            }
        }
        for (x, n, m) in [(0.4, 3usize, 4usize), (1.2, 2, 1)] {
            check(SRC, &[fv(x), iv(n as i64), iv(m as i64)], &[fv(f(x, n, m))]);
        }
    }

    #[test]
    fn loops_update_local_arrays() {
        // out[i] = x^i with a prefix sum, written with element assignments.
        let src = "fn f(x: f64, n: usize) -> Array1<f64> {
            let mut out = Array1::zeros(n);
            let mut m = Array2::zeros((n, 2));
            for i in 0..n {
                out[i] = x.powi(i as i32);
                m[[i, 0]] += out[i];
                m[[i, 1]] -= 2.0 * x;
                if i > 0 {
                    out[i] = out[i] + out[i - 1];
                    m[[i, 0]] *= 2.0;
                }
            }
            for i in 0..n {
                out[i] += m[[i, 0]] + m[[i, 1]];
            }
            out
        }";
        let n = 4;
        let x: f64 = 0.7;
        let mut out = vec![0.0; n];
        let mut m = vec![[0.0; 2]; n];
        for i in 0..n {
            out[i] = x.powi(i as i32);
            m[i][0] += out[i];
            m[i][1] -= 2.0 * x;
            if i > 0 {
                out[i] += out[i - 1];
                m[i][0] *= 2.0;
            }
        }
        for i in 0..n {
            out[i] += m[i][0] + m[i][1];
        }
        check(src, &[fv(x), iv(n as i64)], &[v1(&out)]);
    }

    #[test]
    fn short_circuit_guards_an_index() {
        let src = "fn f(w: &Array1<f64>, k: usize) -> f64 {
            let mut s = 0.0;
            if k < w.len() && w[k] > 0.0 { s = w[k]; }
            if k >= w.len() || w[k] < -1.0 { s += 1.0; }
            s
        }";
        let w = v1(&[0.5, -2.0]);
        let l = lowered(src);
        for (k, want) in [(0, 0.5), (1, 1.0), (5, 1.0)] {
            assert_eq!(run_lowered(&l, &[w.clone(), iv(k)]), [fv(want)]);
        }
        derivatives(&l, &[w, iv(0)]);
    }

    #[test]
    fn while_loops_carry_their_state_and_count_trips() {
        both! {
            fn f(x: f64, c: f64) -> f64 {
                let mut y = x;
                let mut n = 0usize;
                while y > 1.0 {
                    y = y / 2.0 * c;
                    n += 1;
                }
                y * x + n as f64
            }
        }
        for (x, c) in [(37.0, 0.9), (0.5, 0.9), (1.5, 0.3), (1e3, 0.99)] {
            check(SRC, &[fv(x), fv(c)], &[fv(f(x, c))]);
        }
    }

    #[test]
    fn loop_break_newton_and_break_in_for() {
        both! {
            fn f(a: f64, n: usize) -> f64 {
                // Newton's method for sqrt(a), ended by `break`.
                let mut x = a;
                let mut k = 0;
                loop {
                    let next = 0.5 * (x + a / x);
                    k += 1;
                    if (next - x).abs() < 1e-12 || k > 50 {
                        x = next;
                        break;
                    }
                    x = next;
                }
                // A `for` loop left early; `continue` and `break` together.
                let mut s = 0.0;
                for i in 0..n {
                    if i % 2 == 1 {
                        continue;
                    }
                    s += x * (i as f64);
                    if s > 10.0 {
                        break;
                    }
                    s += 0.5;
                }
                // `while` with a `break` as well as a condition.
                let mut t = s;
                while t > 1.0 {
                    t = t * 0.7;
                    if t < 2.0 {
                        break;
                    }
                }
                x + s + t
            }
        }
        for (a, n) in [(2.0, 10usize), (9.0, 0), (0.25, 3), (30.0, 7)] {
            check(SRC, &[fv(a), iv(n as i64)], &[fv(f(a, n))]);
        }
    }

    #[test]
    fn refusals() {
        refuses(
            "fn f(x: f64) -> f64 { loop { } }",
            "this `loop` has no `break` linad can follow",
        );
        refuses(
            "fn f(x: f64) -> f64 { let mut y = x; while let z = y { y = z; } y }",
            "`while let` is not supported",
        );
        refuses("fn f(x: f64, n: usize) -> f64 { let mut s = x; for i in 0..n { let t = if s > 2.0 { 1.0 } else { break; }; s = s * t; } s }", "`break` is supported as a statement of a loop body");
        refuses(
            "fn f(x: &Array1<f64>) -> f64 { let s = loop { break x.sum(); }; s }",
            "annotate the loop's result (`let r: f64 = loop { .. };`)",
        );
        refuses(
            "fn f(x: &Array1<f64>) -> f64 { let s: Array1<f64> = loop { break x.clone(); }; s.sum() }",
            "`break` with an array value is not supported",
        );
        // A body `let` hiding its type falls back to the outer name's: a
        // wrong guess is a type error at the `break`, not a value.
        refuses(
            "fn f(x: f64, v: &Array1<f64>) -> f64 { let s = loop { let x = v.len(); break x; }; s as f64 }",
            "mismatched types",
        );
        refuses(
            "fn f(x: f64, n: usize) -> f64 { let mut s = x; for i in 0..n { let t = if i > 2 { continue; } else { 1.0 }; s = s * t; } s }",
            "`continue` is supported as a statement of a loop body",
        );
        refuses(
            "fn f(x: f64, n: usize) -> f64 { match (n, n) { (0, _) => x, _ => 1.0 } }",
            "`match` patterns are supported on numbers, `bool`",
        );
        refuses(
            "fn f(x: f64, n: f64) -> f64 { let mut s = 0.0; for i in 0..n { s += x; } s }",
            "ranges must be of integers, found `{integer}` and `f64`",
        );
        refuses(
            "fn f(x: f64) -> f64 { let y = 'a: { x * 2.0 }; y }",
            "labelled blocks are not supported: a labelled loop is",
        );
        refuses(
            "fn f(x: f64) -> f64 { let y = if x > 0.0 { x }; 1.0 }",
            "`if` may be missing an `else` clause",
        );
        refuses(
            "fn f(x: f64, n: usize) -> f64 { if x > 0.0 { x } else { n } }",
            "`if` and `else` have incompatible types: expected `f64`, found `usize`",
        );
        refuses("fn f(x: f64, n: usize) -> Array1<f64> { let mut s = 0.0; Array1::from_shape_fn(n, |i| { s += x; s }) }", "cannot assign to `s` inside a closure");
        refuses(
            "fn f(x: f64) -> f64 { let y = if let Some(z) = x { z } else { 0.0 }; y }",
            "`if let` patterns are supported on numbers, `bool` and field-less enums",
        );
        refuses(
            "fn f(x: f64, n: usize) -> f64 { let mut s = x; for i in 0.. { s = s; } s }",
            "a range needs both bounds here",
        );
    }
}
