//! Arguments of `#[differentiable(...)]`, parsed with darling.

use darling::ast::NestedMeta;
use darling::util::{Flag, PathList};
use darling::FromMeta;
use proc_macro2::TokenStream;

/// `#[differentiable(wrt(a, b), dump, forward | reverse)]`.
#[derive(Debug, Default, FromMeta)]
pub struct Args {
    /// Differentiate only these parameters (default: every differentiable one).
    #[darling(default)]
    pub wrt: Option<PathList>,
    /// Also generate `f_linad_dump()`.
    #[darling(default)]
    pub dump: Flag,
    /// Only forward mode: `f_jvp` and `f_linearize` (faster builds).
    #[darling(default)]
    pub forward: Flag,
    /// Only reverse mode: `f_vjp` and `f_pullback` (faster builds).
    #[darling(default)]
    pub reverse: Flag,
}

/// Which public derivatives to emit (the hidden blocks callers use are
/// emitted either way).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Modes {
    /// `f_jvp` and `f_linearize`.
    pub forward: bool,
    /// `f_vjp` and `f_pullback`.
    pub reverse: bool,
}

impl Modes {
    /// Both modes.
    pub const BOTH: Modes = Modes {
        forward: true,
        reverse: true,
    };

    /// The public companions these modes ask for, from their builders:
    /// `forward` makes `f_jvp` and `f_linearize`, `reverse` `f_vjp` and
    /// `f_pullback` (each called only when its mode is on).
    pub fn select(
        self,
        forward: impl FnOnce() -> TokenStream,
        reverse: impl FnOnce() -> TokenStream,
    ) -> TokenStream {
        let mut out = TokenStream::new();
        if self.forward {
            out.extend(forward());
        }
        if self.reverse {
            out.extend(reverse());
        }
        out
    }
}

impl Args {
    /// Parses the attribute's arguments; every problem is reported, in
    /// rustc's style, with what to write instead.
    pub fn parse(attr: TokenStream) -> Result<Args, Vec<syn::Error>> {
        // `wrt[x]` / `wrt{x}` would otherwise slip through the meta parser
        for t in attr.clone() {
            if let proc_macro2::TokenTree::Group(g) = &t {
                if g.delimiter() != proc_macro2::Delimiter::Parenthesis {
                    return Err(vec![syn::Error::new(
                        g.span(),
                        "`wrt` takes its parameter names in parentheses: write `wrt(x, w)`",
                    )]);
                }
            }
        }
        let items = NestedMeta::parse_meta_list(attr)
            .map_err(|e| vec![syn::Error::new(e.span(), e.to_string())])?;
        Args::from_list(&items).map_err(|e| {
            e.into_iter()
                .map(|e| syn::Error::new(e.span(), friendly(&e.to_string())))
                .collect()
        })
    }

    /// The modes to emit: both unless `forward` or `reverse` names one.
    pub fn modes(&self) -> Result<Modes, syn::Error> {
        match (self.forward.is_present(), self.reverse.is_present()) {
            (true, true) => Err(syn::Error::new(
                self.reverse.span(),
                "`forward` and `reverse` each select one mode: give one of them, or neither for both",
            )),
            (true, false) => Ok(Modes {
                forward: true,
                reverse: false,
            }),
            (false, true) => Ok(Modes {
                forward: false,
                reverse: true,
            }),
            (false, false) => Ok(Modes::BOTH),
        }
    }

    /// The `wrt` names, if given, as identifiers (a path with several segments
    /// is an error).
    pub fn wrt_idents(&self) -> Result<Option<Vec<syn::Ident>>, syn::Error> {
        let Some(list) = &self.wrt else {
            return Ok(None);
        };
        let mut out = vec![];
        for p in list.iter() {
            match p.get_ident() {
                Some(i) => out.push(i.clone()),
                None => {
                    return Err(syn::Error::new_spanned(
                        p,
                        "expected a parameter name in `wrt(...)`",
                    ))
                }
            }
        }
        Ok(Some(out))
    }
}

const ACCEPTED: &str =
    "#[differentiable] accepts `wrt(a, b, ..)`, `dump`, and `forward` or `reverse`";

/// A darling message rephrased for users of `#[differentiable]`.
fn friendly(msg: &str) -> String {
    let field = |m: &str| m.split('`').nth(1).unwrap_or("").to_string();
    if msg.starts_with("Unknown field") {
        format!("unknown argument `{}`: {ACCEPTED}", field(msg))
    } else if msg.starts_with("Duplicate field") {
        format!("`{}` is given twice", field(msg))
    } else if msg.starts_with("Unexpected type") && msg.ends_with("at dump") {
        "`dump` takes no value: write `#[differentiable(dump)]`".to_string()
    } else if msg.ends_with("at wrt") {
        "`wrt` takes a list of parameter names: write `wrt(x, w)`".to_string()
    } else {
        format!("{msg} ({ACCEPTED})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    #[test]
    fn brackets_are_refused() {
        for attr in [quote!(wrt[x]), quote!(wrt { x }), quote!(dump, wrt[x, y])] {
            let e = Args::parse(attr).expect_err("refused");
            assert!(e[0].to_string().contains("wrt(x, w)"), "{}", e[0]);
        }
        assert!(Args::parse(quote!(wrt(x), dump)).is_ok());
    }
}
