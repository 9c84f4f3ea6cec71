//! Arguments of `#[differentiable(...)]`, parsed with darling.

use darling::ast::NestedMeta;
use darling::util::{Flag, PathList};
use darling::FromMeta;
use proc_macro2::TokenStream;

/// `#[differentiable(wrt(a, b), dump)]`.
#[derive(Debug, Default, FromMeta)]
pub struct Args {
    /// Differentiate only these parameters (default: every differentiable one).
    #[darling(default)]
    pub wrt: Option<PathList>,
    /// Also generate `f_linad_dump()`.
    #[darling(default)]
    pub dump: Flag,
}

impl Args {
    /// Parses the attribute's arguments.
    pub fn parse(attr: TokenStream) -> Result<Args, syn::Error> {
        let items = NestedMeta::parse_meta_list(attr)
            .map_err(|e| syn::Error::new(e.span(), e.to_string()))?;
        Args::from_list(&items).map_err(|e| syn::Error::new(e.span(), e.to_string()))
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
