//! End-to-end batches: generated functions compiled by rustc into one crate
//! (`target/linad-fuzz-e2e/valid`, a path dependency on this repository's
//! `linad`) whose `main` checks, per function: `f`, `f_jvp` and `f_vjp`
//! primal results bit-identical; `f_jvp` against central finite differences
//! of `f`; `f_vjp` against `f_jvp` (`<ȳ, J ẋ> = <Jᵀ ȳ, ẋ>`); for one
//! function in four, its `f32` twin against the function itself (see
//! `f32_twin_check`), for another one in four its struct twin (see
//! `struct_twin_check`). Mutated
//! functions go to a second crate (`.../invalid`), built with
//! `--message-format=short`: each must give exactly one error (at least one
//! when the mutant is not valid Rust anyway), located in its own module.
//!
//! Both crates build with the `dev` profile without debug assertions (the
//! fuzzer's oracle evaluates `cfg(debug_assertions)` as false) in
//! `target/linad-fuzz-e2e/target`, so dependencies are compiled once.

use crate::ast::*;
use crate::gen::{generate, Config, Features};
use crate::mutate::{self, Expect};
use crate::rng::Rng;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// The repository root (the `linad` crate).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("fuzz/ is inside the repository")
        .to_path_buf()
}

const PRELUDE: &str = r#"#![allow(warnings)]
// Constant overflow in code that never runs (the oracle discards programs
// whose executed code overflows); `f64` literals out of `f32`'s range in
// the `f32` twins.
#![allow(arithmetic_overflow, unconditional_panic, overflowing_literals)]
use linad::differentiable;
use linad::ndarray::{Array1, Array2, Array3, ArrayView1, ArrayView2, ArrayView3, Dimension};

/// All f64 components of a value, in order.
pub trait Flat {
    fn flat(&self, out: &mut Vec<f64>);
}
impl Flat for f64 {
    fn flat(&self, out: &mut Vec<f64>) {
        out.push(*self)
    }
}
impl<T: Flat + ?Sized> Flat for &T {
    fn flat(&self, out: &mut Vec<f64>) {
        (**self).flat(out)
    }
}
impl Flat for f32 {
    fn flat(&self, out: &mut Vec<f64>) {
        out.push(*self as f64)
    }
}
impl<A: Copy + Into<f64>, S: linad::ndarray::Data<Elem = A>, D: Dimension> Flat for linad::ndarray::ArrayBase<S, D> {
    fn flat(&self, out: &mut Vec<f64>) {
        out.extend(self.iter().map(|x| (*x).into()))
    }
}
/// `f32` twins compared, and skipped (a panic at the rounded inputs).
pub static TWINS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
pub static TWINS_SKIPPED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
pub static STRUCT_TWINS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
/// `f64`s rounded to `f32` and back.
pub fn round32(v: &[f64]) -> Vec<f64> {
    v.iter().map(|x| *x as f32 as f64).collect()
}
macro_rules! flat_tuple {
    ($($t:ident $i:tt),*) => {
        impl<$($t: Flat),*> Flat for ($($t,)*) {
            fn flat(&self, out: &mut Vec<f64>) {
                $(self.$i.flat(out);)*
            }
        }
    };
}
flat_tuple!(A 0, B 1);
flat_tuple!(A 0, B 1, C 2);
flat_tuple!(A 0, B 1, C 2, D 3);
flat_tuple!(A 0, B 1, C 2, D 3, E 4);
flat_tuple!(A 0, B 1, C 2, D 3, E 4, F 5);
flat_tuple!(A 0, B 1, C 2, D 3, E 4, F 5, G 6);
flat_tuple!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7);
flat_tuple!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8);
flat_tuple!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9);
flat_tuple!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10);
flat_tuple!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11);
flat_tuple!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12);
flat_tuple!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12, N 13);
flat_tuple!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12, N 13, O 14);
flat_tuple!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12, N 13, O 14, P 15);

pub fn fl<T: Flat>(x: &T) -> Vec<f64> {
    let mut v = vec![];
    x.flat(&mut v);
    v
}
pub fn bits_eq(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
}
/// Equal bits, or (tol > 0) within `tol` relative; NaN matches NaN.
pub fn near(a: &[f64], b: &[f64], tol: f64) -> bool {
    bits_eq(a, b)
        || (a.len() == b.len()
            && a.iter().zip(b).all(|(x, y)| {
                x.to_bits() == y.to_bits()
                    || (x.is_nan() && y.is_nan())
                    || (x - y).abs() <= tol * x.abs().max(y.abs()).max(1.0)
            }))
}
pub fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}
/// Largest |jvp - fd| / max(1, |jvp|) of central differences with step h.
pub fn fd_err(jvp: &[f64], plus: &[f64], minus: &[f64], h: f64) -> f64 {
    let scale = jvp.iter().fold(1.0f64, |m, x| m.max(x.abs()));
    jvp.iter()
        .zip(plus.iter().zip(minus))
        .map(|(t, (p, m))| ((p - m) / (2.0 * h) - t).abs() / scale)
        .fold(0.0, f64::max)
}
"#;

fn lit(x: f64) -> String {
    let s = format!("{x:?}");
    if s.contains('.') || s.contains('e') || s.contains("inf") || s.contains("NaN") {
        format!("{s}_f64")
    } else {
        format!("{s}.0_f64")
    }
}

fn value_expr(v: &V, ty: &Ty) -> String {
    value_expr_with(v, ty, &lit)
}

/// `v` with its floats rounded to `f32`, as `f32` literals (`f32`) or as
/// `f64` literals of the rounded values.
fn rounded_expr(v: &V, ty: &Ty, f32: bool) -> String {
    let l = |x: f64| {
        let r = x as f32;
        if f32 {
            format!("{}_f32", lit(r as f64).trim_end_matches("_f64"))
        } else {
            lit(r as f64)
        }
    };
    value_expr_with(v, ty, &l)
}

fn value_expr_with(v: &V, ty: &Ty, lit: &dyn Fn(f64) -> String) -> String {
    match (v, ty) {
        (V::F(x), _) => lit(*x),
        (V::I(i, t), _) => format!("{i}{}", t.name()),
        (V::B(b), _) => b.to_string(),
        (V::T(vs), Ty::T2) => format!(
            "({}, {})",
            value_expr_with(&vs[0], &Ty::F, lit),
            value_expr_with(&vs[1], &Ty::F, lit)
        ),
        (V::A(shape, data), Ty::A(r)) => {
            let sh = if *r == 1 {
                shape[0].to_string()
            } else {
                format!(
                    "({})",
                    shape
                        .iter()
                        .map(|s| s.to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            };
            let d: Vec<String> = data.iter().map(|x| lit(*x)).collect();
            format!(
                "Array{r}::from_shape_vec({sh}, vec![{}]).unwrap()",
                d.join(", ")
            )
        }
        _ => panic!("value {v:?} of type {ty:?}"),
    }
}

/// A random tangent like `v`.
fn tangent(v: &V, rng: &mut Rng) -> V {
    match v {
        V::F(_) => V::F(rng.nice(1)),
        V::T(vs) => V::T(vs.iter().map(|x| tangent(x, rng)).collect()),
        V::A(s, d) => V::A(s.clone(), d.iter().map(|_| rng.nice(1)).collect()),
        other => other.clone(),
    }
}

/// How a local `name` holding an owned value is passed as parameter `p`.
fn pass_as(name: &str, ty: &Ty, pass: Pass) -> String {
    match (ty, pass) {
        (Ty::A(_), Pass::Ref) => format!("&{name}"),
        (Ty::A(_), Pass::View) => format!("{name}.view()"),
        (Ty::A(_), Pass::Owned) => format!("{name}.clone()"),
        _ => name.to_string(),
    }
}

/// `name + h * dname` for a differentiable parameter (owned result).
fn shifted(name: &str, ty: &Ty, h: &str) -> String {
    match ty {
        Ty::F => format!("({name} + {h} * d_{name})"),
        Ty::T2 => format!("({name}.0 + {h} * d_{name}.0, {name}.1 + {h} * d_{name}.1)"),
        Ty::A(_) => format!("(&{name} + &(&d_{name} * {h}))"),
        _ => name.to_string(),
    }
}

/// The checking module of one valid case.
fn valid_module(k: usize, case_seed: u64, p: &Program, out: &mut String) {
    let _ = writeln!(out, "mod c{k} {{\n    use super::*;");
    out.push_str(&p.source());
    let f = &p.main;
    let mut rng = Rng::new(case_seed ^ 0x7A9);
    let _ = writeln!(
        out,
        "pub fn check() -> Vec<String> {{\n    let mut fails = vec![];"
    );
    let mut args = vec![];
    let mut targs = vec![];
    let mut diff = vec![];
    for (j, prm) in f.params.iter().enumerate() {
        let a = format!("a{j}");
        let _ = writeln!(out, "    let {a} = {};", value_expr(&prm.value, &prm.ty));
        if prm.ty.differentiable() {
            let t = tangent(&prm.value, &mut rng);
            let _ = writeln!(out, "    let d_{a} = {};", value_expr(&t, &prm.ty));
            targs.push(pass_as(&format!("d_{a}"), &prm.ty, prm.pass));
            diff.push(j);
        }
        args.push(pass_as(&a, &prm.ty, prm.pass));
    }
    let ct_val = tangent(&p.eval(false).unwrap_or(V::F(0.0)), &mut rng);
    let _ = writeln!(out, "    let ct = {};", value_expr(&ct_val, &f.out));
    let ct_arg = if matches!(f.out, Ty::A(_)) {
        "&ct"
    } else {
        "ct"
    };
    let a = args.join(", ");
    let name = &f.name;
    let _ = writeln!(out, "    let y = fl(&{name}({a}));");
    let sep = if targs.is_empty() { "" } else { ", " };
    let _ = writeln!(
        out,
        "    let (yj, dy) = {name}_jvp({a}{sep}{});",
        targs.join(", ")
    );
    let _ = writeln!(out, "    let (yj, dy) = (fl(&yj), fl(&dy));");
    let _ = writeln!(out, "    let (yv, g) = {name}_vjp({a}, {ct_arg});");
    let _ = writeln!(out, "    let (yv, g) = (fl(&yv), fl(&g));");
    let _ = writeln!(out, "    if !bits_eq(&y, &yj) {{ fails.push(format!(\"f_jvp primal {{:?}} != f {{:?}}\", yj, y)); }}");
    let _ = writeln!(out, "    if !bits_eq(&y, &yv) {{ fails.push(format!(\"f_vjp primal {{:?}} != f {{:?}}\", yv, y)); }}");
    // An ill-conditioned function (a derivative past 1e10 times its value,
    // e.g. `x *= cos(343 x)` repeated): one rounding step of an input or of
    // a sum moves f by more than finite differences or the oracle's
    // summation order can account for, so those two checks say nothing
    // (seed 301000475: |jvp| 1e13, f 7.5). The bit-identity and
    // dot-product checks still run; the skip is printed.
    let _ = writeln!(
        out,
        "    let top = |v: &[f64]| v.iter().fold(0.0f64, |m, x| m.max(x.abs()));"
    );
    let _ = writeln!(out, "    let ill = top(&dy) > 1e10 * (1.0 + top(&y));");
    let _ = writeln!(out, "    if ill {{ println!(\"  skipped seed {case_seed}: ill-conditioned (|jvp| {{:e}}, |f| {{:e}}): no finite-difference or oracle check\", top(&dy), top(&y)); }}");
    // f against the oracle's evaluation of the source (Rust semantics): a
    // disagreement is a generator or oracle bug, or one of rustc's.
    if let Ok(want) = p.eval(false) {
        let mut w = vec![];
        want.flat(&mut w);
        let bits: Vec<String> = w
            .iter()
            .map(|x| format!("f64::from_bits({:#x})", x.to_bits()))
            .collect();
        let _ = writeln!(out, "    let want: Vec<f64> = vec![{}];", bits.join(", "));
        // With sums, the oracle's other summation order is tolerated, which
        // an ill-conditioned function amplifies past any tolerance.
        let (tol, unless_ill) = if p.has_reductions() {
            ("1e-12", " && !ill")
        } else {
            ("0.0", "")
        };
        let _ = writeln!(out, "    if !near(&y, &want, {tol}){unless_ill} {{ fails.push(format!(\"f {{:?}} != the oracle's {{:?}}\", y, want)); }}");
    }
    // Tangent directions flattened in parameter order.
    let dirs: Vec<String> = diff.iter().map(|j| format!("fl(&d_a{j})")).collect();
    let _ = writeln!(
        out,
        "    let dx: Vec<f64> = vec![{}].concat();",
        dirs.join(", ")
    );
    // Finite differences.
    let _ = writeln!(out, "    let at = |h: f64| -> Vec<f64> {{");
    let mut sargs = vec![];
    for (j, prm) in f.params.iter().enumerate() {
        let a = format!("a{j}");
        if prm.ty.differentiable() {
            let _ = writeln!(out, "        let s{j} = {};", shifted(&a, &prm.ty, "h"));
            sargs.push(pass_as(&format!("s{j}"), &prm.ty, prm.pass));
        } else {
            sargs.push(pass_as(&a, &prm.ty, prm.pass));
        }
    }
    let _ = writeln!(out, "        fl(&{name}({}))\n    }};", sargs.join(", "));
    let _ = writeln!(
        out,
        "    let e = [1e-4, 1e-6, 1e-8].iter().map(|&h| fd_err(&dy, &at(h), &at(-h), h)).fold(f64::INFINITY, f64::min);"
    );
    // Past 2^53 an input step below 1 is absorbed (`Case::max_abs`):
    // finite differences say nothing about the derivative there.
    let absorbs = p.eval_tracked(false).1 >= crate::gen::ABSORBS;
    let _ = writeln!(out, "    if !(e <= 1e-3) && !{absorbs} && !ill {{ fails.push(format!(\"jvp vs finite differences: rel err {{e:e}} (jvp {{dy:?}})\")); }}");
    let _ = writeln!(out, "    let (l, r) = (dot(&fl(&ct), &dy), dot(&g, &dx));");
    let _ = writeln!(out, "    if !((l - r).abs() <= 1e-9 * 1f64.max(l.abs()).max(r.abs())) {{ fails.push(format!(\"<ct, jvp> = {{l:e}} but <vjp, dx> = {{r:e}}\")); }}");
    if twin32(case_seed) {
        f32_twin_check(p, &ct_val, out);
    }
    let struct_twin = struct_twin(case_seed, p);
    if let Some(t) = &struct_twin {
        struct_twin_check(p, t, out);
    }
    let _ = writeln!(out, "    fails\n}}");
    if let Some(t) = &struct_twin {
        out.push_str(&t.source);
    }
    if twin32(case_seed) {
        // The twin: the same source with every `f64` written `f32`, and
        // helpers renamed so that the macro finds each (`f_h0` is in
        // every case).
        let _ = writeln!(
            out,
            "mod t32 {{\n    use super::*;\n{}}}",
            p.source()
                .replace("f64", "f32")
                .replace("f_h", &format!("t{k}_h"))
                .replace("\nfn ", "\npub(crate) fn ")
        );
    }
    let _ = writeln!(out, "}}");
}

/// The struct twin of a case: `p`'s main function with its
/// differentiable parameters gathered in a struct deriving
/// `Differentiable` (`S<seed>`, taken by reference as `zz_params`), which the body
/// reads back into the parameters' names first.
struct StructTwin {
    /// The struct and the twin function (module `st`).
    source: String,
    /// The differentiable parameters' indices, in field order.
    diff: Vec<usize>,
    /// The case's seed (the struct is `S<seed>`).
    seed: u64,
}

/// The struct twin of case `seed` (one case in four, those without `f32`
/// twins and without a `wrt` list).
fn struct_twin(seed: u64, p: &Program) -> Option<StructTwin> {
    let f = &p.main;
    if seed % 4 != 1 || !f.attr.is_empty() || !f.extra_params.is_empty() {
        return None;
    }
    let diff: Vec<usize> = (0..f.params.len())
        .filter(|j| f.params[*j].ty.differentiable())
        .collect();
    if diff.is_empty() {
        return None;
    }
    let mut src = String::from("mod st {\n    use super::*;\n");
    // Named per case: the macro finds structs by name in the crate.
    let _ = writeln!(
        src,
        "#[derive(linad::Differentiable, Clone)]\npub struct S{seed} {{"
    );
    for j in &diff {
        let prm = &f.params[*j];
        let _ = writeln!(src, "    pub {}: {},", prm.name, prm.ty.rust());
    }
    src.push_str("}\n#[differentiable]\n");
    let mut sig = vec![format!("zz_params: &S{seed}")];
    for prm in f.params.iter().filter(|p| !p.ty.differentiable()) {
        sig.push(format!("{}: {}", prm.name, prm.ty.rust()));
    }
    let _ = writeln!(
        src,
        "pub(crate) fn {}({}) -> {} {{",
        f.name,
        sig.join(", "),
        f.out.rust()
    );
    for j in &diff {
        let prm = &f.params[*j];
        let n = &prm.name;
        let read = match (&prm.ty, prm.pass) {
            (Ty::A(_), Pass::Ref) => format!("&zz_params.{n}"),
            (Ty::A(_), Pass::View) => format!("zz_params.{n}.view()"),
            (Ty::A(_), Pass::Owned) => format!("zz_params.{n}.clone()"),
            _ => format!("zz_params.{n}"),
        };
        let _ = writeln!(src, "    let {n} = {read};");
    }
    // The body: the main function's source after its signature line.
    let main = f.source();
    let body: Vec<&str> = main.lines().skip(2).collect();
    src.push_str(&body.join("\n"));
    src.push_str("\n}\n");
    Some(StructTwin {
        source: src,
        diff,
        seed,
    })
}

/// Checks of the struct twin: its companions' primal results, tangent and
/// cotangents equal the function's, bit for bit (the twin's flat function
/// is the function).
fn struct_twin_check(p: &Program, t: &StructTwin, out: &mut String) {
    let f = &p.main;
    let name = &f.name;
    // `name: a3` (or `d_a3`), cloned for arrays: the struct's (or its
    // tangent's) fields from the case's arguments.
    let fields = |prefix: &str| -> Vec<String> {
        t.diff
            .iter()
            .map(|j| {
                let n = &f.params[*j].name;
                match f.params[*j].ty {
                    Ty::A(_) => format!("{n}: {prefix}a{j}.clone()"),
                    _ => format!("{n}: {prefix}a{j}"),
                }
            })
            .collect()
    };
    let (fields, dfields) = (fields(""), fields("d_"));
    let mut args = vec!["&zz_s".to_string()];
    for (j, prm) in f.params.iter().enumerate() {
        if !prm.ty.differentiable() {
            args.push(pass_as(&format!("a{j}"), &prm.ty, prm.pass));
        }
    }
    let a = args.join(", ");
    let ct_arg = if matches!(f.out, Ty::A(_)) {
        "&ct"
    } else {
        "ct"
    };
    let sn = t.seed;
    let _ = writeln!(out, "    let zz_s = st::S{sn} {{ {} }};", fields.join(", "));
    let _ = writeln!(
        out,
        "    let zz_d = st::S{sn}Tangent {{ {} }};",
        dfields.join(", ")
    );
    let _ = writeln!(out, "    let (ys, gs) = st::{name}_vjp({a}, {ct_arg});");
    let _ = writeln!(out, "    let (yjs, dys) = st::{name}_jvp({a}, &zz_d);");
    let _ = writeln!(out, "    let gs = linad::Tangent::to_flat(&gs);");
    let _ = writeln!(out, "    if !bits_eq(&fl(&ys), &y) || !bits_eq(&fl(&yjs), &y) {{ fails.push(format!(\"struct twin: primal {{:?}} / {{:?}} != f {{:?}}\", fl(&ys), fl(&yjs), y)); }}");
    let _ = writeln!(out, "    if !bits_eq(&gs, &g) {{ fails.push(format!(\"struct twin: vjp {{:?}} != f's {{:?}}\", gs, g)); }}");
    let _ = writeln!(out, "    if !bits_eq(&fl(&dys), &dy) {{ fails.push(format!(\"struct twin: jvp {{:?}} != f's {{:?}}\", fl(&dys), dy)); }}");
    let _ = writeln!(
        out,
        "    STRUCT_TWINS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);"
    );
}

/// Whether case `seed` also checks its `f32` twin (one case in four).
fn twin32(seed: u64) -> bool {
    seed.is_multiple_of(4)
}

/// Checks of the `f32` twin of `p` (module `t32`: the source with `f32`
/// for `f64`). linad differentiates an `f32` function through an `f64`
/// copy of itself, which for the twin is `p` again; so at inputs, tangents
/// and cotangents rounded to `f32`, the twin's derivatives are `p`'s
/// rounded to `f32`, bit for bit, and its companions' primal results are
/// the twin's own. Where `p` panics at the rounded inputs (a float turned
/// into an index, say) nothing is compared.
fn f32_twin_check(p: &Program, ct_val: &V, out: &mut String) {
    let f = &p.main;
    let name = &f.name;
    let (mut rargs, mut sargs, mut rt, mut st) = (vec![], vec![], vec![], vec![]);
    let _ = writeln!(out, "    let twin = std::panic::catch_unwind(|| {{");
    let mut rng = Rng::new(0x32);
    for (j, prm) in f.params.iter().enumerate() {
        let _ = writeln!(
            out,
            "        let r{j} = {};",
            rounded_expr(&prm.value, &prm.ty, false)
        );
        let _ = writeln!(
            out,
            "        let s{j} = {};",
            rounded_expr(&prm.value, &prm.ty, true)
        );
        rargs.push(pass_as(&format!("r{j}"), &prm.ty, prm.pass));
        sargs.push(pass_as(&format!("s{j}"), &prm.ty, prm.pass));
        if prm.ty.differentiable() {
            let t = tangent(&prm.value, &mut rng);
            let _ = writeln!(
                out,
                "        let dr{j} = {};",
                rounded_expr(&t, &prm.ty, false)
            );
            let _ = writeln!(
                out,
                "        let ds{j} = {};",
                rounded_expr(&t, &prm.ty, true)
            );
            rt.push(pass_as(&format!("dr{j}"), &prm.ty, prm.pass));
            st.push(pass_as(&format!("ds{j}"), &prm.ty, prm.pass));
        }
    }
    let _ = writeln!(
        out,
        "        let ctr = {};",
        rounded_expr(ct_val, &f.out, false)
    );
    let _ = writeln!(
        out,
        "        let cts = {};",
        rounded_expr(ct_val, &f.out, true)
    );
    let (ctr, cts) = if matches!(f.out, Ty::A(_)) {
        ("&ctr", "&cts")
    } else {
        ("ctr", "cts")
    };
    let (ra, sa) = (rargs.join(", "), sargs.join(", "));
    let sep = if rt.is_empty() { "" } else { ", " };
    let _ = writeln!(
        out,
        "        let want_g = round32(&fl(&{name}_vjp({ra}, {ctr}).1));"
    );
    let _ = writeln!(
        out,
        "        let want_dy = round32(&fl(&{name}_jvp({ra}{sep}{}).1));",
        rt.join(", ")
    );
    let _ = writeln!(out, "        let y32 = fl(&t32::{name}({sa}));");
    let _ = writeln!(
        out,
        "        let (yv32, g32) = t32::{name}_vjp({sa}, {cts});"
    );
    let _ = writeln!(
        out,
        "        let (yj32, dy32) = t32::{name}_jvp({sa}{sep}{});",
        st.join(", ")
    );
    let _ = writeln!(
        out,
        "        (want_g, want_dy, y32, fl(&yv32), fl(&g32), fl(&yj32), fl(&dy32))"
    );
    let _ = writeln!(out, "    }});");
    let _ = writeln!(out, "    if twin.is_err() {{ TWINS_SKIPPED.fetch_add(1, std::sync::atomic::Ordering::Relaxed); }}");
    let _ = writeln!(
        out,
        "    if let Ok((want_g, want_dy, y32, yv32, g32, yj32, dy32)) = twin {{"
    );
    let _ = writeln!(
        out,
        "        TWINS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);"
    );
    let _ = writeln!(out, "        if !bits_eq(&y32, &yv32) || !bits_eq(&y32, &yj32) {{ fails.push(format!(\"f32 twin: primal {{:?}} / {{:?}} != f {{:?}}\", yv32, yj32, y32)); }}");
    let _ = writeln!(out, "        if !bits_eq(&g32, &want_g) {{ fails.push(format!(\"f32 twin: vjp {{:?}} != the f64 function's rounded {{:?}}\", g32, want_g)); }}");
    let _ = writeln!(out, "        if !bits_eq(&dy32, &want_dy) {{ fails.push(format!(\"f32 twin: jvp {{:?}} != the f64 function's rounded {{:?}}\", dy32, want_dy)); }}");
    let _ = writeln!(out, "    }}");
}

fn write_crate(dir: &Path, name: &str, main: &str) -> std::io::Result<()> {
    std::fs::create_dir_all(dir.join("src"))?;
    let root = repo_root();
    let toml = format!(
        r#"[package]
name = "{name}"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
linad = {{ path = "{}" }}

[profile.dev]
debug = false
debug-assertions = false
overflow-checks = false
incremental = false
opt-level = 0

[workspace]
"#,
        root.display()
    );
    std::fs::write(dir.join("Cargo.toml"), toml)?;
    if let Ok(lock) = std::fs::read(root.join("Cargo.lock")) {
        if !dir.join("Cargo.lock").exists() {
            std::fs::write(dir.join("Cargo.lock"), lock)?;
        }
    }
    std::fs::write(dir.join("src/main.rs"), main)
}

fn cargo(dir: &Path, args: &[&str]) -> std::process::Output {
    let target = repo_root().join("target/linad-fuzz-e2e/target");
    Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(args)
        .arg("--offline")
        .arg("--manifest-path")
        .arg(dir.join("Cargo.toml"))
        .env("CARGO_TARGET_DIR", target)
        .output()
        .expect("cargo runs")
}

/// Runs a batch of `n` valid functions (seeds from `seed`) and `n / 4`
/// mutants; prints findings (`FAIL seed S` lines: `linad-fuzz show S`
/// prints the program); `true` when there are none.
pub fn run_batch(n: usize, seed: u64, fs: Features) -> bool {
    let seeds: Vec<(Features, u64)> = (0..n)
        .map(|k| (fs, seed.wrapping_mul(7_000_003).wrapping_add(k as u64)))
        .collect();
    run_cases(&seeds, n / 4, seed, fs)
}

/// Runs the valid programs of `seeds` (each with its own feature set) and
/// `mutants` mutants (seeds from `seed`, features `fs`).
pub fn run_cases(cases: &[(Features, u64)], mutants: usize, seed: u64, fs: Features) -> bool {
    let n = cases.len();
    let base = repo_root().join("target/linad-fuzz-e2e");
    let cfg = Config {
        features: fs,
        ..Config::default()
    };
    let mut ok = true;
    // Valid functions. Modules that do not compile are reported and left
    // out of the next attempt, so one failure does not hide the others.
    let mut programs = vec![];
    for (f, s) in cases {
        let c = Config {
            features: *f,
            ..Config::default()
        };
        programs.push((*s, generate(*s, &c, "f").program));
    }
    let mut live: Vec<usize> = (0..n).collect();
    for _attempt in 0..4 {
        if live.is_empty() {
            break;
        }
        let mut main = String::from(PRELUDE);
        for &k in &live {
            valid_module(k, programs[k].0, &programs[k].1, &mut main);
        }
        main.push_str("fn main() {\n    let mut bad = 0;\n");
        for &k in &live {
            let s = programs[k].0;
            let _ = writeln!(
                main,
                "    match std::panic::catch_unwind(c{k}::check) {{ Ok(fs) => for f in fs {{ bad += 1; println!(\"FAIL seed {s}: {{f}}\"); }}, Err(_) => {{ bad += 1; println!(\"FAIL seed {s}: panic\"); }} }}"
            );
        }
        main.push_str("    println!(\"f32 twins: {} compared, {} skipped (the f64 function panics at the rounded inputs); struct twins: {} compared\", TWINS.load(std::sync::atomic::Ordering::Relaxed), TWINS_SKIPPED.load(std::sync::atomic::Ordering::Relaxed), STRUCT_TWINS.load(std::sync::atomic::Ordering::Relaxed));\n");
        main.push_str("    println!(\"{} failure(s)\", bad);\n    std::process::exit(if bad == 0 { 0 } else { 1 });\n}\n");
        let dir = base.join("valid");
        write_crate(&dir, "linad-fuzz-e2e", &main).expect("write the e2e crate");
        let t0 = Instant::now();
        let build = cargo(&dir, &["build", "--message-format=short"]);
        let tb = t0.elapsed();
        let stderr = String::from_utf8_lossy(&build.stderr);
        if !build.status.success() {
            ok = false;
            let bad = module_errors(&main, &stderr);
            if bad.is_empty() {
                println!("e2e: the batch does not compile ({tb:.1?}):");
                for line in stderr.lines().filter(|l| l.contains("error")).take(40) {
                    println!("  {line}");
                }
                break;
            }
            for (k, errs) in &bad {
                println!(
                    "  FAIL seed {}: does not compile: {}",
                    programs[*k].0,
                    errs.join(" | ")
                );
            }
            live.retain(|k| !bad.iter().any(|(b, _)| b == k));
            continue;
        }
        let t1 = Instant::now();
        let run = cargo(&dir, &["run", "-q"]);
        let stdout = String::from_utf8_lossy(&run.stdout);
        println!(
            "e2e: {} valid functions built in {tb:.1?}, checked in {:.1?}",
            live.len(),
            t1.elapsed()
        );
        for line in stdout.lines().filter(|l| l.starts_with("f32 twins")) {
            println!("e2e: {line}");
        }
        for line in stdout.lines().filter(|l| l.starts_with("FAIL")) {
            println!("  {line}");
        }
        for line in stdout.lines().filter(|l| l.starts_with("  skipped seed")) {
            println!("{line}");
        }
        if !run.status.success() {
            ok = false;
            println!(
                "{}",
                String::from_utf8_lossy(&run.stderr)
                    .lines()
                    .take(20)
                    .collect::<Vec<_>>()
                    .join("\n")
            );
        }
        break;
    }
    // Mutants: each in its own module; errors attributed by line.
    let kinds: Vec<&'static str> = mutate::KINDS
        .iter()
        .copied()
        .filter(|k| !k.starts_with("token_"))
        .collect();
    let mut src = String::from(PRELUDE);
    let mut spans = vec![];
    for k in 0..mutants {
        let s = seed.wrapping_mul(9_000_011).wrapping_add(k as u64);
        let case = generate(s, &cfg, "f");
        let kind = kinds[k % kinds.len()];
        let mut rng = Rng::new(s);
        let mt = mutate::mutate(&case.program, kind, &mut rng, 16);
        let start = src.lines().count() + 1;
        let _ = writeln!(src, "mod m{k} {{\n    use super::*;");
        for h in &case.program.helpers {
            src.push_str(&h.source());
        }
        src.push_str(&mt.source());
        src.push_str("}\n");
        let end = src.lines().count();
        spans.push((start, end, s, mt));
    }
    src.push_str("fn main() {}\n");
    let dir = base.join("invalid");
    write_crate(&dir, "linad-fuzz-e2e-invalid", &src).expect("write the e2e crate");
    let t0 = Instant::now();
    let build = cargo(&dir, &["build", "--message-format=short"]);
    let stderr = String::from_utf8_lossy(&build.stderr);
    let mut counts = vec![vec![]; spans.len()];
    let mut stray = vec![];
    for line in stderr.lines() {
        if let Some((ln, msg)) = error_line(line) {
            match spans.iter().position(|(a, b, _, _)| *a <= ln && ln <= *b) {
                Some(i) => counts[i].push(msg),
                None => stray.push(line.to_string()),
            }
        }
    }
    println!(
        "e2e: {} mutants compiled in {:.1?}",
        spans.len(),
        t0.elapsed()
    );
    for ((_, _, s, mt), errs) in spans.iter().zip(&counts) {
        let bad = match mt.expect {
            Expect::OneError => errs.len() != 1,
            Expect::SomeError => errs.is_empty(),
            Expect::Anything => !errs.is_empty() && mutate::is_stress(mt.kind),
        };
        let unclear = errs.iter().any(|e| e.contains("__linad"));
        if bad || unclear {
            ok = false;
            println!(
                "  MUTANT {} (seed {s}): {} error(s){}",
                mt.kind,
                errs.len(),
                if errs.is_empty() {
                    String::new()
                } else {
                    format!(": {}", errs.join(" | "))
                }
            );
        }
    }
    for l in stray.iter().take(10) {
        ok = false;
        println!("  unattributed: {l}");
    }
    ok
}

/// `src/main.rs:LINE:COL: error...: msg` -> (LINE, msg).
fn error_line(line: &str) -> Option<(usize, String)> {
    let rest = line.strip_prefix("src/main.rs:")?;
    let mut parts = rest.splitn(3, ':');
    let ln: usize = parts.next()?.parse().ok()?;
    let _col = parts.next()?;
    let msg = parts.next()?.trim();
    if !msg.starts_with("error") {
        return None;
    }
    Some((ln, msg.to_string()))
}

/// The errors of `stderr` per module `cK` of `src` (by line).
fn module_errors(src: &str, stderr: &str) -> Vec<(usize, Vec<String>)> {
    let lines: Vec<&str> = src.lines().collect();
    let mut out: Vec<(usize, Vec<String>)> = vec![];
    for l in stderr.lines() {
        if let Some((ln, msg)) = error_line(l) {
            let module = lines[..ln.min(lines.len())].iter().rev().find_map(|s| {
                s.strip_prefix("mod c")
                    .and_then(|r| r.trim_end_matches(" {").parse::<usize>().ok())
            });
            if let Some(k) = module {
                match out.iter_mut().find(|(m, _)| *m == k) {
                    Some((_, es)) => es.push(msg),
                    None => out.push((k, vec![msg])),
                }
            }
        }
    }
    out
}
