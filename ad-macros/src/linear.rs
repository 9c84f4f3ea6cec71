//! `#[linear(x, ..)]`: a function declared linear in the named parameters.
//!
//! The body is lowered with the named parameters seeded and put in Linear A
//! with them linear (`ad_core_ir::linear_form`): every place where linearity
//! breaks is a compile error at its expression. The sizes of the linear
//! arrays become shape parameters whose values `ad_core_ir::linear_shapes`
//! finds among the other parameters' shapes and the cotangent's. The linear
//! program (no primal results) is then unzipped and transposed
//! (`driver::differentiate_rule`), and `f_transpose` is emitted
//! (`emit::f_transpose`). The function is also `#[differentiable]` in all
//! its parameters: the expansion of `#[differentiable]` follows.

use crate::emit;
use crate::expand::{driver_error, internal_error, on_large_stack};
use crate::fallback::fallback;
use crate::lower;
use ad_core_ir::driver::{differentiate_rule, Options};
use ad_core_ir::linear_form::{linear_form, SeedShape};
use ad_core_ir::linear_shapes::solve_shapes;
use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::punctuated::Punctuated;

/// Expands `#[linear(attr)] item`.
pub fn expand(attr: TokenStream, item: TokenStream) -> TokenStream {
    let run = std::panic::AssertUnwindSafe(|| transpose(attr, item.clone()));
    match std::panic::catch_unwind(run) {
        Ok(Ok(t)) => {
            let differentiable = crate::expand::expand(TokenStream::new(), item);
            quote!(#differentiable #t)
        }
        Ok(Err(errs)) => fallback(item, errs),
        Err(_) => fallback(
            item,
            vec![internal_error(Span::call_site(), "a panic in #[linear]")],
        ),
    }
}

/// The parameter names of `#[linear(x, y)]`.
fn names(attr: TokenStream) -> Result<Vec<syn::Ident>, Vec<syn::Error>> {
    let usage = "#[linear] names the parameters the function is linear in: write `#[linear(x)]` or `#[linear(x, y)]`";
    let span = attr
        .clone()
        .into_iter()
        .next()
        .map_or(Span::call_site(), |t| t.span());
    let parser = Punctuated::<syn::Ident, syn::Token![,]>::parse_terminated;
    let list = syn::parse::Parser::parse2(parser, attr)
        .map_err(|e| vec![syn::Error::new(e.span(), usage)])?;
    if list.is_empty() {
        return Err(vec![syn::Error::new(span, usage)]);
    }
    Ok(list.into_iter().collect())
}

/// `f_transpose`, or every error.
fn transpose(attr: TokenStream, item: TokenStream) -> Result<TokenStream, Vec<syn::Error>> {
    crate::depth::tokens(&attr).map_err(|e| vec![e])?;
    crate::depth::tokens(&item).map_err(|e| vec![e])?;
    let names = names(attr)?;
    let func: syn::ItemFn = syn::parse2(item).map_err(|e| {
        vec![syn::Error::new(
            e.span(),
            "#[linear(..)] applies to a function (`fn name(..) -> .. { .. }`)",
        )]
    })?;
    crate::depth::syntax(&func).map_err(|e| vec![e])?;
    crate::expand::per_variant(&func, |f| transpose_variant(&names, f))
}

/// `f_transpose` of one `#[cfg]` variant of the function, or every error.
fn transpose_variant(
    names: &[syn::Ident],
    func: &syn::ItemFn,
) -> Result<TokenStream, Vec<syn::Error>> {
    let sig = lower::signature(func, None)?;
    // The linear parameters, by name.
    let mut linear = vec![false; sig.params.len()];
    let mut errors = vec![];
    for n in names {
        match sig.params.iter().position(|p| p.ident == *n) {
            None => errors.push(syn::Error::new(
                n.span(),
                format!("`{n}` is not a parameter of `{}`", sig.ident),
            )),
            Some(k) if !sig.params[k].kind.is_differentiable() => errors.push(syn::Error::new(
                n.span(),
                format!("`{n}` cannot be linear: only `f64`, tuples of `f64` and `f64` arrays can (integers, booleans and index arrays are constants)"),
            )),
            Some(k) if linear[k] => errors.push(syn::Error::new(n.span(), format!("`{n}` is named twice"))),
            Some(k) => linear[k] = true,
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let mut lowered = lower::lower_seeded(func, &sig, &linear, true)?;
    let outputs = crate::rule::outputs(
        &mut lowered,
        func,
        "a non-linear output",
        "the output of a linear function",
    );
    let ir = lowered
        .program
        .func(&lowered.name)
        .cloned()
        .ok_or_else(|| vec![internal_error(sig.span, "no lowered function")])?;
    let n_out = sig.out.ir_tys().len();
    let shapes = vec![SeedShape::Params; names.len()];
    let lf = linear_form(
        &ir,
        &linear,
        n_out,
        &shapes,
        &outputs,
        &lowered.program.linear_externs,
    )
    .map_err(|es| crate::rule::linearity_errors(es, &lowered, sig.span, &list(&sig, &linear)))?;
    let n_consts = linear.iter().filter(|l| !**l).count();
    let solved = solve_shapes(&lf, n_consts);
    let lins: Vec<&crate::sig::Param> = sig
        .params
        .iter()
        .zip(&linear)
        .filter(|(_, l)| **l)
        .map(|(p, _)| p)
        .collect();
    let mut sizes = vec![];
    for ((j, axis, _), s) in lf.shape_params.iter().zip(&solved) {
        match s {
            Some(s) => sizes.push(*s),
            None => errors.push(syn::Error::new(
                lins[*j].ident.span(),
                format!(
                    "cannot tell the size of axis {axis} of `{x}` from the other parameters and the output: `{f}_transpose` takes no `{x}` and must size its cotangent; use `{x}` where its size meets a non-linear array's (e.g. `a.dot(&{x})`, `&w * &{x}`) or let it reach the output with its size",
                    x = lins[*j].ident,
                    f = sig.ident
                ),
            )),
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let name = format!("{}__linear", sig.ident);
    let prog = lowered.program.clone();
    let dims: Vec<(usize, usize)> = lf
        .shape_params
        .iter()
        .map(|(j, axis, _)| (*j, *axis))
        .collect();
    let jvp = lf.func;
    let checks = linear_call_checks(&lowered, &lf.linear_calls);
    let markers = markers(&sig, &linear);
    let d = on_large_stack(move || differentiate_rule(&prog, &name, jvp, &Options::default()))
        .map_err(|e| vec![internal_error(sig.span, &e)])?
        .map_err(|e| vec![driver_error(e, &lowered, sig.span)])?;
    let sizes = emit::Sizes {
        dims: &dims,
        solved: &sizes,
    };
    let t = emit::f_transpose(&sig, &linear, &d, &lowered.callees, &sizes);
    Ok(quote!(#markers #checks #t))
}

/// `__linad_f_is_declared_linear_in_parameter_k` for each linear parameter
/// `k`: what a linear caller's check names.
fn markers(sig: &crate::sig::Signature, linear: &[bool]) -> TokenStream {
    let vis = &sig.vis;
    let items = linear
        .iter()
        .enumerate()
        .filter(|(_, l)| **l)
        .map(|(k, _)| {
            let m = crate::names::linear_marker(&sig.ident, k);
            quote! {
                #[doc(hidden)]
                #[allow(non_upper_case_globals, dead_code)]
                #vis const #m: () = ();
            }
        });
    quote!(#(#items)*)
}

/// For every call passing linear values, a reference to the callee's
/// marker of each such parameter (at the call): the program compiles only
/// if the callee is `#[linear]` in those parameters.
pub(crate) fn linear_call_checks(
    lowered: &crate::lower::Lowered,
    calls: &[(String, Vec<usize>, Option<ad_core_ir::ir::SrcId>)],
) -> TokenStream {
    let mut out = TokenStream::new();
    for (callee, slots, src) in calls {
        let Some(c) = lowered.callees.iter().find(|c| c.ir_name == *callee) else {
            continue;
        };
        let span = src
            .and_then(|s| lowered.spans.get(s.0 as usize).copied())
            .unwrap_or_else(Span::call_site);
        for k in slots {
            let mut path = c.path.clone();
            if let Some(last) = path.segments.last_mut() {
                let mut m = crate::names::linear_marker(&last.ident, *k);
                m.set_span(span);
                last.ident = m;
                last.arguments = syn::PathArguments::None;
            }
            out.extend(quote::quote_spanned!(span=> const _: () = #path;));
        }
    }
    out
}

/// `` `x` `` or `` `x` and `y` ``.
fn list(sig: &crate::sig::Signature, linear: &[bool]) -> String {
    let ns: Vec<String> = sig
        .params
        .iter()
        .zip(linear)
        .filter(|(_, l)| **l)
        .map(|(p, _)| format!("`{}`", p.ident))
        .collect();
    match ns.as_slice() {
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
        [] => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use crate::test_crate::TestCrate;
    use quote::quote;

    /// A caller whose derivatives reach a `#[linear(x)]` callee only
    /// through `x` calls the callee and its transpose (`__linad_lap_linear`,
    /// `__linad_lap_linear_t`), not its linearisation; when the other
    /// parameter carries a derivative too, the general blocks are used.
    #[test]
    fn callers_use_the_linear_function_and_its_transpose() {
        let krate = TestCrate::new(
            "linear-calls",
            "#[linear(x)] fn lap(h: f64, x: &Array1<f64>) -> Array1<f64> { x * h }\n\
             #[differentiable] fn f(x: &Array1<f64>) -> f64 { 0.0 }\n\
             #[differentiable] fn g(h: f64, x: &Array1<f64>) -> f64 { 0.0 }",
        );
        let f = krate.expand_idents(quote! {
            fn f(x: &Array1<f64>) -> f64 {
                let y: Array1<f64> = lap(2.0, &x.mapv(f64::sin));
                y.mapv(|v| v * v).sum()
            }
        });
        let has = |ids: &[String], n: &str| ids.iter().any(|i| i == n);
        assert!(has(&f, "__linad_lap_linear"), "{f:?}");
        assert!(has(&f, "__linad_lap_linear_t"), "{f:?}");
        for general in ["__linad_lap_jvp", "__linad_lap_lin", "__linad_lap_lin_t"] {
            assert!(!has(&f, general), "{general} in {f:?}");
        }
        let g = krate.expand_idents(quote! {
            fn g(h: f64, x: &Array1<f64>) -> f64 {
                let y: Array1<f64> = lap(h * h, &x.mapv(f64::sin));
                y.sum()
            }
        });
        assert!(has(&g, "__linad_lap_lin_t"), "{g:?}");
        assert!(!has(&g, "__linad_lap_linear_t"), "{g:?}");
    }
}
