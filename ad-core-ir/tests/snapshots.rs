//! Snapshots of the pretty-printed primal, linear and transposed programs of
//! canonical functions (in `fixtures/`), so a reviewer can read what every
//! pass produces; each is also checked numerically and for work preservation.

mod fixtures;

use ad_core_ir::driver::{differentiate, Derivatives, Options};
use ad_core_ir::interp::Value;
use ad_core_ir::pretty::func_to_string;
use ad_core_ir::testing::check_derived;

/// Differentiates the fixture's function, checks it numerically, and renders
/// the three derived functions.
fn derive(fixture: &str, args: &[Value]) -> String {
    let p = fixtures::program(fixture);
    let f = &p.funcs[0];
    let name = f.name.clone();
    let wrt: Vec<bool> = f
        .params
        .iter()
        .map(|v| f.vars.ty(*v).is_differentiable())
        .collect();
    let d: Derivatives = differentiate(&p, &name, &wrt, &Options::default()).unwrap();
    let r = check_derived(&p, &d, &name, args, &wrt, 11, 1e-6).unwrap();
    assert!(
        r.fd_rel_err < 1e-6 && r.dot_rel_err < 1e-10 && r.fwd_primal_exact,
        "{r:?}"
    );
    assert!(
        r.transpose_work_ratio() <= 4.0,
        "transposed work ratio {} > 4: {r:?}",
        r.transpose_work_ratio()
    );
    eprintln!(
        "{name}: work f={} fwd={} lin={} lin_t={} (lin_t/f = {:.2}, (fwd+lin_t)/f = {:.2}); size f={} lin_t={} ({:.2})",
        r.ops[0],
        r.ops[1],
        r.ops[2],
        r.ops[3],
        r.transpose_work_ratio(),
        r.vjp_work_ratio(),
        r.sizes[0],
        r.sizes[1],
        r.transpose_size_ratio()
    );
    let mut out = String::new();
    for n in [&d.names.fwd, &d.names.lin, &d.names.lin_t] {
        out.push_str(&func_to_string(d.program.func(n).unwrap()));
        out.push('\n');
    }
    out
}

fn vec_val(xs: &[f64]) -> Value {
    Value::f64s(&[xs.len()], xs.to_vec())
}

#[test]
fn snap_x_times_y_plus_sin_x() {
    let out = derive(
        fixtures::X_TIMES_Y_PLUS_SIN_X,
        &[Value::F64(0.4), Value::F64(1.7)],
    );
    insta::assert_snapshot!(out);
}

#[test]
fn snap_power_by_loop() {
    let out = derive(fixtures::POWER_BY_LOOP, &[Value::F64(1.3), Value::I64(4)]);
    insta::assert_snapshot!(out);
}

#[test]
fn snap_dot_by_build_and_sum() {
    let out = derive(
        fixtures::DOT_BY_BUILD_AND_SUM,
        &[vec_val(&[0.5, -1.0, 2.0]), vec_val(&[1.5, 0.5, -0.75])],
    );
    insta::assert_snapshot!(out);
}

#[test]
fn snap_matvec_by_matmul() {
    let a0 = Value::f64s(&[2, 3], vec![0.1, 0.2, -0.3, 0.4, -0.5, 0.6]);
    let out = derive(fixtures::MATVEC, &[a0, vec_val(&[1.0, -2.0, 0.5])]);
    insta::assert_snapshot!(out);
}

#[test]
fn snap_logsumexp_with_max() {
    let out = derive(fixtures::LOGSUMEXP, &[vec_val(&[0.3, 2.1, -0.7, 1.2])]);
    insta::assert_snapshot!(out);
}

#[test]
fn snap_softmax_cross_entropy() {
    let out = derive(
        fixtures::SOFTMAX_CROSS_ENTROPY,
        &[
            vec_val(&[0.3, 2.1, -0.7, 1.2]),
            vec_val(&[0.1, 0.6, 0.1, 0.2]),
        ],
    );
    insta::assert_snapshot!(out);
}

#[test]
fn snap_sum_of_squares_reverse_allocates_no_zeros_or_one_hots() {
    let out = derive(fixtures::SUM_OF_SQUARES, &[vec_val(&[0.5, -1.5, 2.0])]);
    let lin_t = out
        .split("def sumsq__lin_t")
        .nth(1)
        .expect("transpose printed");
    assert!(
        !lin_t.contains("lzero"),
        "reverse program materialises a zero:\n{lin_t}"
    );
    assert!(
        !lin_t.contains("lupdate") && !lin_t.contains("lscatter"),
        "reverse program builds a one-hot:\n{lin_t}"
    );
    insta::assert_snapshot!(out);
}
