//! Labelled loops: the `break 'a` and `continue 'a` of a loop labelled
//! `'a` rewritten into unlabelled exits, which the loop lowering already
//! follows ([`super::desugar::lift_breaks`], `lift_continues`).
//!
//! An exit in the loop's own body (in its `if`s and blocks) loses its
//! label. An exit inside a nested loop sets a flag of the iteration and
//! leaves the nested loop with a plain `break`; after each nested loop
//! that may have set it, the flag leaves the next loop out the same way,
//! and at the labelled loop's own level it becomes the `continue` or
//! `break` it stood for:
//!
//! ```text
//! 'a: for i in 0..n {               for i in 0..n {
//!     for j in 0..m {                   let mut cont_a = false;
//!         if c(i, j) {                  for j in 0..m {
//!             continue 'a;                  if c(i, j) { { cont_a = true; break; } }
//!         }                     ==>         s += x(i, j);
//!         s += x(i, j);                 }
//!     }                                 if cont_a { continue; }
//!     t += 1.0;                         t += 1.0;
//! }                                 }
//! ```
//!
//! The rewrite keeps `f`'s order of evaluation: the statements an exit
//! skips in `f` are skipped, nothing else. Closures are not entered (an
//! exit cannot leave one).

use proc_macro2::Span;
use syn::visit_mut::VisitMut;

/// Rewrites the exits of `body`, the body of the loop labelled `label`, as
/// the module says; the loop itself is then lowered without its label.
/// `Err` with the first `break 'label value` (a value is not supported).
pub fn unlabel(body: &mut syn::Block, label: &syn::Lifetime) -> Result<(), syn::ExprBreak> {
    let name = label.ident.to_string();
    let span = label.span();
    let mut r = Router {
        label: name.clone(),
        depth: 0,
        exits: 0,
        left: 0,
        cont: syn::Ident::new(&format!("__linad_cont_{name}"), span),
        brk: syn::Ident::new(&format!("__linad_brk_{name}"), span),
        used_cont: false,
        used_brk: false,
        valued: None,
        span,
    };
    r.visit_block_mut(body);
    if let Some(b) = r.valued {
        return Err(b);
    }
    let (cont, brk) = (&r.cont, &r.brk);
    let mut decls: Vec<syn::Stmt> = vec![];
    if r.used_cont {
        decls.push(syn::parse_quote_spanned!(span=> let mut #cont = false;));
    }
    if r.used_brk {
        decls.push(syn::parse_quote_spanned!(span=> let mut #brk = false;));
    }
    body.stmts.splice(0..0, decls);
    Ok(())
}

/// The body of the loop `e` (`None` if it is not one), once `v` has
/// visited what runs outside it (a `for`'s iterator, a `while`'s
/// condition): the walks of exits count the loops they enter.
pub(super) fn loop_body<'e>(
    v: &mut impl VisitMut,
    e: &'e mut syn::Expr,
) -> Option<&'e mut syn::Block> {
    match e {
        syn::Expr::ForLoop(f) => {
            v.visit_expr_mut(&mut f.expr);
            Some(&mut f.body)
        }
        syn::Expr::While(w) => {
            v.visit_expr_mut(&mut w.cond);
            Some(&mut w.body)
        }
        syn::Expr::Loop(l) => Some(&mut l.body),
        _ => None,
    }
}

/// The walk: `depth` counts the loops between the statement visited and
/// the labelled loop; `exits` the exits rewritten inside nested loops so
/// far, `left` the nested loops they leave (a statement that raised it is
/// followed by the flags' tests).
struct Router {
    label: String,
    depth: usize,
    exits: usize,
    left: usize,
    cont: syn::Ident,
    brk: syn::Ident,
    used_cont: bool,
    used_brk: bool,
    /// The first `break 'label value`.
    valued: Option<syn::ExprBreak>,
    span: Span,
}

impl Router {
    fn targets(&self, l: &Option<syn::Lifetime>) -> bool {
        l.as_ref().is_some_and(|l| l.ident == self.label)
    }

    /// The tests following a statement that contains a nested loop which
    /// may have set a flag: at the labelled loop's own level the exits
    /// they stand for, deeper a `break` out of the enclosing nested loop.
    fn tests(&self) -> Vec<syn::Stmt> {
        let (cont, brk, span) = (&self.cont, &self.brk, self.span);
        let mut out = vec![];
        if self.depth == 0 {
            if self.used_brk {
                out.push(syn::parse_quote_spanned!(span=> if #brk { break; }));
            }
            if self.used_cont {
                out.push(syn::parse_quote_spanned!(span=> if #cont { continue; }));
            }
        } else {
            let cond: syn::Expr = match (self.used_cont, self.used_brk) {
                (true, true) => syn::parse_quote_spanned!(span=> #cont || #brk),
                (true, false) => syn::parse_quote_spanned!(span=> #cont),
                _ => syn::parse_quote_spanned!(span=> #brk),
            };
            out.push(syn::parse_quote_spanned!(span=> if #cond { break; }));
        }
        out
    }

    /// The exit `e` (a `break` when `is_break`, else a `continue`), its
    /// label removed: in a nested loop, setting the flag and leaving that
    /// loop instead.
    fn route(&mut self, e: &mut syn::Expr, is_break: bool) {
        if self.depth == 0 {
            return;
        }
        let (flag, span) = if is_break {
            self.used_brk = true;
            (&self.brk, self.span)
        } else {
            self.used_cont = true;
            (&self.cont, self.span)
        };
        *e = syn::parse_quote_spanned!(span=> { #flag = true; break; });
        self.exits += 1;
    }

    fn nested_loop_body(&mut self, b: &mut syn::Block) {
        let before = self.exits;
        self.depth += 1;
        self.visit_block_mut(b);
        self.depth -= 1;
        if self.exits > before {
            self.left += 1;
        }
    }
}

impl VisitMut for Router {
    fn visit_block_mut(&mut self, b: &mut syn::Block) {
        let mut out = Vec::with_capacity(b.stmts.len());
        for mut s in std::mem::take(&mut b.stmts) {
            let before = self.left;
            self.visit_stmt_mut(&mut s);
            out.push(s);
            if self.left > before {
                out.extend(self.tests());
            }
        }
        b.stmts = out;
    }

    fn visit_expr_mut(&mut self, e: &mut syn::Expr) {
        match e {
            syn::Expr::ForLoop(_) | syn::Expr::While(_) | syn::Expr::Loop(_) => {
                if let Some(b) = loop_body(self, e) {
                    self.nested_loop_body(b);
                }
            }
            syn::Expr::Closure(_) => {}
            syn::Expr::Break(k) if self.targets(&k.label) && k.expr.is_some() => {
                self.valued.get_or_insert_with(|| k.clone());
            }
            syn::Expr::Break(k) if self.targets(&k.label) => {
                k.label = None;
                self.route(e, true);
            }
            syn::Expr::Continue(c) if self.targets(&c.label) => {
                c.label = None;
                self.route(e, false);
            }
            _ => syn::visit_mut::visit_expr_mut(self, e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::unlabel;
    use quote::quote;

    fn rewrite(label: &str, body: proc_macro2::TokenStream) -> String {
        let mut b: syn::Block = syn::parse2(quote!({ #body })).expect("a block");
        let l: syn::Lifetime = syn::parse_str(label).expect("a label");
        unlabel(&mut b, &l).expect("no valued break");
        quote!(#b).to_string()
    }

    /// The module's example: own-level exits lose their label, a nested
    /// one sets the flag and leaves its loop, the flag's test follows it.
    #[test]
    fn nested_exits_set_flags_and_leave() {
        let got = rewrite(
            "'a",
            quote! {
                if z { continue 'a; }
                for j in 0..m { if c { continue 'a; } s += 1.0; }
                if y { break 'a; }
                t += 1.0;
            },
        );
        let want = quote!({
            let mut __linad_cont_a = false;
            if z {
                continue;
            }
            for j in 0..m {
                if c {
                    {
                        __linad_cont_a = true;
                        break;
                    };
                }
                s += 1.0;
            }
            if __linad_cont_a {
                continue;
            }
            if y {
                break;
            }
            t += 1.0;
        });
        assert_eq!(got, want.to_string());
    }

    /// Two loops deep: the middle loop is left by the flag's test after the
    /// inner one; its own `break` and a closure's body are untouched.
    #[test]
    fn deeper_exits_leave_every_loop_between() {
        let got = rewrite(
            "'a",
            quote! {
                for i in 0..n {
                    if d { break; }
                    for j in 0..m { if c { break 'a; } }
                    let g = |v: f64| v;
                }
            },
        );
        let want = quote!({
            let mut __linad_brk_a = false;
            for i in 0..n {
                if d {
                    break;
                }
                for j in 0..m {
                    if c {
                        {
                            __linad_brk_a = true;
                            break;
                        };
                    }
                }
                if __linad_brk_a {
                    break;
                }
                let g = |v: f64| v;
            }
            if __linad_brk_a {
                break;
            }
        });
        assert_eq!(got, want.to_string());
    }

    /// Another label's exits stay; a valued break is reported.
    #[test]
    fn other_labels_stay_and_values_are_reported() {
        let got = rewrite(
            "'a",
            quote!(for j in 0..m {
                if c {
                    break 'b;
                }
            }),
        );
        assert!(got.contains("break 'b"), "{got}");
        let mut b: syn::Block = syn::parse2(quote!({
            loop {
                break 'a 1.0;
            }
        }))
        .unwrap();
        let l: syn::Lifetime = syn::parse_str("'a").unwrap();
        assert!(unlabel(&mut b, &l).is_err());
    }
}
