//! The emitter: IR to Rust tokens calling `linad::__private::ad_runtime`.
//! The only place that knows runtime function names.
//!
//! For `#[differentiable] fn f` it generates (see `wrappers.rs`):
//! - `f_jvp` and `f_vjp` with the user's types, from the derivatives with
//!   respect to the `wrt` parameters, and `f_linearize` / `f_pullback`
//!   (`closures.rs`): the same halves split at the residuals;
//! - the hidden building blocks `__linad_f_{primal,jvp,lin,lin_t}` with the
//!   canonical signature (see `calls.rs`), from the derivatives with respect
//!   to every differentiable parameter, called by other differentiable
//!   functions that call `f`;
//!
//! Files: `names.rs` (variable names), `types.rs` (IR types to Rust types),
//! `uses.rs` (which use may move a value), `lanes.rs` (array lanes taken
//! once before a loop), `strip.rs` (builds computed 8 indices at a time),
//! `func.rs` (function bodies,
//! blocks, statements), `scalar.rs`, `array.rs`, `linear.rs`, `control.rs`,
//! `calls.rs` (statement forms), `wrappers.rs`, `halves.rs`, `closures.rs`,
//! `residuals.rs` (the blocks keeping residuals for callers' top-level
//! calls), `transpose_fn.rs` (`f_transpose` of a `#[linear]` function).

mod array;
mod calls;
mod closures;
mod control;
mod func;
mod halves;
mod headers;
mod inline_exprs;
mod lanes;
mod linear;
mod names;
mod nest;
mod paths;
mod residuals;
mod scalar;
mod slice_view;
mod strip;
mod transpose_fn;
mod types;
mod uses;
mod wrappers;

#[cfg(test)]
mod tests;

use crate::sig::Lowered;
use crate::sig::Signature;
use crate::text::Code;
use ad_core_ir::driver::Derivatives;
pub(crate) use calls::hidden_path;
pub use paths::Scope as PathScope;
use proc_macro2::TokenStream;
pub use transpose_fn::Sizes;

/// The emitter's code as the compiler's tokens: each run of text lexed
/// once (`crate::text`); an emitter failure (an IR construct it cannot
/// emit, text that does not lex: a compiler bug) is a `compile_error!` at
/// `span`, asking for a report (`with`: what to attach to it).
fn tokens(c: Result<Code, String>, span: proc_macro2::Span, with: &str) -> TokenStream {
    c.and_then(Code::into_tokens)
        .unwrap_or_else(|msg| internal_error(&msg, span, with))
}

/// The `compile_error!` of an emitter failure ([`tokens`]).
fn internal_error(msg: &str, span: proc_macro2::Span, with: &str) -> TokenStream {
    let msg = format!("linad internal compiler error (please report it{with}): emitter: {msg}");
    quote::quote_spanned!(span=> ::core::compile_error!(#msg);)
}

/// The public derivatives' stubs of a refused function ([`headers::stubs`]).
pub(crate) fn stubs(sig: &Signature, modes: crate::attr::Modes) -> TokenStream {
    tokens(Ok(headers::stubs(sig, modes)), sig.ident.span(), "")
}

/// `f_transpose` of a `#[linear]` function ([`transpose_fn::f_transpose`]).
pub fn f_transpose(
    sig: &Signature,
    linear: &[bool],
    d: &Derivatives,
    callees: &[crate::sig::Callee],
    sizes: &Sizes,
) -> TokenStream {
    tokens(
        transpose_fn::f_transpose(sig, linear, d, callees, sizes),
        sig.ident.span(),
        "",
    )
}

/// The generated items' lint allowances ([`wrappers::allows`]).
pub(crate) fn allows() -> TokenStream {
    tokens(Ok(wrappers::allows()), proc_macro2::Span::call_site(), "")
}

/// The cotangent type of an output ([`wrappers::ct_ty`]).
pub(crate) fn ct_ty(o: &crate::sig::Out) -> TokenStream {
    tokens(Ok(wrappers::ct_ty(o)), proc_macro2::Span::call_site(), "")
}

/// The tangent type of a parameter ([`wrappers::tangent_ty`]).
pub(crate) fn tangent_ty(p: &crate::sig::Param) -> TokenStream {
    tokens(
        Ok(wrappers::tangent_ty(p)),
        proc_macro2::Span::call_site(),
        "",
    )
}

/// Everything the emitter needs for one function.
pub struct Input<'a> {
    /// The signature.
    pub sig: &'a Signature,
    /// The lowered function.
    pub lowered: &'a Lowered,
    /// Derivatives with respect to the `wrt` parameters (for `f_jvp`, `f_vjp`).
    pub user: &'a Derivatives,
    /// Derivatives with respect to every differentiable parameter (hidden
    /// building blocks called by other differentiable functions).
    pub all: &'a Derivatives,
    /// Which public derivatives to emit.
    pub public: Public,
    /// Whether other functions may call the hidden building blocks
    /// (`crate_fns::callers_possible`); without, only what the public
    /// derivatives use is emitted, and [`Input::all`] is not read when the
    /// `wrt` set is smaller.
    pub callers: bool,
    /// The assertions the body starts with (`crate::asserts`), run first
    /// by the public derivatives.
    pub preconditions: &'a [syn::Stmt],
}

/// Which public derivatives of `f` are emitted: those of the attribute's
/// modes, and, for a function nothing outside the crate can call, only
/// those the crate's source names (`crate_fns::mentioned`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Public {
    /// `f_jvp`.
    pub jvp: bool,
    /// `f_linearize`.
    pub linearize: bool,
    /// `f_vjp`.
    pub vjp: bool,
    /// `f_pullback`.
    pub pullback: bool,
}

impl Public {
    /// Those of `modes` that `named` keeps (given each item's name).
    pub fn of(
        f: &proc_macro2::Ident,
        modes: crate::attr::Modes,
        named: impl Fn(&proc_macro2::Ident) -> bool,
    ) -> Public {
        use crate::names;
        Public {
            jvp: modes.forward && named(&names::jvp(f)),
            linearize: modes.forward && named(&names::linearize(f)),
            vjp: modes.reverse && named(&names::vjp(f)),
            pullback: modes.reverse && named(&names::pullback(f)),
        }
    }

    /// Every item of `modes`.
    pub fn all_of(modes: crate::attr::Modes) -> Public {
        Public {
            jvp: modes.forward,
            linearize: modes.forward,
            vjp: modes.reverse,
            pullback: modes.reverse,
        }
    }
}

/// `f_jvp`, `f_vjp` and the hidden building blocks of `crate::names`.
///
/// An emitter failure (an IR construct it cannot emit: a compiler bug) is
/// reported as a `compile_error!` at the function's name.
pub fn companions(input: &Input) -> TokenStream {
    let items = wrappers::companions(input)
        .and_then(|groups| groups.into_iter().map(Code::into_tokens).collect());
    items.unwrap_or_else(|msg| {
        let with = " with `#[differentiable(dump)]` output";
        internal_error(&msg, input.sig.ident.span(), with)
    })
}
