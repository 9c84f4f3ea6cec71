//! The size of what the macro emits, in tokens, against the source
//! (compile time, issue 12): rustc and LLVM chew every token.

use crate::expand::expand;
use crate::inline::count;
use proc_macro2::TokenStream;
use std::time::Instant;

/// One `#[differentiable]` function of a file: its name, its tokens, its
/// expansion, and the seconds spent expanding it.
struct Expansion {
    name: String,
    source: TokenStream,
    expanded: TokenStream,
    secs: f64,
}

/// Expands every `#[differentiable]` function of a file.
fn expansions(file: &str) -> Vec<Expansion> {
    let file: syn::File = syn::parse_str(file).expect("the file parses");
    let mut out = vec![];
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
        let source = quote::quote!(#f);
        let t = Instant::now();
        let expanded = expand(args, source.clone());
        out.push(Expansion {
            name: f.sig.ident.to_string(),
            source,
            expanded,
            secs: t.elapsed().as_secs_f64(),
        });
    }
    out
}

/// Expands every `#[differentiable]` function of a file: (source tokens,
/// expanded tokens, seconds spent expanding).
fn sizes(file: &str) -> (usize, usize, f64) {
    expansions(file)
        .into_iter()
        .fold((0, 0, 0.0), |(s, o, t), e| {
            (s + count(e.source), o + count(e.expanded), t + e.secs)
        })
}

/// The text of the file `LINAD_EXPANSION_FILE`, the `src/lib.rs` of a
/// crate, expanded as the compiler would while building that crate: the
/// source index (`crate_fns`) sees it (these tests run alone, each in a
/// process of its own, so setting `CARGO_MANIFEST_DIR` here is theirs).
fn expansion_file() -> (String, crate::crate_fns::Scope) {
    let path = std::env::var("LINAD_EXPANSION_FILE").expect("LINAD_EXPANSION_FILE is set");
    let path = std::path::PathBuf::from(path);
    if let Some(dir) = path.parent().and_then(|src| src.parent()) {
        std::env::set_var("CARGO_MANIFEST_DIR", dir);
    }
    let text = std::fs::read_to_string(&path).expect("the file is readable");
    (text, crate::crate_fns::Scope::enter(Some(path)))
}

/// The expansion of the file `LINAD_EXPANSION_FILE` (bench/compile-time).
#[test]
#[ignore]
fn expansion_size() {
    let (text, _crate) = expansion_file();
    for e in expansions(&text) {
        println!(
            "{:>24} {:>6} -> {:>7} tokens, {:>6.1} ms",
            e.name,
            count(e.source),
            count(e.expanded),
            e.secs * 1e3
        );
    }
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
    // 51x today (5,049 / 99 tokens): no scalar `let` types, no linear
    // scalar `dup`s, short array types.
    assert!(
        ratio < 56.0,
        "expansion is {ratio:.1}x the source ({out} / {src} tokens)"
    );
}

/// The text of the generated function `name` among the expansions.
fn generated_fn(es: &[Expansion], name: &str) -> String {
    es.iter()
        .flat_map(|e| {
            syn::parse2::<syn::File>(e.expanded.clone())
                .expect("parses")
                .items
        })
        .find_map(|it| match it {
            syn::Item::Fn(f) if f.sig.ident == name => Some(quote::quote!(#f).to_string()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no generated function `{name}`"))
}

/// A scalar formula is written as expressions, not a chain of `let`s
/// (`emit/inline_exprs.rs`): the primal of a one-line formula binds one
/// variable, its result, and forward mode only the values read twice (by
/// the formula and its tangent) and the tangent; a scalar computed outside a
/// build and read inside it stays a `let` before the build (the closure
/// runs once per element).
#[test]
fn scalar_formulas_are_expressions() {
    let es = expansions(
        r#"
        #[differentiable]
        pub fn f(x: f64, y: f64) -> f64 {
            (x * y + x.sin()) * (x - y) / (1.0 + y * y)
        }
        #[differentiable]
        pub fn g(x: &Array1<f64>, a: f64) -> Array1<f64> {
            let s = (a * 2.0).sin() + a;
            Array1::from_shape_fn(x.len(), |i| x[i] * s)
        }
    "#,
    );
    let lets = |t: &str| t.split_whitespace().filter(|w| *w == "let").count();
    let primal = generated_fn(&es, "__linad_f_primal");
    assert_eq!(lets(&primal), 1, "{primal}");
    let jvp = generated_fn(&es, "__linad_f_jvp");
    assert!(lets(&jvp) <= 5, "{jvp}");
    let g = generated_fn(&es, "__linad_g_primal");
    let sin = g.find("f64 :: sin").expect("the sine");
    assert_eq!(g.matches("f64 :: sin").count(), 1, "{g}");
    assert!(sin < g.find('|').expect("the build's closure"), "{g}");
}

/// A function of `n` straight-line statements (formulas, a branch and a
/// reducing loop every few lines, each reading the previous line) in the
/// shape of issue 12's "30-line function".
fn straight_line(n: usize) -> String {
    let mut body = String::from("let mut s = 0.0;\nlet t0 = a * 1.5;\n");
    for i in 1..n {
        let p = i - 1;
        body.push_str(&match i % 5 {
            0 => format!(
                "for i in 0..x.len() {{ s += (x[i] * t{p}).sin(); }}\nlet t{i} = t{p} + s * 0.5;\n"
            ),
            3 => format!("let t{i} = if t{p} > 0.0 {{ t{p}.exp() }} else {{ t{p} * a }};\n"),
            _ => format!("let t{i} = (t{p} * a + {i}.0).cos() * t{p};\n"),
        });
    }
    format!(
        "#[differentiable]\npub fn f(x: &Array1<f64>, a: f64) -> f64 {{\n{body}t{} + s\n}}\n",
        n - 1
    )
}

/// The expansion grows linearly with the function (issue 12): twice the
/// statements, at most about twice the tokens. (Nesting is another matter:
/// `d` nested loops index `d - k` residual stacks at level `k`, so their
/// linear halves grow with the square of the depth; real code nests 2-4
/// deep.)
#[test]
fn expansion_is_linear_in_straight_line_code() {
    let (s1, o1, _) = sizes(&straight_line(20));
    let (s2, o2, _) = sizes(&straight_line(40));
    let (s4, o4, _) = sizes(&straight_line(80));
    assert!(
        s2 > 2 * s1 - 10 && s4 > 2 * s2 - 10,
        "sources {s1}, {s2}, {s4}"
    );
    for (a, b) in [(o1, o2), (o2, o4)] {
        let r = b as f64 / a as f64;
        assert!(
            r < 2.15,
            "doubling the statements multiplies the expansion by {r:.2} ({a} -> {b} tokens)"
        );
    }
}

/// Tokens of the expansion of `LINAD_EXPANSION_FILE` by generated item,
/// the function's name replaced by `f` (`__linad_f_jvp`): where the tokens
/// go. `LINAD_EXPANSION_FILE=$PWD/target/compile-time/linad/src/lib.rs
/// cargo test --release -p ad-macros --lib expansion_breakdown -- --ignored
/// --nocapture` after `bench/compile-time`.
#[test]
#[ignore]
fn expansion_breakdown() {
    let mut by: std::collections::BTreeMap<String, usize> = Default::default();
    let (text, _crate) = expansion_file();
    for e in expansions(&text) {
        let out: syn::File = syn::parse2(e.expanded).expect("the expansion parses");
        for it in out.items {
            let key = match &it {
                syn::Item::Fn(g) => g.sig.ident.to_string(),
                syn::Item::Type(t) => format!("type {}", t.ident),
                syn::Item::Struct(t) => format!("struct {}", t.ident),
                _ => "other items".to_string(),
            };
            *by.entry(key.replace(&e.name, "f")).or_default() += count(quote::quote!(#it));
        }
    }
    let mut v: Vec<_> = by.into_iter().collect();
    v.sort_by_key(|(_, n)| std::cmp::Reverse(*n));
    for (k, n) in v {
        println!("{n:>8} {k}");
    }
}

/// Prints the expansion of every function of `LINAD_EXPANSION_FILE` (pipe
/// it through `rustfmt` to read it).
#[test]
#[ignore]
fn expansion_print() {
    let (text, _crate) = expansion_file();
    for e in expansions(&text) {
        println!("{}", e.expanded);
    }
}
