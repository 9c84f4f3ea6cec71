//! The headers (`vis fn name(params) -> output`) of the public derivatives,
//! one place for the generators (`wrappers.rs`, `closures.rs`) and for the
//! stubs emitted beside a refused function ([`stubs`]).
//!
//! ```text
//! fn f(x: f64, w: &Array1<f64>) -> f64
//! =>  pub fn f_jvp(x: f64, w: &Array1<f64>, d_x: f64, d_w: &Array1<f64>) -> (f64, f64)
//!     pub fn f_vjp(x: f64, w: &Array1<f64>, ct: f64) -> (f64, (f64, Array1<f64>))
//!     pub fn f_linearize(x: f64, w: &Array1<f64>) -> (f64, impl Fn(f64, &Array1<f64>) -> f64 + ..)
//!     pub fn f_pullback(x: f64, w: &Array1<f64>) -> (f64, impl Fn(f64) -> (f64, Array1<f64>) + ..)
//! ```

use super::types::flat;
use super::wrappers::{allows, ct_name, ct_ty, out_ty, tangent_names, tangent_ty, user_decls};
use crate::attr::Modes;
use crate::sig::Signature;
use crate::text::{text, Code};
use quote::ToTokens;

/// `vis fn f_jvp(x.., d_x..) -> (y, dy)`.
pub fn jvp(sig: &Signature) -> Code {
    super::paths::public(|| {
        let (vis, name) = (&sig.vis, crate::names::jvp(&sig.ident));
        let tangents = sig.wrt_params().zip(tangent_names(sig)).map(|(p, d)| {
            let t = &p.ty;
            text!(#d: #t)
        });
        let decls = user_decls(sig).into_iter().chain(tangents);
        let o = out_ty(&sig.out);
        text!(#vis fn #name(#(#decls),*) -> (#o, #o))
    })
}

/// `vis fn f_vjp(x.., ct) -> (y, cotangents)`.
pub fn vjp(sig: &Signature) -> Code {
    super::paths::public(|| {
        let (vis, name) = (&sig.vis, crate::names::vjp(&sig.ident));
        let (ct, t) = (ct_name(sig), ct_ty(&sig.out));
        let decls = user_decls(sig).into_iter().chain([text!(#ct: #t)]);
        let o = out_ty(&sig.out);
        let ct_ret = cotangents_ty(sig);
        text!(#vis fn #name(#(#decls),*) -> (#o, #ct_ret))
    })
}

/// `vis fn f_linearize(x..) -> (y, impl Fn(d_x..) -> dy)`.
pub fn linearize(sig: &Signature) -> Code {
    super::paths::public(|| {
        let (vis, name) = (&sig.vis, crate::names::linearize(&sig.ident));
        let decls = user_decls(sig);
        let dtys = sig.wrt_params().map(|p| &p.ty);
        let o = out_ty(&sig.out);
        text!(#vis fn #name(#(#decls),*)
            -> (#o, impl Fn(#(#dtys),*) -> #o + ::core::marker::Send + ::core::marker::Sync + use<>))
    })
}

/// `vis fn f_pullback(x..) -> (y, impl Fn(ct) -> cotangents)`.
pub fn pullback(sig: &Signature) -> Code {
    super::paths::public(|| {
        let (vis, name) = (&sig.vis, crate::names::pullback(&sig.ident));
        let decls = user_decls(sig);
        let (o, ct_t, ct_ret) = (out_ty(&sig.out), ct_ty(&sig.out), cotangents_ty(sig));
        text!(#vis fn #name(#(#decls),*)
            -> (#o, impl Fn(#ct_t) -> #ct_ret + ::core::marker::Send + ::core::marker::Sync + use<>))
    })
}

/// The cotangents' type: one per `wrt` parameter (a bare value for one).
pub(super) fn cotangents_ty(sig: &Signature) -> Code {
    let ctys: Vec<Code> = sig.wrt_params().map(tangent_ty).collect();
    flat(&ctys)
}

/// The public derivatives of a function the macro refused, with their real
/// signatures and bodies that never run (the crate does not compile: the
/// refusal is a `compile_error!`): a call of `f_vjp` elsewhere type-checks
/// against them, so the user sees the refusal alone, not also "cannot find
/// function `f_vjp`" at every call.
pub fn stubs(sig: &Signature, modes: Modes) -> Code {
    let allows = allows();
    let never = text!(::core::unreachable!());
    let mut out = Code::new();
    let closure = |tys: Vec<Code>, ret: Code| {
        text!({
            let __f = move |#(_: #tys),*| -> #ret { #never };
            (#never, __f)
        })
    };
    if modes.forward {
        let (j, l) = (jvp(sig), linearize(sig));
        let dtys = sig
            .wrt_params()
            .map(|p| Code::from(p.ty.to_token_stream()))
            .collect();
        let body = closure(dtys, out_ty(&sig.out));
        out.extend(text!(#allows #[doc(hidden)] #j { #never } #allows #[doc(hidden)] #l #body));
    }
    if modes.reverse {
        let (v, p) = (vjp(sig), pullback(sig));
        let body = closure(vec![ct_ty(&sig.out)], cotangents_ty(sig));
        out.extend(text!(#allows #[doc(hidden)] #v { #never } #allows #[doc(hidden)] #p #body));
    }
    out
}
