//! A variable replaced by an expression inside a macro's tokens.
//!
//! Desugarings that remove a binding and put its value at each use (a
//! mutable row view of `for mut row in m.rows_mut()`, a struct alias
//! `let q = &p.inner;`) rewrite the body with syn's visitors, which do not
//! enter macros: a use inside `s![..row.len()]` or `array![q.a, q.b]` was
//! left naming a binding that no longer exists. Their `visit_macro_mut`
//! calls [`in_macro`]:
//!
//! ```text
//! let q = &p.inner;
//! let v = array![q.a, 2.0 * q.b];   =>   let v = array![p.inner.a, 2.0 * p.inner.b];
//! ```

use proc_macro2::{Delimiter, Group, TokenStream, TokenTree};
use quote::ToTokens;

/// Replaces, in `m`'s tokens (nested groups too), every use of the
/// variable `name` by `with` (see [`in_tokens`]).
pub fn in_macro(m: &mut syn::Macro, name: &str, with: &syn::Expr) {
    m.tokens = in_tokens(std::mem::take(&mut m.tokens), name, with);
}

/// `tokens` with every use of the variable `name` replaced by `with`.
///
/// A use is an identifier `name` that [`is_use`] accepts. `with` goes in as it is when it is a postfix expression (a path, a
/// field, a call, a method call, an index), which binds tighter than
/// anything next to it, and in parentheses otherwise.
pub fn in_tokens(tokens: TokenStream, name: &str, with: &syn::Expr) -> TokenStream {
    let mut inner = with;
    while let syn::Expr::Paren(p) = inner {
        inner = &p.expr;
    }
    let postfix = matches!(
        inner,
        syn::Expr::Path(_)
            | syn::Expr::Field(_)
            | syn::Expr::Call(_)
            | syn::Expr::MethodCall(_)
            | syn::Expr::Index(_)
    );
    let replacement = if postfix {
        inner.to_token_stream()
    } else {
        with.to_token_stream()
    };
    go(tokens, name, &replacement, !postfix)
}

/// Whether the identifier `toks[k]` is a use of a variable: not a field or
/// method name (after one `.`; `..x` is a use), a path segment (next to
/// `:`), a macro name (before `!`), a label or lifetime (after `'`), or a
/// struct literal's field (before `:`).
pub fn is_use(toks: &[TokenTree], k: usize) -> bool {
    let punct = |at: Option<usize>, c: char| matches!(at.and_then(|a| toks.get(a)), Some(TokenTree::Punct(p)) if p.as_char() == c);
    let (prev, prev2, next) = (k.checked_sub(1), k.checked_sub(2), Some(k + 1));
    !((punct(prev, '.') && !punct(prev2, '.'))
        || punct(prev, ':')
        || punct(prev, '\'')
        || punct(next, '!')
        || punct(next, ':'))
}

fn go(tokens: TokenStream, name: &str, with: &TokenStream, paren: bool) -> TokenStream {
    let toks: Vec<TokenTree> = tokens.into_iter().collect();
    let mut out: Vec<TokenTree> = Vec::with_capacity(toks.len());
    for (k, t) in toks.iter().enumerate() {
        match t {
            TokenTree::Group(g) => {
                let mut n = Group::new(g.delimiter(), go(g.stream(), name, with, paren));
                n.set_span(g.span());
                out.push(TokenTree::Group(n));
            }
            TokenTree::Ident(i) if i == name => {
                let not_a_use = !is_use(&toks, k);
                if not_a_use {
                    out.push(t.clone());
                    continue;
                }
                let body: TokenStream = with
                    .clone()
                    .into_iter()
                    .map(|mut tt| {
                        tt.set_span(i.span());
                        tt
                    })
                    .collect();
                if paren {
                    let mut g = Group::new(Delimiter::Parenthesis, body);
                    g.set_span(i.span());
                    out.push(TokenTree::Group(g));
                } else {
                    out.extend(body);
                }
            }
            _ => out.push(t.clone()),
        }
    }
    out.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sub(ts: &str, name: &str, with: &str) -> String {
        let ts: TokenStream = ts.parse().unwrap();
        let with: syn::Expr = syn::parse_str(with).unwrap();
        in_tokens(ts, name, &with).to_string()
    }

    #[test]
    fn uses_are_replaced_and_other_idents_are_not() {
        assert_eq!(
            sub("..row.len(), row[0]", "row", "m.row(k)"),
            ".. m . row (k) . len () , m . row (k) [0]"
        );
        // field and method names, paths, macros, labels are not uses
        assert_eq!(
            sub(
                "a.row + row::X + row!(1) + 'row + S { row: 1 }",
                "row",
                "m.row(k)"
            ),
            "a . row + row :: X + row ! (1) + 'row + S { row : 1 }"
        );
        // nested groups
        assert_eq!(
            sub("[(q.a, [q])]", "q", "p.inner"),
            "[(p . inner . a , [p . inner])]"
        );
    }

    #[test]
    fn non_postfix_expressions_go_in_parentheses() {
        assert_eq!(sub("x * 2", "x", "a + b"), "(a + b) * 2");
        assert_eq!(sub("x * 2", "x", "(p.inner)"), "p . inner * 2");
    }
}
