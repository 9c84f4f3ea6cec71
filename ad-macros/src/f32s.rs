//! `f32` functions: differentiated through an `f64` *shadow*.
//!
//! A function whose signature mentions `f32` is copied with every `f32`
//! (types, casts, `f32::consts`, `1.0f32` literals) read as `f64`; that
//! shadow goes through the whole pipeline, and the public companions convert
//! `f32` arguments and tangents to `f64`, call the shadow's companions, and
//! round the derivatives back to `f32`. The primal result they return is
//! the user's own function's (so it is bit-identical to `f`); the
//! derivatives are those of the `f64` computation at the same point, exact
//! to `f32` precision and better.
//!
//! ```text
//! #[differentiable]                    fn __linad_f64_f(x: f64, w: &Array1<f64>) -> f64 { (w * x).sum() }
//! fn f(x: f32, w: &Array1<f32>)        pub fn f_vjp(x: f32, w: &Array1<f32>, ct: f32) -> (f32, (f32, Array1<f32>)) {
//!     -> f32 { (w * x).sum() }             let (_, (g0, g1)) = __linad_f64_f_vjp(x as f64, &w.mapv(|v| v as f64), ct as f64);
//!                                          (f(x, w), (g0 as f32, g1.mapv(|v| v as f32)))
//!                                      }
//! ```
//!
//! Where `f`'s control flow depends on `f32` rounding (a comparison that
//! rounds differently in `f64`), the derivative is the shadow's branch's.

use crate::attr::Args;
use crate::emit::allows;
use crate::lower;
use crate::sig::Signature;
use proc_macro2::{TokenStream, TokenTree};
use quote::{format_ident, quote, ToTokens};

/// The name of the `f64` shadow of `f` is this prefix then `f`.
pub const SHADOW_PREFIX: &str = "__linad_f64_";

/// Whether `ts[k]` is the type `f32` (`x as f32`, `Array1<f32>`,
/// `f32::consts::PI`), not a function or method of that name (`f32(x)`,
/// `fn f32`, `v.f32()`).
fn is_f32_type(ts: &[TokenTree], k: usize) -> bool {
    let TokenTree::Ident(i) = &ts[k] else {
        return false;
    };
    let called = matches!(ts.get(k + 1), Some(TokenTree::Group(g)) if g.delimiter() == proc_macro2::Delimiter::Parenthesis);
    let named = k > 0
        && match &ts[k - 1] {
            TokenTree::Punct(p) => p.as_char() == '.',
            TokenTree::Ident(f) => f == "fn",
            _ => false,
        };
    i == "f32" && !called && !named
}

/// `tokens` with the type `f32` read as `f64` (identifiers and literal
/// suffixes; functions named `f32` keep their name).
pub fn to_f64(tokens: TokenStream) -> TokenStream {
    let ts: Vec<TokenTree> = tokens.into_iter().collect();
    (0..ts.len())
        .map(|k| match &ts[k] {
            TokenTree::Ident(i) if is_f32_type(&ts, k) => {
                TokenTree::Ident(syn::Ident::new("f64", i.span()))
            }
            TokenTree::Literal(l) => {
                let s = l.to_string();
                match s.strip_suffix("f32") {
                    Some(body) if !s.starts_with('"') && !s.starts_with('\'') => {
                        match format!("{body}f64").parse::<proc_macro2::Literal>() {
                            Ok(mut n) => {
                                n.set_span(l.span());
                                TokenTree::Literal(n)
                            }
                            Err(_) => TokenTree::Literal(l.clone()),
                        }
                    }
                    _ => TokenTree::Literal(l.clone()),
                }
            }
            TokenTree::Group(g) => {
                let mut n = proc_macro2::Group::new(g.delimiter(), to_f64(g.stream()));
                n.set_span(g.span());
                TokenTree::Group(n)
            }
            t => t.clone(),
        })
        .collect()
}

/// Whether tokens mention the type `f32` (see [`to_f64`]).
pub fn mentions_f32(tokens: TokenStream) -> bool {
    let ts: Vec<TokenTree> = tokens.into_iter().collect();
    (0..ts.len()).any(|k| match &ts[k] {
        TokenTree::Group(g) => mentions_f32(g.stream()),
        _ => is_f32_type(&ts, k),
    })
}

/// If `func` mentions the type `f32` ([`mentions_f32`]: a function may be
/// called `f32`, or call one), its expansion through an `f64` shadow (see
/// the module doc); `None` otherwise.
pub fn expand(
    args: &Args,
    attr: &TokenStream,
    func: &syn::ItemFn,
) -> Option<Result<TokenStream, Vec<syn::Error>>> {
    mentions_f32(func.to_token_stream()).then(|| expand_shadow(args, attr, func))
}

fn expand_shadow(
    args: &Args,
    attr: &TokenStream,
    func: &syn::ItemFn,
) -> Result<TokenStream, Vec<syn::Error>> {
    let companions = companions(args, attr, func)?;
    Ok(quote! {
        #func
        #companions
    })
}

/// Everything `f32` function `func` generates besides itself: its `f64`
/// shadow, the shadow's companions and `func`'s own (see the module doc).
/// The flat function of a struct-taking function with `f32` fields comes
/// here too (`structs.rs`).
pub fn companions(
    args: &Args,
    attr: &TokenStream,
    func: &syn::ItemFn,
) -> Result<TokenStream, Vec<syn::Error>> {
    let mut shadow: syn::ItemFn =
        syn::parse2(to_f64(func.to_token_stream())).map_err(|e| vec![e])?;
    // Lints, and the function's own `#[cfg]` (which gates its companions).
    shadow.attrs.retain(|a| {
        let p = a.path();
        p.is_ident("allow") || p.is_ident("cfg") || p.is_ident("cfg_attr")
    });
    shadow.attrs.push(syn::parse_quote!(#[doc(hidden)]));
    // Code only where called, as every generated function.
    shadow.attrs.push(syn::parse_quote!(#[inline]));
    let user = syn::ext::IdentExt::unraw(&func.sig.ident).to_string();
    shadow.sig.ident = format_ident!("{SHADOW_PREFIX}{user}");
    // It is compiled too: its calls of `f32` functions go to their shadows,
    // struct results are read as tuples (a flat function's body already
    // is).
    call_shadows(&mut shadow);
    if !crate::struct_results::made_rewritten(func) {
        crate::struct_results::rewrite(&mut shadow)?;
    }
    let shadow_name = shadow.sig.ident.to_string();
    let reword = |es: Vec<syn::Error>| -> Vec<syn::Error> {
        es.into_iter()
            .map(|e| {
                let mut out: Option<syn::Error> = None;
                for one in e {
                    let e =
                        syn::Error::new(one.span(), one.to_string().replace(&shadow_name, &user));
                    match &mut out {
                        None => out = Some(e),
                        Some(o) => o.combine(e),
                    }
                }
                out.expect("an error has a message")
            })
            .collect()
    };
    // The shadow goes through everything a function does (struct
    // parameters included).
    let generated = match crate::structs::expand(args, &shadow) {
        Some(r) => r.map_err(reword)?,
        None => crate::expand::generate_checked(attr.clone(), &shadow).map_err(reword)?,
    };
    let wrt = args.wrt_idents().map_err(|e| vec![e])?;
    let sig = lower::signature(&shadow, wrt.as_deref()).map_err(reword)?;
    let modes = args.modes().map_err(|e| vec![e])?;
    let wrappers = Wrappers { func, sig: &sig }.all(args.dump.is_present(), modes);
    let wrappers = match crate::cfg::own_cond(func) {
        Some(c) => crate::cfg::gate(wrappers, &c),
        None => wrappers,
    };
    let allow = allows();
    Ok(quote! {
        #allow
        #shadow
        #generated
        #wrappers
    })
}

/// How a value of a user type converts to and from its `f64` version.
enum Conv {
    /// Not `f32`: passed as is (cloned where both `f` and the shadow need
    /// an owned value).
    Same { owned: bool },
    /// `f32`.
    Scalar,
    /// A tuple of `f32`s.
    Tuple(usize),
    /// An `f32` array: owned (`ArrayN<f32>`), by reference, or a view.
    Array(Passing),
    /// `&[f32]`, `&Vec<f32>`, `Vec<f32>`.
    Slice(Passing),
    /// `[f32; N]`, `&[f32; N]`.
    Fixed(Passing),
}

#[derive(Clone, Copy, PartialEq)]
enum Passing {
    Owned,
    Ref,
    View,
}

fn conv(ty: &syn::Type) -> Conv {
    if !mentions_f32(ty.to_token_stream()) {
        let owned = !matches!(ty, syn::Type::Reference(_))
            && matches!(ty, syn::Type::Path(p) if p.path.segments.last().is_some_and(|s| {
                let n = s.ident.to_string();
                n.starts_with("Array") && !n.starts_with("ArrayView") || n == "Vec"
            }));
        return Conv::Same { owned };
    }
    match ty {
        syn::Type::Tuple(t) => Conv::Tuple(t.elems.len()),
        syn::Type::Array(_) => Conv::Fixed(Passing::Owned),
        syn::Type::Reference(r) => match &*r.elem {
            syn::Type::Slice(_) => Conv::Slice(Passing::Ref),
            syn::Type::Array(_) => Conv::Fixed(Passing::Ref),
            syn::Type::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == "Vec") => {
                Conv::Slice(Passing::Ref)
            }
            _ => Conv::Array(Passing::Ref),
        },
        syn::Type::Path(p) => {
            let n = p
                .path
                .segments
                .last()
                .map(|s| s.ident.to_string())
                .unwrap_or_default();
            if n == "f32" {
                Conv::Scalar
            } else if n == "Vec" {
                Conv::Slice(Passing::Owned)
            } else if n.starts_with("ArrayView") {
                Conv::Array(Passing::View)
            } else {
                Conv::Array(Passing::Owned)
            }
        }
        _ => Conv::Scalar,
    }
}

/// `(statements binding a temporary, the argument)` giving the shadow the
/// `f64` version of `x` of type `ty`.
fn to_shadow(x: &TokenStream, ty: &syn::Type, tmp: &syn::Ident) -> (TokenStream, TokenStream) {
    match conv(ty) {
        Conv::Same { owned: true } => (quote!(), quote!(::core::clone::Clone::clone(&#x))),
        Conv::Same { owned: false } => (quote!(), x.clone()),
        Conv::Scalar => (quote!(), quote!((#x as f64))),
        Conv::Tuple(n) => {
            let parts = (0..n).map(syn::Index::from);
            (quote!(), quote!((#((#x.#parts as f64),)*)))
        }
        Conv::Array(p) => {
            let bind = quote!(let #tmp = #x.mapv(|__v| __v as f64););
            let arg = match p {
                Passing::Owned => quote!(#tmp),
                Passing::Ref => quote!(&#tmp),
                Passing::View => quote!(#tmp.view()),
            };
            (bind, arg)
        }
        Conv::Fixed(p) => {
            let bind =
                quote!(let #tmp = ::core::array::from_fn::<f64, _, _>(|__i| #x[__i] as f64););
            let arg = match p {
                Passing::Owned | Passing::View => quote!(#tmp),
                Passing::Ref => quote!(&#tmp),
            };
            (bind, arg)
        }
        Conv::Slice(p) => {
            let bind = quote!(let #tmp: ::std::vec::Vec<f64> = #x.iter().map(|__v| *__v as f64).collect(););
            let arg = match p {
                Passing::Owned => quote!(#tmp),
                Passing::Ref | Passing::View => quote!(&#tmp),
            };
            (bind, arg)
        }
    }
}

/// The user's (owned) version of an `f64` result `v` whose user type is
/// `ty` (a result, tangent or cotangent; references count as owned).
fn from_shadow(v: &TokenStream, ty: &syn::Type) -> TokenStream {
    match ty {
        syn::Type::Tuple(t) => {
            let parts: Vec<TokenStream> = t
                .elems
                .iter()
                .enumerate()
                .map(|(k, e)| {
                    let i = syn::Index::from(k);
                    from_shadow(&quote!(#v.#i), e)
                })
                .collect();
            quote!((#(#parts,)*))
        }
        _ => match conv(ty) {
            Conv::Same { .. } => v.clone(),
            Conv::Scalar => quote!((#v as f32)),
            Conv::Tuple(_) => v.clone(),
            Conv::Array(_) => quote!(#v.mapv(|__v| __v as f32)),
            Conv::Fixed(_) => quote!(#v.map(|__v| __v as f32)),
            Conv::Slice(_) => {
                quote!(#v.iter().map(|__v| *__v as f32).collect::<::std::vec::Vec<f32>>())
            }
        },
    }
}

/// The owned cotangent type of a parameter of user type `ty`: arrays
/// owned (`ArrayViewN<'_, T>` gives `::linad::ndarray::ArrayN<T>`, named
/// by its full path: the user's module may import the view type alone;
/// `&ArrayN<T>` gives the type as written), slices and `Vec`s a `Vec`.
pub fn cotangent_ty(ty: &syn::Type) -> TokenStream {
    let elem = if mentions_f32(ty.to_token_stream()) {
        quote!(f32)
    } else {
        quote!(f64)
    };
    match ty {
        syn::Type::Reference(r) => match &*r.elem {
            syn::Type::Slice(_) => quote!(::std::vec::Vec<#elem>),
            t => cotangent_ty(t),
        },
        syn::Type::Path(p) => {
            let Some(last) = p.path.segments.last() else {
                return quote!(#p);
            };
            let n = last.ident.to_string();
            let Some(rank) = n.strip_prefix("ArrayView") else {
                return quote!(#p);
            };
            let nd = quote!(::linad::ndarray);
            if rank.is_empty() {
                // `ArrayView<'_, T, D>`: the owned `Array<T, D>`.
                let dim = match &last.arguments {
                    syn::PathArguments::AngleBracketed(a) => {
                        a.args.iter().rev().find_map(|g| match g {
                            syn::GenericArgument::Type(t) => Some(t),
                            _ => None,
                        })
                    }
                    _ => None,
                };
                return match dim {
                    Some(d) => quote!(#nd::Array<#elem, #d>),
                    None => quote!(#p),
                };
            }
            let owned = format_ident!("Array{}", rank);
            quote!(#nd::#owned<#elem>)
        }
        t => quote!(#t),
    }
}

/// The type of the output cotangent parameter for an output of user type
/// `t`: arrays by reference, as the companions take cotangents.
pub fn ct_ty(t: &syn::Type) -> TokenStream {
    match t {
        syn::Type::Tuple(tt) => {
            let parts = tt.elems.iter().map(ct_ty);
            quote!((#(#parts,)*))
        }
        syn::Type::Path(p)
            if p.path
                .segments
                .last()
                .is_some_and(|s| s.ident.to_string().starts_with("Array")) =>
        {
            quote!(&#t)
        }
        t => quote!(#t),
    }
}

/// The user-facing companions of an `f32` function.
struct Wrappers<'a> {
    func: &'a syn::ItemFn,
    /// The shadow's signature (parameter kinds, `wrt`).
    sig: &'a Signature,
}

impl Wrappers<'_> {
    fn all(&self, dump: bool, modes: crate::attr::Modes) -> TokenStream {
        let mut out = modes.select(
            || [self.jvp(), self.linearize()].into_iter().collect(),
            || [self.vjp(), self.pullback()].into_iter().collect(),
        );
        if dump {
            out.extend(crate::names::dump_forwarder(
                self.func,
                &self.sig.ident,
                "the function's `f64` shadow",
            ));
        }
        out
    }

    /// The user's parameters: (name, type as written).
    fn params(&self) -> Vec<(syn::Ident, syn::Type)> {
        self.func
            .sig
            .inputs
            .iter()
            .filter_map(|a| match a {
                syn::FnArg::Typed(pt) => match &*pt.pat {
                    syn::Pat::Ident(pi) => Some((pi.ident.clone(), (*pt.ty).clone())),
                    _ => None,
                },
                syn::FnArg::Receiver(_) => None,
            })
            .collect()
    }

    /// The differentiated parameters, in order.
    fn wrt(&self) -> Vec<(syn::Ident, syn::Type)> {
        let ps = self.params();
        ps.into_iter()
            .filter(|(id, _)| self.sig.params.iter().any(|p| p.ident == *id && p.wrt))
            .collect()
    }

    fn taken(&self) -> Vec<String> {
        self.params()
            .iter()
            .map(|(i, _)| syn::ext::IdentExt::unraw(i).to_string())
            .collect()
    }

    fn decls(&self) -> Vec<TokenStream> {
        self.params().iter().map(|(n, t)| quote!(#n: #t)).collect()
    }

    /// Conversions of the parameters for the shadow, and the arguments.
    fn shadow_args(&self) -> (TokenStream, Vec<TokenStream>) {
        let mut binds = TokenStream::new();
        let mut args = vec![];
        for (k, (id, ty)) in self.params().iter().enumerate() {
            let tmp = format_ident!("__linad_a{k}");
            let (b, a) = to_shadow(&quote!(#id), ty, &tmp);
            binds.extend(b);
            args.push(a);
        }
        (binds, args)
    }

    /// The user function called on the parameters (the primal result).
    fn primal(&self) -> TokenStream {
        let f = &self.func.sig.ident;
        let names = self.params().into_iter().map(|(i, _)| i);
        quote!(#f(#(#names),*))
    }

    fn out_ty(&self) -> syn::Type {
        match &self.func.sig.output {
            syn::ReturnType::Type(_, t) => (**t).clone(),
            syn::ReturnType::Default => syn::parse_quote!(()),
        }
    }

    /// The tangent names, and conversions of the tangents for the shadow
    /// with the arguments.
    fn tangents(&self) -> (Vec<(syn::Ident, syn::Type)>, TokenStream, Vec<TokenStream>) {
        let taken = self.taken();
        let mut names = vec![];
        let mut binds = TokenStream::new();
        let mut args = vec![];
        for (k, (id, ty)) in self.wrt().iter().enumerate() {
            let d = crate::names::tangent(id, &taken);
            let tmp = format_ident!("__linad_d{k}");
            let (b, a) = to_shadow(&quote!(#d), ty, &tmp);
            binds.extend(b);
            args.push(a);
            names.push((d, ty.clone()));
        }
        (names, binds, args)
    }

    fn ct(&self) -> (syn::Ident, TokenStream, TokenStream, TokenStream) {
        let ct = crate::names::ct_param(&self.taken());
        let o = self.out_ty();
        fn conv_ct(x: &TokenStream, t: &syn::Type) -> TokenStream {
            match t {
                syn::Type::Tuple(tt) => {
                    let parts = tt.elems.iter().enumerate().map(|(k, e)| {
                        let i = syn::Index::from(k);
                        conv_ct(&quote!(#x.#i), e)
                    });
                    quote!((#(#parts,)*))
                }
                t if !mentions_f32(t.to_token_stream()) => x.clone(),
                syn::Type::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == "f32") => {
                    quote!((#x as f64))
                }
                syn::Type::Array(_) => quote!(#x.map(|__v| __v as f64)),
                _ => quote!(&#x.mapv(|__v| __v as f64)),
            }
        }
        let t = ct_ty(&o);
        let c = conv_ct(&quote!(#ct), &o);
        let rt = {
            let tys: Vec<TokenStream> = self.wrt().iter().map(|(_, t)| cotangent_ty(t)).collect();
            match tys.as_slice() {
                [one] => one.clone(),
                _ => quote!((#(#tys),*)),
            }
        };
        (ct, t, c, rt)
    }

    /// The user's cotangents from the shadow's bound to `g`.
    fn cotangents(&self, g: &TokenStream) -> TokenStream {
        let wrt = self.wrt();
        if let [(_, t)] = wrt.as_slice() {
            return from_shadow(g, t);
        }
        let parts = wrt.iter().enumerate().map(|(k, (_, t))| {
            let i = syn::Index::from(k);
            from_shadow(&quote!(#g.#i), t)
        });
        quote!((#(#parts),*))
    }

    fn jvp(&self) -> TokenStream {
        let (vis, f) = (&self.func.vis, &self.func.sig.ident);
        let (name, inner) = (crate::names::jvp(f), crate::names::jvp(&self.sig.ident));
        let (pb, pa) = self.shadow_args();
        let (ds, db, da) = self.tangents();
        let dd = ds.iter().map(|(d, t)| quote!(#d: #t));
        let o = self.out_ty();
        let dy = from_shadow(&quote!(__linad_r.1), &o);
        let (decls, primal) = (self.decls(), self.primal());
        let fname = name.to_string();
        let checks: TokenStream = self
            .wrt()
            .iter()
            .zip(&ds)
            .map(|((x, t), (d, _))| crate::structs::tangent_shape_check(&fname, x, d, t))
            .collect();
        let doc = format!(" Forward-mode derivative of [`{f}`]: `({f}(..), tangent)`; the tangent is computed in `f64` and rounded to the parameters' float types.");
        let allows = allows();
        quote! {
            #[doc = #doc]
            #allows
            #[inline]
            #vis fn #name(#(#decls,)* #(#dd),*) -> (#o, #o) {
                #checks
                #pb
                #db
                let __linad_r = #inner(#(#pa,)* #(#da),*);
                (#primal, #dy)
            }
        }
    }

    fn vjp(&self) -> TokenStream {
        let (vis, f) = (&self.func.vis, &self.func.sig.ident);
        let (name, inner) = (crate::names::vjp(f), crate::names::vjp(&self.sig.ident));
        let (pb, pa) = self.shadow_args();
        let (ct, ctt, ctc, rt) = self.ct();
        let o = self.out_ty();
        let g = self.cotangents(&quote!(__linad_r.1));
        let (decls, primal) = (self.decls(), self.primal());
        let doc = format!(" Reverse-mode derivative of [`{f}`]: `({f}(..), cotangents)`; the cotangents are computed in `f64` and rounded to the parameters' float types.");
        let allows = allows();
        quote! {
            #[doc = #doc]
            #allows
            #[inline]
            #vis fn #name(#(#decls,)* #ct: #ctt) -> (#o, #rt) {
                #pb
                let __linad_r = #inner(#(#pa,)* #ctc);
                (#primal, #g)
            }
        }
    }

    fn linearize(&self) -> TokenStream {
        let (vis, f) = (&self.func.vis, &self.func.sig.ident);
        let (name, inner) = (
            crate::names::linearize(f),
            crate::names::linearize(&self.sig.ident),
        );
        let (pb, pa) = self.shadow_args();
        let (ds, db, da) = self.tangents();
        let dd: Vec<TokenStream> = ds.iter().map(|(d, t)| quote!(#d: #t)).collect();
        let dtys = ds.iter().map(|(_, t)| t);
        let o = self.out_ty();
        // The linear map runs once; a tuple output is rounded part by part.
        let dy = from_shadow(&quote!(__linad_dy), &o);
        let (decls, primal) = (self.decls(), self.primal());
        let doc = format!(" Linearisation of [`{f}`]: `({f}(..), jvp)`, the linear map of the `f64` computation, its results rounded to the output's float types.");
        let allows = allows();
        quote! {
            #[doc = #doc]
            #allows
            #[inline]
            #vis fn #name(#(#decls),*)
                -> (#o, impl Fn(#(#dtys),*) -> #o + ::core::marker::Send + ::core::marker::Sync + use<>)
            {
                #pb
                let (_, __linad_l) = #inner(#(#pa),*);
                (#primal, move |#(#dd),*| -> #o {
                    #db
                    let __linad_dy = __linad_l(#(#da),*);
                    #dy
                })
            }
        }
    }

    fn pullback(&self) -> TokenStream {
        let (vis, f) = (&self.func.vis, &self.func.sig.ident);
        let (name, inner) = (
            crate::names::pullback(f),
            crate::names::pullback(&self.sig.ident),
        );
        let (pb, pa) = self.shadow_args();
        let (ct, ctt, ctc, rt) = self.ct();
        let o = self.out_ty();
        let g = self.cotangents(&quote!(__linad_g));
        let (decls, primal) = (self.decls(), self.primal());
        let doc = format!(" Pullback of [`{f}`]: `({f}(..), vjp)`, the transposed linear map of the `f64` computation, its cotangents rounded to the parameters' float types.");
        let allows = allows();
        quote! {
            #[doc = #doc]
            #allows
            #[inline]
            #vis fn #name(#(#decls),*)
                -> (#o, impl Fn(#ctt) -> #rt + ::core::marker::Send + ::core::marker::Sync + use<>)
            {
                #pb
                let (_, __linad_pb) = #inner(#(#pa),*);
                (#primal, move |#ct: #ctt| -> #rt { let __linad_g = __linad_pb(#ctc); #g })
            }
        }
    }
}

/// Calls of differentiable functions of the crate that mention `f32`
/// become calls of their `f64` shadows (which carry the building blocks
/// callers use): applied to every function before it is lowered.
pub fn call_shadows(func: &mut syn::ItemFn) {
    struct Calls;
    impl syn::visit_mut::VisitMut for Calls {
        fn visit_expr_call_mut(&mut self, c: &mut syn::ExprCall) {
            syn::visit_mut::visit_expr_call_mut(self, c);
            if let syn::Expr::Path(p) = &mut *c.func {
                if let Some(last) = p.path.segments.last_mut() {
                    let name = syn::ext::IdentExt::unraw(&last.ident).to_string();
                    let shadowed = crate::crate_fns::lookup(&name)
                        .is_some_and(|i| i.differentiable && i.uses_f32);
                    if shadowed {
                        last.ident =
                            format_ident!("{SHADOW_PREFIX}{name}", span = last.ident.span());
                    }
                }
            }
        }
        fn visit_item_mut(&mut self, _: &mut syn::Item) {}
    }
    syn::visit_mut::VisitMut::visit_block_mut(&mut Calls, &mut func.block);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f32_reads_as_f64() {
        let t = to_f64(quote!(
            fn f(x: f32) -> f32 {
                let y: Array1<f32> = a.mapv(|v| v as f32);
                1.5f32 * f32::consts::PI * x
            }
        ));
        let s = t.to_string();
        assert!(!s.contains("f32"), "{s}");
        assert!(s.contains("1.5f64"), "{s}");
    }
}
