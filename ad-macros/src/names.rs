//! Naming conventions of generated items (one place, so a caller's expansion
//! can name a callee's building blocks without seeing the callee).
//!
//! For `fn f`: the user-facing `f_jvp`, `f_vjp`, `f_linearize` and
//! `f_pullback`, and hidden building blocks
//! with the canonical IR-level signature (`f64`, `i64`, `bool`, array views,
//! tuples of `f64`), differentiated with respect to every differentiable
//! parameter:
//! - `__linad_f_primal(x..) -> y` — the primal;
//! - `__linad_f_jvp(x.., dx..) -> (y, dy)`;
//! - `__linad_f_lin(x.., dx..) -> dy` — recomputes the primal (checkpoint);
//! - `__linad_f_lin_t(x.., ȳ..) -> x̄` — recomputes the primal, then reverse;
//! - `__linad_f_fwdres(x..) -> (y.., r)`, `__linad_f_linres(&r, dx..) -> dy`
//!   and `__linad_f_linres_t(&r, ȳ..) -> x̄` with `type __linad_f_res`: the
//!   forward half keeping its residuals `r` (owned) and the linear maps at
//!   them, so a caller's top-level call of `f` stores `r` instead of
//!   recomputing `f`'s primal in its linear maps;
//! - with `wrt(..)` naming fewer parameters, `__linadw_f_jvp`,
//!   `__linadw_f_lin` and `__linadw_f_lin_t` too: the same with respect to
//!   those alone (tangents and cotangents of them only), which callers use
//!   where `f`'s other arguments are constants.
//!
//! In the IR of a caller, a callee `f` (or `path::f`) is an extern named by
//! its path as written (`"f"`, `"m::f"`); the derived names are
//! `ad_core_ir::driver::Names::of(path)`.

use proc_macro2::Ident;
use syn::ext::IdentExt;

/// `format(name)` as an identifier with `f`'s span, where `name` is `f`
/// without a raw prefix (`r#type` -> `type_jvp`): derived names are never raw
/// and never keywords (they carry a prefix or suffix).
pub fn derived(f: &Ident, format: impl FnOnce(&str) -> String) -> Ident {
    Ident::new(&format(&f.unraw().to_string()), f.span())
}

/// Which building block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Block {
    /// The primal with the canonical signature.
    Primal,
    /// Forward mode, all differentiable parameters.
    Jvp,
    /// Linear map, recomputing the primal.
    Lin,
    /// Transposed linear map, recomputing the primal.
    LinT,
    /// The forward half: primal results, then residuals.
    Fwd,
    /// The linear map at given residuals.
    LinAt,
    /// The transposed linear map at given residuals.
    LinTAt,
    /// Reverse mode in one sweep (the forward half and the transposed
    /// linear map, their loops fused), when the core built one.
    Vjp,
    /// A `#[linear]` function as a linear map of its linear parameters
    /// (canonical signature: the other parameters, then the linear ones).
    Linear,
    /// Its transpose (the other parameters, then the output's cotangent).
    LinearT,
    /// The forward half keeping its residuals as one owned value (of the
    /// type [`Block::Res`]), for callers' top-level calls.
    FwdRes,
    /// The linear map at those residuals (taken by reference).
    LinRes,
    /// The transposed linear map at those residuals.
    LinResT,
    /// The type of those residuals (a tuple of owned values).
    Res,
}

impl Block {
    /// The suffix of the block's name.
    fn suffix(self) -> &'static str {
        match self {
            Block::Primal => "primal",
            Block::Jvp => "jvp",
            Block::Lin => "lin",
            Block::LinT => "lin_t",
            Block::Fwd => "fwd",
            Block::LinAt => "lin_at",
            Block::LinTAt => "lin_t_at",
            Block::Vjp => "vjp",
            Block::Linear => "linear",
            Block::LinearT => "linear_t",
            Block::FwdRes => "fwdres",
            Block::LinRes => "linres",
            Block::LinResT => "linres_t",
            Block::Res => "res",
        }
    }
}

/// The hidden building block of function `f` (last path segment).
pub fn hidden(f: &Ident, b: Block) -> Ident {
    derived(f, |f| format!("__linad_{f}_{}", b.suffix()))
}

/// The block of `f`'s derivatives with respect to its `wrt` parameters only
/// (when those are not all of them): `__linadw_f_fwd`, and `__linadw_f_jvp`,
/// `__linadw_f_lin`, `__linadw_f_lin_t`, which callers call where `f`'s
/// other arguments are constants (hidden, with `f`'s visibility). The
/// prefix differs from [`hidden`]'s, so the two never meet whatever `f` is.
pub fn hidden_wrt(f: &Ident, b: Block) -> Ident {
    derived(f, |f| format!("__linadw_{f}_{}", b.suffix()))
}

/// `f_jvp`.
pub fn jvp(f: &Ident) -> Ident {
    derived(f, |f| format!("{f}_jvp"))
}

/// `f_vjp`.
pub fn vjp(f: &Ident) -> Ident {
    derived(f, |f| format!("{f}_vjp"))
}

/// `f_linearize`.
pub fn linearize(f: &Ident) -> Ident {
    derived(f, |f| format!("{f}_linearize"))
}

/// `f_transpose` (of a `#[linear]` function).
pub fn transpose(f: &Ident) -> Ident {
    derived(f, |f| format!("{f}_transpose"))
}

/// The marker a `#[linear]` function `f` defines for its linear parameter
/// `k` (0-based); a linear caller passing a linear value there names it.
pub fn linear_marker(f: &Ident, k: usize) -> Ident {
    derived(f, |f| {
        format!("__linad_{f}_is_declared_linear_in_parameter_{k}")
    })
}

/// `f_pullback`.
pub fn pullback(f: &Ident) -> Ident {
    derived(f, |f| format!("{f}_pullback"))
}

/// `d_x`: the tangent parameter of `f_jvp` for parameter `x`, or `d_x_`,
/// `d_x__`, ... when one of `taken` (the function's parameter names) is
/// already called so.
pub fn tangent(x: &Ident, taken: &[String]) -> Ident {
    derived(x, |x| {
        let mut name = format!("d_{x}");
        while taken.contains(&name) {
            name.push('_');
        }
        name
    })
}

/// `ct`: the output cotangent parameter of `f_vjp` / `f_pullback`, or
/// `ct_`, `ct__`, ... when one of `taken` (the function's parameter names)
/// is already called so.
pub fn ct_param(taken: &[String]) -> Ident {
    let mut name = "ct".to_string();
    while taken.contains(&name) {
        name.push('_');
    }
    Ident::new(&name, proc_macro2::Span::call_site())
}

/// The `dump` companion of a function whose derivatives come from another
/// (its flat or `f64` version, `inner`): `f_linad_dump()` returning the
/// inner one's.
pub fn dump_forwarder(func: &syn::ItemFn, inner: &Ident, of: &str) -> proc_macro2::TokenStream {
    let (vis, name, inner) = (&func.vis, dump(&func.sig.ident), dump(inner));
    let doc = format!(" The IR of the derived functions (`jvp`, `fwd`, `lin`, `lin_t`) and the generated Rust (of {of}).");
    quote::quote! {
        #[doc = #doc]
        #vis fn #name() -> &'static str { #inner() }
    }
}

/// `f_linad_dump` (with `#[differentiable(dump)]`).
pub fn dump(f: &Ident) -> Ident {
    derived(f, |f| format!("{f}_linad_dump"))
}
