//! On error: every error as a `compile_error!` and the original function (so
//! its other uses still type-check). `#[differentiable]` adds stubs of the
//! public derivatives (`emit::stubs`: their real signatures, bodies that
//! never run), so the user sees the real errors, not also a cascade of
//! "cannot find function `f_vjp`" at every call of a derivative.

use proc_macro2::TokenStream;
use quote::quote;

/// The errors and the original item.
pub fn fallback(item: TokenStream, errors: Vec<syn::Error>) -> TokenStream {
    let errs = errors.into_iter().map(|e| e.to_compile_error());
    quote! {
        #(#errs)*
        #item
    }
}
