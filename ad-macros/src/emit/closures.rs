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

use super::func::R;
use super::halves::Halves;
use super::names::ident;
use super::types::{flat, Repr};
use super::wrappers::{
    allows, canonical_args, check, checked_primal_args, cotangents, ct_name, ct_params, ct_ty,
    leaf_paths, nest, out_pattern, out_ty, owned, shaped, tangent_names, temps, Leaf,
};
use super::Input;
use crate::sig::{Out, Param, ParamKind};
use crate::text::{text, Code};
use proc_macro2::Ident;

/// The forward half, run once: `let (y.., r..) = fwd(params);` followed by
/// owned copies of the residuals, and the residuals as the linear half's
/// arguments (arrays passed as views of the owned copies).
struct Forward {
    /// Statements computing the results `__y0..` and owned residuals `__r0..`.
    stmts: Code,
    /// The primal results' temporaries and representations.
    ys: Vec<(Ident, Repr)>,
    /// The residuals as arguments of the linear half.
    resid: Vec<Code>,
}

fn forward(input: &Input, h: &Halves) -> R<Forward> {
    let sig = input.sig;
    let n_out = sig.out.ir_tys().len();
    check(h.n_out == n_out, || {
        format!("`{}` does not return the signature's results", h.fwd)
    })?;
    let (pstmts, pargs) = checked_primal_args(input);
    let (ys, _) = temps("y", h.fwd_reprs.len());
    let fwd = &h.fwd;
    // Residuals the closure owns as they come are bound as `__rk` at once;
    // views are copied.
    let mut pats: Vec<Code> = ys[..n_out].iter().map(|y| text!(#y)).collect();
    let mut copies = Code::new();
    let mut rs = vec![];
    for (k, (y, r)) in ys[n_out..].iter().zip(&h.fwd_reprs[n_out..]).enumerate() {
        let rk = ident(&format!("__r{k}"));
        match r {
            Repr::View => {
                pats.push(text!(#y));
                copies.extend(text!(let #rk = #y.to_owned();));
            }
            Repr::Owned | Repr::Val => pats.push(text!(#rk)),
        }
        rs.push(text!(#rk));
    }
    let ypat = flat(&pats);
    let stmts = text!(#pstmts let #ypat = #fwd(#(#pargs),*); #copies);
    // The copies are owned: the closure passes views of them, and clones of
    // tuples holding arrays (it may be called more than once).
    let owned_reprs: Vec<Repr> = h.fwd_reprs[n_out..]
        .iter()
        .map(|r| if *r == Repr::View { Repr::Owned } else { *r })
        .collect();
    let resid = h.resid_args_as(&rs, &owned_reprs, true);
    let ys = ys[..n_out]
        .iter()
        .cloned()
        .zip(h.fwd_reprs[..n_out].iter().copied())
        .collect();
    Ok(Forward { stmts, ys, resid })
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
    let (lin_at, rargs) = (&h.lin_at, &fw.resid);
    let lb = text!({ #dstmts #lin_at(#(#rargs,)* #(#dargs),*) });
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
    Ok(text! {
        #[doc = #doc]
        #allows
        #[inline]
        #header
        {
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
    let (lin_t_at, rargs) = (&h.lin_t_at, &fw.resid);
    let tb = text!(#lin_t_at(#(#rargs,)* #(#ctargs),*));
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
    Ok(text! {
        #[doc = #doc]
        #allows
        #[inline]
        #header
        {
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
