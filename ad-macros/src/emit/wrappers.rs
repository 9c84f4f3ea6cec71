//! The generated items: the public `f_jvp` / `f_vjp` (user types, `wrt`
//! parameters) and the hidden building blocks (canonical types, every
//! differentiable parameter), each a Rust function whose body is emitted IR:
//! a prologue converting the parameters to the canonical representation,
//! one block per IR function (so the variables of two IR functions never
//! meet), and an epilogue nesting the flat results as the signature says.

use super::func::{body, Ctx, R};
use super::halves::{canonical_params, halves, ir_params, Halves, Set};
use super::names::{self, ident};
use super::types::{array_ty, flat, owned_ty, rt, tuple, tuple_ty, Repr};
use super::Input;
use crate::names::{hidden, Block as Hidden};
use crate::sig::{Out, Param, ParamKind};
use crate::text::{text, Code};
use ad_core_ir::ir::{Func, Program};
use ad_core_ir::types::Scalar;
use proc_macro2::Ident;

/// Lints silenced on generated functions (the code is generated from IR, so
/// e.g. a never-read binder or an explicit `return`-free tail are expected).
pub fn allows() -> Code {
    text!(#[allow(warnings, clippy::all, clippy::pedantic, clippy::nursery)])
}

/// Every generated item of one `#[differentiable]` function, in groups
/// (each lexed on its own: the public items' text holds the user's
/// tokens, the hidden blocks' is text alone).
pub fn companions(input: &Input) -> R<Vec<Code>> {
    let sig = input.sig;
    let user = Ctx::new(&input.user.program, &input.lowered.callees);
    let all = Ctx::new(&input.all.program, &input.lowered.callees);
    let mut out: Vec<Code> = vec![];
    let restricted = sig.wrt_mask() != sig.all_mask();
    // The set for every parameter is only for callers when `wrt` is
    // smaller; its blocks only when callers may exist.
    let hall = if input.callers || !restricted {
        Some(halves(input, &all, Set::All)?)
    } else {
        None
    };
    if let (Some(h), true) = (&hall, input.callers) {
        out.extend(hidden_blocks(input, &all, h)?);
    }
    let hwrt = if restricted {
        let h = halves(input, &user, Set::Wrt)?;
        if input.callers {
            // For callers whose other arguments of `f` are constants.
            out.extend(recomputing_blocks(input, &user, &h, Set::Wrt)?);
            out.extend(super::residuals::residual_blocks(
                input,
                &user,
                &h,
                Set::Wrt,
                (true, true),
            )?);
        }
        Some(h)
    } else {
        None
    };
    let Some(h) = hwrt.as_ref().or(hall.as_ref()) else {
        return Err("no set of derivatives for the public items".to_string());
    };
    let cx = match h.set {
        Set::Wrt => &user,
        Set::All => &all,
    };
    let public = input.public;
    // `f_linearize` and `f_pullback` call the set's kept-residual blocks,
    // emitted above for callers, else here for them alone.
    if !input.callers && (public.linearize || public.pullback) {
        out.extend(super::residuals::residual_blocks(
            input,
            cx,
            h,
            h.set,
            (public.linearize, public.pullback),
        )?);
    }
    if public.jvp {
        out.extend(f_jvp(input, h)?);
    }
    if public.linearize {
        out.extend(super::closures::f_linearize(input, h)?);
    }
    if public.vjp {
        out.extend(f_vjp(input, h)?);
    }
    if public.pullback {
        out.extend(super::closures::f_pullback(input, h)?);
    }
    out.extend(hall.map(|h| h.items));
    out.extend(hwrt.map(|h| h.items));
    Ok(out)
}

/// Looks up a function of a program.
pub(super) fn func<'p>(prog: &'p Program, name: &str) -> R<&'p Func> {
    prog.func(name)
        .ok_or_else(|| format!("the program has no function `{name}`"))
}

/// The nested functions for the program's own functions that the emitted
/// bodies call (transitively).
pub(super) fn nested_fns(cx: &Ctx) -> R<Code> {
    let mut out = Code::new();
    let mut done = 0;
    loop {
        let next = cx.internal.borrow().get(done).cloned();
        let Some(name) = next else { break };
        done += 1;
        let f = func(cx.prog, &name)?;
        let elided = text!('_);
        let (decls, params) = ir_params(f, false, &elided);
        let (ldecls, lparams) = ir_params(f, true, &elided);
        let (b, _) = body(cx, f, params, lparams, false)?;
        let ret = result_ty(f);
        let n = names::internal_fn(&name);
        let all = decls.iter().chain(&ldecls);
        out.extend(text!(fn #n(#(#all),*) -> #ret #b));
    }
    cx.internal.borrow_mut().clear();
    Ok(out)
}

/// The owned result type of a function (flat).
pub(super) fn result_ty(f: &Func) -> Code {
    let tys: Vec<Code> = f
        .body
        .results
        .iter()
        .map(|a| ad_core_ir::typing::atom_ty(a, &f.vars))
        .chain(f.body.lin_results.iter().map(|v| f.vars.ty(*v).clone()))
        .map(|t| owned_ty(&t))
        .collect();
    flat(&tys)
}

/// A user parameter converted to the canonical representation.
pub(super) fn convert_param(id: &Ident, kind: &ParamKind) -> (Code, Repr) {
    let view = if slice_like(kind) {
        shaped(id, kind)
    } else {
        text!(#id.view())
    };
    match kind {
        ParamKind::F64 | ParamKind::F64Tuple(_) | ParamKind::Bool => (text!(#id), Repr::Val),
        ParamKind::Int(_) | ParamKind::Enum(_) => (text!(#id as i64), Repr::Val),
        ParamKind::F64Array { .. } => (view, Repr::View),
        ParamKind::IntArray { elem, .. } => {
            if super::calls::is_int_type(elem) && text!(#elem).to_string() == "i64" {
                (view, Repr::View)
            } else {
                (text!(#view.mapv(|__v| __v as i64)), Repr::Owned)
            }
        }
    }
}

/// Whether a parameter is a slice or a `Vec` (a rank-1 array to linad).
fn slice_like(kind: &ParamKind) -> bool {
    matches!(
        kind,
        ParamKind::F64Array { passing, .. } | ParamKind::IntArray { passing, .. }
            if passing.is_slice_like()
    )
}

/// The parameter as an expression with ndarray's methods (`.shape()`,
/// `.view()`): itself, or a view of a slice or `Vec`.
pub(super) fn shaped(id: &Ident, kind: &ParamKind) -> Code {
    if slice_like(kind) {
        slice_view(text!(#id))
    } else {
        text!(#id)
    }
}

/// A view of a slice, `Vec` or fixed-size array `x`.
fn slice_view(x: Code) -> Code {
    text!(::linad::ndarray::ArrayView1::from(&#x[..]))
}

/// The leaves of `ct` (from [`out_pattern`]) as parameters of a transposed
/// body: arrays as views, scalars by value.
pub(super) fn ct_params(leaves: &[(Ident, Leaf)]) -> Vec<(Code, Repr)> {
    leaves
        .iter()
        .map(|(n, leaf)| match leaf {
            Leaf::Array => (text!(#n.view()), Repr::View),
            Leaf::Fixed => (slice_view(text!(#n)), Repr::View),
            Leaf::Scalar => (text!(#n), Repr::Val),
        })
        .collect()
}

/// The cotangents `cs` of a transposed body (held as `reprs`) as the owned
/// tangent types of `params`, flat (a bare value for one).
pub(super) fn cotangents(cs: &[Ident], reprs: &[Repr], params: &[&Param]) -> Code {
    let cv: Vec<Code> = cs
        .iter()
        .zip(reprs)
        .zip(params)
        .map(|((t, r), p)| as_tangent(owned(t, *r), &p.kind))
        .collect();
    flat(&cv)
}

/// An owned cotangent (an array) as the parameter's tangent type: a `Vec`
/// for a slice or `Vec` parameter, an array `[f64; N]` for a fixed-size one
/// (its length is the parameter's, as the cotangent's shape).
pub(super) fn as_tangent(v: Code, kind: &ParamKind) -> Code {
    match kind {
        ParamKind::F64Array { passing, .. } if passing.is_fixed() => fixed_from(v),
        _ if slice_like(kind) => text!((#v).to_vec()),
        _ => v,
    }
}

/// A fixed-size array `[f64; N]` from a one-dimensional array of length
/// `N` (`N` is inferred from where the value goes: a parameter's or the
/// output's type).
fn fixed_from(v: Code) -> Code {
    text!({ let __c = #v; ::core::array::from_fn(|__i| __c[__i]) })
}

/// The Rust type of an output.
pub(super) fn out_ty(o: &Out) -> Code {
    match o {
        Out::F64 => text!(f64),
        Out::Array(r) => array_ty(Scalar::F64, *r),
        Out::Fixed(t) => text!(#t),
        Out::Tuple(parts) => tuple_ty(parts.iter().map(out_ty).collect()),
    }
}

/// The type of the output's cotangent parameter: arrays by reference,
/// fixed-size arrays by value.
pub(crate) fn ct_ty(o: &Out) -> Code {
    match o {
        Out::F64 => text!(f64),
        Out::Fixed(t) => text!(#t),
        Out::Array(r) => {
            let t = array_ty(Scalar::F64, *r);
            text!(&#t)
        }
        Out::Tuple(parts) => tuple_ty(parts.iter().map(ct_ty).collect()),
    }
}

/// What a leaf of the output is.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Leaf {
    /// An `f64`.
    Scalar,
    /// An `ndarray` array: its cotangent's shape is checked against the
    /// result's.
    Array,
    /// A fixed-size array `[f64; N]`: its length is its type's.
    Fixed,
}

/// A pattern destructuring a value of the output's shape into leaf names
/// (appended to `leaves` with what each is).
pub(super) fn out_pattern(o: &Out, leaves: &mut Vec<(Ident, Leaf)>) -> Code {
    let leaf = match o {
        Out::F64 => Leaf::Scalar,
        Out::Array(_) => Leaf::Array,
        Out::Fixed(_) => Leaf::Fixed,
        Out::Tuple(parts) => {
            let ps: Vec<Code> = parts.iter().map(|p| out_pattern(p, leaves)).collect();
            return tuple(&ps);
        }
    };
    let n = ident(&format!("__ct{}", leaves.len()));
    leaves.push((n.clone(), leaf));
    text!(#n)
}

/// The names of the output's leaves in the cotangent `ct` (`ct`, `ct.0`,
/// `ct.1.0`, ..) and in the result (`f's result`, `f's result.0`, ..), in
/// leaf order.
pub(super) fn leaf_paths(o: &Out, path: &str, out: &mut Vec<String>) {
    match o {
        Out::F64 | Out::Array(_) | Out::Fixed(_) => out.push(path.to_string()),
        Out::Tuple(parts) => {
            for (k, p) in parts.iter().enumerate() {
                leaf_paths(p, &format!("{path}.{k}"), out);
            }
        }
    }
}

/// `check_arg_shape(..)` on entry of a public derivative: `given` and
/// `expected` are expressions with a `.shape()`.
pub(super) fn shape_check(
    func: &str,
    role: &str,
    name: &str,
    given: Code,
    expected: Code,
    of: &str,
) -> Code {
    let rt = rt();
    text!(#rt::check_arg_shape(#func, #role, #name, (#given).shape(), (#expected).shape(), #of);)
}

/// Nests flat leaf values as the output says (owned arrays; a fixed-size
/// array is made from its one-dimensional array).
pub(super) fn nest(o: &Out, leaves: &mut impl Iterator<Item = Code>) -> R<Code> {
    let mut next = || {
        leaves
            .next()
            .ok_or("fewer IR results than the output has leaves")
    };
    Ok(match o {
        Out::F64 | Out::Array(_) => next()?,
        Out::Fixed(_) => fixed_from(next()?),
        Out::Tuple(parts) => {
            let ps = parts
                .iter()
                .map(|p| nest(p, leaves))
                .collect::<R<Vec<_>>>()?;
            tuple(&ps)
        }
    })
}

/// Temporaries `__{what}0..` and a pattern binding them (flat).
pub(super) fn temps(what: &str, n: usize) -> (Vec<Ident>, Code) {
    let ts: Vec<Ident> = (0..n).map(|k| ident(&format!("__{what}{k}"))).collect();
    let ps: Vec<Code> = ts.iter().map(|t| text!(#t)).collect();
    (ts, flat(&ps))
}

/// A result as an owned value; arrays returned to the user are in standard
/// (row-major) layout, whatever layout the computation left them in (a
/// transpose is free in ndarray, so a gradient may come out column-major).
pub(super) fn owned(t: &Ident, r: Repr) -> Code {
    match r {
        Repr::View => text!(#t.as_standard_layout().into_owned()),
        Repr::Owned => {
            let rt = super::types::rt();
            text!(#rt::into_standard_layout(#t))
        }
        Repr::Val => text!(#t),
    }
}

/// The owned type of a parameter's tangent / cotangent.
pub(crate) fn tangent_ty(p: &Param) -> Code {
    match &p.kind {
        ParamKind::F64 => text!(f64),
        ParamKind::F64Tuple(n) => tuple_ty(vec![text!(f64); *n]),
        ParamKind::F64Array { passing, .. } if passing.is_fixed() => match &p.ty {
            syn::Type::Reference(r) => {
                let t = &r.elem;
                text!(#t)
            }
            t => text!(#t),
        },
        ParamKind::F64Array { passing, .. } if passing.is_slice_like() => {
            text!(::std::vec::Vec<f64>)
        }
        ParamKind::F64Array { rank, .. } => array_ty(Scalar::F64, *rank),
        _ => text!(()),
    }
}

pub(super) fn check(cond: bool, msg: impl FnOnce() -> String) -> R<()> {
    if cond {
        Ok(())
    } else {
        Err(msg())
    }
}

/// The user's parameters converted to the canonical convention: the
/// statements binding the conversions that make an owned array to
/// `__{what}k` (the half borrows it), and the arguments of a half (the
/// other conversions, a view or a scalar, written in place).
pub(super) fn canonical_args<'p>(
    params: impl Iterator<Item = (&'p Ident, &'p ParamKind)>,
    what: &str,
) -> (Code, Vec<Code>) {
    let mut stmts = Code::new();
    let mut args = vec![];
    for (k, (id, kind)) in params.enumerate() {
        let (x, r) = convert_param(id, kind);
        args.push(match r {
            Repr::Owned => {
                let n = ident(&format!("__{what}{k}"));
                stmts.extend(text!(let #n = #x;));
                text!(#n.view())
            }
            Repr::View | Repr::Val => x,
        });
    }
    (stmts, args)
}

/// The user's parameters as arguments of `fwd` / `jvp` (see
/// [`canonical_args`]).
pub(super) fn primal_args(sig: &crate::sig::Signature) -> (Code, Vec<Code>) {
    canonical_args(sig.params.iter().map(|p| (&p.ident, &p.kind)), "p")
}

/// [`primal_args`] after the assertions the body starts with
/// (`crate::asserts`), for the public derivatives that call the forward
/// half, which does not check them (`f_jvp` calls `jvp`, which does:
/// [`canonical_preconditions`]).
pub(super) fn checked_primal_args(input: &Input) -> (Code, Vec<Code>) {
    let (stmts, args) = primal_args(input.sig);
    let pre = input.preconditions;
    (text!(#(#pre)* #stmts), args)
}

/// The assertions the body starts with (`crate::asserts`) for a hidden
/// building block whose leading parameters, `binds`, are the user's in
/// their canonical form: each one they name rebound under its own name (an
/// array as a reference to its view, an integer array back in its element
/// type, an integer in its own type: exact, the canonical `i64` came from
/// it), then the assertions, in a block of their own. So callers'
/// derivatives fail where the call in `f`'s caller fails. Empty without
/// assertions.
pub(super) fn canonical_preconditions(input: &Input, binds: &[(Code, Repr)]) -> Code {
    let pre = input.preconditions;
    if pre.is_empty() {
        return Code::new();
    }
    // Only the parameters the assertions name (an index array converted
    // back allocates): the words of their text, format strings' inline
    // arguments (`{k}`) included.
    let named = crate::crate_fns::words(&text!(#(#pre)*).to_string());
    let rebound = input
        .sig
        .params
        .iter()
        .zip(binds)
        .filter_map(|(p, (n, _))| {
            let x = &p.ident;
            if !named.contains_key(&syn::ext::IdentExt::unraw(x).to_string()) {
                return None;
            }
            Some(match &p.kind {
                ParamKind::Int(ty) => text!(let #x: #ty = #n as #ty;),
                ParamKind::F64Array { .. } => text!(let #x = &#n;),
                ParamKind::IntArray { elem, .. } => text!(let #x = &#n.mapv(|__v| __v as #elem);),
                _ => text!(let #x = #n;),
            })
        });
    text!({ #(#rebound)* #(#pre)* })
}

/// The declarations `x: T` of the user's parameters.
pub(super) fn user_decls(sig: &crate::sig::Signature) -> Vec<Code> {
    sig.params
        .iter()
        .map(|p| {
            let (n, t) = (&p.ident, &p.ty);
            text!(#n: #t)
        })
        .collect()
}

/// The names `d_x` of the tangents of the `wrt` parameters.
pub(super) fn tangent_names(sig: &crate::sig::Signature) -> Vec<Ident> {
    sig.wrt_params()
        .map(|p| crate::names::tangent(&p.ident, &param_names(sig)))
        .collect()
}

/// `f_jvp(x.., d_x..) -> (y, dy)`: a call of the `jvp` half.
fn f_jvp(input: &Input, h: &Halves) -> R<Code> {
    let sig = input.sig;
    let wrt: Vec<&Param> = sig.wrt_params().collect();
    let n_out = sig.out.ir_tys().len();
    check(h.jvp_reprs.len() == 2 * n_out, || {
        format!("`{}` does not return the signature's results", h.jvp)
    })?;
    let dnames = tangent_names(sig);
    let (pstmts, pargs) = primal_args(sig);
    let (dstmts, dargs) = canonical_args(wrt.iter().zip(&dnames).map(|(p, d)| (d, &p.kind)), "dp");
    let (ts, pat) = temps("y", 2 * n_out);
    let vals: Vec<Code> = ts
        .iter()
        .zip(&h.jvp_reprs)
        .map(|(t, r)| owned(t, *r))
        .collect();
    let y = nest(&sig.out, &mut vals[..n_out].iter().cloned())?;
    let dy = nest(&sig.out, &mut vals[n_out..].iter().cloned())?;
    let fname = &sig.ident;
    let name = crate::names::jvp(fname);
    // Every array tangent has its primal's shape.
    let checks: Vec<Code> = wrt
        .iter()
        .zip(&dnames)
        .filter(|(p, _)| matches!(p.kind, ParamKind::F64Array { .. }))
        .map(|(p, d)| {
            let x = &p.ident;
            shape_check(
                &name.to_string(),
                "tangent",
                &d.to_string(),
                shaped(d, &p.kind),
                shaped(x, &p.kind),
                &format!("the shape of `{x}`"),
            )
        })
        .collect();
    let doc = format!(
        " Forward-mode derivative of [`{fname}`]: returns `({fname}(..), tangent)`, the primal \
         result and its directional derivative along the tangents `d_*` of the differentiated \
         parameters."
    );
    let allows = allows();
    let jvp = &h.jvp;
    let header = super::headers::jvp(sig);
    let keep = primal_use(sig);
    Ok(text! {
        #[doc = #doc]
        #allows
        #[inline]
        #header {
            #keep
            #(#checks)*
            #pstmts
            #dstmts
            let #pat = #jvp(#(#pargs,)* #(#dargs),*);
            (#y, #dy)
        }
    })
}

/// `f_vjp(x.., ct) -> (y, cotangents)`: the forward half, then the
/// transposed one at its residuals; or the one-sweep `vjp` where there is
/// one and every result is a scalar.
fn f_vjp(input: &Input, h: &Halves) -> R<Code> {
    let sig = input.sig;
    let wrt: Vec<&Param> = sig.wrt_params().collect();
    let n_out = sig.out.ir_tys().len();
    check(h.n_out == n_out && h.lin_t_reprs.len() == wrt.len(), || {
        format!("`{}` does not match the signature", h.lin_t_at)
    })?;
    let (pstmts, pargs) = checked_primal_args(input);
    let (ys, ypat) = temps("y", h.fwd_reprs.len());
    let mut leaves = vec![];
    let ct_pat = out_pattern(&sig.out, &mut leaves);
    let rs: Vec<Code> = ys[n_out..].iter().map(|t| text!(#t)).collect();
    let rargs = h.resid_args(&rs);
    let ctargs: Vec<Code> = ct_params(&leaves).into_iter().map(|(t, _)| t).collect();
    let (cs, cpat) = temps("c", wrt.len());
    let yv: Vec<Code> = ys[..n_out]
        .iter()
        .zip(&h.fwd_reprs)
        .map(|(t, r)| owned(t, *r))
        .collect();
    let y = nest(&sig.out, &mut yv.into_iter())?;
    let c = cotangents(&cs, &h.lin_t_reprs, &wrt);
    let ct_use = ct_name(sig);
    // Every array leaf of the cotangent has the shape of the result's leaf,
    // known after the forward pass.
    let vjp_name = crate::names::vjp(&sig.ident).to_string();
    let (mut ct_paths, mut res_paths) = (vec![], vec![]);
    leaf_paths(&sig.out, &ct_use.to_string(), &mut ct_paths);
    leaf_paths(&sig.out, &format!("{}'s result", sig.ident), &mut res_paths);
    let ct_checks: Vec<Code> = leaves
        .iter()
        .zip(&ys)
        .zip(ct_paths.iter().zip(&res_paths))
        .filter(|(((_, leaf), _), _)| *leaf == Leaf::Array)
        .map(|(((leaf, _), y), (cp, rp))| {
            shape_check(
                &vjp_name,
                "cotangent",
                cp,
                text!(#leaf),
                text!(#y),
                &format!("the shape of {rp}"),
            )
        })
        .collect();
    let fname = &sig.ident;
    let header = super::headers::vjp(sig);
    let doc = format!(
        " Reverse-mode derivative of [`{fname}`]: returns `({fname}(..), cotangents)`, the \
         primal result and the cotangents (vector-Jacobian product with `ct`) of the \
         differentiated parameters, in order (a bare value for one parameter)."
    );
    let allows = allows();
    let keep = primal_use(sig);
    // Reverse mode in one sweep, where the core fused a loop and no
    // cotangent's shape waits for the forward pass.
    if let Some((vjp, reprs)) = h.vjp.as_ref().filter(|_| ct_checks.is_empty()) {
        check(reprs.len() == n_out + wrt.len(), || {
            format!("`{vjp}` does not match the signature")
        })?;
        let (ts, pat) = temps("y", reprs.len());
        let vals: Vec<Code> = ts[..n_out]
            .iter()
            .zip(reprs)
            .map(|(t, r)| owned(t, *r))
            .collect();
        let y = nest(&sig.out, &mut vals.into_iter())?;
        let c = cotangents(&ts[n_out..], &reprs[n_out..], &wrt);
        return Ok(text! {
            #[doc = #doc]
            #allows
            #[inline]
            #header {
                #keep
                #pstmts
                let #ct_pat = #ct_use;
                let #pat = #vjp(#(#pargs,)* #(#ctargs),*);
                (#y, #c)
            }
        });
    }
    let (fwd, lin_t) = (&h.fwd, &h.lin_t_at);
    let recycle = h.recycle_residuals(&rs);
    Ok(text! {
        #[doc = #doc]
        #allows
        #[inline]
        #header {
            #keep
            #pstmts
            let #ypat = #fwd(#(#pargs),*);
            let #ct_pat = #ct_use;
            #(#ct_checks)*
            let #cpat = #lin_t(#(#rargs,)* #(#ctargs),*);
            #recycle
            (#y, #c)
        }
    })
}

/// `let _ = f;`, the first statement of each public derivative: a private
/// `f` called only through its derivatives is then used (rustc says
/// "function `f` is never used" otherwise), and an `f` whose derivatives
/// are never called stays dead with them.
pub(super) fn primal_use(sig: &crate::sig::Signature) -> Code {
    let f = &sig.ident;
    text!(let _ = #f;)
}

/// A hidden building block: `#[doc(hidden)]`, `#[inline]` (machine code
/// only where called), the generated items' lint allowances.
pub(super) fn hidden_fn(
    doc: &str,
    vis: &syn::Visibility,
    name: &Ident,
    decls: &[Code],
    ret: Code,
    body: Code,
) -> Code {
    let allows = allows();
    text! {
        #[doc = #doc]
        #[doc(hidden)]
        #allows
        #[inline]
        #vis fn #name(#(#decls),*) -> #ret {
            #body
        }
    }
}

/// `__linad_f_primal`, and `__linad_f_lin` / `__linad_f_lin_t` (the forward
/// half, then a linear one: callers' derivatives recompute the primal); the
/// halves themselves are emitted by [`halves`](super::halves).
fn hidden_blocks(input: &Input, cx: &Ctx, h: &Halves) -> R<Code> {
    let sig = input.sig;
    let (vis, fname) = (&sig.vis, &sig.ident);
    let elided = text!('_);
    let primal = func(cx.prog, &input.lowered.name)?;
    let (pdecls, pbinds) = ir_params(primal, false, &elided);
    let pre = canonical_preconditions(input, &pbinds);
    let (b, _) = body(cx, primal, pbinds, vec![], false)?;
    let nested = nested_fns(cx)?;
    let mut out = hidden_fn(
        &format!(
            " [`{fname}`] with the canonical signature (building block for callers' derivatives)."
        ),
        vis,
        &hidden(fname, Hidden::Primal),
        &pdecls,
        result_ty(primal),
        text!(#pre #nested #b),
    );
    out.extend(recomputing_blocks(input, cx, h, Set::All)?);
    out.extend(super::residuals::residual_blocks(
        input,
        cx,
        h,
        Set::All,
        (true, true),
    )?);
    Ok(out)
}

/// The linear and transposed linear maps of one set of derivatives at a
/// point, recomputing the primal (the forward half, then a linear one):
/// `__linad_f_lin` / `__linad_f_lin_t` for every differentiable parameter,
/// `__linadw_f_lin` / `__linadw_f_lin_t` for the `wrt` ones alone (called
/// by callers whose other arguments of `f` are constants).
pub(super) fn recomputing_blocks(input: &Input, cx: &Ctx, h: &Halves, set: Set) -> R<Code> {
    let sig = input.sig;
    let (vis, fname) = (&sig.vis, &sig.ident);
    let elided = text!('_);
    let primal = func(cx.prog, &input.lowered.name)?;
    let (pdecls, pbinds) = canonical_params(&primal.param_tys(), "x", &elided);
    let pargs: Vec<Code> = pbinds.iter().map(|(t, _)| t.clone()).collect();
    let (ys, _) = temps("y", h.fwd_reprs.len());
    let pats: Vec<Code> = ys
        .iter()
        .enumerate()
        .map(|(k, y)| if k < h.n_out { text!(_) } else { text!(#y) })
        .collect();
    let ypat = flat(&pats);
    let rs: Vec<Code> = ys[h.n_out..].iter().map(|t| text!(#t)).collect();
    let rargs = h.resid_args(&rs);
    let recycle = h.recycle_residuals(&rs);
    let fwd = &h.fwd;
    let which = match set {
        Set::All => "",
        Set::Wrt => ", with respect to its `wrt` parameters alone",
    };
    let mut out = Code::new();
    for lh in h.linear_halves(cx, set.derivatives(input))? {
        let (b, what) = if lh.transposed {
            (
                Hidden::LinT,
                "transposed linear map (vector-Jacobian product)",
            )
        } else {
            (Hidden::Lin, "linear map (Jacobian-vector product)")
        };
        let (half, largs) = (lh.half, &lh.args);
        let decls: Vec<Code> = pdecls.iter().chain(&lh.decls).cloned().collect();
        out.extend(hidden_fn(
            &format!(" The {what} of [`{fname}`]{which} at a point, recomputing the primal."),
            vis,
            &set.block(fname, b),
            &decls,
            lh.ret,
            text!(let #ypat = #fwd(#(#pargs),*); let __out = #half(#(#rargs,)* #(#largs),*); #recycle __out),
        ));
    }
    Ok(out)
}

/// The name of `f_vjp`'s cotangent parameter: `ct`, or `ct_`, `ct__`, ...
/// when a parameter of `f` is already called so.
pub(super) fn ct_name(sig: &crate::sig::Signature) -> Ident {
    crate::names::ct_param(&param_names(sig))
}

/// The names of `f`'s parameters (without raw prefixes).
pub(super) fn param_names(sig: &crate::sig::Signature) -> Vec<String> {
    sig.params
        .iter()
        .map(|p| syn::ext::IdentExt::unraw(&p.ident).to_string())
        .collect()
}
