//! The emitter: IR to Rust tokens calling `linad::__private::ad_runtime`.
//! The only place that knows runtime function names.

use crate::lower::Lowered;
use crate::sig::Signature;
use ad_core_ir::driver::Derivatives;
use proc_macro2::TokenStream;

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
}

/// `f_jvp`, `f_vjp` and the hidden building blocks of `crate::names`.
pub fn companions(input: &Input) -> TokenStream {
    let _ = input;
    TokenStream::new()
}
