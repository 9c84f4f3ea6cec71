//! On error: every error as a `compile_error!`, plus the original function
//! (so its other uses still type-check) — the user sees the real errors, not a
//! cascade of "cannot find `f_vjp`".

use proc_macro2::TokenStream;
use quote::quote;

/// The errors, the original item and nothing else.
pub fn fallback(item: TokenStream, errors: Vec<syn::Error>) -> TokenStream {
    let errs = errors.into_iter().map(|e| e.to_compile_error());
    quote! {
        #(#errs)*
        #item
    }
}
