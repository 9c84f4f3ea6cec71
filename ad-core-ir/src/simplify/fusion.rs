//! Fusion: producer/consumer pairs of array statements become one statement,
//! without the intermediate array (pull-array fusion, as in dF~'s rules).
//!
//! Every rule here except [`build_of_index`] and [`map_identity`] (local
//! rules of the rewrite engine) fuses a *producer* (a map or
//! build, or an elementwise linear operation seen as the map it is) into a
//! *consumer* in the same block that is the only reader of the
//! producer's results. The producer's body moves (it is not copied), so its
//! binders stay unique; the fused statement takes the consumer's place in
//! program order, which is fine since everything the producer reads is still
//! in scope there. Fusing may remove run-time failures (a shape mismatch, an
//! index out of range) but never adds one.
//!
//! Rules: `map(g, map(f, xs)) = map(g ∘ f, xs)` ([`map_map`]), the same
//! for `ladd`, `lneg` and `lscale` of arrays as producer or consumer
//! ([`lin_elementwise`]):
//!
//! ```text
//! let ; a, b = map(z, z ; ct) |x, y ; c| {       let ; s = map(z, z ; ct) |x, y ; c| {
//!   let ; c1, c2 = dup c                           let ; c1, c2 = dup c
//!   let ; d1 = lscale x, c1              =>        let ; d1 = lscale x, c1
//!   let ; d2 = lscale y, c2                        let ; d2 = lscale y, c2
//!   yield ; d2, d1                                 let ; e = ladd d2, d1
//! }                                                yield ; e
//! let ; s = ladd a, b                            }
//! ```
//!
//! and
//! `map(f, build(g)) = build(f ∘ g)` ([`map_of_build`]),
//! `build(sh, |i| a[i]) = a` ([`build_of_index`]), `map(|x| x, a) = a`
//! ([`map_identity`]),
//! `build(sh, f)[i] = f(i)` ([`index_of_build`]),
//! `gather(build(sh, f), idx) = build(len idx, |k| f(idx[k]))` ([`gather_of_build`]),
//! `sum(map(|a, b| a * b, x, y)) = x · y` ([`dot_of_map`]) and its linear twin
//! `lsum(map(|a ; dx| lscale(a, dx), x ; dx)) = lmatmul(x ; dx)` ([`ldot_of_map`]),
//! and optionally `sum(build(n, f)) = loop n (acc = 0) { acc + f(i) }`
//! ([`sum_to_loop`]).

use super::engine::{Cx, Rule};
use super::facts::{
    count, counts_of, for_each_block_mut, stmt, touches_linear, Counts, CountsMemo,
};
use crate::fast_hash::{FastMap, FastSet};
use crate::ir::*;
use crate::types::Ty;
use crate::visit::substitute_block;

/// A fusion of `producer` (binding `v`, among others) into `consumer`.
pub(super) type Fuser = fn(
    producer: &Stmt,
    consumer: &Stmt,
    v: Var,
    counts: &Counts,
    vars: &mut VarTable,
) -> Option<Vec<Stmt>>;

/// Runs a producer/consumer fusion over every block of `f`.
pub(super) fn fuse_pairs(
    f: &mut Func,
    is_producer: fn(&Stmt, &VarTable) -> bool,
    operands: fn(&Stmt) -> Vec<Var>,
    fuse: Fuser,
    memo: &mut CountsMemo,
) -> bool {
    if !any_stmt(&f.body, &|s| is_producer(s, &f.vars)) {
        return false;
    }
    let counts = memo.take().unwrap_or_else(|| counts_of(&f.body));
    let Func { body, vars, .. } = f;
    let mut changed = false;
    for_each_block_mut(body, &mut |b| {
        // Only a block with a producer of its own can fuse anything.
        if !b.stmts.iter().any(|s| is_producer(s, vars)) {
            return;
        }
        let mut slots: Vec<Slot> = std::mem::take(&mut b.stmts)
            .into_iter()
            .map(Slot::One)
            .collect();
        let mut producers: FastMap<Var, usize> = FastMap::default();
        for j in 0..slots.len() {
            'retry: while let [consumer] = slots[j].as_slice() {
                for v in operands(consumer) {
                    let Some(&i) = producers.get(&v) else {
                        continue;
                    };
                    let [producer] = slots[i].as_slice() else {
                        continue;
                    };
                    if let Some(new) = fuse(producer, consumer, v, &counts, vars) {
                        slots[j] = Slot::Many(new);
                        slots[i] = Slot::Many(vec![]);
                        changed = true;
                        continue 'retry;
                    }
                }
                break;
            }
            if let [s] = slots[j].as_slice() {
                if is_producer(s, vars) {
                    for v in s.binds.iter().chain(&s.lin_binds) {
                        producers.insert(*v, j);
                    }
                }
            }
        }
        let mut stmts = Vec::with_capacity(slots.len());
        for slot in slots {
            match slot {
                Slot::One(s) => stmts.push(s),
                Slot::Many(v) => stmts.extend(v),
            }
        }
        b.stmts = stmts;
    });
    if !changed {
        *memo = Some(counts);
    }
    changed
}

/// The statements a statement of a block became while [`fuse_pairs`] runs:
/// itself (no allocation per statement), or what a fusion made of it.
// Boxing the one statement would allocate per statement, what this avoids.
#[allow(clippy::large_enum_variant)]
enum Slot {
    One(Stmt),
    Many(Vec<Stmt>),
}

impl Slot {
    fn as_slice(&self) -> &[Stmt] {
        match self {
            Slot::One(s) => std::slice::from_ref(s),
            Slot::Many(v) => v,
        }
    }
}

/// Whether some statement of `b` (nested blocks included) satisfies `p`.
fn any_stmt(b: &Block, p: &dyn Fn(&Stmt) -> bool) -> bool {
    b.stmts
        .iter()
        .any(|s| p(s) || crate::visit::blocks(&s.expr).any(|nb| any_stmt(nb, p)))
}

/// Occurrences of `v` in a list of atoms.
fn occurrences(v: Var, atoms: &[Atom]) -> usize {
    atoms.iter().filter(|a| a.var() == Some(v)).count()
}

/// The rank of the arrays a map iterates over.
fn map_rank(m: &Map, vars: &VarTable) -> Option<usize> {
    match (m.arrs.first(), m.lin_arrs.first()) {
        (Some(a), _) => crate::typing::atom_ty(a, vars).rank(),
        (None, Some(x)) => vars.ty(*x).rank(),
        (None, None) => None,
    }
}

/// Whether every result of a statement is an array of `rank` (so the body
/// returns scalars and the results have the iteration shape).
fn scalar_elements(s: &Stmt, rank: usize, vars: &VarTable) -> bool {
    s.binds
        .iter()
        .chain(&s.lin_binds)
        .all(|v| vars.ty(*v).rank() == Some(rank))
}

fn is_map(s: &Stmt, _: &VarTable) -> bool {
    matches!(s.expr, Expr::Map(_))
}

fn is_build(s: &Stmt, _: &VarTable) -> bool {
    matches!(s.expr, Expr::Build(_))
}

fn map_array_operands(s: &Stmt) -> Vec<Var> {
    match &s.expr {
        Expr::Map(m) => m
            .arrs
            .iter()
            .filter_map(Atom::var)
            .chain(m.lin_arrs.iter().copied())
            .collect(),
        _ => vec![],
    }
}

fn array_operand(s: &Stmt) -> Vec<Var> {
    match &s.expr {
        Expr::Array(
            ArrayOp::Index { arr, .. } | ArrayOp::Gather { arr, .. } | ArrayOp::Reduce { arr, .. },
        ) => arr.var().into_iter().collect(),
        Expr::Lin(LinOp::Sum { x, .. }) => vec![*x],
        _ => vec![],
    }
}

/// `map(g, .. map(f, xs) ..) = map(g ∘ f, xs ..)` when every result of the
/// inner map is read only as an array operand of the outer one (non-linear
/// and linear maps alike).
pub fn map_map(f: &mut Func, memo: &mut CountsMemo) -> bool {
    fuse_pairs(f, is_map, map_array_operands, fuse_map_map, memo)
}

fn fuse_map_map(
    producer: &Stmt,
    consumer: &Stmt,
    _v: Var,
    counts: &Counts,
    vars: &mut VarTable,
) -> Option<Vec<Stmt>> {
    let (Expr::Map(inner), Expr::Map(outer)) = (&producer.expr, &consumer.expr) else {
        return None;
    };
    let rank = map_rank(inner, vars)?;
    if !scalar_elements(producer, rank, vars) {
        return None;
    }
    for v in &producer.binds {
        if count(counts, *v) != occurrences(*v, &outer.arrs) {
            return None;
        }
    }
    for v in &producer.lin_binds {
        if count(counts, *v) != 1 || !outer.lin_arrs.contains(v) {
            return None;
        }
    }
    let mut new = Map {
        arrs: inner.arrs.clone(),
        lin_arrs: inner.lin_arrs.clone(),
        body: Lambda {
            params: inner.body.params.clone(),
            lin_params: inner.body.lin_params.clone(),
            body: Block::default(),
        },
    };
    let mut nl = FastMap::default();
    let mut lin = FastMap::default();
    for (a, p) in outer.arrs.iter().zip(&outer.body.params) {
        match a
            .var()
            .and_then(|v| producer.binds.iter().position(|b| *b == v))
        {
            Some(k) => {
                nl.insert(*p, inner.body.body.results[k]);
            }
            None => {
                new.arrs.push(*a);
                new.body.params.push(*p);
            }
        }
    }
    for (x, p) in outer.lin_arrs.iter().zip(&outer.body.lin_params) {
        match producer.lin_binds.iter().position(|b| b == x) {
            Some(k) => {
                lin.insert(*p, inner.body.body.lin_results[k]);
            }
            None => {
                new.lin_arrs.push(*x);
                new.body.lin_params.push(*p);
            }
        }
    }
    let mut ob = outer.body.body.clone();
    substitute_block(&mut ob, &nl, &lin);
    new.body.body.stmts = inner.body.body.stmts.clone();
    new.body.body.stmts.extend(ob.stmts);
    new.body.body.results = ob.results;
    new.body.body.lin_results = ob.lin_results;
    Some(vec![stmt(
        consumer.binds.clone(),
        consumer.lin_binds.clone(),
        Expr::Map(new),
        consumer.src,
    )])
}

/// Elementwise linear operations on arrays fused with the maps next to them:
/// `ladd(a, b)`, `lneg(a)` and `lscale(s, a)` (a scalar or same-shape `s`)
/// are the maps they stand for (`ladd(a, b) = map(; a, b) |; p, q| ladd(p, q)`),
/// so [`map_map`]'s rule applies to them, as consumer
/// (`ladd(map(f, xs).0, map(f, xs).1) = map(|x| let (u, v) = f(x) in u + v, xs)`:
/// the sum of a product rule's two terms, one pass and no intermediate
/// arrays) and as producer (`map(g, ladd(a, b)) = map(|p, q| g(p + q), a, b)`).
/// The same conditions as [`map_map`]: every result of the producer is read
/// only by the consumer. Each element sees the same operations in the same
/// order, so the values are the same bits.
pub fn lin_elementwise(f: &mut Func, memo: &mut CountsMemo) -> bool {
    let into = fuse_pairs(
        f,
        is_map,
        lin_elementwise_operands,
        |p, c, v, n, vars| {
            // `map_map` refuses a producer with a result the consumer does not
            // read: no fresh variables are spent on writing the consumer as a map.
            let reads = lin_elementwise_operands(c);
            if !p
                .binds
                .iter()
                .chain(&p.lin_binds)
                .all(|r| reads.contains(r))
            {
                return None;
            }
            fuse_map_map(p, &lin_as_map(c, vars)?, v, n, vars)
        },
        memo,
    );
    let from = fuse_pairs(
        f,
        is_lin_elementwise,
        map_array_operands,
        |p, c, v, n, vars| fuse_map_map(&lin_as_map(p, vars)?, c, v, n, vars),
        memo,
    );
    into | from
}

/// An elementwise linear operation with an array result (the scalar ones,
/// in every derivative's body, have no map to fuse with: [`lin_as_map`]
/// refuses them, and leaving them out spares the walk).
fn is_lin_elementwise(s: &Stmt, vars: &VarTable) -> bool {
    matches!(
        s.expr,
        Expr::Lin(LinOp::Add(..) | LinOp::Neg(_) | LinOp::Scale { .. })
    ) && matches!(s.lin_binds.as_slice(), [y] if matches!(vars.ty(*y), Ty::Array { .. }))
}

/// The array operands of an elementwise linear operation (the candidates
/// for a producing map).
fn lin_elementwise_operands(s: &Stmt) -> Vec<Var> {
    match &s.expr {
        Expr::Lin(LinOp::Add(a, b)) => vec![*a, *b],
        Expr::Lin(LinOp::Neg(a)) => vec![*a],
        Expr::Lin(LinOp::Scale { s, x }) => s.var().into_iter().chain([*x]).collect(),
        _ => vec![],
    }
}

/// `ladd(a, b)`, `lneg(a)` or `lscale(s, a)` on arrays as the equivalent map
/// statement (same binder, same source), or `None` for anything else
/// (scalars, a scalar scaled by an array).
fn lin_as_map(s: &Stmt, vars: &mut VarTable) -> Option<Stmt> {
    let (Expr::Lin(op), [y]) = (&s.expr, s.lin_binds.as_slice()) else {
        return None;
    };
    let Ty::Array { elem, rank } = vars.ty(*y).clone() else {
        return None;
    };
    let el = Ty::Scalar(elem);
    let out = vars.fresh("ct_el", el.clone(), true);
    let mut arrs = vec![];
    let mut params = vec![];
    let (lin_arrs, lin_params, op) = match op {
        LinOp::Add(a, b) => {
            let (p, q) = (
                vars.fresh("ct_el", el.clone(), true),
                vars.fresh("ct_el", el, true),
            );
            (vec![*a, *b], vec![p, q], LinOp::Add(p, q))
        }
        LinOp::Neg(a) => {
            let p = vars.fresh("ct_el", el, true);
            (vec![*a], vec![p], LinOp::Neg(p))
        }
        LinOp::Scale { s: k, x } => {
            if vars.ty(*x).rank() != Some(rank) {
                return None;
            }
            let p = vars.fresh("ct_el", el.clone(), true);
            let k = match crate::typing::atom_ty(k, vars).rank() {
                Some(0) => *k,
                Some(r) if r == rank => {
                    let e = vars.fresh("x_el", el, false);
                    arrs.push(*k);
                    params.push(e);
                    Atom::Var(e)
                }
                _ => return None,
            };
            (vec![*x], vec![p], LinOp::Scale { s: k, x: p })
        }
        _ => return None,
    };
    let body = Block {
        stmts: vec![stmt(vec![], vec![out], Expr::Lin(op), s.src)],
        results: vec![],
        lin_results: vec![out],
    };
    Some(stmt(
        vec![],
        vec![*y],
        Expr::Map(Map::new(arrs, lin_arrs, params, lin_params, body)),
        s.src,
    ))
}

/// `map(g, .. build(sh, f) ..) = build(sh, |i| g(.. f(i) .., other[i]..))`
/// when the build (non-linear, scalar elements) is read only by the map.
pub fn map_of_build(f: &mut Func, memo: &mut CountsMemo) -> bool {
    fuse_pairs(f, is_build, map_array_operands, fuse_map_of_build, memo)
}

fn fuse_map_of_build(
    producer: &Stmt,
    consumer: &Stmt,
    _v: Var,
    counts: &Counts,
    vars: &mut VarTable,
) -> Option<Vec<Stmt>> {
    let (Expr::Build(inner), Expr::Map(outer)) = (&producer.expr, &consumer.expr) else {
        return None;
    };
    if touches_linear(producer) || touches_linear(consumer) {
        return None;
    }
    let rank = inner.shape.len();
    if !scalar_elements(producer, rank, vars) || map_rank(outer, vars) != Some(rank) {
        return None;
    }
    for v in &producer.binds {
        if count(counts, *v) != occurrences(*v, &outer.arrs) {
            return None;
        }
    }
    let idx: Vec<Atom> = inner.body.params.iter().map(|p| Atom::Var(*p)).collect();
    let mut stmts = inner.body.body.stmts.clone();
    let mut nl = FastMap::default();
    for (a, p) in outer.arrs.iter().zip(&outer.body.params) {
        match a
            .var()
            .and_then(|v| producer.binds.iter().position(|b| *b == v))
        {
            Some(k) => {
                nl.insert(*p, inner.body.body.results[k]);
            }
            None => stmts.push(stmt(
                vec![*p],
                vec![],
                Expr::Array(ArrayOp::Index {
                    arr: *a,
                    idx: idx.clone(),
                }),
                consumer.src,
            )),
        }
    }
    let mut ob = outer.body.body.clone();
    substitute_block(&mut ob, &nl, &FastMap::default());
    stmts.extend(ob.stmts);
    let new = Build {
        shape: inner.shape.clone(),
        body: Lambda {
            params: inner.body.params.clone(),
            lin_params: vec![],
            body: Block {
                stmts,
                results: ob.results,
                lin_results: vec![],
            },
        },
    };
    Some(vec![stmt(
        consumer.binds.clone(),
        vec![],
        Expr::Build(new),
        consumer.src,
    )])
}

/// `build(sh, f)[i..] = f(i..)` for a full index of the build's index space
/// when the build (non-linear, one result) is read only there: its body is
/// inlined with the indices for its parameters.
pub fn index_of_build(f: &mut Func, memo: &mut CountsMemo) -> bool {
    fuse_pairs(f, is_build, array_operand, fuse_index_of_build, memo)
}

fn fuse_index_of_build(
    producer: &Stmt,
    consumer: &Stmt,
    v: Var,
    counts: &Counts,
    _vars: &mut VarTable,
) -> Option<Vec<Stmt>> {
    let (Expr::Build(inner), Expr::Array(ArrayOp::Index { arr, idx })) =
        (&producer.expr, &consumer.expr)
    else {
        return None;
    };
    let [y] = consumer.binds.as_slice() else {
        return None;
    };
    if producer.binds != [v]
        || arr.var() != Some(v)
        || count(counts, v) != 1
        || touches_linear(producer)
        || idx.len() != inner.shape.len()
    {
        return None;
    }
    let nl: FastMap<Var, Atom> = inner
        .body
        .params
        .iter()
        .copied()
        .zip(idx.iter().copied())
        .collect();
    let mut body = inner.body.body.clone();
    substitute_block(&mut body, &nl, &FastMap::default());
    let mut out = body.stmts;
    out.push(stmt(
        vec![*y],
        vec![],
        Expr::Atom(body.results[0]),
        consumer.src,
    ));
    Some(out)
}

/// `gather(build(sh, f), idx) = build([len idx, sh[1..]], |k, j..| f(idx[k], j..))`
/// when the build (non-linear, one result) is read only by the gather: only
/// the gathered rows are computed.
pub fn gather_of_build(f: &mut Func, memo: &mut CountsMemo) -> bool {
    fuse_pairs(f, is_build, array_operand, fuse_gather_of_build, memo)
}

fn fuse_gather_of_build(
    producer: &Stmt,
    consumer: &Stmt,
    v: Var,
    counts: &Counts,
    vars: &mut VarTable,
) -> Option<Vec<Stmt>> {
    let (Expr::Build(inner), Expr::Array(ArrayOp::Gather { arr, idx })) =
        (&producer.expr, &consumer.expr)
    else {
        return None;
    };
    let [y] = consumer.binds.as_slice() else {
        return None;
    };
    if producer.binds != [v]
        || arr.var() != Some(v)
        || count(counts, v) != 1
        || touches_linear(producer)
    {
        return None;
    }
    let m = vars.fresh("n", Ty::I64, false);
    let k = vars.fresh("k", Ty::I64, false);
    let p0 = inner.body.params[0];
    let mut shape = vec![Atom::Var(m)];
    shape.extend_from_slice(&inner.shape[1..]);
    let mut params = vec![k];
    params.extend_from_slice(&inner.body.params[1..]);
    let mut stmts = vec![stmt(
        vec![p0],
        vec![],
        Expr::Array(ArrayOp::Index {
            arr: *idx,
            idx: vec![Atom::Var(k)],
        }),
        consumer.src,
    )];
    stmts.extend(inner.body.body.stmts.iter().cloned());
    let new = Build {
        shape,
        body: Lambda {
            params,
            lin_params: vec![],
            body: Block {
                stmts,
                results: inner.body.body.results.clone(),
                lin_results: vec![],
            },
        },
    };
    Some(vec![
        stmt(
            vec![m],
            vec![],
            Expr::Array(ArrayOp::Shape { arr: *idx, axis: 0 }),
            consumer.src,
        ),
        stmt(vec![*y], vec![], Expr::Build(new), consumer.src),
    ])
}

/// Whether the single statement of a one-statement map body multiplies the
/// parameters `p` and `q` (in either order).
fn body_is_product(body: &Block, p: Var, q: Var) -> bool {
    match (body.stmts.as_slice(), body.results.as_slice()) {
        (
            [Stmt {
                binds,
                expr: Expr::Prim(Prim::Mul, xs),
                ..
            }],
            [Atom::Var(r)],
        ) if binds.as_slice() == [*r] && body.lin_results.is_empty() => {
            let (a, b) = (Atom::Var(p), Atom::Var(q));
            xs.as_slice() == [a, b] || xs.as_slice() == [b, a]
        }
        _ => false,
    }
}

fn sums_vector(axis: &Option<usize>) -> bool {
    matches!(axis, None | Some(0))
}

/// `sum(map(|a, b| a * b, x, y)) = matmul(x, y)` (a dot product) for vectors
/// `x`, `y` when the map is read only by the sum; also `sum(map(|a| a * a, x))
/// = matmul(x, x)`. The summation order may change.
pub fn dot_of_map(f: &mut Func, memo: &mut CountsMemo) -> bool {
    fuse_pairs(f, is_map, array_operand, fuse_dot_of_map, memo)
}

fn fuse_dot_of_map(
    producer: &Stmt,
    consumer: &Stmt,
    v: Var,
    counts: &Counts,
    vars: &mut VarTable,
) -> Option<Vec<Stmt>> {
    let (
        Expr::Map(m),
        Expr::Array(ArrayOp::Reduce {
            op: ReduceOp::Sum,
            arr,
            axis,
        }),
    ) = (&producer.expr, &consumer.expr)
    else {
        return None;
    };
    if producer.binds != [v]
        || !producer.lin_binds.is_empty()
        || !m.lin_arrs.is_empty()
        || arr.var() != Some(v)
        || count(counts, v) != 1
        || !sums_vector(axis)
        || *vars.ty(v) != Ty::f64s(1)
    {
        return None;
    }
    let ps = &m.body.params;
    let (a, b) = match m.arrs.as_slice() {
        [x, y] if body_is_product(&m.body.body, ps[0], ps[1]) => (*x, *y),
        [x] if body_is_product(&m.body.body, ps[0], ps[0]) => (*x, *x),
        _ => return None,
    };
    Some(vec![stmt(
        consumer.binds.clone(),
        vec![],
        Expr::Array(ArrayOp::MatMul { a, b }),
        consumer.src,
    )])
}

/// `lsum(map(|a ; dx| lscale(a, dx), x ; dx)) = lmatmul(x ; dx)` for vectors
/// (the linear dot product), when the map is read only by the sum.
pub fn ldot_of_map(f: &mut Func, memo: &mut CountsMemo) -> bool {
    fuse_pairs(f, is_map, array_operand, fuse_ldot_of_map, memo)
}

fn fuse_ldot_of_map(
    producer: &Stmt,
    consumer: &Stmt,
    v: Var,
    _counts: &Counts,
    vars: &mut VarTable,
) -> Option<Vec<Stmt>> {
    let (Expr::Map(m), Expr::Lin(LinOp::Sum { x, axis })) = (&producer.expr, &consumer.expr) else {
        return None;
    };
    if !producer.binds.is_empty()
        || producer.lin_binds != [v]
        || *x != v
        || !sums_vector(axis)
        || *vars.ty(v) != Ty::f64s(1)
    {
        return None;
    }
    let ([a], [dx], [pa], [pdx]) = (
        m.arrs.as_slice(),
        m.lin_arrs.as_slice(),
        m.body.params.as_slice(),
        m.body.lin_params.as_slice(),
    ) else {
        return None;
    };
    let body = &m.body.body;
    let ok = match (body.stmts.as_slice(), body.lin_results.as_slice()) {
        (
            [Stmt {
                binds,
                lin_binds,
                expr: Expr::Lin(LinOp::Scale { s, x }),
                ..
            }],
            [r],
        ) => {
            binds.is_empty()
                && lin_binds.as_slice() == [*r]
                && *s == Atom::Var(*pa)
                && x == pdx
                && body.results.is_empty()
        }
        _ => false,
    };
    if !ok {
        return None;
    }
    Some(vec![stmt(
        vec![],
        consumer.lin_binds.clone(),
        Expr::Lin(LinOp::MatMul {
            a: *a,
            x: *dx,
            lin_left: false,
        }),
        consumer.src,
    )])
}

/// `sum(build(n, f)) = loop n (acc = 0) |i| { acc + f(i) }`: no intermediate
/// array (off by default: it trades a parallel build for a sequential loop).
pub fn sum_to_loop(f: &mut Func, memo: &mut CountsMemo) -> bool {
    fuse_pairs(f, is_build, array_operand, fuse_sum_to_loop, memo)
}

fn fuse_sum_to_loop(
    producer: &Stmt,
    consumer: &Stmt,
    v: Var,
    counts: &Counts,
    vars: &mut VarTable,
) -> Option<Vec<Stmt>> {
    let (
        Expr::Build(b),
        Expr::Array(ArrayOp::Reduce {
            op: ReduceOp::Sum,
            arr,
            axis,
        }),
    ) = (&producer.expr, &consumer.expr)
    else {
        return None;
    };
    if producer.binds != [v]
        || arr.var() != Some(v)
        || count(counts, v) != 1
        || touches_linear(producer)
        || !sums_vector(axis)
        || *vars.ty(v) != Ty::f64s(1)
        || b.shape.len() != 1
    {
        return None;
    }
    let acc = vars.fresh("acc", Ty::F64, false);
    let acc2 = vars.fresh("acc", Ty::F64, false);
    let mut stmts = b.body.body.stmts.clone();
    stmts.push(stmt(
        vec![acc2],
        vec![],
        Expr::Prim(Prim::Add, vec![Atom::Var(acc), b.body.body.results[0]]),
        consumer.src,
    ));
    let lp = Loop {
        n: b.shape[0],
        rev: false,
        init: vec![Atom::F64(0.0)],
        lin_init: vec![],
        body: Lambda {
            params: vec![b.body.params[0], acc],
            lin_params: vec![],
            body: Block {
                stmts,
                results: vec![Atom::Var(acc2)],
                lin_results: vec![],
            },
        },
    };
    Some(vec![stmt(
        consumer.binds.clone(),
        vec![],
        Expr::Loop(lp),
        consumer.src,
    )])
}

/// `build(sh, |i..| a[i..]) = a` when `a` is bound outside the body and its
/// leading sizes are known to equal `sh` (see [`super::facts::Facts`]). For a
/// build with several results, each result of that form is replaced by its
/// array and removed from the build.
pub fn build_of_index(s: &Stmt, cx: &mut Cx<'_>) -> Option<Vec<Stmt>> {
    let Expr::Build(b) = &s.expr else {
        return None;
    };
    let body = &b.body.body;
    let params: Vec<Atom> = b.body.params.iter().map(|p| Atom::Var(*p)).collect();
    let local: FastSet<Var> = b
        .body
        .params
        .iter()
        .chain(body.stmts.iter().flat_map(|t| t.binds.iter()))
        .copied()
        .collect();
    let mut ids: Vec<(usize, Var)> = vec![];
    for (k, r) in body.results.iter().enumerate() {
        let Atom::Var(r) = r else {
            continue;
        };
        let Some(Expr::Array(ArrayOp::Index {
            arr: Atom::Var(a),
            idx,
        })) = body
            .stmts
            .iter()
            .find(|t| t.binds.as_slice() == [*r])
            .map(|t| &t.expr)
        else {
            continue;
        };
        if *idx != params
            || local.contains(a)
            || cx.ty(*a).rank().is_none_or(|rk| rk < params.len())
        {
            continue;
        }
        let same = b
            .shape
            .iter()
            .enumerate()
            .all(|(k, n)| cx.facts.same_dim(Dim::Atom(*n), Dim::Of(*a, k)));
        if same {
            ids.push((k, *a));
        }
    }
    if ids.is_empty() {
        return None;
    }
    shrink(s, cx, &ids)
}

/// `map(|.., x_j, ..| .. yield x_j ..)`: a result that is an element
/// parameter is the array itself (`map(|x| x, a) = a`); likewise for a linear
/// element passed through (`map(|; dx| dx, ; da) = da`, the operand leaves
/// the map as long as another one keeps its shape).
pub fn map_identity(s: &Stmt, cx: &mut Cx<'_>) -> Option<Vec<Stmt>> {
    let Expr::Map(m) = &s.expr else {
        return None;
    };
    let ids: Vec<(usize, Var)> = m
        .body
        .body
        .results
        .iter()
        .enumerate()
        .filter_map(|(k, r)| {
            let j = m.body.params.iter().position(|p| r.var() == Some(*p))?;
            Some((k, m.arrs[j].var()?))
        })
        .collect();
    // Linear pass-throughs: (result k, operand j).
    let mut lin_ids: Vec<(usize, usize)> = m
        .body
        .body
        .lin_results
        .iter()
        .enumerate()
        .filter_map(|(k, r)| Some((k, m.body.lin_params.iter().position(|p| p == r)?)))
        .collect();
    let arrays = m.arrs.len() + m.lin_arrs.len();
    while !lin_ids.is_empty() && lin_ids.len() >= arrays {
        lin_ids.pop();
    }
    if ids.is_empty() && lin_ids.is_empty() {
        return None;
    }
    if lin_ids.is_empty() {
        return shrink(s, cx, &ids);
    }
    let mut new = s.clone();
    let Expr::Map(nm) = &mut new.expr else {
        return None;
    };
    lin_ids.sort_by_key(|(_, j)| std::cmp::Reverse(*j));
    let mut ks: Vec<usize> = vec![];
    for (k, j) in &lin_ids {
        cx.replace_lin(s.lin_binds[*k], m.lin_arrs[*j]);
        nm.lin_arrs.remove(*j);
        nm.body.lin_params.remove(*j);
        ks.push(*k);
    }
    ks.sort_unstable();
    for k in ks.into_iter().rev() {
        nm.body.body.lin_results.remove(k);
        new.lin_binds.remove(k);
    }
    if ids.is_empty() {
        return Some(vec![new]);
    }
    shrink(&new, cx, &ids)
}

/// Replaces the listed non-linear results `(k, a)` of a build or map by the
/// arrays `a` and removes them from the statement.
fn shrink(s: &Stmt, cx: &mut Cx<'_>, ids: &[(usize, Var)]) -> Option<Vec<Stmt>> {
    let mut new = s.clone();
    let body = match &mut new.expr {
        Expr::Build(b) => &mut b.body.body,
        Expr::Map(m) => &mut m.body.body,
        _ => return None,
    };
    for (k, a) in ids.iter().rev() {
        cx.replace_nl(s.binds[*k], Atom::Var(*a));
        new.binds.remove(*k);
        body.results.remove(*k);
    }
    if new.binds.is_empty() && new.lin_binds.is_empty() && !touches_linear(s) {
        return Some(vec![]);
    }
    Some(vec![new])
}

/// The fusion rules run by the rewrite engine.
pub const RULES: &[Rule] = &[
    Rule {
        name: "build_of_index",
        apply: build_of_index,
    },
    Rule {
        name: "map_identity",
        apply: map_identity,
    },
];
