//! Test support: a crate's source in a temporary file, seen by the source
//! index (`crate_fns`) while the tests expand items of it, as the compiler
//! would while building that crate.

use crate::crate_fns::Scope;
use proc_macro2::{TokenStream, TokenTree};
use std::path::PathBuf;

/// A one-file crate; the file is removed when this is dropped.
pub struct TestCrate {
    _scope: Scope,
    dir: PathBuf,
}

impl TestCrate {
    /// The crate whose `lib.rs` is `source` (`tag` names its folder); the
    /// index does not know it is the whole crate (a module could load it).
    pub fn new(tag: &str, source: &str) -> TestCrate {
        Self::with_file(tag, "lib.rs", source)
    }

    /// The crate whose root file `main.rs` is `source`: the index sees the
    /// whole crate (`crate_fns::callers_possible` can say no).
    pub fn whole(tag: &str, source: &str) -> TestCrate {
        Self::with_file(tag, "main.rs", source)
    }

    fn with_file(tag: &str, name: &str, source: &str) -> TestCrate {
        let dir = std::env::temp_dir().join(format!("linad-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join(name);
        std::fs::write(&file, source).unwrap();
        TestCrate {
            _scope: Scope::enter(Some(file)),
            dir,
        }
    }

    /// The identifiers of `#[differentiable] item`'s expansion.
    pub fn expand_idents(&self, item: TokenStream) -> Vec<String> {
        self.expand_idents_with(TokenStream::new(), item)
    }

    /// The identifiers of `#[differentiable(args)] item`'s expansion.
    pub fn expand_idents_with(&self, args: TokenStream, item: TokenStream) -> Vec<String> {
        idents(crate::expand::expand(args, item))
    }
}

impl Drop for TestCrate {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn idents(ts: TokenStream) -> Vec<String> {
    let mut out = vec![];
    for t in ts {
        match t {
            TokenTree::Ident(i) => out.push(i.to_string()),
            TokenTree::Group(g) => out.extend(idents(g.stream())),
            _ => {}
        }
    }
    out
}
