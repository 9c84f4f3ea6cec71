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
            let t = Instant::now();
            let out = expand(TokenStream::new(), item);
            let dt = t.elapsed();
            let text = out.to_string();
            eprintln!(
                "{label}: expanded in {:.3} s ({} bytes)",
                dt.as_secs_f64(),
                text.len()
            );
            text
        })
        .unwrap()
        .join()
        .expect("expansion panicked")
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

fn has_companions(text: &str) -> bool {
    text.contains("fn f_jvp") && text.contains("fn f_vjp") && !text.contains("compile_error")
}

#[test]
fn chained_lets_3500() {
    let out = run("3500 lets", chained_lets(3500));
    assert!(has_companions(&out), "{}", &out[..out.len().min(2000)]);
}

#[test]
fn chained_lets_5000() {
    let out = run("5000 lets", chained_lets(5000));
    assert!(has_companions(&out), "{}", &out[..out.len().min(2000)]);
}

#[test]
fn nested_for_20() {
    let out = run("20 nested fors", nested_fors(20));
    assert!(has_companions(&out), "{}", &out[..out.len().min(2000)]);
}

#[test]
fn nested_parens_775() {
    let out = run("775 parens", nested_parens(775));
    eprintln!("{}", &out[out.len().saturating_sub(1500)..]);
}

#[test]
#[ignore]
fn scaling() {
    for n in [1250, 2500, 5000, 10000] {
        run(&format!("{n} lets"), chained_lets(n));
    }
    for n in [4, 6, 8, 10] {
        run(&format!("{n} fors"), nested_fors(n));
    }
}

/// Exploration: `LINAD_DEEP=kind:n` expands one generated input.
#[test]
#[ignore]
fn explore() {
    let Ok(spec) = std::env::var("LINAD_DEEP") else {
        return;
    };
    let (kind, n) = spec.split_once(':').unwrap();
    let n: usize = n.parse().unwrap();
    let src = match kind {
        "lets" => chained_lets(n),
        "addlets" => {
            let mut s = String::from("fn f(x: f64) -> f64 {\n let v0 = x;\n");
            for i in 1..=n {
                let _ = writeln!(s, " let v{i} = v{} + x;", i - 1);
            }
            let _ = writeln!(s, " v{n}\n}}");
            s
        }
        "parens" => nested_parens(n),
        "fors" => nested_fors(n),
        "blocks" => format!(
            "fn f(x: f64) -> f64 {{ {}x{} }}",
            "{".repeat(n),
            "}".repeat(n)
        ),
        "ifs" => {
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
        "sum" => {
            let mut s = String::from("fn f(x: f64) -> f64 { x");
            for _ in 0..n {
                s.push_str(" + x");
            }
            s.push_str(" }");
            s
        }
        "meth" => format!("fn f(x: f64) -> f64 {{ x{} }}", ".sin()".repeat(n)),
        "elseif" => {
            let mut s = String::from("fn f(x: f64) -> f64 { if x > 0.0 { x }");
            for i in 0..n {
                let _ = write!(s, " else if x > {i}.0 {{ x * {i}.0 }}");
            }
            s.push_str(" else { x } }");
            s
        }
        "neg" => format!("fn f(x: f64) -> f64 {{ {}x }}", "-".repeat(n)),
        _ => panic!("unknown kind"),
    };
    if std::env::var("LINAD_DEEP_SYN").is_ok() {
        let mib: usize = std::env::var("LINAD_DEEP_STACK_MIB")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(8);
        std::thread::Builder::new()
            .stack_size(mib << 20)
            .spawn(move || {
                let item: TokenStream = src.parse().unwrap();
                let f: syn::ItemFn = syn::parse2(item).unwrap();
                eprintln!("syn parsed {}", f.sig.ident);
                std::mem::forget(f);
            })
            .unwrap()
            .join()
            .unwrap();
        return;
    }
    let out = run(&spec, src);
    for e in out.split("compile_error").skip(1) {
        eprintln!("ERR{}", &e[..e.len().min(400)]);
    }
}
