//! Accumulation loops: loops whose whole state is linear accumulators that
//! the body only adds into.
//!
//! Transposing a `build` gives such a loop: each element's cotangent
//! contributions are added into the cotangent arrays of what the element read.
//!
//! A scalar accumulator flows through `ladd` instead (`s1 = ladd s, u`: the
//! reverse of a loop reducing into scalar parameters).
//!
//! ```text
//! loop n (; a = a0, b = b0) |i| {        a, b only flow through `+=` updates
//!   let ; a1 = lupdate a[j] += u         (at any index, of any value) and
//!   let ; b1 = loop m (; c = b) |r| {     nested loops that are themselves
//!     let ; c1 = lupdate c[r] += w        accumulating in them, back to the
//!     yield ; c1                          same state position
//!   }
//!   yield ; a1, b1
//! }
//! ```
//!
//! For such a loop, `final = init + Σ_i contribution(i)`, where the
//! contribution of iteration `i` does not depend on the state: the
//! iterations can be cut into chunks that start from zero accumulators, run
//! in any order or in parallel, and whose results are added in a fixed order.

use crate::fast_hash::FastMap;
use crate::ir::*;
use crate::visit::{blocks, reads_free_lin};

/// Whether `l` is an accumulation loop: no non-linear state, no stacked
/// outputs, at least one linear state variable, and every state variable
/// flows from its parameter to the body's result at its own position only
/// through `lupdate .. += ..` (add, not set), `ladd` with another value, and
/// the same position of nested accumulating loops (see the module doc).
pub fn is_accumulation(l: &Loop) -> bool {
    accumulation_paths(l).is_some()
}

/// What the accumulation path of one state variable goes through: the
/// index lists of its `lupdate`s (nested loops included) and whether it
/// adds with `ladd`.
#[derive(Default)]
struct Path<'b> {
    updates: Vec<&'b [Atom]>,
    ladd: bool,
    /// Every variable holding the state on its way (the parameter, the
    /// updates' and nested loops' results, nested loops' parameters).
    vars: Vec<Var>,
}

/// The path of every state variable of `l`, when `l` is an accumulation
/// loop ([`is_accumulation`]).
fn accumulation_paths(l: &Loop) -> Option<Vec<Path<'_>>> {
    let lam = &l.body;
    let b = &lam.body;
    if !l.init.is_empty()
        || l.lin_init.is_empty()
        || !b.results.is_empty()
        || b.lin_results.len() != lam.lin_params.len()
    {
        return None;
    }
    lam.lin_params
        .iter()
        .enumerate()
        .map(|(k, p)| {
            let mut path = Path::default();
            flows_to(b, *p, k, &mut path).then_some(path)
        })
        .collect()
}

/// Whether linear `v` reaches `b.lin_results[k]` (and nothing else) through
/// accumulating updates and nested accumulating loops at the top level of
/// `b`; records what the path goes through in `path`.
fn flows_to<'b>(b: &'b Block, v: Var, k: usize, path: &mut Path<'b>) -> bool {
    let mut cur = v;
    let mut from = 0;
    loop {
        path.vars.push(cur);
        // Linear: `cur` has exactly one use, after its binder.
        let Some(pos) = (from..b.stmts.len()).find(|&q| uses(&b.stmts[q], cur)) else {
            return b.lin_results.iter().position(|r| *r == cur) == Some(k)
                && b.lin_results.iter().filter(|r| **r == cur).count() == 1;
        };
        let s = &b.stmts[pos];
        cur = match &s.expr {
            Expr::Lin(LinOp::Update {
                x,
                idx,
                val,
                add: true,
            }) if *x == cur && *val != cur => {
                path.updates.push(idx);
                s.lin_binds[0]
            }
            // A scalar (or array) accumulator: `acc + v`.
            Expr::Lin(LinOp::Add(x, y)) if (*x == cur) != (*y == cur) => {
                path.ladd = true;
                s.lin_binds[0]
            }
            Expr::Loop(inner) => {
                let Some(m) = inner.lin_init.iter().position(|x| *x == cur) else {
                    return false;
                };
                let ilam = &inner.body;
                let ok = inner.lin_init.iter().filter(|x| **x == cur).count() == 1
                    && m < ilam.lin_params.len()
                    && m < ilam.body.lin_results.len()
                    && flows_to(&ilam.body, ilam.lin_params[m], m, path)
                    && !captured(s, cur);
                if !ok {
                    return false;
                }
                s.lin_binds[m]
            }
            _ => return false,
        };
        from = pos + 1;
    }
}

/// Whether `l` is an accumulation loop whose iterations add into disjoint
/// elements: every `lupdate .. +=` reaching a state variable (nested loops
/// included) indexes, at one axis `p` shared by all updates of that
/// variable, `c·i + b` with `i` the loop's index, the same constant `c ≥ 1`
/// and constants `0 ≤ b < c`; no state variable is reached by `ladd` (a
/// scalar accumulator takes a contribution from every iteration).
///
/// Iteration `i` then touches only elements whose axis-`p` index is in
/// `{c·i + b}`, a set no other iteration meets, so the iterations can run in
/// any order with the same bits as a result: what fusing a reversed loop
/// into a forward one needs ([`crate::vjp`]).
pub fn is_disjoint_accumulation(l: &Loop) -> bool {
    let (Some(paths), Some(&i)) = (accumulation_paths(l), l.body.params.first()) else {
        return false;
    };
    let mut defs = FastMap::default();
    collect_defs(&l.body.body, &mut defs);
    paths.iter().all(|p| {
        !p.ladd
            && (p.updates.is_empty()
                || disjoint_axis(&p.updates, &|a| affine(a, i, &defs)).is_some())
    })
}

/// The rows of one state variable of an accumulation loop that iteration
/// `i` alone adds into ([`owned_rows`]): indices `stride·i .. stride·(i + 1)`
/// along `axis`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnedRows {
    /// The axis the updates index by iteration.
    pub axis: usize,
    /// `c ≥ 1`: iteration `i` adds at `c·i + b`, `0 ≤ b < c`, on `axis`.
    pub stride: i64,
    /// The length of every update's index list (the same for all).
    pub index_len: usize,
    /// Every variable holding this state on its way through the body
    /// (the loop's parameter, the updates' results, nested loops'
    /// parameters and results): the targets of its updates are among them.
    pub vars: Vec<Var>,
}

/// For an accumulation loop `l` ([`is_accumulation`]) whose every state
/// variable is added into only at elements that one iteration owns (an
/// axis indexed `c·i + b`, `0 ≤ b < c`, by every update of that variable,
/// nested loops included; at least one update, no `ladd`, index lists of
/// one length): for each, the rows iteration `i` owns. `None` otherwise.
///
/// Then iterations `lo..hi` add only into rows `c·lo .. c·hi` of each state
/// variable: a range of iterations can run on a copy of those rows alone,
/// and every element receives its contributions in the loop's own order,
/// whatever the ranges (so the same bits as the sequential loop).
pub fn owned_rows(l: &Loop) -> Option<Vec<OwnedRows>> {
    let (paths, &i) = (accumulation_paths(l)?, l.body.params.first()?);
    let mut defs = FastMap::default();
    collect_defs(&l.body.body, &mut defs);
    paths
        .into_iter()
        .map(|p| {
            let index_len = p.updates.first()?.len();
            if p.ladd || p.updates.iter().any(|u| u.len() != index_len) {
                return None;
            }
            let (axis, stride) = disjoint_axis(&p.updates, &|a| affine(a, i, &defs))?;
            Some(OwnedRows {
                axis,
                stride,
                index_len,
                vars: p.vars,
            })
        })
        .collect()
}

/// The first axis `p` indexed `c·i + b_j` in every list of `idx` (as
/// `affine` reads the atoms), with one `c ≥ 1` and every `0 ≤ b_j < c`:
/// `(p, c)`.
fn disjoint_axis(
    idx: &[&[Atom]],
    affine: &dyn Fn(&Atom) -> Option<(i64, i64)>,
) -> Option<(usize, i64)> {
    let rank = idx.iter().map(|l| l.len()).min().unwrap_or(0);
    (0..rank).find_map(|p| {
        let forms: Vec<(i64, i64)> = idx.iter().map(|l| affine(&l[p])).collect::<Option<_>>()?;
        let c = forms[0].0;
        (c >= 1
            && forms
                .iter()
                .all(|&(cj, bj)| cj == c && (0..c).contains(&bj)))
        .then_some((p, c))
    })
}

/// Every single-result primitive or copy bound in `b` (nested blocks
/// included; binders are unique).
fn collect_defs<'b>(b: &'b Block, out: &mut FastMap<Var, &'b Expr>) {
    for s in &b.stmts {
        if let ([v], Expr::Prim(..) | Expr::Atom(_)) = (s.binds.as_slice(), &s.expr) {
            out.insert(*v, &s.expr);
        }
        for inner in blocks(&s.expr) {
            collect_defs(inner, out);
        }
    }
}

/// `a` as `c·i + b` (integer constants), reading definitions in `defs`:
/// `i` itself, integer literals, copies, and `+`, `-` by a constant and `·`
/// by a constant in `i64` or wrapping `u64` arithmetic.
fn affine(a: &Atom, i: Var, defs: &FastMap<Var, &Expr>) -> Option<(i64, i64)> {
    let v = match a {
        Atom::I64(b) => return Some((0, *b)),
        Atom::Var(v) if *v == i => return Some((1, 0)),
        Atom::Var(v) => *v,
        Atom::F64(_) | Atom::Bool(_) => return None,
    };
    let (op, xs) = match defs.get(&v)? {
        Expr::Atom(x) => return affine(x, i, defs),
        Expr::Prim(Prim::Add | Prim::IntArith(IntOp::Add, IntTy::U64), xs) => (IntOp::Add, xs),
        Expr::Prim(Prim::Sub | Prim::IntArith(IntOp::Sub, IntTy::U64), xs) => (IntOp::Sub, xs),
        Expr::Prim(Prim::Mul | Prim::IntArith(IntOp::Mul, IntTy::U64), xs) => (IntOp::Mul, xs),
        _ => return None,
    };
    let [x, y] = xs.as_slice() else {
        return None;
    };
    let ((c1, b1), (c2, b2)) = (affine(x, i, defs)?, affine(y, i, defs)?);
    match op {
        IntOp::Add => Some((c1.checked_add(c2)?, b1.checked_add(b2)?)),
        IntOp::Sub => Some((c1.checked_sub(c2)?, b1.checked_sub(b2)?)),
        IntOp::Mul if c1 == 0 => Some((b1.checked_mul(c2)?, b1.checked_mul(b2)?)),
        IntOp::Mul if c2 == 0 => Some((b2.checked_mul(c1)?, b2.checked_mul(b1)?)),
        _ => None,
    }
}

/// Whether statement `s` reads linear `v` (as an operand or inside a body).
fn uses(s: &Stmt, v: Var) -> bool {
    reads_free_lin(s, v)
}

/// Whether `v` is read inside the bodies of `s` (not only as its operand).
fn captured(s: &Stmt, v: Var) -> bool {
    blocks(&s.expr).any(|b| crate::visit::free_vars_block(b).lin.contains(&v))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse_program;

    /// Whether the first top-level loop of `f` in `src` is an accumulation.
    fn first_loop(src: &str) -> bool {
        first_loop_is(src, is_accumulation)
    }

    /// `is` of the first top-level loop of `f` in `src`.
    fn first_loop_is<T>(src: &str, is: impl Fn(&Loop) -> T) -> T {
        let p = parse_program(src).unwrap_or_else(|e| panic!("{e}\n{src}"));
        let l = p.funcs[0]
            .body
            .stmts
            .iter()
            .find_map(|s| match &s.expr {
                Expr::Loop(l) => Some(l),
                _ => None,
            })
            .expect("a loop");
        is(l)
    }

    const NESTED: &str = "def f(x_3: [f64] ; ct_2: [f64]) -> (; [f64], [f64]) {
  let ; ct1_0: [f64], ct2_1: [f64] = dup ct_2
  let ; z_4: [f64] = lzero [3]
  let ; a_5: [f64], b_6: [f64] = loop 3 (; s_9: [f64] = ct1_0, t_11: [f64] = z_4) |i_12: i64| {
    let ; e_13: f64 = lindex ct2_1[i_12]
    let ; s1_7: [f64] = lupdate s_9[i_12] += e_13
    let ; t1_10: [f64] = loop 2 (; u_15: [f64] = t_11) |r_17: i64| {
      let ; w_16: f64 = lzero ()
      let ; u1_14: [f64] = lupdate u_15[r_17] += w_16
      yield ; u1_14
    }
    yield ; s1_7, t1_10
  }
  return ; a_5, b_6
}
";

    #[test]
    fn updates_and_nested_accumulations_accumulate() {
        assert!(first_loop(NESTED));
    }

    const SCALAR: &str = "def f(x_0: [f64] ; ct_1: f64) -> (; f64) {
  let ; z_2: f64 = lzero ()
  let ; a_3: f64 = loop 3 (; s_4: f64 = z_2) |i_5: i64| {
    let x_6: f64 = index x_0[i_5]
    let ; ct_7: f64 = lzero ()
    let ; d_8: f64 = lscale x_6, ct_7
    let ; s_9: f64 = ladd s_4, d_8
    yield ; s_9
  }
  drop ct_1
  return ; a_3
}
";

    /// A scalar accumulator added to (`ladd`) accumulates; one scaled does
    /// not.
    #[test]
    fn scalar_accumulators_accumulate() {
        assert!(first_loop(SCALAR));
        let scaled = SCALAR.replace(
            "let ; s_9: f64 = ladd s_4, d_8",
            "let ; s_9: f64 = lscale x_6, s_4\n    drop d_8",
        );
        assert!(!first_loop(&scaled), "{scaled}");
    }

    /// Whether the first top-level loop of `f` in `src` is a disjoint
    /// accumulation.
    fn first_loop_disjoint(src: &str) -> bool {
        first_loop_is(src, is_disjoint_accumulation)
    }

    /// Iteration `i` of a disjoint accumulation adds only into elements no
    /// other iteration touches, nested loops included; a scalar accumulator
    /// (`ladd`) takes a contribution from every iteration.
    #[test]
    fn disjoint_accumulations_write_apart() {
        // The nested loop adds into `u[r]` for every `r` in every iteration.
        assert!(!first_loop_disjoint(NESTED));
        assert!(first_loop_disjoint(
            &NESTED.replace("lupdate u_15[r_17]", "lupdate u_15[i_12]")
        ));
        assert!(!first_loop_disjoint(SCALAR));
    }

    /// The first top-level loop of `f` in `src`'s owned rows.
    fn first_loop_rows(src: &str) -> Option<Vec<(usize, i64, usize)>> {
        first_loop_is(src, |l| {
            owned_rows(l).map(|rs| {
                rs.iter()
                    .map(|r| (r.axis, r.stride, r.vars.len()))
                    .collect()
            })
        })
    }

    /// Rows are owned when every update of every state variable indexes
    /// one axis by the iteration (`c·i + b`); the path's variables are all
    /// listed (parameter, update results, a nested loop's parameter and its
    /// update's result, the nested loop's result).
    #[test]
    fn owned_rows_follow_the_iteration_index() {
        // `u[r]` in the nested loop: every iteration adds into every row.
        assert_eq!(first_loop_rows(NESTED), None);
        let owned = NESTED.replace("lupdate u_15[r_17]", "lupdate u_15[i_12]");
        assert_eq!(first_loop_rows(&owned), Some(vec![(0, 1, 2), (0, 1, 4)]));
        // `2·i + 1` on the second axis of a matrix.
        let strided = "def f(x_0: [f64] ; ct_1: [[f64]]) -> (; [[f64]]) {
  let ; a_3: [[f64]] = loop 3 (; s_4: [[f64]] = ct_1) |i_5: i64| {
    let j_6: i64 = mul i_5, 2
    let k_7: i64 = add j_6, 1
    let ; c_8: f64 = lzero ()
    let ; s_9: [[f64]] = lupdate s_4[0, k_7] += c_8
    let ; d_10: f64 = lzero ()
    let ; s_11: [[f64]] = lupdate s_9[1, j_6] += d_10
    yield ; s_11
  }
  return ; a_3
}
";
        assert_eq!(first_loop_rows(strided), Some(vec![(1, 2, 3)]));
        // An offset of 2 with a stride of 2 meets the next iteration's rows.
        assert_eq!(
            first_loop_rows(&strided.replace("add j_6, 1", "add j_6, 2")),
            None
        );
        // A scalar accumulator, and a state with no update at all.
        assert_eq!(first_loop_rows(SCALAR), None);
    }

    #[test]
    fn reading_setting_or_swapping_the_state_does_not() {
        // `=` (set) instead of `+=`.
        assert!(!first_loop(&NESTED.replace(
            "lupdate s_9[i_12] += e_13",
            "lupdate s_9[i_12] = e_13"
        )));
        // The state swapped between positions.
        assert!(!first_loop(
            &NESTED.replace("yield ; s1_7, t1_10", "yield ; t1_10, s1_7")
        ));
        // The state read.
        let read = "def f(x_3: [f64] ; ct_2: [f64]) -> (; [f64], f64) {
  let ; a_5: [f64], c_18: f64 = loop 3 (; s_9: [f64] = ct_2) |i_12: i64| {
    let ; s1_7: [f64], s2_8: [f64] = dup s_9
    let ; e_13: f64 = lindex s1_7[0]
    yield ; s2_8, e_13
  }
  return ; a_5, c_18
}
";
        assert!(!first_loop(read));
    }
}
