//! The JVP pass (`ad_core_ir::jvp`): on small programs of `fixtures/`, alone
//! (`common/passes.rs`), the tangents it computes are the hand-computed
//! derivatives; on random programs (`common/gen/`), through the driver, they
//! agree with central finite differences.
//!
//! `PROPTEST_CASES` sets the number of cases (default 256);
//! `LINAD_GEN_DISABLE=loop,fold` switches constructs off (see `GenConfig`);
//! `LINAD_NO_SIMPLIFY` runs the driver without the simplifier.

mod common;
mod fixtures;

use ad_core_ir::interp::Value;
use common::passes::{assert_close, eval, jvp};
use common::props::{below, derive, fail, run_prop};

/// `f__jvp(args ; dx)` of a fixture's function: its primal results (checked
/// bit for bit against the function's) and its tangents.
fn tangents(fixture: &str, args: &[Value], wrt: &[bool], dx: &[Value]) -> Vec<Value> {
    let mut p = fixtures::program(fixture);
    let f = p.funcs[0].name.clone();
    let j = jvp(&mut p, &f, wrt);
    let (y, _) = eval(&p, &f, args, &[]);
    let (yj, dy) = eval(&p, &j, args, dx);
    assert!(
        y.len() == yj.len() && y.iter().zip(&yj).all(|(a, b)| a.bits_eq(b)),
        "primal results differ: {y:?} vs {yj:?}"
    );
    dy
}

/// `f(x, y) = x*y + sin x`: `df = (y + cos x) dx + x dy`.
#[test]
fn jvp_of_a_scalar_function_is_its_differential() {
    let (x, y, dx, dy) = (0.7, -1.3, 0.5, 2.0);
    let args = [Value::F64(x), Value::F64(y)];
    let d = tangents(
        fixtures::X_TIMES_Y_PLUS_SIN_X,
        &args,
        &[true, true],
        &[Value::F64(dx), Value::F64(dy)],
    );
    assert_close(&d, &[Value::F64((y + x.cos()) * dx + x * dy)], 1e-14);
}

/// With respect to `y` alone, `f__jvp` has one tangent parameter and
/// `df = x dy`.
#[test]
fn jvp_differentiates_only_the_flagged_parameters() {
    let (x, y, dy) = (0.7, -1.3, 2.0);
    let args = [Value::F64(x), Value::F64(y)];
    let d = tangents(
        fixtures::X_TIMES_Y_PLUS_SIN_X,
        &args,
        &[false, true],
        &[Value::F64(dy)],
    );
    assert_close(&d, &[Value::F64(x * dy)], 1e-14);
}

/// `x^n` by a loop: `d(x^n) = n x^(n-1) dx` (`n` is an integer, never
/// differentiated).
#[test]
fn jvp_of_a_loop_carries_the_tangent_through_the_state() {
    let (x, n, dx) = (1.1, 5, 0.3);
    let d = tangents(
        fixtures::POWER_BY_LOOP,
        &[Value::F64(x), Value::I64(n)],
        &[true, false],
        &[Value::F64(dx)],
    );
    assert_close(
        &d,
        &[Value::F64(n as f64 * x.powi(n as i32 - 1) * dx)],
        1e-14,
    );
}

/// `dot(u, v)` by a build and a sum: `d = du·v + u·dv`.
#[test]
fn jvp_of_a_build_and_a_sum_is_the_product_rule() {
    let u = [0.5, -1.0, 2.0, 0.25];
    let v = [1.5, 0.5, -0.75, 3.0];
    let du = [0.1, 0.2, -0.3, 0.4];
    let dv = [-1.0, 0.5, 0.25, 2.0];
    let vec = |xs: &[f64]| Value::f64s(&[xs.len()], xs.to_vec());
    let d = tangents(
        fixtures::DOT_BY_BUILD_AND_SUM,
        &[vec(&u), vec(&v)],
        &[true, true],
        &[vec(&du), vec(&dv)],
    );
    let want: f64 = (0..4).map(|i| du[i] * v[i] + u[i] * dv[i]).sum();
    assert_close(&d, &[Value::F64(want)], 1e-14);
}

/// `tanh(A x)` by a matmul and a map: `d = (1 - tanh²(A x)) ⊙ (dA x + A dx)`.
#[test]
fn jvp_of_a_matmul_and_a_map_is_the_chain_rule() {
    let a = [0.1, 0.2, -0.3, 0.4, -0.5, 0.6];
    let x = [1.0, -2.0, 0.5];
    let da = [0.5, -0.25, 1.0, 0.0, 0.75, -1.0];
    let dx = [0.2, 0.1, -0.4];
    let mat = |xs: &[f64]| Value::f64s(&[2, 3], xs.to_vec());
    let vec = |xs: &[f64]| Value::f64s(&[xs.len()], xs.to_vec());
    let d = tangents(
        fixtures::MATVEC_TANH,
        &[mat(&a), vec(&x)],
        &[true, true],
        &[mat(&da), vec(&dx)],
    );
    let want: Vec<f64> = (0..2)
        .map(|i| {
            let row = |m: &[f64], v: &[f64]| (0..3).map(|j| m[3 * i + j] * v[j]).sum::<f64>();
            let t = row(&a, &x).tanh();
            (1.0 - t * t) * (row(&da, &x) + row(&a, &dx))
        })
        .collect();
    assert_close(&d, &[vec(&want)], 1e-14);
}

/// (a) jvp agrees with central finite differences.
#[test]
fn prop_jvp_matches_finite_differences() {
    run_prop("jvp vs finite differences", |c| {
        let (_, r) = derive(c)?;
        if !below(r.fd_rel_err, 1e-5) {
            return Err(fail(format!("fd_rel_err = {:e}; {r:?}", r.fd_rel_err)));
        }
        Ok(())
    });
}
