//! Reverse mode in one sweep (`ad_core_ir::vjp`): which loop pairs fuse
//! (`vjp::siblings`' legality conditions, one case each), what the fused
//! function computes (bit for bit what `f` and `f__lin_t` compute), and when
//! the driver builds `f__vjp`. The property over random programs is in
//! `unzip.rs` (`prop_unzip_reproduces_jvp`).

mod fixtures;

use ad_core_ir::check::{check_func, Mode};
use ad_core_ir::driver::{differentiate, Options};
use ad_core_ir::interp::{run, Value};
use ad_core_ir::ir::*;
use ad_core_ir::parse::parse_program;
use ad_core_ir::pretty::func_to_string;
use ad_core_ir::testing::{check_derived, same_bits};
use ad_core_ir::vjp::siblings::fuse_siblings;

/// A forward loop summing `exp x[k]` and stacking the exps, then the
/// reversed accumulation a transpose makes of it, reading the stack at its
/// own index.
const PAIR: &str = "def f(x_0: [f64] ; ct_1: f64) -> (f64 ; [f64]) {
  let n_2: i64 = shape x_0, 0
  let s_3: f64, ts_4: [f64] = loop n_2 (a_5: f64 = 0.0) |k_6: i64| {
    let e_7: f64 = index x_0[k_6]
    let t_8: f64 = exp e_7
    let a_9: f64 = add a_5, t_8
    yield a_9, t_8
  }
  let ; z_10: [f64] = lzero [n_2]
  let ; g_11: [f64] = loop n_2 rev (; acc_12: [f64] = z_10) |j_13: i64| {
    let t_14: f64 = index ts_4[j_13]
    let ; d_15: f64 = lscale t_14, ct_1
    let ; acc_16: [f64] = lupdate acc_12[j_13] += d_15
    yield ; acc_16
  }
  return s_3 ; g_11
}
";

fn parse(src: &str) -> (Program, Func) {
    let p = parse_program(src).unwrap_or_else(|e| panic!("{e}\n{src}"));
    let f = p.funcs[0].clone();
    check_func(&p, &f, Mode::LinearA).unwrap_or_else(|e| panic!("{e:?}\n{src}"));
    (p, f)
}

/// The number of loops at the top level of `f`.
fn top_loops(f: &Func) -> usize {
    f.body
        .stmts
        .iter()
        .filter(|s| matches!(s.expr, Expr::Loop(_)))
        .count()
}

/// Fuses `src`'s function; returns whether it fused, after checking that the
/// result passes the checker and computes the same bits at a sample input.
fn fuses(src: &str) -> bool {
    let (p, mut f) = parse(src);
    let before = top_loops(&f);
    let fused = fuse_siblings(&mut f);
    let printed = func_to_string(&f);
    check_func(&p, &f, Mode::LinearA).unwrap_or_else(|e| panic!("{e:?}\n{printed}"));
    assert_eq!(top_loops(&f) + usize::from(fused), before, "{printed}");
    let args = [Value::f64s(&[3], vec![0.5, -1.25, 2.0])];
    let ct = [Value::F64(0.75)];
    let want = run(&p, "f", &args, &ct);
    let mut q = p.clone();
    q.funcs[0] = f;
    let got = run(&q, "f", &args, &ct);
    if let (Ok((y0, c0)), Ok((y1, c1))) = (&want, &got) {
        assert!(same_bits(y0, y1) && same_bits(c0, c1), "{printed}");
    } else {
        assert_eq!(want.is_ok(), got.is_ok(), "{printed}");
    }
    fused
}

#[test]
fn a_reversed_disjoint_accumulation_fuses_and_reads_the_stack_as_the_value() {
    let (p, mut f) = parse(PAIR);
    assert!(fuse_siblings(&mut f));
    let printed = func_to_string(&f);
    assert_eq!(top_loops(&f), 1, "{printed}");
    assert!(!printed.contains("index ts_4"), "{printed}");
    assert!(!printed.contains(" rev "), "{printed}");
    check_func(&p, &f, Mode::LinearA).unwrap_or_else(|e| panic!("{e:?}\n{printed}"));
    assert!(fuses(PAIR));
}

#[test]
fn a_loop_reading_the_other_loops_state_result_does_not_fuse() {
    let src = PAIR.replace(
        "let t_14: f64 = index ts_4[j_13]",
        "let t_14: f64 = mul s_3, 2.0",
    );
    assert!(!fuses(&src));
}

#[test]
fn a_stack_read_at_another_index_does_not_fuse() {
    let src = PAIR.replace("index ts_4[j_13]", "index ts_4[0]");
    assert!(!fuses(&src));
}

#[test]
fn a_reversed_loop_adding_into_shared_elements_does_not_fuse() {
    // Every iteration adds into element 0: the order would change bits.
    let src = PAIR.replace("lupdate acc_12[j_13]", "lupdate acc_12[0]");
    assert!(!fuses(&src));
    // Run forward, the same loop keeps its order when fused.
    assert!(fuses(&src.replace(" rev ", " ")));
}

#[test]
fn strided_disjoint_updates_fuse_and_overlapping_ones_do_not() {
    let strided = |b: i64| {
        PAIR.replace(
            "    let ; acc_16: [f64] = lupdate acc_12[j_13] += d_15\n",
            &format!(
                "    let m_20: i64 = mul_u64 2, j_13\n    let b_21: i64 = add_u64 m_20, {b}\n    \
                 let ; d_22: f64, d_23: f64 = dup d_15\n    \
                 let ; acc_24: [f64] = lupdate acc_12[m_20] += d_22\n    \
                 let ; acc_16: [f64] = lupdate acc_24[b_21] += d_23\n"
            ),
        )
        .replace("lzero [n_2]", "lzero [8]")
    };
    // Iteration j writes 2j and 2j + 1: disjoint.
    assert!(fuses(&strided(1)));
    // 2j and 2j + 2: iteration j + 1 writes 2j + 2 again.
    assert!(!fuses(&strided(2)));
}

#[test]
fn statements_between_the_loops_move_by_what_they_read() {
    // Read by the linear loop and computed from the first loop: no fusion.
    let read = PAIR
        .replace(
            "  let ; z_10: [f64] = lzero [n_2]\n",
            "  let ; z_10: [f64] = lzero [n_2]\n  let u_30: f64 = mul s_3, 3.0\n",
        )
        .replace("lscale t_14, ct_1", "lscale u_30, ct_1");
    assert!(!fuses(&read));
    // Not read by it: it moves after the fused loop.
    let unread = PAIR
        .replace(
            "  let ; z_10: [f64] = lzero [n_2]\n",
            "  let ; z_10: [f64] = lzero [n_2]\n  let u_30: f64 = mul s_3, 3.0\n",
        )
        .replace("return s_3 ; g_11", "return u_30 ; g_11");
    assert!(fuses(&unread));
}

/// The extended Rosenbrock function as a loop over pairs: `f__vjp` is
/// built, runs one loop, and gives `f`'s value and `f__lin_t`'s cotangents
/// bit for bit.
#[test]
fn the_driver_builds_a_fused_vjp_for_an_elementwise_objective() {
    let p = fixtures::program(fixtures::ROSENBROCK_PAIRS);
    let d = differentiate(&p, "rosenbrock", &[true], &Options::default()).unwrap();
    let name = d.vjp.as_deref().expect("a fused f__vjp");
    let f = d.program.func(name).expect("in the program");
    assert_eq!(top_loops(f), 1, "{}", func_to_string(f));
    let x = Value::f64s(&[6], vec![1.5, 0.25, -0.5, 2.0, 0.75, 1.0]);
    let r = check_derived(&p, &d, "rosenbrock", &[x], &[true], 3, 1e-6).unwrap();
    assert_eq!(r.vjp_exact, Some(true), "{r:?}");
}

/// A scalar parameter read in every iteration takes a contribution from
/// each: the reversed loop's order matters, nothing fuses, no `f__vjp`.
#[test]
fn no_fused_vjp_when_every_iteration_adds_into_one_cotangent() {
    let p = fixtures::program(fixtures::SCALED_SUM);
    let d = differentiate(&p, "scaled", &[true, true], &Options::default()).unwrap();
    assert_eq!(d.vjp, None);
    // With respect to the array alone, the loop fuses.
    let d = differentiate(&p, "scaled", &[true, false], &Options::default()).unwrap();
    assert!(d.vjp.is_some());
}
