//! The in-process fuzzer (issue 8): random well-typed functions from
//! `linad-fuzz` run through the macro's expansion as a library function,
//! their lowered IR through the interpreter against the fuzzer's direct
//! evaluation, and the derivative properties of
//! `ad_core_ir::testing::check_derived`; mutated functions must give
//! spanned errors. No rustc is involved.
//!
//! `cargo test -p ad-macros --release fuzz -- --nocapture`; settings from
//! the environment: `LINAD_FUZZ_CASES` (default 1000), `LINAD_FUZZ_SEED`
//! (default 1), `LINAD_FUZZ_FEATURES` (default `linad_fuzz::ci_features()`,
//! e.g. `all` or `all,-cfg`), `LINAD_FUZZ_MUTATIONS` (default every kind not
//! in `KNOWN_FAILING_MUTATIONS`, or `all`), `LINAD_FUZZ_DEPTH` (nesting depth
//! and body size of stress cases, default 64), `LINAD_FUZZ_MAX_N` (array
//! sizes drawn from 1 up to it, default 3), `LINAD_FUZZ_STRICT=0` (report
//! without failing), `LINAD_FUZZ_SEEDS=7077171,7078309` (re-run exactly these
//! case seeds of a reported finding, each with its mutant, instead of
//! `LINAD_FUZZ_CASES` cases from `LINAD_FUZZ_SEED`).

use crate::expand::expand;
use crate::lower::{lower, signature};
use ad_core_ir::driver::{differentiate, Options};
use ad_core_ir::interp::{run, Value};
use ad_core_ir::ir::Program;
use ad_core_ir::testing::check_derived;
use ad_core_ir::types::Ty;
use linad_fuzz::ast::{self, V};
use linad_fuzz::gen::ABSORBS;
use linad_fuzz::mutate::{self, Expect, Mutant};
use linad_fuzz::rng::Rng;
use linad_fuzz::{env_features, env_num, generate, Case, Config};
use proc_macro2::TokenStream;
use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::str::FromStr;
use std::time::{Duration, Instant};

/// Mutation kinds that fail today, left out of the default run (none: deep
/// `if` chains and expressions are refused past the nesting limits, so their
/// expansion time stays linear; `r#loop` names derive plain names).
const KNOWN_FAILING_MUTATIONS: &[&str] = &[];

/// A finding: category, seed, details and the source to reproduce it.
struct Finding {
    category: String,
    seed: u64,
    detail: String,
    source: String,
}

#[derive(Default)]
struct Findings {
    list: Vec<Finding>,
}

impl Findings {
    fn add(&mut self, category: &str, seed: u64, detail: impl Into<String>, source: &str) {
        self.list.push(Finding {
            category: category.to_string(),
            seed,
            detail: detail.into(),
            source: source.to_string(),
        });
    }

    fn report(&self) -> String {
        let mut by: BTreeMap<&str, Vec<&Finding>> = BTreeMap::new();
        for f in &self.list {
            by.entry(&f.category).or_default().push(f);
        }
        let mut out = String::new();
        for (cat, fs) in by {
            // The smallest source of the category is the best reproducer.
            let small = fs.iter().min_by_key(|f| f.source.len()).unwrap();
            let seeds: Vec<String> = fs.iter().take(12).map(|f| f.seed.to_string()).collect();
            out.push_str(&format!(
                "\n=== {cat}: {} case(s), seeds {}\n--- smallest (seed {}): {}\n{}\n",
                fs.len(),
                seeds.join(" "),
                small.seed,
                small.detail.chars().take(1500).collect::<String>(),
                small.source
            ));
        }
        out
    }
}

fn to_value(v: &V) -> Value {
    match v {
        V::F(x) => Value::F64(*x),
        V::I(i, _) => Value::I64(*i as i64),
        V::B(b) => Value::Bool(*b),
        V::T(vs) => Value::Tuple(vs.iter().map(to_value).collect()),
        V::A(s, d) => Value::f64s(s, d.clone()),
    }
}

fn flat(v: &Value, out: &mut Vec<f64>) {
    match v {
        Value::F64(x) => out.push(*x),
        Value::Tuple(vs) => vs.iter().for_each(|v| flat(v, out)),
        Value::Array(_) => {
            if let Some(xs) = v.as_f64s() {
                out.extend_from_slice(xs)
            }
        }
        _ => {}
    }
}

/// The messages of the `compile_error!`s in an expansion.
fn compile_errors(ts: &str) -> Vec<String> {
    let mut out = vec![];
    let mut rest = ts;
    while let Some(k) = rest.find("compile_error") {
        rest = &rest[k + "compile_error".len()..];
        let msg = rest
            .find('"')
            .and_then(|a| {
                rest[a + 1..]
                    .find('"')
                    .map(|b| rest[a + 1..a + 1 + b].to_string())
            })
            .unwrap_or_default();
        out.push(msg);
    }
    out
}

/// The messages of the `compile_error!`s rustc would report for an
/// expansion under the oracle's configuration (`test` and
/// `debug_assertions` off): errors of `#[cfg]`-gated variants that are not
/// compiled do not count. Falls back to every `compile_error!` when the
/// expansion is not a file of items.
fn active_compile_errors(ts: &str) -> Vec<String> {
    let Ok(file) = syn::parse_str::<syn::File>(ts) else {
        return compile_errors(ts);
    };
    let off = |_: &str| false;
    let on = |attrs: &[syn::Attribute]| {
        attrs.iter().all(|a| match &a.meta {
            syn::Meta::List(l) if l.path.is_ident("cfg") => crate::cfg::eval(&l.tokens, &off),
            _ => true,
        })
    };
    file.items
        .iter()
        .filter_map(|item| match item {
            syn::Item::Macro(m)
                if on(&m.attrs)
                    && m.mac
                        .path
                        .segments
                        .last()
                        .is_some_and(|s| s.ident == "compile_error") =>
            {
                Some(
                    syn::parse2::<syn::LitStr>(m.mac.tokens.clone())
                        .map(|l| l.value())
                        .unwrap_or_default(),
                )
            }
            _ => None,
        })
        .collect()
}

/// Expands `#[differentiable(attr)] item` catching panics; the expansion's
/// text and the time taken.
fn expand_str(attr: &str, item: &str) -> Result<(Result<String, String>, Duration), String> {
    let attr = TokenStream::from_str(attr).map_err(|e| format!("attr does not lex: {e}"))?;
    let item = match TokenStream::from_str(item) {
        Ok(t) => t,
        // Not even tokens: rustc would not call the macro.
        Err(e) => return Err(format!("item does not lex: {e}")),
    };
    let t0 = Instant::now();
    let r = catch_unwind(AssertUnwindSafe(|| expand(attr, item).to_string()));
    let dt = t0.elapsed();
    Ok((
        r.map_err(|p| {
            p.downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "non-string panic".into())
        }),
        dt,
    ))
}

/// Checks the expansion of a valid function parses and its functions have
/// distinct parameter names.
fn expansion_well_formed(text: &str) -> Result<(), String> {
    let file: syn::File =
        syn::parse_str(text).map_err(|e| format!("expansion does not parse: {e}"))?;
    let mut names = ad_core_ir::fast_hash::FastSet::default();
    for item in &file.items {
        if let syn::Item::Fn(f) = item {
            // `#[cfg]`-gated variants (one per configuration) share names
            let gated = f.attrs.iter().any(|a| a.path().is_ident("cfg"));
            if !gated && !names.insert(f.sig.ident.to_string()) {
                return Err(format!("two functions named `{}`", f.sig.ident));
            }
            let mut ps = ad_core_ir::fast_hash::FastSet::default();
            for input in &f.sig.inputs {
                if let syn::FnArg::Typed(pt) = input {
                    if let syn::Pat::Ident(pi) = pt.pat.as_ref() {
                        let n = pi.ident.to_string();
                        let n = n.trim_start_matches("r#").to_string();
                        if !ps.insert(n.clone()) {
                            return Err(format!(
                                "`{}` has two parameters named `{n}`",
                                f.sig.ident
                            ));
                        }
                    }
                }
            }
        }
    }
    Ok(())
}

/// Lowers the main function and its helpers into one program (each helper's
/// extern declarations replaced by its lowered body).
fn lower_program(case: &Case) -> Result<(Program, String), String> {
    let lower_one = |f: &ast::Func| -> Result<crate::lower::Lowered, String> {
        let item: syn::ItemFn =
            syn::parse_str(&f.item_source()).map_err(|e| format!("parse: {e}"))?;
        // the oracle's configuration: `test` and `debug_assertions` off
        let variants = crate::cfg::variants(&item).map_err(join)?;
        let item = crate::cfg::active(variants, &|_: &str| false)
            .ok_or("no cfg variant is active")?
            .func;
        let sig = signature(&item, None).map_err(join)?;
        lower(&item, &sig).map_err(join)
    };
    let main = lower_one(&case.program.main)?;
    let mut prog = main.program;
    let mut funcs = vec![];
    for h in &case.program.helpers {
        let l = lower_one(h)?;
        let name = l.name.clone();
        prog.externs
            .retain(|e| e.name != name && !e.name.starts_with(&format!("{name}__")));
        for f in l.program.funcs {
            if !funcs
                .iter()
                .any(|g: &ad_core_ir::ir::Func| g.name == f.name)
            {
                funcs.push(f);
            }
        }
    }
    funcs.append(&mut prog.funcs);
    prog.funcs = funcs;
    Ok((prog, main.name))
}

/// `x <= tol`, false for NaN.
fn within(x: f64, tol: f64) -> bool {
    x <= tol
}

fn join(es: Vec<syn::Error>) -> String {
    es.iter()
        .map(|e| e.to_string())
        .collect::<Vec<_>>()
        .join("; ")
}

struct Stats {
    valid: usize,
    invalid: usize,
    discarded: usize,
    expand_time: Duration,
    expand_bytes: usize,
    interp_time: Duration,
    deriv_time: Duration,
    mutant_time: Duration,
    parse_time: Duration,
    out_bytes: usize,
}

fn check_valid(case: &Case, fd: &mut Findings, st: &mut Stats) {
    let src = case.program.source();
    let seed = case.seed;
    // 1. The expansion of every function: no panic, no error, well formed.
    let mut funcs: Vec<&ast::Func> = case.program.helpers.iter().collect();
    funcs.push(&case.program.main);
    for f in funcs {
        let item = f.item_source();
        match expand_str("", &item) {
            Err(e) => fd.add("generator: bad tokens", seed, e, &src),
            Ok((Err(p), _)) => fd.add("panic (valid)", seed, p, &src),
            Ok((Ok(text), dt)) => {
                st.expand_time += dt;
                st.expand_bytes += item.len();
                let errs = compile_errors(&text);
                if !errs.is_empty() {
                    fd.add("refused valid function", seed, errs.join(" | "), &src);
                    return;
                }
                let t = Instant::now();
                // Re-parsing the (large) expansion is slow: a sample, plus
                // every function with names that could collide.
                let odd = ["r#", "ct", "d_", "dx", "__", "_jvp", "lin"]
                    .iter()
                    .any(|w| item.contains(w));
                if seed.is_multiple_of(8) || odd {
                    if let Err(e) = expansion_well_formed(&text) {
                        fd.add("malformed expansion", seed, e, &src);
                    }
                }
                st.parse_time += t.elapsed();
                st.out_bytes += text.len();
                // Generous (CI machines are loaded): only pathological cases.
                let bound = Duration::from_secs(2) + Duration::from_millis(1) * item.len() as u32;
                if dt > bound {
                    fd.add(
                        "slow expansion",
                        seed,
                        format!("{dt:?} for {} bytes", item.len()),
                        &src,
                    );
                }
            }
        }
    }
    // 2. Lowered IR in the interpreter vs the direct evaluation.
    let t1 = Instant::now();
    let (prog, name) = match lower_program(case) {
        Ok(p) => p,
        Err(e) => {
            fd.add("lowering failed", seed, e, &src);
            return;
        }
    };
    let args: Vec<Value> = case
        .program
        .main
        .params
        .iter()
        .map(|p| to_value(&p.value))
        .collect();
    let got = match catch_unwind(AssertUnwindSafe(|| run(&prog, &name, &args, &[]))) {
        Err(_) => {
            fd.add("panic (interpreter)", seed, "", &src);
            return;
        }
        Ok(Err(e)) => {
            fd.add("interpreter error", seed, e.to_string(), &src);
            return;
        }
        Ok(Ok((r, _))) => r,
    };
    let (mut g, mut e) = (vec![], vec![]);
    got.iter().for_each(|v| flat(v, &mut g));
    case.expected.flat(&mut e);
    let exact = g.len() == e.len() && g.iter().zip(&e).all(|(a, b)| a.to_bits() == b.to_bits());
    if !exact {
        let close = g.len() == e.len()
            && g.iter()
                .zip(&e)
                .all(|(a, b)| (a - b).abs() <= 1e-12 * a.abs().max(b.abs()).max(1.0));
        // `sum`/`dot` orders are the runtime's, not a left fold: allow rounding.
        if !(close && case.program.has_reductions()) {
            fd.add(
                "primal mismatch (interpreter vs Rust semantics)",
                seed,
                format!("interpreter {g:?}, Rust {e:?}"),
                &src,
            );
            return;
        }
    }
    st.interp_time += t1.elapsed();
    // 3. Derivative properties.
    let t2 = Instant::now();
    let f = prog.func(&name).unwrap();
    let wrt: Vec<bool> = f
        .params
        .iter()
        .map(|p| {
            let t = f.vars.ty(*p);
            t.is_differentiable() && !matches!(t, Ty::Tuple(_))
        })
        .collect();
    let all: Vec<bool> = f
        .params
        .iter()
        .map(|p| f.vars.ty(*p).is_differentiable())
        .collect();
    let r = catch_unwind(AssertUnwindSafe(|| {
        differentiate(&prog, &name, &all, &Options::default()).map_err(|e| e.to_string())?;
        let d =
            differentiate(&prog, &name, &wrt, &Options::default()).map_err(|e| e.to_string())?;
        let mut rep = check_derived(&prog, &d, &name, &args, &wrt, seed, 1e-6)?;
        // Finite differences are noisy: the best of several steps (small
        // ones for fast-oscillating functions such as `cos` of a large
        // value), each over the components they resolve (see
        // `Report::fd_rel_err_resolved`: a chaotic or jumping component says
        // nothing at any step).
        let mut errs = vec![(1e-6, rep.fd_rel_err)];
        let mut best = rep.fd_rel_err_resolved;
        for h in [1e-4, 1e-5, 1e-7, 1e-8, 1e-9] {
            if best > 1e-3 {
                let r2 = check_derived(&prog, &d, &name, &args, &wrt, seed, h)?;
                best = best.min(r2.fd_rel_err_resolved);
                errs.push((h, r2.fd_rel_err));
            }
        }
        rep.fd_rel_err = best;
        // A jump within the step (a float-to-int cast, a branch on a value
        // next to its threshold) makes the error grow like 1/h: finite
        // differences say nothing there (a wrong derivative gives an error
        // that does not depend on h).
        let at = |h: f64| errs.iter().find(|e| e.0 == h).map(|e| e.1);
        if let (Some(e4), Some(e6), Some(e8)) = (at(1e-4), at(1e-6), at(1e-8)) {
            if e6 > 20.0 * e4 && e8 > 20.0 * e6 {
                rep.fd_rel_err = 0.0;
            }
        }
        Ok::<_, String>(rep)
    }));
    match r {
        Err(_) => fd.add("panic (differentiate/check)", seed, "", &src),
        Ok(Err(e)) if e.contains("cannot differentiate") || e.contains("not supported") => {
            fd.add("differentiate refused", seed, e, &src)
        }
        Ok(Err(e)) => fd.add("differentiate/check error", seed, e, &src),
        Ok(Ok(rep)) => {
            if !(rep.jvp_primal_exact && rep.fwd_primal_exact) {
                fd.add(
                    "jvp/fwd primal not bit-identical",
                    seed,
                    format!("{rep:?}"),
                    &src,
                );
            }
            if !within(rep.lin_vs_jvp, 1e-9) {
                fd.add("lin != jvp tangent", seed, format!("{rep:?}"), &src);
            }
            if !within(rep.dot_rel_err, 1e-9) {
                fd.add(
                    "transpose dot-product identity",
                    seed,
                    format!("{rep:?}"),
                    &src,
                );
            }
            // Past 2^53 steps are absorbed: see `Case::max_abs`.
            if !within(rep.fd_rel_err, 1e-3) && case.max_abs < ABSORBS {
                fd.add("jvp vs finite differences", seed, format!("{rep:?}"), &src);
            }
        }
    }
    st.deriv_time += t2.elapsed();
    st.valid += 1;
}

fn check_mutant(seed: u64, m: &Mutant, fd: &mut Findings, st: &mut Stats) -> Option<Duration> {
    let src = m.source();
    let cat = |c: &str| format!("{c} [{}]", m.kind);
    st.invalid += 1;
    let (r, dt) = match expand_str(&m.attr, &m.item) {
        Err(_) => return None, // rustc's lexer refuses it first
        Ok(x) => x,
    };
    st.mutant_time += dt;
    let text = match r {
        Err(p) => {
            fd.add(&cat("panic (mutant)"), seed, p, &src);
            return None;
        }
        Ok(t) => t,
    };
    let errs = active_compile_errors(&text);
    for e in &errs {
        if names_generated_item(e, &src) || e.trim().is_empty() {
            fd.add(&cat("unclear error"), seed, e.clone(), &src);
        }
    }
    // Accepted odd inputs must still expand to well-formed Rust.
    if errs.is_empty() && m.rust_valid {
        if let Err(e) = expansion_well_formed(&text) {
            fd.add(&cat("malformed expansion"), seed, e, &src);
        }
    }
    match m.expect {
        Expect::OneError if errs.len() != 1 => fd.add(
            &cat(if errs.is_empty() {
                "invalid accepted"
            } else {
                "several errors for one defect"
            }),
            seed,
            errs.join(" | "),
            &src,
        ),
        Expect::SomeError if errs.is_empty() => fd.add(&cat("invalid accepted"), seed, "", &src),
        _ => {}
    }
    Some(dt)
}

fn mutation_kinds() -> Vec<&'static str> {
    match std::env::var("LINAD_FUZZ_MUTATIONS") {
        Ok(s) if s == "all" => mutate::KINDS.to_vec(),
        Ok(s) => mutate::KINDS
            .iter()
            .copied()
            .filter(|k| s.split(',').any(|w| w.trim() == *k))
            .collect(),
        Err(_) => mutate::KINDS
            .iter()
            .copied()
            .filter(|k| !KNOWN_FAILING_MUTATIONS.contains(k))
            .collect(),
    }
}

fn fuzz_main() {
    let cases = env_num("LINAD_FUZZ_CASES", 1000);
    let seed0 = env_num("LINAD_FUZZ_SEED", 1);
    let depth = env_num("LINAD_FUZZ_DEPTH", 64) as usize;
    let strict = env_num("LINAD_FUZZ_STRICT", 1) != 0;
    let features = env_features();
    let kinds = mutation_kinds();
    let cfg = Config {
        features,
        ..Config::default()
    };
    let mut fd = Findings::default();
    let mut st = Stats {
        valid: 0,
        invalid: 0,
        discarded: 0,
        expand_time: Duration::ZERO,
        expand_bytes: 0,
        interp_time: Duration::ZERO,
        deriv_time: Duration::ZERO,
        mutant_time: Duration::ZERO,
        parse_time: Duration::ZERO,
        out_bytes: 0,
    };
    let t0 = Instant::now();
    // Case seeds: `cases` consecutive ones from `seed0`, every fourth with a
    // mutant, or exactly the listed ones, each with its mutant.
    let seeds: Vec<(u64, bool)> = match std::env::var("LINAD_FUZZ_SEEDS") {
        Ok(list) => list
            .split(',')
            .map(|s| {
                let s = s.trim();
                let n = s
                    .parse()
                    .unwrap_or_else(|_| panic!("LINAD_FUZZ_SEEDS: `{s}` is not a seed"));
                (n, true)
            })
            .collect(),
        Err(_) => (0..cases)
            .map(|k| (seed0.wrapping_mul(1_000_003).wrapping_add(k), k % 4 == 0))
            .collect(),
    };
    let cases = seeds.len() as u64;
    for (seed, with_mutant) in seeds {
        let case = generate(seed, &cfg, "f");
        st.discarded += case.discarded;
        check_valid(&case, &mut fd, &mut st);
        if with_mutant && !kinds.is_empty() {
            let mut rng = Rng::new(seed ^ 0xABCD);
            let kind = *rng.pick(&kinds);
            if !mutate::is_stress(kind) {
                let m = mutate::mutate(&case.program, kind, &mut rng, depth);
                check_mutant(seed, &m, &mut fd, &mut st);
            }
        }
    }
    let elapsed = t0.elapsed();
    // Stress: time must grow linearly with the input. A small base
    // function, nesting depth (or body size) d and 8d, best of three runs
    // each: linear growth gives a ratio near 8, quadratic near 64; above 24
    // (and 200 ms) is a finding.
    let small = Config {
        features: linad_fuzz::Features::none(),
        max_stmts: 3,
        max_n: 3,
    };
    for kind in ["deep_expr", "deep_blocks", "deep_if", "huge_body"] {
        if !kinds.contains(&kind) {
            continue;
        }
        let case = generate(seed0, &small, "f");
        let mut times = vec![];
        for d in [depth, 8 * depth] {
            let mut best: Option<Duration> = None;
            let mut len = 0;
            for _ in 0..3 {
                let mut rng = Rng::new(seed0);
                let m = mutate::mutate(&case.program, kind, &mut rng, d);
                len = m.item.len();
                if let Some(dt) = check_mutant(seed0, &m, &mut fd, &mut st) {
                    best = Some(best.map_or(dt, |b| b.min(dt)));
                }
            }
            times.push((d, len, best));
        }
        if let [(d1, b1, Some(t1)), (d2, b2, Some(t2))] = times[..] {
            let ratio = t2.as_secs_f64() / t1.as_secs_f64().max(1e-4);
            println!("stress {kind}: depth {d1} {t1:?} ({b1} B), depth {d2} {t2:?} ({b2} B): x{ratio:.1}");
            if ratio > 24.0 && t2 > Duration::from_millis(200) {
                let m = mutate::mutate(&case.program, kind, &mut Rng::new(seed0), depth);
                fd.add(
                    &format!("superlinear time [{kind}]"),
                    seed0,
                    format!("{t1:?} at depth {d1} ({b1} B), {t2:?} at depth {d2} ({b2} B)"),
                    &m.source(),
                );
            }
        }
    }
    println!(
        "linad fuzz (in-process): {} cases ({} valid, {} mutants, {} discarded while generating) in {:.2?}: {:.0} cases/s; expansion {:.2?} ({:.1} µs/byte), lower+interpret {:.2?}, derivative checks {:.2?}, mutants {:.2?}, parsing expansions {:.2?} ({} KiB); features {:?}; mutations {:?}",
        cases,
        st.valid,
        st.invalid,
        st.discarded,
        elapsed,
        cases as f64 / elapsed.as_secs_f64().max(1e-9),
        st.expand_time,
        st.expand_time.as_secs_f64() * 1e6 / st.expand_bytes.max(1) as f64,
        st.interp_time,
        st.deriv_time,
        st.mutant_time,
        st.parse_time,
        st.out_bytes / 1024,
        features.names(),
        kinds
    );
    if !fd.list.is_empty() {
        println!("{} finding(s):{}", fd.list.len(), fd.report());
        assert!(
            !strict,
            "the fuzzer found {} failure(s): see the report above",
            fd.list.len()
        );
    }
}

#[test]
fn fuzz_in_process() {
    // Panics caught on the fuzz thread are findings, reported once each.
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if std::thread::current().name() != Some("linad-fuzz") {
            default(info);
        }
    }));
    // A big stack: deep nesting is fuzzed on purpose.
    std::thread::Builder::new()
        .name("linad-fuzz".into())
        .stack_size(256 << 20)
        .spawn(fuzz_main)
        .unwrap()
        .join()
        .unwrap_or_else(|p| std::panic::resume_unwind(p));
}

/// The fixed-seed regression cases of `linad_fuzz::REGRESSIONS` (the
/// fuzzer's findings, all fixed).
#[test]
fn fuzz_regressions() {
    let mut fd = Findings::default();
    let mut st = Stats {
        valid: 0,
        invalid: 0,
        discarded: 0,
        expand_time: Duration::ZERO,
        expand_bytes: 0,
        interp_time: Duration::ZERO,
        deriv_time: Duration::ZERO,
        mutant_time: Duration::ZERO,
        parse_time: Duration::ZERO,
        out_bytes: 0,
    };
    for (features, seed, what) in linad_fuzz::REGRESSIONS {
        let cfg = Config {
            features: linad_fuzz::Features::parse(features).unwrap(),
            // The sizes these seeds were found with.
            max_n: 3,
            ..Config::default()
        };
        let before = fd.list.len();
        check_valid(&generate(*seed, &cfg, "f"), &mut fd, &mut st);
        let status = if fd.list.len() == before {
            "ok"
        } else {
            "FAILS"
        };
        println!("regression {features} seed {seed} ({what}): {status}");
    }
    for (kind, seed, what) in linad_fuzz::MUTANT_REGRESSIONS {
        // The feature set these seeds were found with (`whiles`, `exits`,
        // `views` and `strided` came later).
        let cfg = Config {
            features: linad_fuzz::Features::parse("all,-whiles,-exits,-views,-strided").unwrap(),
            max_n: 3,
            ..Config::default()
        };
        let case = generate(*seed, &cfg, "f");
        let kind = mutate::KINDS
            .iter()
            .find(|k| *k == kind)
            .expect("a mutation kind");
        let m = mutate::mutate(&case.program, kind, &mut Rng::new(*seed), 64);
        let before = fd.list.len();
        check_mutant(*seed, &m, &mut fd, &mut st);
        let status = if fd.list.len() == before {
            "ok"
        } else {
            "FAILS"
        };
        println!("regression mutant {kind} seed {seed} ({what}): {status}");
    }
    assert!(fd.list.is_empty(), "{}", fd.report());
}

/// Whether an error message names a `__linad…` identifier that the user's
/// source does not contain (the generator also writes such names, to test
/// collisions: naming the user's own variable is a clear error).
fn names_generated_item(msg: &str, src: &str) -> bool {
    msg.match_indices("__linad").any(|(k, _)| {
        let name: String = msg[k..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        !src.contains(&name)
    })
}
