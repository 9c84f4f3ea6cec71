//! `f_linearize` and `f_pullback`: the primal result and the linear map (or
//! its transpose) closed over the residuals.
//!
//! Both run the forward half of the unzipped program (`fwd`: the primal and
//! its residuals) once, turn every residual into an owned value (a residual
//! that is a view of a parameter is copied, so the closure borrows nothing
//! from the caller), and return a `move` closure whose body is the linear
//! half (`lin` for `f_linearize`, `lin_t` for `f_pullback`) reading those
//! residuals through views. A call of the closure therefore costs one tangent
//! (or one reverse) evaluation and never re-runs the primal:
//!
//! ```text
//! f_linearize(x) = let (y, r) = fwd(x) in (y, |dx| lin(r; dx))
//! f_pullback(x)  = let (y, r) = fwd(x) in (y, |ct| lin_t(r; ct))
//! ```
//!
//! The closures check, as `f_jvp` and `f_vjp` do, that array tangents have
//! their primal's shape and array cotangents their result's shape (the
//! shapes are recorded when the closure is made).

use super::func::{body, Ctx, R};
use super::names::ident;
use super::types::{canonical_repr, flat, Repr};
use super::wrappers::{
    allows, check, convert_param, cotangents, ct_name, ct_params, ct_ty, func, leaf_paths, nest,
    nested_fns, out_pattern, out_ty, owned, param_names, shaped, tangent_ty, temps,
};
use super::Input;
use crate::sig::{Out, Param, ParamKind};
use ad_core_ir::ir::Func;
use ad_core_ir::types::Ty;
use proc_macro2::{Ident, TokenStream};
use quote::quote;

/// The forward half, run once: `let (y.., r..) = fwd(params);` followed by
/// owned copies of the residuals, and the residuals as the linear half's
/// parameters (arrays read through views of the owned copies).
struct Forward {
    /// Statements computing the results `__y0..` and owned residuals `__r0..`.
    stmts: TokenStream,
    /// The primal results' temporaries and representations.
    ys: Vec<(Ident, Repr)>,
    /// The residuals as parameters of the linear half.
    resid: Vec<(TokenStream, Repr)>,
}

fn forward(input: &Input, cx: &Ctx, half: &Func) -> R<Forward> {
    let sig = input.sig;
    let d = input.user;
    let fwd = func(cx.prog, &d.names.fwd)?;
    let n_out = sig.out.ir_tys().len();
    let n_res = fwd.body.results.len();
    check(
        fwd.params.len() == sig.params.len()
            && d.n_results == n_out
            && half.params.len() == n_res - n_out,
        || format!("`{}` does not match `{}`", half.name, fwd.name),
    )?;
    let params: Vec<_> = sig
        .params
        .iter()
        .map(|p| convert_param(&p.ident, &p.kind))
        .collect();
    let (fb, freprs) = body(cx, fwd, params, vec![], true)?;
    let (ys, ypat) = temps("y", n_res);
    let mut stmts = quote!(let #ypat = #fb;);
    let mut resid = vec![];
    for (k, (y, r)) in ys[n_out..].iter().zip(&freprs[n_out..]).enumerate() {
        let rk = ident(&format!("__r{k}"));
        let ty = half.vars.ty(half.params[k]);
        stmts.extend(match r {
            Repr::View => quote!(let #rk = #y.to_owned();),
            Repr::Owned | Repr::Val => quote!(let #rk = #y;),
        });
        resid.push(match (ty, canonical_repr(ty)) {
            (Ty::Array { .. }, _) => (quote!(#rk.view()), Repr::View),
            (_, Repr::Val) => (quote!(#rk), Repr::Val),
            (_, _) => (quote!(#rk.clone()), Repr::Owned),
        });
    }
    let ys = ys[..n_out]
        .iter()
        .cloned()
        .zip(freprs[..n_out].iter().copied())
        .collect();
    Ok(Forward { stmts, ys, resid })
}

/// The primal result, nested as the signature says.
fn primal_result(fw: &Forward, o: &Out) -> R<TokenStream> {
    let vals: Vec<TokenStream> = fw.ys.iter().map(|(t, r)| owned(t, *r)).collect();
    nest(o, &mut vals.into_iter())
}

/// `f_linearize(x..) -> (y, impl Fn(d_x..) -> dy)`.
pub fn f_linearize(input: &Input, cx: &Ctx) -> R<TokenStream> {
    let sig = input.sig;
    let lin = func(cx.prog, &input.user.names.lin)?;
    let wrt: Vec<&Param> = sig.wrt_params().collect();
    let n_out = sig.out.ir_tys().len();
    check(
        lin.lin_params.len() == wrt.len()
            && lin.body.results.is_empty()
            && lin.body.lin_results.len() == n_out,
        || format!("`{}` does not take the signature's tangents", lin.name),
    )?;
    let fw = forward(input, cx, lin)?;
    let dnames: Vec<Ident> = wrt
        .iter()
        .map(|p| crate::names::tangent(&p.ident, &param_names(sig)))
        .collect();
    let lparams: Vec<_> = wrt
        .iter()
        .zip(&dnames)
        .map(|(p, d)| convert_param(d, &p.kind))
        .collect();
    let (lb, lreprs) = body(cx, lin, fw.resid.clone(), lparams, true)?;
    let nested = nested_fns(cx)?;
    let name = crate::names::linearize(&sig.ident);
    // The shape of every array parameter with a tangent, for the checks.
    let mut shapes = TokenStream::new();
    let mut checks = TokenStream::new();
    for (p, d) in wrt.iter().zip(&dnames) {
        if !matches!(p.kind, ParamKind::F64Array { .. }) {
            continue;
        }
        let x = &p.ident;
        let sx = ident(&format!("__shape_{}", d));
        let xs = shaped(x, &p.kind);
        shapes.extend(quote!(let #sx: ::std::vec::Vec<usize> = #xs.shape().to_vec();));
        let rt = super::types::rt();
        let (fname, dname, of) = (
            name.to_string(),
            d.to_string(),
            format!("the shape of `{x}` at linearisation"),
        );
        checks.extend({
            let ds = shaped(d, &p.kind);
            quote!(#rt::check_arg_shape(#fname, "tangent", #dname, #ds.shape(), &#sx, #of);)
        });
    }
    let (ts, pat) = temps("dy", n_out);
    let dvals: Vec<TokenStream> = ts.iter().zip(&lreprs).map(|(t, r)| owned(t, *r)).collect();
    let dy = nest(&sig.out, &mut dvals.into_iter())?;
    let y = primal_result(&fw, &sig.out)?;
    let decls = wrt.iter().zip(&dnames).map(|(p, d)| {
        let t = &p.ty;
        quote!(#d: #t)
    });
    let dtys = wrt.iter().map(|p| &p.ty);
    let pdecls = sig.params.iter().map(|p| {
        let (n, t) = (&p.ident, &p.ty);
        quote!(#n: #t)
    });
    let o = out_ty(&sig.out);
    let (vis, fname) = (&sig.vis, &sig.ident);
    let doc = format!(
        " Linearisation of [`{fname}`]: returns `({fname}(..), jvp)`, the primal result and its \
         linear map (the Jacobian-vector product at this point) as a closure over the residuals. \
         Calling `jvp(d_*..)` with tangents of the differentiated parameters costs one tangent \
         evaluation and no primal; it equals the tangent part of `{fname}_jvp`."
    );
    let stmts = &fw.stmts;
    let allows = allows();
    Ok(quote! {
        #[doc = #doc]
        #allows
        #[inline]
        #vis fn #name(#(#pdecls),*)
            -> (#o, impl Fn(#(#dtys),*) -> #o + ::core::marker::Send + ::core::marker::Sync + use<>)
        {
            #nested
            #shapes
            #stmts
            let __jvp = move |#(#decls),*| -> #o {
                #checks
                let #pat = #lb;
                #dy
            };
            (#y, __jvp)
        }
    })
}

/// `f_pullback(x..) -> (y, impl Fn(ct) -> cotangents)`.
pub fn f_pullback(input: &Input, cx: &Ctx) -> R<TokenStream> {
    let sig = input.sig;
    let lin_t = func(cx.prog, &input.user.names.lin_t)?;
    let wrt: Vec<&Param> = sig.wrt_params().collect();
    let n_out = sig.out.ir_tys().len();
    check(
        lin_t.lin_params.len() == n_out
            && lin_t.body.lin_results.len() == wrt.len()
            && lin_t.body.results.is_empty(),
        || format!("`{}` does not match the signature", lin_t.name),
    )?;
    let fw = forward(input, cx, lin_t)?;
    let mut leaves = vec![];
    let ct_pat = out_pattern(&sig.out, &mut leaves);
    let cts = ct_params(&leaves);
    let (tb, treprs) = body(cx, lin_t, fw.resid.clone(), cts, true)?;
    let nested = nested_fns(cx)?;
    let name = crate::names::pullback(&sig.ident);
    let ct_use = ct_name(sig);
    // The shape of every array leaf of the result, for the checks.
    let (mut ct_paths, mut res_paths) = (vec![], vec![]);
    leaf_paths(&sig.out, &ct_use.to_string(), &mut ct_paths);
    leaf_paths(&sig.out, &format!("{}'s result", sig.ident), &mut res_paths);
    let mut shapes = TokenStream::new();
    let mut checks = TokenStream::new();
    let rt = super::types::rt();
    for (k, ((leaf, arr), (y, _))) in leaves.iter().zip(&fw.ys).enumerate() {
        if !*arr {
            continue;
        }
        let sy = ident(&format!("__shape_y{k}"));
        shapes.extend(quote!(let #sy: ::std::vec::Vec<usize> = #y.shape().to_vec();));
        let (fname, cp, of) = (
            name.to_string(),
            ct_paths[k].clone(),
            format!("the shape of {}", res_paths[k]),
        );
        checks.extend(
            quote!(#rt::check_arg_shape(#fname, "cotangent", #cp, #leaf.shape(), &#sy, #of);),
        );
    }
    let (cs, cpat) = temps("c", wrt.len());
    let c = cotangents(&cs, &treprs, &wrt);
    let y = primal_result(&fw, &sig.out)?;
    let pdecls = sig.params.iter().map(|p| {
        let (n, t) = (&p.ident, &p.ty);
        quote!(#n: #t)
    });
    let o = out_ty(&sig.out);
    let ct_t = ct_ty(&sig.out);
    let ctys: Vec<TokenStream> = wrt.iter().map(|p| tangent_ty(p)).collect();
    let ct_ret = flat(&ctys);
    let (vis, fname) = (&sig.vis, &sig.ident);
    let doc = format!(
        " Pullback of [`{fname}`]: returns `({fname}(..), vjp)`, the primal result and the \
         transposed linear map (vector-Jacobian product) as a closure over the residuals. Each \
         call `vjp(ct)` is one reverse pass with no forward pass and returns the cotangents of \
         the differentiated parameters in order, as `{fname}_vjp` does."
    );
    let stmts = &fw.stmts;
    let allows = allows();
    Ok(quote! {
        #[doc = #doc]
        #allows
        #[inline]
        #vis fn #name(#(#pdecls),*)
            -> (#o, impl Fn(#ct_t) -> #ct_ret + ::core::marker::Send + ::core::marker::Sync + use<>)
        {
            #nested
            #stmts
            #shapes
            let __vjp = move |#ct_use: #ct_t| -> #ct_ret {
                let #ct_pat = #ct_use;
                #checks
                let #cpat = #tb;
                #c
            };
            (#y, __vjp)
        }
    })
}
