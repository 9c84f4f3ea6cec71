//! `f_transpose` of a `#[linear(x..)]` function: the transpose of `f` in its
//! linear parameters, taking the other parameters and a cotangent of `f`'s
//! output and returning the cotangents of the linear parameters.
//!
//! The Linear A form of `f` (`ad_core_ir::linear_form`) has the sizes of its
//! linear arrays as extra `i64` parameters; `ad_core_ir::linear_shapes` says
//! where each comes from (a parameter's shape or the cotangent's), and the
//! wrapper computes them first:
//!
//! ```text
//! fn matvec_transpose(a, ct) {
//!     let len_x_0 = a.shape()[1];
//!     let r.. = fwd(a, len_x_0);        // the non-linear part, once
//!     lin_t(r..; ct)                    // the transposed linear part
//! }
//! ```

use super::func::{body, Ctx, R};
use super::names::ident;
use super::types::{flat, Repr};
use super::wrappers::{
    allows, check, convert_param, ct_ty, func, nested_fns, out_pattern, tangent_ty, temps,
};
use crate::lower::Callee;
use crate::sig::{Param, Signature};
use ad_core_ir::driver::Derivatives;
use ad_core_ir::linear_shapes::ShapeSource;
use proc_macro2::TokenStream;
use quote::quote;

/// `f_transpose(<non-linear parameters>, ct) -> <cotangents of the linear ones>`.
pub fn f_transpose(
    sig: &Signature,
    linear: &[bool],
    d: &Derivatives,
    callees: &[Callee],
    sizes: &[ShapeSource],
) -> TokenStream {
    match emit(sig, linear, d, callees, sizes) {
        Ok(ts) => ts,
        Err(msg) => {
            let msg = format!("linad internal compiler error (please report it): emitter: {msg}");
            let span = sig.ident.span();
            quote::quote_spanned!(span=> ::core::compile_error!(#msg);)
        }
    }
}

fn emit(
    sig: &Signature,
    linear: &[bool],
    d: &Derivatives,
    callees: &[Callee],
    sizes: &[ShapeSource],
) -> R<TokenStream> {
    let name = crate::names::transpose(&sig.ident);
    let cx = Ctx::new(&d.program, callees);
    let fwd = func(cx.prog, &d.names.fwd)?;
    let lin_t = func(cx.prog, &d.names.lin_t)?;
    let consts: Vec<&Param> = sig
        .params
        .iter()
        .zip(linear)
        .filter(|(_, l)| !**l)
        .map(|(p, _)| p)
        .collect();
    let lins: Vec<&Param> = sig
        .params
        .iter()
        .zip(linear)
        .filter(|(_, l)| **l)
        .map(|(p, _)| p)
        .collect();
    let n_out = sig.out.ir_tys().len();
    check(
        fwd.params.len() == consts.len() + sizes.len()
            && d.n_results == 0
            && lin_t.lin_params.len() == n_out
            && lin_t.body.lin_results.len() == lins.len(),
        || {
            format!(
                "`{}` / `{}` do not match the signature",
                fwd.name, lin_t.name
            )
        },
    )?;
    let mut leaves = vec![];
    let ct_pat = out_pattern(&sig.out, &mut leaves);
    let ct = super::wrappers::ct_name(sig);
    // The sizes of the linear arrays.
    let mut size_stmts = TokenStream::new();
    let mut params: Vec<(TokenStream, Repr)> = consts
        .iter()
        .map(|p| convert_param(&p.ident, &p.kind))
        .collect();
    for (k, src) in sizes.iter().enumerate() {
        let n = ident(&format!("__len{k}"));
        let value = match *src {
            ShapeSource::Param(i, axis) => {
                let p = consts.get(i).ok_or("a size from a missing parameter")?;
                let v = super::wrappers::shaped(&p.ident, &p.kind);
                quote!(#v.shape()[#axis] as i64)
            }
            ShapeSource::Result(j, axis) => {
                let (leaf, _) = leaves.get(j).ok_or("a size from a missing result")?;
                quote!(#leaf.shape()[#axis] as i64)
            }
            ShapeSource::Const(c) => quote!(#c),
        };
        size_stmts.extend(quote!(let #n: i64 = #value;));
        params.push((quote!(#n), Repr::Val));
    }
    let (fb, freprs) = body(&cx, fwd, params, vec![], true)?;
    let (ys, ypat) = temps("r", fwd.body.results.len());
    let resid: Vec<(TokenStream, Repr)> = ys
        .iter()
        .zip(&freprs)
        .map(|(y, r)| (quote!(#y), *r))
        .collect();
    let cts = super::wrappers::ct_params(&leaves);
    let (tb, treprs) = body(&cx, lin_t, resid, cts, true)?;
    let nested = nested_fns(&cx)?;
    let (cs, cpat) = temps("c", lins.len());
    let c = super::wrappers::cotangents(&cs, &treprs, &lins);
    let decls = consts.iter().map(|p| {
        let (n, t) = (&p.ident, &p.ty);
        quote!(#n: #t)
    });
    let ct_t = ct_ty(&sig.out);
    let ret: Vec<TokenStream> = lins.iter().map(|p| tangent_ty(p)).collect();
    let ret = flat(&ret);
    let (vis, fname) = (&sig.vis, &sig.ident);
    let lin_names: Vec<String> = lins.iter().map(|p| format!("`{}`", p.ident)).collect();
    let doc = format!(
        " Transpose of the linear function [`{fname}`] in {}: for a cotangent `ct` of its \
         output, the cotangents of those parameters, in order (a bare value for one), so that \
         `<ct, {fname}(.., x, ..)> = <{fname}_transpose(.., ct), x>`.",
        lin_names.join(", ")
    );
    let allows = allows();
    Ok(quote! {
        #[doc = #doc]
        #allows
        #vis fn #name(#(#decls,)* #ct: #ct_t) -> #ret {
            #nested
            let #ct_pat = #ct;
            #size_stmts
            let #ypat = #fb;
            let #cpat = #tb;
            #c
        }
    })
}
