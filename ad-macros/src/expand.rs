//! The pipeline of one `#[differentiable]` function: arguments, signature,
//! lowering, differentiation (twice: the `wrt` parameters for the public
//! companions, every differentiable parameter for the hidden building
//! blocks), emission; errors are collected and reported together.

use crate::attr::Args;
use crate::cfg;
use crate::depth;
use crate::emit;
use crate::fallback::fallback;
use crate::lower::{self, Lowered};
use crate::names;
use ad_core_ir::driver::{differentiate, Derivatives, DriverError, Options};
use ad_core_ir::pretty::func_to_string;
use proc_macro2::{Span, TokenStream};
use quote::quote;

/// Stack of the thread the IR passes run on: they recurse on the nesting of
/// the program and along chains of definitions, and the compiler's thread
/// has 8 MiB. The memory is only reserved; pages are touched as used.
const IR_STACK: usize = 256 << 20;

/// Expands `#[differentiable(attr)] item`.
///
/// A panic inside (a compiler bug) becomes one error at the attribute, with
/// the panic message, instead of a crash of the compiler.
pub fn expand(attr: TokenStream, item: TokenStream) -> TokenStream {
    let paths = crate::emit::PathScope::enter(&item, 'f');
    let run = std::panic::AssertUnwindSafe(|| try_expand(attr.clone(), item.clone()));
    let errs = match std::panic::catch_unwind(run) {
        Ok(Ok(ts)) => return paths.imported(ts),
        Ok(Err(errs)) => errs,
        Err(payload) => vec![internal_error(Span::call_site(), &panic_message(&*payload))],
    };
    // No import on this path: the refused item may sit where only
    // associated items may (a method in an `impl`), so the stubs name
    // ndarray by its full path.
    drop(paths);
    let stubs = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| stubs(&attr, &item)));
    let mut out = fallback(item, errs);
    out.extend(stubs.ok().flatten());
    out
}

/// Stubs of the public derivatives of a refused function ([`emit::stubs`]),
/// when its attribute and signature are sound and it is a plain function
/// (a function with struct parameters or `f32` is differentiated through a
/// rewritten copy whose derivatives' signatures are made elsewhere: it gets
/// none).
fn stubs(attr: &TokenStream, item: &TokenStream) -> Option<TokenStream> {
    // Nothing recurses on input too deep for the macro (the refusal may be
    // exactly that).
    depth::tokens(attr).ok()?;
    depth::tokens(item).ok()?;
    let args = Args::parse(attr.clone()).ok()?;
    let func: syn::ItemFn = syn::parse2(item.clone()).ok()?;
    depth::syntax(&func).ok()?;
    // A trait's `impl` may hold only the trait's items.
    let name = syn::ext::IdentExt::unraw(&func.sig.ident).to_string();
    if crate::crate_fns::associated_only(&name) == Some(true) {
        return None;
    }
    if crate::structs::expand(&args, &func).is_some()
        || crate::f32s::expand(&args, attr, &func).is_some()
    {
        return None;
    }
    let wrt = args.wrt_idents().ok()?;
    let modes = args.modes().ok()?;
    let sig = lower::signature(&func, wrt.as_deref()).ok()?;
    Some(emit::stubs(&sig, modes))
}

/// The message of a panic payload.
fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(no message)".to_string()
    }
}

pub(crate) fn internal_error(span: Span, msg: &str) -> syn::Error {
    syn::Error::new(
        span,
        format!("linad internal compiler error (please report it with `#[differentiable(dump)]` output, or the function if `dump` fails too): {msg}"),
    )
}

/// Runs `f` on a thread with an [`IR_STACK`] stack and waits for it; a panic
/// there is returned as its message. If no thread can be started, `f` runs
/// here.
pub(crate) fn on_large_stack<T: Send>(f: impl FnOnce() -> T + Send) -> Result<T, String> {
    let slot = std::sync::Mutex::new(Some(f));
    let take = || slot.lock().map_or(None, |mut g| g.take());
    std::thread::scope(|s| {
        let spawned = std::thread::Builder::new()
            .name("linad-ir".into())
            .stack_size(IR_STACK)
            .spawn_scoped(s, || take().map(|f| f()));
        match spawned {
            Ok(h) => match h.join() {
                Ok(r) => r.ok_or_else(|| "the IR thread ran nothing".to_string()),
                Err(payload) => Err(panic_message(&*payload)),
            },
            Err(_) => take()
                .map(|f| f())
                .ok_or_else(|| "the IR thread could not start".to_string()),
        }
    })
}

pub(crate) fn driver_error(e: DriverError, lowered: &Lowered, fallback_span: Span) -> syn::Error {
    match e {
        DriverError::Unsupported { msg, src } => {
            let span = src
                .and_then(|s| lowered.spans.get(s.0 as usize).copied())
                .unwrap_or(fallback_span);
            syn::Error::new(span, format!("cannot differentiate this: {msg}"))
        }
        DriverError::Internal(msg) => internal_error(fallback_span, &msg),
    }
}

/// The derivatives in the `wrt` parameters (for `f_jvp`/`f_vjp`) and in all
/// differentiable parameters (the hidden building blocks), computed on a
/// thread with a large stack: the outer error is a panic there.
#[allow(clippy::type_complexity)]
fn derivatives(
    lowered: &Lowered,
    wrt: &[bool],
    all: &[bool],
    trace: bool,
    vjp: bool,
    callers: bool,
) -> Result<Result<(Derivatives, Derivatives), DriverError>, String> {
    let (prog, name) = (&lowered.program, &lowered.name);
    on_large_stack(move || {
        // The one-sweep reverse mode only for the set `f_vjp` runs. The
        // final functions are checked; every pass's output only in a dump
        // (a failure then names the pass).
        let opts = Options {
            trace,
            check_every_pass: trace,
            fused_vjp: vjp,
            ..Options::default()
        };
        let user = differentiate(prog, name, wrt, &opts)?;
        // The set for every parameter is for callers alone when `wrt` is
        // smaller (`emit::Input::callers`).
        let all = if wrt == all || !callers {
            user.clone()
        } else {
            let opts = Options {
                fused_vjp: false,
                ..opts
            };
            differentiate(prog, name, all, &opts)?
        };
        Ok((user, all))
    })
}

fn try_expand(attr: TokenStream, item: TokenStream) -> Result<TokenStream, Vec<syn::Error>> {
    depth::tokens(&attr).map_err(|e| vec![e])?;
    depth::tokens(&item).map_err(|e| vec![e])?;
    // (Parsing builds a buffer of every token of the item: only an item
    // with `impl` among its top-level tokens is tried as an `impl` block.)
    let top_level_impl = item
        .clone()
        .into_iter()
        .any(|t| matches!(&t, proc_macro2::TokenTree::Ident(i) if i == "impl"));
    if top_level_impl {
        if let Ok(imp) = syn::parse2::<syn::ItemImpl>(item.clone()) {
            return Ok(crate::impls::expand(attr, imp));
        }
    }
    let args = Args::parse(attr.clone())?;
    let func: syn::ItemFn = syn::parse2(item.clone()).map_err(|e| {
        vec![syn::Error::new(
            e.span(),
            "#[differentiable] applies to a function (`fn name(..) -> .. { .. }`) or to an `impl` block whose methods it marks",
        )]
    })?;
    depth::syntax(&func).map_err(|e| vec![e])?;
    let name = syn::ext::IdentExt::unraw(&func.sig.ident).to_string();
    let method = matches!(func.sig.inputs.first(), Some(syn::FnArg::Receiver(_)));
    if let Some(in_trait_impl) = crate::crate_fns::associated_only(&name).filter(|_| !method) {
        let msg = if in_trait_impl {
            "a trait's associated function cannot be #[differentiable] (its derivatives are not the trait's items): write a free function, differentiate it, and call it from the `impl`"
        } else {
            "an associated function is differentiated through its `impl` block: put `#[differentiable]` on the `impl` too (`#[differentiable] impl Model { #[differentiable] fn f(x: f64) -> f64 { .. } }`, giving `Model::f_vjp`; the attribute on a function in a block cannot add the free building blocks its derivatives need), or write a free function"
        };
        return Err(vec![syn::Error::new(func.sig.ident.span(), msg)]);
    }
    #[cfg(test)]
    if func.sig.ident == "__linad_test_panic" {
        panic!("test panic");
    }
    // Struct parameters first: the flat function of one with `f32` fields
    // or parameters goes through the `f32` shadow itself.
    if let Some(r) = crate::structs::expand(&args, &func) {
        return r;
    }
    if let Some(r) = crate::f32s::expand(&args, &attr, &func) {
        return r;
    }
    let companions = companions_of(&args, &func)?;
    Ok(quote! {
        #item
        #companions
    })
}

/// The companions of a function with no struct parameters (a flat function
/// made by `structs`): `attr` are its `#[differentiable(..)]` arguments.
pub(crate) fn generate_checked(
    attr: TokenStream,
    func: &syn::ItemFn,
) -> Result<TokenStream, Vec<syn::Error>> {
    let args = Args::parse(attr)?;
    companions_of(&args, func)
}

/// Everything generated beside `func`, for each of its `#[cfg]` variants.
fn companions_of(args: &Args, func: &syn::ItemFn) -> Result<TokenStream, Vec<syn::Error>> {
    per_variant(func, |f| generate(args, f))
}

/// `generate` of each `#[cfg]` variant of `func` (the function with the
/// statements one configuration keeps), each output gated by its condition.
pub(crate) fn per_variant(
    func: &syn::ItemFn,
    generate: impl Fn(&syn::ItemFn) -> Result<TokenStream, Vec<syn::Error>>,
) -> Result<TokenStream, Vec<syn::Error>> {
    let variants = cfg::variants(func)?;
    if let [cfg::Variant { cond: None, func }] = variants.as_slice() {
        return generate(func);
    }
    // One expansion per `#[cfg]` variant, each (or its errors) gated by its
    // condition: rustc keeps the one that matches the build. An error every
    // variant has (outside the configured statements) is reported once.
    let results: Vec<_> = variants.iter().map(|v| generate(&v.func)).collect();
    let key = |e: &syn::Error| format!("{:?} {e}", e.span());
    let common: Vec<String> = match results.first() {
        Some(Err(first)) => first
            .iter()
            .map(key)
            .filter(|k| {
                results
                    .iter()
                    .all(|r| matches!(r, Err(es) if es.iter().any(|e| key(e) == *k)))
            })
            .collect(),
        _ => vec![],
    };
    let mut out = TokenStream::new();
    if let Some(Err(first)) = results.first() {
        for e in first.iter().filter(|e| common.contains(&key(e))) {
            out.extend(e.to_compile_error());
        }
    }
    for (v, r) in variants.iter().zip(results) {
        let generated = match r {
            Ok(ts) => ts,
            Err(errs) => errs
                .iter()
                .filter(|e| !common.contains(&key(e)))
                .map(|e| e.to_compile_error())
                .collect(),
        };
        out.extend(match &v.cond {
            Some(c) => cfg::gate(generated, c),
            None => generated,
        });
    }
    Ok(out)
}

/// The companions (and the dump function) of one variant of the function.
fn generate(args: &Args, func: &syn::ItemFn) -> Result<TokenStream, Vec<syn::Error>> {
    let mut shadowed = func.clone();
    crate::f32s::call_shadows(&mut shadowed);
    // Flat functions and shadows were rewritten when they were made (they
    // are compiled too).
    if !crate::struct_results::made_rewritten(func) {
        crate::struct_results::rewrite(&mut shadowed)?;
    }
    // The assertions the body starts with: checked on entry by the
    // derivatives (`crate::asserts`), where they can (`refused_assertions`).
    let (stripped, preconditions) = crate::asserts::split_leading(&shadowed);
    let func = &stripped;
    let wrt = args.wrt_idents().map_err(|e| vec![e])?;
    let modes = args.modes().map_err(|e| vec![e])?;
    let sig = lower::signature(func, wrt.as_deref())?;
    // Reported with the body's other errors.
    let mut errors = match (preconditions.first(), refused_assertions(func, &sig)) {
        (Some(first), Some(msg)) => vec![syn::Error::new_spanned(first, msg)],
        _ => vec![],
    };
    let lowered = match lower::lower(func, &sig) {
        Ok(l) if errors.is_empty() => l,
        Ok(_) => return Err(errors),
        Err(es) => {
            errors.extend(es);
            return Err(errors);
        }
    };
    let span = sig.span;
    let trace = args.dump.is_present();
    let callers = crate::crate_fns::callers_possible(&func.sig.ident.to_string(), &func.vis);
    // Without callers outside the crate's source, the public derivatives
    // it names.
    let public = emit::Public::of(&func.sig.ident, modes, |item| {
        callers || crate::crate_fns::mentioned(&item.to_string()) != Some(false)
    });
    let (user, all) = derivatives(
        &lowered,
        &sig.wrt_mask(),
        &sig.all_mask(),
        trace,
        public.vjp,
        callers,
    )
    .map_err(|e| vec![internal_error(span, &e)])?
    .map_err(|e| vec![driver_error(e, &lowered, span)])?;
    let companions = emit::companions(&emit::Input {
        sig: &sig,
        lowered: &lowered,
        user: &user,
        all: &all,
        public,
        callers,
        preconditions: &preconditions,
    });
    let dump = if args.dump.is_present() {
        // The lowered function, then every pass's output in pipeline order.
        let mut text = String::from("// lowered\n");
        if let Some(f) = lowered.program.func(&lowered.name) {
            text.push_str(&func_to_string(f));
            text.push('\n');
        }
        for (pass, out) in &user.trace {
            text.push_str(&format!("// after {pass}\n{out}\n"));
        }
        text.push_str("// generated Rust\n");
        text.push_str(&formatted(&companions));
        let dump_fn = names::dump(&sig.ident);
        let vis = &sig.vis;
        quote! {
            /// The lowered IR, the IR after every pass, and the generated Rust (`#[differentiable(dump)]`).
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

/// Why the assertions a function's body starts with (`crate::asserts`)
/// cannot be checked by its derivatives, if they cannot: they take the
/// parameters in another form (a flat function's leaves, a shadow's `f64`s,
/// a method's `self` as a parameter), or callers' building blocks could not
/// rebuild one (an enum from its discriminant:
/// `emit::wrappers::canonical_preconditions`).
fn refused_assertions(func: &syn::ItemFn, sig: &crate::sig::Signature) -> Option<String> {
    let as_self = func.sig.inputs.iter().any(|a| {
        matches!(a, syn::FnArg::Typed(pt)
            if matches!(&*pt.pat, syn::Pat::Ident(pi) if pi.ident == crate::impls::SELF))
    });
    if crate::struct_results::made_rewritten(func) || as_self {
        return Some("assertions are not supported in a function with struct, `f32` or `self` parameters (its derivatives take them in another form): remove it (check the arguments before calling the function)".to_string());
    }
    let e = sig
        .params
        .iter()
        .find(|p| matches!(p.kind, crate::sig::ParamKind::Enum(_)))?;
    Some(format!("assertions are not supported in a function with an enum parameter (`{}`): remove it (check the arguments before calling the function)", e.ident))
}

/// Generated items as Rust source formatted by `prettyplease` (the tokens
/// as one line if they do not parse as items, which would be a bug).
fn formatted(items: &TokenStream) -> String {
    match syn::parse2::<syn::File>(items.clone()) {
        Ok(file) => prettyplease::unparse(&file),
        Err(_) => items.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_one_internal_error() {
        let item: TokenStream = "fn __linad_test_panic(x: f64) -> f64 { x }"
            .parse()
            .unwrap();
        let out = expand(TokenStream::new(), item).to_string();
        assert_eq!(out.matches("compile_error").count(), 1, "{out}");
        assert!(out.contains("linad internal compiler error"), "{out}");
        assert!(out.contains("test panic"), "{out}");
        assert!(out.contains("fn __linad_test_panic"), "{out}");
    }

    #[test]
    fn the_ir_thread_reports_panics_and_results() {
        assert_eq!(on_large_stack(|| 6 * 7), Ok(42));
        let r: Result<(), String> = on_large_stack(|| panic!("deep {}", 1));
        assert_eq!(r, Err("deep 1".to_string()));
    }

    #[test]
    fn the_ir_thread_has_a_large_stack() {
        fn depth(n: u64) -> u64 {
            let pad = std::hint::black_box([n; 64]);
            if n == 0 {
                0
            } else {
                1 + depth(n - 1) + pad[(n % 64) as usize] - n
            }
        }
        // About 60 MiB of frames: far beyond the 8 MiB of the compiler's thread.
        assert_eq!(on_large_stack(|| depth(100_000)), Ok(100_000));
    }
}
