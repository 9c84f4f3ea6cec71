//! Deep and long inputs: the macro must expand them in bounded stack and
//! linear time, or refuse them with spanned errors, never panic.
//!
//! Each case runs `expand` on a thread with rustc's 8 MiB stack (proc
//! macros run on the compiler's thread). Expansion times are printed (run
//! with `--nocapture`), not asserted.

use crate::expand::expand;
use proc_macro2::TokenStream;
use std::fmt::Write;
use std::time::Instant;

/// Expands `#[differentiable] <src>` on an 8 MiB thread; returns the output
/// text and prints the time taken.
fn run(label: &str, src: String) -> String {
    let label = label.to_string();
    let mib: usize = std::env::var("LINAD_DEEP_STACK_MIB")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(8);
    std::thread::Builder::new()
        .stack_size(mib << 20)
        .spawn(move || {
            let item: TokenStream = src.parse().expect("test input tokenizes");
            let (t, c) = (Instant::now(), cpu_seconds());
            let out = expand(TokenStream::new(), item);
            let (dt, dc) = (t.elapsed(), cpu_seconds() - c);
            let text = out.to_string();
            eprintln!(
                "{label}: expanded in {:.3} s, {dc:.2} s of CPU ({} bytes)",
                dt.as_secs_f64(),
                text.len()
            );
            text
        })
        .unwrap()
        .join()
        .expect("expansion panicked")
}

/// CPU time of this process so far (Linux; 0 elsewhere): with other jobs on
/// the machine, wall-clock times overstate the work.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the parenthesised command name, from `state` (field 3):
    // utime and stime are fields 14 and 15, in clock ticks (100 per second).
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<f64> = rest
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0.0))
        .collect();
    match (f.get(11), f.get(12)) {
        (Some(u), Some(s)) => (u + s) / 100.0,
        _ => 0.0,
    }
}

fn chained_lets(n: usize) -> String {
    let mut s = String::from("fn f(x: f64) -> f64 {\n let v0 = x;\n");
    for i in 1..=n {
        let _ = writeln!(s, " let v{i} = v{} * 0.5 + x.sin();", i - 1);
    }
    let _ = writeln!(s, " v{n}\n}}");
    s
}

fn nested_parens(n: usize) -> String {
    format!(
        "fn f(x: f64) -> f64 {{ {}x{} }}",
        "(".repeat(n),
        ")".repeat(n)
    )
}

fn nested_fors(n: usize) -> String {
    let mut s = String::from("fn f(x: f64, m: usize) -> f64 {\n let mut s = x;\n");
    for i in 0..n {
        let _ = writeln!(s, " for i{i} in 0..m {{");
    }
    s.push_str(" s = s * 0.9 + x.sin();\n");
    for _ in 0..n {
        s.push_str(" }\n");
    }
    s.push_str(" s\n}");
    s
}

fn add_lets(n: usize) -> String {
    let mut s = String::from("fn f(x: f64) -> f64 {\n let v0 = x;\n");
    for i in 1..=n {
        let _ = writeln!(s, " let v{i} = v{} + x;", i - 1);
    }
    let _ = writeln!(s, " v{n}\n}}");
    s
}

fn nested_blocks(n: usize) -> String {
    format!(
        "fn f(x: f64) -> f64 {{ {}x{} }}",
        "{".repeat(n),
        "}".repeat(n)
    )
}

fn nested_ifs(n: usize) -> String {
    let mut s = String::from("fn f(x: f64) -> f64 { let mut s = x;\n");
    for _ in 0..n {
        s.push_str("if s > 0.0 {\n");
    }
    s.push_str("s = s * x;\n");
    for _ in 0..n {
        s.push_str("}\n");
    }
    s.push_str("s }");
    s
}

fn long_sum(n: usize) -> String {
    format!("fn f(x: f64) -> f64 {{ x{} }}", " + x".repeat(n))
}

fn method_chain(n: usize) -> String {
    format!("fn f(x: f64) -> f64 {{ x{} }}", ".sin()".repeat(n))
}

fn negations(n: usize) -> String {
    format!("fn f(x: f64) -> f64 {{ {}x }}", "-".repeat(n))
}

fn else_ifs(n: usize) -> String {
    let mut s = String::from("fn f(x: f64) -> f64 { if x > 0.0 { x }");
    for i in 0..n {
        let _ = write!(s, " else if x > {i}.0 {{ x + {i}.0 }}");
    }
    s.push_str(" else { x } }");
    s
}

/// The output has the companions and no error.
#[track_caller]
fn assert_expanded(out: &str) {
    assert!(
        out.contains("fn f_jvp") && out.contains("fn f_vjp") && !out.contains("compile_error"),
        "{}",
        &out[..out.len().min(2000)]
    );
}

/// The output is the fallback: exactly one error, containing `msg`, and the
/// original function.
#[track_caller]
fn assert_refused(out: &str, msg: &str) {
    assert_eq!(
        out.matches("compile_error").count(),
        1,
        "{}",
        &out[..out.len().min(2000)]
    );
    assert!(out.contains(msg), "{}", &out[..out.len().min(2000)]);
    assert!(!out.contains("fn f_jvp") && out.contains("fn f"));
}

const NESTING: &str = "nested too deeply here";
const EXPR_DEPTH: &str = "expression nested too deeply";

#[test]
fn chained_lets_3500() {
    assert_expanded(&run("3500 lets", chained_lets(3500)));
    assert_expanded(&run("3500 additions", add_lets(3500)));
}

#[test]
fn chained_lets_5000() {
    assert_expanded(&run("5000 lets", chained_lets(5000)));
}

#[test]
fn nested_for_20() {
    assert_expanded(&run("20 nested fors", nested_fors(20)));
}

#[test]
fn parens() {
    assert_expanded(&run("100 parens", nested_parens(100)));
    assert_refused(&run("775 parens", nested_parens(775)), NESTING);
    // (Far deeper inputs overflow proc_macro2's own fallback lexer and recursive
    // drop in this test, not the macro: in rustc, token trees are the compiler's.)
    assert_refused(&run("3000 parens", nested_parens(3000)), NESTING);
}

#[test]
fn nested_blocks_ifs_fors() {
    assert_expanded(&run("127 blocks", nested_blocks(127)));
    assert_refused(&run("3000 blocks", nested_blocks(3000)), NESTING);
    assert_expanded(&run("100 nested ifs", nested_ifs(100)));
    let lt = nested_ifs(100).replace("s > 0.0", "s < 9.0");
    assert_expanded(&run("100 nested ifs with `<`", lt));
    assert_refused(&run("1000 nested ifs", nested_ifs(1000)), NESTING);
    assert_expanded(&run("100 nested fors", nested_fors(100)));
    assert_refused(&run("300 nested fors", nested_fors(300)), NESTING);
}

#[test]
fn long_operator_chains() {
    assert_expanded(&run("250-term sum", long_sum(250)));
    assert_refused(&run("20000-term sum", long_sum(20_000)), EXPR_DEPTH);
    assert_expanded(&run("250 method calls", method_chain(250)));
    assert_refused(&run("5000 method calls", method_chain(5000)), EXPR_DEPTH);
    assert_expanded(&run("100 negations", negations(100)));
    assert_refused(&run("100000 negations", negations(100_000)), NESTING);
    assert_expanded(&run("40 else-ifs", else_ifs(40)));
    assert_refused(&run("3000 else-ifs", else_ifs(3000)), NESTING);
}

#[test]
fn deep_generic_types() {
    let ty = |n: usize| format!("{}f64{}", "Vec<".repeat(n), ">".repeat(n));
    // Within the limit syn parses it and the signature check refuses `Vec`.
    let out = run(
        "20-deep type",
        format!("fn f(x: f64, v: {}) -> f64 {{ x }}", ty(20)),
    );
    assert_eq!(out.matches("compile_error").count(), 1, "{out}");
    let out = run(
        "3000-deep type",
        format!("fn f(x: f64, v: {}) -> f64 {{ x }}", ty(3000)),
    );
    assert_refused(&out, NESTING);
}

#[test]
fn many_comparisons_are_not_nesting() {
    let conds: Vec<String> = (0..200).map(|i| format!("x < {i}.0")).collect();
    let src = format!(
        "fn f(x: f64) -> f64 {{ let mut s = x; {} s }}",
        conds
            .iter()
            .map(|c| format!("if {c} {{ s = s * x; }}"))
            .collect::<String>()
    );
    assert_expanded(&run("200 comparisons", src));
}

#[test]
fn deep_attribute_arguments() {
    let attr: String = format!("wrt{}x{}", "(".repeat(1000), ")".repeat(1000));
    let out = std::thread::Builder::new()
        .stack_size(8 << 20)
        .spawn(move || {
            let attr: TokenStream = attr.parse().unwrap();
            let item: TokenStream = "fn f(x: f64) -> f64 { x }".parse().unwrap();
            expand(attr, item).to_string()
        })
        .unwrap()
        .join()
        .expect("expansion panicked");
    assert_refused(&out, NESTING);
}

/// Expansion times of growing inputs (`--ignored --nocapture`).
#[test]
#[ignore]
fn scaling() {
    for n in [1250, 2500, 5000, 10000] {
        run(&format!("{n} lets"), chained_lets(n));
    }
    run("5000 additions", add_lets(5000));
    for n in [5, 10, 20, 40, 80] {
        run(&format!("{n} nested fors"), nested_fors(n));
    }
    for n in [15, 30, 60, 120] {
        run(&format!("{n} else-ifs"), else_ifs(n));
    }
}
