//! How generated code names ndarray and linad's runtime.
//!
//! Every path into them goes through the facade (`::linad::ndarray`,
//! `::linad::__private::ad_runtime`), 8 and 11 tokens before the item's
//! name, and generated code names them about 70 times per function. So an
//! expansion imports both under names of its own and writes those (3
//! tokens):
//!
//! ```text
//! #[differentiable] fn f(..)
//! =>  use ::linad::{ndarray as __linad_nd_f_f, __private::ad_runtime as __linad_rt_f_f};
//!     pub fn f_vjp(..) -> (f64, ::linad::ndarray::Array1<f64>) { ..
//!         let m: __linad_nd_f_f::Array1<f64> = __linad_rt_f_f::map(&x, ..); .. }
//! ```
//!
//! The names are the expansion's own (`f_<function>`, `m_<type>_<first
//! method>` for an `impl Type`, `r_<function>` for a `#[custom_jvp]` rule):
//! each is defined once per module (a module may not import one name twice
//! but by globs), and an unchanged function expands
//! to the same tokens whatever else the crate holds, so incremental builds
//! reuse its checking.
//!
//! Outside an expansion's [`Scope`] (unit tests, the stubs of a refused
//! function, which may sit in an `impl`) and in the public derivatives'
//! signatures ([`public`], which users read in documentation and their
//! IDE), the full paths are written.

use crate::text::{text, Code};
use proc_macro2::{Ident, TokenStream, TokenTree};
use std::cell::RefCell;

thread_local! {
    /// What [`nd`] and [`rt`] write now.
    static NAMES: RefCell<(Code, Code)> = RefCell::new(full());
}

/// The full paths.
fn full() -> (Code, Code) {
    (
        text!(::linad::ndarray),
        text!(::linad::__private::ad_runtime),
    )
}

/// ndarray: `::linad::ndarray`, or the expansion's name for it.
pub fn nd() -> Code {
    NAMES.with(|n| n.borrow().0.clone())
}

/// linad's runtime: `::linad::__private::ad_runtime`, or the expansion's
/// name for it.
pub fn rt() -> Code {
    NAMES.with(|n| n.borrow().1.clone())
}

/// While alive, [`nd`] and [`rt`] write the names it was made with; the
/// names in use before come back when it is dropped (on a panic too).
struct Names((Code, Code));

impl Names {
    fn set(names: (Code, Code)) -> Names {
        Names(NAMES.with(|n| n.replace(names)))
    }
}

impl Drop for Names {
    fn drop(&mut self) {
        let before = std::mem::replace(&mut self.0, full());
        NAMES.with(|n| *n.borrow_mut() = before);
    }
}

/// While alive, [`nd`] and [`rt`] write the short names of one expansion.
pub struct Scope {
    _names: Names,
    nd: Ident,
    rt: Ident,
    /// The item's own `#[cfg(..)]` attributes: the import exists where the
    /// item does (two variants of one function under opposite conditions
    /// have the same names).
    cfgs: TokenStream,
}

impl Scope {
    /// The names of the expansion of `item` (`kind`: `'f'` for a function
    /// or an `impl` block, `'r'` for a rule).
    pub fn enter(item: &TokenStream, kind: char) -> Scope {
        let key = key(item, kind);
        let nd = quote::format_ident!("__linad_nd_{}", key);
        let rt = quote::format_ident!("__linad_rt_{}", key);
        Scope {
            _names: Names::set((text!(#nd), text!(#rt))),
            nd,
            rt,
            cfgs: cfg_attrs(item),
        }
    }

    /// The expansion `ts` after the import of the scope's names.
    pub fn imported(&self, ts: TokenStream) -> TokenStream {
        let (nd, rt, cfgs) = (&self.nd, &self.rt, &self.cfgs);
        let mut out = quote::quote!(
            #cfgs
            #[allow(unused_imports)]
            use ::linad::{ndarray as #nd, __private::ad_runtime as #rt};
        );
        // One stream appended: tree by tree, each would cross the proc
        // macro bridge (1% of a `cargo check` of 50 functions).
        out.extend([ts]);
        out
    }
}

/// The `#[cfg(..)]` attributes among the outer attributes of `item`.
fn cfg_attrs(item: &TokenStream) -> TokenStream {
    let toks: Vec<TokenTree> = item.clone().into_iter().collect();
    let mut out = TokenStream::new();
    for w in toks.windows(2) {
        match (&w[0], &w[1]) {
            (TokenTree::Punct(p), TokenTree::Group(g))
                if p.as_char() == '#' && g.delimiter() == proc_macro2::Delimiter::Bracket =>
            {
                let first = g.stream().into_iter().next();
                if matches!(&first, Some(TokenTree::Ident(i)) if i == "cfg") {
                    out.extend([w[0].clone(), w[1].clone()]);
                }
            }
            (TokenTree::Punct(p), _) if p.as_char() == '#' => {}
            (TokenTree::Group(_), _) => {}
            // The attributes end where the item starts.
            _ => break,
        }
    }
    out
}

/// `f()` written with the full paths (public signatures).
pub fn public<T>(f: impl FnOnce() -> T) -> T {
    let _full = Names::set(full());
    f()
}

/// The part of the names that is the expansion's own: `f_<name>` for a
/// function (`kind` `'f'`) or a rule (`'r'`: `r_<name>`) named `name`,
/// `m_<header>_<method>` for an `impl` block (the identifiers of its
/// header, `impl` to `where` or the body, and its first function's name:
/// two blocks of one type cannot both define it). The first identifier of the item when nothing fits
/// (an item the macro refuses anyway).
fn key(item: &TokenStream, kind: char) -> String {
    let toks: Vec<TokenTree> = item.clone().into_iter().collect();
    let unraw = |i: &Ident| syn::ext::IdentExt::unraw(i).to_string();
    let after_fn = |toks: &[TokenTree]| {
        toks.windows(2).find_map(|w| match (&w[0], &w[1]) {
            (TokenTree::Ident(k), TokenTree::Ident(n)) if k == "fn" => Some(unraw(n)),
            _ => None,
        })
    };
    let is_impl = toks
        .iter()
        .any(|t| matches!(t, TokenTree::Ident(i) if i == "impl"));
    if is_impl {
        let body = toks.iter().rposition(
            |t| matches!(t, TokenTree::Group(g) if g.delimiter() == proc_macro2::Delimiter::Brace),
        );
        if let Some(b) = body {
            // The identifiers of the header, `impl` to `where` or the body.
            let head: Vec<String> = toks[..b]
                .iter()
                .skip_while(|t| !matches!(t, TokenTree::Ident(i) if i == "impl"))
                .skip(1)
                .take_while(|t| !matches!(t, TokenTree::Ident(i) if i == "where"))
                .filter_map(|t| match t {
                    TokenTree::Ident(i) => Some(unraw(i)),
                    _ => None,
                })
                .collect();
            let TokenTree::Group(g) = &toks[b] else {
                unreachable!("found as a group")
            };
            let inner: Vec<TokenTree> = g.stream().into_iter().collect();
            if let (false, Some(m)) = (head.is_empty(), after_fn(&inner)) {
                return format!("m_{}_{m}", head.join("_"));
            }
        }
    }
    if let Some(name) = after_fn(&toks) {
        return format!("{kind}_{name}");
    }
    toks.iter()
        .find_map(|t| match t {
            TokenTree::Ident(i) => Some(format!("{kind}_{}", unraw(i))),
            _ => None,
        })
        .unwrap_or_else(|| kind.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A function's, a rule's and an `impl` block's names; full paths
    /// outside a scope, in [`public`], and again once the scope is gone.
    #[test]
    fn names_of_expansions() {
        let item = |s: &str| -> TokenStream { s.parse().expect("tokens") };
        assert_eq!(
            key(&item("pub fn r#loss(x: f64) -> f64 { x }"), 'f'),
            "f_loss"
        );
        assert_eq!(key(&item("fn g(x: f64) -> f64 { x }"), 'r'), "r_g");
        let imp =
            "impl Model where Model: Clone { #[differentiable] fn loss(&self) -> f64 { 1.0 } }";
        assert_eq!(key(&item(imp), 'f'), "m_Model_loss");
        let imp = "impl<'a> Loss for Model<'a> { fn loss(&self) -> f64 { 1.0 } }";
        assert_eq!(key(&item(imp), 'f'), "m_a_Loss_for_Model_a_loss");
        assert_eq!(
            rt().to_string(),
            text!(::linad::__private::ad_runtime).to_string()
        );
        {
            let s = Scope::enter(&item("fn h(x: f64) -> f64 { x }"), 'f');
            assert_eq!(rt().to_string(), "__linad_rt_f_h");
            assert_eq!(nd().to_string(), "__linad_nd_f_h");
            assert_eq!(public(nd).to_string(), text!(::linad::ndarray).to_string());
            assert_eq!(nd().to_string(), "__linad_nd_f_h");
            let out = s.imported(TokenStream::new()).to_string();
            assert!(out.contains("ndarray as __linad_nd_f_h"), "{out}");
        }
        let gated = item("#[doc = \"d\"] #[cfg(not(miri))] #[inline] fn g() -> f64 { 1.0 }");
        let import = Scope::enter(&gated, 'f')
            .imported(TokenStream::new())
            .to_string();
        assert!(
            import.starts_with("# [cfg (not (miri))] # [allow"),
            "{import}"
        );
        assert_eq!(nd().to_string(), text!(::linad::ndarray).to_string());
    }
}
