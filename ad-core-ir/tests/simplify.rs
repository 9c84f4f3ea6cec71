//! The simplifier: every rule on a hand-built function, checked three ways —
//! (a) the interpreter gives the same results before and after on a few
//! inputs, (b) the checker accepts the output, (c) the rewrite happened.
//! Then whole-pipeline properties: `simplify_func` on bigger functions and on
//! the (unsimplified) outputs of jvp / unzip / transpose, hand-written and
//! random (`common/gen.rs`; `PROPTEST_CASES` sets the number, default 64).

mod common;
mod fixtures;

use ad_core_ir::build::FuncBuilder;
use ad_core_ir::check::{check_func, Mode};
use ad_core_ir::interp::{run, run_counted, Value};
use ad_core_ir::ir::*;
use ad_core_ir::pretty::func_to_string;
use ad_core_ir::simplify::{
    self, algebra, apply_rules, copy_prop, cse, dce, fold_const, fuse_into_loop, fusion, in_place,
    licm, lin_broadcast, shape, stack_in_place, sum_invariant, sum_through, tabulate, zeros,
    Options, Rule, Stats,
};
use ad_core_ir::types::{Scalar, Ty};
use ad_core_ir::visit::{blocks, size_func};

// ---------------------------------------------------------------- harness

type Inputs = Vec<(Vec<Value>, Vec<Value>)>;

fn prog_of(f: &Func) -> Program {
    let mut p = Program::default();
    p.insert(f.clone());
    p
}

/// Checks (a) and (b): `after` passes the checker in `mode`, and gives the
/// results of `before` (within `tol`) on every input where `before` runs.
fn verify(before: &Func, after: &Func, mode: Mode, inputs: &Inputs, tol: f64) {
    let pb = prog_of(before);
    let pa = prog_of(after);
    if let Err(e) = check_func(&pb, before, mode) {
        panic!(
            "test input fails the checker: {e:?}\n{}",
            func_to_string(before)
        );
    }
    if let Err(e) = check_func(&pa, after, mode) {
        panic!(
            "simplified function fails the checker: {e:?}\nbefore:\n{}\nafter:\n{}",
            func_to_string(before),
            func_to_string(after)
        );
    }
    let mut ran = 0;
    for (args, lin) in inputs {
        let Ok(r0) = run(&pb, &before.name, args, lin) else {
            continue;
        };
        ran += 1;
        let r1 = run(&pa, &after.name, args, lin).unwrap_or_else(|e| {
            panic!(
                "simplified function fails on {args:?} ; {lin:?}: {e}\n{}",
                func_to_string(after)
            )
        });
        let all0 = r0.0.iter().chain(&r0.1);
        let all1: Vec<&Value> = r1.0.iter().chain(&r1.1).collect();
        assert_eq!(r0.0.len() + r0.1.len(), all1.len());
        for (x, y) in all0.zip(all1) {
            let d = x.max_abs_diff(y);
            assert!(
                d <= tol,
                "results differ by {d}: {x:?} vs {y:?}\nbefore:\n{}\nafter:\n{}",
                func_to_string(before),
                func_to_string(after)
            );
        }
    }
    assert!(ran > 0, "no input ran without error");
}

/// Applies one rule of the rewrite engine, then asserts it fired.
fn apply(
    f: &Func,
    name: &'static str,
    rule: fn(&Stmt, &mut simplify::Cx<'_>) -> Option<Vec<Stmt>>,
) -> Func {
    let mut g = f.clone();
    let st: Stats = apply_rules(&mut g, &prog_of(f), &[Rule { name, apply: rule }]);
    assert!(
        st.get(name) > 0,
        "rule {name} did not fire on\n{}",
        func_to_string(f)
    );
    g
}

/// Applies a whole-function pass and asserts it changed something.
fn pass(f: &Func, p: fn(&mut Func) -> bool) -> Func {
    let mut g = f.clone();
    assert!(p(&mut g), "pass changed nothing on\n{}", func_to_string(f));
    g
}

/// Number of statements (at any depth) whose expression satisfies `pred`.
fn count(f: &Func, pred: &dyn Fn(&Expr) -> bool) -> usize {
    fn go(b: &Block, pred: &dyn Fn(&Expr) -> bool) -> usize {
        b.stmts
            .iter()
            .map(|s| pred(&s.expr) as usize + blocks(&s.expr).map(|b| go(b, pred)).sum::<usize>())
            .sum()
    }
    go(&f.body, pred)
}

fn is_zero(e: &Expr) -> bool {
    matches!(e, Expr::Lin(LinOp::Zero(_)))
}

fn new_builder(name: &str) -> FuncBuilder<'static> {
    static EMPTY: std::sync::OnceLock<Program> = std::sync::OnceLock::new();
    FuncBuilder::new(EMPTY.get_or_init(Program::default), name)
}

fn vec_f(xs: &[f64]) -> Value {
    Value::f64s(&[xs.len()], xs.to_vec())
}

fn mat_f(r: usize, c: usize, xs: &[f64]) -> Value {
    Value::f64s(&[r, c], xs.to_vec())
}

fn scalars(xs: &[f64]) -> Vec<Value> {
    xs.iter().map(|x| Value::F64(*x)).collect()
}

fn arr_shape(x: Var) -> ShapeTree {
    ShapeTree::Array(vec![Dim::Of(x, 0)])
}

// ---------------------------------------------------------------- zeros

#[test]
fn ladd_zero() {
    let mut b = new_builder("f");
    let dx = b.lin_param("dx", Ty::F64, ShapeTree::Scalar);
    let z = b.lin(LinOp::Zero(ShapeTree::Scalar));
    let y = b.lin(LinOp::Add(z, dx));
    let f = b.finish(vec![], vec![y]);
    let g = apply(&f, "ladd_zero", zeros::ladd_zero);
    assert_eq!(size_func(&g), 0);
    verify(&f, &g, Mode::LinearB, &vec![(vec![], scalars(&[2.5]))], 0.0);
}

#[test]
fn lneg_and_lscale_of_zero() {
    let mut b = new_builder("f");
    let s = b.param("s", Ty::f64s(1));
    let c = b.param("c", Ty::F64);
    let dx = b.lin_param("dx", Ty::F64, ShapeTree::Scalar);
    let z = b.lin(LinOp::Zero(ShapeTree::Scalar));
    let n = b.lin(LinOp::Neg(z));
    let k = b.lin(LinOp::Scale { s: c.into(), x: n });
    let y = b.lin(LinOp::Add(dx, k));
    let z2 = b.lin(LinOp::Zero(ShapeTree::Scalar));
    let arr = b.lin(LinOp::Scale { s: s.into(), x: z2 });
    let f = b.finish(vec![], vec![y, arr]);
    let g = apply(&f, "lneg_zero", zeros::lneg_zero);
    let g = apply(&g, "lscale_zero", zeros::lscale_zero);
    let g = apply(&g, "ladd_zero", zeros::ladd_zero);
    // Only the array zero of s's shape is left.
    assert_eq!(size_func(&g), 1);
    assert_eq!(count(&g, &is_zero), 1);
    let inputs = vec![(
        vec![vec_f(&[1.0, 2.0, 3.0]), Value::F64(2.0)],
        scalars(&[0.5]),
    )];
    verify(&f, &g, Mode::LinearB, &inputs, 0.0);
}

#[test]
fn dup_and_drop_of_zero() {
    let mut b = new_builder("f");
    let dx = b.lin_param("dx", Ty::F64, ShapeTree::Scalar);
    let z = b.lin(LinOp::Zero(ShapeTree::Scalar));
    let (_, ab) = b.emit(Expr::Lin(LinOp::Dup(z)));
    let y = b.lin(LinOp::Add(dx, ab[0]));
    let z3 = b.lin(LinOp::Zero(ShapeTree::Scalar));
    b.emit(Expr::Lin(LinOp::Drop(z3)));
    let f = b.finish(vec![], vec![y, ab[1]]);
    let g = apply(&f, "dup_zero", zeros::dup_zero);
    let g = apply(&g, "drop_zero", zeros::drop_zero);
    let g = apply(&g, "ladd_zero", zeros::ladd_zero);
    assert_eq!(
        count(&g, &|e| matches!(
            e,
            Expr::Lin(LinOp::Dup(_) | LinOp::Drop(_))
        )),
        0
    );
    assert_eq!(size_func(&g), 1);
    verify(&f, &g, Mode::LinearB, &vec![(vec![], scalars(&[1.5]))], 0.0);
}

/// `f(x: [f64], i, idx: [i64] ; dx: [f64])` with zeros pushed through the
/// array operations; each rule must leave a zero of the right shape.
#[test]
fn array_ops_of_zero() {
    let mut b = new_builder("f");
    let x = b.param("x", Ty::f64s(1));
    let m = b.param("m", Ty::f64s(2));
    let i = b.param("i", Ty::I64);
    let idx = b.param("idx", Ty::array(Scalar::I64, 1));
    let dx = b.lin_param("dx", Ty::f64s(1), arr_shape(x));
    let zx = || LinOp::Zero(arr_shape(x));
    let z1 = b.lin(zx());
    let e = b.lin(LinOp::Index {
        x: z1,
        idx: vec![i.into()],
    });
    let z2 = b.lin(zx());
    let g = b.lin(LinOp::Gather {
        x: z2,
        idx: idx.into(),
    });
    let z3 = b.lin(zx());
    let sc = b.lin(LinOp::ScatterAdd {
        len: Atom::I64(5),
        idx: idx.into(),
        x: z3,
    });
    let z4 = b.lin(zx());
    let su = b.lin(LinOp::Sum { x: z4, axis: None });
    let z5 = b.lin(LinOp::Zero(ShapeTree::Scalar));
    let bc = b.lin(LinOp::Broadcast {
        x: z5,
        shape: vec![Atom::I64(2), Atom::I64(3)],
        axes: vec![],
    });
    let tr = b.lin(LinOp::Transpose(bc));
    let zm = b.lin(LinOp::Zero(ShapeTree::Array(vec![
        Dim::Of(m, 0),
        Dim::Of(m, 1),
    ])));
    let su2 = b.lin(LinOp::Sum {
        x: zm,
        axis: Some(0),
    });
    let z6 = b.lin(zx());
    let mm = b.lin(LinOp::MatMul {
        a: m.into(),
        x: z6,
        lin_left: false,
    });
    let z7 = b.lin(zx());
    let ou = b.lin(LinOp::Outer {
        x: z7,
        b: x.into(),
        lin_left: true,
    });
    let z8 = b.lin(zx());
    let scn = b.lin(LinOp::Scan {
        x: z8,
        reverse: false,
    });
    let z9 = b.lin(LinOp::Zero(ShapeTree::Scalar));
    let up = b.lin(LinOp::Update {
        x: dx,
        idx: vec![i.into()],
        val: z9,
        add: true,
    });
    let f = b.finish(vec![], vec![e, g, sc, su, tr, su2, mm, ou, scn, up]);
    let mut g = f.clone();
    let st = apply_rules(&mut g, &prog_of(&f), zeros::RULES);
    for r in [
        "lindex_zero",
        "lgather_zero",
        "lscatter_add_zero",
        "lsum_zero",
        "lbroadcast_zero",
        "ltranspose_zero",
        "lmatmul_zero",
        "louter_zero",
        "lscan_zero",
        "lupdate_zero",
    ] {
        assert!(st.get(r) > 0, "{r} did not fire");
    }
    // Nothing but zeros is left; the update is gone.
    assert_eq!(size_func(&g), count(&g, &is_zero));
    assert_eq!(size_func(&g), 9);
    let inputs = vec![(
        vec![
            vec_f(&[1.0, 2.0, 3.0]),
            mat_f(3, 3, &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]),
            Value::I64(1),
            Value::i64s(&[3], vec![0, 2, 2]),
        ],
        vec![vec_f(&[0.5, -1.0, 2.0])],
    )];
    verify(&f, &g, Mode::LinearB, &inputs, 0.0);
}

#[test]
fn tuple_and_untuple_of_zeros() {
    let mut b = new_builder("f");
    let x = b.param("x", Ty::f64s(1));
    let dx = b.lin_param("dx", Ty::F64, ShapeTree::Scalar);
    let za = b.lin(LinOp::Zero(ShapeTree::Scalar));
    let zb = b.lin(LinOp::Zero(arr_shape(x)));
    let t = b.lin(LinOp::Tuple(vec![za, zb]));
    let (_, parts) = b.emit(Expr::Lin(LinOp::Untuple(t)));
    let y = b.lin(LinOp::Add(dx, parts[0]));
    let f = b.finish(vec![], vec![y, parts[1]]);
    let g = apply(&f, "ltuple_zero", zeros::ltuple_zero);
    let g = apply(&g, "luntuple_zero", zeros::luntuple_zero);
    let g = apply(&g, "ladd_zero", zeros::ladd_zero);
    assert_eq!(
        count(&g, &|e| matches!(
            e,
            Expr::Lin(LinOp::Tuple(_) | LinOp::Untuple(_))
        )),
        0
    );
    assert_eq!(size_func(&g), 1);
    let inputs = vec![(vec![vec_f(&[1.0, 2.0])], scalars(&[3.0]))];
    verify(&f, &g, Mode::LinearB, &inputs, 0.0);
}

/// A zero read by both branches of an `if` is pushed into each branch, where
/// `ladd_zero` then removes it.
#[test]
fn zero_into_if() {
    let mut b = new_builder("f");
    let c = b.param("c", Ty::BOOL);
    let dx = b.lin_param("dx", Ty::F64, ShapeTree::Scalar);
    let z = b.lin(LinOp::Zero(ShapeTree::Scalar));
    let (_, dx2) = b.emit(Expr::Lin(LinOp::Dup(dx)));
    let then_ = b.block(|b| {
        let y = b.lin(LinOp::Add(dx2[0], z));
        b.emit(Expr::Lin(LinOp::Drop(dx2[1])));
        (vec![], vec![y])
    });
    let else_ = b.block(|b| {
        let y = b.lin(LinOp::Add(dx2[1], dx2[0]));
        let y2 = b.lin(LinOp::Add(y, z));
        (vec![], vec![y2])
    });
    let (_, r) = b.emit(Expr::If(If {
        cond: c.into(),
        then_,
        else_,
        lin_shapes: vec![ShapeTree::Scalar],
    }));
    let f = b.finish(vec![], r);
    let g = apply(&f, "zero_into_if", zeros::zero_into_if);
    assert_eq!(count(&g, &is_zero), 2);
    let mut h = g.clone();
    simplify::simplify_func(&mut h, &prog_of(&g), &Options::default());
    assert_eq!(count(&h, &is_zero), 0);
    let inputs = vec![
        (vec![Value::Bool(true)], scalars(&[1.5])),
        (vec![Value::Bool(false)], scalars(&[1.5])),
    ];
    verify(&f, &g, Mode::LinearB, &inputs, 0.0);
    verify(&f, &h, Mode::LinearB, &inputs, 0.0);
}

/// `map(|a ; d| lscale(a, d), x ; 0)`: the zero becomes a scalar zero inside.
#[test]
fn lmap_zero_arg() {
    let mut b = new_builder("f");
    let x = b.param("x", Ty::f64s(1));
    let z = b.lin(LinOp::Zero(arr_shape(x)));
    let body = b.lambda(&[Ty::F64], &[Ty::F64], |b, ps, lps| {
        let y = b.lin(LinOp::Scale {
            s: ps[0].into(),
            x: lps[0],
        });
        (vec![], vec![y])
    });
    let (_, r) = b.emit(Expr::Map(Map {
        arrs: vec![x.into()],
        lin_arrs: vec![z],
        body,
    }));
    let f = b.finish(vec![], r);
    let g = apply(&f, "lmap_zero_arg", zeros::lmap_zero_arg);
    let Expr::Map(m) = &g.body.stmts[0].expr else {
        panic!("a map")
    };
    assert!(m.lin_arrs.is_empty());
    let mut h = g.clone();
    simplify::simplify_func(&mut h, &prog_of(&g), &Options::default());
    let inputs = vec![(vec![vec_f(&[1.0, -2.0])], vec![])];
    verify(&f, &g, Mode::LinearB, &inputs, 0.0);
    verify(&f, &h, Mode::LinearB, &inputs, 0.0);
}

// ---------------------------------------------------------------- algebra

/// One binary primitive with a literal, for the algebra table.
fn binop(p: Prim, lit_left: bool, lit: Atom, ty: Ty) -> Func {
    let mut b = new_builder("f");
    let x = b.param("x", ty);
    let args = if lit_left {
        [lit, x.into()]
    } else {
        [x.into(), lit]
    };
    let y = b.prim(p, &args);
    let w = b.prim(Prim::Add, &[y.into(), y.into()]);
    b.finish(vec![w.into()], vec![])
}

#[test]
fn algebra_identities() {
    type R = fn(&Stmt, &mut simplify::Cx<'_>) -> Option<Vec<Stmt>>;
    let special = [0.0, -0.0, 1.5, -2.0, f64::INFINITY, f64::NAN];
    let table: Vec<(&'static str, R, Func)> = vec![
        (
            "mul_one",
            algebra::mul_one,
            binop(Prim::Mul, false, Atom::F64(1.0), Ty::F64),
        ),
        (
            "mul_one",
            algebra::mul_one,
            binop(Prim::Mul, true, Atom::F64(1.0), Ty::F64),
        ),
        (
            "mul_one",
            algebra::mul_one,
            binop(Prim::Mul, true, Atom::I64(1), Ty::I64),
        ),
        (
            "div_one",
            algebra::div_one,
            binop(Prim::Div, false, Atom::F64(1.0), Ty::F64),
        ),
        (
            "div_one",
            algebra::div_one,
            binop(Prim::Div, false, Atom::I64(1), Ty::I64),
        ),
        (
            "add_zero",
            algebra::add_zero,
            binop(Prim::Add, false, Atom::F64(-0.0), Ty::F64),
        ),
        (
            "add_zero",
            algebra::add_zero,
            binop(Prim::Add, true, Atom::F64(-0.0), Ty::F64),
        ),
        (
            "add_zero",
            algebra::add_zero,
            binop(Prim::Add, true, Atom::I64(0), Ty::I64),
        ),
        (
            "sub_zero",
            algebra::sub_zero,
            binop(Prim::Sub, false, Atom::F64(0.0), Ty::F64),
        ),
        (
            "sub_zero",
            algebra::sub_zero,
            binop(Prim::Sub, false, Atom::I64(0), Ty::I64),
        ),
    ];
    for (name, rule, f) in table {
        let g = apply(&f, name, rule);
        assert_eq!(size_func(&g), 1, "{name}");
        let ins: Inputs = if *f.vars.ty(f.params[0]) == Ty::I64 {
            [0, -3, 7, i64::MAX / 4]
                .iter()
                .map(|x| (vec![Value::I64(*x)], vec![]))
                .collect()
        } else {
            special
                .iter()
                .map(|x| (vec![Value::F64(*x)], vec![]))
                .collect()
        };
        verify(&f, &g, Mode::LinearA, &ins, 0.0);
    }
    // x * 0 is not simplified (inf * 0 is NaN), nor x + 0.0 and x - (-0.0)
    // (-0.0 + 0.0 is +0.0: the sign of a zero is kept).
    for f in [
        binop(Prim::Mul, false, Atom::F64(0.0), Ty::F64),
        binop(Prim::Add, false, Atom::F64(0.0), Ty::F64),
        binop(Prim::Add, true, Atom::F64(0.0), Ty::F64),
        binop(Prim::Sub, false, Atom::F64(-0.0), Ty::F64),
    ] {
        let mut g = f.clone();
        simplify::simplify_func(&mut g, &prog_of(&f), &Options::default());
        assert_eq!(size_func(&g), 2, "{}", func_to_string(&g));
    }
}

#[test]
fn neg_neg_not_not_bool_and_select() {
    let mut b = new_builder("f");
    let x = b.param("x", Ty::F64);
    let c = b.param("c", Ty::BOOL);
    let n1 = b.prim(Prim::Neg, &[x.into()]);
    let n2 = b.prim(Prim::Neg, &[n1.into()]);
    let b1 = b.prim(Prim::Not, &[c.into()]);
    let b2 = b.prim(Prim::Not, &[b1.into()]);
    let a1 = b.prim(Prim::And, &[b2.into(), Atom::Bool(true)]);
    let a2 = b.prim(Prim::Or, &[Atom::Bool(true), a1.into()]);
    let s1 = b.prim(Prim::Select, &[a2.into(), n2.into(), Atom::F64(3.0)]);
    let s2 = b.prim(Prim::Select, &[c.into(), s1.into(), s1.into()]);
    let f = b.finish(vec![s2.into(), a1.into()], vec![]);
    let g = apply(&f, "neg_neg", algebra::neg_neg);
    let g = apply(&g, "not_not", algebra::not_not);
    let g = apply(&g, "bool_literal", algebra::bool_literal);
    let g = apply(&g, "select_literal", algebra::select_literal);
    let mut h = g.clone();
    dce::dce(&mut h);
    assert_eq!(size_func(&h), 0, "{}", func_to_string(&h));
    assert_eq!(h.body.results, vec![Atom::Var(x), Atom::Var(c)]);
    let ins: Inputs = [(1.5, true), (-0.0, false), (f64::NAN, true)]
        .iter()
        .map(|(x, c)| (vec![Value::F64(*x), Value::Bool(*c)], vec![]))
        .collect();
    verify(&f, &h, Mode::LinearA, &ins, 0.0);
}

#[test]
fn linear_algebra_identities() {
    let mut b = new_builder("f");
    let s = b.param("s", Ty::F64);
    let t = b.param("t", Ty::F64);
    let dx = b.lin_param("dx", Ty::F64, ShapeTree::Scalar);
    let dy = b.lin_param(
        "dy",
        Ty::f64s(1),
        ShapeTree::Array(vec![Dim::Atom(Atom::I64(3))]),
    );
    let a = b.lin(LinOp::Scale {
        s: Atom::F64(1.0),
        x: dx,
    });
    let n1 = b.lin(LinOp::Neg(a));
    let n2 = b.lin(LinOp::Neg(n1));
    let k1 = b.lin(LinOp::Scale { s: t.into(), x: dy });
    let k2 = b.lin(LinOp::Scale { s: s.into(), x: k1 });
    let f = b.finish(vec![], vec![n2, k2]);
    let g = apply(&f, "lscale_one", algebra::lscale_one);
    let g = apply(&g, "lneg_lneg", algebra::lneg_lneg);
    let g = apply(&g, "lscale_lscale", algebra::lscale_lscale);
    assert_eq!(count(&g, &|e| matches!(e, Expr::Lin(LinOp::Neg(_)))), 0);
    assert_eq!(
        count(&g, &|e| matches!(e, Expr::Lin(LinOp::Scale { .. }))),
        1
    );
    assert_eq!(g.body.lin_results[0], dx);
    let ins: Inputs = vec![
        (
            scalars(&[2.0, 3.0]),
            vec![Value::F64(0.5), vec_f(&[1.0, 2.0, 3.0])],
        ),
        (
            scalars(&[-0.3, 1.7]),
            vec![Value::F64(-1.5), vec_f(&[0.1, 0.2, 0.3])],
        ),
    ];
    // Reassociated scaling: equal up to rounding.
    verify(&f, &g, Mode::LinearB, &ins, 1e-12);
}

// ---------------------------------------------------------------- constant folding

#[test]
fn fold_prim() {
    let mut b = new_builder("f");
    let x = b.param("x", Ty::F64);
    let a = b.prim(Prim::Mul, &[Atom::F64(2.0), Atom::F64(3.0)]);
    let c = b.prim(Prim::Lt, &[a.into(), Atom::F64(10.0)]);
    let i = b.prim(Prim::Add, &[Atom::I64(2), Atom::I64(40)]);
    let j = b.prim(Prim::ToF64, &[i.into()]);
    let y = b.prim(Prim::Select, &[c.into(), j.into(), x.into()]);
    let z = b.prim(Prim::Add, &[y.into(), x.into()]);
    let f = b.finish(vec![z.into()], vec![]);
    let mut g = f.clone();
    let rules = [
        Rule {
            name: "fold_prim",
            apply: fold_const::fold_prim,
        },
        Rule {
            name: "select_literal",
            apply: algebra::select_literal,
        },
    ];
    let st = apply_rules(&mut g, &prog_of(&f), &rules);
    assert_eq!(st.get("fold_prim"), 4);
    assert_eq!(size_func(&g), 1, "{}", func_to_string(&g));
    verify(
        &f,
        &g,
        Mode::LinearA,
        &vec![(scalars(&[1.25]), vec![])],
        0.0,
    );
    // Never folded: would fail at run time, or give a non-finite literal.
    let mut b = new_builder("f");
    let bad = b.prim(Prim::Div, &[Atom::I64(1), Atom::I64(0)]);
    let ovf = b.prim(Prim::Mul, &[Atom::I64(i64::MAX), Atom::I64(2)]);
    let inf = b.prim(Prim::Div, &[Atom::F64(1.0), Atom::F64(0.0)]);
    let nan = b.prim(Prim::Sqrt, &[Atom::F64(-1.0)]);
    let f = b.finish(vec![bad.into(), ovf.into(), inf.into(), nan.into()], vec![]);
    let mut g = f.clone();
    assert_eq!(apply_rules(&mut g, &prog_of(&f), &rules).total(), 0);
    assert!(run(&prog_of(&g), "f", &[], &[]).is_err());
}

#[test]
fn if_literal() {
    let mut b = new_builder("f");
    let x = b.param("x", Ty::F64);
    let dx = b.lin_param("dx", Ty::F64, ShapeTree::Scalar);
    let then_ = b.block(|b| {
        let y = b.prim(Prim::Sin, &[x.into()]);
        let d = b.lin(LinOp::Scale { s: y.into(), x: dx });
        (vec![y.into()], vec![d])
    });
    let else_ = b.block(|b| {
        let d = b.lin(LinOp::Neg(dx));
        (vec![x.into()], vec![d])
    });
    let (r, lr) = b.emit(Expr::If(If {
        cond: Atom::Bool(true),
        then_,
        else_,
        lin_shapes: vec![ShapeTree::Scalar],
    }));
    let f = b.finish(vec![r[0].into()], lr);
    let g = apply(&f, "if_literal", fold_const::if_literal);
    assert_eq!(count(&g, &|e| matches!(e, Expr::If(_))), 0);
    assert_eq!(size_func(&g), 2);
    verify(
        &f,
        &g,
        Mode::LinearA,
        &vec![(scalars(&[0.3]), scalars(&[2.0]))],
        0.0,
    );
}

/// Regression: a producer bypassed inside a branch (and so killed) must not
/// come back when the branch is inlined by `if_literal` in the same walk.
#[test]
fn if_literal_after_bypass_in_branch() {
    let mut b = new_builder("f");
    let s = b.param("s", Ty::F64);
    let t = b.param("t", Ty::F64);
    let u = b.param("u", Ty::F64);
    let dx = b.lin_param("dx", Ty::F64, ShapeTree::Scalar);
    let d1 = b.lin(LinOp::Scale { s: s.into(), x: dx });
    let c = b.prim(Prim::Lt, &[Atom::I64(1), Atom::I64(2)]);
    let then_ = b.block(|b| {
        let d2 = b.lin(LinOp::Scale { s: t.into(), x: d1 });
        let d3 = b.lin(LinOp::Scale { s: u.into(), x: d2 });
        (vec![], vec![d3])
    });
    let else_ = b.block(|_| (vec![], vec![d1]));
    let (_, r) = b.emit(Expr::If(If {
        cond: c.into(),
        then_,
        else_,
        lin_shapes: vec![ShapeTree::Scalar],
    }));
    let f = b.finish(vec![], r);
    let mut g = f.clone();
    simplify::simplify_func(&mut g, &prog_of(&f), &Options::default());
    assert_eq!(
        count(&g, &|e| matches!(e, Expr::Lin(LinOp::Scale { .. }))),
        1,
        "{}",
        func_to_string(&g)
    );
    verify(
        &f,
        &g,
        Mode::LinearB,
        &vec![(scalars(&[2.0, 3.0, 0.5]), scalars(&[1.5]))],
        1e-12,
    );
}

// ---------------------------------------------------------------- copies and shapes

#[test]
fn copy_atom_and_untuple_tuple() {
    let mut b = new_builder("f");
    let x = b.param("x", Ty::F64);
    let dx = b.lin_param("dx", Ty::F64, ShapeTree::Scalar);
    let dy = b.lin_param("dy", Ty::F64, ShapeTree::Scalar);
    let c = b.emit1(Expr::Atom(x.into()));
    let k = b.emit1(Expr::Atom(Atom::F64(2.0)));
    let t = b.emit1(Expr::Tuple(vec![c.into(), k.into()]));
    let (parts, _) = b.emit(Expr::Untuple(t.into()));
    let y = b.prim(Prim::Mul, &[parts[0].into(), parts[1].into()]);
    let lt = b.lin(LinOp::Tuple(vec![dx, dy]));
    let (_, lp) = b.emit(Expr::Lin(LinOp::Untuple(lt)));
    let s = b.lin(LinOp::Add(lp[1], lp[0]));
    let f = b.finish(vec![y.into()], vec![s]);
    let g = apply(&f, "copy_atom", copy_prop::copy_atom);
    let g = apply(&g, "untuple_tuple", copy_prop::untuple_tuple);
    let mut h = g.clone();
    dce::dce(&mut h);
    assert_eq!(size_func(&h), 2, "{}", func_to_string(&h));
    let Expr::Prim(Prim::Mul, xs) = &h.body.stmts[0].expr else {
        panic!()
    };
    assert_eq!(xs, &vec![Atom::Var(x), Atom::F64(2.0)]);
    verify(
        &f,
        &h,
        Mode::LinearA,
        &vec![(scalars(&[1.5]), scalars(&[2.0, 3.0]))],
        0.0,
    );
}

#[test]
fn fold_shape_and_zero_dims() {
    let mut b = new_builder("f");
    let x = b.param("x", Ty::f64s(1));
    let n = b.param("n", Ty::I64);
    let e = b.map(&[x.into()], |b, p| {
        vec![b.prim(Prim::Exp, &[p[0].into()]).into()]
    })[0];
    let t = b.map(&[e.into()], |b, p| {
        vec![b.prim(Prim::Sin, &[p[0].into()]).into()]
    })[0];
    let s1 = b.shape(t.into(), 0);
    let bl = b.build(&[n.into()], |_, i| vec![i[0].into()])[0];
    let s2 = b.shape(bl.into(), 0);
    let z = b.lin(LinOp::Zero(ShapeTree::Array(vec![
        Dim::Of(t, 0),
        Dim::Of(bl, 0),
    ])));
    let f = b.finish(vec![s1.into(), s2.into()], vec![z]);
    let g = apply(&f, "fold_shape", shape::fold_shape);
    let g = apply(&g, "zero_dims", shape::zero_dims);
    let mut h = g.clone();
    dce::dce(&mut h);
    // shape(t, 0) = shape(x, 0); shape(build(n), 0) = n; maps and build are dead.
    assert_eq!(h.body.results[1], Atom::Var(n));
    assert_eq!(
        count(&h, &|e| matches!(e, Expr::Map(_) | Expr::Build(_))),
        0,
        "{}",
        func_to_string(&h)
    );
    let Expr::Lin(LinOp::Zero(ShapeTree::Array(ds))) = &h.body.stmts.last().unwrap().expr else {
        panic!()
    };
    assert_eq!(ds, &vec![Dim::Of(x, 0), Dim::Atom(Atom::Var(n))]);
    verify(
        &f,
        &h,
        Mode::LinearA,
        &vec![(vec![vec_f(&[1.0, 2.0, 3.0]), Value::I64(2)], vec![])],
        0.0,
    );
}

// ---------------------------------------------------------------- DCE

#[test]
fn dce_statements_and_unread_results() {
    let mut b = new_builder("f");
    let x = b.param("x", Ty::F64);
    let n = b.param("n", Ty::I64);
    let _dead = b.prim(Prim::Sin, &[x.into()]);
    // Loop: state 0 is the result, state 1 feeds state 0, state 2 feeds
    // only itself (removable), output 0 is read, output 1 is not.
    let (st, ys) = b.loop_(
        n.into(),
        false,
        &[Atom::F64(0.0), Atom::F64(1.0), Atom::F64(2.0)],
        |b, i, s| {
            let fi = b.prim(Prim::ToF64, &[i.into()]);
            let a = b.prim(Prim::Add, &[s[0].into(), s[1].into()]);
            let c = b.prim(Prim::Mul, &[s[1].into(), x.into()]);
            let d = b.prim(Prim::Exp, &[s[2].into()]);
            let y0 = b.prim(Prim::Mul, &[fi.into(), a.into()]);
            (
                vec![a.into(), c.into(), d.into()],
                vec![y0.into(), d.into()],
            )
        },
    );
    // Build with an unread second result; map with an unread result.
    let bl = b.build(&[n.into()], |b, i| {
        let fi = b.prim(Prim::ToF64, &[i[0].into()]);
        let c = b.prim(Prim::Cos, &[fi.into()]);
        vec![fi.into(), c.into()]
    });
    let if_r = b.if_(
        Atom::Bool(true),
        |b| vec![b.prim(Prim::Sin, &[x.into()]).into(), x.into()],
        |_| vec![x.into(), x.into()],
    );
    let f = b.finish(
        vec![st[0].into(), ys[0].into(), bl[0].into(), if_r[1].into()],
        vec![],
    );
    let g = pass(&f, dce::dce);
    let Expr::Loop(l) = &g.body.stmts[0].expr else {
        panic!("{}", func_to_string(&g))
    };
    assert_eq!(l.init.len(), 2, "{}", func_to_string(&g));
    assert_eq!(g.body.stmts[0].binds.len(), 3);
    let Expr::Build(bd) = &g.body.stmts[1].expr else {
        panic!()
    };
    assert_eq!(bd.body.body.results.len(), 1);
    assert_eq!(bd.body.body.stmts.len(), 1);
    let Expr::If(i) = &g.body.stmts[2].expr else {
        panic!()
    };
    assert_eq!(i.then_.results.len(), 1);
    assert!(i.then_.stmts.is_empty());
    assert_eq!(size_func(&g), 2 + 4 + 1 + 1);
    let ins: Inputs = [0, 1, 4]
        .iter()
        .map(|k| (vec![Value::F64(0.7), Value::I64(*k)], vec![]))
        .collect();
    verify(&f, &g, Mode::LinearA, &ins, 0.0);
}

#[test]
fn dce_keeps_linear_consumption() {
    // A dead build that consumes a linear variable inside becomes a drop.
    let mut b = new_builder("f");
    let n = b.param("n", Ty::I64);
    let dx = b.lin_param("dx", Ty::F64, ShapeTree::Scalar);
    let body = b.lambda(&[Ty::I64], &[], |b, _, _| {
        let z = b.lin(LinOp::Scale {
            s: Atom::F64(2.0),
            x: dx,
        });
        (vec![], vec![z])
    });
    let (_, lr) = b.emit(Expr::Build(Build {
        shape: vec![n.into()],
        body,
    }));
    b.emit(Expr::Lin(LinOp::Drop(lr[0])));
    let f = b.finish(vec![], vec![]);
    let g = pass(&f, dce::drop_dead_linear);
    assert_eq!(size_func(&g), 1);
    assert!(matches!(g.body.stmts[0].expr, Expr::Lin(LinOp::Drop(v)) if v == dx));
    verify(
        &f,
        &g,
        Mode::LinearB,
        &vec![(vec![Value::I64(3)], scalars(&[1.0]))],
        0.0,
    );
}

#[test]
fn drop_dead_linear() {
    let mut b = new_builder("f");
    let s = b.param("s", Ty::F64);
    let dx = b.lin_param("dx", Ty::F64, ShapeTree::Scalar);
    let dy = b.lin_param("dy", Ty::F64, ShapeTree::Scalar);
    let k = b.lin(LinOp::Scale { s: s.into(), x: dx });
    let n = b.lin(LinOp::Neg(k));
    b.emit(Expr::Lin(LinOp::Drop(n)));
    let (_, d) = b.emit(Expr::Lin(LinOp::Dup(dy)));
    b.emit(Expr::Lin(LinOp::Drop(d[0])));
    let r = b.lin(LinOp::Neg(d[1]));
    let f = b.finish(vec![], vec![r]);
    let g = pass(&f, dce::drop_dead_linear);
    assert_eq!(size_func(&g), 2, "{}", func_to_string(&g));
    assert_eq!(count(&g, &|e| matches!(e, Expr::Lin(LinOp::Dup(_)))), 0);
    verify(
        &f,
        &g,
        Mode::LinearB,
        &vec![(scalars(&[2.0]), scalars(&[1.0, 3.0]))],
        0.0,
    );
}

#[test]
fn dropped_linear_results_of_compound_statements() {
    // A dropped tangent of an `if` and of a map disappears entirely.
    let mut b = new_builder("f");
    let c = b.param("c", Ty::BOOL);
    let x = b.param("x", Ty::f64s(1));
    let dx = b.lin_param("dx", Ty::F64, ShapeTree::Scalar);
    let dv = b.lin_param("dv", Ty::f64s(1), arr_shape(x));
    let (_, d2) = b.emit(Expr::Lin(LinOp::Dup(dx)));
    let then_ = b.block(|b| {
        let a = b.lin(LinOp::Neg(d2[0]));
        (vec![], vec![a, d2[1]])
    });
    let else_ = b.block(|b| {
        let a = b.lin(LinOp::Scale {
            s: Atom::F64(2.0),
            x: d2[0],
        });
        let (_, e) = b.emit(Expr::Lin(LinOp::Dup(d2[1])));
        let s = b.lin(LinOp::Add(a, e[0]));
        (vec![], vec![s, e[1]])
    });
    let (_, r) = b.emit(Expr::If(If {
        cond: c.into(),
        then_,
        else_,
        lin_shapes: vec![ShapeTree::Scalar, ShapeTree::Scalar],
    }));
    b.emit(Expr::Lin(LinOp::Drop(r[1])));
    let body = b.lambda(&[Ty::F64], &[Ty::F64], |b, ps, lps| {
        let (_, d) = b.emit(Expr::Lin(LinOp::Dup(lps[0])));
        let y = b.lin(LinOp::Scale {
            s: ps[0].into(),
            x: d[0],
        });
        (vec![], vec![y, d[1]])
    });
    let (_, m) = b.emit(Expr::Map(Map {
        arrs: vec![x.into()],
        lin_arrs: vec![dv],
        body,
    }));
    b.emit(Expr::Lin(LinOp::Drop(m[0])));
    let f = b.finish(vec![], vec![r[0], m[1]]);
    let mut g = f.clone();
    simplify::simplify_func(&mut g, &prog_of(&f), &Options::default());
    // Only the then branch still drops its unused copy (the else branch reads it).
    assert_eq!(
        count(&g, &|e| matches!(e, Expr::Lin(LinOp::Drop(_)))),
        1,
        "{}",
        func_to_string(&g)
    );
    assert!(!g
        .body
        .stmts
        .iter()
        .any(|s| matches!(s.expr, Expr::Lin(LinOp::Drop(_)))));
    assert_eq!(
        count(&g, &|e| matches!(e, Expr::Map(_))),
        0,
        "{}",
        func_to_string(&g)
    );
    let ins: Inputs = [true, false]
        .iter()
        .map(|c| {
            (
                vec![Value::Bool(*c), vec_f(&[1.0, 2.0])],
                vec![Value::F64(1.5), vec_f(&[0.5, -1.0])],
            )
        })
        .collect();
    verify(&f, &g, Mode::LinearB, &ins, 0.0);
}

// ---------------------------------------------------------------- CSE

#[test]
fn cse_scoped() {
    let mut b = new_builder("f");
    let x = b.param("x", Ty::f64s(1));
    let y = b.param("y", Ty::F64);
    let i = b.param("i", Ty::I64);
    let n1 = b.shape(x.into(), 0);
    let n2 = b.shape(x.into(), 0);
    let e1 = b.index(x.into(), &[i.into()]);
    let e2 = b.index(x.into(), &[i.into()]);
    let a1 = b.prim(Prim::Mul, &[e1.into(), y.into()]);
    let a2 = b.prim(Prim::Mul, &[y.into(), e2.into()]);
    let bl = b.build(&[n2.into()], |b, j| {
        // Visible from outside: merged with a1. Local ones: merged inside only.
        let a3 = b.prim(Prim::Mul, &[e1.into(), y.into()]);
        let fj = b.prim(Prim::ToF64, &[j[0].into()]);
        let fj2 = b.prim(Prim::ToF64, &[j[0].into()]);
        let s = b.prim(Prim::Add, &[fj.into(), fj2.into()]);
        vec![b.prim(Prim::Add, &[s.into(), a3.into()]).into()]
    })[0];
    let bl2 = b.build(&[n1.into()], |b, j| {
        let fj = b.prim(Prim::ToF64, &[j[0].into()]);
        vec![fj.into()]
    })[0];
    // Linear statements are never merged.
    let dz = b.lin(LinOp::Zero(ShapeTree::Scalar));
    let dz2 = b.lin(LinOp::Zero(ShapeTree::Scalar));
    let f = b.finish(
        vec![a1.into(), a2.into(), bl.into(), bl2.into()],
        vec![dz, dz2],
    );
    let g = pass(&f, cse::cse);
    // n2, e2, a2, a3, fj2 merged.
    assert_eq!(size_func(&g), size_func(&f) - 5, "{}", func_to_string(&g));
    assert_eq!(g.body.results[0], g.body.results[1]);
    assert_eq!(count(&g, &is_zero), 2);
    let ins: Inputs = vec![(
        vec![vec_f(&[1.0, 2.0, 3.0]), Value::F64(0.5), Value::I64(2)],
        vec![],
    )];
    verify(&f, &g, Mode::LinearA, &ins, 0.0);
}

// ---------------------------------------------------------------- fusion

#[test]
fn map_map_nonlinear() {
    let mut b = new_builder("f");
    let x = b.param("x", Ty::f64s(1));
    let y = b.param("y", Ty::f64s(1));
    let e = b.map(&[x.into()], |b, p| {
        vec![b.prim(Prim::Exp, &[p[0].into()]).into()]
    })[0];
    let m = b.map(&[e.into(), y.into(), e.into()], |b, p| {
        let a = b.prim(Prim::Mul, &[p[0].into(), p[1].into()]);
        vec![b.prim(Prim::Add, &[a.into(), p[2].into()]).into()]
    })[0];
    let f = b.finish(vec![m.into()], vec![]);
    let g = pass(&f, |f| fusion::map_map(f, &mut None));
    assert_eq!(count(&g, &|e| matches!(e, Expr::Map(_))), 1);
    let ins: Inputs = vec![
        (
            vec![vec_f(&[0.1, 0.2, 0.3]), vec_f(&[1.0, 2.0, 3.0])],
            vec![],
        ),
        (vec![vec_f(&[0.1, 0.2]), vec_f(&[1.0, 2.0, 3.0])], vec![]),
    ];
    verify(&f, &g, Mode::LinearA, &ins, 0.0);
}

#[test]
fn map_map_linear() {
    let mut b = new_builder("f");
    let x = b.param("x", Ty::f64s(1));
    let dx = b.lin_param("dx", Ty::f64s(1), arr_shape(x));
    let body = b.lambda(&[Ty::F64], &[Ty::F64], |b, ps, lps| {
        let c = b.prim(Prim::Cos, &[ps[0].into()]);
        let y = b.lin(LinOp::Scale {
            s: c.into(),
            x: lps[0],
        });
        (vec![], vec![y])
    });
    let (_, d1) = b.emit(Expr::Map(Map {
        arrs: vec![x.into()],
        lin_arrs: vec![dx],
        body,
    }));
    let body2 = b.lambda(&[Ty::F64], &[Ty::F64], |b, ps, lps| {
        let y = b.lin(LinOp::Scale {
            s: ps[0].into(),
            x: lps[0],
        });
        let y2 = b.lin(LinOp::Neg(y));
        (vec![], vec![y2])
    });
    let (_, d2) = b.emit(Expr::Map(Map {
        arrs: vec![x.into()],
        lin_arrs: vec![d1[0]],
        body: body2,
    }));
    let f = b.finish(vec![], d2);
    let g = pass(&f, |f| fusion::map_map(f, &mut None));
    assert_eq!(count(&g, &|e| matches!(e, Expr::Map(_))), 1);
    let ins: Inputs = vec![(vec![vec_f(&[0.1, 0.2, 0.3])], vec![vec_f(&[1.0, 2.0, 3.0])])];
    verify(&f, &g, Mode::LinearB, &ins, 0.0);
}

/// The one function of a fixture.
fn fixture_func(text: &str) -> Func {
    let p = fixtures::program(text);
    p.funcs.first().expect("one function").clone()
}

/// `ladd` and `lneg` of arrays fuse with the maps that produce their
/// operands (the two terms of a product rule's transpose become one pass),
/// and the fused map then fuses with the map reading its result: one map
/// left, the same bits.
#[test]
fn lin_elementwise_ops_fuse_with_maps() {
    let f = fixture_func(fixtures::SUM_OF_MAP_OUTPUTS);
    let g = pass(&f, |f| fusion::lin_elementwise(f, &mut None));
    let lin_ops = |g: &Func| {
        count(g, &|e| {
            matches!(e, Expr::Lin(LinOp::Add(..) | LinOp::Neg(_)))
        })
    };
    // The ladd and the lneg now run inside the map, per element.
    assert_eq!(count(&g, &|e| matches!(e, Expr::Map(_))), 2);
    assert!(g
        .body
        .stmts
        .iter()
        .all(|s| !matches!(s.expr, Expr::Lin(LinOp::Add(..) | LinOp::Neg(_)))));
    assert_eq!(lin_ops(&g), lin_ops(&f));
    let h = pass(&g, |f| fusion::map_map(f, &mut None));
    assert_eq!(count(&h, &|e| matches!(e, Expr::Map(_))), 1);
    let ins: Inputs = vec![(
        vec![vec_f(&[0.5, -1.25, 3.0])],
        vec![vec_f(&[1.0, 2.0, -0.75])],
    )];
    verify(&f, &g, Mode::LinearB, &ins, 0.0);
    verify(&f, &h, Mode::LinearB, &ins, 0.0);
}

/// An `ladd` of a map's result and another array takes the array as one
/// more linear operand of the map; a map reading an `lneg`'s result runs
/// the negation per element; scalar `ladd`s and scalings of a scalar by an
/// array stay as they are.
#[test]
fn lin_elementwise_takes_other_operands_and_leaves_scalars() {
    let text = "def f(x_0: [f64], s_1: f64 ; dx_2: [f64] @ [shape(x_0, 0)], dy_3: [f64] @ [shape(x_0, 0)], dz_4: f64 @ ()) -> (; [f64], [f64]) {
  let ; m_5: [f64] = map(x_0 ; dx_2) |x_6: f64 ; c_7: f64| {
    let ; d_8: f64 = lscale x_6, c_7
    yield ; d_8
  }
  let ; a_9: [f64] = ladd dy_3, m_5
  let ; n_10: [f64] = lneg a_9
  let ; m_11: [f64] = map(x_0 ; n_10) |x_12: f64 ; c_13: f64| {
    let ; d_14: f64 = lscale x_12, c_13
    yield ; d_14
  }
  let n_15: i64 = shape x_0, 0
  let ; b_16: [f64] = lbroadcast dz_4, [n_15]
  let ; t_17: [f64] = lscale s_1, b_16
  return ; m_11, t_17
}
";
    let f = fixture_func(text);
    let g = pass(&f, |f| fusion::lin_elementwise(f, &mut None));
    let top =
        |g: &Func, p: &dyn Fn(&Expr) -> bool| g.body.stmts.iter().filter(|s| p(&s.expr)).count();
    assert_eq!(top(&g, &|e| matches!(e, Expr::Lin(LinOp::Add(..)))), 0);
    // `lscale s, lbroadcast ..` reads no map: it stays.
    assert_eq!(top(&g, &|e| matches!(e, Expr::Lin(LinOp::Scale { .. }))), 1);
    let ins: Inputs = vec![(
        vec![vec_f(&[0.5, -1.25, 3.0]), Value::F64(1.5)],
        vec![
            vec_f(&[1.0, 2.0, -0.75]),
            vec_f(&[4.0, -2.0, 0.25]),
            Value::F64(-3.0),
        ],
    )];
    verify(&f, &g, Mode::LinearB, &ins, 0.0);
}

/// A map that only fans its elements out is `dup` of the whole array.
#[test]
fn map_dup_is_dup_of_the_array() {
    let f = fixture_func(fixtures::FAN_OUT_BY_MAP);
    let g = apply(&f, "map_dup", algebra::map_dup);
    assert_eq!(count(&g, &|e| matches!(e, Expr::Map(_))), 0);
    assert_eq!(count(&g, &|e| matches!(e, Expr::Lin(LinOp::Dup(_)))), 1);
    let ins: Inputs = vec![(
        vec![vec_f(&[0.5, -1.25, 3.0])],
        vec![vec_f(&[1.0, 2.0, -0.75])],
    )];
    verify(&f, &g, Mode::LinearB, &ins, 0.0);
}

#[test]
fn map_of_build_and_index_of_build() {
    let mut b = new_builder("f");
    let x = b.param("x", Ty::f64s(1));
    let i = b.param("i", Ty::I64);
    let n = b.shape(x.into(), 0);
    let bl = b.build(&[n.into()], |b, j| {
        let fj = b.prim(Prim::ToF64, &[j[0].into()]);
        vec![b.prim(Prim::Sqrt, &[fj.into()]).into()]
    })[0];
    let m = b.map(&[bl.into(), x.into()], |b, p| {
        vec![b.prim(Prim::Mul, &[p[0].into(), p[1].into()]).into()]
    })[0];
    let bl2 = b.build(&[n.into(), Atom::I64(2)], |b, j| {
        let fj = b.prim(Prim::ToF64, &[j[0].into()]);
        let fk = b.prim(Prim::ToF64, &[j[1].into()]);
        vec![b.prim(Prim::Sub, &[fj.into(), fk.into()]).into()]
    })[0];
    let e = b.index(bl2.into(), &[i.into(), Atom::I64(1)]);
    let f = b.finish(vec![m.into(), e.into()], vec![]);
    let g = pass(&f, |f| fusion::map_of_build(f, &mut None));
    assert_eq!(count(&g, &|e| matches!(e, Expr::Map(_))), 0);
    let g = pass(&g, |f| fusion::index_of_build(f, &mut None));
    assert_eq!(
        count(&g, &|e| matches!(e, Expr::Build(_))),
        1,
        "{}",
        func_to_string(&g)
    );
    let ins: Inputs = [0, 2, 5]
        .iter()
        .map(|k| (vec![vec_f(&[1.0, 2.0, 3.0]), Value::I64(*k)], vec![]))
        .collect();
    verify(&f, &g, Mode::LinearA, &ins, 0.0);
}

#[test]
fn build_of_index() {
    let mut b = new_builder("f");
    let x = b.param("x", Ty::f64s(2));
    let n = b.shape(x.into(), 0);
    let m = b.shape(x.into(), 1);
    let copy = b.build(&[n.into(), m.into()], |b, j| {
        vec![b.index(x.into(), &[j[0].into(), j[1].into()]).into()]
    })[0];
    let rows = b.build(&[n.into()], |b, j| {
        vec![b.index(x.into(), &[j[0].into()]).into()]
    })[0];
    // Not the identity: the sizes are swapped.
    let other = b.build(&[m.into()], |b, j| {
        vec![b.index(x.into(), &[j[0].into()]).into()]
    })[0];
    let f = b.finish(vec![copy.into(), rows.into(), other.into()], vec![]);
    let mut g = f.clone();
    let st = simplify::rewrite(&mut g, &prog_of(&f), &Options::default());
    assert_eq!(st.get("build_of_index"), 2);
    assert_eq!(g.body.results[0], Atom::Var(x));
    assert_eq!(g.body.results[1], Atom::Var(x));
    let ins: Inputs = vec![
        (vec![mat_f(2, 2, &[1.0, 2.0, 3.0, 4.0])], vec![]),
        (vec![mat_f(3, 2, &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0])], vec![]),
    ];
    verify(&f, &g, Mode::LinearA, &ins, 0.0);
}

#[test]
fn build_of_index_multi_result_and_map_identity() {
    let mut b = new_builder("f");
    let u = b.param("u", Ty::f64s(1));
    let v = b.param("v", Ty::f64s(1));
    let n = b.shape(u.into(), 0);
    // Result 1 is u itself; result 2 is v only if v is as long as u: kept.
    let r = b.build(&[n.into()], |b, i| {
        let a = b.index(u.into(), &[i[0].into()]);
        let c = b.index(v.into(), &[i[0].into()]);
        let m = b.prim(Prim::Mul, &[a.into(), c.into()]);
        vec![m.into(), a.into(), c.into()]
    });
    let mm = b.map(&[u.into(), v.into()], |b, p| {
        let s = b.prim(Prim::Sub, &[p[0].into(), p[1].into()]);
        vec![s.into(), p[1].into()]
    });
    let f = b.finish(
        vec![
            r[0].into(),
            r[1].into(),
            r[2].into(),
            mm[0].into(),
            mm[1].into(),
        ],
        vec![],
    );
    let g = apply(&f, "build_of_index", fusion::build_of_index);
    let g = apply(&g, "map_identity", fusion::map_identity);
    assert_eq!(g.body.results[1], Atom::Var(u));
    assert_ne!(g.body.results[2], Atom::Var(v));
    assert_eq!(g.body.results[4], Atom::Var(v));
    let ins: Inputs = vec![
        (vec![vec_f(&[1.0, 2.0]), vec_f(&[3.0, 4.0])], vec![]),
        (vec![vec_f(&[1.0, 2.0]), vec_f(&[3.0, 4.0, 5.0])], vec![]),
    ];
    verify(&f, &g, Mode::LinearA, &ins, 0.0);
}

#[test]
fn gather_of_build() {
    let mut b = new_builder("f");
    let n = b.param("n", Ty::I64);
    let idx = b.param("idx", Ty::array(Scalar::I64, 1));
    let bl = b.build(&[n.into(), Atom::I64(2)], |b, j| {
        let fj = b.prim(Prim::ToF64, &[j[0].into()]);
        let fk = b.prim(Prim::ToF64, &[j[1].into()]);
        vec![b.prim(Prim::Atan2, &[fj.into(), fk.into()]).into()]
    })[0];
    let g0 = b.array(ArrayOp::Gather {
        arr: bl.into(),
        idx: idx.into(),
    });
    let f = b.finish(vec![g0.into()], vec![]);
    let g = pass(&f, |f| fusion::gather_of_build(f, &mut None));
    assert_eq!(
        count(&g, &|e| matches!(e, Expr::Array(ArrayOp::Gather { .. }))),
        0
    );
    let ins: Inputs = vec![
        (
            vec![Value::I64(4), Value::i64s(&[3], vec![3, 0, 3])],
            vec![],
        ),
        (vec![Value::I64(4), Value::i64s(&[1], vec![9])], vec![]),
    ];
    verify(&f, &g, Mode::LinearA, &ins, 0.0);
}

#[test]
fn dot_of_map_and_ldot_of_map() {
    let mut b = new_builder("f");
    let x = b.param("x", Ty::f64s(1));
    let y = b.param("y", Ty::f64s(1));
    let dx = b.lin_param("dx", Ty::f64s(1), arr_shape(x));
    let p = b.map(&[x.into(), y.into()], |b, p| {
        vec![b.prim(Prim::Mul, &[p[1].into(), p[0].into()]).into()]
    })[0];
    let s = b.array(ArrayOp::Reduce {
        op: ReduceOp::Sum,
        arr: p.into(),
        axis: None,
    });
    let q = b.map(&[x.into()], |b, p| {
        vec![b.prim(Prim::Mul, &[p[0].into(), p[0].into()]).into()]
    })[0];
    let s2 = b.array(ArrayOp::Reduce {
        op: ReduceOp::Sum,
        arr: q.into(),
        axis: Some(0),
    });
    let body = b.lambda(&[Ty::F64], &[Ty::F64], |b, ps, lps| {
        let d = b.lin(LinOp::Scale {
            s: ps[0].into(),
            x: lps[0],
        });
        (vec![], vec![d])
    });
    let (_, dm) = b.emit(Expr::Map(Map {
        arrs: vec![y.into()],
        lin_arrs: vec![dx],
        body,
    }));
    let ds = b.lin(LinOp::Sum {
        x: dm[0],
        axis: None,
    });
    let f = b.finish(vec![s.into(), s2.into()], vec![ds]);
    let g = pass(&f, |f| fusion::dot_of_map(f, &mut None));
    let g = pass(&g, |f| fusion::ldot_of_map(f, &mut None));
    assert_eq!(count(&g, &|e| matches!(e, Expr::Map(_))), 0);
    assert_eq!(
        count(&g, &|e| matches!(
            e,
            Expr::Array(ArrayOp::MatMul { .. }) | Expr::Lin(LinOp::MatMul { .. })
        )),
        3
    );
    let ins: Inputs = vec![(
        vec![vec_f(&[0.1, 0.2, 0.3]), vec_f(&[1.0, -2.0, 3.0])],
        vec![vec_f(&[0.5, 0.25, -1.0])],
    )];
    verify(&f, &g, Mode::LinearA, &ins, 1e-12);
}

#[test]
fn sum_to_loop() {
    let mut b = new_builder("f");
    let n = b.param("n", Ty::I64);
    let bl = b.build(&[n.into()], |b, j| {
        let fj = b.prim(Prim::ToF64, &[j[0].into()]);
        vec![b.prim(Prim::Sin, &[fj.into()]).into()]
    })[0];
    let s = b.array(ArrayOp::Reduce {
        op: ReduceOp::Sum,
        arr: bl.into(),
        axis: None,
    });
    let f = b.finish(vec![s.into()], vec![]);
    let g = pass(&f, |f| fusion::sum_to_loop(f, &mut None));
    assert_eq!(count(&g, &|e| matches!(e, Expr::Loop(_))), 1);
    assert_eq!(count(&g, &|e| matches!(e, Expr::Build(_))), 0);
    let ins: Inputs = [0, 1, 10]
        .iter()
        .map(|k| (vec![Value::I64(*k)], vec![]))
        .collect();
    verify(&f, &g, Mode::LinearA, &ins, 1e-12);
    // Off by default.
    let mut h = f.clone();
    simplify::simplify_func(&mut h, &prog_of(&f), &Options::default());
    assert_eq!(count(&h, &|e| matches!(e, Expr::Loop(_))), 0);
}

// ---------------------------------------------------------------- LICM

#[test]
fn licm_hoists_infallible_invariants_only() {
    let mut b = new_builder("f");
    let x = b.param("x", Ty::f64s(1));
    let c = b.param("c", Ty::F64);
    let k = b.param("k", Ty::I64);
    let n = b.shape(x.into(), 0);
    let outer = b.build(&[n.into()], |b, i| {
        let inner = b.build(&[Atom::I64(3)], |b, j| {
            let e = b.prim(Prim::Exp, &[c.into()]); // invariant in both builds
            let kk = b.prim(Prim::Add, &[k.into(), Atom::I64(1)]); // i64 add: may overflow
            let xi = b.index(x.into(), &[i[0].into()]); // may fail: stays
            let fj = b.prim(Prim::ToF64, &[j[0].into()]);
            let fk = b.prim(Prim::ToF64, &[kk.into()]);
            let a = b.prim(Prim::Mul, &[e.into(), xi.into()]);
            let a2 = b.prim(Prim::Add, &[a.into(), fj.into()]);
            vec![b.prim(Prim::Add, &[a2.into(), fk.into()]).into()]
        })[0];
        let s = b.array(ArrayOp::Reduce {
            op: ReduceOp::Sum,
            arr: inner.into(),
            axis: None,
        });
        vec![s.into()]
    })[0];
    let f = b.finish(vec![outer.into()], vec![]);
    let g = pass(&f, licm::licm);
    // exp(c) is now a top-level statement.
    assert!(
        g.body
            .stmts
            .iter()
            .any(|s| matches!(s.expr, Expr::Prim(Prim::Exp, _))),
        "{}",
        func_to_string(&g)
    );
    assert!(!g.body.stmts.iter().any(|s| matches!(
        s.expr,
        Expr::Prim(Prim::Add, _) | Expr::Array(ArrayOp::Index { .. })
    )));
    assert_eq!(size_func(&g), size_func(&f));
    let ins: Inputs = vec![
        (
            vec![vec_f(&[1.0, 2.0]), Value::F64(0.5), Value::I64(4)],
            vec![],
        ),
        (
            vec![vec_f(&[]), Value::F64(0.5), Value::I64(i64::MAX)],
            vec![],
        ),
    ];
    verify(&f, &g, Mode::LinearA, &ins, 0.0);
    // The second input (empty x, k = MAX) runs: nothing fallible was hoisted.
    assert!(run(&prog_of(&g), "f", &ins[1].0, &[]).is_ok());
}

// ---------------------------------------------------------------- fusion into loops

/// `build [n] |i| { let y = map(m[i]) |x| exp(x); sum over y by a loop }`:
/// the shape of a lowered fold, with `shape y, 0` as its trip count.
fn row_sums_of_exp() -> Func {
    let mut b = new_builder("f");
    let m = b.param("m", Ty::f64s(2));
    let n = b.shape(m.into(), 0);
    let bld = b.build(&[n.into()], |b, ix| {
        let row = b.index(m.into(), &[ix[0].into()]);
        let y = b.map(&[row.into()], |b, e| {
            vec![b.prim(Prim::Exp, &[e[0].into()]).into()]
        })[0];
        let len = b.shape(y.into(), 0);
        let (st, _) = b.loop_(len.into(), false, &[(-0.0).into()], |b, k, s| {
            let e = b.index(y.into(), &[k.into()]);
            (
                vec![b.prim(Prim::Add, &[s[0].into(), e.into()]).into()],
                vec![],
            )
        });
        vec![st[0].into()]
    })[0];
    b.finish(vec![bld.into()], vec![])
}

#[test]
fn fuse_into_loop_computes_each_element_where_the_loop_reads_it() {
    let f = row_sums_of_exp();
    let g = pass(&f, |f| fuse_into_loop::fuse_into_loop(f, &mut None));
    assert_eq!(
        count(&g, &|e| matches!(e, Expr::Map(_))),
        0,
        "{}",
        func_to_string(&g)
    );
    let ins: Inputs = vec![
        (vec![mat_f(2, 3, &[0.1, 0.2, 0.3, -1.0, 2.0, 0.5])], vec![]),
        (vec![mat_f(0, 3, &[])], vec![]),
        (vec![mat_f(2, 0, &[])], vec![]),
    ];
    verify(&f, &g, Mode::LinearA, &ins, 0.0);
}

#[test]
fn fuse_into_loop_leaves_arrays_read_twice_or_at_other_indices() {
    // The loop reads y[0] at every step: fusing would recompute it.
    let mut b = new_builder("f");
    let x = b.param("x", Ty::f64s(1));
    let y = b.map(&[x.into()], |b, e| {
        vec![b.prim(Prim::Exp, &[e[0].into()]).into()]
    })[0];
    let n = b.shape(x.into(), 0);
    let (st, _) = b.loop_(n.into(), false, &[0.0.into()], |b, _k, s| {
        let e = b.index(y.into(), &[Atom::I64(0)]);
        (
            vec![b.prim(Prim::Add, &[s[0].into(), e.into()]).into()],
            vec![],
        )
    });
    let f = b.finish(vec![st[0].into()], vec![]);
    assert!(!fuse_into_loop::fuse_into_loop(&mut f.clone(), &mut None));
    // A build read by a loop that may run past its extent: reading `y` there
    // fails, the fused body (no array read) would not.
    let mut b = new_builder("g");
    let n = b.param("n", Ty::I64);
    let y = b.build(&[Atom::I64(3)], |b, j| {
        vec![b.prim(Prim::ToF64, &[j[0].into()]).into()]
    })[0];
    let (st, _) = b.loop_(n.into(), false, &[0.0.into()], |b, k, s| {
        let e = b.index(y.into(), &[k.into()]);
        (
            vec![b.prim(Prim::Add, &[s[0].into(), e.into()]).into()],
            vec![],
        )
    });
    let g = b.finish(vec![st[0].into()], vec![]);
    assert!(!fuse_into_loop::fuse_into_loop(&mut g.clone(), &mut None));
    assert!(run(&prog_of(&g), "g", &[Value::I64(5)], &[]).is_err());
}

// ---------------------------------------------------------------- tabulation

/// `build [n, k] |i, j| loop d (s = 0) |r| s + exp(q[j, r]) * x[i, r] + ln(s + 2)`:
/// `exp(q[j, r])` does not read `i` (tabulated over `[k, d]`); `ln(s + 2)`
/// reads the loop state and `x[i, r] * ..` every index (both stay).
fn tabulate_input() -> Func {
    let mut b = new_builder("f");
    let q = b.param("q", Ty::f64s(2));
    let x = b.param("x", Ty::f64s(2));
    let k = b.param("k", Ty::I64);
    let d = b.param("d", Ty::I64);
    let n = b.shape(x.into(), 0);
    let bld = b.build(&[n.into(), k.into()], |b, ix| {
        let (st, _) = b.loop_(d.into(), false, &[0.0.into()], |b, r, s| {
            let e = b.index(q.into(), &[ix[1].into(), r.into()]);
            let ex = b.prim(Prim::Exp, &[e.into()]);
            let xi = b.index(x.into(), &[ix[0].into(), r.into()]);
            let m = b.prim(Prim::Mul, &[ex.into(), xi.into()]);
            let s2 = b.prim(Prim::Add, &[s[0].into(), Atom::F64(2.0)]);
            let l = b.prim(Prim::Ln, &[s2.into()]);
            let a = b.prim(Prim::Add, &[s[0].into(), m.into()]);
            let a2 = b.prim(Prim::Add, &[a.into(), l.into()]);
            (vec![a2.into()], vec![])
        });
        vec![st[0].into()]
    })[0];
    b.finish(vec![bld.into()], vec![])
}

#[test]
fn tabulate_moves_partially_invariant_expensive_scalars_to_a_table() {
    let f = tabulate_input();
    let g = pass(&f, tabulate::tabulate);
    // One table build before the original, exp only inside it; ln stays.
    assert_eq!(
        count(&g, &|e| matches!(e, Expr::Build(_))),
        2,
        "{}",
        func_to_string(&g)
    );
    let table = g
        .body
        .stmts
        .iter()
        .find(|s| matches!(s.expr, Expr::Build(_)))
        .unwrap();
    assert_eq!(g.vars.ty(table.binds[0]), &Ty::f64s(2));
    assert!(blocks(&table.expr).any(|b| b
        .stmts
        .iter()
        .any(|s| matches!(s.expr, Expr::Prim(Prim::Exp, _)))));
    assert_eq!(count(&g, &|e| matches!(e, Expr::Prim(Prim::Exp, _))), 1);
    assert_eq!(count(&g, &|e| matches!(e, Expr::Prim(Prim::Ln, _))), 1);
    // A second pass finds nothing more (the table reads all its indices).
    assert!(!tabulate::tabulate(&mut g.clone()));
    let q = mat_f(2, 3, &[0.1, -0.2, 0.3, 0.4, -0.5, 0.6]);
    let x = mat_f(
        4,
        3,
        &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 1.5, 2.5, 3.5],
    );
    let ins: Inputs = vec![
        (
            vec![q.clone(), x.clone(), Value::I64(2), Value::I64(3)],
            vec![],
        ),
        (
            vec![q.clone(), x.clone(), Value::I64(1), Value::I64(2)],
            vec![],
        ),
        // d < 0: the loop runs no iteration.
        (
            vec![q.clone(), x.clone(), Value::I64(2), Value::I64(-4)],
            vec![],
        ),
    ];
    // Bit-identical (the same operations on the same values).
    verify(&f, &g, Mode::LinearA, &ins, 0.0);
    // No point (n = 0): the original never reads q, and neither does the
    // table, even where q is too small for k and d.
    let none = vec![
        mat_f(1, 1, &[0.0]),
        mat_f(0, 3, &[]),
        Value::I64(5),
        Value::I64(7),
    ];
    assert!(run(&prog_of(&f), "f", &none, &[]).is_ok());
    assert!(run(&prog_of(&g), "f", &none, &[]).is_ok());
    // Where the original fails (q too small), the tabulated one fails too.
    let bad = vec![mat_f(1, 1, &[0.0]), x, Value::I64(5), Value::I64(7)];
    assert!(run(&prog_of(&f), "f", &bad, &[]).is_err());
    assert!(run(&prog_of(&g), "f", &bad, &[]).is_err());
}

#[test]
fn tabulate_leaves_scalars_reading_every_index_or_the_loop_state() {
    // exp(x[i, j]) reads both indices: no table.
    let mut b = new_builder("f");
    let x = b.param("x", Ty::f64s(2));
    let n = b.shape(x.into(), 0);
    let m = b.shape(x.into(), 1);
    let bld = b.build(&[n.into(), m.into()], |b, ix| {
        let e = b.index(x.into(), &[ix[0].into(), ix[1].into()]);
        vec![b.prim(Prim::Exp, &[e.into()]).into()]
    })[0];
    let f = b.finish(vec![bld.into()], vec![]);
    assert!(!tabulate::tabulate(&mut f.clone()));
    // A build reading one of two indices in its own body: tabulated over it.
    let mut b = new_builder("g");
    let x = b.param("x", Ty::f64s(1));
    let n = b.shape(x.into(), 0);
    let bld = b.build(&[Atom::I64(3), n.into()], |b, ix| {
        let e = b.index(x.into(), &[ix[1].into()]);
        let s = b.prim(Prim::Sin, &[e.into()]);
        let fi = b.prim(Prim::ToF64, &[ix[0].into()]);
        vec![b.prim(Prim::Mul, &[s.into(), fi.into()]).into()]
    })[0];
    let g0 = b.finish(vec![bld.into()], vec![]);
    let g = pass(&g0, tabulate::tabulate);
    assert_eq!(count(&g, &|e| matches!(e, Expr::Build(_))), 2);
    let ins: Inputs = vec![
        (vec![vec_f(&[0.5, 1.0, -2.0])], vec![]),
        (vec![vec_f(&[])], vec![]),
    ];
    verify(&g0, &g, Mode::LinearA, &ins, 0.0);
}

// ---------------------------------------------------------------- the whole simplifier

/// A loop + build + reduce function with dead, duplicated, foldable and
/// fusable code.
fn bigger() -> Func {
    let mut b = new_builder("big");
    let x = b.param("x", Ty::f64s(1));
    let w = b.param("w", Ty::F64);
    let n = b.param("n", Ty::I64);
    let len = b.shape(x.into(), 0);
    let (st, _) = b.loop_(
        n.into(),
        false,
        &[Atom::F64(0.0), Atom::F64(1.0)],
        |b, _i, s| {
            let one = b.prim(Prim::Add, &[Atom::F64(0.5), Atom::F64(0.5)]);
            let ww = b.prim(Prim::Mul, &[w.into(), one.into()]);
            let e = b.map(&[x.into()], |b, p| {
                vec![b.prim(Prim::Mul, &[p[0].into(), ww.into()]).into()]
            })[0];
            let e2 = b.map(&[e.into()], |b, p| {
                vec![b.prim(Prim::Tanh, &[p[0].into()]).into()]
            })[0];
            let m2 = b.shape(e2.into(), 0);
            let cp = b.build(&[m2.into()], |b, j| {
                vec![b.index(e2.into(), &[j[0].into()]).into()]
            })[0];
            let sum = b.array(ArrayOp::Reduce {
                op: ReduceOp::Sum,
                arr: cp.into(),
                axis: None,
            });
            let acc = b.prim(Prim::Add, &[s[0].into(), sum.into()]);
            let acc0 = b.prim(Prim::Add, &[acc.into(), Atom::F64(-0.0)]);
            let dead = b.prim(Prim::Mul, &[s[1].into(), Atom::F64(2.0)]);
            (vec![acc0.into(), dead.into()], vec![])
        },
    );
    let ww2 = b.prim(Prim::Mul, &[w.into(), Atom::F64(1.0)]);
    let sq = b.build(&[len.into()], |b, j| {
        let xi = b.index(x.into(), &[j[0].into()]);
        let xi2 = b.index(x.into(), &[j[0].into()]);
        vec![b.prim(Prim::Mul, &[xi.into(), xi2.into()]).into()]
    })[0];
    let sqs = b.array(ArrayOp::Reduce {
        op: ReduceOp::Sum,
        arr: sq.into(),
        axis: None,
    });
    let r = b.prim(Prim::Add, &[st[0].into(), sqs.into()]);
    let r2 = b.prim(Prim::Mul, &[r.into(), ww2.into()]);
    b.finish(vec![r2.into()], vec![])
}

#[test]
fn simplify_func_on_a_bigger_function() {
    let f = bigger();
    let mut g = f.clone();
    simplify::simplify_func(&mut g, &prog_of(&f), &Options::default());
    assert!(
        size_func(&g) * 3 < size_func(&f) * 2,
        "{} -> {}\n{}",
        size_func(&f),
        size_func(&g),
        func_to_string(&g)
    );
    // The invariant map and its sum left the loop.
    let Some(Expr::Loop(l)) = g
        .body
        .stmts
        .iter()
        .map(|s| &s.expr)
        .find(|e| matches!(e, Expr::Loop(_)))
    else {
        panic!("{}", func_to_string(&g))
    };
    assert_eq!(l.body.body.stmts.len(), 1, "{}", func_to_string(&g));
    let ins: Inputs = [
        (vec![0.5, -1.0, 2.0], 0.7, 3),
        (vec![], 1.5, 2),
        (vec![1.0], 0.0, 0),
    ]
    .into_iter()
    .map(|(x, w, n)| (vec![vec_f(&x), Value::F64(w), Value::I64(n)], vec![]))
    .collect();
    verify(&f, &g, Mode::LinearA, &ins, 1e-12);
    let p = prog_of(&f);
    let (_, w0) = run_counted(&p, "big", &ins[0].0, &[]).unwrap();
    let (_, w1) = run_counted(&prog_of(&g), "big", &ins[0].0, &[]).unwrap();
    assert!(w1 < w0, "work {w0} -> {w1}");
    // A second run changes nothing (fixpoint).
    let mut h = g.clone();
    assert!(
        !simplify::sweep(&mut h, &p, &Options::default()),
        "{}",
        func_to_string(&h)
    );
}

// ---------------------------------------------------------------- on pass outputs

mod pipeline {
    use super::*;
    use ad_core_ir::driver::{differentiate, Names, Options as DriverOptions};
    use ad_core_ir::testing::Rng;

    /// Differentiates `name` without simplification, simplifies every derived
    /// function, and checks: the checker accepts each (Linear A for jvp,
    /// Linear B for the others), jvp / fwd / lin / lin_t give the same results
    /// before and after, and the derived code got smaller.
    pub fn check(prog: &Program, name: &str, args: &[Value], seed: u64) {
        check_if_differentiable(prog, name, args, seed, true)
    }

    /// As [`check`]; when `strict` is false a program the driver fails on
    /// (a bug or limitation of another pass) is skipped.
    pub fn check_if_differentiable(
        prog: &Program,
        name: &str,
        args: &[Value],
        seed: u64,
        strict: bool,
    ) {
        let raw = DriverOptions {
            simplify: false,
            check: true,
            ..DriverOptions::default()
        };
        let wrt = vec![true; args.len()];
        let d = if strict {
            differentiate(prog, name, &wrt, &raw)
                .unwrap_or_else(|e| panic!("differentiate {name}: {e}"))
        } else {
            // Another pass failing (or panicking) is not this test's business.
            match std::panic::catch_unwind(|| differentiate(prog, name, &wrt, &raw)) {
                Ok(Ok(d)) => d,
                _ => return,
            }
        };
        let p0 = d.program.clone();
        let mut p1 = p0.clone();
        let (mut before, mut after) = (0, 0);
        for g in &prog.funcs {
            let n = Names::of(&g.name);
            for (fname, mode) in [
                (n.jvp, Mode::LinearA),
                (n.fwd, Mode::LinearB),
                (n.lin, Mode::LinearB),
                (n.lin_t, Mode::LinearB),
            ] {
                let Some(f) = p0.func(&fname) else { continue };
                let mut s = f.clone();
                simplify::simplify_func(&mut s, &p0, &Options::default());
                if let Err(e) = check_func(&p0, &s, mode) {
                    panic!(
                        "`{fname}` fails the checker after simplify: {e:?}\nbefore:\n{}\nafter:\n{}",
                        func_to_string(f),
                        func_to_string(&s)
                    );
                }
                if std::env::var("SIMP_DUMP").is_ok() {
                    eprintln!(
                        "---- {fname} before:\n{}\n---- after:\n{}",
                        func_to_string(f),
                        func_to_string(&s)
                    );
                }
                before += size_func(f);
                after += size_func(&s);
                p1.insert(s);
            }
        }
        // Pushing a drop into both branches of an `if` may add a statement.
        assert!(
            !strict || after <= before,
            "{name}: size {before} -> {after}"
        );
        // Inputs of the derived functions.
        let f = prog.func(name).expect("the function");
        let mut rng = Rng(seed);
        let dx: Vec<Value> = args
            .iter()
            .zip(&f.params)
            .filter(|(_, p)| f.vars.ty(**p).is_differentiable())
            .map(|(a, _)| rng.like(a))
            .collect();
        let names = &d.names;
        // The unsimplified function must run (else another pass is at
        // fault: skipped unless strict); the simplified one must then too.
        let go = |func: &str, a: &[Value], l: &[Value]| {
            let r0 = match run(&p0, func, a, l) {
                Ok(r) => r,
                Err(e) if strict => panic!("{func}: {e}"),
                Err(_) => return None,
            };
            let r1 = run(&p1, func, a, l).unwrap_or_else(|e| panic!("simplified {func}: {e}"));
            Some((r0, r1))
        };
        let same = |what: &str, x: &[Value], y: &[Value]| {
            assert_eq!(x.len(), y.len(), "{what}");
            for (a, b) in x.iter().zip(y) {
                let tol = 1e-10 * (1.0 + a.max_abs_diff(&a.zeros_like()));
                assert!(
                    a.max_abs_diff(b) <= tol,
                    "{name}: {what} differs: {a:?} vs {b:?}"
                );
            }
        };
        let Some((j0, j1)) = go(&names.jvp, args, &dx) else {
            return;
        };
        same("jvp primal", &j0.0, &j1.0);
        same("jvp tangent", &j0.1, &j1.1);
        let Some(((r0, _), (r1, _))) = go(&names.fwd, args, &[]) else {
            return;
        };
        same("fwd", &r0, &r1);
        let res = &r0[d.n_results..];
        let Some((l0, l1)) = go(&names.lin, res, &dx) else {
            return;
        };
        same("lin", &l0.1, &l1.1);
        let ct: Vec<Value> = l0.1.iter().map(|v| rng.like(v)).collect();
        let Some((t0, t1)) = go(&names.lin_t, res, &ct) else {
            return;
        };
        same("lin_t", &t0.1, &t1.1);
        // The driver's order (simplify between passes, residuals pruned):
        // same primal results, same tangents, transpose still the adjoint.
        let caught = std::panic::catch_unwind(|| super::driver_like::differentiate(prog, name));
        let Some((p2, n2)) = (match caught {
            Ok(r) => r,
            Err(e) if strict => std::panic::resume_unwind(e),
            Err(_) => None,
        }) else {
            return;
        };
        let run2 = |func: &str, a: &[Value], l: &[Value]| {
            run(&p2, func, a, l).unwrap_or_else(|e| panic!("driver-like {func}: {e}"))
        };
        let j2 = run2(&names.jvp, args, &dx);
        same("driver-like jvp primal", &j0.0, &j2.0);
        same("driver-like jvp tangent", &j0.1, &j2.1);
        let (r2, _) = run2(&names.fwd, args, &[]);
        same("driver-like fwd primal", &r0[..d.n_results], &r2[..n2]);
        let res2 = &r2[n2..];
        let (_, l2) = run2(&names.lin, res2, &dx);
        same("driver-like lin", &l0.1, &l2);
        let (_, t2) = run2(&names.lin_t, res2, &ct);
        same("driver-like lin_t", &t0.1, &t2);
    }
}

/// The driver's sequence with the simplifier between passes (as
/// `driver::differentiate` runs it once wired): jvp, simplify, unzip,
/// simplify lin, prune residuals, simplify fwd, transpose, simplify; the
/// checker after every step. Returns the program and `n_results` of `name`.
mod driver_like {
    use super::*;
    use ad_core_ir::jvp::jvp_func;
    use ad_core_ir::prune::prune_residuals;
    use ad_core_ir::transpose::transpose_func;
    use ad_core_ir::unzip::unzip_func;

    fn checked(p: &Program, f: &Func, mode: Mode, what: &str) {
        if let Err(e) = check_func(p, f, mode) {
            panic!(
                "{what}: `{}` fails the checker: {e:?}\n{}",
                f.name,
                func_to_string(f)
            );
        }
    }

    /// `None` when a pass other than the simplifier fails on the program.
    pub fn differentiate(prog: &Program, name: &str) -> Option<(Program, usize)> {
        let opts = Options::default();
        let mut out = prog.clone();
        let mut n = 0;
        for g in &prog.funcs {
            let wrt = vec![true; g.params.len()];
            let mut j = jvp_func(&out, g, &wrt).ok()?;
            simplify::simplify_func(&mut j, &out, &opts);
            checked(&out, &j, Mode::LinearA, "jvp + simplify");
            out.insert(j.clone());
            let u = unzip_func(&out, &j).ok()?;
            let (mut fwd, mut lin) = (u.fwd, u.lin);
            simplify::simplify_func(&mut lin, &out, &opts);
            prune_residuals(&mut fwd, &mut lin, u.n_results);
            simplify::simplify_func(&mut fwd, &out, &opts);
            checked(&out, &fwd, Mode::LinearB, "unzip + simplify");
            checked(&out, &lin, Mode::LinearB, "unzip + simplify");
            out.insert(fwd);
            out.insert(lin.clone());
            let mut t = transpose_func(&out, &lin).ok()?;
            simplify::simplify_func(&mut t, &out, &opts);
            checked(&out, &t, Mode::LinearB, "transpose + simplify");
            out.insert(t);
            if g.name == name {
                n = u.n_results;
            }
        }
        Some((out, n))
    }
}

fn one_func(f: Func) -> Program {
    prog_of(&f)
}

#[test]
fn pipeline_scalar_and_loop() {
    let mut b = new_builder("f");
    let x = b.param("x", Ty::F64);
    let y = b.param("y", Ty::F64);
    let xy = b.prim(Prim::Mul, &[x.into(), y.into()]);
    let s = b.prim(Prim::Sin, &[x.into()]);
    let r = b.prim(Prim::Add, &[xy.into(), s.into()]);
    let c = b.prim(Prim::Gt, &[x.into(), Atom::F64(0.0)]);
    let br = b.if_(
        c.into(),
        |b| vec![b.prim(Prim::Exp, &[r.into()]).into()],
        |b| vec![b.prim(Prim::Neg, &[y.into()]).into()],
    );
    let f = b.finish(vec![br[0].into(), s.into()], vec![]);
    pipeline::check(&one_func(f.clone()), "f", &scalars(&[0.7, -1.3]), 1);
    pipeline::check(&one_func(f), "f", &scalars(&[-0.7, 1.3]), 2);

    let mut b = new_builder("pow");
    let x = b.param("x", Ty::F64);
    let n = b.param("n", Ty::I64);
    let (st, _) = b.loop_(n.into(), false, &[Atom::F64(1.0), x.into()], |b, _i, s| {
        let m = b.prim(Prim::Mul, &[s[0].into(), x.into()]);
        let t = b.prim(Prim::Sin, &[s[1].into()]);
        (vec![m.into(), t.into()], vec![])
    });
    let f = b.finish(vec![st[0].into(), st[1].into()], vec![]);
    pipeline::check(&one_func(f), "pow", &[Value::F64(1.1), Value::I64(4)], 3);
}

#[test]
fn pipeline_arrays() {
    // dot by build and sum.
    let mut b = new_builder("dot");
    let u = b.param("u", Ty::f64s(1));
    let v = b.param("v", Ty::f64s(1));
    let n = b.shape(u.into(), 0);
    let prod = b.build(&[n.into()], |b, i| {
        let a = b.index(u.into(), &[i[0].into()]);
        let c = b.index(v.into(), &[i[0].into()]);
        vec![b.prim(Prim::Mul, &[a.into(), c.into()]).into()]
    })[0];
    let s = b.array(ArrayOp::Reduce {
        op: ReduceOp::Sum,
        arr: prod.into(),
        axis: None,
    });
    let f = b.finish(vec![s.into()], vec![]);
    let u0 = vec_f(&[0.5, -1.0, 2.0, 0.25]);
    let v0 = vec_f(&[1.5, 0.5, -0.75, 3.0]);
    pipeline::check(&one_func(f), "dot", &[u0.clone(), v0.clone()], 4);

    // map over a matvec, then a map of two arrays and a sum.
    let mut b = new_builder("mv");
    let a = b.param("a", Ty::f64s(2));
    let x = b.param("x", Ty::f64s(1));
    let y = b.array(ArrayOp::MatMul {
        a: a.into(),
        b: x.into(),
    });
    let t = b.map(&[y.into()], |b, e| {
        vec![b.prim(Prim::Tanh, &[e[0].into()]).into()]
    })[0];
    let t2 = b.map(&[t.into(), y.into()], |b, e| {
        vec![b.prim(Prim::Mul, &[e[0].into(), e[1].into()]).into()]
    })[0];
    let s = b.array(ArrayOp::Reduce {
        op: ReduceOp::Sum,
        arr: t2.into(),
        axis: None,
    });
    let f = b.finish(vec![t.into(), s.into()], vec![]);
    let a0 = mat_f(2, 3, &[0.1, 0.2, -0.3, 0.4, -0.5, 0.6]);
    let x0 = vec_f(&[1.0, -2.0, 0.5]);
    pipeline::check(&one_func(f), "mv", &[a0, x0], 5);

    // A loop with array state.
    let mut b = new_builder("it");
    let x = b.param("x", Ty::f64s(1));
    let w = b.param("w", Ty::F64);
    let n = b.param("n", Ty::I64);
    let (st, _) = b.loop_(n.into(), false, &[x.into()], |b, _i, s| {
        let m = b.map(&[s[0].into()], |b, e| {
            let p = b.prim(Prim::Mul, &[e[0].into(), w.into()]);
            let q = b.prim(Prim::Sin, &[e[0].into()]);
            vec![b.prim(Prim::Add, &[p.into(), q.into()]).into()]
        })[0];
        (vec![m.into()], vec![])
    });
    let s = b.array(ArrayOp::Reduce {
        op: ReduceOp::Sum,
        arr: st[0].into(),
        axis: None,
    });
    let f = b.finish(vec![s.into()], vec![]);
    pipeline::check(&one_func(f), "it", &[u0, Value::F64(0.9), Value::I64(3)], 6);
}

// ---------------------------------------------------------------- random programs

/// On random programs: simplifying the primal program and every derived
/// function keeps the checker happy and the results equal.
#[test]
fn random_programs() {
    use common::gen::{cases, GenConfig};
    use proptest::test_runner::{TestCaseError, TestRunner};
    // 64 cases unless PROPTEST_CASES says otherwise (the shared default is larger).
    let mut cfg = common::config();
    cfg.cases = if std::env::var("PROPTEST_CASES").is_ok() {
        common::cases()
    } else {
        64
    };
    let mut runner = TestRunner::new(cfg);
    runner
        .run(&cases(GenConfig::from_env()), |c| {
            let (prog, entry, args, _) = c.parts();
            // The primal program.
            let mut simple = prog.clone();
            simplify::simplify_program(&mut simple, &Options::default());
            for f in &simple.funcs {
                if let Err(e) = check_func(&simple, f, Mode::LinearA) {
                    return Err(TestCaseError::fail(format!(
                        "checker on `{}`: {e:?}\n{}",
                        f.name,
                        func_to_string(f)
                    )));
                }
                // A fixpoint: one more sweep changes nothing.
                let mut again = f.clone();
                if simplify::sweep(&mut again, &simple, &Options::default()) {
                    return Err(TestCaseError::fail(format!(
                        "not a fixpoint:\n{}\nthen:\n{}",
                        func_to_string(f),
                        func_to_string(&again)
                    )));
                }
            }
            let (r0, _) = run(prog, entry, args, &[])
                .map_err(|e| TestCaseError::fail(format!("interp: {e}")))?;
            let (r1, _) = run(&simple, entry, args, &[])
                .map_err(|e| TestCaseError::fail(format!("simplified fails: {e}")))?;
            for (a, b) in r0.iter().zip(&r1) {
                let tol = 1e-10 * (1.0 + a.max_abs_diff(&a.zeros_like()));
                if a.max_abs_diff(b) > tol {
                    return Err(TestCaseError::fail(format!("{a:?} vs {b:?}")));
                }
            }
            // The derived functions.
            pipeline::check_if_differentiable(prog, entry, args, c.seed, false);
            Ok(())
        })
        .unwrap();
}

/// `ltake(0, i) = (0, 0)`, with the element's shape for a row of a matrix;
/// and `ltake x[i] keep` whose element is dropped is `x`.
#[test]
fn ltake_of_zero_and_dropped_elements() {
    let mut b = new_builder("f");
    let m = b.param("m", Ty::f64s(2));
    let i = b.param("i", Ty::I64);
    let m_shape = ShapeTree::Array(vec![Dim::Of(m, 0), Dim::Of(m, 1)]);
    let dm = b.lin_param("dm", Ty::f64s(2), m_shape.clone());
    let z = b.lin(LinOp::Zero(m_shape));
    let (_, ea) = b.emit(Expr::Lin(LinOp::Take {
        x: z,
        idx: vec![i.into()],
        zero: true,
    }));
    let (_, kept) = b.emit(Expr::Lin(LinOp::Take {
        x: dm,
        idx: vec![i.into(), Atom::I64(0)],
        zero: false,
    }));
    b.emit(Expr::Lin(LinOp::Drop(kept[0])));
    let f = b.finish(vec![], vec![ea[0], ea[1], kept[1]]);
    let g = apply(&f, "ltake_zero", zeros::ltake_zero);
    assert_eq!(count(&g, &is_zero), 2);
    let h = pass(&g, dce::drop_dead_linear);
    assert_eq!(
        count(&h, &|e| matches!(e, Expr::Lin(LinOp::Take { .. }))),
        0,
        "{}",
        func_to_string(&h)
    );
    let inputs = vec![(
        vec![mat_f(2, 3, &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]), Value::I64(1)],
        vec![mat_f(2, 3, &[0.5, -1.0, 2.0, 3.0, -4.0, 0.25])],
    )];
    verify(&f, &g, Mode::LinearB, &inputs, 0.0);
    verify(&f, &h, Mode::LinearB, &inputs, 0.0);
}

/// An array's size is never negative: `n < 0`, `n >= 0`, `0 > n`, `0 <= n`
/// and `max(n, 0)` fold for `n = shape(x, 0)` (a range's length over it),
/// and for `max(i, 0)`; nothing folds for an `i64` parameter, which may be
/// negative.
#[test]
fn sizes_are_non_negative() {
    let mut b = new_builder("f");
    let x = b.param("x", Ty::f64s(1));
    let i = b.param("i", Ty::I64);
    let n = b.shape(x.into(), 0);
    let lt = b.prim(Prim::Lt, &[n.into(), Atom::I64(0)]);
    let ge = b.prim(Prim::Ge, &[n.into(), Atom::I64(0)]);
    let gt = b.prim(Prim::Gt, &[Atom::I64(0), n.into()]);
    let le = b.prim(Prim::Le, &[Atom::I64(0), n.into()]);
    let mx = b.prim(Prim::Max, &[n.into(), Atom::I64(0)]);
    let mi = b.prim(Prim::Max, &[Atom::I64(-2), i.into()]);
    let mi2 = b.prim(Prim::Max, &[mi.into(), Atom::I64(0)]);
    let kept_lt = b.prim(Prim::Lt, &[i.into(), Atom::I64(0)]);
    let kept_max = b.prim(Prim::Max, &[i.into(), Atom::I64(0)]);
    let f = b.finish(
        vec![
            lt.into(),
            ge.into(),
            gt.into(),
            le.into(),
            mx.into(),
            mi2.into(),
            kept_lt.into(),
            kept_max.into(),
        ],
        vec![],
    );
    let mut g = apply(&f, "non_negative_int", algebra::non_negative_int);
    dce::dce(&mut g);
    assert_eq!(
        &g.body.results[..5],
        &[
            Atom::Bool(false),
            Atom::Bool(true),
            Atom::Bool(false),
            Atom::Bool(true),
            Atom::Var(n)
        ],
        "{}",
        func_to_string(&g)
    );
    // max(max(-2, i), 0) is not max(-2, i) (-2 < 0 when i < -2); i < 0 and
    // max(i, 0) stay.
    assert_eq!(size_func(&g), 5, "{}", func_to_string(&g));
    let ins: Inputs = [(3usize, 5i64), (0, -7), (2, 0)]
        .iter()
        .map(|(len, i)| {
            (
                vec![Value::f64s(&[*len], vec![0.5; *len]), Value::I64(*i)],
                vec![],
            )
        })
        .collect();
    verify(&f, &g, Mode::LinearA, &ins, 0.0);
}

/// Runs `sum_through_linear` until it changes nothing (each call moves a
/// sum through one operation).
fn sums_through(f: &Func) -> Func {
    let mut g = pass(f, |f| sum_through::sum_through_linear(f, &mut None));
    while sum_through::sum_through_linear(&mut g, &mut None) {}
    g
}

/// The ranks of the linear operands of `g`'s linear products (top level).
fn product_operand_ranks(g: &Func) -> Vec<usize> {
    g.body
        .stmts
        .iter()
        .filter_map(|s| match &s.expr {
            Expr::Lin(LinOp::MatMul { x, .. }) => g.vars.ty(*x).rank(),
            _ => None,
        })
        .collect()
}

/// The reverse pass of NumPy-style `-(xc.dot(&l.t()) + w)` summed over the
/// points (a mean's cotangent) and of `x.dot(&dv)` summed over columns: the
/// sums move through the negating map, the `ladd` and both products, which
/// become a vector-matrix and a matrix-vector product; the values agree up
/// to the rounding of the reordered sums.
#[test]
fn sums_move_through_linear_maps_and_products() {
    let text = "def f(x_0: [[f64]], l_1: [[f64]] ; dz_2: [[f64]] @ [shape(x_0, 0), shape(x_0, 1)], dw_3: [[f64]] @ [shape(x_0, 0), shape(x_0, 1)], dv_4: [[f64]] @ [shape(x_0, 1), 2]) -> (; [f64], [f64]) {
  let ; m_5: [[f64]] = lmatmul dz_2, l_1 lin_left
  let ; a_6: [[f64]] = ladd m_5, dw_3
  let ; n_7: [[f64]] = map(; a_6) |; c_8: f64| {
    let ; d_9: f64 = lneg c_8
    yield ; d_9
  }
  let ; s_10: [f64] = lsum n_7, axis=0
  let ; p_11: [[f64]] = lmatmul x_0, dv_4
  let ; t_12: [f64] = lsum p_11, axis=1
  return ; s_10, t_12
}
";
    let f = fixture_func(text);
    let g = sums_through(&f);
    // No matrix-matrix product is left: both became vector products.
    assert_eq!(product_operand_ranks(&f), [2, 2]);
    assert_eq!(product_operand_ranks(&g), [1, 1]);
    let summed_map = |e: &Expr| matches!(e, Expr::Map(m) if m.arrs.is_empty());
    assert_eq!(count(&g, &summed_map), 1);
    let x = mat_f(3, 2, &[0.5, -1.25, 3.0, 0.75, 2.0, -0.5]);
    let l = mat_f(2, 2, &[1.5, 0.25, -2.0, 0.5]);
    let dz = mat_f(3, 2, &[1.0, 2.0, -0.75, 0.25, 4.0, -1.0]);
    let dw = mat_f(3, 2, &[0.5, -0.5, 2.0, 1.0, -3.0, 0.125]);
    let dv = mat_f(2, 2, &[0.3, -0.7, 1.1, 0.9]);
    let ins: Inputs = vec![(vec![x, l], vec![dz, dw, dv])];
    verify(&f, &g, Mode::LinearB, &ins, 1e-12);
    // A fixed point: nothing is left to move.
    let mut h = g.clone();
    assert!(!sum_through::sum_through_linear(&mut h, &mut None));
}

/// A sum of one result of a map whose factor is a broadcast invariant along
/// the summed axis becomes the map of the summed operand (`Σ_i e^w ⊙ c_i =
/// e^w ⊙ Σ_i c_i`), the map keeping its other result; a scalar broadcast
/// summed over a vector inlines the body; a factor that varies along the
/// sum (a plain array, or a broadcast along the summed axis) stays.
#[test]
fn sums_move_past_factors_invariant_along_them() {
    let text = "def f(xc_0: [[f64]], dg_1: [f64], s_2: f64, v_3: [f64], cg_30: [f64] ; ct_4: [[f64]] @ [shape(xc_0, 0), shape(xc_0, 1)], ct_5: [f64] @ [shape(v_3, 0)], ct_29: [[f64]] @ [shape(xc_0, 0), shape(xc_0, 1)]) -> (; [f64], [f64], f64, [f64]) {
  let n_6: i64 = shape xc_0, 0
  let n_7: i64 = shape xc_0, 1
  let bc_8: [[f64]] = broadcast dg_1, [n_6, n_7], axes=[1]
  let ; p_9: [[f64]], q_10: [[f64]] = map(xc_0, bc_8 ; ct_4) |x_11: f64, w_12: f64 ; c_13: f64| {
    let ; c_14: f64, c_15: f64 = dup c_13
    let ; a_16: f64 = lscale x_11, c_14
    let e_17: f64 = exp w_12
    let ; b_18: f64 = lscale e_17, c_15
    yield ; a_16, b_18
  }
  let ; y_19: [f64] = lsum q_10, axis=0
  let ; z_20: [f64] = lsum p_9, axis=0
  let n_21: i64 = shape v_3, 0
  let bc_22: [f64] = broadcast s_2, [n_21], axes=[]
  let ; m_23: [f64] = map(bc_22 ; ct_5) |w_24: f64 ; c_25: f64| {
    let ; d_26: f64 = lscale w_24, c_25
    let ; g_27: f64 = lneg d_26
    yield ; g_27
  }
  let ; t_28: f64 = lsum m_23
  let bc_31: [[f64]] = broadcast cg_30, [n_6, n_7], axes=[0]
  let ; k_32: [[f64]] = map(bc_31 ; ct_29) |w_33: f64 ; c_34: f64| {
    let ; d_35: f64 = lscale w_33, c_34
    yield ; d_35
  }
  let ; u_36: [f64] = lsum k_32, axis=0
  return ; y_19, z_20, t_28, u_36
}
";
    let f = fixture_func(text);
    let mut g = pass(&f, sum_invariant::sum_invariant_factors);
    while sum_invariant::sum_invariant_factors(&mut g) {}
    while dce::drop_dead_linear(&mut g) | dce::dce(&mut g) {}
    // The map of `y` runs over the columns, `t`'s is inlined, and the
    // maps of `z` (a plain array) and `u` (a broadcast along the sum) stay.
    let map_ranks = |g: &Func| -> Vec<usize> {
        g.body
            .stmts
            .iter()
            .filter_map(|s| match &s.expr {
                Expr::Map(_) => g.vars.ty(s.lin_binds[0]).rank(),
                _ => None,
            })
            .collect()
    };
    assert_eq!(map_ranks(&f), [2, 1, 2]);
    assert_eq!(map_ranks(&g), [2, 1, 2]);
    let first = g.body.stmts.iter().find_map(|s| match &s.expr {
        Expr::Map(m) => Some((m.arrs.len(), s.lin_binds.len())),
        _ => None,
    });
    // The first map keeps one result, and DCE drops the array it no
    // longer reads.
    assert_eq!(first, Some((1, 1)));
    let ins: Inputs = vec![(
        vec![
            mat_f(3, 2, &[0.5, -1.25, 3.0, 0.75, 2.0, -0.5]),
            vec_f(&[0.25, -1.5]),
            Value::F64(-0.75),
            vec_f(&[1.0, 2.0, 3.0]),
            vec_f(&[2.0, -3.0, 0.5]),
        ],
        vec![
            mat_f(3, 2, &[1.0, 2.0, -0.75, 0.25, 4.0, -1.0]),
            vec_f(&[4.0, -2.0, 0.25]),
            mat_f(3, 2, &[0.5, -0.5, 2.0, 1.0, -3.0, 0.125]),
        ],
    )];
    verify(&f, &g, Mode::LinearB, &ins, 1e-12);
    // A fixed point.
    assert!(!sum_invariant::sum_invariant_factors(&mut g.clone()));
    // A summed result that reads no operand (a zero) has no shape to map
    // over: left to other rules (a 5,000-case `random_programs` run made
    // a map over no arrays).
    let zero =
        "def f(x_0: [[f64]] ; ct_1: [[f64]] @ [shape(x_0, 0), shape(x_0, 1)]) -> (; [f64], [f64]) {
  let ; p_2: [[f64]], q_3: [[f64]] = map(x_0 ; ct_1) |x_4: f64 ; c_5: f64| {
    let ; a_6: f64 = lscale x_4, c_5
    let ; z_7: f64 = lzero ()
    yield ; a_6, z_7
  }
  let ; s_8: [f64] = lsum p_2, axis=0
  let ; t_9: [f64] = lsum q_3, axis=0
  return ; s_8, t_9
}
";
    assert!(!sum_invariant::sum_invariant_factors(&mut fixture_func(
        zero
    )));
    // A map that also makes a non-linear value (forward mode's primal
    // beside its tangent) stays whole.
    let mixed = "def f(w_0: [f64], x_1: [[f64]] ; ct_2: [[f64]] @ [shape(x_1, 0), shape(x_1, 1)]) -> ([[f64]] ; [f64]) {
  let n_3: i64 = shape x_1, 0
  let n_4: i64 = shape x_1, 1
  let bc_5: [[f64]] = broadcast w_0, [n_3, n_4], axes=[1]
  let y_9: [[f64]] ; p_6: [[f64]] = map(bc_5 ; ct_2) |w_7: f64 ; c_8: f64| {
    let e_10: f64 = exp w_7
    let ; a_11: f64 = lscale w_7, c_8
    yield e_10 ; a_11
  }
  let ; s_12: [f64] = lsum p_6, axis=0
  return y_9 ; s_12
}
";
    let mut g = fixture_func(mixed);
    assert!(!sum_invariant::sum_invariant_factors(&mut g));
}

/// The reverse of a per-row reduction: a zero row filled by a loop (and an
/// `if`) and then added into the matrix's row is filled in the matrix's row
/// itself: no `lzero` of a row and no row addition left, the chain's
/// updates index the matrix, the same values; a chain that copies the row
/// (`dup`) or whose accumulator is bound after it starts stays.
#[test]
fn zero_rows_accumulate_in_place() {
    let chain = |tail: &str, acc: &str, row: &str| {
        format!(
            "def f(w_0: [[f64]] ; ct_3: [f64] @ [shape(w_0, 0)]) -> (; [[f64]]) {{
  let n_4: i64 = shape w_0, 0
  let m_5: i64 = shape w_0, 1
  let ; z_6: [[f64]] = lzero [n_4, m_5]
  let ; acc_7: [[f64]] = loop n_4 (; s_8: [[f64]] = z_6) |i_9: i64| {{
    let ; d_10: f64 = lindex ct_3[i_9]
    let ; d_40: f64, d_41: f64 = dup d_10
    let ; r_13: [f64] = lzero [m_5]
    let ; r_14: [f64], t_15: f64 = loop m_5 rev (; a_16: [f64] = r_13, b_17: f64 = d_40) |j_18: i64| {{
      let x_19: f64 = index w_0[i_9, j_18]
      let ; b_20: f64, b_21: f64 = dup b_17
      let ; e_22: f64 = lscale x_19, b_20
      let ; a_23: [f64] = lupdate a_16[j_18] += e_22
      yield ; a_23, b_21
    }}
    let c_24: bool = lt i_9, 1
    let ; r_25: [f64] = if c_24 @ [m_5] {{
      let ; r_26: [f64] = lupdate r_14[0] += t_15
      yield ; r_26
    }} else {{
      drop t_15
      yield ; r_14
    }}
{tail}
    let ; s_27: [[f64]] = lupdate {acc}[i_9] += {row}
    yield ; s_27
  }}
  return ; acc_7
}}
"
        )
    };
    let f = fixture_func(&chain("    drop d_41", "s_8", "r_25"));
    let g = pass(&f, in_place::accumulate_in_place);
    let rows = |g: &Func| {
        let zero = count(
            g,
            &|e| matches!(e, Expr::Lin(LinOp::Zero(ShapeTree::Array(d))) if d.len() == 1),
        );
        let adds = count(
            g,
            &|e| matches!(e, Expr::Lin(LinOp::Update { idx, add: true, .. }) if idx.len() == 1),
        );
        (zero, adds)
    };
    assert_eq!(rows(&f), (1, 3));
    assert_eq!(rows(&g), (0, 0));
    let ins: Inputs = vec![(
        vec![mat_f(3, 2, &[0.5, -1.25, 3.0, 0.75, 2.0, -0.5])],
        vec![vec_f(&[1.5, -2.0, 0.25])],
    )];
    verify(&f, &g, Mode::LinearB, &ins, 0.0);
    assert!(!in_place::accumulate_in_place(&mut g.clone()));
    // A copy of the row on the way, and an accumulator bound after the
    // chain starts: left alone.
    let copied = chain(
        "    drop d_41\n    let ; r_30: [f64], r_32: [f64] = dup r_25\n    drop r_32",
        "s_8",
        "r_30",
    );
    assert!(!in_place::accumulate_in_place(&mut fixture_func(&copied)));
    let late = chain(
        "    let ; s_31: [[f64]] = lupdate s_8[i_9, 0] += d_41",
        "s_31",
        "r_25",
    );
    assert!(!in_place::accumulate_in_place(&mut fixture_func(&late)));
}

/// A three-deep loop nest stacking scalar outputs (the residuals an LSTM's
/// forward half keeps: per step, per layer, per unit): the middle loop's
/// stack of the inner loop's outputs becomes its state, written in place,
/// and the outer loop's stack of the middle loop's bools likewise; the same
/// values and shapes, for empty loops too (a stack of a loop that runs no
/// iteration has all sizes 0). A trip count bound inside the loop around
/// the inner one, or a stack read where it is made, keeps its stack.
#[test]
fn nested_stacks_written_in_place() {
    // `{t}` and `{i}`: lines in the outer and the middle loop's bodies.
    let nest = |t: &str, i: &str| {
        format!(
            "def f(w_0: [[f64]], n_1: i64) -> ([[[f64]]], [[bool]], f64) {{
  let m_2: i64 = shape w_0, 0
  let s_4: f64, y_5: [[[f64]]], c_6: [[bool]] = loop n_1 (a_7: f64 = 0.0) |t_8: i64| {{
{t}
    let a_9: f64, z_10: [[f64]], c_11: [bool] = loop m_2 (b_12: f64 = a_7) |i_13: i64| {{
{i}
      let b_14: f64, q_15: [f64] = loop k_3 rev (e_16: f64 = b_12) |j_17: i64| {{
        let x_18: f64 = index w_0[i_13, j_17]
        let p_19: f64 = mul x_18, e_16
        let e_20: f64 = add p_19, 0.5
        yield e_20, p_19
      }}
      let g_21: bool = gt b_14, 1.0
      yield b_14, q_15, g_21
    }}
    yield a_9, z_10, c_11
  }}
  return y_5, c_6, s_4
}}
"
        )
    };
    let k = "    let k_3: i64 = shape w_0, 1";
    let stacked = |g: &Func| {
        fn go(b: &Block) -> usize {
            b.stmts
                .iter()
                .map(|s| {
                    let own = match &s.expr {
                        Expr::Loop(l) => l.body.body.results.len() - l.init.len(),
                        _ => 0,
                    };
                    own + blocks(&s.expr).map(go).sum::<usize>()
                })
                .sum()
        }
        go(&g.body)
    };
    let ins = |rows: usize, cols: usize, n: i64| -> (Vec<Value>, Vec<Value>) {
        let xs: Vec<f64> = (0..rows * cols).map(|k| 0.25 * k as f64 - 0.5).collect();
        (vec![mat_f(rows, cols, &xs), Value::I64(n)], vec![])
    };
    let inputs: Inputs = vec![
        ins(2, 3, 3),
        ins(2, 3, 0),
        ins(2, 0, 2),
        ins(0, 3, 2),
        ins(2, 3, -1),
    ];
    let in_place_updates = |g: &Func| {
        count(
            g,
            &|e| matches!(e, Expr::Array(ArrayOp::Update { idx, add: false, .. }) if idx.len() == 2),
        )
    };
    // The inner trip count bound in the outer loop: 5 stacked outputs, 1
    // left (the outer loop's stack of the middle loop's state).
    let f = fixture_func(&nest(k, ""));
    assert_eq!(stacked(&f), 5);
    let g = pass(&f, stack_in_place::stacks_in_place);
    assert_eq!(stacked(&g), 1, "{}", func_to_string(&g));
    assert_eq!(in_place_updates(&g), 2);
    verify(&f, &g, Mode::LinearB, &inputs, 0.0);
    assert!(!stack_in_place::stacks_in_place(&mut g.clone()));
    // Bound in the middle loop: the inner loop's stack and the middle
    // loop's stack of it stay; the bools still become state.
    let f = fixture_func(&nest("", &format!("  {k}")));
    let g = pass(&f, stack_in_place::stacks_in_place);
    assert_eq!(stacked(&g), 3, "{}", func_to_string(&g));
    assert_eq!(in_place_updates(&g), 1);
    verify(&f, &g, Mode::LinearB, &inputs, 0.0);
    // The inner loop's stack read in the middle loop's body: the same.
    let f = fixture_func(&nest(k, "").replace(
        "      let g_21: bool = gt b_14, 1.0\n",
        "      let g_21: bool = gt b_14, 1.0\n      let u_31: f64 = reduce_sum q_15\n",
    ));
    let g = pass(&f, stack_in_place::stacks_in_place);
    assert_eq!(stacked(&g), 3, "{}", func_to_string(&g));
    verify(&f, &g, Mode::LinearB, &inputs, 0.0);
}

/// More chains `in_place` follows: two loop levels with the row in the
/// inner loop's second state slot, into a rank-3 accumulator's row at two
/// leading indices (`acc[i, j] += row`); the same values, no zero row left.
#[test]
fn zero_rows_accumulate_in_place_through_nested_loops() {
    let text = "def f(w_0: [[[f64]]] ; ct_1: f64) -> (; [[[f64]]]) {
  let n_2: i64 = shape w_0, 0
  let m_3: i64 = shape w_0, 1
  let k_4: i64 = shape w_0, 2
  let ; z_5: [[[f64]]] = lzero [n_2, m_3, k_4]
  let ; acc_6: [[[f64]]] = loop n_2 (; s_7: [[[f64]]] = z_5) |i_8: i64| {
    let ; s_9: [[[f64]]] = loop m_3 (; t_10: [[[f64]]] = s_7) |j_11: i64| {
      let ; r_12: [f64] = lzero [k_4]
      let ; c_13: f64, r_14: [f64] = loop 2 (; c_15: f64 = ct_1, a_16: [f64] = r_12) |h_17: i64| {
        let ; c_25: f64, c_26: f64 = dup c_15
        let ; a_18: [f64] = loop k_4 (; a_19: [f64] = a_16) |q_20: i64| {
          let x_21: f64 = index w_0[i_8, j_11, q_20]
          let ; c_22: f64 = lscale x_21, c_25
          let ; a_23: [f64] = lupdate a_19[q_20] += c_22
          yield ; a_23
        }
        yield ; c_26, a_18
      }
      drop c_13
      let ; t_24: [[[f64]]] = lupdate t_10[i_8, j_11] += r_14
      yield ; t_24
    }
    yield ; s_9
  }
  return ; acc_6
}
";
    let f = fixture_func(text);
    let g = pass(&f, in_place::accumulate_in_place);
    let zero_rows = |g: &Func| {
        count(
            g,
            &|e| matches!(e, Expr::Lin(LinOp::Zero(ShapeTree::Array(d))) if d.len() == 1),
        )
    };
    assert_eq!((zero_rows(&f), zero_rows(&g)), (1, 0));
    let w: Vec<f64> = (0..12).map(|v| 0.25 * v as f64 - 1.0).collect();
    let ins: Inputs = vec![(vec![Value::f64s(&[2, 3, 2], w)], vec![Value::F64(-1.5)])];
    verify(&f, &g, Mode::LinearB, &ins, 0.0);
}

/// A map given one array twice reads it once: the later parameter reads
/// the earlier one and goes with its array (the NumPy-style GMM's reverse
/// read `z` twice for `z * z`'s cotangent).
#[test]
fn maps_read_a_repeated_array_once() {
    let text = "def f(z_0: [f64], w_11: [f64] ; c_1: [f64] @ [shape(z_0, 0)]) -> (; [f64]) {
  let ; m_2: [f64] = map(z_0, w_11, z_0 ; c_1) |x_3: f64, v_12: f64, y_4: f64 ; c_5: f64| {
    let ; c_6: f64, c_7: f64 = dup c_5
    let t_13: f64 = mul y_4, v_12
    let ; a_8: f64 = lscale x_3, c_6
    let ; b_9: f64 = lscale t_13, c_7
    let ; s_10: f64 = ladd a_8, b_9
    yield ; s_10
  }
  return ; m_2
}
";
    let f = fixture_func(text);
    let g = pass(&f, dce::dce);
    let arrs = |g: &Func| match &g.body.stmts[0].expr {
        Expr::Map(m) => m.arrs.len(),
        _ => 0,
    };
    assert_eq!((arrs(&f), arrs(&g)), (3, 2));
    let ins: Inputs = vec![(
        vec![vec_f(&[0.5, -1.25, 3.0]), vec_f(&[2.0, 0.25, -1.0])],
        vec![vec_f(&[1.0, 2.0, -0.75])],
    )];
    verify(&f, &g, Mode::LinearB, &ins, 0.0);
    assert!(!dce::dce(&mut g.clone()));
}

/// A sum of a linear map of a vector to a scalar inlines the map's body on
/// the operands' sums; a sum through `lsum_to` and a scaling by a scalar
/// moves too; a map reading a non-linear array per element stays (its
/// factors differ from element to element).
#[test]
fn sums_inline_scalar_maps_and_leave_maps_of_non_linear_arrays() {
    let text = "def f(x_0: [f64], s_1: f64 ; dv_2: [f64] @ [shape(x_0, 0)], du_3: [f64] @ [shape(x_0, 0)], dm_4: [[f64]] @ [shape(x_0, 0), 2], dk_20: [f64] @ [shape(x_0, 0)]) -> (; f64, f64, [f64]) {
  let ; m_5: [f64] = map(; dv_2, du_3) |; c_6: f64, e_7: f64| {
    let ; d_8: f64 = lscale 2.5, c_6
    let ; g_9: f64 = ladd d_8, e_7
    yield ; g_9
  }
  let ; s_10: f64 = lsum m_5
  let ; k_11: [f64] = map(x_0 ; dk_20) |x_12: f64 ; c_13: f64| {
    let ; d_14: f64 = lscale x_12, c_13
    yield ; d_14
  }
  let ; t_15: f64 = lsum k_11
  let n_16: i64 = shape x_0, 0
  let ; q_17: [[f64]] = lsum_to dm_4, [n_16, 1]
  let ; r_18: [[f64]] = lscale s_1, q_17
  let ; u_19: [f64] = lsum r_18, axis=0
  return ; s_10, t_15, u_19
}
";
    let f = fixture_func(text);
    let g = sums_through(&f);
    // The first map is gone (inlined on the sums), the second stays.
    assert_eq!(count(&g, &|e| matches!(e, Expr::Map(_))), 1);
    assert_eq!(
        count(&g, &|e| matches!(e, Expr::Lin(LinOp::SumTo { .. }))),
        1
    );
    let ins: Inputs = vec![(
        vec![vec_f(&[0.5, -1.25, 3.0]), Value::F64(-0.75)],
        vec![
            vec_f(&[1.0, 2.0, -0.75]),
            vec_f(&[4.0, -2.0, 0.25]),
            mat_f(3, 2, &[0.5, 1.5, -2.0, 0.25, 3.0, -1.0]),
            vec_f(&[-1.0, 0.5, 2.25]),
        ],
    )];
    verify(&f, &g, Mode::LinearB, &ins, 1e-12);
}

/// Where the summed axis belongs to the non-linear factor, that factor is
/// reduced instead (`Σ_j (x·a)[i, j] = x · Σ_j a[:, j]`, and `Σ_i (a·x)[i, j] =
/// (Σ_i a[i, :]) · x`): one matrix-vector product each.
#[test]
fn sums_over_the_non_linear_factors_axis_reduce_it() {
    let text = "def f(a_0: [[f64]] ; dx_1: [[f64]] @ [2, 3], dy_2: [[f64]] @ [shape(a_0, 1), 2]) -> (; [f64], [f64]) {
  let ; m_3: [[f64]] = lmatmul dx_1, a_0 lin_left
  let ; s_4: [f64] = lsum m_3, axis=1
  let ; p_5: [[f64]] = lmatmul a_0, dy_2
  let ; t_6: [f64] = lsum p_5, axis=0
  return ; s_4, t_6
}
";
    let f = fixture_func(text);
    let g = sums_through(&f);
    assert_eq!(product_operand_ranks(&g), [2, 2]);
    let reduce = |e: &Expr| {
        matches!(
            e,
            Expr::Array(ArrayOp::Reduce {
                op: ReduceOp::Sum,
                ..
            })
        )
    };
    assert_eq!(count(&g, &reduce), 2);
    let a = mat_f(3, 3, &[0.5, -1.25, 3.0, 0.75, 2.0, -0.5, 1.0, 0.25, -2.0]);
    let dx = mat_f(2, 3, &[1.0, 2.0, -0.75, 0.25, 4.0, -1.0]);
    let dy = mat_f(3, 2, &[0.5, -0.5, 2.0, 1.0, -3.0, 0.125]);
    let ins: Inputs = vec![(vec![a], vec![dx, dy])];
    verify(&f, &g, Mode::LinearB, &ins, 1e-12);
}

/// Two scalings merged inside both branches of an `if` whose condition is a
/// literal (`lscale 2.0, lscale 0.9, d`, the dead branch then dropped by
/// `if_literal`) leave `d` with its other uses: `d` stays bound (before, the
/// dropped branch's bypassed statement was forgotten twice, `d` looked
/// single-use and a third merge deleted it while the outer `else` still
/// dropped it). Found by `random_programs` on a `jvp`.
#[test]
fn merged_scalings_in_a_dropped_branch_keep_their_operand() {
    let text = "
def f(c_0: bool, s_1: f64 ; dx_2: f64 @ (), dy_3: f64 @ ()) -> (; f64) {
  let ; d_4: f64 = lscale s_1, dx_2
  let lt_5: bool = lt 3, 2
  let ; r_6: f64 = if c_0 @ () {
    let ; q_7: f64 = if lt_5 @ () {
      let ; a_8: f64 = lscale 0.9, d_4
      let ; a_9: f64 = lscale 2.0, a_8
      drop a_9
      yield ; dy_3
    } else {
      let ; b_10: f64 = lscale 0.9, d_4
      let ; b_11: f64 = lscale 3.0, b_10
      drop b_11
      yield ; dy_3
    }
    yield ; q_7
  } else {
    drop d_4
    yield ; dy_3
  }
  return ; r_6
}
";
    let f = fixture_func(text);
    let g = pass(&f, |f| {
        simplify::rewrite(f, &Program::default(), &Options::default()).total() > 0
    });
    let ins: Inputs = vec![
        (
            vec![Value::Bool(true), Value::F64(1.5)],
            vec![Value::F64(-2.0), Value::F64(0.5)],
        ),
        (
            vec![Value::Bool(false), Value::F64(1.5)],
            vec![Value::F64(-2.0), Value::F64(0.5)],
        ),
    ];
    verify(&f, &g, Mode::LinearB, &ins, 0.0);
}

/// A loop's counter and a build's indices are never negative either: the
/// trip count of `for c in 0..r` inside `for r in 0..n` (`max(r, 0)`,
/// guarded by `r < 0`, as lowered) folds to `r`, and `j < 0` of a build
/// index to `false`; the same guard on an `i64` parameter stays.
#[test]
fn indices_are_non_negative() {
    let p = ad_core_ir::parse::parse_program(
        r#"
def f(x_0: [f64], m_1: i64) -> ([f64], i64) {
  let n_2: i64 = shape x_0, 0
  let lp_3: f64 = loop n_2 (s_4: f64 = 0.0) |r_5: i64| {
    let max_6: i64 = max r_5, 0
    let lt_7: bool = lt r_5, 0
    let sel_8: i64 = select lt_7, 9223372036854775807, max_6
    let lp_9: f64 = loop sel_8 (t_10: f64 = s_4) |c_11: i64| {
      let ix_12: f64 = index x_0[c_11]
      let add_13: f64 = add t_10, ix_12
      yield add_13
    }
    yield lp_9
  }
  let bld_14: [f64] = build [n_2] |j_15: i64| {
    let lt_16: bool = lt j_15, 0
    let sel_17: f64 = select lt_16, 1.0, lp_3
    yield sel_17
  }
  let lt_18: bool = lt m_1, 0
  let sel_19: i64 = select lt_18, 1, m_1
  return bld_14, sel_19
}
"#,
    )
    .unwrap();
    let f = p.func("f").unwrap().clone();
    let mut g = f.clone();
    ad_core_ir::simplify::simplify_func(&mut g, &p, &Default::default());
    let text = func_to_string(&g);
    assert!(
        !text.contains("max ") && !text.contains("9223372036854775807"),
        "{text}"
    );
    assert_eq!(text.matches("lt ").count(), 1, "{text}");
    let ins: Inputs = [(3usize, 5i64), (0, -7), (4, 0)]
        .iter()
        .map(|(len, m)| {
            let xs: Vec<f64> = (0..*len).map(|k| 0.25 + k as f64).collect();
            (vec![Value::f64s(&[*len], xs), Value::I64(*m)], vec![])
        })
        .collect();
    verify(&f, &g, Mode::LinearA, &ins, 0.0);
}

/// Linear broadcasts moved past the linear operations reading them
/// (`lin_broadcast`): a map's linear results computed from broadcast rows
/// (and from a non-linear broadcast with the same sizes) become maps over
/// the rows, a `dup` copies the row, products with a matrix of equal rows
/// (or columns) become vector products, and nested broadcasts compose. The
/// same values, including where a row of length 1 is stretched (NumPy
/// broadcasting) and where a non-linear result of the map stays.
#[test]
fn linear_broadcasts_move_to_their_sources() {
    let text = "def f(x_0: [[f64]], b_1: [f64], l_2: [[f64]], r_3: [[f64]], s_4: [f64] ; dw_5: [f64], dv_6: [f64], dz_7: [f64], dy_8: [f64]) -> ([[f64]] ; [[f64]], [[f64]], [[f64]], [[f64]], [f64]) {
  let n_9: i64 = shape x_0, 0
  let m_10: i64 = shape x_0, 1
  let bb_11: [[f64]] = broadcast b_1, [n_9, m_10], axes=[1]
  let ; d_12: [[f64]] = lbroadcast dw_5, [n_9, m_10], axes=[1]
  let ; e_13: [[f64]] = lbroadcast dv_6, [n_9, m_10], axes=[1]
  let c_14: [[f64]] ; dc_15: [[f64]], dq_16: [[f64]] = map(x_0, bb_11 ; d_12, e_13) |p_17: f64, q_18: f64 ; dx_19: f64, dy_20: f64| {
    let r_21: f64 = sub p_17, q_18
    let ; t_22: f64 = lneg dx_19
    let ; u_23: f64 = lscale q_18, dy_20
    yield r_21 ; t_22, u_23
  }
  let ; a_24: [[f64]], g_25: [[f64]] = dup dc_15
  let ; k_26: [[f64]] = lbroadcast a_24, [n_9, m_10], axes=[0, 1]
  let ; h_27: [[f64]] = lmatmul g_25, l_2 lin_left
  let ; cz_28: [[f64]] = lbroadcast dz_7, [m_10, n_9], axes=[0]
  let ; hz_29: [[f64]] = lmatmul r_3, cz_28
  let ; cy_30: [[f64]] = lbroadcast dy_8, [m_10, n_9], axes=[0]
  let ; hy_31: [f64] = lmatmul s_4, cy_30
  return c_14 ; k_26, h_27, dq_16, hz_29, hy_31
}
";
    let f = fixture_func(text);
    let rules = [
        Rule {
            name: "map_lbroadcast",
            apply: lin_broadcast::map_lbroadcast,
        },
        Rule {
            name: "dup_lbroadcast",
            apply: lin_broadcast::dup_lbroadcast,
        },
        Rule {
            name: "lbroadcast_lbroadcast",
            apply: lin_broadcast::lbroadcast_lbroadcast,
        },
        Rule {
            name: "lmatmul_lbroadcast",
            apply: lin_broadcast::lmatmul_lbroadcast,
        },
    ];
    let mut g = f.clone();
    let mut fired = Stats::default();
    loop {
        let st = apply_rules(&mut g, &prog_of(&f), &rules);
        if st.total() == 0 {
            break;
        }
        fired.merge(&st);
    }
    for r in &rules {
        assert!(
            fired.get(r.name) > 0,
            "{} never fired:\n{}",
            r.name,
            func_to_string(&g)
        );
    }
    assert_eq!(fired.get("map_lbroadcast"), 2);
    assert_eq!(fired.get("lmatmul_lbroadcast"), 3, "{}", func_to_string(&g));
    // Every product and every linear map now runs on vectors; the map
    // keeps its non-linear result.
    let linear_ranks = |g: &Func, pick: &dyn Fn(&Expr) -> Option<Var>| {
        fn go(b: &Block, g: &Func, pick: &dyn Fn(&Expr) -> Option<Var>, out: &mut Vec<usize>) {
            for s in &b.stmts {
                if let Some(v) = pick(&s.expr) {
                    out.push(g.vars.ty(v).rank().unwrap_or(0));
                }
                for nb in blocks(&s.expr) {
                    go(nb, g, pick, out);
                }
            }
        }
        let mut out = vec![];
        go(&g.body, g, pick, &mut out);
        out
    };
    let lmatmul_operand = |e: &Expr| match e {
        Expr::Lin(LinOp::MatMul { x, .. }) => Some(*x),
        _ => None,
    };
    let map_operand = |e: &Expr| match e {
        Expr::Map(m) => m.lin_arrs.first().copied(),
        _ => None,
    };
    assert_eq!(linear_ranks(&g, &lmatmul_operand), vec![1, 1, 1]);
    assert_eq!(linear_ranks(&g, &map_operand), vec![1, 1]);
    assert_eq!(
        count(&g, &|e| matches!(e, Expr::Map(m) if m.lin_arrs.is_empty())),
        1
    );
    let ins = |m: usize, b: &[f64], dw: &[f64], dz: &[f64]| -> (Vec<Value>, Vec<Value>) {
        let xs: Vec<f64> = (0..3 * m).map(|k| 0.5 * k as f64 - 1.0).collect();
        let ls: Vec<f64> = (0..m * 4).map(|k| 0.25 * k as f64 - 0.75).collect();
        let rs: Vec<f64> = (0..2 * m).map(|k| 1.5 - 0.5 * k as f64).collect();
        let ss: Vec<f64> = (0..m).map(|k| 0.125 * k as f64 + 1.0).collect();
        let dv: Vec<f64> = (0..m).map(|k| 2.0 - k as f64).collect();
        let dy: Vec<f64> = (0..m).map(|k| 0.75 * k as f64 - 0.5).collect();
        (
            vec![
                mat_f(3, m, &xs),
                vec_f(b),
                mat_f(m, 4, &ls),
                mat_f(2, m, &rs),
                vec_f(&ss),
            ],
            vec![vec_f(dw), vec_f(&dv), vec_f(dz), vec_f(&dy)],
        )
    };
    let inputs: Inputs = vec![
        ins(2, &[0.5, -2.0], &[1.0, -3.0], &[0.25, 4.0]),
        // Rows of length 1 stretched (NumPy broadcasting).
        ins(2, &[0.5], &[1.5], &[-2.0]),
        ins(3, &[0.5, 1.0, -1.0], &[-0.5], &[1.0, 2.0, 3.0]),
        // No columns.
        ins(0, &[], &[], &[]),
    ];
    verify(&f, &g, Mode::LinearA, &inputs, 0.0);
}

/// A map reading both copies of one `dup`, each through a broadcast with
/// the same spread (in either order), reads one broadcast and duplicates
/// each element (`lin_broadcast::map_dup_halves`); the copies of a whole
/// array read directly are left alone.
#[test]
fn map_of_both_dup_halves_reads_once() {
    let text = "def g(x_0: [[f64]] ; dw_1: [f64], dv_2: [[f64]], dw_35: [f64]) -> (; [[f64]], [[f64]], [[f64]]) {
  let n_3: i64 = shape x_0, 0
  let m_4: i64 = shape x_0, 1
  let ; w_5: [f64], w_6: [f64] = dup dw_1
  let ; a_7: [[f64]] = lbroadcast w_5, [n_3, m_4], axes=[1]
  let ; b_8: [[f64]] = lbroadcast w_6, [n_3, m_4], axes=[1]
  let ; c_9: [[f64]] = map(x_0 ; a_7, b_8) |p_10: f64 ; e_11: f64, f_12: f64| {
    let ; s_13: f64 = lscale p_10, e_11
    let ; t_14: f64 = ladd s_13, f_12
    yield ; t_14
  }
  let ; u_15: [[f64]], v_16: [[f64]] = dup dv_2
  let ; c_17: [[f64]] = map(x_0 ; v_16, u_15) |p_18: f64 ; g_19: f64, h_20: f64| {
    let ; k_21: f64 = lscale p_18, h_20
    let ; l_22: f64 = lneg g_19
    let ; o_23: f64 = ladd k_21, l_22
    yield ; o_23
  }
  let ; w_24: [f64], w_25: [f64] = dup dw_35
  let ; a_26: [[f64]] = lbroadcast w_25, [n_3, m_4], axes=[1]
  let ; b_27: [[f64]] = lbroadcast w_24, [n_3, m_4], axes=[1]
  let ; c_28: [[f64]] = map(x_0 ; a_26, b_27) |p_29: f64 ; g_30: f64, h_31: f64| {
    let ; k_32: f64 = lscale p_29, h_31
    let ; l_33: f64 = lneg g_30
    let ; o_34: f64 = ladd k_32, l_33
    yield ; o_34
  }
  return ; c_9, c_17, c_28
}
";
    let f = fixture_func(text);
    let g = apply(&f, "map_dup_halves", lin_broadcast::map_dup_halves);
    assert_eq!(
        count(&g, &|e| matches!(e, Expr::Map(m) if m.lin_arrs.len() == 1)),
        2,
        "{}",
        func_to_string(&g)
    );
    let xs: Vec<f64> = (0..6).map(|k| 0.5 * k as f64 - 1.25).collect();
    let vs: Vec<f64> = (0..6).map(|k| 2.0 - 0.75 * k as f64).collect();
    let inputs: Inputs = vec![
        (
            vec![mat_f(2, 3, &xs)],
            vec![
                vec_f(&[1.0, -2.0, 0.5]),
                mat_f(2, 3, &vs),
                vec_f(&[0.25, 3.0, -1.0]),
            ],
        ),
        (
            vec![mat_f(3, 2, &xs)],
            vec![vec_f(&[4.0]), mat_f(3, 2, &vs), vec_f(&[-0.5, 2.0])],
        ),
    ];
    verify(&f, &g, Mode::LinearB, &inputs, 0.0);
}
