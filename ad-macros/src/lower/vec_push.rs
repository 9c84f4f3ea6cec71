//! A `Vec` grown by `push` in a `for` loop: a buffer as long as the most
//! pushes the loop can make, the index of its next free slot, and the
//! pushed prefix after the loop.
//!
//! ```text
//! let mut v = Vec::new();           let mut n = 0usize; for _ in it { n += 1; }
//! for i in it {                     let mut buf = Array1::<f64>::zeros(n * 1);
//!     if c(i) {               ==>   let mut len = 0usize;
//!         v.push(e(i));             for i in it { if c(i) { { buf[len] = e(i); len += 1; } } }
//!     }                             let mut v = buf.slice(s![..len]).to_vec();
//! }
//! ```
//!
//! Legality: the `Vec` starts empty (`Vec::new()`, `Vec::with_capacity(..)`,
//! `vec![]`), the first statement after it that names it is a `for` loop,
//! and every mention of it there is the receiver of a `push` outside nested
//! loops and closures, so that each of the loop's `P` push sites runs at
//! most once per iteration and `P` times the trip count bounds the pushes
//! (the trip count is counted by a loop over the same iterable first: an
//! iterable is a pure expression in what linad accepts). No later
//! statement pushes to it. The element is the `Vec`'s written type
//! (`Vec<usize>`, `Vec::<f64>::new()`), else the pushed values' as their
//! syntax shows it (`syntax_ty.rs`), else `f64`: a wrong guess is a type
//! error at the push, never a value. Anything else is left as written,
//! where `Vec::new()` is refused with a message naming this form.

use super::syntax_ty::{body_lets, Local};
use super::types::{classify, Elem, IntTy, RTy};
use proc_macro2::{Span, TokenStream, TokenTree};
use quote::ToTokens;
use syn::visit_mut::VisitMut;

/// The type of a value as its syntax shows it, given the `let`s around it.
pub(super) type SyntaxTy<'a> = dyn Fn(&syn::Expr, &[(String, Local)]) -> Option<RTy> + 'a;

/// Rewrites every `Vec` grown by pushes in one `for` loop in `b` (at any
/// depth, not in closures) as the module describes.
pub(super) fn rewrite_pushes(b: &mut syn::Block, ty_of: &SyntaxTy<'_>) {
    struct V<'t, 'a> {
        ty_of: &'t SyntaxTy<'a>,
        n: usize,
    }
    impl VisitMut for V<'_, '_> {
        fn visit_block_mut(&mut self, b: &mut syn::Block) {
            syn::visit_mut::visit_block_mut(self, b);
            let mut k = 0;
            while k < b.stmts.len() {
                match rewrite_at(&b.stmts, k, self.ty_of, self.n) {
                    Some(new) => {
                        self.n += 1;
                        let m = new.consumed;
                        // `stmts[k]` is now the first statement that was
                        // between the declaration and the loop (another
                        // `Vec` the same loop pushes to, say): look again.
                        b.stmts.splice(k..=k + m, new.stmts);
                    }
                    None => k += 1,
                }
            }
        }
        fn visit_expr_closure_mut(&mut self, _: &mut syn::ExprClosure) {}
    }
    V { ty_of, n: 0 }.visit_block_mut(b);
}

/// The statements replacing `stmts[k..=k + consumed]`.
struct Rewrite {
    consumed: usize,
    stmts: Vec<syn::Stmt>,
}

/// The rewrite of the `Vec` declared by `stmts[k]`, if it is one the module
/// accepts.
fn rewrite_at(stmts: &[syn::Stmt], k: usize, ty_of: &SyntaxTy<'_>, n: usize) -> Option<Rewrite> {
    let syn::Stmt::Local(l) = &stmts[k] else {
        return None;
    };
    let (pat, annot) = match &l.pat {
        syn::Pat::Type(pt) => (&*pt.pat, Some(&*pt.ty)),
        p => (p, None),
    };
    let syn::Pat::Ident(pi) = pat else {
        return None;
    };
    let init = l.init.as_ref().filter(|i| i.diverge.is_none())?;
    let turbofish = empty_vec(&init.expr)?;
    let name = pi.ident.to_string();
    // The first later statement naming the `Vec` is the pushing loop.
    let m = (k + 1..stmts.len()).find(|&j| mentions(&stmts[j], &name))?;
    let syn::Stmt::Expr(syn::Expr::ForLoop(f), _) = &stmts[m] else {
        return None;
    };
    let mut body = f.body.clone();
    let span = f.for_token.span;
    let hidden = |s: &str| syn::Ident::new(&format!("__linad_{s}{n}"), Span::mixed_site());
    let (count, buf, len) = (hidden("pn"), hidden("pb"), hidden("pl"));
    let mut sites = Sites {
        name: &name,
        depth: 0,
        buf: buf.clone(),
        len: len.clone(),
        values: vec![],
    };
    sites.visit_block_mut(&mut body);
    let p = sites.values.len();
    if p == 0
        || count_mentions(&f.body.to_token_stream(), &name) != p
        || count_mentions(&f.expr.to_token_stream(), &name) > 0
    {
        return None;
    }
    if stmts[m + 1..].iter().any(|s| pushes(s, &name)) {
        return None;
    }
    let elem = match annot.or(turbofish.as_ref()) {
        Some(t) => match classify(t).ok()?.rty() {
            RTy::Array(e, 1) => e,
            _ => return None,
        },
        None => {
            let mut lets = body_lets(&stmts[k + 1..m]);
            lets.extend(body_lets(&f.body.stmts));
            let guess = sites.values.iter().find_map(|v| ty_of(v, &lets));
            match guess {
                Some(RTy::Scalar(e)) => e,
                Some(_) => return None,
                None => loop_index_elem(f, &sites.values, ty_of).unwrap_or(Elem::F64),
            }
        }
    };
    let ty = match elem {
        Elem::F64 => syn::Ident::new("f64", span),
        Elem::Int(IntTy::Lit) => syn::Ident::new("usize", span),
        Elem::Int(t) => syn::Ident::new(t.name(), span),
        Elem::Bool => return None,
    };
    let (it, label, fpat) = (&f.expr, &f.label, &f.pat);
    let p_lit = syn::LitInt::new(&p.to_string(), span);
    let mutability = &pi.mutability;
    let v = &pi.ident;
    let new: syn::Block = syn::parse_quote_spanned!(span=> {
        let mut #count: usize = 0usize;
        for _ in #it { #count += 1; }
        let mut #buf = Array1::<#ty>::zeros(#count * #p_lit);
        let mut #len: usize = 0usize;
        #label for #fpat in #it #body
        let #mutability #v = #buf.slice(s![..#len]).to_vec();
    });
    // The statements between the declaration and the loop stay.
    let mut out: Vec<syn::Stmt> = stmts[k + 1..m].to_vec();
    out.extend(new.stmts);
    Some(Rewrite {
        consumed: m - k,
        stmts: out,
    })
}

/// `Vec::new()`, `Vec::with_capacity(..)`, `vec![]` (with `Vec::<T>` written:
/// `Some(Some(Vec<T>))`).
fn empty_vec(e: &syn::Expr) -> Option<Option<syn::Type>> {
    match super::expr::strip(e) {
        syn::Expr::Call(c) => {
            let syn::Expr::Path(p) = super::expr::strip(&c.func) else {
                return None;
            };
            let segs = &p.path.segments;
            let (last, vec) = (segs.last()?, segs.iter().rev().nth(1)?);
            let ok = vec.ident == "Vec"
                && ((last.ident == "new" && c.args.is_empty())
                    || (last.ident == "with_capacity" && c.args.len() == 1));
            if !ok {
                return None;
            }
            Some(match &vec.arguments {
                syn::PathArguments::AngleBracketed(a) => match a.args.first() {
                    Some(syn::GenericArgument::Type(t)) => Some(syn::parse_quote!(Vec<#t>)),
                    _ => None,
                },
                _ => None,
            })
        }
        syn::Expr::Macro(m) if m.mac.path.is_ident("vec") && m.mac.tokens.is_empty() => Some(None),
        _ => None,
    }
}

/// The element of a `for` loop pushing its index: `for i in 0..n {
/// v.push(i) }` (the range's integer type, `usize` for literals) or `for
/// (i, x) in it.enumerate() { v.push(i) }` (`usize`).
fn loop_index_elem(
    f: &syn::ExprForLoop,
    values: &[syn::Expr],
    ty_of: &SyntaxTy<'_>,
) -> Option<Elem> {
    let pushes = |id: &syn::Ident| {
        values
            .iter()
            .any(|v| matches!(super::expr::strip(v), syn::Expr::Path(p) if p.path.is_ident(id)))
    };
    match (&*f.pat, super::expr::strip(&f.expr)) {
        (syn::Pat::Ident(pi), syn::Expr::Range(r)) if pushes(&pi.ident) => {
            let bound = r.end.as_deref().or(r.start.as_deref())?;
            match ty_of(bound, &[]) {
                Some(RTy::Scalar(Elem::Int(IntTy::Lit))) | None => Some(Elem::Int(IntTy::Usize)),
                Some(RTy::Scalar(e @ Elem::Int(_))) => Some(e),
                Some(_) => None,
            }
        }
        (syn::Pat::Tuple(t), syn::Expr::MethodCall(m)) if m.method == "enumerate" => {
            match t.elems.first() {
                Some(syn::Pat::Ident(pi)) if pushes(&pi.ident) => Some(Elem::Int(IntTy::Usize)),
                _ => None,
            }
        }
        _ => None,
    }
}

/// Replaces `v.push(e)` in a loop body by `{ buf[len] = e; len += 1; }`,
/// outside nested loops and closures (those are counted as other
/// mentions, which make the rewrite fail).
struct Sites<'n> {
    name: &'n str,
    depth: usize,
    buf: syn::Ident,
    len: syn::Ident,
    values: Vec<syn::Expr>,
}

impl VisitMut for Sites<'_> {
    fn visit_expr_mut(&mut self, e: &mut syn::Expr) {
        match e {
            syn::Expr::ForLoop(_) | syn::Expr::While(_) | syn::Expr::Loop(_) => {
                self.depth += 1;
                syn::visit_mut::visit_expr_mut(self, e);
                self.depth -= 1;
            }
            syn::Expr::Closure(_) => {}
            syn::Expr::MethodCall(mc)
                if self.depth == 0
                    && mc.method == "push"
                    && mc.args.len() == 1
                    && matches!(super::expr::strip(&mc.receiver),
                        syn::Expr::Path(p) if p.path.is_ident(self.name)) =>
            {
                let value = mc.args[0].clone();
                if count_mentions(&value.to_token_stream(), self.name) > 0 {
                    return;
                }
                let (buf, len, span) = (&self.buf, &self.len, mc.method.span());
                *e = syn::parse_quote_spanned!(span=> { #buf[#len] = #value; #len += 1; });
                self.values.push(value);
            }
            _ => syn::visit_mut::visit_expr_mut(self, e),
        }
    }
}

/// Whether `s` names `name` (as a token, macros included).
fn mentions(s: &syn::Stmt, name: &str) -> bool {
    count_mentions(&s.to_token_stream(), name) > 0
}

/// Whether `s` calls `name.push(..)`.
fn pushes(s: &syn::Stmt, name: &str) -> bool {
    let toks: Vec<TokenTree> = flatten(&s.to_token_stream());
    toks.windows(3).any(|w| match w {
        [TokenTree::Ident(a), TokenTree::Punct(d), TokenTree::Ident(p)] => {
            a == name && d.as_char() == '.' && p == "push"
        }
        _ => false,
    })
}

/// The identifiers `name` in `ts`, at any depth.
fn count_mentions(ts: &TokenStream, name: &str) -> usize {
    flatten(ts)
        .iter()
        .filter(|t| matches!(t, TokenTree::Ident(i) if i == name))
        .count()
}

/// The tokens of `ts` with groups opened (their delimiters dropped).
fn flatten(ts: &TokenStream) -> Vec<TokenTree> {
    let mut out = vec![];
    for t in ts.clone() {
        match t {
            TokenTree::Group(g) => out.extend(flatten(&g.stream())),
            t => out.push(t),
        }
    }
    out
}
