//! Inlining of small scalar `#[differentiable]` callees.
//!
//! A call of another `#[differentiable]` function is an extern call whose
//! derivative blocks take the primal arguments and recompute the callee's
//! primal (checkpointing at the call, `ad_core_ir::driver::declare_extern`):
//! a reverse pass through `sigmoid(x)` computes `exp` again, and nothing is
//! simplified across the call. For a small leaf function whose body means
//! the same in any module, the caller lowers the body in place of the call
//! instead, as it lowers a closure, so its residuals are stored like the
//! caller's own values:
//!
//! ```text
//! #[differentiable] fn sigmoid(x: f64) -> f64 { 1.0 / (1.0 + (-x).exp()) }
//! let g = sigmoid(a * w);
//! ==>  let g = (|x: f64| -> f64 { 1.0 / (1.0 + (-x).exp()) })(a * w);
//! ```
//!
//! Eligible ([`inlinable`]): parameters `f64` or integers by value, named by
//! plain identifiers; result `f64` or a tuple of `f64`; a body of at most
//! [`MAX_TOKENS`] tokens made only of `let`s of plain names, assignments to
//! them and expressions over its parameters and locals: literals,
//! arithmetic, comparisons, `if`/`else`, blocks, tuples, casts, `f64`
//! methods (`x.exp()`, `f64::max(a, b)`) and `f64` constants
//! (`std::f64::consts::PI`). No calls of other functions, loops, macros,
//! closures, `return` or other paths, so no name in it can resolve
//! differently at the call. The crate's source gives the body
//! (`crate_fns::FnInfo::inline`); the callee's own companions are emitted
//! as usual.

use proc_macro2::{TokenStream, TokenTree};
use quote::ToTokens;
use std::collections::BTreeSet;

/// The largest body inlined, in tokens (a group counts its delimiters).
pub const MAX_TOKENS: usize = 300;

/// Whether `f`'s body can be inlined at its calls (see the module doc).
/// An empty body never is (a function returning `f64` has a tail): the
/// crate index empties the bodies it need not read ([`short_enough`]).
pub fn inlinable(f: &syn::ItemFn) -> bool {
    if f.block.stmts.is_empty()
        || !f.sig.generics.params.is_empty()
        || f.sig.asyncness.is_some()
        || f.sig.unsafety.is_some()
        || f.sig.variadic.is_some()
        || count(f.block.to_token_stream()) > MAX_TOKENS
    {
        return false;
    }
    let mut names = BTreeSet::new();
    for a in &f.sig.inputs {
        let syn::FnArg::Typed(pt) = a else {
            return false;
        };
        let syn::Pat::Ident(pi) = &*pt.pat else {
            return false;
        };
        if pi.by_ref.is_some() || pi.subpat.is_some() || !scalar_type(&pt.ty) {
            return false;
        }
        names.insert(pi.ident.to_string());
    }
    let ret_ok = match &f.sig.output {
        syn::ReturnType::Type(_, t) => f64_or_tuple(t),
        syn::ReturnType::Default => false,
    };
    ret_ok && block_ok(&f.block, &mut names)
}

/// Whether a function body (`body`: the tokens inside its braces) is short
/// enough for [`inlinable`]: a longer one is never inlined, so the crate
/// index replaces it by `{}` unparsed (and [`inlinable`] refuses an empty
/// body).
pub(crate) fn short_enough(body: TokenStream) -> bool {
    2 + count(body) <= MAX_TOKENS
}

/// `f` as a closure with typed parameters and result, to apply at a call.
pub fn closure(f: &syn::ItemFn) -> syn::ExprClosure {
    let inputs = f.sig.inputs.iter().filter_map(|a| match a {
        syn::FnArg::Typed(pt) => Some(pt),
        syn::FnArg::Receiver(_) => None,
    });
    let out = &f.sig.output;
    let body = &f.block;
    syn::parse_quote!(|#(#inputs),*| #out #body)
}

/// Tokens in a stream, a group counting its two delimiters.
pub(crate) fn count(ts: TokenStream) -> usize {
    ts.into_iter()
        .map(|t| match t {
            TokenTree::Group(g) => 2 + count(g.stream()),
            _ => 1,
        })
        .sum()
}

/// The last segment's name of a plain type path (`f64`, `usize`).
fn type_name(t: &syn::Type) -> Option<String> {
    match t {
        syn::Type::Path(p) if p.qself.is_none() && p.path.segments.len() == 1 => {
            let s = &p.path.segments[0];
            matches!(s.arguments, syn::PathArguments::None).then(|| s.ident.to_string())
        }
        syn::Type::Paren(p) => type_name(&p.elem),
        _ => None,
    }
}

fn scalar_type(t: &syn::Type) -> bool {
    type_name(t).is_some_and(|n| {
        matches!(
            n.as_str(),
            "f64" | "usize" | "isize" | "u8" | "u16" | "u32" | "u64" | "i8" | "i16" | "i32" | "i64"
        )
    })
}

fn f64_or_tuple(t: &syn::Type) -> bool {
    match t {
        syn::Type::Tuple(tt) => {
            !tt.elems.is_empty()
                && tt
                    .elems
                    .iter()
                    .all(|e| type_name(e).as_deref() == Some("f64"))
        }
        t => type_name(t).as_deref() == Some("f64"),
    }
}

/// Whether every statement of `b` is allowed; `let`s add their names to
/// `names` (in scope for the rest of the body: a superset is harmless, as
/// every name is the function's own).
fn block_ok(b: &syn::Block, names: &mut BTreeSet<String>) -> bool {
    b.stmts.iter().all(|s| match s {
        syn::Stmt::Local(l) => {
            let pat = match &l.pat {
                syn::Pat::Type(pt) if scalar_type(&pt.ty) => &*pt.pat,
                p => p,
            };
            let syn::Pat::Ident(pi) = pat else {
                return false;
            };
            let init_ok = match &l.init {
                Some(init) => init.diverge.is_none() && expr_ok(&init.expr, names),
                None => false,
            };
            if pi.by_ref.is_some() || pi.subpat.is_some() || !init_ok || !l.attrs.is_empty() {
                return false;
            }
            names.insert(pi.ident.to_string());
            true
        }
        syn::Stmt::Expr(e, _) => expr_ok(e, names),
        syn::Stmt::Item(_) | syn::Stmt::Macro(_) => false,
    })
}

/// Whether a path is one of the function's names or an `f64` item.
fn path_ok(p: &syn::ExprPath, names: &BTreeSet<String>) -> bool {
    if p.qself.is_some() || !p.attrs.is_empty() {
        return false;
    }
    let segs: Vec<String> = p
        .path
        .segments
        .iter()
        .map(|s| {
            if matches!(s.arguments, syn::PathArguments::None) {
                s.ident.to_string()
            } else {
                String::new()
            }
        })
        .collect();
    let segs: Vec<&str> = segs.iter().map(String::as_str).collect();
    match segs.as_slice() {
        [one] => names.contains(*one),
        ["f64", "consts", _] | ["std" | "core", "f64", "consts", _] => true,
        _ => false,
    }
}

fn expr_ok(e: &syn::Expr, names: &mut BTreeSet<String>) -> bool {
    use syn::Expr as E;
    match e {
        E::Lit(l) => {
            l.attrs.is_empty()
                && match &l.lit {
                    syn::Lit::Float(x) => matches!(x.suffix(), "" | "f64"),
                    syn::Lit::Int(x) => x.suffix().is_empty(),
                    syn::Lit::Bool(_) => true,
                    _ => false,
                }
        }
        E::Path(p) => path_ok(p, names),
        E::Binary(b) => expr_ok(&b.left, names) && expr_ok(&b.right, names),
        E::Unary(u) => !matches!(u.op, syn::UnOp::Deref(_)) && expr_ok(&u.expr, names),
        E::Paren(p) => expr_ok(&p.expr, names),
        E::Group(g) => expr_ok(&g.expr, names),
        E::Cast(c) => scalar_type(&c.ty) && expr_ok(&c.expr, names),
        E::Tuple(t) => t.elems.iter().all(|x| expr_ok(x, names)),
        E::If(i) => {
            !matches!(&*i.cond, E::Let(_))
                && expr_ok(&i.cond, names)
                && block_ok(&i.then_branch, &mut names.clone())
                && i.else_branch
                    .as_ref()
                    .is_none_or(|(_, x)| expr_ok(x, &mut names.clone()))
        }
        E::Block(b) => {
            b.label.is_none() && b.attrs.is_empty() && block_ok(&b.block, &mut names.clone())
        }
        E::Assign(a) => {
            matches!(&*a.left, E::Path(p) if p.path.segments.len() == 1 && path_ok(p, names))
                && expr_ok(&a.right, names)
        }
        E::MethodCall(m) => {
            m.turbofish.is_none()
                && crate::lower::is_f64_method(&m.method.to_string())
                && expr_ok(&m.receiver, names)
                && m.args.iter().all(|x| expr_ok(x, names))
        }
        E::Call(c) => {
            let f64_fn = matches!(&*c.func, E::Path(p)
                if p.qself.is_none()
                    && p.path.segments.len() == 2
                    && p.path.segments[0].ident == "f64"
                    && crate::lower::is_f64_method(&p.path.segments[1].ident.to_string()));
            f64_fn && c.args.iter().all(|x| expr_ok(x, names))
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_crate::TestCrate;
    use quote::quote;

    /// A caller of `sigmoid` (inlinable) lowers its body; a caller of `cube`
    /// (a loop: not inlinable) and of `ruled` (a rule's target) calls their
    /// derivative blocks.
    #[test]
    fn callers_inline_small_leaf_functions() {
        let krate = TestCrate::new(
            "inline",
            "#[differentiable] fn sigmoid(x: f64) -> f64 { 1.0 / (1.0 + (-x).exp()) }\n\
             #[differentiable] fn cube(x: f64) -> f64 { let mut y = x; for _ in 0..2 { y = y * x; } y }\n\
             fn ruled(x: f64) -> f64 { x.sin() }\n\
             #[custom_jvp(ruled)] fn ruled_rule(x: f64, dx: f64) -> (f64, f64) { (x.sin(), x.cos() * dx) }\n\
             #[differentiable] fn f(x: f64) -> f64 { 0.0 }",
        );
        let out = krate.expand_idents(quote! {
            fn f(x: f64) -> f64 {
                let a = sigmoid(x * 2.0);
                let b = cube(a);
                b + ruled(x)
            }
        });
        let has = |n: &str| out.iter().any(|i| i == n);
        assert!(
            !has("__linad_sigmoid_lin_t") && !has("__linad_sigmoid_primal"),
            "{out:?}"
        );
        // (a call at the top level keeps the callee's residuals)
        assert!(has("__linad_cube_linres_t"), "{out:?}");
        assert!(has("__linad_ruled_lin_t"), "{out:?}");
    }

    fn ok(src: &str) -> bool {
        inlinable(&syn::parse_str(src).unwrap())
    }

    #[test]
    fn leaf_scalar_functions_are_inlined() {
        assert!(ok("fn sigmoid(x: f64) -> f64 { 1.0 / (1.0 + (-x).exp()) }"));
        assert!(ok("fn softplus(x: f64, k: usize) -> f64 { let t = (x * k as f64).exp(); if t > 1e300 { x } else { (1.0 + t).ln() } }"));
        assert!(ok(
            "fn polar(r: f64, t: f64) -> (f64, f64) { (r * t.cos(), r * f64::sin(t)) }"
        ));
        assert!(ok(
            "fn circle(r: f64) -> f64 { std::f64::consts::PI * r.powi(2) }"
        ));
    }

    #[test]
    fn anything_else_is_called() {
        // Another function, a constant of the module, a loop, a macro, an
        // array parameter, a `return`, a reference, an unknown method.
        assert!(!ok("fn f(x: f64) -> f64 { g(x) }"));
        assert!(!ok("fn f(x: f64) -> f64 { x * SCALE }"));
        assert!(!ok(
            "fn f(x: f64, n: usize) -> f64 { let mut s = x; for _ in 0..n { s = s * x; } s }"
        ));
        assert!(!ok("fn f(x: f64) -> f64 { dbg!(x) }"));
        assert!(!ok("fn f(x: &Array1<f64>) -> f64 { x.sum() }"));
        assert!(!ok("fn f(x: f64) -> f64 { if x > 0.0 { return x; } -x }"));
        assert!(!ok("fn f(x: &f64) -> f64 { *x }"));
        assert!(!ok("fn f(x: f64) -> f64 { x.frobnicate() }"));
        assert!(!ok("fn f(x: f64) -> usize { 1 }"));
        assert!(!ok("fn f(x: f64) -> f64 { x * 2.0f32 as f64 }"));
        let long = format!("fn f(x: f64) -> f64 {{ {} x }}", "x + ".repeat(200));
        assert!(!ok(&long));
    }
}
