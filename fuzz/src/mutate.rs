//! The mutator: turns a valid generated function into an invalid one (wrong
//! types, unsupported constructs, bad attribute arguments), a stress case
//! (deep nesting, huge bodies) or a token-level corruption.

use crate::ast::*;
use crate::rng::Rng;

/// What the macro must do with a mutant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expect {
    /// Exactly one spanned error (`compile_error!`) for the one defect.
    OneError,
    /// At least one error (the mutant is not valid Rust either).
    SomeError,
    /// Anything but a panic: tokens or errors (stress and odd inputs).
    Anything,
}

/// A mutated function.
#[derive(Clone, Debug)]
pub struct Mutant {
    pub kind: &'static str,
    pub expect: Expect,
    /// Whether rustc accepts the function without the attribute (then the
    /// macro's error is the only error rustc should report).
    pub rust_valid: bool,
    /// The attribute's arguments (inside the parentheses).
    pub attr: String,
    /// The function item without the attribute.
    pub item: String,
}

impl Mutant {
    /// The source with the attribute.
    pub fn source(&self) -> String {
        if self.attr.is_empty() {
            format!("#[differentiable]\n{}", self.item)
        } else {
            format!("#[differentiable({})]\n{}", self.attr, self.item)
        }
    }
}

/// Every mutation kind.
pub const KINDS: [&str; 28] = [
    "type_mix",
    "signed_saturating",
    "while_let",
    "break_value",
    "match",
    "macro",
    "closure_value",
    "early_return",
    "unknown_method",
    "cast_char",
    "shift",
    "unsafe_block",
    "mut_ref_param",
    "array_literal",
    "string_literal",
    "generic",
    "bad_wrt",
    "unknown_arg",
    "wrong_return",
    "deep_expr",
    "deep_blocks",
    "deep_if",
    "huge_body",
    "token_delete",
    "token_dup",
    "underscore_param",
    "pattern_param",
    "keyword_fn_name",
];

/// Stress kinds (valid or not, their time is measured against the input size).
pub fn is_stress(kind: &str) -> bool {
    matches!(kind, "deep_expr" | "deep_blocks" | "deep_if" | "huge_body")
}

fn insert_raw(f: &mut Func, rng: &mut Rng, text: String) {
    let k = rng.below(f.body.len() + 1);
    f.body.insert(k, S::Raw(text));
}

/// Mutates `p.main` with `kind` (`depth`: nesting depth / body size of
/// stress kinds).
pub fn mutate(p: &Program, kind: &'static str, rng: &mut Rng, depth: usize) -> Mutant {
    let mut f = p.main.clone();
    let x = f.params[0].name.clone();
    let mut attr = String::new();
    let mut expect = Expect::OneError;
    let mut rust_valid = true;
    let mut item: Option<String> = None;
    match kind {
        "type_mix" => {
            insert_raw(&mut f, rng, format!("let bad = {x} + 2usize;"));
            expect = Expect::SomeError;
            rust_valid = false;
        }
        // `saturating_sub` is supported on unsigned integers only.
        "signed_saturating" => insert_raw(
            &mut f,
            rng,
            format!("let bad = ({x} as i64).saturating_sub(2);"),
        ),
        // `while` and `loop` with `break;` are supported, and `break` with a
        // value out of a `loop` when it is a number (or tuple) whose type
        // shows; `while let`, and an array value, are not.
        "while_let" => insert_raw(
            &mut f,
            rng,
            format!("let mut bad = {x}; while let 1 = 2 {{ bad += 0.5; }}"),
        ),
        "break_value" => insert_raw(
            &mut f,
            rng,
            format!("let bad = loop {{ break Array1::from_elem(2, {x}); }};"),
        ),
        // `match` on numbers and bools is supported; on tuples it is not.
        "match" => insert_raw(
            &mut f,
            rng,
            format!("let bad = match (3usize, 1usize) {{ (0, _) => 1.0, _ => {x} }};"),
        ),
        "macro" => insert_raw(&mut f, rng, format!("println!(\"{{}}\", {x});")),
        // A closure value that assigns what it captured (an `FnMut`): closures
        // bound by `let` are supported, assignments to their captures are not.
        "closure_value" => insert_raw(
            &mut f,
            rng,
            format!("let mut cap = 0.0; let mut bad = |z: f64| cap += z; bad({x});"),
        ),
        "early_return" => {
            let ret = match f.out {
                Ty::F => x.clone(),
                _ => pe(&f.ret),
            };
            // After the last statement, so every name in `ret` is bound;
            // inside a block in a loop (an early return at the top level,
            // and one ending an `if` branch at the top of a loop body, are
            // supported).
            f.body.push(S::Raw(format!(
                "for _ in 0..1 {{ let _ = {{ if {x} > 100.0 {{ return {ret}; }} 0.0 }}; }}"
            )));
        }
        "unknown_method" => insert_raw(&mut f, rng, format!("let bad = {x}.midpoint(1.5);")),
        // `f32` is supported (through an `f64` shadow); `char` is not.
        "cast_char" => insert_raw(&mut f, rng, format!("let bad = ({x} as u8) as char;")),
        "shift" => insert_raw(&mut f, rng, "let bad = 3usize << 2;".into()),
        "unsafe_block" => insert_raw(&mut f, rng, format!("let bad = unsafe {{ {x} }};")),
        "mut_ref_param" => f.extra_params.push("bad: &mut f64".into()),
        "array_literal" => insert_raw(&mut f, rng, format!("let bad = [[{x}, 1.0], [2.0, {x}]];")),
        "string_literal" => insert_raw(&mut f, rng, "let bad = \"linad\";".into()),
        "generic" => {
            let src = f.item_source();
            item = Some(src.replacen(&format!("fn {}(", f.name), &format!("fn {}<T>(", f.name), 1));
        }
        "bad_wrt" => attr = "wrt(no_such_param)".into(),
        "unknown_arg" => attr = "fast".into(),
        "wrong_return" => {
            let src = f.item_source();
            let sig = f.signature();
            let bad = sig.replace(&format!("-> {} {{", f.out.rust()), "-> i32 {");
            item = Some(src.replacen(&sig, &bad, 1));
            expect = Expect::SomeError;
            rust_valid = false;
        }
        "deep_expr" => {
            let mut e = x.clone();
            for k in 0..depth {
                e = if k % 2 == 0 {
                    format!("({e} + 0.5)")
                } else {
                    format!("({e} * 0.5)")
                };
            }
            insert_raw(&mut f, rng, format!("let deep = {e};"));
            expect = Expect::Anything;
        }
        "deep_blocks" => {
            let e = format!("{}{x}{}", "{ ".repeat(depth), " }".repeat(depth));
            insert_raw(&mut f, rng, format!("let deep = {e};"));
            expect = Expect::Anything;
        }
        "deep_if" => {
            let mut e = x.to_string();
            for k in 0..depth {
                e = format!("if {x} > {k}.0 {{ {e} }} else {{ {x} * 0.5 }}");
            }
            insert_raw(&mut f, rng, format!("let deep = {e};"));
            expect = Expect::Anything;
        }
        "huge_body" => {
            let mut lines = vec![format!("let mut big = {x};")];
            for k in 0..depth {
                lines.push(format!("let big{k} = big * 0.5 + {x}.sin();"));
                lines.push(format!("big = big{k} - 0.25;"));
            }
            insert_raw(&mut f, rng, lines.join("\n    "));
            expect = Expect::Anything;
        }
        "underscore_param" => {
            f.extra_params.push("_: f64".into());
            expect = Expect::Anything;
        }
        "pattern_param" => {
            f.extra_params.push("(pa, pb): (f64, f64)".into());
            expect = Expect::Anything;
        }
        "keyword_fn_name" => {
            let src = f.item_source();
            item = Some(src.replacen(&format!("fn {}(", f.name), "fn r#loop(", 1));
            expect = Expect::Anything;
        }
        "token_delete" | "token_dup" => {
            let src = f.item_source();
            let mut words: Vec<&str> = src.split(' ').collect();
            let k = rng.below(words.len());
            if kind == "token_delete" {
                words.remove(k);
            } else {
                let w = words[k];
                words.insert(k, w);
            }
            item = Some(words.join(" "));
            expect = Expect::Anything;
            rust_valid = false;
        }
        _ => panic!("unknown mutation {kind}"),
    }
    Mutant {
        kind,
        expect,
        rust_valid,
        attr,
        item: item.unwrap_or_else(|| f.item_source()),
    }
}
