//! The front end: restricted Rust (a `syn::ItemFn`) to IR.
//!
//! Every "unsupported" diagnostic of the macro lives here, as a `syn::Error`
//! spanned on the offending tokens; all errors of a function are returned
//! together. Statements carry `SrcId`s indexing [`Lowered::spans`].

use crate::sig::Signature;
use ad_core_ir::ir::Program;
use proc_macro2::Span;

/// The lowered function.
pub struct Lowered {
    /// The function (named as the Rust function) plus extern declarations of
    /// the `#[differentiable]` functions it calls (see `crate::names`).
    pub program: Program,
    /// The IR name of the function.
    pub name: String,
    /// `SrcId(k)` of a statement is the span `spans[k]`.
    pub spans: Vec<Span>,
    /// The functions called, one per extern declared in `program` (except the
    /// derived `__jvp/__lin/__lin_t` declarations).
    pub callees: Vec<Callee>,
}

/// A function called by the lowered function.
pub struct Callee {
    /// The IR name of the extern (the path as written, e.g. `"m::g"`).
    pub ir_name: String,
    /// The path as written, for emission.
    pub path: syn::Path,
    /// `true`: another `#[differentiable]` function, called through its
    /// hidden building blocks with the canonical signature. `false`: a plain
    /// function whose arguments are all constants, called as written.
    pub differentiable: bool,
    /// Rust types of the results (from the `let` annotation at the call site,
    /// `f64` by default); an integer result is converted to `i64` by the emitter.
    pub result_tys: Vec<syn::Type>,
}

/// Reads the signature: parameter kinds, `wrt` selection and output type.
pub fn signature(
    item: &syn::ItemFn,
    wrt: Option<&[syn::Ident]>,
) -> Result<Signature, Vec<syn::Error>> {
    let _ = (item, wrt);
    Err(vec![syn::Error::new(
        Span::call_site(),
        "#[differentiable]: the front end is not built yet",
    )])
}

/// Lowers the body to IR.
pub fn lower(item: &syn::ItemFn, sig: &Signature) -> Result<Lowered, Vec<syn::Error>> {
    let _ = (item, sig);
    Err(vec![syn::Error::new(
        Span::call_site(),
        "#[differentiable]: the front end is not built yet",
    )])
}
