//! A local array updated element by element in place: `for v in
//! a.iter_mut()` (also `&mut a`, and `.enumerate()`), and
//! `a.map_inplace(|v| ..)`. The element is a place (`element_places.rs`):
//!
//! ```text
//! for (i, v) in a.iter_mut().enumerate() { *v = v.sin() * i as f64; }
//!   ==>  for k in 0..a.len() {
//!            let (i0, i1) = (k / a.shape()[1], k % a.shape()[1]);
//!            let i = k;
//!            a[[i0, i1]] = (a[[i0, i1]]).sin() * i as f64;
//!        }
//! ```
//!
//! `iter_mut` visits the elements in logical (row-major) order whatever the
//! layout, as ndarray's `IterMut` does; `map_inplace` visits them in memory
//! order, as a one-array `Zip::for_each` (the same order for the
//! contiguous arrays a body's local arrays are), which is how it is lowered.

use super::ctx::{span_of, Lowerer};
use super::element_places::DerefWrites;
use super::expr::strip;
use super::val::Val;
use quote::ToTokens;

/// `for v in a.iter_mut()`, `for v in &mut a`, `for (i, v) in
/// a.iter_mut().enumerate()`: the array's name and whether it is
/// enumerated; `None` for other loops.
fn iter_mut_source(e: &syn::Expr) -> Option<(&syn::Ident, bool)> {
    match strip(e) {
        syn::Expr::Reference(r) if r.mutability.is_some() => ident(&r.expr).map(|i| (i, false)),
        syn::Expr::MethodCall(m) if m.method == "iter_mut" && m.args.is_empty() => {
            ident(&m.receiver).map(|i| (i, false))
        }
        syn::Expr::MethodCall(m) if m.method == "enumerate" && m.args.is_empty() => {
            match strip(&m.receiver) {
                syn::Expr::MethodCall(inner)
                    if inner.method == "iter_mut" && inner.args.is_empty() =>
                {
                    ident(&inner.receiver).map(|i| (i, true))
                }
                _ => None,
            }
        }
        _ => None,
    }
}

fn ident(e: &syn::Expr) -> Option<&syn::Ident> {
    match strip(e) {
        syn::Expr::Path(p) if p.qself.is_none() => p.path.get_ident(),
        _ => None,
    }
}

/// Whether the tokens hold a `return` (at any depth).
fn has_return(ts: proc_macro2::TokenStream) -> bool {
    ts.into_iter().any(|t| match t {
        proc_macro2::TokenTree::Ident(i) => i == "return",
        proc_macro2::TokenTree::Group(g) => has_return(g.stream()),
        _ => false,
    })
}

/// Whether `body` binds `name` anew (a `let`, a closure or loop pattern).
fn rebinds(body: &syn::Block, name: &syn::Ident) -> bool {
    struct Find<'a> {
        name: &'a syn::Ident,
        found: bool,
    }
    impl<'ast> syn::visit::Visit<'ast> for Find<'_> {
        fn visit_pat_ident(&mut self, p: &'ast syn::PatIdent) {
            self.found |= p.ident == *self.name;
            syn::visit::visit_pat_ident(self, p);
        }
    }
    let mut f = Find { name, found: false };
    syn::visit::Visit::visit_block(&mut f, body);
    f.found
}

impl Lowerer<'_> {
    /// `for v in a.iter_mut() { body }` (and the forms of
    /// [`iter_mut_source`]) as a loop over the positions in logical order
    /// whose body reads and writes `a`'s element where it says `*v`.
    /// `None` when `f` is another loop.
    pub(super) fn iter_mut_loop(&mut self, f: &syn::ExprForLoop) -> Option<Option<Val>> {
        let (arr, enumerate) = iter_mut_source(&f.expr)?;
        Some((|| {
            let span = span_of(&f.expr);
            let (index_pat, elem_pat) = match (f.pat.as_ref(), enumerate) {
                (p, false) => (None, p),
                (syn::Pat::Tuple(t), true) if t.elems.len() == 2 => {
                    (Some(&t.elems[0]), &t.elems[1])
                }
                (p, true) => {
                    return self.fail(
                        p,
                        "the items of `iter_mut().enumerate()` are pairs: `for (i, v) in ..`",
                    )
                }
            };
            let syn::Pat::Ident(elem) = elem_pat else {
                return self.fail(elem_pat, "the element of `iter_mut` must be a name, used as `*name` (`for v in a.iter_mut() { *v *= 2.0 }`)");
            };
            let rank = match self
                .env
                .lookup(&arr.to_string())
                .map(|id| self.env.get(id).val.clone())
            {
                Some(Val::Array(_, _, r)) => r,
                Some(Val::Poison) => return None,
                Some(other) => {
                    return self.fail(
                        arr,
                        format!("`iter_mut` needs an array, found `{}`", other.ty()),
                    )
                }
                None => return self.fail(arr, format!("cannot find value `{arr}` in this scope")),
            };
            if rebinds(&f.body, arr) {
                return self.fail(&f.body, format!("this loop writes `{arr}`'s elements: its body must not bind the name `{arr}` anew"));
            }
            let k = syn::Ident::new("__linad_iter_mut_k", span);
            let idx: Vec<syn::Ident> = (0..rank)
                .map(|j| syn::Ident::new(&format!("__linad_iter_mut_{j}"), span))
                .collect();
            // The multi-index of flat position k, row-major.
            let mut unravel: Vec<syn::Stmt> = vec![];
            for (jj, i) in idx.iter().enumerate() {
                let inner: Vec<syn::Expr> = ((jj + 1)..rank)
                    .map(|t| syn::parse_quote_spanned!(span=> #arr.shape()[#t]))
                    .collect();
                let e: syn::Expr = if inner.is_empty() {
                    syn::parse_quote_spanned!(span=> #k)
                } else {
                    syn::parse_quote_spanned!(span=> #k / (1usize #(* #inner)*))
                };
                unravel.push(if jj == 0 {
                    syn::parse_quote_spanned!(span=> let #i: usize = #e;)
                } else {
                    syn::parse_quote_spanned!(span=> let #i: usize = (#e) % #arr.shape()[#jj];)
                });
            }
            let place: syn::Expr = if rank == 1 {
                syn::parse_quote_spanned!(span=> #arr[#k])
            } else {
                syn::parse_quote_spanned!(span=> #arr[[#(#idx),*]])
            };
            let writes = [(elem.ident.to_string(), place)];
            let mut body = f.body.clone();
            let mut rw = DerefWrites {
                writes: &writes,
                bad: None,
            };
            syn::visit_mut::VisitMut::visit_block_mut(&mut rw, &mut body);
            if let Some(bad) = rw.bad {
                return self.fail(
                    &bad,
                    "use the element of `iter_mut` as `*name` (to read or to write it)",
                );
            }
            let index: Option<syn::Stmt> =
                index_pat.map(|p| syn::parse_quote_spanned!(span=> let #p = #k;));
            let loop_: syn::Expr = syn::parse_quote_spanned!(span=>
                for #k in 0..#arr.len() {
                    #(#unravel)*
                    #index
                    #body
                }
            );
            self.expr(&loop_)
        })())
    }

    /// `a.iter_mut().for_each(|v| ..)` (or `.enumerate().for_each(|(i, v)|
    /// ..)`): the `for` loop [`Self::iter_mut_loop`] with the closure's
    /// parameter as its pattern. `None` when `m` is not of this form.
    pub(super) fn iter_mut_for_each(&mut self, m: &syn::ExprMethodCall) -> Option<Option<Val>> {
        if m.method != "for_each" || m.args.len() != 1 {
            return None;
        }
        iter_mut_source(&m.receiver)?;
        Some((|| {
            let syn::Expr::Closure(c) = strip(&m.args[0]) else {
                return self.fail(
                    &m.args[0],
                    "`for_each` after `iter_mut` takes a closure here (`|v| *v *= 2.0`)",
                );
            };
            let [p] = c.inputs.iter().collect::<Vec<_>>()[..] else {
                return self.fail(&c.inputs, "this closure must take 1 parameter here");
            };
            let p = match p {
                syn::Pat::Type(pt) => (*pt.pat).clone(),
                p => p.clone(),
            };
            // A `return` in the closure ends one call: it is not the loop's.
            if has_return(c.body.to_token_stream()) {
                return self.fail(&c.body, "`return` in the closure of `for_each` is not supported: write a `for` loop and `continue`");
            }
            let body = &c.body;
            let recv = &m.receiver;
            let span = m.method.span();
            let f: syn::ExprForLoop = syn::parse_quote_spanned!(span=> for #p in #recv { #body; });
            self.iter_mut_loop(&f)?
        })())
    }

    /// `a.map_inplace(|v| ..)` of a local array: `Zip::from(&mut
    /// a).for_each(|v| ..)`. `None` when `m` is not of this form.
    pub(super) fn map_inplace(&mut self, m: &syn::ExprMethodCall) -> Option<Option<Val>> {
        if m.method != "map_inplace" || m.args.len() != 1 {
            return None;
        }
        let arr = ident(&m.receiver)?;
        self.env.lookup(&arr.to_string())?;
        let span = m.method.span();
        let place: syn::Expr = syn::parse_quote_spanned!(span=> &mut #arr);
        Some(self.zip_loop(m, &[&place], None, &m.args[0]))
    }
}
