//! Struct results of calls: `let p = g(..);` where `g` is a
//! `#[differentiable]` function of the crate returning a struct.
//!
//! Such a `g` is differentiated as its flat function, which returns the
//! struct's leaf fields as a tuple (`structs.rs`). Before a caller is
//! lowered, the binding calls the flat function and reads of the struct's
//! leaves become reads of the tuple's components:
//!
//! ```text
//! let p = make(x, s);              let p = __linad_flat_make(x, s);
//! p.a.sum() + p.inner.b       =>   p.0.sum() + p.1
//! ```
//!
//! A destructuring `let S { a, inner: T { b, .. }, .. } = g(..);` becomes a
//! tuple pattern over the leaves (`_` for those it does not bind).
//!
//! The user's function itself is not changed (only the copy that is
//! differentiated, and the flat functions and shadows, which are compiled).
//! A struct result is read through its leaves: using it whole (passing it
//! on, returning it) or naming a nested struct without going down to a leaf
//! is refused with a message saying so, and so is reading a constant field
//! (the flat function does not return those). A later `let` of the same
//! name ends the rewriting.

use crate::crate_fns;
use crate::f32s::SHADOW_PREFIX;
use crate::structs::{output_leaves, FLAT_PREFIX};
use quote::format_ident;
use syn::spanned::Spanned;
use syn::visit_mut::VisitMut;

/// Rewrites the struct results of calls in `func`'s body (see the module
/// doc); the errors of every misuse.
pub fn rewrite(func: &mut syn::ItemFn) -> Result<(), Vec<syn::Error>> {
    let mut rw = Rewriter {
        scopes: vec![],
        errors: vec![],
    };
    rw.visit_block_mut(&mut func.block);
    if rw.errors.is_empty() {
        Ok(())
    } else {
        Err(rw.errors)
    }
}

/// Whether `func` is a flat function or an `f64` shadow, whose body was
/// rewritten when it was made (rewriting twice would read the tuples as
/// structs).
pub fn made_rewritten(func: &syn::ItemFn) -> bool {
    let name = func.sig.ident.to_string();
    name.starts_with(FLAT_PREFIX) || name.starts_with(SHADOW_PREFIX)
}

/// A name bound to a struct result: its leaves' field chains, in the flat
/// function's order, the chains of its constant fields (not returned by the
/// flat function), and the callee (for messages).
struct Bound {
    name: String,
    chains: Vec<Vec<String>>,
    constants: Vec<Vec<String>>,
    callee: String,
}

struct Rewriter {
    /// The struct results in scope, innermost block last.
    scopes: Vec<Vec<Bound>>,
    errors: Vec<syn::Error>,
}

/// The flat callee, the chains of the leaves it returns and those of the
/// constant leaves, for a call of `name` (a function of the crate, its flat
/// function, or either's `f64` shadow) that returns a struct.
type Callee = (String, Vec<Vec<String>>, Vec<Vec<String>>);

fn struct_callee(name: &str) -> Option<Callee> {
    let (shadow, rest) = match name.strip_prefix(SHADOW_PREFIX) {
        Some(r) => (true, r),
        None => (false, name),
    };
    let user = rest.strip_prefix(FLAT_PREFIX).unwrap_or(rest);
    let info = crate_fns::lookup(user)?;
    if !info.differentiable {
        return None;
    }
    let leaves = output_leaves(info.ret.as_deref()?)?;
    let flat = format!(
        "{}{FLAT_PREFIX}{user}",
        if shadow { SHADOW_PREFIX } else { "" }
    );
    let (diff, constant): (Vec<_>, Vec<_>) = leaves.into_iter().partition(|l| l.diff);
    Some((
        flat,
        diff.into_iter().map(|l| l.chain).collect(),
        constant.into_iter().map(|l| l.chain).collect(),
    ))
}

/// The name of the function a call calls by path (`g` for `m::g(..)`).
fn call_name(c: &syn::ExprCall) -> Option<String> {
    let syn::Expr::Path(fp) = &*c.func else {
        return None;
    };
    let last = fp.path.segments.last()?;
    Some(syn::ext::IdentExt::unraw(&last.ident).to_string())
}

/// The names a pattern binds.
pub(crate) fn pattern_idents(p: &syn::Pat) -> Vec<String> {
    struct Names(Vec<String>);
    impl<'a> syn::visit::Visit<'a> for Names {
        fn visit_pat_ident(&mut self, p: &'a syn::PatIdent) {
            self.0.push(p.ident.to_string());
            syn::visit::visit_pat_ident(self, p);
        }
    }
    let mut n = Names(vec![]);
    syn::visit::Visit::visit_pat(&mut n, p);
    n.0
}

/// The field chain of `e` from a plain name: `p.a.b` is `(p, [a, b])`.
fn chain_of(e: &syn::Expr) -> Option<(syn::Ident, Vec<String>)> {
    let (root, chain) = crate::structs::field_chain(e)?;
    Some((root, chain.iter().map(|c| c.to_string()).collect()))
}

impl Rewriter {
    fn find(&self, name: &str) -> Option<&Bound> {
        self.scopes
            .iter()
            .rev()
            .flat_map(|s| s.iter().rev())
            .find(|b| b.name == name)
    }

    /// Forgets `name` (a new binding shadows it).
    fn shadow(&mut self, name: &str) {
        if let Some(scope) = self.scopes.last_mut() {
            scope.retain(|b| b.name != name);
        }
        // A name bound in an enclosing block stays bound there; here the
        // new binding hides it.
        if self.find(name).is_some() {
            if let Some(scope) = self.scopes.last_mut() {
                scope.push(Bound {
                    name: name.to_string(),
                    chains: vec![],
                    constants: vec![],
                    callee: String::new(),
                });
            }
        }
    }

    /// `let p = g(..);` with `g` returning a struct: the call goes to the
    /// flat function and `p` is recorded.
    fn local(&mut self, l: &mut syn::Local) {
        // A struct-returning call bound here: its arguments are visited, the
        // call goes to the flat function; any other value is visited whole.
        let mut found = None;
        if let Some(init) = &mut l.init {
            match &mut *init.expr {
                syn::Expr::Call(c) => {
                    let callee = call_name(c).and_then(|n| Some((struct_callee(&n)?, n)));
                    match callee {
                        Some(((flat, chains, constants), name)) => {
                            for a in &mut c.args {
                                self.visit_expr_mut(a);
                            }
                            if let syn::Expr::Path(fp) = &mut *c.func {
                                if let Some(last) = fp.path.segments.last_mut() {
                                    last.ident = format_ident!("{flat}", span = last.ident.span());
                                }
                            }
                            found = Some((name, chains, constants));
                        }
                        None => self.visit_expr_mut(&mut init.expr),
                    }
                }
                e => self.visit_expr_mut(e),
            }
            if let Some((_, e)) = &mut init.diverge {
                self.visit_expr_mut(e);
            }
        }
        let ident = match &l.pat {
            syn::Pat::Ident(pi) if pi.subpat.is_none() => Some(pi.ident.clone()),
            syn::Pat::Type(pt) => match &*pt.pat {
                syn::Pat::Ident(pi) if pi.subpat.is_none() => Some(pi.ident.clone()),
                _ => None,
            },
            _ => None,
        };
        let Some(ident) = ident else {
            for n in pattern_idents(&l.pat) {
                self.shadow(&n);
            }
            if let Some((callee, chains, constants)) = found {
                // `let Pair { a, b: (s, t), .. } = g(..);`: a tuple pattern
                // over the flat function's leaves.
                let mut pat = &l.pat;
                while let syn::Pat::Type(syn::PatType { pat: p, .. })
                | syn::Pat::Paren(syn::PatParen { pat: p, .. }) = pat
                {
                    pat = p;
                }
                let mut binds = vec![];
                if let syn::Pat::Struct(ps) = pat {
                    self.destructure(ps, &[], &chains, &constants, &callee, &mut binds);
                } else if !matches!(pat, syn::Pat::Wild(_)) {
                    self.errors.push(syn::Error::new(
                        l.pat.span(),
                        format!("bind the struct that `{callee}` returns to a name (`let p = {callee}(..);`) or destructure it (`let S {{ a, b, .. }} = {callee}(..);`)"),
                    ));
                }
                let parts: Vec<syn::Pat> = chains
                    .iter()
                    .map(|c| {
                        binds
                            .iter()
                            .find(|(b, _)| b == c)
                            .map(|(_, p)| p.clone())
                            .unwrap_or_else(|| syn::parse_quote!(_))
                    })
                    .collect();
                l.pat = match parts.as_slice() {
                    [one] => one.clone(),
                    _ => syn::parse_quote!((#(#parts),*)),
                };
            }
            return;
        };
        let name = ident.to_string();
        self.shadow(&name);
        if let Some((callee, chains, constants)) = found {
            // The type annotation names the struct; the value is the tuple.
            if let syn::Pat::Type(pt) = &l.pat {
                l.pat = (*pt.pat).clone();
            }
            if let Some(scope) = self.scopes.last_mut() {
                scope.push(Bound {
                    name,
                    chains,
                    constants,
                    callee,
                });
            }
        }
    }

    /// The bindings of a struct pattern over a struct result's leaves:
    /// `(chain, pattern)` for each leaf the pattern binds; errors for
    /// constant fields bound by name and nested structs bound whole.
    fn destructure(
        &mut self,
        ps: &syn::PatStruct,
        prefix: &[String],
        chains: &[Vec<String>],
        constants: &[Vec<String>],
        callee: &str,
        binds: &mut Vec<(Vec<String>, syn::Pat)>,
    ) {
        for fp in &ps.fields {
            let syn::Member::Named(n) = &fp.member else {
                continue;
            };
            let mut chain = prefix.to_vec();
            chain.push(n.to_string());
            match &*fp.pat {
                syn::Pat::Struct(inner) => {
                    self.destructure(inner, &chain, chains, constants, callee, binds)
                }
                p if chains.contains(&chain) => binds.push((chain, p.clone())),
                syn::Pat::Wild(_) => {}
                p if constants.contains(&chain) => self.errors.push(syn::Error::new(
                    p.span(),
                    format!("`{}` is a constant field of the struct `{callee}` returns: it is not available in a differentiable caller yet (write `{n}: _` or leave it to `..`)", chain.join(".")),
                )),
                p if chains.iter().any(|c| c.starts_with(&chain)) => {
                    self.errors.push(syn::Error::new(
                        p.span(),
                        format!("`{}` is a struct: destructure it too (`{n}: Inner {{ x, .. }}`)", chain.join(".")),
                    ))
                }
                // A field the struct does not have: rustc reports it on
                // the user's function.
                _ => {}
            }
        }
    }

    /// A read `p.a.b` of a struct result's leaf: `p.k` (`p` for a struct
    /// of one leaf); `None` when `e` does not read a struct result.
    fn leaf_read(&mut self, e: &syn::Expr) -> Option<syn::Expr> {
        let (root, chain) = chain_of(e)?;
        let b = self.find(&root.to_string())?;
        if b.chains.is_empty() {
            return None; // shadowed
        }
        let span = e.span();
        if b.constants.contains(&chain) {
            let msg = format!(
                "`{root}.{}` is a constant field of the struct `{}` returns: it is not available in a differentiable caller yet (compute it in the caller)",
                chain.join("."),
                b.callee
            );
            self.errors.push(syn::Error::new(span, msg));
            return Some(e.clone());
        }
        match b.chains.iter().position(|c| *c == chain) {
            Some(_) if b.chains.len() == 1 => Some(syn::parse_quote_spanned!(span=> #root)),
            Some(k) => {
                let k = syn::Index {
                    index: k as u32,
                    span,
                };
                Some(syn::parse_quote_spanned!(span=> #root.#k))
            }
            None if b.chains.iter().any(|c| c.starts_with(&chain)) => {
                let what = if chain.is_empty() {
                    format!("`{root}`")
                } else {
                    format!("`{root}.{}`", chain.join("."))
                };
                let msg = format!(
                    "{what} is a struct returned by `{}`: read its fields (`{root}.{}`); passing, copying or returning a whole struct is not supported yet",
                    b.callee,
                    b.chains[0].join(".")
                );
                self.errors.push(syn::Error::new(span, msg));
                Some(e.clone())
            }
            None => None,
        }
    }
}

impl VisitMut for Rewriter {
    fn visit_block_mut(&mut self, b: &mut syn::Block) {
        self.scopes.push(vec![]);
        for s in &mut b.stmts {
            match s {
                syn::Stmt::Local(l) => self.local(l),
                s => self.visit_stmt_mut(s),
            }
        }
        self.scopes.pop();
    }

    fn visit_expr_mut(&mut self, e: &mut syn::Expr) {
        if let syn::Expr::Call(c) = e {
            if let Some(name) = call_name(c).filter(|n| struct_callee(n).is_some()) {
                let user = name
                    .trim_start_matches(SHADOW_PREFIX)
                    .trim_start_matches(FLAT_PREFIX);
                self.errors.push(syn::Error::new(
                    c.span(),
                    format!("bind the struct that `{user}` returns to a name (`let p = {user}(..);`) and read its fields (`p.field`)"),
                ));
            }
        }
        if matches!(e, syn::Expr::Field(_) | syn::Expr::Path(_)) {
            if let Some(r) = self.leaf_read(e) {
                *e = r;
                return;
            }
        }
        syn::visit_mut::visit_expr_mut(self, e);
    }

    fn visit_item_mut(&mut self, _: &mut syn::Item) {}

    /// Leaf reads inside macros (`array![p.a, p.inner.b]`, `s![..p.n]`).
    fn visit_macro_mut(&mut self, m: &mut syn::Macro) {
        m.tokens = self.rewrite_tokens(std::mem::take(&mut m.tokens));
    }
}

impl Rewriter {
    /// [`Rewriter::leaf_read`] on a macro's tokens: `p . a . b` (the root
    /// a use: [`crate::substitute::is_use`]), its
    /// longest leaf chain rewritten; a chain reaching no leaf is passed to
    /// `leaf_read` whole, for its message.
    fn rewrite_tokens(&mut self, ts: proc_macro2::TokenStream) -> proc_macro2::TokenStream {
        use proc_macro2::TokenTree as T;
        use quote::ToTokens;
        let toks: Vec<T> = ts.into_iter().collect();
        let punct = |k: Option<&T>, c: char| matches!(k, Some(T::Punct(p)) if p.as_char() == c);
        let mut out: Vec<T> = Vec::with_capacity(toks.len());
        let mut k = 0;
        while k < toks.len() {
            let t = &toks[k];
            if let T::Group(g) = t {
                let mut n = proc_macro2::Group::new(g.delimiter(), self.rewrite_tokens(g.stream()));
                n.set_span(g.span());
                out.push(T::Group(n));
                k += 1;
                continue;
            }
            let root = match t {
                T::Ident(i)
                    if crate::substitute::is_use(&toks, k)
                        && self
                            .find(&i.to_string())
                            .is_some_and(|b| !b.chains.is_empty()) =>
                {
                    i.clone()
                }
                _ => {
                    out.push(t.clone());
                    k += 1;
                    continue;
                }
            };
            // `. field` pairs after the root (not `..`, a range).
            let mut fields: Vec<syn::Ident> = vec![];
            let mut j = k + 1;
            while let (true, Some(T::Ident(f))) = (
                punct(toks.get(j), '.') && !punct(toks.get(j + 1), '.'),
                toks.get(j + 1),
            ) {
                fields.push(f.clone());
                j += 2;
            }
            let b = self.find(&root.to_string()).expect("checked");
            let names: Vec<String> = fields.iter().map(|f| f.to_string()).collect();
            let take = (0..=names.len())
                .rev()
                .find(|&n| b.chains.iter().any(|c| *c == names[..n]))
                .or_else(|| {
                    (0..=names.len())
                        .rev()
                        .find(|&n| b.chains.iter().any(|c| c.starts_with(&names[..n])))
                })
                .unwrap_or(0);
            let chain = &fields[..take];
            let e: syn::Expr = syn::parse_quote_spanned!(root.span()=> #root #(. #chain)*);
            match self.leaf_read(&e) {
                Some(r) => {
                    out.extend(r.to_token_stream());
                    k += 1 + 2 * take;
                }
                None => {
                    out.push(t.clone());
                    k += 1;
                }
            }
        }
        out.into_iter().collect()
    }
}

#[cfg(test)]
mod tests {
    use crate::test_crate::TestCrate;
    use quote::quote;

    /// The binding calls the flat function; leaf reads become tuple reads.
    #[test]
    fn struct_results_are_read_as_tuples() {
        let krate = TestCrate::new(
            "struct-results",
            "#[derive(Differentiable)] struct Pair { a: Array1<f64>, b: f64 }\n\
             #[differentiable] fn make(x: &Array1<f64>, s: f64) -> Pair { Pair { a: x * s, b: s } }\n\
             #[differentiable] fn user(x: &Array1<f64>, s: f64) -> f64 { 0.0 }",
        );
        let out = krate.expand_idents(quote! {
            fn user(x: &Array1<f64>, s: f64) -> f64 {
                let p = make(x, s);
                p.a.sum() + p.b
            }
        });
        assert!(
            out.iter().any(|i| i == "__linad___linad_flat_make_lin_t"),
            "{out:?}"
        );
        let mut func: syn::ItemFn = syn::parse_quote! {
            fn user(x: &Array1<f64>, s: f64) -> f64 {
                let p: Pair = make(x, s);
                let q = { let p = 2.0; p * s };
                p.a.sum() + p.b + q
            }
        };
        super::rewrite(&mut func).unwrap();
        let text = quote!(#func).to_string();
        assert!(text.contains("let p = __linad_flat_make (x , s)"), "{text}");
        assert!(text.contains("p . 0 . sum () + p . 1 + q"), "{text}");
        assert!(text.contains("p * s"), "{text}");
        let mut whole: syn::ItemFn = syn::parse_quote! {
            fn user(x: &Array1<f64>, s: f64) -> f64 {
                let p = make(x, s);
                other(p)
            }
        };
        let errs = super::rewrite(&mut whole).unwrap_err();
        assert!(
            errs[0]
                .to_string()
                .contains("is a struct returned by `make`"),
            "{}",
            errs[0]
        );
    }
}
