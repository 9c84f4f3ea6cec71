//! Rust names of IR variables and of the emitter's own temporaries.
//!
//! An IR variable `v` with name hint `h` becomes `{h}_{v}` with `h` sanitised
//! to ASCII letters, digits and `_` (a hint that is empty or does not start
//! with a letter gets a `v` prefix), so it never starts with `_` and never is
//! a keyword. The emitter's temporaries start with `__`, so the two never
//! clash. The emitter writes them as text (`crate::text`), so they resolve as
//! if written at the macro's call site: the generated items' locals and
//! parameters are these names, the `__` temporaries and the user's
//! parameter names (the cotangent's chosen not to clash with them,
//! `crate::names::ct_param`), and the user's assertions copied into the
//! public functions run in a block of their own before any of them.

use ad_core_ir::ir::{Func, Var};
use proc_macro2::{Ident, Span};

/// The sanitised name hint.
pub fn sanitise(hint: &str) -> String {
    let mut s: String = hint
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if !s.starts_with(|c: char| c.is_ascii_alphabetic()) {
        s.insert(0, 'v');
    }
    s
}

/// An identifier (written into the emitter's text, where its span is not
/// kept; as tokens it has mixed-site hygiene).
pub fn ident(s: &str) -> Ident {
    Ident::new(s, Span::mixed_site())
}

/// The Rust name of the variable `v` of `f`: `{hint}_{v}`.
pub fn var_name(f: &Func, v: Var) -> Ident {
    ident(&format!(
        "{}_{}",
        sanitise(&f.vars.vars[v.0 as usize].name),
        v.0
    ))
}

/// The name of the nested Rust function emitted for an IR function of the
/// program that is not an extern (`f__fwd` -> `__linad_ir_f__fwd`).
pub fn internal_fn(ir_name: &str) -> Ident {
    let s: String = ir_name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    ident(&format!("__linad_ir_{s}"))
}

/// A fresh temporary: `__{what}{n}`.
pub fn temp(what: &str, n: u32) -> Ident {
    ident(&format!("__{what}{n}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sanitised_names() {
        assert_eq!(sanitise("x"), "x");
        assert_eq!(sanitise("x.1"), "x_1");
        assert_eq!(sanitise("_x"), "v_x");
        assert_eq!(sanitise(""), "v");
        assert_eq!(sanitise("1a"), "v1a");
        assert_eq!(sanitise("ct_state"), "ct_state");
        assert_eq!(sanitise("é"), "v_");
        assert_eq!(internal_fn("m::g__fwd").to_string(), "__linad_ir_m__g__fwd");
    }
}
