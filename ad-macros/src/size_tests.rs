//! The size of what the macro emits, in tokens, against the source
//! (compile time, issue 12): rustc and LLVM chew every token.

use crate::expand::expand;
use crate::inline::count;
use proc_macro2::TokenStream;
use std::time::Instant;

/// Expands every `#[differentiable]` function of a file: (source tokens,
/// expanded tokens, seconds spent expanding).
fn sizes(file: &str) -> (usize, usize, f64) {
    let file: syn::File = syn::parse_str(file).expect("the file parses");
    let (mut src, mut out, mut secs) = (0, 0, 0.0);
    for item in file.items {
        let syn::Item::Fn(mut f) = item else { continue };
        let Some(k) = f
            .attrs
            .iter()
            .position(|a| a.path().is_ident("differentiable"))
        else {
            continue;
        };
        let attr = f.attrs.remove(k);
        let args = match attr.meta {
            syn::Meta::List(l) => l.tokens,
            _ => TokenStream::new(),
        };
        let item = quote::quote!(#f);
        src += count(item.clone());
        let t = Instant::now();
        let expanded = expand(args, item);
        secs += t.elapsed().as_secs_f64();
        out += count(expanded);
    }
    (src, out, secs)
}

/// The expansion of the file `LINAD_EXPANSION_FILE` (bench/compile-time).
#[test]
#[ignore]
fn expansion_size() {
    let path = std::env::var("LINAD_EXPANSION_FILE").expect("LINAD_EXPANSION_FILE is set");
    let text = std::fs::read_to_string(&path).expect("the file is readable");
    let (src, out, secs) = sizes(&text);
    println!(
        "source tokens {src}, expanded tokens {out}, expansion {:.1} ms",
        secs * 1e3
    );
}

/// A typical function (a loop, a branch, libm calls) expands to a bounded
/// multiple of its own tokens: every IR function's body is emitted once
/// (the blocks keeping residuals for callers' top-level calls,
/// `emit/residuals.rs`, added about 9% to this function's expansion).
#[test]
fn typical_expansion_is_compact() {
    let text = r#"
        #[differentiable]
        pub fn f(x: &Array1<f64>, a: f64) -> f64 {
            let mut s = 0.0;
            for i in 0..x.len() {
                let t = (x[i] * a + 0.5).sin();
                s += t * x[i] - (t * t) * 0.5;
            }
            if s > 0.0 { s.sqrt() } else { s / (1.0 + a * a) }
        }
    "#;
    let (src, out, _) = sizes(text);
    let ratio = out as f64 / src as f64;
    assert!(
        ratio < 70.0,
        "expansion is {ratio:.1}x the source ({out} / {src} tokens)"
    );
}
