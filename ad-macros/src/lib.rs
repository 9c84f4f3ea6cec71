//! `#[differentiable]`: generates forward- and reverse-mode derivatives of a
//! Rust function at compile time.
//!
//! This file holds only the entry point; the pipeline is in `expand.rs`:
//! `attr` (arguments) -> `lower` (restricted Rust to IR, all "unsupported"
//! errors) -> `ad_core_ir::driver` (jvp, unzip, transpose, simplify) ->
//! `emit` (IR to Rust calling `linad::__private::ad_runtime`); on error,
//! `fallback` emits the errors together with the original function.

mod asserts;
mod attr;
mod cfg;
mod crate_fns;
mod depth;
mod derive;
mod emit;
mod expand;
mod f32s;
mod fallback;
mod impls;
mod inline;
mod linear;
mod lower;
mod names;
mod rule;
mod sig;
mod struct_results;
mod structs;
mod substitute;
mod text;

#[cfg(test)]
mod deep_tests;
#[cfg(test)]
mod fuzz_tests;
#[cfg(test)]
mod size_tests;
#[cfg(test)]
mod test_crate;

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
/// Arguments: `wrt(x, w)` differentiates only the named parameters;
/// `forward` / `reverse` emit one mode's public derivatives; `dump` also
/// generates `f_linad_dump() -> &'static str` with the IR after every pass
/// and the generated Rust.
///
/// A function nothing outside the crate can call (not `pub`, or `pub` in a
/// binary) gets only what the crate's source names: the public derivatives
/// it mentions (`f_vjp`, `f_jvp`, `f_linearize`, `f_pullback`), and the
/// hidden building blocks other functions' derivatives call only when some
/// other code mentions `f`.
#[proc_macro_attribute]
pub fn differentiable(attr: TokenStream, item: TokenStream) -> TokenStream {
    let _crate = crate_fns::Scope::enter(proc_macro::Span::call_site().local_file());
    expand::expand(attr.into(), item.into()).into()
}

/// Declares a forward-mode rule for an ordinary function `f` of the same
/// module, which linad then uses instead of `f`'s body.
///
/// ```ignore
/// fn norm_cdf(x: f64) -> f64 { .. any Rust .. }
///
/// #[custom_jvp(norm_cdf)]
/// fn norm_cdf_rule(x: f64, d_x: f64) -> (f64, f64) {
///     let y = norm_cdf(x);
///     let pdf = (-0.5 * x * x).exp() / (2.0 * std::f64::consts::PI).sqrt();
///     (y, pdf * d_x)
/// }
/// // generates norm_cdf_jvp, norm_cdf_vjp, norm_cdf_linearize, norm_cdf_pullback,
/// // and what #[differentiable] callers of norm_cdf need.
/// ```
///
/// The rule takes `f`'s parameters in order, then one tangent per
/// differentiable parameter (same type), and returns `(primal, tangent)`.
/// The tangent must be linear in the tangents and the primal must not
/// depend on them; both are checked at compile time. Reverse mode is derived
/// by transposing the rule.
#[proc_macro_attribute]
pub fn custom_jvp(attr: TokenStream, item: TokenStream) -> TokenStream {
    let _crate = crate_fns::Scope::enter(proc_macro::Span::call_site().local_file());
    rule::expand(attr.into(), item.into()).into()
}

/// Declares a function linear in the named parameters, checks it at compile
/// time, and generates its transpose beside it.
///
/// ```ignore
/// #[linear(x)]
/// fn matvec(a: &Array2<f64>, x: &Array1<f64>) -> Array1<f64> { a.dot(x) }
/// // fn matvec_transpose(a: &Array2<f64>, ct: &Array1<f64>) -> Array1<f64>
/// ```
///
/// `f_transpose` takes the other parameters in order and a cotangent of the
/// output (as `f_vjp` takes it) and returns the cotangents of the linear
/// parameters. The function is also `#[differentiable]` in all its
/// parameters. A product of two linear values, a non-linear function of one,
/// an affine constant and the like are compile errors at the expression.
/// A caller (differentiable or linear) whose derivative reaches the function
/// only through its linear parameters calls the function itself in forward
/// mode and its transpose in reverse mode: no linearisation.
#[proc_macro_attribute]
pub fn linear(attr: TokenStream, item: TokenStream) -> TokenStream {
    let _crate = crate_fns::Scope::enter(proc_macro::Span::call_site().local_file());
    linear::expand(attr.into(), item.into()).into()
}

/// Derives the tangent type of a struct of parameters, so that
/// `#[differentiable]` functions may take it (`p: &Mlp` or `p: Mlp`) and
/// read its fields.
///
/// ```ignore
/// #[derive(linad::Differentiable, Clone, Debug)]
/// pub struct Mlp {
///     pub w1: Array2<f64>,
///     pub b1: Array1<f64>,
///     #[linad(constant)]
///     pub act: usize,
/// }
/// // pub struct MlpTangent { pub w1: Array2<f64>, pub b1: Array1<f64> }
/// // (Clone, Debug, PartialEq), MlpTangent::zeros_like(&Mlp), dot, + - and * f64,
/// // and linad::Tangent (to_flat / from_flat).
/// ```
///
/// The tangent holds the fields with a derivative (`f64`, `f32`, their
/// tuples, arrays and `Vec`s, and other structs deriving `Differentiable`),
/// with their types; integer, `bool` and `#[linad(constant)]` fields have
/// none. `f_jvp` takes `d_p: &MlpTangent`; `f_vjp` returns an `MlpTangent`
/// for `p`.
#[proc_macro_derive(Differentiable, attributes(linad))]
pub fn derive_differentiable(item: TokenStream) -> TokenStream {
    let _crate = crate_fns::Scope::enter(None);
    derive::expand(item.into()).into()
}
