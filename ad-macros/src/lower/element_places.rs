//! The element of an array as a place in a closure or loop body that
//! updates it in place: `Zip::from(&mut y).for_each(|y, ..| *y = ..)`,
//! `for v in a.iter_mut() { *v *= 2.0 }`, `a.map_inplace(|v| *v = v.sin())`.
//!
//! ```text
//! *y += x * y.abs()   ==>   y[[i, j]] += x * (y[[i, j]]).abs()
//! ```

use super::expr::strip;

/// Replaces `*y` by the element place that `y` stands for (the element of
/// a mutable `Zip` array, of `iter_mut`, of `map_inplace`), and `y` as a
/// method's receiver (`y.sin()`: Rust dereferences it) by the place too;
/// any other use of `y` is recorded as `bad`.
pub(super) struct DerefWrites<'a> {
    /// Each name and its element's place (`y[[i, j]]`).
    pub writes: &'a [(String, syn::Expr)],
    /// The first use of a name that is neither `*name` nor `name.method(..)`.
    pub bad: Option<syn::Expr>,
}

impl syn::visit_mut::VisitMut for DerefWrites<'_> {
    fn visit_expr_mut(&mut self, e: &mut syn::Expr) {
        let name = |x: &syn::Expr| match x {
            syn::Expr::Path(p) if p.qself.is_none() => p.path.get_ident().map(|i| i.to_string()),
            _ => None,
        };
        if let syn::Expr::Unary(u) = &*e {
            if matches!(u.op, syn::UnOp::Deref(_)) {
                if let Some(place) = name(strip(&u.expr))
                    .and_then(|n| self.writes.iter().find(|(w, _)| *w == n))
                    .map(|(_, p)| p.clone())
                {
                    *e = place;
                    return;
                }
            }
        }
        if let syn::Expr::MethodCall(m) = e {
            if let Some(place) = name(strip(&m.receiver))
                .and_then(|n| self.writes.iter().find(|(w, _)| *w == n))
                .map(|(_, p)| p.clone())
            {
                *m.receiver = syn::Expr::Paren(syn::ExprParen {
                    attrs: vec![],
                    paren_token: Default::default(),
                    expr: Box::new(place),
                });
                for a in m.args.iter_mut() {
                    self.visit_expr_mut(a);
                }
                return;
            }
        }
        if name(e).is_some_and(|n| self.writes.iter().any(|(w, _)| *w == n)) {
            self.bad.get_or_insert_with(|| e.clone());
            return;
        }
        syn::visit_mut::visit_expr_mut(self, e);
    }

    /// The same inside macros (`array![x, *y]`), on the tokens: `*y` where
    /// the `*` is a dereference (first, or after an operator or a comma).
    fn visit_macro_mut(&mut self, m: &mut syn::Macro) {
        m.tokens = self.rewrite_tokens(std::mem::take(&mut m.tokens));
    }
}

impl DerefWrites<'_> {
    fn rewrite_tokens(&mut self, ts: proc_macro2::TokenStream) -> proc_macro2::TokenStream {
        use proc_macro2::TokenTree as T;
        use quote::ToTokens;
        let toks: Vec<T> = ts.into_iter().collect();
        let mut out: Vec<T> = Vec::with_capacity(toks.len());
        let mut k = 0;
        while k < toks.len() {
            let place = |t: Option<&T>| match t {
                Some(T::Ident(i)) => self.writes.iter().find(|(w, _)| i == w).map(|(_, p)| p),
                _ => None,
            };
            match &toks[k] {
                T::Group(g) => {
                    let mut n =
                        proc_macro2::Group::new(g.delimiter(), self.rewrite_tokens(g.stream()));
                    n.set_span(g.span());
                    out.push(T::Group(n));
                }
                T::Punct(p)
                    if p.as_char() == '*'
                        && place(toks.get(k + 1)).is_some()
                        && !matches!(
                            out.last(),
                            Some(T::Ident(_) | T::Literal(_) | T::Group(_))
                        ) =>
                {
                    let at = toks[k + 1].span();
                    let e = place(toks.get(k + 1)).expect("checked");
                    let mut g = proc_macro2::Group::new(
                        proc_macro2::Delimiter::Parenthesis,
                        e.to_token_stream(),
                    );
                    g.set_span(at);
                    out.push(T::Group(g));
                    k += 2;
                    continue;
                }
                T::Ident(i) if place(Some(&toks[k])).is_some() => {
                    let after_dot = matches!(out.last(), Some(T::Punct(p)) if p.as_char() == '.');
                    if !after_dot {
                        self.bad
                            .get_or_insert_with(|| syn::parse_quote_spanned!(i.span()=> #i));
                    }
                    out.push(toks[k].clone());
                }
                t => out.push(t.clone()),
            }
            k += 1;
        }
        out.into_iter().collect()
    }
}
