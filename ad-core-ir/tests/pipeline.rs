//! End-to-end: jvp, unzip and transpose of small hand-written functions
//! (most of them in `fixtures/`), checked against the interpreter.

mod fixtures;

use ad_core_ir::build::FuncBuilder;
use ad_core_ir::interp::Value;
use ad_core_ir::ir::*;
use ad_core_ir::testing::{check_derivatives, Report};
use ad_core_ir::types::Ty;

fn assert_good(r: &Report) {
    assert!(r.jvp_primal_exact, "jvp primal differs: {r:?}");
    assert!(r.fwd_primal_exact, "fwd primal differs: {r:?}");
    assert!(r.fd_rel_err < 1e-6, "jvp vs finite differences: {r:?}");
    assert!(r.lin_vs_jvp < 1e-12, "lin vs jvp: {r:?}");
    assert!(r.dot_rel_err < 1e-9, "dot-product identity: {r:?}");
}

#[test]
fn x_times_y_plus_sin_x() {
    let p = fixtures::program(fixtures::X_TIMES_Y_PLUS_SIN_X);
    let r = check_derivatives(
        &p,
        "f",
        &[Value::F64(0.7), Value::F64(-1.3)],
        &[true, true],
        1,
        1e-6,
    )
    .unwrap();
    assert_good(&r);
}

/// A random program (found by `prop_interchange_preserves_transposes`,
/// reduced) whose branch binds a tuple that a nested build reads: unzipped
/// without the simplifier, the tuple is a residual of the branch, and the
/// branch not taken yields a tuple of placeholders (an internal error
/// before).
const TUPLE_IN_A_BRANCH: &str = "
def h1(a0_0: f64, a1_1: [f64]) -> ([f64]) {
  let bld_3: [i64] = build [1] |i_2: i64| {
    yield 0
  }
  let gat_4: [f64] = gather a1_1, bld_3
  return gat_4
}

def f(x0_0: [[f64]], x1_1: f64, x2_2: [f64], x3_3: [f64]) -> ([[f64]]) {
  let lt_6: bool = lt 1, 2
  let if_7: [f64] = if lt_6 {
    yield x3_3
  } else {
    yield x3_3
  }
  let add_10: f64 = add x1_1, x1_1
  let lp_21: f64 = loop 1 (s_14: f64 = add_10) |i_13: i64| {
    let mul_15: i64 = mul 1, i_13
    let add_16: i64 = add mul_15, 0
    let ix_17: f64 = index x2_2[add_16]
    let add_18: f64 = add ix_17, ix_17
    let tanh_19: f64 = tanh add_18
    let add_20: f64 = add s_14, tanh_19
    yield add_20
  }
  let bld_29: [i64] = build [1] |i_28: i64| {
    yield 0
  }
  let if_50: [[f64]] = if lt_6 {
    let tup_31: ([[f64]],) = tuple x0_0
    let bld_49: [f64] = build [1] |j_32: i64| {
      let call_34: [f64] = call h1(x1_1, x3_3)
      let bld_38: [f64], bld_39: [f64] = build [1] |j_35: i64| {
        let clamp_36: f64 = clamp x1_1, -0.5, 0.5
        let ix_37: f64 = index call_34[0]
        yield ix_37, clamp_36
      }
      let bld_48: [f64] = build [1] |j_40: i64| {
        let bld_44: [i64] = build [2] |i_41: i64| {
          let eq_42: bool = eq i_41, 0
          let select_43: i64 = select eq_42, 0, 0
          yield select_43
        }
        let n_45: i64 = shape call_34, 0
        let sca_46: [[f64]] = scatter_add n_45, bld_44, x0_0
        let el_47: [[f64]] = untuple tup_31
        yield x1_1
      }
      yield x1_1
    }
    yield x0_0
  } else {
    yield x0_0
  }
  return if_50
}
";

#[test]
fn tuple_residual_in_a_branch() {
    use ad_core_ir::driver::{differentiate, Options};
    let p = ad_core_ir::parse::parse_program(TUPLE_IN_A_BRANCH).unwrap();
    let wrt = [true, false, false, false];
    let raw = Options {
        simplify: false,
        ..Options::default()
    };
    differentiate(&p, "f", &wrt, &raw).unwrap();
    let args = [
        Value::f64s(&[2, 2], [0.5, -0.9, -0.8, 0.6]),
        Value::F64(-0.9),
        Value::f64s(&[1], [-0.4]),
        Value::f64s(&[6], [0.9, -0.8, 0.7, -0.1, 0.1, -0.3]),
    ];
    assert_good(&check_derivatives(&p, "f", &args, &wrt, 3, 1e-6).unwrap());
}

/// With `Options::trace` the driver records every pass's output, in order,
/// the last two being the final `f__lin_t` and the simplified primal `f`;
/// without it, nothing, and the derived program is the same either way.
#[test]
fn the_trace_records_every_pass_in_order() {
    use ad_core_ir::driver::{differentiate, Options};
    use ad_core_ir::pretty::func_to_string;
    let p = fixtures::program(fixtures::X_TIMES_Y_PLUS_SIN_X);
    let traced = Options {
        trace: true,
        ..Options::default()
    };
    let d = differentiate(&p, "f", &[true, true], &traced).unwrap();
    let passes: Vec<&str> = d.trace.iter().map(|(pass, _)| pass.as_str()).collect();
    assert_eq!(
        passes,
        [
            "normalize",
            "exact",
            "jvp",
            "dupdrop",
            "simplify",
            "unzip",
            "simplify lin",
            "prune",
            "simplify fwd",
            "transpose",
            "dupdrop",
            "simplify",
            "simplify primal"
        ]
    );
    let lin_t = d.program.func(&d.names.lin_t).unwrap();
    assert_eq!(d.trace[d.trace.len() - 2].1, func_to_string(lin_t));
    let primal = d.program.func("f").unwrap();
    assert_eq!(d.trace.last().unwrap().1, func_to_string(primal));
    let quiet = differentiate(&p, "f", &[true, true], &Options::default()).unwrap();
    assert!(quiet.trace.is_empty());
    assert_eq!(quiet.program, d.program);
}

/// Checking only the final functions (the macro's setting) derives the
/// same programs as checking every pass: every function of every fixture
/// that differentiates in all its parameters.
#[test]
fn checking_only_final_functions_derives_the_same_programs() {
    use ad_core_ir::driver::{differentiate, Options};
    let final_only = Options {
        check_every_pass: false,
        ..Options::default()
    };
    let mut derived = 0;
    for (file, text) in fixtures::ALL {
        let p = fixtures::program(text);
        for f in &p.funcs {
            let wrt = vec![true; f.params.len()];
            let Ok(every) = differentiate(&p, &f.name, &wrt, &Options::default()) else {
                continue;
            };
            let last = differentiate(&p, &f.name, &wrt, &final_only)
                .unwrap_or_else(|e| panic!("{file} {}: {e:?}", f.name));
            assert_eq!(last.program, every.program, "{file} {}", f.name);
            derived += 1;
        }
    }
    assert!(
        derived >= 10,
        "only {derived} fixture functions differentiate"
    );
}

/// Errors reach the driver's caller by their kind: a construct reverse
/// mode cannot handle (raised by transposition's shapes) is the user's
/// `Unsupported`, with its message as raised.
#[test]
fn an_unsupported_construct_is_the_users_error() {
    use ad_core_ir::driver::{differentiate, DriverError, Options};
    let p = ad_core_ir::parse::parse_program(
        "def f(x_0: f64, n_1: i64) -> ([[f64]]) {
  let b_2: [[f64]] = build [n_1] |i_3: i64| {
    let s_4: f64 = mul x_0, x_0
    let r_5: [f64] = broadcast s_4, [3]
    yield r_5
  }
  return b_2
}",
    )
    .unwrap();
    let e = differentiate(&p, "f", &[true, false], &Options::default()).unwrap_err();
    assert_eq!(
        e,
        DriverError::Unsupported {
            msg: "reverse mode of a loop, build or map whose differentiable per-iteration (or per-element) result is an array; return scalars per element".into(),
            src: None,
        }
    );
}

/// `while x > 1 { x = x / 2 }` as the front end lowers it: the trip count,
/// then a counted loop of the same body.
#[test]
fn halving_while_loop() {
    let p = fixtures::program(fixtures::HALVING_WHILE_LOOP);
    // 37 halvings by 0.9: x (0.45)^n with n trips.
    let out = ad_core_ir::interp::run(&p, "halve", &[Value::F64(37.0), Value::F64(0.9)], &[])
        .unwrap()
        .0;
    assert_eq!(out[1], Value::I64(5));
    let r = check_derivatives(
        &p,
        "halve",
        &[Value::F64(37.0), Value::F64(0.9)],
        &[true, true],
        1,
        1e-6,
    )
    .unwrap();
    assert_good(&r);
    // The printed form parses back to the same program.
    let text = ad_core_ir::pretty::program_to_string(&p);
    assert!(text.contains("while ("), "{text}");
    let q = ad_core_ir::parse::parse_program(&text).unwrap();
    assert_eq!(ad_core_ir::pretty::program_to_string(&q), text);
}

#[test]
fn power_by_loop() {
    let p = fixtures::program(fixtures::POWER_BY_LOOP);
    let r = check_derivatives(
        &p,
        "pow",
        &[Value::F64(1.1), Value::I64(5)],
        &[true, false],
        2,
        1e-6,
    )
    .unwrap();
    assert_good(&r);
}

#[test]
fn dot_by_build_and_sum() {
    let p = fixtures::program(fixtures::DOT_BY_BUILD_AND_SUM);
    let u0 = Value::f64s(&[4], vec![0.5, -1.0, 2.0, 0.25]);
    let v0 = Value::f64s(&[4], vec![1.5, 0.5, -0.75, 3.0]);
    let r = check_derivatives(&p, "dot", &[u0, v0], &[true, true], 3, 1e-6).unwrap();
    assert_good(&r);
}

#[test]
fn matvec_by_matmul() {
    let p = fixtures::program(fixtures::MATVEC_TANH);
    let a0 = Value::f64s(&[2, 3], vec![0.1, 0.2, -0.3, 0.4, -0.5, 0.6]);
    let x0 = Value::f64s(&[3], vec![1.0, -2.0, 0.5]);
    let r = check_derivatives(&p, "mv", &[a0, x0], &[true, true], 4, 1e-6).unwrap();
    assert_good(&r);
}

#[test]
fn calls_of_extern_functions_checkpoint_at_the_call() {
    use ad_core_ir::driver::{declare_extern, differentiate, Options};
    use ad_core_ir::pretty::func_to_string;
    let mut p = Program::default();
    declare_extern(&mut p, "g", &[Ty::F64, Ty::f64s(1)], &[Ty::F64]);
    let mut b = FuncBuilder::new(&p, "f");
    let x = b.param("x", Ty::F64);
    let w = b.param("w", Ty::f64s(1));
    let n = b.param("n", Ty::I64);
    let (st, _) = b.loop_(n.into(), false, &[x.into()], |b, _i, s| {
        let xx = b.prim(Prim::Mul, &[s[0].into(), s[0].into()]);
        let y = b.call("g", &[xx.into(), w.into()])[0];
        (vec![y.into()], vec![])
    });
    let f = b.finish(vec![st[0].into()], vec![]);
    p.insert(f);
    let d = differentiate(&p, "f", &[true, true, false], &Options::default()).unwrap();
    let lin_t = func_to_string(d.program.func(&d.names.lin_t).unwrap());
    assert!(lin_t.contains("call g__lin_t("), "{lin_t}");
    let fwd = func_to_string(d.program.func(&d.names.fwd).unwrap());
    assert!(fwd.contains("call g("), "{fwd}");
}

/// `f(x, w, a) = g(a, w * x)` with `g` declared linear in its second
/// parameter: where only the linear argument has a tangent, forward mode
/// applies `g` itself (`g__linear`) and reverse mode its transpose
/// (`g__linear_t`), keeping only `a`; when `a` has a tangent too, the general
/// checkpointing rule (`g__lin`, `g__lin_t`) applies.
#[test]
fn calls_of_linear_externs_apply_the_function_and_its_transpose() {
    use ad_core_ir::driver::{declare_linear_extern, differentiate, Options};
    use ad_core_ir::pretty::func_to_string;
    let mut p = Program::default();
    declare_linear_extern(
        &mut p,
        "g",
        &[Ty::f64s(2), Ty::f64s(1)],
        &[Ty::f64s(1)],
        &[false, true],
    );
    let mut b = FuncBuilder::new(&p, "f");
    let x = b.param("x", Ty::f64s(1));
    let w = b.param("w", Ty::F64);
    let a = b.param("a", Ty::f64s(2));
    let wx = b.map(&[x.into()], |b, e| {
        vec![b.prim(Prim::Mul, &[w.into(), e[0].into()]).into()]
    })[0];
    let y = b.call("g", &[a.into(), wx.into()])[0];
    let f = b.finish(vec![y.into()], vec![]);
    p.insert(f);
    let show =
        |d: &ad_core_ir::driver::Derivatives, f: &str| func_to_string(d.program.func(f).unwrap());
    let d = differentiate(&p, "f", &[true, true, false], &Options::default()).unwrap();
    let (lin, lin_t) = (show(&d, &d.names.lin), show(&d, &d.names.lin_t));
    assert!(lin.contains("call g__linear("), "{lin}");
    assert!(lin_t.contains("call g__linear_t("), "{lin_t}");
    assert!(!lin_t.contains("g__lin_t("), "{lin_t}");
    let fwd = show(&d, &d.names.fwd);
    assert!(fwd.contains("call g("), "{fwd}");
    // `a` carries a tangent: g is linearised as any extern.
    let d = differentiate(&p, "f", &[true, true, true], &Options::default()).unwrap();
    let lin_t = show(&d, &d.names.lin_t);
    assert!(lin_t.contains("call g__lin_t("), "{lin_t}");
    assert!(!lin_t.contains("g__linear"), "{lin_t}");
}

/// `f(x, w, a) = g(w * x, a)` with `g` declared differentiable with respect
/// to its first parameter alone: where `a` has no tangent, both modes call
/// the restricted derivatives `g__w__*` with `x`'s tangent only (no zero
/// tangent of `a`); when `a` has one, the general ones.
#[test]
fn calls_of_restricted_externs_pass_only_the_flagged_tangents() {
    use ad_core_ir::driver::{declare_wrt_extern, differentiate, Options};
    use ad_core_ir::pretty::func_to_string;
    let mut p = Program::default();
    declare_wrt_extern(
        &mut p,
        "g",
        &[Ty::f64s(1), Ty::f64s(2)],
        &[Ty::f64s(1)],
        &[true, false],
    );
    let mut b = FuncBuilder::new(&p, "f");
    let x = b.param("x", Ty::f64s(1));
    let w = b.param("w", Ty::F64);
    let a = b.param("a", Ty::f64s(2));
    let wx = b.map(&[x.into()], |b, e| {
        vec![b.prim(Prim::Mul, &[w.into(), e[0].into()]).into()]
    })[0];
    let y = b.call("g", &[wx.into(), a.into()])[0];
    let f = b.finish(vec![y.into()], vec![]);
    p.insert(f);
    let show =
        |d: &ad_core_ir::driver::Derivatives, f: &str| func_to_string(d.program.func(f).unwrap());
    let d = differentiate(&p, "f", &[true, true, false], &Options::default()).unwrap();
    let jvp = show(&d, &d.names.jvp);
    assert!(jvp.contains("call g__w__jvp("), "{jvp}");
    assert!(!jvp.contains("lzero"), "no zero tangent of `a`: {jvp}");
    let (lin, lin_t) = (show(&d, &d.names.lin), show(&d, &d.names.lin_t));
    assert!(lin.contains("call g__w__lin("), "{lin}");
    assert!(lin_t.contains("call g__w__lin_t("), "{lin_t}");
    let fwd = show(&d, &d.names.fwd);
    assert!(fwd.contains("call g__w("), "{fwd}");
    // `a` carries a tangent: the derivatives with respect to everything.
    let d = differentiate(&p, "f", &[true, true, true], &Options::default()).unwrap();
    let lin_t = show(&d, &d.names.lin_t);
    assert!(lin_t.contains("call g__lin_t("), "{lin_t}");
    assert!(!lin_t.contains("g__w"), "{lin_t}");
}

/// `f(x, a) = g(x, a) + sum_k g(x, a)` with `g` keeping its residuals: the
/// call at the top level of `f` keeps them (`g__fwdres` on the primal side,
/// `g__linres` / `g__linres_t` on the linear sides read them, no primal of
/// `g` recomputed), the call in the loop checkpoints as before (`g__lin`).
#[test]
fn top_level_calls_of_externs_keep_their_residuals() {
    use ad_core_ir::driver::{declare_extern, declare_extern_residuals, differentiate, Options};
    use ad_core_ir::pretty::func_to_string;
    let mut p = Program::default();
    let (params, results) = ([Ty::F64, Ty::f64s(1)], [Ty::F64]);
    declare_extern(&mut p, "g", &params, &results);
    declare_extern_residuals(&mut p, "g", &params, &results, &[true, true], "GRes");
    let mut b = FuncBuilder::new(&p, "f");
    let x = b.param("x", Ty::F64);
    let a = b.param("a", Ty::f64s(1));
    let y = b.call("g", &[x.into(), a.into()])[0];
    let n = b.shape(a.into(), 0);
    let (st, _) = b.loop_(n.into(), false, &[y.into()], |b, _, s| {
        let z = b.call("g", &[s[0].into(), a.into()])[0];
        let t = b.prim(Prim::Add, &[s[0].into(), z.into()]);
        (vec![t.into()], vec![])
    });
    let f = b.finish(vec![st[0].into()], vec![]);
    p.insert(f);
    let d = differentiate(&p, "f", &[true, true], &Options::default()).unwrap();
    let show = |f: &str| func_to_string(d.program.func(f).unwrap());
    let (fwd, lin, lin_t) = (show(&d.names.fwd), show(&d.names.lin), show(&d.names.lin_t));
    assert!(
        fwd.contains("call g__fwdres(") && fwd.contains("opaque<GRes>"),
        "{fwd}"
    );
    assert!(
        lin.contains("call g__linres(") && lin.contains("call g__lin("),
        "{lin}"
    );
    assert!(
        lin_t.contains("call g__linres_t(") && lin_t.contains("call g__lin_t("),
        "{lin_t}"
    );
}

/// The program of `fixtures/element_writes.linad` (a loop writing one
/// element of a local array per iteration) and an argument of length `n`.
fn element_writes(n: usize) -> (Program, Vec<Value>) {
    let xs: Vec<f64> = (0..n).map(|k| (k as f64 * 0.37).sin()).collect();
    (
        fixtures::program(fixtures::ELEMENT_WRITES),
        vec![Value::f64s(&[n], xs)],
    )
}

/// Issue 8, defect 10: in reverse mode an element write `a[i] = v` costs
/// O(1) (its transpose takes the element's cotangent and zeroes it in place),
/// so the reverse/primal work ratio of a loop of element writes does not grow
/// with `n`. (Before: the cotangent array was duplicated every iteration, a
/// ratio growing like `n`.)
#[test]
fn element_writes_in_a_loop_are_linear_in_reverse() {
    let ratio = |n: usize| {
        let (p, args) = element_writes(n);
        let r = check_derivatives(&p, "writes", &args, &[true], 3, 1e-6).unwrap();
        assert_good(&r);
        r.transpose_work_ratio()
    };
    let (small, large) = (ratio(100), ratio(10_000));
    eprintln!("reverse/primal work: {small:.2} at n = 100, {large:.2} at n = 10000");
    assert!(
        large < 1.5 * small && large < 10.0,
        "reverse/primal work: {small:.2} at n = 100, {large:.2} at n = 10000"
    );
}

/// `for k in 0..n { s = fold_j tanh(x[j] + s) }` with the inner trip count
/// `m` (fixed across the outer loop, first program) or `k` (triangular,
/// second): a fixed-shape inner residual stack is stored across the outer
/// loop, so the reverse pass does not run `tanh` again; a triangular one is
/// recomputed per outer iteration (stacks are never ragged). Both are
/// checked against finite differences and the dot-product identity.
#[test]
fn nested_loop_residual_stacks_are_stored_when_their_shape_is_fixed() {
    use ad_core_ir::driver::{differentiate, Options};
    use ad_core_ir::pretty::func_to_string;
    let text = |inner: &str| {
        format!(
            "def f(x_0: [f64], n_1: i64) -> (f64) {{
  let m_2: i64 = shape x_0, 0
  let lp_3: f64 = loop n_1 (s_4: f64 = 0.5) |k_5: i64| {{
    let in_6: f64 = loop {inner} (t_7: f64 = s_4) |j_8: i64| {{
      let ix_9: f64 = index x_0[j_8]
      let a_10: f64 = add ix_9, t_7
      let th_11: f64 = tanh a_10
      yield th_11
    }}
    yield in_6
  }}
  return lp_3
}}"
        )
    };
    for (inner, stored) in [("m_2", true), ("k_5", false)] {
        let p = ad_core_ir::parse::parse_program(&text(inner)).unwrap();
        let x = Value::f64s(&[4], vec![0.3, -0.2, 0.7, 0.1]);
        let r = check_derivatives(&p, "f", &[x, Value::I64(3)], &[true, false], 4, 1e-6).unwrap();
        assert_good(&r);
        let d = differentiate(&p, "f", &[true, false], &Options::default()).unwrap();
        let lin_t = func_to_string(d.program.func(&d.names.lin_t).unwrap());
        assert_eq!(!lin_t.contains("tanh"), stored, "{inner}:\n{lin_t}");
    }
}

/// The residual policy for arrays of fixed shape in a loop body (issue 16,
/// item 2): the centred points `c = x - m[k]` (an elementwise map of one
/// cheap operation on views of the parameters) are recomputed by the linear
/// side, not stacked per iteration; `exp(x - m[k])` (a libm call per
/// element) is stored. Both are checked against finite differences and the
/// dot-product identity.
#[test]
fn cheap_elementwise_arrays_in_a_loop_are_recomputed_dear_ones_stored() {
    use ad_core_ir::driver::{differentiate, Options};
    use ad_core_ir::pretty::func_to_string;
    let text = |elem: &str| {
        format!(
            "def f(x_0: [[f64]], m_1: [[f64]]) -> (f64) {{
  let n_2: i64 = shape m_1, 0
  let r_3: i64 = shape x_0, 0
  let c_4: i64 = shape x_0, 1
  let lp_5: f64 = loop n_2 (s_6: f64 = 0.0) |k_7: i64| {{
    let row_8: [f64] = index m_1[k_7]
    let b_9: [[f64]] = broadcast row_8, [r_3, c_4], axes=[1]
    let c_10: [[f64]] = map(x_0, b_9) |a_11: f64, b_12: f64| {{
      let d_13: f64 = sub a_11, b_12
{elem}
    }}
    let e_15: [[f64]] = map(c_10, c_10) |p_16: f64, q_17: f64| {{
      let w_18: f64 = mul p_16, q_17
      yield w_18
    }}
    let t_19: f64 = reduce_sum e_15
    let u_20: f64 = add s_6, t_19
    yield u_20
  }}
  return lp_5
}}"
        )
    };
    let cheap = "      yield d_13";
    let dear = "      let x_14: f64 = exp d_13\n      yield x_14";
    for (elem, recomputed) in [(cheap, true), (dear, false)] {
        let p = ad_core_ir::parse::parse_program(&text(elem)).unwrap();
        let x = Value::f64s(
            &[3, 4],
            (0..12).map(|k| (k as f64 * 0.3).sin()).collect::<Vec<_>>(),
        );
        let m = Value::f64s(
            &[2, 4],
            (0..8).map(|k| (k as f64 * 0.7).cos()).collect::<Vec<_>>(),
        );
        let r = check_derivatives(&p, "f", &[x, m], &[true, true], 4, 1e-6).unwrap();
        assert_good(&r);
        let d = differentiate(&p, "f", &[true, true], &Options::default()).unwrap();
        let lin_t = func_to_string(d.program.func(&d.names.lin_t).unwrap());
        let has_sub = lin_t.contains(" = sub ");
        let has_exp = lin_t.contains(" = exp ");
        assert_eq!(has_sub, recomputed, "{elem}:\n{lin_t}");
        assert!(!has_exp, "exp is stored, not recomputed:\n{lin_t}");
    }
}

/// The residual policy for arrays of fixed shape in a build body (issue 16,
/// item 5): the exponentials of a per-point log-sum-exp (a nested loop's
/// stack, a libm call per element) are stored, one row per point; a stack
/// of products (cheap) is recomputed by the linear side. Both are checked
/// against finite differences and the dot-product identity.
#[test]
fn dear_arrays_in_a_build_are_stored_cheap_ones_recomputed() {
    use ad_core_ir::driver::{differentiate, Options};
    use ad_core_ir::pretty::func_to_string;
    let text = |op: &str| {
        format!(
            "def f(x_0: [[f64]]) -> (f64) {{
  let n_1: i64 = shape x_0, 0
  let k_2: i64 = shape x_0, 1
  let b_3: [f64] = build [n_1] |i_4: i64| {{
    let lp_5: f64 = loop k_2 (s_6: f64 = 0.0) |j_7: i64| {{
      let v_8: f64 = index x_0[i_4, j_7]
      let e_9: f64 = {op} v_8, v_8
      let t_10: f64 = add s_6, e_9
      yield t_10
    }}
    let l_11: f64 = mul lp_5, lp_5
    yield l_11
  }}
  let r_12: f64 = reduce_sum b_3
  return r_12
}}"
        )
    };
    // `exp v` needs one operand: `e = exp(v) * v` keeps the body's shape.
    let dear = text("mul").replace(
        "let e_9: f64 = mul v_8, v_8",
        "let w_13: f64 = exp v_8\n      let e_9: f64 = mul w_13, v_8",
    );
    for (prog, stored) in [(dear, true), (text("mul"), false)] {
        let p = ad_core_ir::parse::parse_program(&prog).unwrap();
        let x = Value::f64s(
            &[5, 3],
            (0..15).map(|k| (k as f64 * 0.4).sin()).collect::<Vec<_>>(),
        );
        let r = check_derivatives(&p, "f", &[x], &[true], 4, 1e-6).unwrap();
        assert_good(&r);
        let d = differentiate(&p, "f", &[true], &Options::default()).unwrap();
        let lin_t = func_to_string(d.program.func(&d.names.lin_t).unwrap());
        assert!(!lin_t.contains(" = exp "), "exp recomputed:\n{lin_t}");
        let fwd = func_to_string(d.program.func(&d.names.fwd).unwrap());
        let stacked = fwd
            .lines()
            .any(|l| l.contains("= build") && l.contains("[[f64]]"));
        assert_eq!(stacked, stored, "{prog}\nfwd:\n{fwd}\nlin_t:\n{lin_t}");
    }
}

/// A loop nest updating an array `a` (the outer loop's state) whose inner
/// loop multiplies by two elements of `a`: the linear side needs those
/// elements, and it stores them (two scalars per outer iteration) rather than
/// recomputing them by a reload from `a`, which would stack all of `a` per
/// outer iteration. The vjp work ratio stays bounded as `a` grows (it grew
/// like `n` before).
#[test]
fn element_reads_of_an_enclosing_loops_array_are_stored() {
    use ad_core_ir::parse::parse_program;
    let text = "def f(x_0: [f64]) -> (f64) {
  let m_1: i64 = shape x_0, 0
  let lp_2: [f64] = loop m_1 (a_3: [f64] = x_0) |k_4: i64| {
    let in_5: f64 = loop 2 (t_6: f64 = 0.5) |j_7: i64| {
      let ix_8: f64 = index a_3[j_7]
      let s_9: f64 = mul t_6, ix_8
      let q_10: f64 = add s_9, 0.25
      yield q_10
    }
    let u_11: [f64] = update a_3[k_4] = in_5
    yield u_11
  }
  let r_12: f64 = reduce_sum lp_2
  return r_12
}";
    let p = parse_program(text).unwrap();
    let ratio = |n: usize| {
        let xs: Vec<f64> = (0..n).map(|k| 0.1 + (k as f64 * 0.7).sin()).collect();
        let r = check_derivatives(&p, "f", &[Value::f64s(&[n], xs)], &[true], 3, 1e-6).unwrap();
        assert_good(&r);
        r.vjp_work_ratio()
    };
    let (small, large) = (ratio(8), ratio(400));
    eprintln!("vjp/primal work: {small:.2} at n = 8, {large:.2} at n = 400");
    assert!(
        large < 2.0 * small,
        "{small:.2} at n = 8, {large:.2} at n = 400"
    );
}
