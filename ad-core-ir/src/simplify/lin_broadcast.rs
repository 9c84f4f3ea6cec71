//! Linear broadcasts moved past the linear operations that read them, so
//! that those operations run on the small source instead of the stretched
//! array.
//!
//! In forward mode, the tangent of `x - means.row(j)` (NumPy style, `x` a
//! constant) is `lbroadcast -dmu_j`: every row the same. Before, the JVP
//! filled an `n x d` array with it, copied it for each user (`dup`), and
//! multiplied it by a `d x d` matrix as an `n x d x d` product. The rules:
//!
//! ```text
//! map(..; lbroadcast w, S, A) |..; dx| (linear in dx)  =  lbroadcast (map(; w') |; dx| ..), S, A
//! dup (lbroadcast w, S, A)                            =  lbroadcast w1, S, A ; lbroadcast w2, S, A   (w1, w2 = dup w)
//! lbroadcast (lbroadcast w, S1, A1), S2, A2           =  lbroadcast w, S2, A2 ∘ A1
//! lmatmul a, (lbroadcast w, [n, m], [1]) lin_left     =  lbroadcast (lmatmul a, w' lin_left), [n, shape(a, 1)], [1]
//! lmatmul a, (lbroadcast w, [m, n], [0])              =  lbroadcast (lmatmul a, w'), [shape(a, 0), n], [0]
//! map(..; lbroadcast w1, S, A, lbroadcast w2, S, A)   =  map(..; lbroadcast w, S, A) with `dup` per element   (w1, w2 = dup w)
//! ```
//!
//! Before / after (`map_lbroadcast`, then `dup_lbroadcast` and
//! `lmatmul_lbroadcast`; `S = [n, m]`):
//!
//! ```text
//! let ; d = lbroadcast dmu, S, axes=[1]           let ; w' = lbroadcast dmu, [m], axes=[0]
//! let c ; dc = map(x, b ; d) |p, q ; dx| {        let ; o = map(; w') |; dx| { let ; t = lneg dx ; yield ; t }
//!   let r = sub p, q                              let c = map(x, b) |p, q| { let r = sub p, q ; yield r }
//!   let ; t = lneg dx                             let ; w1, w2 = dup o
//!   yield r ; t                                   let ; e = lbroadcast w1, S, axes=[1]
//! }                                               let ; v = lmatmul l, (lbroadcast w2, [m], axes=[0]) lin_left
//! let ; e, f = dup dc                             let ; g = lbroadcast v, [n, shape(l, 1)], axes=[1]
//! let ; g = lmatmul l, f lin_left
//! ```
//!
//! `w'` is `w` stretched to the broadcast's sizes along its axes (`[S[a] for
//! a in A]`): the same array when its sizes are those, and the repeated
//! element where a size of `w` is 1 (NumPy's stretching), so the rewritten
//! program has the original's values wherever the original runs without
//! error (a failing shape check may disappear, never appear: a composed
//! broadcast checks `w` against the outer sizes only). In compiled code a
//! linear broadcast is a view, so none of these rules allocates.
//!
//! The map rule splits off one linear result at a time: the statements that
//! compute it must all be linear operations whose linear operands come from
//! linear parameters bound to broadcasts with the same sizes and axes, and
//! whose non-linear operands are values captured from outside the element
//! function or parameters bound to non-linear broadcasts with those same
//! sizes and axes.

use super::engine::Cx;
use crate::fast_hash::{FastMap, FastSet};
use crate::ir::*;
use crate::types::Ty;
use crate::visit::{for_each_operand, map_operands};

/// `(shape, axes)` of a broadcast.
type Spread = (Vec<Atom>, Vec<usize>);

/// The linear broadcast producing `x`, when it may be bypassed and adds
/// axes: `(w, shape, axes)`, with `w` an array (rank >= 1) of lower rank
/// than `x` (a broadcast that only stretches axes of length 1 repeats no
/// work that the rules could save).
fn lbroadcast_of(cx: &Cx<'_>, x: Var) -> Option<(Var, Vec<Atom>, Vec<usize>)> {
    let LinOp::Broadcast { x: w, shape, axes } = cx.lin_producer(x)? else {
        return None;
    };
    if axes.is_empty() || axes.len() == shape.len() {
        return None;
    }
    Some((w, shape, axes))
}

/// The sizes of `shape` along `axes`.
fn along(shape: &[Atom], axes: &[usize]) -> Vec<Atom> {
    axes.iter().map(|&a| shape[a]).collect()
}

/// `let ; y = lbroadcast w, [shape[a] for a in axes], axes=[0, ..]` with a
/// fresh `y`: `w` stretched to the sizes it takes in the broadcast.
fn stretch(cx: &mut Cx<'_>, w: Var, shape: &[Atom], axes: &[usize]) -> (Var, Stmt) {
    let y = cx.fresh("bw", cx.ty(w).clone(), true);
    cx.set_uses(y, 1);
    let op = LinOp::Broadcast {
        x: w,
        shape: along(shape, axes),
        axes: (0..axes.len()).collect(),
    };
    (y, cx.lin_stmt(y, op))
}

/// `dup (lbroadcast w, S, A) = (lbroadcast w1, S, A, lbroadcast w2, S, A)`
/// with `w1, w2 = dup w`: the source is copied, not the stretched array.
pub fn dup_lbroadcast(s: &Stmt, cx: &mut Cx<'_>) -> Option<Vec<Stmt>> {
    let (Expr::Lin(LinOp::Dup(x)), [a, b]) = (&s.expr, s.lin_binds.as_slice()) else {
        return None;
    };
    let (w, shape, axes) = lbroadcast_of(cx, *x)?;
    cx.kill(*x);
    let ty = cx.ty(w).clone();
    let (w1, w2) = (cx.fresh("w", ty.clone(), true), cx.fresh("w", ty, true));
    cx.set_uses(w1, 1);
    cx.set_uses(w2, 1);
    let spread = |w: Var| LinOp::Broadcast {
        x: w,
        shape: shape.clone(),
        axes: axes.clone(),
    };
    Some(vec![
        cx.stmt(vec![], vec![w1, w2], Expr::Lin(LinOp::Dup(w))),
        cx.lin_stmt(*a, spread(w1)),
        cx.lin_stmt(*b, spread(w2)),
    ])
}

/// `lbroadcast (lbroadcast w, S1, A1), S2, A2 = lbroadcast w, S2, A2 ∘ A1`:
/// axis `i` of `w` lands on axis `A1[i]` of the inner result, which lands on
/// axis `A2[A1[i]]` of the outer one; where `w` has size 1 both stretch it.
pub fn lbroadcast_lbroadcast(s: &Stmt, cx: &mut Cx<'_>) -> Option<Vec<Stmt>> {
    let (Expr::Lin(LinOp::Broadcast { x, shape, axes }), [y]) = (&s.expr, s.lin_binds.as_slice())
    else {
        return None;
    };
    let LinOp::Broadcast {
        x: w, axes: inner, ..
    } = cx.lin_producer(*x)?
    else {
        return None;
    };
    cx.kill(*x);
    let op = LinOp::Broadcast {
        x: w,
        shape: shape.clone(),
        axes: inner.iter().map(|&i| axes[i]).collect(),
    };
    Some(vec![cx.lin_stmt(*y, op)])
}

/// A product with a linear operand whose rows (`lin_left`, `x · a`) or
/// columns (`a · x`) are one broadcast vector `w` is that vector's product,
/// broadcast: `x · a` has every row `w · a`, `a · x` every column `a · w`.
/// One vector-matrix product instead of a matrix product.
pub fn lmatmul_lbroadcast(s: &Stmt, cx: &mut Cx<'_>) -> Option<Vec<Stmt>> {
    let (Expr::Lin(LinOp::MatMul { a, x, lin_left }), [y]) = (&s.expr, s.lin_binds.as_slice())
    else {
        return None;
    };
    let a_rank = cx.atom_ty(a).rank()?;
    let elem = cx.ty(*y).elem()?;
    let (w, shape, axes) = lbroadcast_of(cx, *x)?;
    // The axis along which `x` repeats `w` (kept by the product) and the one
    // `w` runs along (contracted).
    let (kept, along_w) = if *lin_left { (0, 1) } else { (1, 0) };
    if shape.len() != 2 || axes != [along_w] {
        return None;
    }
    cx.kill(*x);
    let (w1, stretched) = stretch(cx, w, &shape, &axes);
    let mut out = vec![stretched];
    // The product of the vector: `w · a` (lin_left) or `a · w`; a vector
    // when `a` is a matrix, else a scalar.
    let v_ty = if a_rank == 2 {
        Ty::array(elem, 1)
    } else {
        Ty::Scalar(elem)
    };
    let v = cx.fresh("mv", v_ty, true);
    cx.set_uses(v, 1);
    out.push(cx.lin_stmt(
        v,
        LinOp::MatMul {
            a: *a,
            x: w1,
            lin_left: *lin_left,
        },
    ));
    let (new_shape, new_axes) = if a_rank == 2 {
        // `a`'s axis that survives the product: 1 for `w · a`, 0 for `a · w`.
        let p = cx.fresh("n", Ty::I64, false);
        out.push(cx.stmt(
            vec![p],
            vec![],
            Expr::Array(ArrayOp::Shape {
                arr: *a,
                axis: kept ^ 1,
            }),
        ));
        let mut sh = [shape[kept], Atom::Var(p)];
        if !*lin_left {
            sh.swap(0, 1);
        }
        (sh.to_vec(), vec![along_w])
    } else {
        (vec![shape[kept]], vec![])
    };
    out.push(cx.lin_stmt(
        *y,
        LinOp::Broadcast {
            x: v,
            shape: new_shape,
            axes: new_axes,
        },
    ));
    Some(out)
}

/// A map reading both results of one `dup`, each through a linear
/// broadcast with the same sizes and axes, reads one broadcast of the
/// duplicated array and duplicates each element instead:
///
/// ```text
/// let ; w1, w2 = dup w                          let ; b = lbroadcast w, S, A
/// let ; a1 = lbroadcast w1, S, A                map(..; b) |..; e| {
/// let ; a2 = lbroadcast w2, S, A        =         let ; e1, e2 = dup e
/// map(..; a1, a2) |..; e1, e2| { .. }             ..
///                                               }
/// ```
///
/// It undoes [`dup_lbroadcast`] where both copies meet again in one map
/// (`(x - mu) * (x - mu)` with `mu` broadcast): the map's transpose then
/// sums one cotangent per element, in the map, instead of making two arrays
/// and summing each. A map reading the two results of a `dup` of a whole
/// array is left alone: merging those changes what unzip keeps for the
/// reverse pass (on NumPy-style GMM it kept two arrays for one).
pub fn map_dup_halves(s: &Stmt, cx: &mut Cx<'_>) -> Option<Vec<Stmt>> {
    let Expr::Map(m) = &s.expr else {
        return None;
    };
    // Each linear operand's broadcast and the `dup` result it spreads.
    // Per operand: the `dup` result `w` it spreads, the duplicated `v`,
    // `w`'s position among the `dup`'s results, and the spread.
    let through = |x: Var| -> Option<(Var, Var, usize, Spread)> {
        let LinOp::Broadcast { x: w, shape, axes } = cx.lin_producer(x)? else {
            return None;
        };
        let (v, k) = cx.dup_half(w)?;
        Some((w, v, k, (shape, axes)))
    };
    let srcs: Vec<_> = m.lin_arrs.iter().map(|&x| through(x)).collect();
    let (i, j) = (0..srcs.len()).find_map(|i| {
        let (_, v, k, sp) = srcs[i].as_ref()?;
        let j = (i + 1..srcs.len()).find(
            |&j| matches!(&srcs[j], Some((_, v2, k2, sp2)) if v2 == v && k2 != k && sp2 == sp),
        )?;
        Some((i, j))
    })?;
    let (wi, v, k, (shape, axes)) = srcs[i].clone()?;
    let (xi, xj) = (m.lin_arrs[i], m.lin_arrs[j]);
    let mut new = s.clone();
    let Expr::Map(nm) = &mut new.expr else {
        return None;
    };
    // The broadcasts go, and the `dup` (killing one of its results deletes it).
    cx.kill(xi);
    cx.kill(xj);
    cx.kill(wi);
    let b = cx.fresh("bd", cx.ty(xi).clone(), true);
    cx.set_uses(b, 1);
    let spread = cx.lin_stmt(b, LinOp::Broadcast { x: v, shape, axes });
    let (pi, pj) = (nm.body.lin_params[i], nm.body.lin_params[j]);
    let e = cx.fresh("e", cx.ty(pi).clone(), true);
    cx.set_uses(e, 1);
    nm.lin_arrs[i] = b;
    nm.lin_arrs.remove(j);
    nm.body.lin_params[i] = e;
    nm.body.lin_params.remove(j);
    // Result `k` of the original `dup` went to operand `i`.
    let halves = if k == 0 { vec![pi, pj] } else { vec![pj, pi] };
    let split = cx.stmt(vec![], halves, Expr::Lin(LinOp::Dup(e)));
    nm.body.body.stmts.insert(0, split);
    Some(vec![spread, new])
}

/// The spread of the non-linear broadcast binding `a`, with its source.
fn broadcast_of(cx: &Cx<'_>, a: &Atom) -> Option<(Atom, Spread)> {
    match cx.def_atom(a)? {
        (Expr::Array(ArrayOp::Broadcast { arr, shape, axes }), 0)
            if !axes.is_empty() && axes.len() < shape.len() =>
        {
            Some((*arr, (shape.clone(), axes.clone())))
        }
        _ => None,
    }
}

/// The statements of the element function computing its linear result `r`:
/// their indices, the linear parameters they consume and the non-linear
/// parameters they read. `None` when one of them is not a linear operation,
/// reads a non-linear value bound in the body, or shares a binder with a
/// statement outside the slice.
fn linear_slice(l: &Lambda, r: Var) -> Option<(Vec<usize>, Vec<usize>, Vec<usize>)> {
    let body = &l.body;
    let bound: FastSet<Var> = body
        .stmts
        .iter()
        .flat_map(|s| s.binds.iter().copied())
        .collect();
    let mut needed: FastSet<Var> = [r].into_iter().collect();
    let mut stmts = vec![];
    let mut nl_params = FastSet::default();
    for (k, s) in body.stmts.iter().enumerate().rev() {
        if !s.lin_binds.iter().any(|v| needed.contains(v)) {
            continue;
        }
        if !matches!(s.expr, Expr::Lin(_))
            || !s.binds.is_empty()
            || !s.lin_binds.iter().all(|v| needed.contains(v))
        {
            return None;
        }
        let mut ok = true;
        for_each_operand(
            &s.expr,
            &mut |a| {
                if let Atom::Var(v) = a {
                    if let Some(p) = l.params.iter().position(|q| q == v) {
                        nl_params.insert(p);
                    } else if bound.contains(v) {
                        ok = false;
                    }
                }
            },
            &mut |v| {
                needed.insert(v);
            },
        );
        if !ok {
            return None;
        }
        stmts.push(k);
    }
    stmts.reverse();
    let lin_params: Vec<usize> = (0..l.lin_params.len())
        .filter(|&j| needed.contains(&l.lin_params[j]))
        .collect();
    // A result read by another result, or a linear variable of the slice
    // yielded besides `r`, is not the slice's alone.
    let others = body
        .lin_results
        .iter()
        .filter(|v| needed.contains(v))
        .count();
    if stmts.is_empty() || lin_params.is_empty() || others != 1 {
        return None;
    }
    let mut nl: Vec<usize> = nl_params.into_iter().collect();
    nl.sort_unstable();
    Some((stmts, lin_params, nl))
}

/// A linear result of a map computed only from elements of linear
/// broadcasts (and of non-linear broadcasts, all with the same sizes and
/// axes) is the broadcast of the same map over their sources: the element
/// function runs once per element of the source, not of the stretched array.
pub fn map_lbroadcast(s: &Stmt, cx: &mut Cx<'_>) -> Option<Vec<Stmt>> {
    let Expr::Map(m) = &s.expr else {
        return None;
    };
    (0..s.lin_binds.len()).find_map(|k| split_result(s, m, k, cx))
}

/// [`map_lbroadcast`] for the linear result `k`.
fn split_result(s: &Stmt, m: &Map, k: usize, cx: &mut Cx<'_>) -> Option<Vec<Stmt>> {
    let l = &m.body;
    let r = l.body.lin_results[k];
    let (stmts, lin_ps, nl_ps) = linear_slice(l, r)?;
    // What remains of the map keeps an operand to take its shape from, or
    // goes (when it has no other result and consumes no linear value).
    let arrays_left = m.arrs.len() + m.lin_arrs.len() - lin_ps.len();
    if s.binds.len() + s.lin_binds.len() > 1 {
        if arrays_left == 0 {
            return None;
        }
    } else if l
        .body
        .stmts
        .iter()
        .enumerate()
        .any(|(i, st)| !stmts.contains(&i) && super::facts::touches_linear(st))
        || lin_ps.len() < m.lin_arrs.len()
    {
        return None;
    }
    let mut spread: Option<Spread> = None;
    let mut same = |sp: Spread| match &spread {
        None => {
            spread = Some(sp);
            true
        }
        Some(old) => *old == sp,
    };
    let mut lin_srcs = vec![];
    for &j in &lin_ps {
        let (w, shape, axes) = lbroadcast_of(cx, m.lin_arrs[j])?;
        if !same((shape, axes)) {
            return None;
        }
        lin_srcs.push(w);
    }
    let mut nl_srcs = vec![];
    for &j in &nl_ps {
        let (src, sp) = broadcast_of(cx, &m.arrs[j])?;
        if !same(sp) {
            return None;
        }
        nl_srcs.push(src);
    }
    let (shape, axes) = spread?;
    let rank = axes.len();
    let elem = cx.ty(s.lin_binds[k]).elem()?;
    let mut rest = s.clone();
    let Expr::Map(rm) = &mut rest.expr else {
        return None;
    };
    // Committed: the operands' broadcasts go, their sources are stretched
    // to the sizes along the broadcast axes.
    let mut out = vec![];
    let mut lin_arrs = vec![];
    for (&j, &w) in lin_ps.iter().zip(&lin_srcs) {
        cx.kill(m.lin_arrs[j]);
        let (w1, st) = stretch(cx, w, &shape, &axes);
        out.push(st);
        lin_arrs.push(w1);
    }
    let mut arrs = vec![];
    let mut params = vec![];
    let mut rename: FastMap<Var, Atom> = FastMap::default();
    for (&j, src) in nl_ps.iter().zip(nl_srcs) {
        let ty = Ty::array(cx.atom_ty(&src).elem()?, rank);
        let v = cx.fresh("bs", ty, false);
        out.push(cx.stmt(
            vec![v],
            vec![],
            Expr::Array(ArrayOp::Broadcast {
                arr: src,
                shape: along(&shape, &axes),
                axes: (0..rank).collect(),
            }),
        ));
        arrs.push(Atom::Var(v));
        let p = l.params[j];
        let info = cx.vars.info(p).clone();
        let p1 = cx.fresh(&info.name, info.ty, false);
        rename.insert(p, Atom::Var(p1));
        params.push(p1);
    }
    let mut moved: Vec<Stmt> = stmts.iter().map(|&i| l.body.stmts[i].clone()).collect();
    for st in &mut moved {
        map_operands(
            &mut st.expr,
            &mut |a| {
                if let Some(b) = a.var().and_then(|v| rename.get(&v)) {
                    *a = *b;
                }
            },
            &mut |_| {},
        );
    }
    let o = cx.fresh("mb", Ty::array(elem, rank), true);
    cx.set_uses(o, 1);
    let lin_params: Vec<Var> = lin_ps.iter().map(|&j| l.lin_params[j]).collect();
    let small = Map::new(
        arrs,
        lin_arrs,
        params,
        lin_params,
        Block {
            stmts: moved,
            results: vec![],
            lin_results: vec![r],
        },
    );
    out.push(cx.stmt(vec![], vec![o], Expr::Map(small)));
    // What stays of the original map.
    for &j in lin_ps.iter().rev() {
        rm.lin_arrs.remove(j);
        rm.body.lin_params.remove(j);
    }
    for &i in stmts.iter().rev() {
        rm.body.body.stmts.remove(i);
    }
    rm.body.body.lin_results.remove(k);
    let y = rest.lin_binds.remove(k);
    if !(rest.binds.is_empty() && rest.lin_binds.is_empty()) {
        out.push(rest);
    }
    out.push(cx.lin_stmt(y, LinOp::Broadcast { x: o, shape, axes }));
    Some(out)
}
