//! `#[custom_jvp(f)]` on a forward rule: the derivatives of an ordinary
//! function `f` from the rule instead of from `f`'s body.
//!
//! The rule `fn r(x.., d_x..) -> (Out, Out)` takes `f`'s parameters, then one
//! tangent per differentiable parameter of `f` (same type), and returns the
//! primal and the tangent. It is lowered with only the tangents seeded (so
//! its primal part may call any function), put in Linear A with the
//! tangents linear (`ad_core_ir::linear_form`: every linearity error is
//! reported at its expression), then unzipped and transposed like the JVP
//! pass's output (`driver::differentiate_rule`). The emitter then generates
//! everything `#[differentiable]` would for `f`: `f_jvp`, `f_vjp`,
//! `f_linearize`, `f_pullback` and the hidden building blocks that
//! differentiable callers of `f` use. A `const` item asserts that `f` has
//! the signature the rule implies, so a mismatch is a type error at the
//! attribute.

use crate::emit;
use crate::expand::{driver_error, internal_error, on_large_stack};
use crate::fallback::fallback;
use crate::lower;
use crate::sig::{Out, Param, Signature};
use ad_core_ir::driver::{differentiate_rule, Options};
use ad_core_ir::linear_form::{linear_form, Outputs, SeedShape};
use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned, ToTokens};

/// Expands `#[custom_jvp(attr)] item`.
pub fn expand(attr: TokenStream, item: TokenStream) -> TokenStream {
    let paths = crate::emit::PathScope::enter(&item, 'r');
    let run = std::panic::AssertUnwindSafe(|| try_expand(attr, item.clone()));
    match std::panic::catch_unwind(run) {
        Ok(Ok(ts)) => paths.imported(ts),
        Ok(Err(errs)) => fallback(item, errs),
        Err(_) => fallback(
            item,
            vec![internal_error(
                Span::call_site(),
                "a panic in #[custom_jvp]",
            )],
        ),
    }
}

fn try_expand(attr: TokenStream, item: TokenStream) -> Result<TokenStream, Vec<syn::Error>> {
    crate::depth::tokens(&attr).map_err(|e| vec![e])?;
    crate::depth::tokens(&item).map_err(|e| vec![e])?;
    let target: syn::Ident = syn::parse2(attr.clone()).map_err(|_| {
        let span = attr.clone().into_iter().next().map_or(Span::call_site(), |t| t.span());
        vec![syn::Error::new(
            span,
            "#[custom_jvp] names the function the rule is for, defined in the same module: write `#[custom_jvp(f)]`",
        )]
    })?;
    let rule: syn::ItemFn = syn::parse2(item.clone()).map_err(|e| {
        vec![syn::Error::new(
            e.span(),
            "#[custom_jvp(f)] applies to a rule function `fn f_rule(<f's parameters>, <one tangent per differentiable parameter>) -> (<f's output>, <its tangent>)`",
        )]
    })?;
    crate::depth::syntax(&rule).map_err(|e| vec![e])?;
    let rule_sig = lower::signature(&rule, None)?;
    let (f_sig, n_primal) = target_signature(&rule_sig, &target)?;
    let seeds: Vec<bool> = (0..rule_sig.params.len()).map(|k| k >= n_primal).collect();
    let mut lowered = lower::lower_seeded(&rule, &rule_sig, &seeds, true)?;
    let outputs = outputs(
        &mut lowered,
        &rule,
        "the primal output (the first of the pair)",
        "the tangent output (the second of the pair)",
    );
    let func = lowered
        .program
        .func(&lowered.name)
        .cloned()
        .ok_or_else(|| vec![internal_error(rule_sig.span, "no lowered rule")])?;
    let shapes: Vec<SeedShape> = f_sig
        .params
        .iter()
        .enumerate()
        .filter(|(_, p)| p.kind.is_differentiable())
        .map(|(k, _)| SeedShape::Like(func.params[k]))
        .collect();
    let n_out = f_sig.out.ir_tys().len();
    let lf = linear_form(
        &func,
        &seeds,
        n_out,
        &shapes,
        &outputs,
        &lowered.program.linear_externs,
    )
    .map_err(|es| linearity_errors(es, &lowered, rule_sig.span, "the tangents"))?;
    let checks = crate::linear::linear_call_checks(&lowered, &lf.linear_calls);
    let jvp = lf.func;
    let name = target.to_string();
    lowered.name = name.clone();
    let prog = lowered.program.clone();
    let d = on_large_stack(move || differentiate_rule(&prog, &name, jvp, &Options::default()))
        .map_err(|e| vec![internal_error(rule_sig.span, &e)])?
        .map_err(|e| vec![driver_error(e, &lowered, rule_sig.span)])?;
    let companions = emit::companions(&emit::Input {
        sig: &f_sig,
        lowered: &lowered,
        user: &d,
        all: &d,
        public: emit::Public::all_of(crate::attr::Modes::BOTH),
        // The rule's target is called by other functions.
        callers: true,
        preconditions: &[],
    });
    let assert = signature_assertion(&f_sig, &target);
    // The rule is a specification read by the macro: not calling it is normal.
    let mut rule_item = rule;
    rule_item.attrs.push(syn::parse_quote!(#[allow(dead_code)]));
    Ok(quote! {
        #rule_item
        #assert
        #checks
        #companions
    })
}

/// `f`'s signature from the rule's: the first `n` parameters such that the
/// rest are one tangent (same type) per differentiable one of them, and the
/// first half of the `(primal, tangent)` output.
fn target_signature(
    rule: &Signature,
    f: &syn::Ident,
) -> Result<(Signature, usize), Vec<syn::Error>> {
    let out = match &rule.out {
        Out::Tuple(parts) if parts.len() == 2 && parts[0] == parts[1] => parts[0].clone(),
        _ => {
            return Err(vec![syn::Error::new(
                rule.span,
                format!("a rule returns `(primal, tangent)`: a pair of `{f}`'s output type and the same type for its tangent"),
            )])
        }
    };
    let ty = |p: &Param| p.ty.to_token_stream().to_string();
    let n = rule.params.len();
    let split = (0..=n).find(|&k| {
        let diff: Vec<&Param> = rule.params[..k]
            .iter()
            .filter(|p| p.kind.is_differentiable())
            .collect();
        let tans = &rule.params[k..];
        diff.len() == tans.len() && diff.iter().zip(tans).all(|(p, t)| ty(p) == ty(t))
    });
    let Some(k) = split.filter(|k| *k > 0 || n == 0) else {
        return Err(vec![syn::Error::new(
            rule.span,
            format!("a rule for `{f}` takes `{f}`'s parameters in order, then one tangent of the same type per differentiable parameter (f64, tuples of f64, f64 arrays); these parameters cannot be split so"),
        )]);
    };
    let params = rule.params[..k]
        .iter()
        .map(|p| Param {
            wrt: p.kind.is_differentiable(),
            ..p.clone()
        })
        .collect();
    Ok((
        Signature {
            ident: f.clone(),
            vis: rule.vis.clone(),
            params,
            out,
            span: rule.span,
        },
        k,
    ))
}

/// `const _: fn(<f's parameter types>) -> <output> = f;` at the attribute's
/// argument: `f` must have the signature the rule implies.
fn signature_assertion(sig: &Signature, f: &syn::Ident) -> TokenStream {
    let tys = sig.params.iter().map(|p| &p.ty);
    let out = out_rust(&sig.out);
    quote_spanned! {f.span()=>
        const _: fn(#(#tys),*) -> #out = #f;
    }
}

fn out_rust(o: &Out) -> TokenStream {
    let nd = quote!(::linad::ndarray);
    match o {
        Out::F64 => quote!(f64),
        Out::Array(1) => quote!(#nd::Array1<f64>),
        Out::Array(2) => quote!(#nd::Array2<f64>),
        Out::Array(3) => quote!(#nd::Array3<f64>),
        Out::Fixed(t) => quote!(#t),
        Out::Array(r) => {
            let d = syn::Index::from(*r);
            quote!(#nd::Array<f64, #nd::Dim<[usize; #d]>>)
        }
        Out::Tuple(parts) => {
            let ps = parts.iter().map(out_rust);
            quote!((#(#ps,)*))
        }
    }
}

/// How the results of `f` are called in linearity errors, located at the
/// value `f` returns (a span added to `lowered.spans`).
pub(crate) fn outputs(
    lowered: &mut crate::lower::Lowered,
    f: &syn::ItemFn,
    primal: &str,
    linear: &str,
) -> Outputs {
    use syn::spanned::Spanned;
    let span = match f.block.stmts.last() {
        Some(syn::Stmt::Expr(e, None)) => e.span(),
        _ => f.block.span(),
    };
    lowered.spans.push(span);
    Outputs {
        src: Some(ad_core_ir::ir::SrcId(lowered.spans.len() as u32 - 1)),
        primal: primal.into(),
        linear: linear.into(),
    }
}

/// Linearity errors as spanned `syn` errors: `not linear in <what>: <msg>`,
/// at the statement's span (or `fallback`).
pub(crate) fn linearity_errors(
    es: Vec<ad_core_ir::linear_form::LinearityError>,
    lowered: &crate::lower::Lowered,
    fallback: Span,
    what: &str,
) -> Vec<syn::Error> {
    es.into_iter()
        .map(|e| {
            let span = e
                .src
                .and_then(|s| lowered.spans.get(s.0 as usize).copied())
                .unwrap_or(fallback);
            syn::Error::new(span, format!("not linear in {what}: {}", e.msg))
        })
        .collect()
}
