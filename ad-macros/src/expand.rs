//! The pipeline of one `#[differentiable]` function: arguments, signature,
//! lowering, differentiation (twice: the `wrt` parameters for the public
//! companions, every differentiable parameter for the hidden building
//! blocks), emission; errors are collected and reported together.

use crate::attr::Args;
use crate::cfg;
use crate::emit;
use crate::fallback::fallback;
use crate::lower::{self, Lowered};
use crate::names;
use ad_core_ir::driver::{differentiate, Derivatives, DriverError, Options};
use ad_core_ir::pretty::func_to_string;
use proc_macro2::{Span, TokenStream};
use quote::quote;

/// Expands `#[differentiable(attr)] item`.
pub fn expand(attr: TokenStream, item: TokenStream) -> TokenStream {
    match try_expand(attr, item.clone()) {
        Ok(ts) => ts,
        Err(errs) => fallback(item, errs),
    }
}

fn driver_error(e: DriverError, lowered: &Lowered, fallback_span: Span) -> syn::Error {
    match e {
        DriverError::Unsupported { msg, src } => {
            let span = src.and_then(|s| lowered.spans.get(s.0 as usize).copied()).unwrap_or(fallback_span);
            syn::Error::new(span, format!("cannot differentiate this: {msg}"))
        }
        DriverError::Internal(msg) => syn::Error::new(
            fallback_span,
            format!("linad internal compiler error (please report it with `#[differentiable(dump)]` output): {msg}"),
        ),
    }
}

fn try_expand(attr: TokenStream, item: TokenStream) -> Result<TokenStream, Vec<syn::Error>> {
    let args = Args::parse(attr)?;
    let func: syn::ItemFn = syn::parse2(item.clone()).map_err(|e| {
        vec![syn::Error::new(
            e.span(),
            "#[differentiable] applies to a function (`fn name(..) -> .. { .. }`)",
        )]
    })?;
    let variants = cfg::variants(&func)?;
    if let [cfg::Variant { cond: None, func }] = variants.as_slice() {
        let generated = generate(&args, func)?;
        return Ok(quote! {
            #item
            #generated
        });
    }
    // One expansion per `#[cfg]` variant, each (or its errors) gated by its
    // condition: rustc keeps the one that matches the build.
    let mut out = TokenStream::new();
    for v in &variants {
        let generated = match generate(&args, &v.func) {
            Ok(ts) => ts,
            Err(errs) => errs.into_iter().map(|e| e.to_compile_error()).collect(),
        };
        out.extend(match &v.cond {
            Some(c) => cfg::gate(generated, c),
            None => generated,
        });
    }
    Ok(quote! {
        #item
        #out
    })
}

/// The companions (and the dump function) of one variant of the function.
fn generate(args: &Args, func: &syn::ItemFn) -> Result<TokenStream, Vec<syn::Error>> {
    let wrt = args.wrt_idents().map_err(|e| vec![e])?;
    let sig = lower::signature(&func, wrt.as_deref())?;
    let lowered = lower::lower(&func, &sig)?;
    let span = sig.span;
    let opts = Options::default();
    let user: Derivatives = differentiate(&lowered.program, &lowered.name, &sig.wrt_mask(), &opts)
        .map_err(|e| vec![driver_error(e, &lowered, span)])?;
    let all = if sig.wrt_mask() == sig.all_mask() {
        user.clone()
    } else {
        differentiate(&lowered.program, &lowered.name, &sig.all_mask(), &opts)
            .map_err(|e| vec![driver_error(e, &lowered, span)])?
    };
    let companions = emit::companions(&emit::Input {
        sig: &sig,
        lowered: &lowered,
        user: &user,
        all: &all,
    });
    let dump = if args.dump.is_present() {
        let mut text = String::new();
        for name in [
            &user.names.jvp,
            &user.names.fwd,
            &user.names.lin,
            &user.names.lin_t,
        ] {
            if let Some(f) = user.program.func(name) {
                text.push_str(&func_to_string(f));
                text.push('\n');
            }
        }
        text.push_str("// generated Rust\n");
        text.push_str(&companions.to_string());
        let dump_fn = names::dump(&sig.ident);
        let vis = &sig.vis;
        quote! {
            /// The IR after every pass and the generated Rust (`#[differentiable(dump)]`).
            #vis fn #dump_fn() -> &'static str { #text }
        }
    } else {
        TokenStream::new()
    };
    Ok(quote! {
        #companions
        #dump
    })
}
