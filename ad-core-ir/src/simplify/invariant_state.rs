//! Invariant linear loop state becomes a capture.
//!
//! [`invariant_lin_state`]: a linear state slot whose parameter reaches its
//! own body result only as the second output of a chain of `dup`s (each
//! first output read elsewhere in the body) never changes: every iteration
//! sees the initial value. The slot is removed and the body captures the
//! initial value instead:
//!
//! ```text
//! let ; c_n, a_n = loop n (; c = c0, a = a0) |i| {     let ; c, c_n = dup c0
//!   let ; c1, c2 = dup c                               let ; a_n = loop n (; a = a0) |i| {
//!   let ; d = lscale x_i, c1                    =>       let ; c1, c2 = dup c
//!   let ; a1 = lupdate a[i] += d                          let ; d = lscale x_i, c1
//!   yield ; c2, a1                                        let ; a1 = lupdate a[i] += d
//! }                                                       drop c2
//!                                                         yield ; a1
//!                                                       }
//! ```
//!
//! Equation: by induction every iteration's `c` equals `c0`, and the slot's
//! final value is `c0` (the `dup` before the loop gives it). This is what
//! the reverse of a loop reducing into a scalar looks like (the output's
//! cotangent threaded through every iteration): without the slot, the loop
//! is an accumulation loop ([`crate::accumulate`]), which runs in fixed
//! chunks, in parallel, and strip-mined.
//!
//! The parameter variable itself becomes the captured one (bound by the
//! `dup` before the loop), so no variable is created.

use crate::ir::*;
use crate::visit::reads_free_lin;

/// Turns invariant linear loop state into captures everywhere in `f`.
/// Returns whether anything changed.
pub fn invariant_lin_state(f: &mut Func) -> bool {
    super::rewrite_stmts(&mut f.body, &mut |b, j| {
        let k = invariant_slot(&b.stmts[j])?;
        rewrite(b, j, k);
        // The loop moved to `j + 1`, after its `dup`: visit it again for
        // its other slots.
        Some(j)
    })
}

/// The first invariant linear state slot of the loop statement `s`, if any.
fn invariant_slot(s: &Stmt) -> Option<usize> {
    let Expr::Loop(l) = &s.expr else {
        return None;
    };
    (0..l.lin_init.len()).find(|&k| chain_end(&l.body, k).is_some())
}

/// The last link of the `dup` chain from slot `k`'s parameter to its body
/// result (the parameter itself when it is returned as it is), if the slot
/// is invariant.
fn chain_end(lam: &Lambda, k: usize) -> Option<Var> {
    let b = &lam.body;
    let mut cur = *lam.lin_params.get(k)?;
    let mut from = 0;
    loop {
        let user = (from..b.stmts.len()).find(|&q| reads_free_lin(&b.stmts[q], cur));
        match user {
            None => {
                let at: Vec<usize> = (0..b.lin_results.len())
                    .filter(|&r| b.lin_results[r] == cur)
                    .collect();
                return (at == [k]).then_some(cur);
            }
            Some(q) => match &b.stmts[q].expr {
                Expr::Lin(LinOp::Dup(x)) if *x == cur => {
                    cur = b.stmts[q].lin_binds[1];
                    from = q + 1;
                }
                _ => return None,
            },
        }
    }
}

/// Removes invariant slot `k` of the loop at `b.stmts[j]` (see the module
/// doc).
fn rewrite(b: &mut Block, j: usize, k: usize) {
    let s = &mut b.stmts[j];
    let Expr::Loop(l) = &mut s.expr else {
        unreachable!("invariant_slot found a loop")
    };
    let end = chain_end(&l.body, k).expect("invariant_slot checked the chain");
    let p = l.body.lin_params.remove(k);
    let init = l.lin_init.remove(k);
    l.body.body.lin_results.remove(k);
    l.body.body.stmts.push(Stmt {
        binds: vec![],
        lin_binds: vec![],
        expr: Expr::Lin(LinOp::Drop(end)),
        src: None,
    });
    let out = s.lin_binds.remove(k);
    b.stmts.insert(
        j,
        Stmt {
            binds: vec![],
            lin_binds: vec![p, out],
            expr: Expr::Lin(LinOp::Dup(init)),
            src: None,
        },
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse_program;

    const REDUCE: &str = "def f(x_0: [f64] ; ct_1: f64) -> (; [f64]) {
  let ; z_2: [f64] = lzero [3]
  let ; c_3: f64, a_4: [f64] = loop 3 rev (; c_5: f64 = ct_1, a_6: [f64] = z_2) |i_7: i64| {
    let ; c_8: f64, c_9: f64 = dup c_5
    let x_10: f64 = index x_0[i_7]
    let ; d_11: f64 = lscale x_10, c_8
    let ; a_12: [f64] = lupdate a_6[i_7] += d_11
    yield ; c_9, a_12
  }
  drop c_3
  return ; a_4
}
";

    fn run(src: &str) -> (Func, bool) {
        let p = parse_program(src).unwrap_or_else(|e| panic!("{e}\n{src}"));
        let mut f = p.funcs[0].clone();
        let changed = invariant_lin_state(&mut f);
        (f, changed)
    }

    /// The cotangent threaded through a reverse loop becomes a capture and
    /// the loop an accumulation loop; the function means the same.
    #[test]
    fn threaded_cotangent_becomes_a_capture() {
        let (f, changed) = run(REDUCE);
        assert!(changed);
        let mut prog = parse_program(REDUCE).unwrap();
        prog.funcs[0] = f.clone();
        crate::check::check_program(&prog, crate::check::Mode::LinearB)
            .unwrap_or_else(|e| panic!("{e:?}"));
        let l = f
            .body
            .stmts
            .iter()
            .find_map(|s| match &s.expr {
                Expr::Loop(l) => Some(l),
                _ => None,
            })
            .expect("the loop");
        assert_eq!(l.lin_init.len(), 1);
        assert!(crate::accumulate::is_accumulation(l));
        let before = parse_program(REDUCE).unwrap();
        use crate::interp::{ArrayData, ArrayValue, Value};
        let x = Value::Array(ArrayValue {
            shape: vec![3],
            data: ArrayData::F64(vec![1.5, -2.0, 0.25]),
        });
        let ct = Value::F64(0.75);
        let a = crate::interp::run(
            &before,
            "f",
            std::slice::from_ref(&x),
            std::slice::from_ref(&ct),
        )
        .unwrap();
        let b = crate::interp::run(&prog, "f", &[x], &[ct]).unwrap();
        assert_eq!(a, b);
    }

    /// State that changes (added to), or whose first copy is returned, is
    /// kept.
    #[test]
    fn changing_state_is_kept() {
        let changed = REDUCE.replace(
            "    yield ; c_9, a_12",
            "    let ; c_13: f64 = ladd c_9, d_11\n    yield ; c_13, a_12",
        );
        // d_11 is used twice now: give the update its own copy.
        let changed = changed.replace(
            "    let ; d_11: f64 = lscale x_10, c_8\n    let ; a_12: [f64] = lupdate a_6[i_7] += d_11",
            "    let ; d_14: f64 = lscale x_10, c_8\n    let ; d_11: f64, d_15: f64 = dup d_14\n    let ; a_12: [f64] = lupdate a_6[i_7] += d_15",
        );
        assert!(!run(&changed).1, "{changed}");
        let first = REDUCE
            .replace("lscale x_10, c_8", "lscale x_10, c_9")
            .replace("yield ; c_9, a_12", "yield ; c_8, a_12");
        assert!(!run(&first).1);
    }
}
