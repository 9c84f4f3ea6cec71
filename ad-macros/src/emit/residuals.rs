//! Kept residuals: the blocks a caller's top-level call of `f` uses so that
//! the caller's linear maps read `f`'s residuals instead of recomputing `f`'s
//! primal (`ad_core_ir::driver::declare_extern_residuals`).
//!
//! For one set of derivatives (every differentiable parameter, or the `wrt`
//! ones: `__linadw_` names), on top of the halves of `halves.rs`:
//!
//! ```text
//! type __linad_f_res = (R0, R1, ..);                  the residuals, owned
//! __linad_f_fwdres(x..)         -> (y.., res)         fwd, views copied out
//! __linad_f_linres(&res, dx..)  -> dy                 lin_at at the residuals
//! __linad_f_linres_t(&res, ȳ..) -> x̄                  lin_t_at at the residuals
//! ```
//!
//! A caller whose `y = f(x)` is at the top level of its body calls
//! `fwdres` in its forward half and keeps `res` as one of its own residuals
//! (an opaque IR value of the type `__linad_f_res`), then `linres` /
//! `linres_t` in its linear halves: `f_linearize` and `f_pullback` of the
//! caller run no primal of `f` per call. `f`'s own `f_linearize` and
//! `f_pullback` are `fwdres` and a closure calling `linres` / `linres_t`
//! (`closures.rs`). The residuals are owned (views of
//! `f`'s arguments among them are copied), so the caller's closures may hold
//! them after its arguments are gone.

use super::func::{Ctx, R};
use super::halves::{canonical_params, Halves, Set};
use super::types::{owned_repr, owned_ty, tuple_ty, Repr};
use super::wrappers::{func, hidden_fn, temps};
use super::Input;
use crate::names::Block;
use crate::text::{text, Code};

/// The residual type and the blocks of one set (see the module doc): the
/// type and `fwdres` always, `linres` with `lin`, `linres_t` with `lin_t`
/// (a function no caller can call emits only what its `f_linearize` and
/// `f_pullback` call).
pub(super) fn residual_blocks(
    input: &Input,
    cx: &Ctx,
    h: &Halves,
    set: Set,
    (lin, lin_t): (bool, bool),
) -> R<Code> {
    let sig = input.sig;
    let (vis, fname) = (&sig.vis, &sig.ident);
    let name = |b: Block| set.block(fname, b);
    let res = name(Block::Res);
    let parts: Vec<Code> = h.resid_tys.iter().map(owned_ty).collect();
    let res_ty = tuple_ty(parts);
    let mut out = text! {
        #[doc = " The residuals kept by the forward half (building block for callers' derivatives)."]
        #[doc(hidden)]
        #[allow(non_camel_case_types)]
        #vis type #res = #res_ty;
    };

    // The forward half, its results and residuals owned.
    let elided = text!('_);
    let primal = func(cx.prog, &input.lowered.name)?;
    let (pdecls, pbinds) = canonical_params(&primal.param_tys(), "x", &elided);
    let pargs = pbinds.iter().map(|(t, _)| t);
    let pre = super::wrappers::canonical_preconditions(input, &pbinds);
    let (ys, ypat) = temps("y", h.fwd_reprs.len());
    let owned: Vec<Code> = ys
        .iter()
        .zip(&h.fwd_reprs)
        .map(|(y, r)| match r {
            Repr::View => text!(#y.to_owned()),
            Repr::Owned | Repr::Val => text!(#y),
        })
        .collect();
    let (results, kept) = owned.split_at(h.n_out);
    let fwd = &h.fwd;
    let rtys: Vec<Code> = result_tys(cx, set.derivatives(input))?
        .into_iter()
        .take(h.n_out)
        .chain(std::iter::once(text!(#res)))
        .collect();
    out.extend(hidden_fn(
        &format!(" The forward half of [`{fname}`] keeping its residuals (owned)."),
        vis,
        &name(Block::FwdRes),
        &pdecls,
        text!((#(#rtys),*)),
        text!(#pre let #ypat = #fwd(#(#pargs),*); (#(#results,)* (#(#kept,)*))),
    ));

    // The linear maps at the kept residuals (by reference).
    let fields: Vec<Code> = (0..h.resid_tys.len())
        .map(|k| {
            let k = syn::Index::from(k);
            text!(__res.#k)
        })
        .collect();
    let held: Vec<Repr> = h.resid_tys.iter().map(owned_repr).collect();
    let rargs = h.resid_args_as(&fields, &held, true);
    for lh in h.linear_halves(cx, set.derivatives(input))? {
        let wanted = if lh.transposed { lin_t } else { lin };
        if !wanted {
            continue;
        }
        let (b, what) = if lh.transposed {
            (Block::LinResT, "transposed linear map")
        } else {
            (Block::LinRes, "linear map")
        };
        let (half, largs) = (lh.half, &lh.args);
        let decls: Vec<Code> = std::iter::once(text!(__res: &#res))
            .chain(lh.decls)
            .collect();
        out.extend(hidden_fn(
            &format!(" The {what} of [`{fname}`] at kept residuals."),
            vis,
            &name(b),
            &decls,
            lh.ret,
            text!(#half(#(#rargs,)* #(#largs),*)),
        ));
    }
    Ok(out)
}

/// The owned Rust types of the primal results of a set's forward half.
fn result_tys(cx: &Ctx, d: &ad_core_ir::driver::Derivatives) -> R<Vec<Code>> {
    let fwd = func(cx.prog, &d.names.fwd)?;
    Ok(fwd
        .body
        .results
        .iter()
        .map(|a| owned_ty(&ad_core_ir::typing::atom_ty(a, &fwd.vars)))
        .collect())
}
