//! Test helpers: lower a function from source, run it in the interpreter,
//! differentiate it and check the derivatives, or check a refusal.

use super::{lower, signature, Lowered};
use ad_core_ir::check::{check_program, Mode};
use ad_core_ir::driver::{differentiate, Options};
use ad_core_ir::interp::{run, Value};
use ad_core_ir::testing::check_derived;
use ad_core_ir::types::Ty;

/// Defines a function and `SRC`, its source text (to lower the same code
/// that the test runs natively).
macro_rules! both {
    ($($t:tt)*) => {
        #[allow(unused_mut, unused_parens, clippy::all)]
        $($t)*
        const SRC: &str = stringify!($($t)*);
    };
}
pub(crate) use both;

/// Lowers `src` (a function); all errors as strings.
pub fn try_lower(src: &str) -> Result<Lowered, Vec<String>> {
    try_lower_wrt(src, None)
}

/// As [`try_lower`] with a `wrt` list.
pub fn try_lower_wrt(src: &str, wrt: Option<&[&str]>) -> Result<Lowered, Vec<String>> {
    let item: syn::ItemFn = syn::parse_str(src).map_err(|e| vec![format!("parse: {e}")])?;
    let idents: Option<Vec<syn::Ident>> = wrt.map(|w| {
        w.iter()
            .map(|s| syn::Ident::new(s, proc_macro2::Span::call_site()))
            .collect()
    });
    let strs = |es: Vec<syn::Error>| es.into_iter().map(|e| e.to_string()).collect::<Vec<_>>();
    let sig = signature(&item, idents.as_deref()).map_err(strs)?;
    lower(&item, &sig).map_err(strs)
}

/// Lowers `src`, panicking with the errors; checks the IR and that every
/// statement has a source id.
pub fn lowered(src: &str) -> Lowered {
    let l = match try_lower(src) {
        Ok(l) => l,
        Err(es) => panic!("lowering failed:\n{}\nsource: {src}", es.join("\n")),
    };
    if let Err(es) = check_program(&l.program, Mode::LinearA) {
        panic!("{:?}", es);
    }
    let f = l.program.func(&l.name).expect("the function");
    fn all_located(b: &ad_core_ir::ir::Block, n: usize) -> bool {
        b.stmts.iter().all(|s| {
            s.src.is_some_and(|id| (id.0 as usize) < n)
                && ad_core_ir::visit::blocks(&s.expr).all(|b| all_located(b, n))
        })
    }
    assert!(
        all_located(&f.body, l.spans.len()),
        "a statement without a source id"
    );
    l
}

/// The error messages of lowering `src` (panics if it lowers).
pub fn errors(src: &str) -> Vec<String> {
    match try_lower(src) {
        Ok(l) => panic!(
            "expected an error, lowered to\n{}",
            ad_core_ir::pretty::func_to_string(l.program.func(&l.name).unwrap())
        ),
        Err(es) => es,
    }
}

/// Asserts that lowering `src` fails with an error containing `want`.
pub fn refuses(src: &str, want: &str) {
    let es = errors(src);
    assert!(
        es.iter().any(|e| e.contains(want)),
        "expected an error containing {want:?}, got:\n{}",
        es.join("\n")
    );
}

/// Runs the lowered function in the interpreter.
pub fn run_lowered(l: &Lowered, args: &[Value]) -> Vec<Value> {
    match run(&l.program, &l.name, args, &[]) {
        Ok((r, _)) => r,
        Err(e) => panic!(
            "interpreter: {e}\n{}",
            ad_core_ir::pretty::func_to_string(l.program.func(&l.name).unwrap())
        ),
    }
}

/// Lowers `src`, compares the interpreter with `expected` at `args`,
/// differentiates it and checks the derivatives (finite differences,
/// unzip, transpose) at `args`.
pub fn check(src: &str, args: &[Value], expected: &[Value]) {
    let l = lowered(src);
    let got = run_lowered(&l, args);
    assert_eq!(got.len(), expected.len(), "number of results");
    for (g, e) in got.iter().zip(expected) {
        let scale = 1.0f64.max(e.max_abs_diff(&e.zeros_like()));
        assert!(
            g.max_abs_diff(e) <= 1e-12 * scale,
            "interpreter gives {g:?}, Rust gives {e:?}\nsource: {src}"
        );
    }
    derivatives(&l, args);
}

/// Differentiates the lowered function and checks its derivatives at `args`.
pub fn derivatives(l: &Lowered, args: &[Value]) {
    let f = l.program.func(&l.name).unwrap();
    // Tuples are not perturbed by the finite-difference check.
    let wrt: Vec<bool> = f
        .params
        .iter()
        .map(|p| {
            let t = f.vars.ty(*p);
            t.is_differentiable() && !matches!(t, Ty::Tuple(_))
        })
        .collect();
    let d = match differentiate(&l.program, &l.name, &wrt, &Options::default()) {
        Ok(d) => d,
        Err(e) => panic!(
            "differentiate: {e}\n{}",
            ad_core_ir::pretty::func_to_string(f)
        ),
    };
    let all: Vec<bool> = f
        .params
        .iter()
        .map(|p| f.vars.ty(*p).is_differentiable())
        .collect();
    if let Err(e) = differentiate(&l.program, &l.name, &all, &Options::default()) {
        panic!("differentiate (all): {e}");
    }
    let r = check_derived(&l.program, &d, &l.name, args, &wrt, 7, 1e-6)
        .unwrap_or_else(|e| panic!("derivative check: {e}"));
    assert!(r.fd_rel_err < 1e-5, "jvp vs finite differences: {r:?}");
    assert!(r.jvp_primal_exact && r.fwd_primal_exact, "{r:?}");
    assert!(r.lin_vs_jvp < 1e-9, "{r:?}");
    assert!(r.dot_rel_err < 1e-9, "{r:?}");
}

/// Lowers and differentiates (no interpreter run: for functions calling externs).
pub fn differentiates(src: &str) -> Lowered {
    let l = lowered(src);
    let f = l.program.func(&l.name).unwrap();
    let all: Vec<bool> = f
        .params
        .iter()
        .map(|p| f.vars.ty(*p).is_differentiable())
        .collect();
    if let Err(e) = differentiate(&l.program, &l.name, &all, &Options::default()) {
        panic!(
            "differentiate: {e}\n{}",
            ad_core_ir::pretty::func_to_string(f)
        );
    }
    l
}

/// `f64` value.
pub fn fv(x: f64) -> Value {
    Value::F64(x)
}

/// `i64` value.
pub fn iv(x: i64) -> Value {
    Value::I64(x)
}

/// `bool` value.
pub fn bv(x: bool) -> Value {
    Value::Bool(x)
}

/// `[f64]` value.
pub fn v1(xs: &[f64]) -> Value {
    Value::f64s(&[xs.len()], xs.to_vec())
}

/// `[[f64]]` value of `r` rows.
pub fn m2(r: usize, xs: &[f64]) -> Value {
    Value::f64s(&[r, xs.len() / r], xs.to_vec())
}

/// `[i64]` value.
pub fn i1(xs: &[i64]) -> Value {
    Value::i64s(&[xs.len()], xs.to_vec())
}
