//! Differentiable methods: `#[differentiable]` on an inherent `impl` block
//! whose methods are marked `#[differentiable]` too.
//!
//! An attribute on a method sees only the method, not the type it belongs
//! to, and its expansion may hold only associated items; the derivatives
//! need the type (its fields, its tangent) and free building blocks. So the
//! `impl` block is expanded as a whole: each marked method becomes a free
//! function of the receiver (`linad_m_t_f`, private, `self` renamed,
//! `Self` replaced by the type), differentiated as any function taking a
//! struct, and the public derivatives come back as methods that call the
//! free ones:
//!
//! ```text
//! #[differentiable]
//! impl Model {
//!     #[differentiable]
//!     pub fn loss(&self, x: f64) -> f64 { self.a * x + self.scale(x) }
//!     #[differentiable]
//!     pub fn scale(&self, x: f64) -> f64 { self.b * x * x }
//! }
//! =>
//! impl Model {
//!     pub fn loss(&self, x: f64) -> f64 { .. }            // as written
//!     pub fn loss_vjp(&self, x: f64, ct: f64) -> (f64, (ModelTangent, f64)) {
//!         linad_m_model_loss_vjp(self, x, ct)
//!     }
//!     // loss_jvp(&self, x, d_self: &ModelTangent, d_x), loss_linearize, ..
//! }
//! fn linad_m_model_loss(__linad_self: &Model, x: f64) -> f64 {
//!     __linad_self.a * x + linad_m_model_scale(__linad_self, x)
//! }
//! // its derivatives, as for any #[differentiable] function
//! ```
//!
//! Calls of the impl's marked methods on `self` (`self.scale(x)`,
//! `Self::scale(self, x)`) become calls of their free functions, so
//! they are differentiated through; a marked method called elsewhere is an
//! ordinary method call.

use proc_macro2::{Ident, TokenStream, TokenTree};
use quote::{format_ident, quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;

/// The receiver's name in the free function.
/// The parameter a method's `self` becomes in its free function.
pub const SELF: &str = "__linad_self";

/// The public derivatives a method gets (suffixes of the free function's).
const PUBLIC: [&str; 5] = ["jvp", "vjp", "linearize", "pullback", "linad_dump"];

/// The free function differentiated for method `method` of type `ty`,
/// in snake case (`Model::loss`: `linad_m_model_loss`), as the lint on
/// function names wants it for it and the items derived from it (no
/// leading `__`: the derived `__linad_flat_..` would hold a `___`). (Two
/// types of one module whose names differ only where snake case cannot
/// tell, `FooBar` and `Foo_bar`, would clash: rustc then reports the
/// duplicate.)
pub fn mangled(ty: &Ident, method: &Ident) -> Ident {
    let method = syn::ext::IdentExt::unraw(method);
    let mut snake = String::new();
    for (k, c) in syn::ext::IdentExt::unraw(ty)
        .to_string()
        .chars()
        .enumerate()
    {
        if c.is_uppercase() && k > 0 {
            snake.push('_');
        }
        snake.extend(c.to_lowercase());
    }
    format_ident!("linad_m_{}_{}", snake, method, span = method.span())
}

/// Expands `#[differentiable(attr)] impl T { .. }`.
pub fn expand(attr: TokenStream, mut item: syn::ItemImpl) -> TokenStream {
    let mut errors = vec![];
    if !attr.is_empty() {
        errors.push(syn::Error::new(
            attr.span(),
            "`#[differentiable]` on an `impl` block takes no arguments: give them to its methods' `#[differentiable(..)]`",
        ));
    }
    let ty = match self_type(&item) {
        Ok(ty) => Some(ty),
        Err(e) => {
            errors.push(e);
            None
        }
    };
    let forms = ty.as_ref().map_or(vec![], |ty| free_forms(&item, ty));
    // The marks go whatever happens (each would expand again, alone).
    let mut marks = 0;
    for it in &mut item.items {
        if let syn::ImplItem::Fn(m) = it {
            let before = m.attrs.len();
            m.attrs.retain(|a| !is_differentiable(a));
            marks += before - m.attrs.len();
        }
    }
    if marks == 0 && errors.is_empty() {
        errors.push(syn::Error::new(
            item.impl_token.span,
            "mark the methods to differentiate with `#[differentiable]` inside this `impl` block",
        ));
    }
    if !errors.is_empty() {
        let errs = errors.iter().map(syn::Error::to_compile_error);
        return quote!(#item #(#errs)*);
    }
    let mut free = TokenStream::new();
    let mut wrappers: Vec<syn::ImplItem> = vec![];
    for (k, args, f) in forms {
        let syn::ImplItem::Fn(m) = &item.items[k] else {
            continue;
        };
        match f {
            Ok(f) => {
                let expanded = crate::expand::expand(args, f.to_token_stream());
                let method = syn::ext::IdentExt::unraw(&m.sig.ident).to_string();
                let expanded = renamed_errors(expanded, &f.sig.ident.to_string(), &method);
                wrappers.extend(method_wrappers(&f.sig.ident, m, &expanded));
                free.extend(expanded);
            }
            Err(e) => free.extend(e.to_compile_error()),
        }
    }
    item.items.extend(wrappers);
    quote!(#item #free)
}

/// Each method of `item` marked `#[differentiable(args)]`: its position
/// among the items, `args` (`self` renamed, as in `wrt(self, x)`), and the
/// free function it becomes ([`free_function`]).
fn free_forms(
    item: &syn::ItemImpl,
    ty: &Ident,
) -> Vec<(usize, TokenStream, syn::Result<syn::ItemFn>)> {
    let marked: Vec<(usize, &syn::ImplItemFn, &syn::Attribute)> = item
        .items
        .iter()
        .enumerate()
        .filter_map(|(k, it)| match it {
            syn::ImplItem::Fn(m) => m
                .attrs
                .iter()
                .find(|a| is_differentiable(a))
                .map(|a| (k, m, a)),
            _ => None,
        })
        .collect();
    let names: Vec<Ident> = marked.iter().map(|(_, m, _)| m.sig.ident.clone()).collect();
    marked
        .into_iter()
        .map(|(k, m, a)| {
            let args = match &a.meta {
                syn::Meta::List(l) => rewrite(l.tokens.clone(), ty, &[]),
                _ => TokenStream::new(),
            };
            (k, args, free_function(ty, m, &names))
        })
        .collect()
}

/// The free functions a `#[differentiable] impl` block's marked methods
/// become, each with its `#[differentiable(..)]` attribute (`self` renamed
/// in its arguments), as the crate's source index ([`crate::crate_fns`])
/// reads them: a caller's `self.f(..)` calls them. Empty for a block
/// [`expand`] refuses.
pub fn free_functions(item: &syn::ItemImpl) -> Vec<syn::ItemFn> {
    let Ok(ty) = self_type(item) else {
        return vec![];
    };
    free_forms(item, &ty)
        .into_iter()
        .filter_map(|(_, args, f)| {
            let mut f = f.ok()?;
            f.attrs.push(syn::parse_quote!(#[differentiable(#args)]));
            Some(f)
        })
        .collect()
}

/// Whether `a` is `#[differentiable]` (or `#[linad::differentiable(..)]`).
fn is_differentiable(a: &syn::Attribute) -> bool {
    a.path()
        .segments
        .last()
        .is_some_and(|s| s.ident == "differentiable")
}

/// The type the block implements, a plain (non-generic) named type.
fn self_type(item: &syn::ItemImpl) -> syn::Result<Ident> {
    if let Some((_, path, _)) = &item.trait_ {
        return Err(syn::Error::new_spanned(
            path,
            "the derivatives of a trait's methods cannot be added to its `impl` (they are not the trait's items): differentiate an inherent method (`impl T { .. }`) or a free function",
        ));
    }
    if !item.generics.params.is_empty() {
        return Err(syn::Error::new_spanned(
            &item.generics,
            "generic `impl` blocks cannot be #[differentiable]",
        ));
    }
    match &*item.self_ty {
        syn::Type::Path(p)
            if p.qself.is_none()
                && p.path.segments.len() == 1
                && p.path.segments[0].arguments.is_none() =>
        {
            Ok(p.path.segments[0].ident.clone())
        }
        other => Err(syn::Error::new_spanned(
            other,
            "#[differentiable] methods belong to a struct named by one identifier (`impl Model { .. }`), defined in this crate and deriving `linad::Differentiable`",
        )),
    }
}

/// The method `m` of `ty` as a free function: the receiver `&self` (or
/// `self`) becomes the first parameter `__linad_self: &ty` (`ty`), `self`
/// and `Self` in the body are renamed, and calls of the marked methods
/// `names` on `self` call their free functions.
fn free_function(ty: &Ident, m: &syn::ImplItemFn, names: &[Ident]) -> syn::Result<syn::ItemFn> {
    let mut sig = m.sig.clone();
    sig.ident = mangled(ty, &m.sig.ident);
    if let Some(syn::FnArg::Receiver(r)) = sig.inputs.first() {
        if r.mutability.is_some() {
            let msg = if r.reference.is_some() {
                "`&mut self` is not supported: a #[differentiable] method reads its receiver (`&self` or `self`)"
            } else {
                "`mut self` is not supported: take `&self` (or `self`) and copy what the method changes"
            };
            return Err(syn::Error::new_spanned(r, msg));
        }
        if r.colon_token.is_some() {
            return Err(syn::Error::new_spanned(
                r,
                "a typed receiver (`self: Box<Self>`, ...) is not supported: take `&self` or `self`",
            ));
        }
        let span = r.span();
        let name = Ident::new(SELF, span);
        let param: syn::FnArg = match &r.reference {
            Some((_, lifetime)) => syn::parse_quote_spanned!(span=> #name: & #lifetime #ty),
            None => syn::parse_quote_spanned!(span=> #name: #ty),
        };
        sig.inputs[0] = param;
    }
    let sig_tokens = rewrite(sig.to_token_stream(), ty, names);
    let body = rewrite(m.block.to_token_stream(), ty, names);
    let attrs = m.attrs.iter().filter(|a| !is_differentiable(a));
    let tokens = quote! {
        #(#attrs)*
        #[doc(hidden)]
        #[allow(dead_code, unused, clippy::all)]
        #sig_tokens #body
    };
    syn::parse2(tokens)
}

/// `tokens` with `self` renamed to `__linad_self`, `Self` replaced by
/// `ty`, and the calls `self.f(..)` and `Self::f(..)` of a marked method
/// `f` replaced by calls of its free function (`self` first for the
/// former).
fn rewrite(tokens: TokenStream, ty: &Ident, names: &[Ident]) -> TokenStream {
    let toks: Vec<TokenTree> = tokens.into_iter().collect();
    let mut out: Vec<TokenTree> = Vec::with_capacity(toks.len());
    let punct =
        |k: usize, c: char| matches!(toks.get(k), Some(TokenTree::Punct(p)) if p.as_char() == c);
    let marked = |k: usize| match toks.get(k) {
        Some(TokenTree::Ident(i)) => names.iter().find(|n| *n == i),
        _ => None,
    };
    let mut k = 0;
    while k < toks.len() {
        match &toks[k] {
            TokenTree::Group(g) => {
                let mut n = proc_macro2::Group::new(g.delimiter(), rewrite(g.stream(), ty, names));
                n.set_span(g.span());
                out.push(TokenTree::Group(n));
            }
            TokenTree::Ident(i) if i == "self" && !(punct(k + 1, ':') && punct(k + 2, ':')) => {
                // `self.f(args)` of a marked `f`: `linad_m_t_f(__linad_self, args)`.
                let call = punct(k + 1, '.') && !punct(k + 2, '.');
                match (call, marked(k + 2), toks.get(k + 3)) {
                    (true, Some(f), Some(TokenTree::Group(args)))
                        if args.delimiter() == proc_macro2::Delimiter::Parenthesis =>
                    {
                        let free = mangled(ty, f);
                        let this = Ident::new(SELF, i.span());
                        let args = rewrite(args.stream(), ty, names);
                        let sep = (!args.is_empty()).then(|| quote!(,));
                        out.extend(quote_spanned!(f.span()=> #free(#this #sep #args)));
                        k += 4;
                        continue;
                    }
                    _ => out.push(TokenTree::Ident(Ident::new(SELF, i.span()))),
                }
            }
            TokenTree::Ident(i) if i == "Self" => {
                // `Self::f` of a marked `f`: its free function.
                if punct(k + 1, ':') && punct(k + 2, ':') {
                    if let Some(f) = marked(k + 3) {
                        out.push(TokenTree::Ident(mangled(ty, f)));
                        k += 4;
                        continue;
                    }
                }
                let mut t = ty.clone();
                t.set_span(i.span());
                out.push(TokenTree::Ident(t));
            }
            t => out.push(t.clone()),
        }
        k += 1;
    }
    out.into_iter().collect()
}

/// The public derivatives of method `m` as methods: for each public
/// derivative `linad_m_t_f_vjp` of its free function `free` in `expanded`, a
/// method `f_vjp` with its signature (the receiver back in place of the
/// first parameter, its tangent named `d_self`) calling it.
fn method_wrappers(
    free: &Ident,
    m: &syn::ImplItemFn,
    expanded: &TokenStream,
) -> Vec<syn::ImplItem> {
    let Ok(file) = syn::parse2::<syn::File>(expanded.clone()) else {
        return vec![];
    };
    let free = free.to_string();
    let method = syn::ext::IdentExt::unraw(&m.sig.ident).to_string();
    let receiver = matches!(m.sig.inputs.first(), Some(syn::FnArg::Receiver(_)));
    let d_self = format!("d_{SELF}");
    let mut out = vec![];
    for it in file.items {
        let syn::Item::Fn(g) = it else { continue };
        let name = g.sig.ident.to_string();
        let Some(suffix) = name.strip_prefix(&free).and_then(|s| s.strip_prefix('_')) else {
            continue;
        };
        if !PUBLIC.contains(&suffix) {
            continue;
        }
        let mut sig = g.sig.clone();
        sig.ident = Ident::new(&format!("{method}_{suffix}"), m.sig.ident.span());
        let mut args: Vec<TokenStream> = vec![];
        let mut inputs = syn::punctuated::Punctuated::<syn::FnArg, syn::Token![,]>::new();
        for (k, p) in g.sig.inputs.iter().enumerate() {
            let syn::FnArg::Typed(pt) = p else {
                return vec![];
            };
            let syn::Pat::Ident(pi) = &*pt.pat else {
                return vec![];
            };
            if k == 0 && receiver {
                let this = Ident::new("self", pi.ident.span());
                inputs.push(match &*pt.ty {
                    syn::Type::Reference(r) => {
                        let lt = &r.lifetime;
                        syn::parse_quote!(& #lt #this)
                    }
                    _ => syn::parse_quote!(#this),
                });
                args.push(this.into_token_stream());
                continue;
            }
            let mut pt = pt.clone();
            if pi.ident == d_self {
                let d = Ident::new("d_self", pi.ident.span());
                pt.pat = Box::new(syn::parse_quote!(#d));
                args.push(d.into_token_stream());
            } else {
                args.push(pi.ident.to_token_stream());
            }
            inputs.push(syn::FnArg::Typed(pt));
        }
        sig.inputs = inputs;
        let target = &g.sig.ident;
        let vis = &m.vis;
        let docs = g
            .attrs
            .iter()
            .filter(|a| a.path().is_ident("doc"))
            .map(|a| {
                let text = doc_text(a).replace(&free, &format!("Self::{method}"));
                quote!(#[doc = #text])
            });
        // A method compiled only in some configurations: its derivatives too.
        let cfgs = m.attrs.iter().filter(|a| a.path().is_ident("cfg"));
        let mid = &m.sig.ident;
        let wrapper = quote! {
            #(#cfgs)*
            #(#docs)*
            #[allow(dead_code, clippy::all)]
            #[inline]
            #vis #sig {
                // A private method called only through its derivatives
                // is used (as `emit::wrappers::primal_use` does).
                let _ = Self::#mid;
                #target(#(#args),*)
            }
        };
        if let Ok(w) = syn::parse2::<syn::ImplItem>(wrapper) {
            out.push(w);
        }
    }
    out
}

/// The text of a `#[doc = ".."]` attribute (empty for another form).
fn doc_text(a: &syn::Attribute) -> String {
    match &a.meta {
        syn::Meta::NameValue(nv) => match &nv.value {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) => s.value(),
            _ => String::new(),
        },
        _ => String::new(),
    }
}

/// `tokens` with the messages of their `compile_error!`s naming what the
/// user wrote: `self` for the free function's receiver parameter, the
/// method for the free function `free`.
fn renamed_errors(tokens: TokenStream, free: &str, method: &str) -> TokenStream {
    let rename = |t: TokenTree| match syn::parse2::<syn::LitStr>(t.clone().into()) {
        Ok(lit) => {
            let text = lit
                .value()
                .replace(&format!("d_{SELF}"), "d_self")
                .replace(SELF, "self")
                .replace(free, method);
            syn::LitStr::new(&text, lit.span()).into_token_stream()
        }
        Err(_) => t.into(),
    };
    let mut out = TokenStream::new();
    let mut in_error = false;
    for t in tokens {
        let t = match t {
            TokenTree::Group(g) => {
                let stream = if in_error {
                    g.stream().into_iter().map(rename).collect()
                } else {
                    renamed_errors(g.stream(), free, method)
                };
                let mut n = proc_macro2::Group::new(g.delimiter(), stream);
                n.set_span(g.span());
                TokenTree::Group(n)
            }
            t => t,
        };
        in_error = match &t {
            TokenTree::Ident(i) => i == "compile_error",
            TokenTree::Punct(p) => in_error && p.as_char() == '!',
            _ => false,
        };
        out.extend([t]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ident(s: &str) -> Ident {
        Ident::new(s, proc_macro2::Span::call_site())
    }

    #[test]
    fn names_are_snake_case() {
        let m = mangled(&ident("GaussMix"), &ident("loss"));
        assert_eq!(m.to_string(), "linad_m_gauss_mix_loss");
    }

    #[test]
    fn self_and_marked_calls_are_rewritten() {
        let names = [ident("scale")];
        let body = quote! {{
            let a = self.w + self.scale(x) + Self::scale(self, 2.0) + Self::K;
            let b = self::helper(self.other(x));
            a + b
        }};
        let out = rewrite(body, &ident("Model"), &names).to_string();
        let want = quote! {{
            let a = __linad_self.w + linad_m_model_scale(__linad_self, x)
                + linad_m_model_scale(__linad_self, 2.0) + Model::K;
            let b = self::helper(__linad_self.other(x));
            a + b
        }}
        .to_string();
        assert_eq!(out, want);
    }
}
