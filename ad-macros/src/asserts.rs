//! Assertions at the start of a body: preconditions the public derivatives
//! check on entry.
//!
//! The leading statements of a `#[differentiable]` body that are
//! `assert!`, `assert_eq!`, `assert_ne!` or their `debug_` forms read
//! nothing but the parameters and items in scope (no local exists yet), so
//! `f_vjp`, `f_linearize` and `f_pullback`, which take the same parameters
//! under the same names in the same module, run them verbatim first: a
//! call `f` refuses, its derivatives refuse with the same message. The
//! hidden building blocks callers' derivatives call (primal, forward half
//! keeping residuals, forward mode, which `f_jvp` calls) run them too, each
//! parameter they name rebound from its canonical form
//! (`emit::wrappers::canonical_preconditions`). The rest of the body is
//! differentiated without them.
//!
//! ```text
//! fn f(x: &Array1<f64>, w: &Array1<f64>) -> f64 { assert_eq!(x.len(), w.len()); x.dot(w) }
//! ==>  lowered: { x.dot(w) }      f_vjp(x, w, ct) { assert_eq!(x.len(), w.len()); .. }
//! ```
//!
//! An assertion after another statement is refused (it may read locals the
//! derivatives do not have at that point), as are assertions in functions
//! whose derivatives take the parameters in another form (a struct's
//! leaves, an `f32` function's `f64` shadow, a method's `self`) or whose
//! building blocks cannot rebuild one (an enum from its discriminant).

/// Whether `m` is `assert!`, `assert_eq!`, `assert_ne!` or a `debug_` form
/// (also as `std::assert!` / `core::assert!`).
pub fn is_assertion(m: &syn::Macro) -> bool {
    let segs: Vec<String> = m
        .path
        .segments
        .iter()
        .map(|s| s.ident.to_string())
        .collect();
    let name = match segs.as_slice() {
        [one] => one.as_str(),
        [krate, one] if krate == "std" || krate == "core" => one.as_str(),
        _ => return false,
    };
    matches!(
        name,
        "assert"
            | "assert_eq"
            | "assert_ne"
            | "debug_assert"
            | "debug_assert_eq"
            | "debug_assert_ne"
    )
}

/// The assertion a statement is, if it is one (`assert!(..);`).
fn assertion(s: &syn::Stmt) -> Option<&syn::Macro> {
    match s {
        syn::Stmt::Macro(m) if is_assertion(&m.mac) => Some(&m.mac),
        syn::Stmt::Expr(syn::Expr::Macro(m), Some(_)) if is_assertion(&m.mac) => Some(&m.mac),
        _ => None,
    }
}

/// `func` without the assertions its body starts with, and those
/// statements (as written, in order).
pub fn split_leading(func: &syn::ItemFn) -> (syn::ItemFn, Vec<syn::Stmt>) {
    let n = func
        .block
        .stmts
        .iter()
        .take_while(|s| assertion(s).is_some())
        .count();
    let mut rest = func.clone();
    let leading: Vec<syn::Stmt> = rest.block.stmts.drain(..n).collect();
    (rest, leading)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_leading_assertions_are_split_off() {
        let f: syn::ItemFn = syn::parse_quote! {
            fn f(x: f64, n: usize) -> f64 {
                assert!(n > 0, "n = {n}");
                debug_assert_eq!(n % 2, 0);
                std::assert_ne!(x, 1.0);
                let y = x * 2.0;
                assert!(y > 0.0);
                y
            }
        };
        let (rest, leading) = split_leading(&f);
        assert_eq!(leading.len(), 3);
        assert_eq!(rest.block.stmts.len(), 3);
        // The later assertion stays (the lowering refuses it).
        assert!(matches!(&rest.block.stmts[1], syn::Stmt::Macro(m) if is_assertion(&m.mac)));
        let not: syn::Macro = syn::parse_quote!(println!("{}", 1));
        assert!(!is_assertion(&not));
    }
}
