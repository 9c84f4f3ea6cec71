//! `#[differentiable]` and friends. The front end (restricted Rust to IR) and the
//! emitter (IR to Rust) arrive with the macro issue; for now the attribute only
//! checks that it is placed on a function and leaves it unchanged.

use proc_macro::TokenStream;

/// Marks a function for differentiation. Not yet implemented: currently returns
/// the function unchanged (companions `f_jvp` / `f_vjp` arrive with the macro issue).
#[proc_macro_attribute]
pub fn differentiable(_attr: TokenStream, item: TokenStream) -> TokenStream {
    match syn::parse::<syn::ItemFn>(item.clone()) {
        Ok(_) => item,
        Err(e) => e.to_compile_error().into(),
    }
}
