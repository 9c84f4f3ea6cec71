//! `f_linearize` and `f_pullback`: the primal result and the linear map (or
//! its transpose) closed over the residuals.
//!
//! Both run the forward half of the unzipped program once through the
//! kept-residual block `fwdres` (`residuals.rs`: the primal and its
//! residuals, every residual owned: one that is a view of a parameter is
//! copied, so the closure borrows nothing from the caller), and return a
//! `move` closure whose body calls the linear half at those residuals
//! (`linres` for `f_linearize`, `linres_t` for `f_pullback`, which pass
//! them to `lin_at` / `lin_t_at` as views). A call of the closure therefore
//! costs one tangent (or one reverse) evaluation and never re-runs the
//! primal:
//!
//! ```text
//! f_linearize(x) = let (y, r) = fwdres(x) in (y, |dx| linres(&r; dx))
//! f_pullback(x)  = let (y, r) = fwdres(x) in (y, |ct| linres_t(&r; ct))
//! ```
//!
//! The closures check, as `f_jvp` and `f_vjp` do, that array tangents have
//! their primal's shape and array cotangents their result's shape (the
//! shapes are recorded when the closure is made).

use super::func::R;
use super::halves::Halves;
use super::names::ident;
use super::types::Repr;
use super::wrappers::{
    allows, canonical_args, check, cotangents, ct_name, ct_params, ct_ty, leaf_paths, nest,
    out_pattern, out_ty, owned, primal_args, shaped, tangent_names, temps, Leaf,
};
use super::Input;
use crate::names::Block;
use crate::sig::{Out, Param, ParamKind};
use crate::text::{text, Code};
use proc_macro2::Ident;

/// The forward half, run once, keeping its residuals:
/// `let (y.., __res) = fwdres(params);` (`residuals.rs`: the results and
/// the residuals owned, views of parameters copied, so the closure borrows
/// nothing from the caller; the function's leading assertions checked).
struct Forward {
    /// Statements computing the results `__y0..` and the residuals `__res`.
    stmts: Code,
    /// The primal results' temporaries and representations.
    ys: Vec<(Ident, Repr)>,
}

fn forward(input: &Input, h: &Halves) -> R<Forward> {
    let sig = input.sig;
    let n_out = sig.out.ir_tys().len();
    check(h.n_out == n_out, || {
        format!("`{}` does not return the signature's results", h.fwd)
    })?;
    let (pstmts, pargs) = primal_args(sig);
    let (ys, _) = temps("y", n_out);
    let fwdres = h.set.block(&sig.ident, Block::FwdRes);
    let stmts = text!(#pstmts let (#(#ys,)* __res) = #fwdres(#(#pargs),*););
    let ys = ys
        .into_iter()
        .zip(h.fwd_reprs[..n_out].iter().map(|r| match r {
            Repr::View => Repr::Owned,
            r => *r,
        }))
        .collect();
    Ok(Forward { stmts, ys })
}

/// The primal result, nested as the signature says.
fn primal_result(fw: &Forward, o: &Out) -> R<Code> {
    let vals: Vec<Code> = fw.ys.iter().map(|(t, r)| owned(t, *r)).collect();
    nest(o, &mut vals.into_iter())
}

/// `f_linearize(x..) -> (y, impl Fn(d_x..) -> dy)`.
pub fn f_linearize(input: &Input, h: &Halves) -> R<Code> {
    let sig = input.sig;
    let wrt: Vec<&Param> = sig.wrt_params().collect();
    let n_out = sig.out.ir_tys().len();
    check(h.lin_reprs.len() == n_out, || {
        format!("`{}` does not return the signature's tangents", h.lin_at)
    })?;
    let fw = forward(input, h)?;
    let dnames = tangent_names(sig);
    let (dstmts, dargs) = canonical_args(wrt.iter().zip(&dnames).map(|(p, d)| (d, &p.kind)), "dp");
    let linres = h.set.block(&sig.ident, Block::LinRes);
    let lb = text!({ #dstmts #linres(&__res, #(#dargs),*) });
    let lreprs = &h.lin_reprs;
    let name = crate::names::linearize(&sig.ident);
    // The shape of every array parameter with a tangent, for the checks.
    let mut shapes = Code::new();
    let mut checks = Code::new();
    for (p, d) in wrt.iter().zip(&dnames) {
        if !matches!(p.kind, ParamKind::F64Array { .. }) {
            continue;
        }
        let x = &p.ident;
        let sx = ident(&format!("__shape_{}", d));
        let xs = shaped(x, &p.kind);
        shapes.extend(text!(let #sx: ::std::vec::Vec<usize> = #xs.shape().to_vec();));
        let rt = super::types::rt();
        let (fname, dname, of) = (
            name.to_string(),
            d.to_string(),
            format!("the shape of `{x}` at linearisation"),
        );
        checks.extend({
            let ds = shaped(d, &p.kind);
            text!(#rt::check_arg_shape(#fname, "tangent", #dname, #ds.shape(), &#sx, #of);)
        });
    }
    let (ts, pat) = temps("dy", n_out);
    let dvals: Vec<Code> = ts.iter().zip(lreprs).map(|(t, r)| owned(t, *r)).collect();
    let dy = nest(&sig.out, &mut dvals.into_iter())?;
    let y = primal_result(&fw, &sig.out)?;
    let decls = wrt.iter().zip(&dnames).map(|(p, d)| {
        let t = &p.ty;
        text!(#d: #t)
    });
    let (fname, o) = (&sig.ident, out_ty(&sig.out));
    let header = super::headers::linearize(sig);
    let doc = format!(
        " Linearisation of [`{fname}`]: returns `({fname}(..), jvp)`, the primal result and its \
         linear map (the Jacobian-vector product at this point) as a closure over the residuals. \
         Calling `jvp(d_*..)` with tangents of the differentiated parameters costs one tangent \
         evaluation and no primal; it equals the tangent part of `{fname}_jvp`."
    );
    let stmts = &fw.stmts;
    let allows = allows();
    let keep = super::wrappers::primal_use(sig);
    Ok(text! {
        #[doc = #doc]
        #allows
        #[inline]
        #header
        {
            #keep
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
pub fn f_pullback(input: &Input, h: &Halves) -> R<Code> {
    let sig = input.sig;
    let wrt: Vec<&Param> = sig.wrt_params().collect();
    check(h.lin_t_reprs.len() == wrt.len(), || {
        format!("`{}` does not match the signature", h.lin_t_at)
    })?;
    let fw = forward(input, h)?;
    let mut leaves = vec![];
    let ct_pat = out_pattern(&sig.out, &mut leaves);
    let ctargs: Vec<Code> = ct_params(&leaves).into_iter().map(|(t, _)| t).collect();
    let linres_t = h.set.block(&sig.ident, Block::LinResT);
    let tb = text!(#linres_t(&__res, #(#ctargs),*));
    let treprs = &h.lin_t_reprs;
    let name = crate::names::pullback(&sig.ident);
    let ct_use = ct_name(sig);
    // The shape of every array leaf of the result, for the checks.
    let (mut ct_paths, mut res_paths) = (vec![], vec![]);
    leaf_paths(&sig.out, &ct_use.to_string(), &mut ct_paths);
    leaf_paths(&sig.out, &format!("{}'s result", sig.ident), &mut res_paths);
    let mut shapes = Code::new();
    let mut checks = Code::new();
    let rt = super::types::rt();
    for (k, ((leaf, arr), (y, _))) in leaves.iter().zip(&fw.ys).enumerate() {
        if *arr != Leaf::Array {
            continue;
        }
        let sy = ident(&format!("__shape_y{k}"));
        shapes.extend(text!(let #sy: ::std::vec::Vec<usize> = #y.shape().to_vec();));
        let (fname, cp, of) = (
            name.to_string(),
            ct_paths[k].clone(),
            format!("the shape of {}", res_paths[k]),
        );
        checks.extend(
            text!(#rt::check_arg_shape(#fname, "cotangent", #cp, #leaf.shape(), &#sy, #of);),
        );
    }
    let (cs, cpat) = temps("c", wrt.len());
    let c = cotangents(&cs, treprs, &wrt);
    let y = primal_result(&fw, &sig.out)?;
    let header = super::headers::pullback(sig);
    let (ct_t, ct_ret) = (ct_ty(&sig.out), super::headers::cotangents_ty(sig));
    let fname = &sig.ident;
    let doc = format!(
        " Pullback of [`{fname}`]: returns `({fname}(..), vjp)`, the primal result and the \
         transposed linear map (vector-Jacobian product) as a closure over the residuals. Each \
         call `vjp(ct)` is one reverse pass with no forward pass and returns the cotangents of \
         the differentiated parameters in order, as `{fname}_vjp` does."
    );
    let stmts = &fw.stmts;
    let allows = allows();
    let keep = super::wrappers::primal_use(sig);
    Ok(text! {
        #[doc = #doc]
        #allows
        #[inline]
        #header
        {
            #keep
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
