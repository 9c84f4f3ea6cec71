//! Interchange of nested accumulation loops: the loop whose index selects
//! the rows the body accumulates into goes outside.
//!
//! ```text
//! loop n (; a = a0) |i| {                  loop m (; a = a0) |j| {
//!   let ; a2 = loop m (; a1 = a) |j| {       let ; a2 = loop n (; a1 = a) |i| {
//!     let x = index x[i, 0]                    let x = index x[i, 0]
//!     let ; d = lindex ct[i, j]        =>      let ; d = lindex ct[i, j]
//!     let ; e = lscale x, d                    let ; e = lscale x, d
//!     let ; a3 = lupdate a1[j, 0] += e         let ; a3 = lupdate a1[j, 0] += e
//!     yield ; a3                               yield ; a3
//!   }                                        }
//!   yield ; a2                               yield ; a2
//! }                                        }
//! ```
//!
//! This is the transpose of a build over `(i, j)` (GMM's points by
//! components) reading inputs at `j`: before, every point `i` adds into
//! every row `j` of the accumulators; after, the outer iterations own
//! disjoint rows, so they run in parallel without sharing a row (the
//! emitter's `accumulate_chunked` over `j`), and the inner loop over the
//! points stays on one row, strip-mined (blocks of points).
//!
//! **Legality** ([`interchangeable`]). Both loops are accumulation loops
//! ([`crate::accumulate::is_accumulation`]): the state of each only flows
//! through `+=` updates, `ladd` and nested accumulation loops, so
//! `final = init + Σ_i Σ_j contribution(i, j)`, and a contribution does not
//! depend on the state. The outer body is the inner loop alone, threading
//! the outer state in order (no statement before it that would then run
//! once per `(i, j)` pair instead of once per `i`), and the inner trip count
//! does not depend on `i` (a triangular nest is left alone). Then the double
//! sum runs in the other order: the same value, up to the rounding of the
//! additions (as every chunked accumulation; the order is still fixed, so
//! the bits do not depend on the thread count).
//!
//! **Profitability.** Some update indexes its first axis by the inner index
//! `j` itself, and no update index depends on `i`: after the interchange
//! each outer iteration owns its rows. A nest whose updates are indexed by
//! `i` already has that shape and is left as it is (so the pass does not
//! undo itself).

use crate::ir::*;
use crate::visit::{free_vars_stmt, lambdas};
use std::collections::BTreeSet;

/// Interchanges every interchangeable nest of accumulation loops in `f`
/// (module doc). Returns whether anything changed.
pub fn interchange(f: &mut Func) -> bool {
    super::rewrite_stmts(&mut f.body, &mut |b, j| {
        let Expr::Loop(outer) = &mut b.stmts[j].expr else {
            return None;
        };
        if !interchangeable(outer) {
            return None;
        }
        let Expr::Loop(inner) = &mut outer.body.body.stmts[0].expr else {
            unreachable!("interchangeable checked the nest")
        };
        std::mem::swap(&mut outer.n, &mut inner.n);
        std::mem::swap(&mut outer.body.params[0], &mut inner.body.params[0]);
        // An accumulation runs its iterations in any order.
        outer.rev = false;
        inner.rev = false;
        Some(j)
    })
}

/// Whether the loop `outer` and the loop that is its whole body may and
/// should be interchanged (module doc: legality and profitability).
pub fn interchangeable(outer: &Loop) -> bool {
    let ob = &outer.body;
    let [s] = ob.body.stmts.as_slice() else {
        return false;
    };
    let Expr::Loop(inner) = &s.expr else {
        return false;
    };
    let (Some(&i), Some(&j)) = (ob.params.first(), inner.body.params.first()) else {
        return false;
    };
    let threads_state = inner.init.is_empty()
        && inner.lin_init == ob.lin_params
        && ob.body.lin_results == s.lin_binds
        && ob.body.results.is_empty()
        && s.binds.is_empty();
    if !threads_state
        || inner.n == Atom::Var(i)
        || !crate::accumulate::is_accumulation(outer)
        || !crate::accumulate::is_accumulation(inner)
    {
        return false;
    }
    let mut dep = BTreeSet::from([i]);
    let mut rows_by_j = false;
    let mut by_i = false;
    updates(&inner.body.body, &mut dep, &mut |idx, dep| {
        rows_by_j |= idx.first() == Some(&Atom::Var(j));
        by_i |= idx
            .iter()
            .any(|a| matches!(a, Atom::Var(v) if dep.contains(v)));
    });
    rows_by_j && !by_i
}

/// Calls `at` with the index list of every linear `lupdate` in `b` (nested
/// blocks included), in order, with `dep` the variables seen so far that
/// may depend on one of `dep`'s initial variables. Conservative: a
/// statement reading a dependent variable makes all its binders and the
/// parameters of its bodies dependent, except a loop's index, which
/// depends only through the trip count.
fn updates(b: &Block, dep: &mut BTreeSet<Var>, at: &mut dyn FnMut(&[Atom], &BTreeSet<Var>)) {
    for s in &b.stmts {
        if let Expr::Lin(LinOp::Update { idx, .. }) = &s.expr {
            at(idx, dep);
        }
        let reads_dep = free_vars_stmt(s).nl.iter().any(|v| dep.contains(v));
        for lam in lambdas(&s.expr) {
            let counter = match &s.expr {
                Expr::Loop(l) => matches!(&l.n, Atom::Var(v) if dep.contains(v)),
                _ => reads_dep,
            };
            for (k, p) in lam.params.iter().enumerate() {
                if (k == 0 && counter) || (k > 0 && reads_dep) {
                    dep.insert(*p);
                }
            }
        }
        for blk in crate::visit::blocks(&s.expr) {
            updates(blk, dep, at);
        }
        if reads_dep {
            dep.extend(s.binds.iter().copied());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interp::{ArrayData, ArrayValue, Value};
    use crate::parse::parse_program;

    /// The transpose of `y[i, j] = x[i, 0] * w[j, 0]` with respect to `w`:
    /// points `i` outer, rows `j` of the cotangent inner.
    const NEST: &str = "def f(x_0: [[f64]] ; ct_1: [[f64]]) -> (; [[f64]]) {
  let n_2: i64 = shape x_0, 0
  let ; z_3: [[f64]] = lzero [3, 1]
  let ; a_4: [[f64]] = loop n_2 (; a_5: [[f64]] = z_3) |i_6: i64| {
    let ; a_7: [[f64]] = loop 3 (; a_8: [[f64]] = a_5) |j_9: i64| {
      let x_10: f64 = index x_0[i_6, 0]
      let ; d_11: f64 = lindex ct_1[i_6, j_9]
      let ; e_12: f64 = lscale x_10, d_11
      let ; a_13: [[f64]] = lupdate a_8[j_9, 0] += e_12
      yield ; a_13
    }
    yield ; a_7
  }
  return ; a_4
}
";

    fn run(src: &str) -> (Program, bool) {
        let mut p = parse_program(src).unwrap_or_else(|e| panic!("{e}\n{src}"));
        let changed = interchange(&mut p.funcs[0]);
        crate::check::check_program(&p, crate::check::Mode::LinearB)
            .unwrap_or_else(|e| panic!("{e:?}"));
        (p, changed)
    }

    fn outer_index(p: &Program) -> Var {
        let s = p.funcs[0]
            .body
            .stmts
            .iter()
            .find(|s| matches!(s.expr, Expr::Loop(_)))
            .expect("the loop");
        let Expr::Loop(l) = &s.expr else {
            unreachable!()
        };
        l.body.params[0]
    }

    fn eval(p: &Program) -> Value {
        let x = Value::Array(ArrayValue {
            shape: vec![4, 1],
            data: ArrayData::F64(vec![1.5, -2.0, 0.25, 3.0]),
        });
        let ct = Value::Array(ArrayValue {
            shape: vec![4, 3],
            data: ArrayData::F64((0..12).map(|k| 0.5 + k as f64).collect()),
        });
        let (_, lin) = crate::interp::run(p, "f", &[x], &[ct]).unwrap();
        lin.into_iter().next().unwrap()
    }

    /// The rows' index goes outside; the function means the same (exactly
    /// here: one contribution per element), and a second run leaves it.
    #[test]
    fn rows_index_goes_outside() {
        let (mut p, changed) = run(NEST);
        assert!(changed);
        assert_eq!(outer_index(&p), Var(9));
        assert_eq!(eval(&p), eval(&parse_program(NEST).unwrap()));
        assert!(!interchange(&mut p.funcs[0]), "the pass undid itself");
    }

    /// Not interchanged: a statement before the inner loop, an inner trip
    /// count that is the outer index, updates indexed by the outer index,
    /// no update indexed by the inner index first, and non-linear state.
    #[test]
    fn illegal_or_unprofitable_nests_stay() {
        let prefix = NEST.replace(
            "    let ; a_7: [[f64]] = loop 3",
            "    let y_14: f64 = index x_0[i_6, 0]\n    let ; a_7: [[f64]] = loop 3",
        );
        let triangular = NEST.replace("loop 3 (; a_8", "loop i_6 (; a_8");
        let by_i = NEST.replace("lupdate a_8[j_9, 0]", "lupdate a_8[j_9, i_6]");
        let derived = NEST.replace(
            "      let ; a_13: [[f64]] = lupdate a_8[j_9, 0] += e_12",
            "      let k_14: i64 = sub i_6, i_6\n      let ; a_13: [[f64]] = lupdate a_8[j_9, k_14] += e_12",
        );
        let columns = NEST
            .replace("lzero [3, 1]", "lzero [1, 3]")
            .replace("lupdate a_8[j_9, 0]", "lupdate a_8[0, j_9]");
        for (what, src) in [
            ("prefix", prefix),
            ("triangular", triangular),
            ("by_i", by_i),
            ("derived", derived),
            ("columns", columns),
        ] {
            let (p, changed) = run(&src);
            assert!(!changed, "{what}");
            assert_eq!(outer_index(&p), Var(6), "{what}");
        }
    }

    /// A random nest of the template's family: outer trip count, inner
    /// trip count (a literal, or the outer index: triangular), directions,
    /// the update's index (rows by the inner index, by a value of the outer
    /// index, or columns by the inner index), a second accumulator (scalar,
    /// `ladd`), a statement before the inner loop; and whether the pass
    /// must interchange it.
    fn family(
        n: usize,
        m: usize,
        tri: bool,
        revs: (bool, bool),
        form: usize,
        scalar: bool,
        prefix: bool,
    ) -> (String, bool) {
        let (ro, ri) = (
            if revs.0 { " rev" } else { "" },
            if revs.1 { " rev" } else { "" },
        );
        let inner_n = if tri {
            "i_6".to_string()
        } else {
            m.to_string()
        };
        let (idx, pre_idx) = match form {
            0 => ("j_9, 1", ""),
            1 => ("j_9, k_14", "      let k_14: i64 = min i_6, 4\n"),
            _ => ("1, j_9", ""),
        };
        let pre = if prefix {
            "    let y_15: f64 = index x_0[i_6, 0]\n"
        } else {
            ""
        };
        let (st_o, st_i, st_init, ret_ty, ret) = if scalar {
            (
                ", s_20: f64 = z_19",
                ", s_21: f64 = s_20",
                "  let ; z_19: f64 = lzero ()\n",
                ", f64",
                ", s_23",
            )
        } else {
            ("", "", "", "", "")
        };
        let (dup, upd_val, add, out_i, out_o, binds_i, binds_o) = if scalar {
            (
                "      let ; e_16: f64, e_17: f64 = dup e_12\n",
                "e_16",
                "      let ; s_22: f64 = ladd s_21, e_17\n",
                ", s_22",
                ", s_24",
                ", s_24: f64",
                ", s_23: f64",
            )
        } else {
            ("", "e_12", "", "", "", "", "")
        };
        let src = format!(
            "def f(x_0: [[f64]] ; ct_1: [[f64]]) -> (; [[f64]]{ret_ty}) {{
  let n_2: i64 = shape x_0, 0
  let ; z_3: [[f64]] = lzero [10, 10]
{st_init}  let ; a_4: [[f64]]{binds_o} = loop {n}{ro} (; a_5: [[f64]] = z_3{st_o}) |i_6: i64| {{
{pre}    let ; a_7: [[f64]]{binds_i} = loop {inner_n}{ri} (; a_8: [[f64]] = a_5{st_i}) |j_9: i64| {{
      let x_10: f64 = index x_0[i_6, 0]
      let ; d_11: f64 = lindex ct_1[i_6, j_9]
      let ; e_12: f64 = lscale x_10, d_11
{dup}{pre_idx}      let ; a_13: [[f64]] = lupdate a_8[{idx}] += {upd_val}
{add}      yield ; a_13{out_i}
    }}
    yield ; a_7{out_o}
  }}
  return ; a_4{ret}
}}
"
        );
        let expect = !tri && form == 0 && !prefix;
        (src, expect)
    }

    proptest::proptest! {
        #![proptest_config(proptest::test_runner::Config::with_cases(64))]
        /// On every nest of the family the pass interchanges exactly the
        /// legal and profitable ones, its output checks, and the function
        /// means the same (up to the rounding of the reordered sums).
        #[test]
        fn prop_family(
            n in 0usize..11,
            m in 1usize..6,
            tri: bool,
            revs: (bool, bool),
            form in 0usize..3,
            scalar: bool,
            prefix: bool,
            seed in 0u64..1000,
        ) {
            let (src, expect) = family(n, m, tri, revs, form, scalar, prefix);
            let (p, changed) = run(&src);
            proptest::prop_assert_eq!(changed, expect, "{}", src);
            let nx = n.max(1);
            let mut rng = crate::testing::Rng(seed + 1);
            let x = rng.like(&Value::f64s(&[nx, 1], vec![0.0; nx]));
            let ct = rng.like(&Value::f64s(&[nx, 10], vec![0.0; nx * 10]));
            let before = parse_program(&src).unwrap();
            let a = crate::interp::run(&before, "f", std::slice::from_ref(&x), std::slice::from_ref(&ct));
            let b = crate::interp::run(&p, "f", &[x], &[ct]);
            let ((_, a), (_, b)) = (a.unwrap(), b.unwrap());
            for (u, v) in a.iter().zip(&b) {
                let scale = u.max_abs_diff(&u.zeros_like()).max(1.0);
                proptest::prop_assert!(u.max_abs_diff(v) <= 1e-12 * scale, "{:?} vs {:?}", u, v);
            }
        }
    }
}
