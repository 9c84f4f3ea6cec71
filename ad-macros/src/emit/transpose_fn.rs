//! `f_transpose` of a `#[linear(x..)]` function: the transpose of `f` in its
//! linear parameters, taking the other parameters and a cotangent of `f`'s
//! output and returning the cotangents of the linear parameters; and the two
//! hidden blocks through which differentiable callers use `f` as the linear
//! map it is (`ad_core_ir::driver::declare_linear_extern`).
//!
//! The Linear A form of `f` (`ad_core_ir::linear_form`) has the sizes of its
//! linear arrays as extra `i64` parameters. The forward block reads them off
//! its linear arguments; for the transpose, `ad_core_ir::linear_shapes` says
//! where each comes from (a parameter's shape or the cotangent's):
//!
//! ```text
//! fn __linad_matvec_linear(a, x) {          // canonical signature
//!     let len_x_0 = x.shape()[0];
//!     let r.. = fwd(a, len_x_0);             // the non-linear part
//!     lin(r..; x)                            // f's linear body
//! }
//! fn __linad_matvec_linear_t(a, ct) {
//!     let len_x_0 = a.shape()[1];
//!     let r.. = fwd(a, len_x_0);
//!     lin_t(r..; ct)                         // the transposed linear part
//! }
//! fn matvec_transpose(a: &Array2<f64>, ct: &Array1<f64>) -> Array1<f64> {
//!     __linad_matvec_linear_t(a.view(), ct.view())
//! }
//! ```

use super::func::{body, Ctx, R};
use super::halves::{canonical_params, param_tys};
use super::names::ident;
use super::types::{flat, owned_repr, Repr};
use super::wrappers::{
    allows, check, convert_param, ct_ty, func, hidden_fn, nested_fns, out_pattern, result_ty,
    tangent_ty, temps,
};
use crate::names::{hidden, Block};
use crate::sig::Callee;
use crate::sig::{Param, Signature};
use crate::text::{text, Code};
use ad_core_ir::driver::Derivatives;
use ad_core_ir::ir::Func;
use ad_core_ir::linear_shapes::ShapeSource;

/// Where the size of a linear array comes from, per shape parameter of the
/// linear form: `(j, axis)` of the linear parameter `j` (for the forward
/// block) and the solved source (for the transpose).
pub struct Sizes<'a> {
    /// `(linear parameter, axis)` of each size.
    pub dims: &'a [(usize, usize)],
    /// The solved source of each size, for the transpose.
    pub solved: &'a [ShapeSource],
}

/// `f_transpose(<non-linear parameters>, ct) -> <cotangents of the linear
/// ones>` and the hidden blocks `__linad_f_linear` / `__linad_f_linear_t`.
pub fn f_transpose(
    sig: &Signature,
    linear: &[bool],
    d: &Derivatives,
    callees: &[Callee],
    sizes: &Sizes,
) -> R<Code> {
    emit(sig, linear, d, callees, sizes)
}

fn emit(
    sig: &Signature,
    linear: &[bool],
    d: &Derivatives,
    callees: &[Callee],
    sizes: &Sizes,
) -> R<Code> {
    let cx = Ctx::new(&d.program, callees);
    let fwd = func(cx.prog, &d.names.fwd)?;
    let lin = func(cx.prog, &d.names.lin)?;
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
    let n_sizes = sizes.dims.len();
    check(
        fwd.params.len() == consts.len() + n_sizes
            && sizes.solved.len() == n_sizes
            && d.n_results == 0
            && lin.lin_params.len() == lins.len()
            && lin.body.lin_results.len() == n_out
            && lin_t.lin_params.len() == n_out
            && lin_t.body.lin_results.len() == lins.len(),
        || {
            format!(
                "`{}` / `{}` / `{}` do not match the signature",
                fwd.name, lin.name, lin_t.name
            )
        },
    )?;
    let elided = text!('_);
    let const_tys = &param_tys(fwd, false)[..consts.len()];
    let (cdecls, cbinds) = canonical_params(const_tys, "x", &elided);
    let size = |k: usize, value: Code| {
        let n = ident(&format!("__len{k}"));
        text!(let #n: i64 = (#value) as i64;)
    };
    let allows = allows();
    let (vis, fname) = (&sig.vis, &sig.ident);
    // `lin(fwd(consts, sizes); lins)` or `lin_t(..; cts)`: a hidden block.
    let block = |b: Block, f: &Func, what: &str, sizes_of: &dyn Fn(usize) -> R<Code>| {
        let (ldecls, lbinds) = canonical_params(&param_tys(f, true), what, &elided);
        let mut stmts = Code::new();
        let mut params = cbinds.clone();
        for k in 0..n_sizes {
            stmts.extend(size(k, sizes_of(k)?));
            let n = ident(&format!("__len{k}"));
            params.push((text!(#n), Repr::Val));
        }
        let (fb, freprs) = body(&cx, fwd, params, vec![], true)?;
        let (ys, ypat) = temps("r", fwd.body.results.len());
        let resid = ys
            .iter()
            .zip(&freprs)
            .map(|(y, r)| (text!(#y), *r))
            .collect();
        let (lb, _) = body(&cx, f, resid, lbinds, false)?;
        let nested = nested_fns(&cx)?;
        let name = hidden(fname, b);
        let ret = result_ty(f);
        let doc = match b {
            Block::Linear => format!(" [`{fname}`] as the linear map of its linear parameters (canonical signature), for differentiable callers."),
            _ => format!(" The transpose of [`{fname}`] in its linear parameters (canonical signature), for differentiable callers."),
        };
        let decls: Vec<Code> = cdecls.iter().chain(&ldecls).cloned().collect();
        R::Ok(hidden_fn(
            &doc,
            vis,
            &name,
            &decls,
            ret,
            text!(#nested #stmts let #ypat = #fb; #lb),
        ))
    };
    let forward = block(Block::Linear, lin, "dx", &|k| {
        let (j, axis) = sizes.dims[k];
        let dx = ident(&format!("__dx{j}"));
        Ok(text!(#dx.shape()[#axis]))
    })?;
    let transposed = block(Block::LinearT, lin_t, "ct", &|k| {
        Ok(match sizes.solved[k] {
            ShapeSource::Param(i, axis) => {
                let x = ident(&format!("__x{i}"));
                text!(#x.shape()[#axis])
            }
            ShapeSource::Result(j, axis) => {
                let c = ident(&format!("__ct{j}"));
                text!(#c.shape()[#axis])
            }
            ShapeSource::Const(c) => text!(#c),
        })
    })?;

    // The public transpose: the canonical block on the converted arguments.
    let name = crate::names::transpose(fname);
    let mut leaves = vec![];
    let ct_pat = out_pattern(&sig.out, &mut leaves);
    let ct = super::wrappers::ct_name(sig);
    let args = consts
        .iter()
        .map(|p| match convert_param(&p.ident, &p.kind) {
            // An index array converted to `i64`: the block takes a view.
            (t, Repr::Owned) => text!((#t).view()),
            (t, _) => t,
        })
        .chain(
            super::wrappers::ct_params(&leaves)
                .into_iter()
                .map(|(t, _)| t),
        );
    let (cs, cpat) = temps("c", lins.len());
    // The block returns owned cotangents.
    let creprs: Vec<Repr> = lin_t
        .body
        .lin_results
        .iter()
        .map(|v| owned_repr(lin_t.vars.ty(*v)))
        .collect();
    let c = super::wrappers::cotangents(&cs, &creprs, &lins);
    let decls = consts.iter().map(|p| {
        let (n, t) = (&p.ident, &p.ty);
        text!(#n: #t)
    });
    let ct_t = ct_ty(&sig.out);
    let ret: Vec<Code> = lins.iter().map(|p| tangent_ty(p)).collect();
    let ret = flat(&ret);
    let lin_names: Vec<String> = lins.iter().map(|p| format!("`{}`", p.ident)).collect();
    let doc = format!(
        " Transpose of the linear function [`{fname}`] in {}: for a cotangent `ct` of its \
         output, the cotangents of those parameters, in order (a bare value for one), so that \
         `<ct, {fname}(.., x, ..)> = <{fname}_transpose(.., ct), x>`.",
        lin_names.join(", ")
    );
    let block_t = hidden(fname, Block::LinearT);
    Ok(text! {
        #forward
        #transposed
        #[doc = #doc]
        #allows
        #vis fn #name(#(#decls,)* #ct: #ct_t) -> #ret {
            let #ct_pat = #ct;
            let #cpat = #block_t(#(#args),*);
            #c
        }
    })
}
