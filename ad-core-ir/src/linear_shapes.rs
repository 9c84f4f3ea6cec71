//! The sizes of a `#[linear]` function's linear array parameters, for its
//! transpose: `f_transpose(a, ct)` has no `x` to read `x.len()` from, so
//! each size that [`crate::linear_form`] turned into a shape parameter must
//! follow from what the transpose has: the non-linear parameters' shapes and
//! the cotangent's. The program's linear operations say which sizes are
//! equal; this solves those equations by propagation:
//!
//! ```text
//! def matvec(a: [[f64]], len_x_0: i64 ; x: [f64]) -> (; [f64]) {
//!   let ; y = lmatmul a, x        -- shape(x, 0) = shape(a, 1)
//!   return ; y                    -- shape(y, 0) = shape(ct, 0)
//! }
//! ==> len_x_0 = Param(a, 1)
//! ```
//!
//! Sizes are looked through copies and through the guards the front end
//! puts on loop counts (`max(n, 0)`, `select(.., n)`). When these exact
//! equations leave a size open, one weaker rule follows: an array read at
//! the index of a loop or build (`x[i]` for `i` in `0..n`) has size `n`
//! (the loop covers the array). A size still open is an error for the caller
//! to report.

use crate::fast_hash::FastMap;
use crate::ir::*;
use crate::linear_form::LinearForm;
use crate::transpose::shapes::Binders;

/// Where a shape parameter's value comes from, for a caller that has the
/// function's non-linear parameters and the cotangents of its results.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShapeSource {
    /// Axis `1` of non-linear parameter `0` (an index into the parameters).
    Param(usize, usize),
    /// Axis `1` of linear result `0` (its cotangent has the same shape).
    Result(usize, usize),
    /// A constant.
    Const(i64),
}

/// For each of `lf`'s shape parameters, where its value comes from, if the
/// program fixes it: equal sizes required by scaling with a non-linear
/// array, maps over non-linear arrays, matrix products, sums of two linear
/// values, and a linear result whose size is the parameter's (the
/// cotangent's size then). The first `n_params` parameters are the ones a
/// caller has.
pub fn solve_shapes(lf: &LinearForm, n_params: usize) -> Vec<Option<ShapeSource>> {
    let f = &lf.func;
    let binders_of = Binders::of(f);
    let shape = |v: Var| -> Option<Vec<Dim>> {
        match binders_of.shape_of(&f.vars, v).ok()? {
            ShapeTree::Array(ds) => Some(ds),
            _ => None,
        }
    };
    let mut eqs: Vec<(Dim, Known)> = vec![];
    let mut pairs: Vec<(Dim, Dim)> = vec![];
    let mut weak: Vec<(Dim, Dim)> = vec![];
    collect_equations(
        &f.body,
        &f.vars,
        &shape,
        &mut pairs,
        &mut FastMap::default(),
        &mut weak,
    );
    let mut defs: FastMap<Var, Expr> = FastMap::default();
    definitions(&f.body, &mut defs);
    // Looks through copies and loop-count guards.
    let resolve = |mut v: Var| -> Var {
        for _ in 0..64 {
            let next = match defs.get(&v) {
                Some(Expr::Atom(Atom::Var(w))) => *w,
                Some(Expr::Prim(Prim::Max | Prim::UMax, args)) => match args.as_slice() {
                    [Atom::Var(w), Atom::I64(0)] | [Atom::I64(0), Atom::Var(w)] => *w,
                    _ => break,
                },
                Some(Expr::Prim(Prim::Select, args)) => match args.as_slice() {
                    [_, _, Atom::Var(w)] => *w,
                    _ => break,
                },
                _ => break,
            };
            v = next;
        }
        v
    };
    for (j, r) in f.body.lin_results.iter().enumerate() {
        for (k, d) in shape(*r).unwrap_or_default().into_iter().enumerate() {
            eqs.push((d, Known::Src(ShapeSource::Result(j, k))));
        }
    }
    let param_index = |v: Var| f.params[..n_params].iter().position(|p| *p == v);
    let known = |d: &Dim| -> Option<Known> {
        match d {
            Dim::Atom(Atom::I64(c)) => Some(Known::Src(ShapeSource::Const(*c))),
            Dim::Of(v, k) => param_index(*v).map(|i| Known::Src(ShapeSource::Param(i, *k))),
            Dim::Atom(Atom::Var(v)) => {
                let v = resolve(*v);
                match defs.get(&v) {
                    Some(Expr::Array(ArrayOp::Shape {
                        arr: Atom::Var(a),
                        axis,
                    })) => param_index(*a).map(|i| Known::Src(ShapeSource::Param(i, *axis))),
                    _ => Some(Known::Unknown(v)),
                }
            }
            Dim::Atom(_) => None,
        }
    };
    let mut solved: FastMap<Var, ShapeSource> = FastMap::default();
    let mut all: Vec<(Known, Known)> = vec![];
    for (a, b) in &pairs {
        if let (Some(x), Some(y)) = (known(a), known(b)) {
            all.push((x, y));
        }
    }
    for (d, k) in &eqs {
        if let Some(x) = known(d) {
            all.push((x, *k));
        }
    }
    let strong = all.len();
    for (a, b) in &weak {
        if let (Some(x), Some(y)) = (known(a), known(b)) {
            all.push((x, y));
        }
    }
    // The exact equations to their fixpoint first, then with the weak ones.
    for n in [strong, all.len()] {
        propagate(&all[..n], &mut solved);
    }
    lf.shape_params
        .iter()
        .map(|(_, _, v)| solved.get(v).copied())
        .collect()
}

/// Solves unknowns equal to known sizes, to the fixpoint.
fn propagate(all: &[(Known, Known)], solved: &mut FastMap<Var, ShapeSource>) {
    loop {
        let before = solved.len();
        for (a, b) in all {
            let value = |k: &Known, solved: &mut FastMap<Var, ShapeSource>| match k {
                Known::Src(s) => Some(*s),
                Known::Unknown(v) => solved.get(v).copied(),
            };
            for (x, y) in [(a, b), (b, a)] {
                if let Known::Unknown(v) = x {
                    if !solved.contains_key(v) {
                        if let Some(s) = value(y, solved) {
                            solved.insert(*v, s);
                        }
                    }
                }
            }
        }
        if solved.len() == before {
            break;
        }
    }
}

/// The defining expression of every non-linear scalar variable.
fn definitions(b: &Block, out: &mut FastMap<Var, Expr>) {
    for s in &b.stmts {
        if let ([v], Expr::Atom(_) | Expr::Prim(..) | Expr::Array(ArrayOp::Shape { .. })) =
            (s.binds.as_slice(), &s.expr)
        {
            out.insert(*v, s.expr.clone());
        }
        for blk in crate::visit::blocks(&s.expr) {
            definitions(blk, out);
        }
    }
}

/// A size: known from a source, or a shape parameter.
#[derive(Clone, Copy, Debug)]
enum Known {
    Src(ShapeSource),
    Unknown(Var),
}

/// Pairs of sizes the linear operations of `b` require to be equal.
///
/// `ranges` holds the index variables of the enclosing loops and builds with
/// their extents; element reads at such an index go to `weak`.
fn collect_equations(
    b: &Block,
    vars: &VarTable,
    shape: &dyn Fn(Var) -> Option<Vec<Dim>>,
    out: &mut Vec<(Dim, Dim)>,
    ranges: &mut FastMap<Var, Atom>,
    weak: &mut Vec<(Dim, Dim)>,
) {
    let of = |a: &Atom| -> Vec<Dim> {
        match a {
            Atom::Var(v) => (0..vars.ty(*v).rank().unwrap_or(0))
                .map(|k| Dim::Of(*v, k))
                .collect(),
            _ => vec![],
        }
    };
    let same = |x: Vec<Dim>, y: Vec<Dim>, out: &mut Vec<(Dim, Dim)>| {
        out.extend(x.into_iter().zip(y));
    };
    for s in &b.stmts {
        match &s.expr {
            Expr::Lin(LinOp::Scale { s: sc, x })
                if vars.ty(*x).rank().unwrap_or(0) > 0
                    && of(sc).len() == vars.ty(*x).rank().unwrap_or(0) =>
            {
                same(shape(*x).unwrap_or_default(), of(sc), out);
            }
            Expr::Lin(LinOp::Add(x, y)) => same(
                shape(*x).unwrap_or_default(),
                shape(*y).unwrap_or_default(),
                out,
            ),
            Expr::Lin(LinOp::MatMul { a, x, lin_left }) => {
                let (ad, xd) = (of(a), shape(*x).unwrap_or_default());
                // The contracted axes: the last of the left operand, the first of the right.
                let pair = if *lin_left {
                    xd.last().copied().zip(ad.first().copied())
                } else {
                    xd.first().copied().zip(ad.last().copied())
                };
                out.extend(pair);
            }
            Expr::Map(m) => {
                let first = m.arrs.first().map(&of);
                for v in &m.lin_arrs {
                    match &first {
                        Some(f) => same(shape(*v).unwrap_or_default(), f.clone(), out),
                        None => {
                            if let Some(w) = m.lin_arrs.first() {
                                same(
                                    shape(*v).unwrap_or_default(),
                                    shape(*w).unwrap_or_default(),
                                    out,
                                );
                            }
                        }
                    }
                }
            }
            Expr::Lin(LinOp::Index { x, idx }) => {
                let dims = shape(*x).unwrap_or_default();
                for (a, i) in idx.iter().enumerate() {
                    if let (Some(d), Some(n)) = (dims.get(a), i.var().and_then(|i| ranges.get(&i)))
                    {
                        weak.push((*d, Dim::Atom(*n)));
                    }
                }
            }
            Expr::Loop(l) => {
                ranges.insert(l.body.params[0], l.n);
            }
            Expr::Build(bd) => {
                for (i, n) in bd.body.params.iter().zip(&bd.shape) {
                    ranges.insert(*i, *n);
                }
            }
            _ => {}
        }
        for blk in crate::visit::blocks(&s.expr) {
            collect_equations(blk, vars, shape, out, ranges, weak);
        }
    }
}
