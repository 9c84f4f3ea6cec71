//! The unzip pass (`ad_core_ir::unzip`): `f__fwd` and `f__jvp` reproduce
//! the primal bit for bit, and `f__lin` on the residuals of `f__fwd`
//! reproduces the tangents of `f__jvp`: on small programs of `fixtures/`,
//! with the passes alone (`common/passes.rs`), and on random programs
//! (`common/gen/`) through the driver.
//!
//! `PROPTEST_CASES` sets the number of cases (default 256);
//! `LINAD_GEN_DISABLE=loop,fold` switches constructs off (see `GenConfig`);
//! `LINAD_NO_SIMPLIFY` runs the driver without the simplifier.

mod common;
mod fixtures;

use ad_core_ir::interp::Value;
use common::passes::{assert_close, directions, eval, jvp, unzip};
use common::props::{at_most, derive, derived_to_string, fail, jvp_tangents, run_prop};

/// JVP then unzip on a fixture's function; at `args`, in random directions:
/// `f__fwd`'s primal results are `f`'s bit for bit, and `f__lin` on
/// `f__fwd`'s residuals gives `f__jvp`'s tangents.
fn fwd_then_lin_reproduce_jvp(fixture: &str, args: &[Value], wrt: &[bool]) {
    let mut p = fixtures::program(fixture);
    let f = p.funcs[0].name.clone();
    let j = jvp(&mut p, &f, wrt);
    let u = unzip(&mut p, &j);
    let dx = directions(args, wrt, 5);
    let (y, _) = eval(&p, &f, args, &[]);
    let (_, dy) = eval(&p, &j, args, &dx);
    let (yr, _) = eval(&p, &u.fwd, args, &[]);
    let (ys, res) = yr.split_at(u.n_results);
    assert!(
        ys.len() == y.len() && ys.iter().zip(&y).all(|(a, b)| a.bits_eq(b)),
        "fwd's primal results differ: {ys:?} vs {y:?}"
    );
    let (_, dyl) = eval(&p, &u.lin, res, &dx);
    assert_close(&dyl, &dy, 1e-12);
}

#[test]
fn unzip_of_scalar_code() {
    fwd_then_lin_reproduce_jvp(
        fixtures::X_TIMES_Y_PLUS_SIN_X,
        &[Value::F64(0.7), Value::F64(-1.3)],
        &[true, true],
    );
}

/// The loop's states are residuals `f__lin` reads per trip.
#[test]
fn unzip_of_a_loop() {
    fwd_then_lin_reproduce_jvp(
        fixtures::POWER_BY_LOOP,
        &[Value::F64(1.1), Value::I64(5)],
        &[true, false],
    );
}

/// A build read by a loop, with respect to the array and the scalar.
#[test]
fn unzip_of_a_loop_over_a_build() {
    fwd_then_lin_reproduce_jvp(
        fixtures::LOOP_OVER_A_BUILD,
        &[
            Value::f64s(&[3], vec![0.3, -0.8, 1.1]),
            Value::F64(0.9),
            Value::I64(5),
        ],
        &[true, true, false],
    );
}

/// A while loop (its trip count a residual) followed by a counted loop.
#[test]
fn unzip_of_a_while_loop() {
    fwd_then_lin_reproduce_jvp(
        fixtures::HALVING_WHILE_LOOP,
        &[Value::F64(37.0), Value::F64(0.9)],
        &[true, true],
    );
}

/// Maps, reductions (a max among them) and a scalar shared by two maps.
#[test]
fn unzip_of_maps_and_reductions() {
    fwd_then_lin_reproduce_jvp(
        fixtures::SOFTMAX_CROSS_ENTROPY,
        &[
            Value::f64s(&[4], vec![0.3, 2.1, -0.7, 1.2]),
            Value::f64s(&[4], vec![0.1, 0.6, 0.1, 0.2]),
        ],
        &[true, true],
    );
}

/// (b) unzip: fwd and jvp reproduce the primal bit for bit, lin reproduces jvp.
/// (b) also for `f__vjp` where the loops fused: its primal results equal
/// `f`'s and its cotangents `f__lin_t`'s, bit for bit.
#[test]
fn prop_unzip_reproduces_jvp() {
    let fused = std::cell::Cell::new(0usize);
    run_prop("unzip reproduces jvp", |c| {
        let (d, r) = derive(c)?;
        fused.set(fused.get() + usize::from(r.vjp_exact.is_some()));
        if !(r.jvp_primal_exact && r.fwd_primal_exact) {
            return Err(fail(format!("primal results differ: {r:?}")));
        }
        if r.vjp_exact == Some(false) {
            return Err(fail(format!(
                "f__vjp differs from f and f__lin_t: {r:?}\n{}",
                derived_to_string(&d)
            )));
        }
        let scale = jvp_tangents(c, &d)?
            .iter()
            .map(|t| t.max_abs_diff(&t.zeros_like()))
            .fold(1.0, f64::max);
        if !at_most(r.lin_vs_jvp, 1e-12 * scale) {
            return Err(fail(format!(
                "lin vs jvp: {:e} (|jvp| = {scale:e}); {r:?}\n{}",
                r.lin_vs_jvp,
                derived_to_string(&d)
            )));
        }
        Ok(())
    });
    eprintln!("cases with a fused f__vjp: {}", fused.get());
}
