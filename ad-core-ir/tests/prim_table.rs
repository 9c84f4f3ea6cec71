//! One row per primitive (JAX style): the forward derivative against central
//! finite differences, and reverse mode against forward mode through the
//! dot-product identity. Array operations have one row each too.

use ad_core_ir::build::FuncBuilder;
use ad_core_ir::interp::Value;
use ad_core_ir::ir::*;
use ad_core_ir::testing::check_derivatives;
use ad_core_ir::types::Ty;

/// Checks `f` at `args`, differentiating the parameters flagged in `wrt`.
fn check(name: &str, f: Func, args: &[Value], wrt: &[bool]) {
    let mut p = Program::default();
    p.insert(f);
    let r = check_derivatives(&p, &p.funcs[0].name.clone(), args, wrt, 7, 1e-6)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    assert!(
        r.jvp_primal_exact && r.fwd_primal_exact,
        "{name}: primal differs {r:?}"
    );
    assert!(
        r.fd_rel_err < 1e-6,
        "{name}: jvp vs finite differences {r:?}"
    );
    assert!(r.lin_vs_jvp < 1e-12, "{name}: lin vs jvp {r:?}");
    assert!(r.dot_rel_err < 1e-10, "{name}: vjp vs jvp {r:?}");
}

/// `f(x, y) = prim(x, y)` on f64 operands (i64 exponent for powi).
fn scalar_row(p: Prim, args: &[f64]) {
    let p0 = Program::default();
    let mut b = FuncBuilder::new(&p0, p.name());
    let mut atoms = vec![];
    let mut vals = vec![];
    let mut wrt = vec![];
    for (k, &a) in args.iter().enumerate() {
        if p == Prim::Powi && k == 1 {
            atoms.push(Atom::I64(a as i64));
            continue;
        }
        atoms.push(b.param(&format!("x{k}"), Ty::F64).into());
        vals.push(Value::F64(a));
        wrt.push(true);
    }
    let y = b.prim(p, &atoms);
    let f = b.finish(vec![y.into()], vec![]);
    check(p.name(), f, &vals, &wrt);
}

/// The rows of the differentiable scalar primitives: the primitive and its
/// operands.
const ROWS: &[(Prim, &[f64])] = {
    use Prim::*;
    &[
        (Add, &[0.3, -1.2]),
        (Sub, &[0.3, -1.2]),
        (Mul, &[0.3, -1.2]),
        (Div, &[0.3, -1.2]),
        (Neg, &[0.7]),
        (Abs, &[-0.7]),
        (Max, &[0.3, -1.2]),
        (Min, &[0.3, -1.2]),
        (Sin, &[0.7]),
        (Cos, &[0.7]),
        (Tan, &[0.7]),
        (Exp, &[0.7]),
        (Ln, &[0.7]),
        (Log2, &[0.7]),
        (Log10, &[0.7]),
        (Sqrt, &[0.7]),
        (Tanh, &[0.7]),
        (Sinh, &[0.7]),
        (Cosh, &[0.7]),
        (Atan, &[0.7]),
        (Asin, &[0.7]),
        (Acos, &[0.7]),
        (Asinh, &[0.7]),
        (Acosh, &[1.7]),
        (Atanh, &[0.7]),
        (ExpM1, &[0.7]),
        (Ln1p, &[0.7]),
        (Powi, &[0.7, 3.0]),
        (Powf, &[0.7, 1.3]),
        (Atan2, &[0.7, -0.4]),
        (Hypot, &[0.7, -0.4]),
        // a % b (f64): both signs of a; the quotient's truncation is
        // piecewise constant (∂b = -trunc(a / b))
        (Rem, &[5.3, 2.1]),
        (Rem, &[-5.3, 2.1]),
        (Rem, &[5.3, -2.1]),
        (Copysign, &[0.7, -0.4]),
        (Copysign, &[-0.7, -0.4]),
        (Copysign, &[-0.7, 0.4]),
        (MulAdd, &[0.7, -0.4, 1.3]),
        (Exp2, &[0.7]),
        (Cbrt, &[0.7]),
        (Cbrt, &[-1.9]),
        // clamp(x, lo, hi): inside, below and above the interval
        (Clamp, &[0.3, -1.0, 1.0]),
        (Clamp, &[-1.5, -1.0, 1.0]),
        (Clamp, &[1.5, -1.0, 1.0]),
    ]
};

#[test]
fn every_differentiable_scalar_primitive() {
    for (p, a) in ROWS {
        scalar_row(*p, a);
    }
}

/// The primitives with no tangent: integer, boolean and comparison results,
/// casts to and from integers, the piecewise-constant `floor`, `ceil`,
/// `round`, `trunc` and `signum` (`select` has its own test below).
fn has_no_tangent(p: Prim) -> bool {
    use Prim::*;
    matches!(
        p,
        Lt | Le
            | Gt
            | Ge
            | Eq
            | Ne
            | And
            | Or
            | Not
            | ToI64
            | ToF64
            | U64ToF64
            | IntArith(..)
            | IntCast(_)
            | FloatToInt(_)
            | ULt
            | ULe
            | UGt
            | UGe
            | UMax
            | UMin
            | Floor
            | Ceil
            | Round
            | Trunc
            | Signum
    )
}

#[test]
fn the_rows_cover_every_primitive() {
    for p in Prim::ALL {
        let row = ROWS.iter().any(|(q, _)| *q == p);
        let tested_below = p == Prim::Select;
        assert!(
            row || tested_below || has_no_tangent(p),
            "{p:?} has no row in the primitive table: add one"
        );
    }
}

#[test]
fn select_and_non_differentiable_primitives() {
    // select(x < y, x * x, y) and casts / comparisons feeding it.
    let p0 = Program::default();
    let mut b = FuncBuilder::new(&p0, "sel");
    let x = b.param("x", Ty::F64);
    let y = b.param("y", Ty::F64);
    let c = b.prim(Prim::Lt, &[x.into(), y.into()]);
    let xx = b.prim(Prim::Mul, &[x.into(), x.into()]);
    let n = b.prim(Prim::ToI64, &[y.into()]);
    let nf = b.prim(Prim::ToF64, &[n.into()]);
    let s = b.prim(Prim::Select, &[c.into(), xx.into(), y.into()]);
    let r = b.prim(Prim::Add, &[s.into(), nf.into()]);
    let f = b.finish(vec![r.into()], vec![]);
    check(
        "select",
        f.clone(),
        &[Value::F64(0.3), Value::F64(2.5)],
        &[true, true],
    );
    check(
        "select-else",
        f,
        &[Value::F64(0.9), Value::F64(0.5)],
        &[true, true],
    );
}

fn v(shape: &[usize], xs: &[f64]) -> Value {
    Value::f64s(shape, xs.to_vec())
}

/// `f(a) = sum(g(a) * w)` for an array operation `g`, with a fixed weight so
/// every output element matters.
fn array_row(name: &str, arg: Value, make: impl FnOnce(&mut FuncBuilder, Var) -> Var) {
    let p0 = Program::default();
    let mut b = FuncBuilder::new(&p0, name);
    let ty = match &arg {
        Value::F64(_) => Ty::F64,
        other => Ty::f64s(other.shape().unwrap().len()),
    };
    let a = b.param("a", ty);
    let y = make(&mut b, a);
    let yt = b.atom_ty(&y.into());
    let out = if yt.rank() == Some(0) {
        let s = b.prim(Prim::Sin, &[y.into()]);
        b.prim(Prim::Mul, &[s.into(), Atom::F64(1.5)])
    } else {
        let m = b.map(&[y.into()], |b, e| {
            vec![b.prim(Prim::Sin, &[e[0].into()]).into()]
        })[0];
        b.array(ArrayOp::Reduce {
            op: ReduceOp::Sum,
            arr: m.into(),
            axis: None,
        })
    };
    let f = b.finish(vec![out.into()], vec![]);
    check(name, f, &[arg], &[true]);
}

#[test]
fn every_array_operation() {
    let m23 = || v(&[2, 3], &[0.1, -0.5, 0.9, 0.4, -0.2, 0.7]);
    let v4 = || v(&[4], &[0.3, -0.8, 0.5, 0.2]);
    array_row("index", m23(), |b, a| {
        b.index(a.into(), &[Atom::I64(1), Atom::I64(2)])
    });
    array_row("index_row", m23(), |b, a| {
        b.index(a.into(), &[Atom::I64(1)])
    });
    array_row("update_set", v4(), |b, a| {
        let e = b.index(a.into(), &[Atom::I64(0)]);
        let s = b.prim(Prim::Mul, &[e.into(), e.into()]);
        b.array(ArrayOp::Update {
            arr: a.into(),
            idx: vec![Atom::I64(2)],
            val: s.into(),
            add: false,
        })
    });
    array_row("update_add", v4(), |b, a| {
        let e = b.index(a.into(), &[Atom::I64(3)]);
        b.array(ArrayOp::Update {
            arr: a.into(),
            idx: vec![Atom::I64(1)],
            val: e.into(),
            add: true,
        })
    });
    array_row("gather", v4(), |b, a| {
        let ix = b.build(&[Atom::I64(5)], |b, i| {
            let r = b.prim(Prim::Rem, &[i[0].into(), Atom::I64(3)]);
            vec![r.into()]
        })[0];
        b.array(ArrayOp::Gather {
            arr: a.into(),
            idx: ix.into(),
        })
    });
    array_row("scatter_add", v4(), |b, a| {
        let ix = b.build(&[Atom::I64(4)], |b, i| {
            let r = b.prim(Prim::Rem, &[i[0].into(), Atom::I64(2)]);
            vec![r.into()]
        })[0];
        b.array(ArrayOp::ScatterAdd {
            len: Atom::I64(3),
            idx: ix.into(),
            vals: a.into(),
        })
    });
    for op in [ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Max, ReduceOp::Min] {
        array_row(&format!("reduce_{op:?}"), m23(), |b, a| {
            b.array(ArrayOp::Reduce {
                op,
                arr: a.into(),
                axis: None,
            })
        });
        for axis in [0, 1] {
            array_row(&format!("reduce_{op:?}_axis{axis}"), m23(), |b, a| {
                b.array(ArrayOp::Reduce {
                    op,
                    arr: a.into(),
                    axis: Some(axis),
                })
            });
        }
    }
    array_row("prod_with_zero", v(&[3], &[0.0, 0.5, -2.0]), |b, a| {
        b.array(ArrayOp::Reduce {
            op: ReduceOp::Prod,
            arr: a.into(),
            axis: None,
        })
    });
    array_row("scan", v4(), |b, a| {
        b.array(ArrayOp::Scan {
            arr: a.into(),
            reverse: false,
        })
    });
    array_row("scan_rev", v4(), |b, a| {
        b.array(ArrayOp::Scan {
            arr: a.into(),
            reverse: true,
        })
    });
    array_row("transpose", m23(), |b, a| {
        b.array(ArrayOp::Transpose { arr: a.into() })
    });
    array_row("broadcast_rows", v4(), |b, a| {
        b.array(ArrayOp::Broadcast {
            arr: a.into(),
            shape: vec![Atom::I64(3), Atom::I64(4)],
            axes: vec![1],
        })
    });
    array_row("broadcast_cols", v4(), |b, a| {
        b.array(ArrayOp::Broadcast {
            arr: a.into(),
            shape: vec![Atom::I64(4), Atom::I64(2)],
            axes: vec![0],
        })
    });
    array_row("broadcast_scalar", Value::F64(0.4), |b, a| {
        b.array(ArrayOp::Broadcast {
            arr: a.into(),
            shape: vec![Atom::I64(2), Atom::I64(3)],
            axes: vec![],
        })
    });
    // Matrix products in every rank combination, both operands differentiated.
    let w2 = v(&[3, 2], &[0.2, -0.1, 0.4, 0.3, -0.6, 0.5]);
    let w1 = v(&[3], &[0.7, -0.3, 0.2]);
    for (name, arg, other) in [
        ("matmul_vv", w1.clone(), w1.clone()),
        ("matmul_mv", m23(), w1.clone()),
        ("matmul_vm", v(&[2], &[0.3, -0.9]), m23()),
        ("matmul_mm", m23(), w2.clone()),
    ] {
        let p0 = Program::default();
        let mut b = FuncBuilder::new(&p0, name);
        let ta = Ty::f64s(arg.shape().unwrap().len());
        let tb = Ty::f64s(other.shape().unwrap().len());
        let a = b.param("a", ta);
        let c = b.param("b", tb);
        let y = b.array(ArrayOp::MatMul {
            a: a.into(),
            b: c.into(),
        });
        let out = if b.ty(y).rank() == Some(0) {
            b.prim(Prim::Sin, &[y.into()])
        } else {
            let m = b.map(&[y.into()], |b, e| {
                vec![b.prim(Prim::Sin, &[e[0].into()]).into()]
            })[0];
            b.array(ArrayOp::Reduce {
                op: ReduceOp::Sum,
                arr: m.into(),
                axis: None,
            })
        };
        let f = b.finish(vec![out.into()], vec![]);
        check(name, f, &[arg, other], &[true, true]);
    }
}
