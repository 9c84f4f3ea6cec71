//! Tests of the printer (`pretty`) and of its parser (`parse`): every construct
//! prints, parses back to an equal function, and the parser rejects garbage
//! without panicking.

mod fixtures;

use ad_core_ir::build::FuncBuilder;
use ad_core_ir::ir::*;
use ad_core_ir::parse::{parse_func, parse_program, ParseError};
use ad_core_ir::pretty::{
    f64_to_string, func_to_string, func_to_string_exact, program_to_string,
    program_to_string_exact, stmt_to_string,
};
use ad_core_ir::types::{Scalar, Ty};
use proptest::prelude::*;

// ---------------------------------------------------------------------------
// Helpers

fn v(x: Var) -> Atom {
    Atom::Var(x)
}

fn f64s(rank: usize) -> Ty {
    Ty::f64s(rank)
}

fn i64s() -> Ty {
    Ty::array(Scalar::I64, 1)
}

/// Prints `f`, parses it back, and checks equality (plain and exact printers)
/// and that printing is a fixed point.
#[track_caller]
fn roundtrip(f: &Func, prog: &Program) -> String {
    let s = func_to_string(f);
    let g = parse_func(&s, prog).unwrap_or_else(|e| panic!("parse error {e}\n{s}"));
    assert_eq!(&g, f, "round trip changed the function:\n{s}");
    assert_eq!(func_to_string(&g), s);
    let exact = func_to_string_exact(f);
    let g = parse_func(&exact, prog).unwrap_or_else(|e| panic!("parse error {e}\n{exact}"));
    assert_eq!(&g, f, "exact round trip changed the function:\n{exact}");
    s
}

#[track_caller]
fn assert_contains(s: &str, parts: &[&str]) {
    for p in parts {
        assert!(s.contains(p), "missing `{p}` in:\n{s}");
    }
}

/// Operands of the right types for each primitive.
fn prim_args(p: Prim, x: Var, y: Var, n: Var, m: Var, c: Var) -> Vec<Atom> {
    match p {
        Prim::Rem => vec![v(n), Atom::I64(3)],
        Prim::Powi => vec![v(x), v(n)],
        Prim::Eq | Prim::Ne => vec![v(n), v(m)],
        Prim::And | Prim::Or => vec![v(c), Atom::Bool(false)],
        Prim::Not => vec![v(c)],
        Prim::ToF64 => vec![v(n)],
        Prim::Select => vec![v(c), v(x), Atom::F64(-2.5e-3)],
        Prim::MulAdd | Prim::Clamp => vec![v(x), v(y), Atom::F64(2.0)],
        Prim::IntArith(..)
        | Prim::ULt
        | Prim::ULe
        | Prim::UGt
        | Prim::UGe
        | Prim::UMax
        | Prim::UMin => vec![v(n), v(m)],
        Prim::IntCast(_) | Prim::U64ToF64 => vec![v(n)],
        p if p.arity() == 1 => vec![v(x)],
        _ => vec![v(x), v(y)],
    }
}

// ---------------------------------------------------------------------------
// Hand-built functions covering every construct

/// Every scalar primitive, plus `i64` arithmetic and literal operands.
fn prims_fn(prog: &Program) -> Func {
    let mut b = FuncBuilder::new(prog, "prims");
    let x = b.param("x", Ty::F64);
    let y = b.param("y", Ty::F64);
    let n = b.param("n", Ty::I64);
    let m = b.param("m", Ty::I64);
    let c = b.param("c", Ty::BOOL);
    let mut last = x;
    for p in Prim::ALL {
        last = b.prim(p, &prim_args(p, x, y, n, m, c));
    }
    let k = b.prim(Prim::Add, &[v(n), Atom::I64(-7)]);
    let k2 = b.prim(Prim::Mul, &[v(k), Atom::I64(i64::MIN)]);
    let z = b.prim(Prim::Mul, &[v(x), Atom::F64(1.0)]);
    let copy = b.emit1(Expr::Atom(Atom::F64(0.5)));
    b.finish(
        vec![v(last), v(k2), v(z), v(copy), Atom::Bool(true)],
        vec![],
    )
}

/// Every non-linear array operation, tuples and copies.
fn arrays_fn(prog: &Program) -> Func {
    let mut b = FuncBuilder::new(prog, "arrays");
    let w = b.param("w", f64s(1));
    let mat = b.param("mat", f64s(2));
    let idx = b.param("idx", i64s());
    let n = b.param("n", Ty::I64);
    let x = b.param("x", Ty::F64);
    let e = b.index(v(w), &[v(n)]);
    let row = b.index(v(mat), &[v(n)]);
    let e2 = b.index(v(mat), &[v(n), Atom::I64(0)]);
    let u = b.array(ArrayOp::Update {
        arr: v(w),
        idx: vec![v(n)],
        val: Atom::F64(1.0),
        add: false,
    });
    let u2 = b.array(ArrayOp::Update {
        arr: v(mat),
        idx: vec![Atom::I64(1)],
        val: v(row),
        add: true,
    });
    let g = b.array(ArrayOp::Gather {
        arr: v(w),
        idx: v(idx),
    });
    let sc = b.array(ArrayOp::ScatterAdd {
        len: v(n),
        idx: v(idx),
        vals: v(g),
    });
    let mut reds = vec![];
    for op in [ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Max, ReduceOp::Min] {
        reds.push(b.array(ArrayOp::Reduce {
            op,
            arr: v(w),
            axis: None,
        }));
        reds.push(b.array(ArrayOp::Reduce {
            op,
            arr: v(mat),
            axis: Some(1),
        }));
    }
    let (am, _) = b.emit(Expr::Array(ArrayOp::ArgReduce {
        op: ReduceOp::Max,
        arr: v(mat),
        axis: None,
    }));
    assert_eq!(am.len(), 2);
    let amin = b.array(ArrayOp::ArgReduce {
        op: ReduceOp::Min,
        arr: v(mat),
        axis: Some(0),
    });
    let s1 = b.array(ArrayOp::Scan {
        arr: v(w),
        reverse: false,
    });
    let s2 = b.array(ArrayOp::Scan {
        arr: v(mat),
        reverse: true,
    });
    let mv = b.array(ArrayOp::MatMul { a: v(mat), b: v(w) });
    let dot = b.array(ArrayOp::MatMul { a: v(w), b: v(s1) });
    let t = b.array(ArrayOp::Transpose { arr: v(mat) });
    let fill = b.array(ArrayOp::Broadcast {
        arr: v(x),
        shape: vec![v(n), Atom::I64(3)],
        axes: vec![],
    });
    let bw = b.array(ArrayOp::Broadcast {
        arr: v(w),
        shape: vec![v(n), v(n)],
        axes: vec![1],
    });
    let sh = b.shape(v(mat), 1);
    let tup = b.emit1(Expr::Tuple(vec![v(e), v(sh), Atom::Bool(true)]));
    let (parts, _) = b.emit(Expr::Untuple(v(tup)));
    let empty = b.emit1(Expr::Tuple(vec![]));
    let one = b.emit1(Expr::Tuple(vec![v(x)]));
    let cp = b.emit1(Expr::Atom(v(e2)));
    let mut res: Vec<Atom> = vec![v(u), v(u2), v(sc), v(amin), v(s2), v(mv), v(dot), v(t)];
    res.extend([v(fill), v(bw), v(empty), v(one), v(cp)]);
    res.extend(reds.into_iter().map(v));
    res.extend(am.into_iter().map(v));
    res.extend(parts.into_iter().map(v));
    b.finish(res, vec![])
}

/// Every linear operation, on linear parameters with shapes.
fn linear_fn(prog: &Program) -> Func {
    let mut b = FuncBuilder::new(prog, "linear");
    let x = b.param("x", Ty::F64);
    let w = b.param("w", f64s(1));
    let mat = b.param("mat", f64s(2));
    let idx = b.param("idx", i64s());
    let n = b.param("n", Ty::I64);
    let dx = b.lin_param("dx", Ty::F64, ShapeTree::Scalar);
    let dw = b.lin_param("dw", f64s(1), ShapeTree::Array(vec![Dim::Of(w, 0)]));
    let dm = b.lin_param(
        "dm",
        f64s(2),
        ShapeTree::Array(vec![Dim::Atom(v(n)), Dim::Of(mat, 1)]),
    );
    let z0 = b.lin(LinOp::Zero(ShapeTree::Scalar));
    let z1 = b.lin(LinOp::Zero(ShapeTree::Array(vec![
        Dim::Atom(Atom::I64(3)),
        Dim::Of(mat, 0),
    ])));
    let zt = b.lin(LinOp::Zero(ShapeTree::Tuple(vec![
        ShapeTree::Scalar,
        ShapeTree::Tuple(vec![ShapeTree::Array(vec![Dim::Atom(v(n))])]),
        ShapeTree::Tuple(vec![]),
    ])));
    let a = b.lin(LinOp::Add(dx, z0));
    let ng = b.lin(LinOp::Neg(a));
    let sc = b.lin(LinOp::Scale { s: v(x), x: ng });
    let scw = b.lin(LinOp::Scale { s: v(w), x: sc });
    let (dd, _) = (b.emit(Expr::Lin(LinOp::Dup(dw))).1, ());
    assert_eq!(dd.len(), 2);
    b.emit(Expr::Lin(LinOp::Drop(dd[0])));
    let tp = b.lin(LinOp::Tuple(vec![scw, dd[1]]));
    let (un, _) = (b.emit(Expr::Lin(LinOp::Untuple(tp))).1, ());
    let li = b.lin(LinOp::Index {
        x: dm,
        idx: vec![v(n)],
    });
    let lu = b.lin(LinOp::Update {
        x: un[0],
        idx: vec![Atom::I64(0)],
        val: dx,
        add: true,
    });
    let lu2 = b.lin(LinOp::Update {
        x: lu,
        idx: vec![v(n)],
        val: dx,
        add: false,
    });
    let lg = b.lin(LinOp::Gather {
        x: lu2,
        idx: v(idx),
    });
    let ls = b.lin(LinOp::ScatterAdd {
        len: v(n),
        idx: v(idx),
        x: lg,
    });
    let sum_all = b.lin(LinOp::Sum { x: ls, axis: None });
    let sum_ax = b.lin(LinOp::Sum {
        x: dm,
        axis: Some(0),
    });
    let lb = b.lin(LinOp::Broadcast {
        x: sum_ax,
        shape: vec![v(n), v(n)],
        axes: vec![0],
    });
    let lb0 = b.lin(LinOp::Broadcast {
        x: sum_all,
        shape: vec![v(n)],
        axes: vec![],
    });
    let lt = b.lin(LinOp::Transpose(lb));
    let mm1 = b.lin(LinOp::MatMul {
        a: v(mat),
        x: li,
        lin_left: false,
    });
    let mm2 = b.lin(LinOp::MatMul {
        a: v(mat),
        x: mm1,
        lin_left: true,
    });
    let o1 = b.lin(LinOp::Outer {
        x: mm2,
        b: v(w),
        lin_left: true,
    });
    let o2 = b.lin(LinOp::Outer {
        x: lb0,
        b: v(w),
        lin_left: false,
    });
    let sc1 = b.lin(LinOp::Scan {
        x: un[1],
        reverse: false,
    });
    let sc2 = b.lin(LinOp::Scan {
        x: sc1,
        reverse: true,
    });
    let lt0 = b.lin(LinOp::Tuple(vec![]));
    b.finish(vec![v(x)], vec![z1, zt, lt, o1, o2, sc2, lt0])
}

/// `g(x, w ; dx) = (x * x ; x * dx)`.
fn callee() -> Func {
    let prog = Program::default();
    let mut b = FuncBuilder::new(&prog, "g");
    let x = b.param("x", Ty::F64);
    let w = b.param("w", f64s(1));
    let dx = b.lin_param("dx", Ty::F64, ShapeTree::Scalar);
    let sq = b.prim(Prim::Mul, &[v(x), v(x)]);
    let d = b.lin(LinOp::Scale { s: v(x), x: dx });
    let _ = w;
    b.finish(vec![v(sq)], vec![d])
}

/// Call, If, Loop (forward and reversed, linear state, stacked outputs),
/// Build, Map (with linear arrays), Fold, source ids.
fn control_fn(prog: &Program) -> Func {
    let mut b = FuncBuilder::new(prog, "control");
    let x = b.param("x", Ty::F64);
    let w = b.param("w", f64s(1));
    let n = b.param("n", Ty::I64);
    let dx = b.lin_param("dx", Ty::F64, ShapeTree::Scalar);
    let dw = b.lin_param("dw", f64s(1), ShapeTree::Array(vec![Dim::Of(w, 0)]));
    b.set_src(Some(SrcId(12)));
    let (r, lr) = b.emit(Expr::Call(Call {
        func: "h".into(),
        args: vec![v(x)],
        lin_args: vec![dx],
        lin_shapes: vec![ShapeTree::Scalar, ShapeTree::Array(vec![Dim::Of(w, 0)])],
    }));
    b.set_src(None);
    let c = b.prim(Prim::Lt, &[v(x), Atom::F64(0.0)]);
    let then_ = b.block(|b| {
        let y = b.prim(Prim::Neg, &[v(r[0])]);
        let d = b.lin(LinOp::Neg(lr[0]));
        (vec![v(y)], vec![d])
    });
    let else_ = b.block(|_| (vec![v(r[0])], vec![lr[0]]));
    b.set_src(Some(SrcId(3)));
    let (ir, ilr) = b.emit(Expr::If(If {
        cond: v(c),
        then_,
        else_,
        lin_shapes: vec![ShapeTree::Scalar],
    }));
    b.set_src(None);
    let empty_if = b.if_(Atom::Bool(true), |_| vec![], |_| vec![]);
    assert!(empty_if.is_empty());
    // A loop with non-linear and linear state and stacked outputs of both kinds.
    let body = b.lambda(&[Ty::I64, Ty::F64], &[Ty::F64], |b, ps, lps| {
        let e = b.index(v(w), &[v(ps[0])]);
        let acc = b.prim(Prim::Mul, &[v(ps[1]), v(e)]);
        let (d2, _) = (b.emit(Expr::Lin(LinOp::Dup(lps[0]))).1, ());
        let d = b.lin(LinOp::Scale { s: v(e), x: d2[0] });
        (vec![v(acc), v(e)], vec![d, d2[1]])
    });
    let (lo, llo) = b.emit(Expr::Loop(Loop {
        n: v(n),
        rev: false,
        init: vec![Atom::F64(1.0)],
        lin_init: vec![ilr[0]],
        body,
    }));
    let (st, ys) = b.loop_(v(n), true, &[v(ir[0]), Atom::I64(0)], |b, i, s| {
        let k = b.prim(Prim::Add, &[v(s[1]), v(i)]);
        (vec![v(s[0]), v(k)], vec![v(i)])
    });
    let (none, _) = b.loop_(Atom::I64(3), false, &[], |_, _, _| (vec![], vec![]));
    assert!(none.is_empty());
    let sh = b.shape(v(w), 0);
    let built = b.build(&[v(sh), Atom::I64(2)], |b, ij| {
        let f = b.prim(Prim::ToF64, &[v(ij[1])]);
        let e = b.index(v(w), &[v(ij[0])]);
        let p = b.prim(Prim::Mul, &[v(f), v(e)]);
        vec![v(p), v(ij[0])]
    });
    // A map over a non-linear and a linear array.
    let body = b.lambda(&[Ty::F64], &[Ty::F64], |b, ps, lps| {
        let c = b.prim(Prim::Cos, &[v(ps[0])]);
        let s = b.prim(Prim::Sin, &[v(ps[0])]);
        let d = b.lin(LinOp::Scale { s: v(c), x: lps[0] });
        (vec![v(s)], vec![d])
    });
    let (mr, mlr) = b.emit(Expr::Map(Map {
        arrs: vec![v(w)],
        lin_arrs: vec![dw],
        body,
    }));
    let mapped = b.map(&[v(w), v(mr[0])], |b, xs| {
        vec![v(b.prim(Prim::Add, &[v(xs[0]), v(xs[1])]))]
    });
    let folded = b.fold(&[Atom::F64(0.0), Atom::I64(0)], v(w), |b, acc, x| {
        let a = b.prim(Prim::Add, &[v(acc[0]), v(x)]);
        let k = b.prim(Prim::Add, &[v(acc[1]), Atom::I64(1)]);
        vec![v(a), v(k)]
    });
    let plain = b.call("g2", &[v(x)]);
    let mut res: Vec<Atom> = vec![v(lo[0]), v(lo[1])];
    res.extend(
        st.iter()
            .chain(&ys)
            .chain(&built)
            .chain(&mapped)
            .chain(&folded)
            .map(|x| v(*x)),
    );
    res.extend(plain.iter().map(|x| v(*x)));
    b.finish(res, vec![llo[0], llo[1], mlr[0], lr[1]])
}

/// The program `control_fn` calls into.
fn control_prog() -> Program {
    let mut prog = Program::default();
    let mut b = FuncBuilder::new(&prog, "h");
    let x = b.param("x", Ty::F64);
    let dx = b.lin_param("dx", Ty::F64, ShapeTree::Scalar);
    let sq = b.prim(Prim::Mul, &[v(x), v(x)]);
    let d = b.lin(LinOp::Scale { s: v(x), x: dx });
    let z = b.lin(LinOp::Zero(ShapeTree::Array(vec![Dim::Atom(Atom::I64(4))])));
    let h = b.finish(vec![v(sq)], vec![d, z]);
    prog.insert(h);
    let mut b = FuncBuilder::new(&prog, "g2");
    let x = b.param("x", Ty::F64);
    let e = b.prim(Prim::Exp, &[v(x)]);
    let g2 = b.finish(vec![v(e), v(x)], vec![]);
    prog.insert(g2);
    prog
}

/// `x^n` by a loop (snapshot).
fn pow_fn(prog: &Program) -> Func {
    let mut b = FuncBuilder::new(prog, "pow");
    let x = b.param("x", Ty::F64);
    let n = b.param("n", Ty::I64);
    let (st, _) = b.loop_(v(n), false, &[Atom::F64(1.0)], |b, _i, s| {
        let p = b.prim(Prim::Mul, &[v(s[0]), v(x)]);
        (vec![v(p)], vec![])
    });
    b.finish(vec![v(st[0])], vec![])
}

/// `dot(a, b) = sum(build(|i| a[i] * b[i]))` (snapshot).
fn dot_fn(prog: &Program) -> Func {
    let mut b = FuncBuilder::new(prog, "dot");
    let a = b.param("a", f64s(1));
    let c = b.param("b", f64s(1));
    let n = b.shape(v(a), 0);
    let prods = b.build(&[v(n)], |b, i| {
        let x = b.index(v(a), &[v(i[0])]);
        let y = b.index(v(c), &[v(i[0])]);
        vec![v(b.prim(Prim::Mul, &[v(x), v(y)]))]
    });
    let s = b.array(ArrayOp::Reduce {
        op: ReduceOp::Sum,
        arr: v(prods[0]),
        axis: None,
    });
    b.finish(vec![v(s)], vec![])
}

/// A hand-written linear function in the spirit of JVP output (snapshot).
fn sin_jvp_fn(prog: &Program) -> Func {
    let mut b = FuncBuilder::new(prog, "sin_jvp");
    let x = b.param("x", Ty::F64);
    let dx = b.lin_param("dx", Ty::F64, ShapeTree::Scalar);
    b.set_src(Some(SrcId(1)));
    let s = b.prim(Prim::Sin, &[v(x)]);
    let c = b.prim(Prim::Cos, &[v(x)]);
    let d = b.lin(LinOp::Scale { s: v(c), x: dx });
    b.finish(vec![v(s)], vec![d])
}

/// Every hand-built function with the program it needs.
fn all_fns() -> Vec<(Func, Program)> {
    let empty = Program::default();
    let cp = control_prog();
    vec![
        (prims_fn(&empty), empty.clone()),
        (arrays_fn(&empty), empty.clone()),
        (linear_fn(&empty), empty.clone()),
        (control_fn(&cp), cp.clone()),
        (pow_fn(&empty), empty.clone()),
        (dot_fn(&empty), empty.clone()),
        (sin_jvp_fn(&empty), empty.clone()),
        (callee(), empty.clone()),
        (odd_names_fn(), empty.clone()),
        (nested_fn(), empty.clone()),
        (literals_fn(), empty.clone()),
        (malformed_lambdas_fn(), empty),
    ]
}

/// Blocks nested three deep: a loop containing an `if` containing a `build`.
fn nested_fn() -> Func {
    let prog = Program::default();
    let mut b = FuncBuilder::new(&prog, "nested");
    let x = b.param("x", Ty::F64);
    let n = b.param("n", Ty::I64);
    let (st, _) = b.loop_(v(n), false, &[v(x)], |b, i, s| {
        let c = b.prim(Prim::Gt, &[v(i), Atom::I64(2)]);
        let r = b.if_(
            v(c),
            |b| {
                let arr = b.build(&[v(i)], |b, j| {
                    let f = b.prim(Prim::ToF64, &[v(j[0])]);
                    vec![v(b.prim(Prim::Mul, &[v(f), v(s[0])]))]
                });
                vec![v(b.array(ArrayOp::Reduce {
                    op: ReduceOp::Sum,
                    arr: v(arr[0]),
                    axis: None,
                }))]
            },
            |_| vec![v(s[0])],
        );
        (vec![v(r[0])], vec![])
    });
    b.finish(vec![v(st[0])], vec![])
}

#[test]
fn nested_blocks_indent_two_spaces_per_level() {
    let s = roundtrip(&nested_fn(), &Program::default());
    assert_eq!(
        s,
        "def nested(x_0: f64, n_1: i64) -> (f64) {
  let lp_11: f64 = loop n_1 (s_3: f64 = x_0) |i_2: i64| {
    let gt_4: bool = gt i_2, 2
    let if_10: f64 = if gt_4 {
      let bld_8: [f64] = build [i_2] |i_5: i64| {
        let to_f64_6: f64 = to_f64 i_5
        let mul_7: f64 = mul to_f64_6, s_3
        yield mul_7
      }
      let red_9: f64 = reduce_sum bld_8
      yield red_9
    } else {
      yield s_3
    }
    yield if_10
  }
  return lp_11
}
"
    );
}

/// Unusual name hints and function names: quoted on printing.
fn odd_names_fn() -> Func {
    let prog = Program::default();
    let mut b = FuncBuilder::new(&prog, "f-jvp.1");
    let x = b.param("x", Ty::F64);
    let y = b.param("", Ty::F64);
    let z = b.param("x_1", Ty::F64);
    let q = b.param("5a", Ty::F64);
    let u = b.param("α \"quoted\"\n\\", Ty::F64);
    let dx = b.lin_param("d x", Ty::F64, ShapeTree::Scalar);
    let s = b.prim(Prim::Add, &[v(x), v(y)]);
    let s = b.prim(Prim::Add, &[v(s), v(z)]);
    let s = b.prim(Prim::Add, &[v(s), v(q)]);
    let s = b.prim(Prim::Add, &[v(s), v(u)]);
    b.finish(vec![v(s)], vec![dx])
}

/// Float and integer literals that are easy to get wrong.
fn literals_fn() -> Func {
    let prog = Program::default();
    let mut b = FuncBuilder::new(&prog, "lits");
    let mut res = vec![];
    let weird_nan = f64::from_bits(0x7ff8_0000_0000_0001);
    for x in [
        0.0,
        -0.0,
        1.0,
        -2.5e-3,
        1e-7,
        1e16,
        1e300,
        f64::MAX,
        f64::MIN_POSITIVE,
        5e-324,
        0.1 + 0.2,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        -f64::NAN,
        weird_nan,
    ] {
        res.push(v(b.emit1(Expr::Atom(Atom::F64(x)))));
    }
    for k in [0, -1, i64::MIN, i64::MAX] {
        res.push(v(b.emit1(Expr::Atom(Atom::I64(k)))));
    }
    res.push(Atom::F64(-0.0));
    res.push(Atom::Bool(false));
    b.finish(res, vec![])
}

/// Loops and folds whose lambdas do not line up with their initial values (ill
/// typed, but the printer must still print them and the parser read them back),
/// a build with linear lambda parameters, and missing `lin_param_shapes`.
fn malformed_lambdas_fn() -> Func {
    let prog = Program::default();
    let mut b = FuncBuilder::new(&prog, "bad");
    let x = b.param("x", Ty::F64);
    let w = b.param("w", f64s(1));
    let dx = b.fresh_lin("dx", Ty::F64);
    b.add_lin_param(dx, ShapeTree::Tuple(vec![ShapeTree::Scalar]));
    let dy = b.fresh_lin("dy", Ty::F64);
    b.add_lin_param(dy, ShapeTree::Scalar);
    let dz = b.fresh_lin("dz", Ty::F64);
    let mut f = {
        let lam = b.lambda(&[Ty::F64], &[], |_, ps, _| (vec![v(ps[0])], vec![]));
        b.push(Stmt {
            binds: vec![],
            lin_binds: vec![],
            expr: Expr::Loop(Loop {
                n: Atom::I64(2),
                rev: true,
                init: vec![v(x)],
                lin_init: vec![dx],
                body: lam,
            }),
            src: Some(SrcId(7)),
        });
        let lam = b.lambda(&[Ty::I64, Ty::F64], &[], |_, ps, _| {
            (vec![v(ps[1])], vec![])
        });
        b.push(Stmt {
            binds: vec![],
            lin_binds: vec![],
            expr: Expr::Loop(Loop {
                n: Atom::I64(2),
                rev: false,
                init: vec![],
                lin_init: vec![],
                body: lam,
            }),
            src: None,
        });
        let lam = b.lambda(&[Ty::F64, Ty::F64, Ty::F64], &[Ty::F64], |_, ps, _| {
            (vec![v(ps[0])], vec![])
        });
        b.push(Stmt {
            binds: vec![],
            lin_binds: vec![],
            expr: Expr::Fold(Fold {
                init: vec![v(x)],
                arr: v(w),
                body: lam,
            }),
            src: None,
        });
        let lam = b.lambda(&[Ty::F64], &[Ty::F64], |_, _, lps| (vec![], vec![lps[0]]));
        b.push(Stmt {
            binds: vec![],
            lin_binds: vec![],
            expr: Expr::Fold(Fold {
                init: vec![],
                arr: v(w),
                body: lam,
            }),
            src: None,
        });
        let lam = b.lambda(&[Ty::I64], &[Ty::F64], |_, _, _| (vec![], vec![]));
        b.push(Stmt {
            binds: vec![],
            lin_binds: vec![],
            expr: Expr::Build(Build {
                shape: vec![Atom::I64(1)],
                body: lam,
            }),
            src: None,
        });
        b.finish(vec![], vec![dy])
    };
    // A linear parameter without a shape (only a prefix of them has shapes).
    f.lin_params.push(dz);
    f
}

// ---------------------------------------------------------------------------
// Printing: key substrings

#[test]
fn prims_print_by_name() {
    let f = prims_fn(&Program::default());
    let s = roundtrip(&f, &Program::default());
    for p in Prim::ALL {
        assert!(
            s.contains(&format!(" = {} ", p.name())),
            "{}:\n{s}",
            p.name()
        );
    }
    assert_contains(
        &s,
        &[
            "def prims(x_0: f64, y_1: f64, n_2: i64, m_3: i64, c_4: bool) -> (",
            "let add_5: f64 = add x_0, y_1\n",
            "select c_4, x_0, -0.0025",
            "rem n_2, 3",
            "and c_4, false",
            "mul add_",
            ", -9223372036854775808",
            "= 0.5\n",
            "true\n}",
        ],
    );
}

#[test]
fn arrays_print() {
    let f = arrays_fn(&Program::default());
    let s = roundtrip(&f, &Program::default());
    assert_contains(
        &s,
        &[
            "let ix_5: f64 = index w_0[n_3]\n",
            ": [f64] = index mat_1[n_3]\n",
            "index mat_1[n_3, 0]",
            "update w_0[n_3] = 1.0",
            "update mat_1[1] += ix_6",
            "gather w_0, idx_2",
            "scatter_add n_3, idx_2, gat_",
            "reduce_sum w_0\n",
            "reduce_prod mat_1, axis=1",
            "reduce_max w_0",
            "reduce_min mat_1, axis=1",
            ": i64, arg_",
            "= argmax mat_1\n",
            ": [i64] = argmin mat_1, axis=0",
            "scan w_0\n",
            "scan mat_1 rev",
            "matmul mat_1, w_0",
            ": [[f64]] = transpose mat_1",
            "broadcast x_4, [n_3, 3]\n",
            "broadcast w_0, [n_3, n_3], axes=[1]",
            "let n_",
            ": i64 = shape mat_1, 1",
            ": (f64, i64, bool) = tuple ix_5, n_",
            ": () = tuple\n",
            ": (f64,) = tuple x_4\n",
            ": f64, el_",
            ": bool = untuple tup_",
        ],
    );
}

#[test]
fn linear_ops_print() {
    let f = linear_fn(&Program::default());
    let s = roundtrip(&f, &Program::default());
    assert_contains(
        &s,
        &[
            "def linear(x_0: f64, w_1: [f64], mat_2: [[f64]], idx_3: [i64], n_4: i64 ; \
             dx_5: f64 @ (), dw_6: [f64] @ [shape(w_1, 0)], dm_7: [[f64]] @ [n_4, shape(mat_2, 1)]) -> (f64 ; ",
            "let ; d_8: f64 = lzero ()\n",
            "lzero [3, shape(mat_2, 0)]",
            ": (f64, ([f64],), ()) = lzero ((), ([n_4],), (,))",
            "ladd dx_5, d_8",
            "lneg d_",
            "lscale x_0, d_",
            "lscale w_1, d_",
            "let ; d_15: [f64], d_16: [f64] = dup dw_6\n",
            "  drop d_15\n",
            "ltuple d_14, d_16",
            "luntuple d_",
            "lindex dm_7[n_4]",
            "lupdate d_18[0] += dx_5",
            "[n_4] = dx_5",
            "lgather d_",
            "lscatter_add n_4, idx_3, d_",
            "lsum d_",
            "lsum dm_7, axis=0",
            "lbroadcast d_",
            ", [n_4, n_4], axes=[0]",
            "ltranspose d_",
            "lmatmul mat_2, d_",
            ", mat_2 lin_left\n",
            ", w_1 lin_left\n",
            "louter w_1, d_",
            "lscan d_19\n",
            " rev\n",
            ": () = ltuple\n",
            "return x_0 ; d_",
        ],
    );
}

#[test]
fn control_prints() {
    let prog = control_prog();
    let f = control_fn(&prog);
    let s = roundtrip(&f, &prog);
    assert_contains(
        &s,
        &[
            "def control(x_0: f64, w_1: [f64], n_2: i64 ; dx_3: f64 @ (), dw_4: [f64] @ [shape(w_1, 0)])",
            "let call_5: f64 ; call_6: f64, call_7: [f64] = call h(x_0 ; dx_3) @ (), [shape(w_1, 0)]  #12\n",
            "lt x_0, 0.0\n",
            " = if lt_8 @ () {  #3\n",
            "    yield neg_9 ; d_10\n  } else {\n    yield call_5 ; call_6\n  }\n",
            "if true {\n    yield\n  } else {\n    yield\n  }\n",
            " = loop n_2 (p_",
            ": f64 = 1.0 ; dp_",
            ": f64 = if_12) |p_",
            ": i64| {\n",
            " = loop n_2 rev (s_",
            "  loop 3 |i_",
            " = build [n_",
            ", 2] |i_",
            ": i64, i_",
            " = map(w_1 ; dw_4) |p_",
            ": f64 ; dp_",
            " = map(w_1, map_",
            " = fold w_1 (acc_",
            ": f64 = 0.0, acc_",
            ": i64 = 0) |x_",
            "call g2(x_0)\n",
        ],
    );
}

#[test]
fn odd_names_are_quoted() {
    let f = odd_names_fn();
    let s = roundtrip(&f, &Program::default());
    assert_contains(
        &s,
        &[
            "def \"f-jvp.1\"(x_0: f64, _1: f64, x_1_2: f64, \"5a\"_3: f64, \"α \\\"quoted\\\"\\n\\\\\"_4: f64 ; \"d x\"_5: f64 @ ())",
        ],
    );
}

#[test]
fn literals_print_and_roundtrip() {
    let f = literals_fn();
    let s = roundtrip(&f, &Program::default());
    assert_contains(
        &s,
        &[
            "= 0.0\n",
            "= -0.0\n",
            "= 1.0\n",
            "= -0.0025\n",
            "= 1e-7\n",
            "= 1e16\n",
            "= 1e300\n",
            "= 1.7976931348623157e308\n",
            "= 5e-324\n",
            "= 0.30000000000000004\n",
            "= inf\n",
            "= -inf\n",
            "= NaN\n",
            "= -NaN\n",
            "= nan0x7ff8000000000001\n",
            "= -9223372036854775808\n",
            "= 9223372036854775807\n",
            "= -1\n",
            ", -0.0, false\n",
        ],
    );
    // Bitwise equality of literals (Atom's PartialEq compares bits).
    let g = parse_func(&s, &Program::default()).unwrap();
    assert_eq!(g, f);
}

#[test]
fn malformed_lambdas_use_positional_form() {
    let f = malformed_lambdas_fn();
    let s = roundtrip(&f, &Program::default());
    assert_contains(
        &s,
        &[
            "; dx_2: f64 @ ((),), dy_3: f64 @ (), dz_4: f64) -> (; f64) {",
            "loop 2 rev (x_0 ; dx_2) |p_5: f64| {  #7\n",
            "loop 2 |p_6: i64, p_7: f64| {\n",
            "fold w_1 (x_0) |p_8: f64, p_9: f64, p_10: f64 ; dp_11: f64| {\n",
            "fold w_1 |p_12: f64 ; dp_13: f64| {\n",
            "build [1] |p_14: i64 ; dp_15: f64| {\n",
        ],
    );
}

#[test]
fn stmt_to_string_shows_one_statement() {
    let f = sin_jvp_fn(&Program::default());
    assert_eq!(
        stmt_to_string(&f.body.stmts[2], &f.vars),
        "let ; d_4: f64 = lscale cos_3, dx_1  #1\n"
    );
    let f = pow_fn(&Program::default());
    assert_eq!(
        stmt_to_string(&f.body.stmts[0], &f.vars),
        "let lp_5: f64 = loop n_1 (s_3: f64 = 1.0) |i_2: i64| {\n  let mul_4: f64 = mul s_3, x_0\n  yield mul_4\n}\n"
    );
}

// ---------------------------------------------------------------------------
// Snapshots (what reviewers see)

#[test]
fn snapshot_pow_loop() {
    let f = pow_fn(&Program::default());
    roundtrip(&f, &Program::default());
    insta::assert_snapshot!(func_to_string(&f));
}

#[test]
fn snapshot_dot_build_reduce() {
    let f = dot_fn(&Program::default());
    roundtrip(&f, &Program::default());
    insta::assert_snapshot!(func_to_string(&f));
}

#[test]
fn snapshot_control() {
    let prog = control_prog();
    let f = control_fn(&prog);
    let mut p = prog.clone();
    p.insert(f);
    insta::assert_snapshot!(program_to_string(&p));
}

#[test]
fn snapshot_linear() {
    let f = linear_fn(&Program::default());
    insta::assert_snapshot!(func_to_string(&f));
}

// ---------------------------------------------------------------------------
// Round trips

#[test]
fn every_hand_built_function_roundtrips() {
    for (f, prog) in all_fns() {
        roundtrip(&f, &prog);
    }
}

#[test]
fn programs_roundtrip() {
    let mut p = control_prog();
    p.insert(control_fn(&control_prog()));
    p.insert(pow_fn(&Program::default()));
    p.insert(literals_fn());
    p.insert(odd_names_fn());
    let s = program_to_string(&p);
    assert!(s.contains("}\n\ndef "));
    assert_eq!(parse_program(&s).unwrap(), p);
    assert_eq!(parse_program(&program_to_string_exact(&p)).unwrap(), p);
    assert_eq!(parse_program("").unwrap(), Program::default());
    assert_eq!(
        parse_program("\n  // nothing\n\n").unwrap(),
        Program::default()
    );
}

#[test]
fn dead_table_entries_need_the_exact_printer() {
    let prog = Program::default();
    let mut b = FuncBuilder::new(&prog, "dead");
    let x = b.param("x", Ty::F64);
    let _dead = b.fresh("t", f64s(2));
    let _dead_lin = b.fresh_lin("dt", Ty::F64);
    let s = b.prim(Prim::Sin, &[v(x)]);
    let _trailing = b.fresh("u", Ty::I64);
    let f = b.finish(vec![v(s)], vec![]);
    let plain = func_to_string(&f);
    assert!(!plain.contains("unbound"), "{plain}");
    let g = parse_func(&plain, &prog).unwrap();
    assert_eq!(g.body, f.body);
    assert_eq!(g.vars.len(), 4, "trailing dead entries are not printed");
    assert_eq!(g.vars.vars[1].name, "", "holes are dummies");
    assert_eq!(g.vars.vars[1].ty, Ty::Tuple(vec![]));
    assert_ne!(g, f);
    let exact = func_to_string_exact(&f);
    assert!(
        exact.contains("  unbound t_1: [[f64]], u_4: i64 ; dt_2: f64\n"),
        "{exact}"
    );
    assert_eq!(parse_func(&exact, &prog).unwrap(), f);
}

#[test]
fn unbound_uses_are_declared() {
    // A use of a variable that nothing binds (ill-scoped IR) still prints its type.
    let prog = Program::default();
    let mut b = FuncBuilder::new(&prog, "free");
    let x = b.param("x", Ty::F64);
    let ghost = b.fresh("ghost", Ty::F64);
    let dghost = b.fresh_lin("dghost", Ty::F64);
    let s = b.prim(Prim::Add, &[v(x), v(ghost)]);
    let f = b.finish(vec![v(s)], vec![dghost]);
    let text = func_to_string(&f);
    assert!(
        text.contains("  unbound ghost_1: f64 ; dghost_2: f64\n"),
        "{text}"
    );
    roundtrip(&f, &prog);
}

/// The fixtures of `fixtures/` (programs the other tests parse instead of
/// building them) are well formed and in canonical form: printing the parsed
/// program gives the file back, comments aside, and the exact printer round
/// trips.
#[test]
fn fixtures_are_canonical_and_well_formed() {
    use ad_core_ir::check::{check_program, Mode};
    for (file, text) in fixtures::ALL {
        let p = fixtures::program(text);
        assert_eq!(p.funcs.len(), 1, "{file}: one function");
        assert_eq!(program_to_string(&p), fixtures::uncommented(text), "{file}");
        assert_eq!(
            parse_program(&program_to_string_exact(&p)).unwrap(),
            p,
            "{file}"
        );
        if let Err(es) = check_program(&p, Mode::LinearA) {
            panic!("{file}: {es:?}");
        }
    }
}

// ---------------------------------------------------------------------------
// Hand-written input

#[test]
fn parses_hand_written_text() {
    let text = "
// comments and blank lines are fine
def f(x_0: f64 ; dx_1: f64 @ ()) -> (f64 ; f64) {

  let s_2: f64 = sin x_0   // the primal
  let c_3: f64 = cos x_0
  let ; d_4: f64 = lscale c_3, dx_1  #5
  return s_2 ; d_4
}
";
    let f = parse_func(text, &Program::default()).unwrap();
    assert_eq!(f.name, "f");
    assert_eq!(f.vars.len(), 5);
    assert!(f.vars.is_linear(Var(4)));
    assert_eq!(f.body.stmts[2].src, Some(SrcId(5)));
    assert_eq!(
        f.body.stmts[2].expr,
        Expr::Lin(LinOp::Scale {
            s: Atom::Var(Var(3)),
            x: Var(1)
        })
    );
    assert_eq!(f.lin_param_shapes, vec![ShapeTree::Scalar]);
    // It prints back in canonical form.
    let printed = func_to_string(&f);
    assert_eq!(parse_func(&printed, &Program::default()).unwrap(), f);
}

#[test]
fn holes_in_numbering_get_dummies() {
    let text = "def f(x_3: f64) -> (f64) {\n  let y_7: f64 = neg x_3\n  return y_7\n}\n";
    let f = parse_func(text, &Program::default()).unwrap();
    assert_eq!(f.vars.len(), 8);
    assert_eq!(f.params, vec![Var(3)]);
    assert_eq!(f.vars.vars[0].ty, Ty::Tuple(vec![]));
    assert_eq!(f.vars.vars[7].name, "y");
    assert_eq!(func_to_string(&f), text);
}

// ---------------------------------------------------------------------------
// Errors

#[track_caller]
fn parse_err(text: &str) -> ParseError {
    match parse_program(text) {
        Ok(p) => panic!("parsed garbage {text:?} into {p:?}"),
        Err(e) => e,
    }
}

#[test]
fn errors_have_positions_and_messages() {
    let e =
        parse_err("def f(x_0: f64) -> (f64) {\n  let y_1: f64 = frobnicate x_0\n  return y_1\n}\n");
    assert_eq!((e.line, e.col), (2, 18));
    assert!(e.msg.contains("expected an expression"), "{e}");
    assert!(e.to_string().starts_with("2:18: "), "{e}");

    // An undeclared use is not an error: it gets a dummy entry named after it.
    let f = parse_func(
        "def f(x_0: f64) -> (f64) {\n  return y_1\n}\n",
        &Program::default(),
    )
    .unwrap();
    assert_eq!(f.vars.vars[1].name, "y");

    let e = parse_err("def f(x_0: f64) -> (f64) {\n  let y_0: i64 = neg x_0\n  return y_0\n}\n");
    assert!(e.msg.contains("declared twice"), "{e}");

    let e = parse_err("def f(x_0: f64) -> (f64) {\n  return z_0\n}\n");
    assert!(e.msg.contains("declared as `x`"), "{e}");

    let e =
        parse_err("def f(x_0: f64) -> (f64) {\n  let y_1: f64 = call nope(x_0)\n  return y_1\n}\n");
    assert!(e.msg.contains("unknown function `nope`"), "{e}");
    assert_eq!((e.line, e.col), (2, 23));

    let e = parse_err("def f() -> () {\n  let y_99999999999: f64 = 1.0\n  return\n}\n");
    assert!(e.msg.contains("larger than"), "{e}");

    let e =
        parse_err("def f() -> () {\n  let ; d_0: f64 = lmatmul 1.0, 2.0 lin_left\n  return\n}\n");
    assert!(e.msg.contains("linear variable"), "{e}");

    let e = parse_err("def f(; a_0: f64, b_1: f64 @ ()) -> () {\n  return\n}\n");
    assert!(e.msg.contains("first parameters"), "{e}");

    let deep = format!(
        "def f(x_0: {}f64{}) -> () {{\n  return\n}}\n",
        "[".repeat(500),
        "]".repeat(500)
    );
    assert!(parse_err(&deep).msg.contains("nesting"));
    let deep = format!(
        "def f(x_0: {}) -> () {{\n  return\n}}\n",
        "(".repeat(100_000)
    );
    assert!(parse_err(&deep).msg.contains("nesting"));
    let mut deep = "def f() -> () {\n".to_string();
    for _ in 0..300 {
        deep.push_str("if true {\n");
    }
    assert!(parse_err(&deep).msg.contains("nesting"));
}

#[test]
fn garbage_is_rejected() {
    let cases = [
        "x",
        "def",
        "def f",
        "def f(",
        "def f() -> () {",
        "def f() -> () {\n}",
        "def f() -> () {\n  return\n",
        "def f() -> () {\n  return 1.0 ; 2.0\n}\n",
        "def f() -> () {\n  yield\n}\n",
        "def f() -> () { return }",
        "def f(x: f64) -> () {\n  return\n}\n",
        "def f(x_0: f32) -> () {\n  return\n}\n",
        "def f(x_0: [(f64)]) -> () {\n  return\n}\n",
        "def f() -> () {\n  let x_0: f64 = 1.0.0\n  return\n}\n",
        "def f() -> () {\n  let x_0: f64 = 1x\n  return\n}\n",
        "def f() -> () {\n  let x_0: f64 = \"abc\n  return\n}\n",
        "def f() -> () {\n  let \"a\\q\"_0: f64 = 1.0\n  return\n}\n",
        "def f() -> () {\n  let x_0: i64 = 99999999999999999999\n  return\n}\n",
        "def f() -> () {\n  let x_0: f64 = 1.0 #\n  return\n}\n",
        "def f() -> () {\n  let x_0: f64 = 1.0 #99999999999\n  return\n}\n",
        "def f() -> () {\n  let x_0: f64 = 1.0 $\n  return\n}\n",
        "def f() -> () {\n  let x_0: f64 = - 1.0\n  return\n}\n",
        "def f() -> () {\n  let x_0: [f64] = lzero ((), [)\n  return\n}\n",
        "def f() -> () {\n  let x_0: f64 = reduce_avg 1.0\n  return\n}\n",
        "def f() -> () {\n  let x_0: f64 = if true {\n  yield 1.0\n}\n  return\n}\n",
        "def f() -> () {\n  loop 3 (a_0: f64 = 1.0 |i_1: i64| {\n    yield a_0\n  }\n  return\n}\n",
        "def f() -> () {\n  fold 3 (a_0: f64 = 1.0 ; b_1: f64 = c_2) |i_1: i64| {\n    yield a_0\n  }\n  return\n}\n",
        "def f() -> () {\n  return\n}\ngarbage",
        "def f() -> () {\n  return\n} def",
        "\u{0}",
        "def f() -> () {\n  let x_0: f64 = shape(y_1, 0)\n  return\n}\n",
        "def f() -> () {\n  let x_0: f64 = index 1.0[2\n  return\n}\n",
        "def f() -> () {\n  let x_0: f64 = update 1.0[2] * 3\n  return\n}\n",
        "def f() -> () {\n  let x_0: f64 = reduce_sum 1.0, axes=0\n  return\n}\n",
        "def f() -> () {\n  let x_0: f64 = shape 1.0, -1\n  return\n}\n",
        "def f() -> () {\n  let x_0: f64 = nan0xzz\n  return\n}\n",
        "def f() -> () {\n  let x_0: f64 = nan0x3ff0000000000000\n  return\n}\n",
    ];
    for c in cases {
        parse_err(c);
    }
    assert!(parse_func("", &Program::default()).is_err());
    let one = "def f() -> () {\n  return\n}\n";
    assert!(parse_func(one, &Program::default()).is_ok());
    assert!(parse_func(&format!("{one}{one}"), &Program::default()).is_err());
}

#[test]
fn truncations_and_mutations_never_panic() {
    let mut texts = vec![];
    for (f, _) in all_fns() {
        texts.push(func_to_string(&f));
        texts.push(func_to_string_exact(&f));
    }
    for t in &texts {
        let chars: Vec<char> = t.chars().collect();
        for k in 0..chars.len() {
            let prefix: String = chars[..k].iter().collect();
            let _ = parse_program(&prefix);
            // Drop one character.
            let mut cut = chars.clone();
            cut.remove(k);
            let _ = parse_program(&cut.iter().collect::<String>());
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn prop_f64_literals_roundtrip(bits in any::<u64>()) {
        let x = f64::from_bits(bits);
        let prog = Program::default();
        let mut b = FuncBuilder::new(&prog, "lit");
        let c = b.emit1(Expr::Atom(Atom::F64(x)));
        let f = b.finish(vec![v(c), Atom::F64(x)], vec![]);
        let s = func_to_string(&f);
        let lit = f64_to_string(x);
        prop_assert!(lit.contains(['.', 'e']) || lit.contains("inf") || lit.contains("NaN") || lit.contains("nan"));
        prop_assert_eq!(parse_func(&s, &prog).unwrap(), f);
    }

    #[test]
    fn prop_names_roundtrip(name in any::<String>(), fname in "[a-z_][a-z0-9_]{0,6}|\\PC{1,6}") {
        let prog = Program::default();
        let mut b = FuncBuilder::new(&prog, fname);
        let x = b.param(&name, Ty::F64);
        let d = b.lin_param(&name, Ty::F64, ShapeTree::Scalar);
        let f = b.finish(vec![v(x)], vec![d]);
        let s = func_to_string(&f);
        prop_assert_eq!(parse_func(&s, &prog).unwrap(), f);
    }

    #[test]
    fn prop_mutated_text_never_panics(
        which in 0usize..12,
        pos in any::<prop::sample::Index>(),
        ch in prop::sample::select(vec!['(', ')', '[', ']', '{', '}', ',', ';', ':', '=', '|', '@', '#', '\n', ' ', '"', '-', '0', 'x', '_', '.', 'e']),
        delete in any::<bool>(),
    ) {
        let (f, _) = all_fns().swap_remove(which);
        let mut chars: Vec<char> = func_to_string(&f).chars().collect();
        let k = pos.index(chars.len());
        if delete {
            chars[k] = ch;
        } else {
            chars.insert(k, ch);
        }
        let _ = parse_program(&chars.into_iter().collect::<String>());
    }
}

#[test]
fn deep_but_allowed_nesting_parses() {
    // Just under the nesting limit, on a test thread's default stack.
    let depth = ad_core_ir::parse::MAX_DEPTH - 1;
    let mut s = "def f(c_0: bool) -> () {\n".to_string();
    for k in 0..depth {
        s.push_str(&format!("{}if c_0 {{\n", "  ".repeat(k + 1)));
    }
    for k in (0..depth).rev() {
        let pad = "  ".repeat(k + 1);
        s.push_str(&format!(
            "{pad}  yield\n{pad}}} else {{\n{pad}  yield\n{pad}}}\n"
        ));
    }
    s.push_str("  return\n}\n");
    let f = parse_func(&s, &Program::default()).unwrap();
    assert_eq!(func_to_string(&f), s);
    let mut ty = "f64".to_string();
    for _ in 0..depth {
        ty = format!("({ty},)");
    }
    let s = format!("def f(x_0: {ty}) -> ({ty}) {{\n  return x_0\n}}\n");
    assert_eq!(
        func_to_string(&parse_func(&s, &Program::default()).unwrap()),
        s
    );
}

#[test]
fn module_doc_example_is_canonical() {
    let text = "\
def f(x_0: f64, w_1: [f64] ; dx_2: f64 @ (), dw_3: [f64] @ [shape(w_1, 0)]) -> (f64 ; f64) {
  let s_4: f64 = sin x_0
  let c_5: f64 = cos x_0
  let ; d_6: f64 = lscale c_5, dx_2  #3
  drop dw_3
  let n_7: i64 = shape w_1, 0
  let r_8: f64, ys_9: [f64] = loop n_7 rev (acc_10: f64 = 0.0) |i_11: i64| {
    let w_12: f64 = index w_1[i_11]
    let acc_13: f64 = add acc_10, w_12
    yield acc_13, w_12
  }
  return r_8 ; d_6
}
";
    let f = parse_func(text, &Program::default()).unwrap();
    assert_eq!(func_to_string(&f), text);
    assert_eq!(
        ad_core_ir::typing::func_sig(&f),
        (
            vec![Ty::F64, f64s(1)],
            vec![Ty::F64, f64s(1)],
            vec![Ty::F64],
            vec![Ty::F64]
        )
    );
}

#[test]
fn printing_ill_formed_ir_never_panics() {
    // Variables without table entries print as `%N` with type `?`.
    let mut f = pow_fn(&Program::default());
    f.params.push(Var(77));
    f.lin_params.push(Var(78));
    f.body.results.push(Atom::Var(Var(79)));
    f.body.stmts.push(Stmt {
        binds: vec![Var(80)],
        lin_binds: vec![],
        expr: Expr::Lin(LinOp::Zero(ShapeTree::Array(vec![Dim::Of(Var(81), 0)]))),
        src: None,
    });
    let s = func_to_string(&f);
    assert_contains(
        &s,
        &[
            "%77: ?",
            "%78: ?",
            "-> (f64, ?)",
            "let %80: ? = lzero [shape(%81, 0)]",
        ],
    );
    let _ = func_to_string_exact(&f);
    assert!(parse_func(&s, &Program::default()).is_err());
}

/// `ltake x[idx]` (zeroing) and `ltake x[idx] keep` print and parse back.
#[test]
fn ltake_prints_and_roundtrips() {
    let prog = Program::default();
    let mut b = FuncBuilder::new(&prog, "take");
    let m = b.param("m", f64s(2));
    let i = b.param("i", Ty::I64);
    let dm = b.lin_param(
        "dm",
        f64s(2),
        ShapeTree::Array(vec![Dim::Of(m, 0), Dim::Of(m, 1)]),
    );
    let (_, a) = b.emit(Expr::Lin(LinOp::Take {
        x: dm,
        idx: vec![v(i)],
        zero: true,
    }));
    let (_, c) = b.emit(Expr::Lin(LinOp::Take {
        x: a[1],
        idx: vec![v(i), Atom::I64(0)],
        zero: false,
    }));
    let f = b.finish(vec![], vec![a[0], c[0], c[1]]);
    let s = roundtrip(&f, &prog);
    assert_contains(
        &s,
        &[
            "let ; d_3: [f64], d_4: [[f64]] = ltake dm_2[i_1]\n",
            "let ; d_5: f64, d_6: [[f64]] = ltake d_4[i_1, 0] keep\n",
        ],
    );
}

#[test]
fn lsum_to_prints_and_roundtrips() {
    let prog = Program::default();
    let mut b = FuncBuilder::new(&prog, "sum_to");
    let m = b.param("m", f64s(2));
    let dm = b.lin_param(
        "dm",
        f64s(2),
        ShapeTree::Array(vec![Dim::Of(m, 0), Dim::Of(m, 1)]),
    );
    let n = b.shape(v(m), 0);
    let d = b.lin(LinOp::SumTo {
        x: dm,
        shape: vec![v(n), Atom::I64(1)],
    });
    let f = b.finish(vec![], vec![d]);
    let s = roundtrip(&f, &prog);
    assert_contains(&s, &["= lsum_to dm_1, [n_2, 1]\n"]);
}
