//! The unzipped halves of a function, each emitted once as a Rust function
//! and called by every item that runs it.
//!
//! For one set of derivatives of `f` (with respect to every differentiable
//! parameter: the hidden building blocks, `#vis` and `#[doc(hidden)]`; or,
//! when `wrt(..)` names fewer, a second set for the public items, hidden
//! building blocks too: callers whose arguments of `f` outside `wrt` are
//! constants call them):
//!
//! ```text
//! fwd(x..)            -> (y.., r..)    the primal results, then the residuals
//! lin_at(r.., dx..)   -> dy..          the linear map at the residuals
//! lin_t_at(r.., ct..) -> c..           its transpose
//! jvp(x.., dx..)      -> (y.., dy..)   forward mode in one sweep
//! vjp(x.., ct..)      -> (y.., c..)    reverse mode in one sweep, when the
//!                                      core fused a loop (`ad_core_ir::vjp`)
//! ```
//!
//! The items built on them are small:
//!
//! ```text
//! f_jvp(x, dx)    = jvp(x, dx)
//! f_vjp(x, ct)    = let (y, r) = fwd(x) in (y, lin_t_at(r, ct))
//!                   or vjp(x, ct) where there is one and every result is
//!                   a scalar (no cotangent shape to check first)
//! f_linearize(x)  = let (y, r) = fwd(x) in (y, move |dx| lin_at(r, dx))
//! f_pullback(x)   = let (y, r) = fwd(x) in (y, move |ct| lin_t_at(r, ct))
//! lin(x, dx)      = let (_, r) = fwd(x) in lin_at(r, dx)     (for callers)
//! lin_t(x, ct)    = let (_, r) = fwd(x) in lin_t_at(r, ct)   (for callers)
//! ```
//!
//! so the body of each IR function is emitted once instead of once per item
//! that runs it (13 bodies per function before, 5 now when `wrt` is every
//! parameter). Parameters follow the canonical convention (arrays as views,
//! everything else by value). `fwd` returns a result or residual that its
//! body leaves a view of a parameter as that view, borrowing for the lifetime
//! `'__a` of the array parameters (no copy). The halves are `#[inline]`, so
//! rustc generates code for one only where it is called.

use super::func::{body, Ctx, R};
use super::types::{canonical_repr, flat, owned_repr, repr_ty_in, Repr};
use super::wrappers::{allows, func, nested_fns, result_ty};
use super::Input;
use crate::names::{hidden, hidden_wrt, Block};
use crate::text::{text, Code};
use ad_core_ir::driver::Derivatives;
use ad_core_ir::ir::Func;
use ad_core_ir::types::Ty;
use proc_macro2::Ident;

/// Which set of derivatives.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Set {
    /// Every differentiable parameter: the hidden building blocks.
    All,
    /// The `wrt` parameters, when they are fewer (for the public items and
    /// for callers whose other arguments are constants).
    Wrt,
}

impl Set {
    /// The set's derivatives (their IR functions and names).
    pub fn derivatives<'a>(self, input: &Input<'a>) -> &'a Derivatives {
        match self {
            Set::All => input.all,
            Set::Wrt => input.user,
        }
    }

    /// The Rust name of the set's block `b` of `f`: `__linad_f_..` or
    /// `__linadw_f_..`.
    pub fn block(self, f: &Ident, b: Block) -> Ident {
        match self {
            Set::All => hidden(f, b),
            Set::Wrt => hidden_wrt(f, b),
        }
    }
}

/// One linear half of a set as the blocks calling it take it: the half's
/// name, whether it is the transposed one, its linear parameters
/// (declarations `__dx0: ..` or `__ct0: ..`, and their names) and its
/// result type.
pub struct LinearHalf<'h> {
    /// `lin_at` or `lin_t_at`.
    pub half: &'h Ident,
    /// `lin_t_at`.
    pub transposed: bool,
    /// The declarations of its linear parameters.
    pub decls: Vec<Code>,
    /// Their names, as arguments.
    pub args: Vec<Code>,
    /// Its result type.
    pub ret: Code,
}

/// The emitted halves of one set of derivatives and how to call them.
pub struct Halves {
    /// The set of derivatives they are (the names of its other blocks:
    /// [`Set::block`]).
    pub set: Set,
    /// `fwd`.
    pub fwd: Ident,
    /// `lin_at`.
    pub lin_at: Ident,
    /// `lin_t_at`.
    pub lin_t_at: Ident,
    /// `jvp`.
    pub jvp: Ident,
    /// How `fwd` returns each primal result, then each residual.
    pub fwd_reprs: Vec<Repr>,
    /// The IR types of the residuals (the linear halves' first parameters).
    pub resid_tys: Vec<Ty>,
    /// The number of primal results of `fwd`.
    pub n_out: usize,
    /// How `jvp` returns its results (owned), primal then tangent.
    pub jvp_reprs: Vec<Repr>,
    /// How `lin_at` returns its results (owned).
    pub lin_reprs: Vec<Repr>,
    /// How `lin_t_at` returns its cotangents (owned).
    pub lin_t_reprs: Vec<Repr>,
    /// `vjp` and how it returns its results (owned), primal then
    /// cotangents, when the core built one.
    pub vjp: Option<(Ident, Vec<Repr>)>,
    /// The emitted functions.
    pub items: Code,
}

/// Emits the halves of `set` (the derivatives `input.all` or `input.user`,
/// read through `cx`).
pub fn halves(input: &Input, cx: &Ctx, set: Set) -> R<Halves> {
    let sig = input.sig;
    let d = set.derivatives(input);
    let name = |b: Block| set.block(&sig.ident, b);
    let (fwd_name, lin_name, lin_t_name, jvp_name) = (
        name(Block::Fwd),
        name(Block::LinAt),
        name(Block::LinTAt),
        name(Block::Jvp),
    );
    let fname = &sig.ident;
    // Both sets are hidden building blocks: callers whose other arguments
    // of `f` are constants call the `wrt` set's (`__linadw_f_jvp`).
    let (hide, vis) = (text!(#[doc(hidden)]), sig.vis.clone());
    let allows = allows();
    let item = |doc: String,
                name: &Ident,
                generics: Code,
                decls: Vec<Code>,
                ret: Code,
                b: Code,
                nested: Code| {
        text! {
            #[doc = #doc]
            #hide
            #allows
            #[inline]
            #vis fn #name #generics(#(#decls),*) -> #ret {
                #nested
                #b
            }
        }
    };
    let mut items = Code::new();

    // The forward half, views of parameters returned as views.
    let fwd = func(cx.prog, &d.names.fwd)?;
    let lt = text!('__a);
    let (decls, binds) = ir_params(fwd, false, &lt);
    let (b, fwd_reprs) = body(cx, fwd, binds, vec![], true)?;
    let nested = nested_fns(cx)?;
    let rtys: Vec<Code> = result_tys(fwd)
        .iter()
        .zip(&fwd_reprs)
        .map(|(t, r)| repr_ty_in(t, *r, &lt))
        .collect();
    items.extend(item(
        format!(" The forward half of [`{fname}`]: its results, then the residuals."),
        &fwd_name,
        text!(<#lt>),
        decls,
        flat(&rtys),
        b,
        nested,
    ));

    // The linear maps at given residuals.
    let elided = text!('_);
    // A function of the IR function's parameters, returning owned results.
    // With `checks`, the function's leading assertions first (forward mode,
    // which callers' forward modes call: `canonical_preconditions`).
    let mut owned_half =
        |f: &Func, doc: String, name: &Ident, emitted: bool, checks: bool| -> R<Vec<Repr>> {
            let reprs = result_tys(f).iter().map(owned_repr).collect();
            if !emitted {
                return Ok(reprs);
            }
            let (rdecls, rbinds) = ir_params(f, false, &elided);
            let (ldecls, lbinds) = ir_params(f, true, &elided);
            let pre = if checks {
                super::wrappers::canonical_preconditions(input, &rbinds)
            } else {
                Code::new()
            };
            let (b, _) = body(cx, f, rbinds, lbinds, false)?;
            let nested = nested_fns(cx)?;
            items.extend(item(
                doc,
                name,
                text!(),
                rdecls.into_iter().chain(ldecls).collect(),
                result_ty(f),
                text!(#pre #b),
                nested,
            ));
            Ok(reprs)
        };
    // What the public items use, everything when other functions may call
    // the building blocks: `f_jvp` the forward mode, `f_linearize` the
    // linear map, `f_vjp` (when it cannot use the one-sweep reverse) and
    // `f_pullback` the transposed one.
    let (p, c) = (input.public, input.callers);
    let (forward, linear, transposed) = (c || p.jvp, c || p.linearize, c || p.vjp || p.pullback);
    let lin = func(cx.prog, &d.names.lin)?;
    let lin_reprs = owned_half(
        lin,
        format!(" The linear map of [`{fname}`] at the residuals of its forward half."),
        &lin_name,
        linear,
        false,
    )?;
    let lin_t = func(cx.prog, &d.names.lin_t)?;
    let lin_t_reprs = owned_half(
        lin_t,
        format!(" The transposed linear map of [`{fname}`] at the residuals of its forward half."),
        &lin_t_name,
        transposed,
        false,
    )?;

    // Forward mode in one sweep.
    let jvp = func(cx.prog, &d.names.jvp)?;
    let jvp_reprs = owned_half(
        jvp,
        format!(" Forward mode of [`{fname}`] (canonical signature)."),
        &jvp_name,
        forward,
        true,
    )?;

    // Reverse mode in one sweep.
    let vjp = match &d.vjp {
        Some(v) => {
            let vjp_name = name(Block::Vjp);
            let reprs = owned_half(
                func(cx.prog, v)?,
                format!(" Reverse mode of [`{fname}`] in one sweep (canonical signature)."),
                &vjp_name,
                p.vjp,
                false,
            )?;
            Some((vjp_name, reprs))
        }
        None => None,
    };

    let n_out = d.n_results;
    let resid_tys = param_tys(lin_t, false);
    if fwd.body.results.len() != n_out + resid_tys.len() || lin.params.len() != resid_tys.len() {
        return Err(format!(
            "`{}` returns {} values, `{}` takes {} residuals after {n_out} results",
            fwd.name,
            fwd.body.results.len(),
            lin_t.name,
            resid_tys.len()
        ));
    }
    Ok(Halves {
        set,
        fwd: fwd_name,
        lin_at: lin_name,
        lin_t_at: lin_t_name,
        jvp: jvp_name,
        fwd_reprs,
        resid_tys,
        n_out,
        jvp_reprs,
        lin_reprs,
        lin_t_reprs,
        vjp,
        items,
    })
}

impl Halves {
    /// `lin_at` and `lin_t_at` of the set whose derivatives are `d`, read
    /// through `cx`.
    pub fn linear_halves(&self, cx: &Ctx, d: &Derivatives) -> R<[LinearHalf<'_>; 2]> {
        let half = |name: &String, what: &str, half, transposed| -> R<LinearHalf<'_>> {
            let f = func(cx.prog, name)?;
            let (decls, binds) = canonical_params(&param_tys(f, true), what, &text!('_));
            Ok(LinearHalf {
                half,
                transposed,
                decls,
                args: binds.into_iter().map(|(t, _)| t).collect(),
                ret: result_ty(f),
            })
        };
        Ok([
            half(&d.names.lin, "dx", &self.lin_at, false)?,
            half(&d.names.lin_t, "ct", &self.lin_t_at, true)?,
        ])
    }

    /// The residuals `rs` (as `fwd` returned them) as arguments of
    /// `lin_at` / `lin_t_at`.
    pub fn resid_args(&self, rs: &[Code]) -> Vec<Code> {
        self.resid_args_as(rs, &self.fwd_reprs[self.n_out..], false)
    }

    /// Statements giving the buffers of the owned array residuals `rs` (as
    /// `fwd` returned them) back to the runtime's per-thread pool once the
    /// reverse pass is done: the next call's stacks reuse them instead of
    /// fresh pages (`ad_runtime::recycle`).
    pub fn recycle_residuals(&self, rs: &[Code]) -> Code {
        let rt = super::types::rt();
        rs.iter()
            .zip(&self.fwd_reprs[self.n_out..])
            .zip(&self.resid_tys)
            .filter(|((_, held), ty)| **held == Repr::Owned && matches!(ty, Ty::Array { .. }))
            .map(|((r, _), _)| text!(#rt::recycle(#r);))
            .collect()
    }

    /// The residuals `rs` held as `held` as arguments of `lin_at` /
    /// `lin_t_at`: arrays as views (so a closure calling a half again and
    /// again copies nothing), a tuple holding arrays moved (or cloned when
    /// `clone`, for a closure called more than once).
    pub fn resid_args_as(&self, rs: &[Code], held: &[Repr], clone: bool) -> Vec<Code> {
        rs.iter()
            .zip(held)
            .zip(&self.resid_tys)
            .map(|((r, held), ty)| match (ty, held) {
                (Ty::Array { .. } | Ty::Opaque(_), Repr::View) => text!(#r),
                (Ty::Array { .. }, _) => text!(#r.view()),
                (Ty::Opaque(_), _) => text!(&#r),
                (_, Repr::Val) => text!(#r),
                _ if clone => text!(#r.clone()),
                _ => text!(#r),
            })
            .collect()
    }
}

/// The types of a function's non-linear (or, with `lin`, linear) parameters.
pub(super) fn param_tys(f: &Func, lin: bool) -> Vec<Ty> {
    let ps = if lin { &f.lin_params } else { &f.params };
    ps.iter().map(|v| f.vars.ty(*v).clone()).collect()
}

/// The types of a function's results: non-linear, then linear.
fn result_tys(f: &Func) -> Vec<Ty> {
    f.body
        .results
        .iter()
        .map(|a| ad_core_ir::typing::atom_ty(a, &f.vars))
        .chain(f.body.lin_results.iter().map(|v| f.vars.ty(*v).clone()))
        .collect()
}

/// Parameter declarations of a function emitted for the IR function `f`,
/// named as its body names them (so that [`body`] binds nothing), with the
/// canonical convention; its non-linear parameters, or its linear ones.
pub fn ir_params(f: &Func, lin: bool, lt: &Code) -> (Vec<Code>, Vec<(Code, Repr)>) {
    let ps = if lin { &f.lin_params } else { &f.params };
    ps.iter()
        .map(|v| {
            let (n, ty) = (super::names::var_name(f, *v), f.vars.ty(*v));
            let repr = canonical_repr(ty);
            let t = repr_ty_in(ty, repr, lt);
            (text!(#n: #t), (text!(#n), repr))
        })
        .unzip()
}

/// Parameter declarations `__{what}k: T` (views borrowing for `lt`) and their
/// bindings for the body, with the canonical convention.
pub fn canonical_params(tys: &[Ty], what: &str, lt: &Code) -> (Vec<Code>, Vec<(Code, Repr)>) {
    let mut decls = vec![];
    let mut binds = vec![];
    for (k, ty) in tys.iter().enumerate() {
        let n = super::names::ident(&format!("__{what}{k}"));
        let repr = canonical_repr(ty);
        let t = repr_ty_in(ty, repr, lt);
        decls.push(text!(#n: #t));
        binds.push((text!(#n), repr));
    }
    (decls, binds)
}

#[cfg(test)]
mod tests {
    use crate::test_crate::TestCrate;
    use quote::quote;

    /// An elementwise loop's reverse fuses into its forward loop: the core
    /// builds `f__vjp`, emitted as `__linad_f_vjp` and called by `f_vjp`
    /// (its definition and the call). A scalar parameter read by every
    /// iteration keeps the two sweeps.
    #[test]
    fn f_vjp_runs_one_sweep_where_a_loop_fused() {
        let krate = TestCrate::new(
            "vjp_sweep",
            "#[differentiable] fn sines(x: &Array1<f64>) -> f64 { 0.0 }\n\
             #[differentiable] fn scaled(x: &Array1<f64>, a: f64) -> f64 { 0.0 }",
        );
        let sines = krate.expand_idents(quote! {
            fn sines(x: &Array1<f64>) -> f64 {
                let mut s = 0.0;
                for i in 0..x.len() {
                    s += x[i].sin() * x[i];
                }
                s
            }
        });
        let calls = sines.iter().filter(|t| *t == "__linad_sines_vjp").count();
        assert_eq!(calls, 2, "{sines:?}");
        let scaled = krate.expand_idents(quote! {
            fn scaled(x: &Array1<f64>, a: f64) -> f64 {
                let mut s = 0.0;
                for i in 0..x.len() {
                    s += (a * x[i]).sin();
                }
                s
            }
        });
        assert!(
            !scaled.iter().any(|t| t == "__linad_scaled_vjp"),
            "{scaled:?}"
        );
    }
}
