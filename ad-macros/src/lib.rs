//! `#[differentiable]`: generates forward- and reverse-mode derivatives of a
//! Rust function at compile time.
//!
//! This file holds only the entry point; the pipeline is in `expand.rs`:
//! `attr` (arguments) -> `lower` (restricted Rust to IR, all "unsupported"
//! errors) -> `ad_core_ir::driver` (jvp, unzip, transpose, simplify) ->
//! `emit` (IR to Rust calling `linad::__private::ad_runtime`); on error,
//! `fallback` emits the errors together with the original function.

mod attr;
mod cfg;
mod depth;
mod emit;
mod expand;
mod fallback;
mod lower;
mod names;
mod sig;

#[cfg(test)]
mod deep_tests;
#[cfg(test)]
mod fuzz_tests;

use proc_macro::TokenStream;

/// Generates `f_jvp` (forward mode) and `f_vjp` (reverse mode) beside `f`.
///
/// ```ignore
/// #[differentiable]
/// fn f(x: f64, w: &Array1<f64>, n: usize) -> f64 { .. }
/// // fn f_jvp(x: f64, w: &Array1<f64>, n: usize, d_x: f64, d_w: &Array1<f64>) -> (f64, f64)
/// // fn f_vjp(x: f64, w: &Array1<f64>, n: usize, ct: f64) -> (f64, (f64, Array1<f64>))
/// ```
///
/// Arguments: `wrt(x, w)` differentiates only the named parameters; `dump`
/// also generates `f_linad_dump() -> &'static str` with the IR after every
/// pass and the generated Rust.
#[proc_macro_attribute]
pub fn differentiable(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand::expand(attr.into(), item.into()).into()
}
