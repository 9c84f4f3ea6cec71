//! Unit tests of the emitter.
//!
//! Each case is an IR function written in the printed form, with the Rust
//! signature a front end would give it. The driver differentiates it and the
//! emitter generates the companions; the tests check that the output parses
//! as Rust and has the public signatures of the contract.
//!
//! Compiling and running the generated code needs a crate that depends on
//! `linad`: with `LINAD_EMIT_OUT=<dir>` set, `write_cases` writes one module
//! per case into `<dir>` (plus `mod.rs`), each with a `check()` that calls
//! every generated function on fixed inputs and compares the numbers with
//! the interpreter's (`ad_core_ir::interp`). A scratch crate includes `<dir>`
//! and runs every `check()` (see the report of the emitter's author for one).

use super::{companions, Input};
use crate::sig::{Callee, Lowered};
use crate::sig::{Out, Param, ParamKind, Passing, Signature};
use ad_core_ir::driver::{differentiate, Derivatives, Options};
use ad_core_ir::interp::{run, Value};
use ad_core_ir::ir::Program;
use ad_core_ir::parse::parse_program;
use ad_core_ir::testing::Rng;
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};

/// A parameter: name, Rust type, kind.
pub struct P(pub &'static str, pub &'static str, pub ParamKind);

/// One test case.
pub struct Case {
    /// Module name of the case.
    pub name: &'static str,
    /// The differentiated function (`f` unless a helper).
    pub fname: &'static str,
    /// The IR program; its function `f` is the one differentiated.
    pub ir: &'static str,
    /// The Rust parameters.
    pub params: Vec<P>,
    /// Which are differentiated (`None`: every differentiable one).
    pub wrt: Option<Vec<&'static str>>,
    /// The output.
    pub out: Out,
    /// Arguments (IR values).
    pub args: Vec<Value>,
    /// Externs the function calls.
    pub externs: Vec<Extern>,
    /// `#[differentiable]` functions called by this one, emitted into the
    /// same module.
    pub helpers: Vec<Case>,
    /// Plain Rust items added to the module (non-differentiable callees).
    pub rust: &'static str,
}

impl Default for Case {
    fn default() -> Case {
        Case {
            name: "",
            fname: "f",
            ir: "",
            params: vec![],
            wrt: None,
            out: Out::F64,
            args: vec![],
            externs: vec![],
            helpers: vec![],
            rust: "",
        }
    }
}

/// An extern the case calls: its IR name, whether differentiable, and the
/// IR of its definition (emitted as another case in the same module).
pub struct Extern {
    /// IR name (a plain name: the definition is in the same module).
    pub name: &'static str,
    /// `#[differentiable]` or plain.
    pub differentiable: bool,
    /// Rust result types (for plain functions).
    pub result_tys: Vec<&'static str>,
}

fn arr(shape: &[usize], xs: &[f64]) -> Value {
    Value::f64s(shape, xs.to_vec())
}

fn arr1(xs: &[f64]) -> Value {
    arr(&[xs.len()], xs)
}

fn f64a(rank: usize) -> ParamKind {
    ParamKind::F64Array {
        rank,
        passing: Passing::Ref,
    }
}

fn signature(c: &Case) -> Signature {
    let params = c
        .params
        .iter()
        .map(|P(n, t, k)| Param {
            ident: syn::Ident::new(n, Span::call_site()),
            ty: syn::parse_str(t).expect("a Rust type"),
            kind: k.clone(),
            wrt: k.is_differentiable() && c.wrt.as_ref().is_none_or(|w| w.contains(n)),
        })
        .collect();
    Signature {
        ident: syn::Ident::new(c.fname, Span::call_site()),
        vis: syn::parse_str("pub").unwrap(),
        params,
        out: c.out.clone(),
        span: Span::call_site(),
    }
}

fn program(c: &Case) -> Program {
    let mut p = parse_program(c.ir).unwrap_or_else(|e| panic!("{}: {e}", c.name));
    // Functions other than `f` that the case lists as externs become extern
    // declarations (their bodies are emitted by their own `#[differentiable]`).
    for e in &c.externs {
        let g = p.func(e.name).unwrap().clone();
        p.funcs.retain(|h| h.name != e.name);
        let (ps, _, rs, _) = ad_core_ir::typing::func_sig(&g);
        ad_core_ir::driver::declare_extern(&mut p, e.name, &ps, &rs);
        if !e.differentiable {
            let n = ad_core_ir::driver::Names::of(e.name);
            p.externs
                .retain(|h| h.name != n.jvp && h.name != n.lin && h.name != n.lin_t);
        }
    }
    p
}

struct Derived {
    sig: Signature,
    lowered: Lowered,
    user: Derivatives,
    all: Derivatives,
    /// The derivatives with the externs' definitions in the program (what
    /// the interpreter can run: the expected numbers).
    ref_user: Derivatives,
    ref_all: Derivatives,
}

fn derive(c: &Case) -> Derived {
    let sig = signature(c);
    let prog = program(c);
    let callees = c
        .externs
        .iter()
        .map(|e| Callee {
            ir_name: e.name.to_string(),
            path: syn::parse_str(e.name).unwrap(),
            differentiable: e.differentiable,
            result_tys: e
                .result_tys
                .iter()
                .map(|t| syn::parse_str(t).unwrap())
                .collect(),
            linear: None,
            wrt: None,
            residuals: false,
            constant: false,
        })
        .collect();
    let opts = Options::default();
    let user = differentiate(&prog, c.fname, &sig.wrt_mask(), &opts)
        .unwrap_or_else(|e| panic!("{}: {e}", c.name));
    let all = differentiate(&prog, c.fname, &sig.all_mask(), &opts).unwrap();
    let whole = parse_program(c.ir).unwrap();
    let ref_user = differentiate(&whole, c.fname, &sig.wrt_mask(), &opts).unwrap();
    let ref_all = differentiate(&whole, c.fname, &sig.all_mask(), &opts).unwrap();
    Derived {
        lowered: Lowered {
            program: prog,
            name: c.fname.into(),
            spans: vec![],
            callees,
        },
        sig,
        user,
        all,
        ref_user,
        ref_all,
    }
}

fn emit(d: &Derived) -> TokenStream {
    companions(&Input {
        sig: &d.sig,
        lowered: &d.lowered,
        user: &d.user,
        all: &d.all,
        public: super::Public::all_of(crate::attr::Modes::BOTH),
        callers: true,
        preconditions: &[],
    })
}

// ---------------------------------------------------------------- values

fn f64_tok(x: f64) -> TokenStream {
    quote::ToTokens::to_token_stream(&super::func::f64_lit(x))
}

/// An owned canonical value: scalars, tuples, `Array<T, IxR>`.
fn value(v: &Value) -> TokenStream {
    match v {
        Value::F64(x) => f64_tok(*x),
        Value::I64(x) => quote::ToTokens::to_token_stream(&super::func::i64_lit(*x)),
        Value::Bool(b) => quote!(#b),
        Value::Tuple(xs) => {
            let ps: Vec<_> = xs.iter().map(value).collect();
            quote::ToTokens::to_token_stream(&super::types::tuple(&ps))
        }
        Value::Array(a) => {
            let shape = &a.shape;
            let data: Vec<TokenStream> = (0..a.size())
                .map(|k| value(&a.data.get(k).unwrap()))
                .collect();
            quote!(::linad::ndarray::Array::from_shape_vec([#(#shape),*], vec![#(#data),*]).unwrap())
        }
    }
}

/// The scalars of a value in order (integers as floats).
fn flatten(v: &Value, out: &mut Vec<f64>) {
    match v {
        Value::F64(x) => out.push(*x),
        Value::I64(x) => out.push(*x as f64),
        Value::Bool(b) => out.push(if *b { 1.0 } else { 0.0 }),
        Value::Tuple(xs) => xs.iter().for_each(|x| flatten(x, out)),
        Value::Array(a) => (0..a.size()).for_each(|k| flatten(&a.data.get(k).unwrap(), out)),
    }
}

fn flat_all(vs: &[Value]) -> Vec<f64> {
    let mut out = vec![];
    vs.iter().for_each(|v| flatten(v, &mut out));
    out
}

/// A user-typed argument from the canonical value bound to `tmp`.
fn user_arg(kind: &ParamKind, ty: &str, tmp: &syn::Ident) -> TokenStream {
    let ty: syn::Type = syn::parse_str(ty).unwrap();
    match kind {
        ParamKind::F64 | ParamKind::F64Tuple(_) | ParamKind::Bool => quote!(#tmp),
        ParamKind::Int(_) => quote!(#tmp as #ty),
        ParamKind::Enum(_) => unreachable!("the emitter tests take no enums"),
        ParamKind::F64Array { passing, .. } => match passing {
            Passing::Ref => quote!(&#tmp),
            Passing::View => quote!(#tmp.view()),
            Passing::Owned => quote!(#tmp.clone()),
            Passing::Slice => quote!(#tmp.as_slice().unwrap()),
            Passing::VecRef => quote!(&#tmp.to_vec()),
            Passing::Vec => quote!(#tmp.to_vec()),
            Passing::Fixed | Passing::FixedRef => {
                unreachable!("the emitter tests take no fixed-size arrays")
            }
        },
        ParamKind::IntArray { passing, elem, .. } => {
            let conv = quote!(#tmp.mapv(|v: i64| v as #elem));
            match passing {
                Passing::Ref => quote!(&#conv),
                Passing::View => quote!(#conv.view()),
                Passing::Owned => conv,
                Passing::Slice => quote!(#conv.as_slice().unwrap()),
                Passing::VecRef => quote!(&#conv.to_vec()),
                Passing::Vec => quote!(#conv.to_vec()),
                Passing::Fixed | Passing::FixedRef => {
                    unreachable!("the emitter tests take no fixed-size arrays")
                }
            }
        }
    }
}

/// A canonical argument from the value bound to `tmp`.
fn canon_arg(v: &Value, tmp: &syn::Ident) -> TokenStream {
    match v {
        Value::Array(_) => quote!(#tmp.view()),
        _ => quote!(#tmp),
    }
}

/// `let __aK = value;` for each value.
fn bind_values(what: &str, vs: &[Value]) -> (TokenStream, Vec<syn::Ident>) {
    let names: Vec<syn::Ident> = (0..vs.len()).map(|k| format_ident!("{what}{k}")).collect();
    let vals = vs.iter().map(value);
    (quote!(#(let #names = #vals;)*), names)
}

fn check(label: &str, call: TokenStream, want: Vec<f64>) -> TokenStream {
    quote!(crate::util::assert_close(#label, &crate::util::flat(&#call), &[#(#want),*]);)
}

/// The `check()` function of a case: every generated function against the
/// interpreter.
fn check_fn(c: &Case, d: &Derived) -> TokenStream {
    let mut rng = Rng(7);
    let f = d.lowered.program.func(c.fname).unwrap();
    let args = &c.args;
    let tangent = |rng: &mut Rng, k: usize| rng.like(&args[k]);
    let (bind_args, an) = bind_values("__a", args);
    let user_args: Vec<TokenStream> = c
        .params
        .iter()
        .zip(&an)
        .map(|(P(_, t, k), n)| user_arg(k, t, n))
        .collect();
    let canon_args: Vec<TokenStream> = args.iter().zip(&an).map(|(v, n)| canon_arg(v, n)).collect();
    let mut body = bind_args;

    // f_jvp
    let wrt_idx: Vec<usize> = d
        .sig
        .params
        .iter()
        .enumerate()
        .filter(|(_, p)| p.wrt)
        .map(|(k, _)| k)
        .collect();
    let dx: Vec<Value> = wrt_idx.iter().map(|k| tangent(&mut rng, *k)).collect();
    let (bind_dx, dn) = bind_values("__d", &dx);
    body.extend(bind_dx);
    let d_args: Vec<TokenStream> = wrt_idx
        .iter()
        .zip(&dn)
        .map(|(k, n)| {
            let P(_, t, kind) = &c.params[*k];
            user_arg(kind, t, n)
        })
        .collect();
    let (r, lr) = run(&d.ref_user.program, &d.ref_user.names.jvp, args, &dx).unwrap();
    let want = flat_all(&[r, lr].concat());
    body.extend(check(
        &format!("{}: f_jvp", c.name),
        quote!(f_jvp(#(#user_args,)* #(#d_args,)*)),
        want,
    ));

    // f_vjp
    let n_out = d.ref_user.n_results;
    let (res, _) = run(&d.ref_user.program, &d.ref_user.names.fwd, args, &[]).unwrap();
    let cts: Vec<Value> = res[..n_out].iter().map(|v| rng.like(v)).collect();
    let (_, lr) = run(
        &d.ref_user.program,
        &d.ref_user.names.lin_t,
        &res[n_out..],
        &cts,
    )
    .unwrap();
    let want = flat_all(&[res[..n_out].to_vec(), lr].concat());
    let (bind_ct, ctn) = bind_values("__ct", &cts);
    body.extend(bind_ct);
    let ct_leaves: Vec<TokenStream> = cts
        .iter()
        .zip(&ctn)
        .map(|(v, n)| match v {
            Value::Array(_) => quote!(&#n),
            _ => quote!(#n),
        })
        .collect();
    let mut it = ct_leaves.into_iter();
    let ct = nest_out(&c.out, &mut it);
    body.extend(check(
        &format!("{}: f_vjp", c.name),
        quote!(f_vjp(#(#user_args,)* #ct)),
        want,
    ));

    // Hidden building blocks (every differentiable parameter).
    let all_idx: Vec<usize> = f
        .params
        .iter()
        .enumerate()
        .filter(|(_, v)| f.vars.ty(**v).is_differentiable())
        .map(|(k, _)| k)
        .collect();
    let (r, _) = run(&d.ref_all.program, c.fname, args, &[]).unwrap();
    body.extend(check(
        &format!("{}: primal", c.name),
        quote!(__linad_f_primal(#(#canon_args),*)),
        flat_all(&r),
    ));
    let dx: Vec<Value> = all_idx.iter().map(|k| tangent(&mut rng, *k)).collect();
    let (bind_dx, dn) = bind_values("__e", &dx);
    body.extend(bind_dx);
    let dxa: Vec<TokenStream> = dx.iter().zip(&dn).map(|(v, n)| canon_arg(v, n)).collect();
    let (r, lr) = run(&d.ref_all.program, &d.ref_all.names.jvp, args, &dx).unwrap();
    body.extend(check(
        &format!("{}: hidden jvp", c.name),
        quote!(__linad_f_jvp(#(#canon_args,)* #(#dxa,)*)),
        flat_all(&[r, lr].concat()),
    ));
    let n_out = d.ref_all.n_results;
    let (res, _) = run(&d.ref_all.program, &d.ref_all.names.fwd, args, &[]).unwrap();
    let (_, lr) = run(&d.ref_all.program, &d.ref_all.names.lin, &res[n_out..], &dx).unwrap();
    body.extend(check(
        &format!("{}: hidden lin", c.name),
        quote!(__linad_f_lin(#(#canon_args,)* #(#dxa,)*)),
        flat_all(&lr),
    ));
    let (_, lr) = run(
        &d.ref_all.program,
        &d.ref_all.names.lin_t,
        &res[n_out..],
        &cts,
    )
    .unwrap();
    let cta: Vec<TokenStream> = cts.iter().zip(&ctn).map(|(v, n)| canon_arg(v, n)).collect();
    body.extend(check(
        &format!("{}: hidden lin_t", c.name),
        quote!(__linad_f_lin_t(#(#canon_args,)* #(#cta,)*)),
        flat_all(&lr),
    ));
    quote!(
        #[allow(unused_variables, clippy::all)]
        pub fn check() { #body }
    )
}

fn nest_out(o: &Out, leaves: &mut impl Iterator<Item = TokenStream>) -> TokenStream {
    match o {
        Out::F64 | Out::Array(_) => leaves.next().unwrap(),
        Out::Fixed(_) => unreachable!("the emitter tests return no fixed-size arrays"),
        Out::Tuple(parts) => {
            let ps: Vec<_> = parts.iter().map(|p| nest_out(p, leaves)).collect();
            quote::ToTokens::to_token_stream(&super::types::tuple(&ps))
        }
    }
}

// ---------------------------------------------------------------- cases

/// The test cases.
pub fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "scalar_sum",
            ir: "
def f(x_0: f64, w_1: [f64], n_2: i64) -> (f64) {
  let s_3: f64 = reduce_sum w_1
  let m_4: f64 = mul x_0, s_3
  let sn_5: f64 = sin x_0
  let nf_6: f64 = to_f64 n_2
  let t_7: f64 = mul sn_5, nf_6
  let r_8: f64 = add m_4, t_7
  return r_8
}",
            params: vec![
                P("x", "f64", ParamKind::F64),
                P("w", "&Array1<f64>", f64a(1)),
                P(
                    "n",
                    "usize",
                    ParamKind::Int(syn::parse_str("usize").unwrap()),
                ),
            ],
            wrt: None,
            out: Out::F64,
            args: vec![Value::F64(0.3), arr1(&[1.0, -2.0, 0.5]), Value::I64(3)],
            ..Default::default()
        },
        Case {
            name: "power_loop",
            ir: "
def f(x_0: f64, n_1: i64) -> (f64) {
  let r_2: f64 = loop n_1 (acc_3: f64 = 1.0) |i_4: i64| {
    let m_5: f64 = mul acc_3, x_0
    yield m_5
  }
  return r_2
}",
            params: vec![
                P("x", "f64", ParamKind::F64),
                P("n", "u32", ParamKind::Int(syn::parse_str("u32").unwrap())),
            ],
            wrt: None,
            out: Out::F64,
            args: vec![Value::F64(1.1), Value::I64(5)],
            ..Default::default()
        },
        Case {
            name: "logsumexp",
            ir: "
def f(v_0: [f64]) -> (f64) {
  let m_1: f64 = reduce_max v_0
  let e_2: [f64] = map(v_0) |x_3: f64| {
    let d_4: f64 = sub x_3, m_1
    let e_5: f64 = exp d_4
    yield e_5
  }
  let s_6: f64 = reduce_sum e_2
  let l_7: f64 = ln s_6
  let r_8: f64 = add m_1, l_7
  return r_8
}",
            params: vec![P(
                "v",
                "ArrayView1<f64>",
                ParamKind::F64Array {
                    rank: 1,
                    passing: Passing::View,
                },
            )],
            wrt: None,
            out: Out::F64,
            args: vec![arr1(&[0.5, 2.0, -1.0, 1.5])],
            ..Default::default()
        },
        Case {
            name: "matvec_tanh",
            ir: "
def f(a_0: [[f64]], x_1: [f64]) -> ([f64]) {
  let y_2: [f64] = matmul a_0, x_1
  let t_3: [f64] = map(y_2) |u_4: f64| {
    let t_5: f64 = tanh u_4
    yield t_5
  }
  return t_3
}",
            params: vec![
                P("a", "&Array2<f64>", f64a(2)),
                P(
                    "x",
                    "Array1<f64>",
                    ParamKind::F64Array {
                        rank: 1,
                        passing: Passing::Owned,
                    },
                ),
            ],
            wrt: None,
            out: Out::Array(1),
            args: vec![
                arr(&[2, 3], &[0.1, 0.2, -0.3, 0.4, -0.5, 0.6]),
                arr1(&[1.0, -1.0, 0.5]),
            ],
            ..Default::default()
        },
        Case {
            name: "tuple_out_wrt",
            ir: "
def f(x_0: f64, p_1: (f64, f64), w_2: [f64]) -> (f64, [f64]) {
  let a_3: f64, b_4: f64 = untuple p_1
  let c_5: f64 = mul a_3, b_4
  let d_6: f64 = mul c_5, x_0
  let w2_7: [f64] = map(w_2) |u_8: f64| {
    let v_9: f64 = mul u_8, a_3
    let z_10: f64 = mul v_9, u_8
    yield z_10
  }
  return d_6, w2_7
}",
            params: vec![
                P("x", "f64", ParamKind::F64),
                P("p", "(f64, f64)", ParamKind::F64Tuple(2)),
                P("w", "&Array1<f64>", f64a(1)),
            ],
            wrt: Some(vec!["p", "w"]),
            out: Out::Tuple(vec![Out::F64, Out::Array(1)]),
            args: vec![
                Value::F64(0.7),
                Value::Tuple(vec![Value::F64(1.5), Value::F64(-0.5)]),
                arr1(&[1.0, 2.0, 3.0]),
            ],
            ..Default::default()
        },
        Case {
            name: "branch",
            ir: "
def f(x_0: f64, w_1: [f64]) -> (f64) {
  let c_2: bool = gt x_0, 0.0
  let r_3: f64 = if c_2 {
    let s_4: f64 = reduce_sum w_1
    let m_5: f64 = mul s_4, x_0
    yield m_5
  } else {
    let q_6: f64 = mul x_0, x_0
    let k_7: f64 = index w_1[0]
    let z_8: f64 = mul q_6, k_7
    yield z_8
  }
  return r_3
}",
            params: vec![
                P("x", "f64", ParamKind::F64),
                P("w", "&Array1<f64>", f64a(1)),
            ],
            wrt: None,
            out: Out::F64,
            args: vec![Value::F64(-0.4), arr1(&[2.0, 3.0])],
            ..Default::default()
        },
        Case {
            name: "loop_rows",
            ir: "
def f(a_0: [[f64]], w_1: [f64]) -> (f64) {
  let n_2: i64 = shape a_0, 0
  let r_3: f64 = loop n_2 (acc_4: f64 = 0.0) |i_5: i64| {
    let row_6: [f64] = index a_0[i_5]
    let d_7: f64 = matmul row_6, w_1
    let s_8: f64 = mul d_7, d_7
    let acc_9: f64 = add acc_4, s_8
    yield acc_9
  }
  return r_3
}",
            params: vec![
                P("a", "&Array2<f64>", f64a(2)),
                P("w", "&Array1<f64>", f64a(1)),
            ],
            args: vec![
                arr(&[3, 2], &[0.1, 0.2, -0.3, 0.4, -0.5, 0.6]),
                arr1(&[1.0, -1.5]),
            ],
            ..Default::default()
        },
        Case {
            name: "build_shift",
            ir: "
def f(w_0: [f64]) -> ([f64]) {
  let n_1: i64 = shape w_0, 0
  let b_2: [f64] = build [n_1] |i_3: i64| {
    let j_4: i64 = add i_3, 1
    let k_5: i64 = rem j_4, n_1
    let a_6: f64 = index w_0[i_3]
    let c_7: f64 = index w_0[k_5]
    let p_8: f64 = mul a_6, c_7
    yield p_8
  }
  return b_2
}",
            params: vec![P("w", "&Array1<f64>", f64a(1))],
            out: Out::Array(1),
            args: vec![arr1(&[1.0, -2.0, 0.5, 3.0])],
            ..Default::default()
        },
        Case {
            name: "build_2d",
            ir: "
def f(u_0: [f64], v_1: [f64]) -> ([[f64]], f64) {
  let m_2: i64 = shape u_0, 0
  let n_3: i64 = shape v_1, 0
  let b_4: [[f64]], c_5: [[f64]] = build [m_2, n_3] |i_6: i64, j_7: i64| {
    let a_8: f64 = index u_0[i_6]
    let b_9: f64 = index v_1[j_7]
    let p_10: f64 = mul a_8, b_9
    let q_11: f64 = sin p_10
    yield p_10, q_11
  }
  let s_12: f64 = reduce_sum c_5
  return b_4, s_12
}",
            params: vec![
                P("u", "&Array1<f64>", f64a(1)),
                P("v", "&Array1<f64>", f64a(1)),
            ],
            out: Out::Tuple(vec![Out::Array(2), Out::F64]),
            args: vec![arr1(&[1.0, -2.0]), arr1(&[0.5, 0.25, -1.0])],
            ..Default::default()
        },
        Case {
            name: "gather_scatter",
            ir: "
def f(w_0: [f64], idx_1: [i64]) -> (f64) {
  let g_2: [f64] = gather w_0, idx_1
  let s_3: [f64] = map(g_2) |x_4: f64| {
    let y_5: f64 = mul x_4, x_4
    yield y_5
  }
  let n_6: i64 = shape w_0, 0
  let t_7: [f64] = scatter_add n_6, idx_1, s_3
  let u_8: [f64] = map(t_7, w_0) |a_9: f64, b_10: f64| {
    let c_11: f64 = mul a_9, b_10
    yield c_11
  }
  let r_12: f64 = reduce_sum u_8
  let k_13: i64 = reduce_sum idx_1
  let kf_14: f64 = to_f64 k_13
  let r_15: f64 = mul r_12, kf_14
  return r_15
}",
            params: vec![
                P("w", "&Array1<f64>", f64a(1)),
                P(
                    "idx",
                    "&Array1<usize>",
                    ParamKind::IntArray {
                        rank: 1,
                        passing: Passing::Ref,
                        elem: syn::parse_str("usize").unwrap(),
                    },
                ),
            ],
            args: vec![
                arr1(&[1.0, -2.0, 0.5]),
                Value::i64s(&[5], vec![0, 2, 2, 1, 0]),
            ],
            ..Default::default()
        },
        Case {
            name: "matrix_ops",
            ir: "
def f(a_0: [[f64]], b_1: [[f64]], v_2: [f64]) -> ([[f64]], [f64]) {
  let t_3: [[f64]] = transpose b_1
  let c_4: [[f64]] = matmul a_0, t_3
  let m_5: [f64] = reduce_max c_4, axis=1
  let s_6: [f64] = reduce_sum c_4, axis=0
  let q_7: [f64] = matmul v_2, c_4
  let w_8: [f64] = scan q_7
  let z_9: [f64] = map(w_8, s_6) |x_10: f64, y_11: f64| {
    let p_12: f64 = mul x_10, y_11
    yield p_12
  }
  let r_13: i64 = shape c_4, 0
  let k_14: i64 = shape c_4, 1
  let bb_15: [[f64]] = broadcast z_9, [r_13, k_14], axes=[1]
  let o_16: [[f64]] = map(bb_15, c_4) |x_17: f64, y_18: f64| {
    let p_19: f64 = mul x_17, y_18
    yield p_19
  }
  let w2_20: [f64] = scan m_5 rev
  let am_21: [i64] = argmax c_4, axis=1
  let g_22: [f64] = gather s_6, am_21
  let o2_23: [f64] = map(w2_20, g_22) |x_24: f64, y_25: f64| {
    let p_26: f64 = mul x_24, y_25
    yield p_26
  }
  return o_16, o2_23
}",
            params: vec![
                P("a", "&Array2<f64>", f64a(2)),
                P(
                    "b",
                    "ArrayView2<f64>",
                    ParamKind::F64Array {
                        rank: 2,
                        passing: Passing::View,
                    },
                ),
                P("v", "&Array1<f64>", f64a(1)),
            ],
            out: Out::Tuple(vec![Out::Array(2), Out::Array(1)]),
            args: vec![
                arr(&[2, 3], &[0.1, 0.2, -0.3, 0.4, -0.5, 0.6]),
                arr(
                    &[4, 3],
                    &[
                        1.0, 0.5, -0.2, 0.3, 0.7, -1.1, 0.25, -0.75, 0.9, 1.3, -0.4, 0.15,
                    ],
                ),
                arr1(&[0.7, -1.2]),
            ],
            ..Default::default()
        },
        Case {
            name: "array_state_loop",
            ir: "
def f(w_0: [f64], n_1: i64) -> ([f64]) {
  let r_2: [f64] = loop n_1 (s_3: [f64] = w_0) |i_4: i64| {
    let t_5: [f64] = map(s_3) |x_6: f64| {
      let y_7: f64 = sin x_6
      let z_8: f64 = mul y_7, 1.5
      yield z_8
    }
    let k_9: i64 = shape s_3, 0
    let j_10: i64 = rem i_4, k_9
    let e_11: f64 = index t_5[j_10]
    let e2_12: f64 = mul e_11, e_11
    let u_13: [f64] = update t_5[j_10] += e2_12
    yield u_13
  }
  return r_2
}",
            params: vec![
                P("w", "&Array1<f64>", f64a(1)),
                P(
                    "n",
                    "usize",
                    ParamKind::Int(syn::parse_str("usize").unwrap()),
                ),
            ],
            out: Out::Array(1),
            args: vec![arr1(&[0.3, -0.2, 0.9]), Value::I64(4)],
            ..Default::default()
        },
        Case {
            name: "fold_rows",
            ir: "
def f(a_0: [[f64]], w_1: [f64]) -> (f64) {
  let r_2: f64 = fold a_0 (acc_3: f64 = 0.0) |row_4: [f64]| {
    let d_5: f64 = matmul row_4, w_1
    let c_6: f64 = cos d_5
    let a_7: f64 = add acc_3, c_6
    yield a_7
  }
  let r2_8: f64 = fold w_1 (acc_9: f64 = 1.0) |x_10: f64| {
    let m_11: f64 = mul acc_9, x_10
    yield m_11
  }
  let o_12: f64 = add r_2, r2_8
  return o_12
}",
            params: vec![
                P("a", "&Array2<f64>", f64a(2)),
                P("w", "&Array1<f64>", f64a(1)),
            ],
            args: vec![
                arr(&[3, 2], &[0.1, 0.2, -0.3, 0.4, -0.5, 0.6]),
                arr1(&[1.0, -1.5]),
            ],
            ..Default::default()
        },
        Case {
            name: "internal_call",
            ir: "
def sq(x_0: f64, w_1: [f64]) -> (f64, [f64]) {
  let m_2: f64 = mul x_0, x_0
  let v_3: [f64] = map(w_1) |u_4: f64| {
    let p_5: f64 = mul u_4, m_2
    yield p_5
  }
  return m_2, v_3
}
def f(x_0: f64, w_1: [f64]) -> (f64) {
  let a_2: f64, b_3: [f64] = call sq(x_0, w_1)
  let s_4: f64 = reduce_sum b_3
  let r_5: f64 = mul a_2, s_4
  return r_5
}",
            params: vec![
                P("x", "f64", ParamKind::F64),
                P("w", "&Array1<f64>", f64a(1)),
            ],
            args: vec![Value::F64(0.8), arr1(&[1.0, 2.0, -0.5])],
            ..Default::default()
        },
        Case {
            name: "extern_calls",
            ir: "
def g(x_0: f64, w_1: [f64], n_2: i64) -> (f64, [f64]) {
  let s_3: f64 = reduce_sum w_1
  let nf_4: f64 = to_f64 n_2
  let m_5: f64 = mul x_0, s_3
  let t_6: f64 = mul m_5, nf_4
  let v_7: [f64] = map(w_1) |u_8: f64| {
    let p_9: f64 = mul u_8, x_0
    let q_10: f64 = sin p_9
    yield q_10
  }
  return t_6, v_7
}
def h(n_0: i64) -> (i64) {
  let m_1: i64 = mul n_0, 2
  return m_1
}
def f(x_0: f64, w_1: [f64], n_2: i64) -> (f64) {
  let k_3: i64 = call h(n_2)
  let a_4: f64, b_5: [f64] = call g(x_0, w_1, k_3)
  let s_6: f64 = reduce_sum b_5
  let r_7: f64 = mul a_4, s_6
  return r_7
}",
            params: vec![
                P("x", "f64", ParamKind::F64),
                P("w", "&Array1<f64>", f64a(1)),
                P(
                    "n",
                    "usize",
                    ParamKind::Int(syn::parse_str("usize").unwrap()),
                ),
            ],
            args: vec![Value::F64(0.8), arr1(&[1.0, 2.0, -0.5]), Value::I64(2)],
            externs: vec![
                Extern {
                    name: "g",
                    differentiable: true,
                    result_tys: vec![],
                },
                Extern {
                    name: "h",
                    differentiable: false,
                    result_tys: vec!["usize"],
                },
            ],
            helpers: vec![Case {
                name: "extern_calls_g",
                fname: "g",
                ir: "
def g(x_0: f64, w_1: [f64], n_2: i64) -> (f64, [f64]) {
  let s_3: f64 = reduce_sum w_1
  let nf_4: f64 = to_f64 n_2
  let m_5: f64 = mul x_0, s_3
  let t_6: f64 = mul m_5, nf_4
  let v_7: [f64] = map(w_1) |u_8: f64| {
    let p_9: f64 = mul u_8, x_0
    let q_10: f64 = sin p_9
    yield q_10
  }
  return t_6, v_7
}",
                params: vec![
                    P("x", "f64", ParamKind::F64),
                    P(
                        "w",
                        "ArrayView1<f64>",
                        ParamKind::F64Array {
                            rank: 1,
                            passing: Passing::View,
                        },
                    ),
                    P("n", "i32", ParamKind::Int(syn::parse_str("i32").unwrap())),
                ],
                out: Out::Tuple(vec![Out::F64, Out::Array(1)]),
                ..Default::default()
            }],
            rust: "fn h(n: usize) -> usize { n * 2 }",
            ..Default::default()
        },
        Case {
            name: "rank3_tuple",
            ir: "
def f(t_0: [[[f64]]], p_1: (f64, f64)) -> (f64, [[f64]]) {
  let a_2: f64, b_3: f64 = untuple p_1
  let c_4: f64, d_5: f64 = untuple p_1
  let e_6: f64 = mul a_2, c_4
  let g_7: f64 = mul b_3, d_5
  let h_8: f64 = add e_6, g_7
  let m_9: [[f64]] = index t_0[1]
  let r_10: f64 = index t_0[0, 1, 2]
  let s_11: f64 = reduce_sum m_9
  let u_12: f64 = mul s_11, h_8
  let v_13: f64 = mul u_12, r_10
  let w_14: [[f64]] = reduce_prod t_0, axis=0
  let i_15: i64, j_16: i64, k_17: i64 = argmin t_0
  let x_18: f64 = index t_0[i_15, j_16, k_17]
  let y_19: f64 = add v_13, x_18
  return y_19, w_14
}",
            params: vec![
                P("t", "&Array3<f64>", f64a(3)),
                P("p", "(f64, f64)", ParamKind::F64Tuple(2)),
            ],
            out: Out::Tuple(vec![Out::F64, Out::Array(2)]),
            args: vec![
                arr(
                    &[2, 2, 3],
                    &[
                        0.1, 0.2, -0.3, 0.4, -0.5, 0.6, 0.7, -0.8, 0.9, 1.0, -1.1, 1.2,
                    ],
                ),
                Value::Tuple(vec![Value::F64(0.5), Value::F64(-1.5)]),
            ],
            ..Default::default()
        },
    ]
}

/// Every finite `f64` literal reads back as the same bits, in a few tokens:
/// exponent form at the extremes, decimal form in between.
#[test]
fn f64_literals_round_trip() {
    let xs = [
        0.0,
        -0.0,
        0.1,
        -2.5,
        123.0,
        1e-5,
        9.999e-6,
        1e16,
        f64::MIN_POSITIVE,
        5e-324,
        -1e300,
        f64::MAX,
        std::f64::consts::PI,
    ];
    for x in xs {
        let text = f64_tok(x).to_string().replace(' ', "");
        assert!(text.len() <= 28, "{x:e}: {text}");
        let back: f64 = text.trim_end_matches("f64").parse().unwrap();
        assert_eq!(back.to_bits(), x.to_bits(), "{x:e}: {text}");
    }
}

#[test]
fn companions_parse_as_rust() {
    for c in cases()
        .iter()
        .flat_map(|c| std::iter::once(c).chain(&c.helpers))
    {
        let d = derive(c);
        let ts = emit(&d);
        let text = ts.to_string();
        assert!(!text.contains("compile_error"), "{}: {text}", c.name);
        let file: syn::File = syn::parse2(ts).unwrap_or_else(|e| panic!("{}: {e}\n{text}", c.name));
        let fns: Vec<String> = file
            .items
            .iter()
            .filter_map(|i| match i {
                syn::Item::Fn(f) => Some(f.sig.ident.to_string()),
                _ => None,
            })
            .collect();
        for want in ["_jvp", "_vjp"] {
            let want = format!("{}{want}", c.fname);
            assert!(fns.contains(&want), "{}: no {want}", c.name);
        }
        for want in ["primal", "jvp", "lin", "lin_t"] {
            let want = format!("__linad_{}_{want}", c.fname);
            assert!(fns.contains(&want), "{}: no {want}", c.name);
        }
    }
}

#[test]
fn public_signatures() {
    let c = &cases()[0];
    let ts = emit(&derive(c));
    let file: syn::File = syn::parse2(ts).unwrap();
    let sig_of = |name: &str| {
        file.items
            .iter()
            .find_map(|i| match i {
                syn::Item::Fn(f) if f.sig.ident == name => {
                    let s = &f.sig;
                    Some(quote!(#s).to_string())
                }
                _ => None,
            })
            .unwrap()
    };
    assert_eq!(
        sig_of("f_jvp"),
        quote!(fn f_jvp(x: f64, w: &Array1<f64>, n: usize, d_x: f64, d_w: &Array1<f64>) -> (f64, f64)).to_string()
    );
    assert_eq!(
        sig_of("f_vjp"),
        quote!(fn f_vjp(x: f64, w: &Array1<f64>, n: usize, ct: f64) -> (f64, (f64, ::linad::ndarray::Array1<f64>))).to_string()
    );
}

/// A tool, not a test (it checks nothing, so it is ignored): writes every
/// case as a module with its `check()` into `$LINAD_EMIT_OUT`, plus a
/// `mod.rs` whose `check_all()` calls them all (the hand-written cases, or
/// with `$LINAD_EMIT_RANDOM=<dir>` the random programs read from `<dir>`, see
/// [`random_cases`]), for a scratch crate depending on `linad` to compile and
/// run (see the module doc); without `LINAD_EMIT_OUT` it does nothing.
/// `LINAD_EMIT_OUT=<dir> cargo test --release -p ad-macros --lib
/// emit::tests::write_cases -- --ignored`.
#[test]
#[ignore]
fn write_cases() {
    let Ok(dir) = std::env::var("LINAD_EMIT_OUT") else {
        return;
    };
    let cases = match std::env::var("LINAD_EMIT_RANDOM") {
        Ok(d) => random_cases(std::path::Path::new(&d)),
        Err(_) => cases(),
    };
    let dir = std::path::Path::new(&dir);
    std::fs::create_dir_all(dir).unwrap();
    let mut mods = TokenStream::new();
    let mut calls = TokenStream::new();
    for c in cases {
        let d = derive(&c);
        let mut ts = emit(&d);
        ts.extend(check_fn(&c, &d));
        for h in &c.helpers {
            ts.extend(emit(&derive(h)));
        }
        let text = format!(
            "#![allow(unused_imports)]\nuse ::linad::ndarray::{{Array1, Array2, Array3, ArrayView1, ArrayView2}};\n{}\n{ts}\n",
            c.rust
        );
        let path = dir.join(format!("{}.rs", c.name));
        std::fs::write(&path, text).unwrap();
        let _ = std::process::Command::new("rustfmt")
            .args(["--edition", "2021"])
            .arg(&path)
            .status();
        let m = format_ident!("{}", c.name);
        mods.extend(quote!(pub mod #m;));
        let label = c.name;
        calls.extend(quote!(println!("{}", #label); #m::check();));
    }
    let text = format!("{mods}\npub fn check_all() {{ {calls} }}\n");
    std::fs::write(dir.join("mod.rs"), text).unwrap();
}

fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

/// Random programs written by a driver of ad-core-ir's property-test
/// generator: `<dir>/caseN.ir` and `<dir>/caseN.args` (one argument per line:
/// `f64 <bits hex>`, `i64 <n>`, `arr <rank> <dims..> <bits hex..>`, then
/// `wrt <bool..>`). Parameters get Rust names `p0..`, arrays passed by
/// reference, view and value in turn, `i64` as `usize`.
fn random_cases(dir: &std::path::Path) -> Vec<Case> {
    let mut all = vec![];
    for k in 0.. {
        let Ok(ir) = std::fs::read_to_string(dir.join(format!("case{k}.ir"))) else {
            break;
        };
        let args_text = std::fs::read_to_string(dir.join(format!("case{k}.args"))).unwrap();
        let prog = parse_program(&ir).unwrap();
        let f = prog.func("f").unwrap();
        let mut args = vec![];
        let mut wrt = vec![];
        for line in args_text.lines() {
            let w: Vec<&str> = line.split_whitespace().collect();
            let bits = |s: &str| f64::from_bits(u64::from_str_radix(s, 16).unwrap());
            match w[0] {
                "f64" => args.push(Value::F64(bits(w[1]))),
                "i64" => args.push(Value::I64(w[1].parse().unwrap())),
                "arr" => {
                    let r: usize = w[1].parse().unwrap();
                    let dims: Vec<usize> = w[2..2 + r].iter().map(|d| d.parse().unwrap()).collect();
                    let xs: Vec<f64> = w[2 + r..].iter().map(|x| bits(x)).collect();
                    args.push(arr(&dims, &xs));
                }
                "wrt" => wrt = w[1..].iter().map(|b| *b == "true").collect(),
                other => panic!("bad argument line {other}"),
            }
        }
        let mut params = vec![];
        let mut wrt_names = vec![];
        for (j, v) in f.params.iter().enumerate() {
            let name = leak(format!("p{j}"));
            let passing = [Passing::Ref, Passing::View, Passing::Owned][j % 3];
            let (ty, kind) = match f.vars.ty(*v) {
                ad_core_ir::types::Ty::Scalar(ad_core_ir::types::Scalar::F64) => {
                    ("f64".to_string(), ParamKind::F64)
                }
                ad_core_ir::types::Ty::Scalar(ad_core_ir::types::Scalar::I64) => (
                    "usize".to_string(),
                    ParamKind::Int(syn::parse_str("usize").unwrap()),
                ),
                ad_core_ir::types::Ty::Array { rank, .. } => {
                    let t = match passing {
                        Passing::Ref => {
                            format!("&::linad::ndarray::Array<f64, ::linad::ndarray::Ix{rank}>")
                        }
                        Passing::View => {
                            format!("::linad::ndarray::ArrayView<f64, ::linad::ndarray::Ix{rank}>")
                        }
                        Passing::Owned => {
                            format!("::linad::ndarray::Array<f64, ::linad::ndarray::Ix{rank}>")
                        }
                        Passing::Slice => "&[f64]".to_string(),
                        Passing::VecRef => "&Vec<f64>".to_string(),
                        Passing::Vec => "Vec<f64>".to_string(),
                        Passing::Fixed | Passing::FixedRef => {
                            unreachable!("the emitter tests take no fixed-size arrays")
                        }
                    };
                    (
                        t,
                        ParamKind::F64Array {
                            rank: *rank,
                            passing,
                        },
                    )
                }
                t => panic!("case{k}: parameter type {t}"),
            };
            if wrt.get(j).copied().unwrap_or(false) && kind.is_differentiable() {
                wrt_names.push(name);
            }
            params.push(P(name, leak(ty), kind));
        }
        let (_, _, rtys, _) = ad_core_ir::typing::func_sig(f);
        let outs: Option<Vec<Out>> = rtys
            .iter()
            .map(|t| match t {
                ad_core_ir::types::Ty::Scalar(ad_core_ir::types::Scalar::F64) => Some(Out::F64),
                ad_core_ir::types::Ty::Array {
                    rank,
                    elem: ad_core_ir::types::Scalar::F64,
                } => Some(Out::Array(*rank)),
                _ => None,
            })
            .collect();
        // Integer results have no place in a user signature.
        let Some(outs) = outs else { continue };
        let out = if outs.len() == 1 {
            outs.into_iter().next().unwrap()
        } else {
            Out::Tuple(outs)
        };
        if wrt_names.is_empty() {
            continue;
        }
        all.push(Case {
            name: leak(format!("case{k}")),
            ir: leak(ir),
            params,
            wrt: Some(wrt_names),
            out,
            args,
            ..Default::default()
        });
    }
    all
}
