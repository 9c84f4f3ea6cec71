//! Tests of the reference interpreter: one or more hand-computed results per
//! construct, the primitive table against Rust's methods, errors, the cost
//! model and the value helpers.

use ad_core_ir::build::FuncBuilder;
use ad_core_ir::interp::{dot, run, run_counted, EvalError, Value};
use ad_core_ir::ir::*;
use ad_core_ir::types::{Scalar, Ty};
use std::hint::black_box;

// ------------------------------------------------------------------ helpers

type Body<'a> = dyn FnOnce(&mut FuncBuilder) -> (Vec<Atom>, Vec<Var>) + 'a;

/// A one-function program `f` built by `body`.
fn program(body: Box<Body<'_>>) -> Program {
    let mut prog = Program::default();
    let f = {
        let mut b = FuncBuilder::new(&prog, "f");
        let (r, lr) = body(&mut b);
        b.finish(r, lr)
    };
    prog.insert(f);
    prog
}

/// Runs `f` with non-linear and linear arguments.
fn eval_lin(
    body: impl FnOnce(&mut FuncBuilder) -> (Vec<Atom>, Vec<Var>),
    args: &[Value],
    lin: &[Value],
) -> (Vec<Value>, Vec<Value>) {
    let prog = program(Box::new(body));
    run(&prog, "f", args, lin).unwrap_or_else(|e| panic!("evaluation failed: {e}"))
}

/// Runs a function with non-linear results only.
fn eval(body: impl FnOnce(&mut FuncBuilder) -> Vec<Atom>, args: &[Value]) -> Vec<Value> {
    eval_lin(|b| (body(b), vec![]), args, &[]).0
}

/// Runs a function expected to fail.
fn eval_err(body: impl FnOnce(&mut FuncBuilder) -> Vec<Atom>, args: &[Value]) -> EvalError {
    let prog = program(Box::new(|b: &mut FuncBuilder| (body(b), vec![])));
    match run(&prog, "f", args, &[]) {
        Ok(r) => panic!("expected an error, got {r:?}"),
        Err(e) => e,
    }
}

/// The type of a (non-tuple) value.
fn ty_of(v: &Value) -> Ty {
    match v {
        Value::F64(_) => Ty::F64,
        Value::I64(_) => Ty::I64,
        Value::Bool(_) => Ty::BOOL,
        Value::Array(a) => Ty::array(a.data.elem(), a.rank()),
        Value::Tuple(vs) => Ty::Tuple(vs.iter().map(ty_of).collect()),
    }
}

/// Declares one non-linear parameter per argument, typed like it.
fn params(b: &mut FuncBuilder, args: &[Value]) -> Vec<Atom> {
    args.iter()
        .enumerate()
        .map(|(k, v)| b.param(&format!("x{k}"), ty_of(v)).into())
        .collect()
}

/// `f(args) = op(args)` for an array operation with one result.
fn array1(op: impl FnOnce(&[Atom]) -> ArrayOp, args: &[Value]) -> Value {
    let r = eval(
        |b| {
            let ps = params(b, args);
            vec![b.array(op(&ps)).into()]
        },
        args,
    );
    r.into_iter().next().expect("one result")
}

/// As [`array1`], expecting an error.
fn array1_err(op: impl FnOnce(&[Atom]) -> ArrayOp, args: &[Value]) -> EvalError {
    eval_err(
        |b| {
            let ps = params(b, args);
            vec![b.array(op(&ps)).into()]
        },
        args,
    )
}

/// A shape tree of fixed sizes.
fn fixed(shape: &[usize]) -> ShapeTree {
    if shape.is_empty() {
        ShapeTree::Scalar
    } else {
        ShapeTree::Array(
            shape
                .iter()
                .map(|n| Dim::Atom(Atom::I64(*n as i64)))
                .collect(),
        )
    }
}

/// `f(nl ; lin) = op(nl ; lin)` for a linear operation with one result; the
/// linear parameters get the shapes of their arguments.
fn lin1(op: impl FnOnce(&[Atom], &[Var]) -> LinOp, nl: &[Value], lin: &[Value]) -> Value {
    let (_, lr) = eval_lin(
        |b| {
            let ps = params(b, nl);
            let lps: Vec<Var> = lin
                .iter()
                .enumerate()
                .map(|(k, v)| b.lin_param(&format!("d{k}"), ty_of(v), shape_tree(v)))
                .collect();
            (vec![], vec![b.lin(op(&ps, &lps))])
        },
        nl,
        lin,
    );
    lr.into_iter().next().expect("one linear result")
}

fn shape_tree(v: &Value) -> ShapeTree {
    match v {
        Value::Tuple(vs) => ShapeTree::Tuple(vs.iter().map(shape_tree).collect()),
        other => fixed(other.shape().expect("not a tuple")),
    }
}

fn f64s(shape: &[usize], data: &[f64]) -> Value {
    Value::f64s(shape, data.to_vec())
}

fn i64s(data: &[i64]) -> Value {
    Value::i64s(&[data.len()], data.to_vec())
}

fn m23() -> Value {
    f64s(&[2, 3], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
}

// ------------------------------------------------------------------ primitives

/// `(arguments, expected result)` rows for a primitive, expected values from
/// Rust's methods. Exhaustive: a new primitive must get rows here.
fn prim_cases(p: Prim) -> Vec<(Vec<Value>, Value)> {
    use Value::{Bool as B, F64 as F, I64 as I};
    let (x, y, nan) = (0.7_f64, -1.3_f64, f64::NAN);
    // black_box: compute the expectation at run time like the interpreter
    // (constant folding may round `powi` differently or give other NaN bits)
    let f1 = |g: fn(f64) -> f64, a: f64| (vec![F(a)], F(g(black_box(a))));
    let f2 = |g: fn(f64, f64) -> f64, a: f64, b: f64| {
        (vec![F(a), F(b)], F(g(black_box(a), black_box(b))))
    };
    match p {
        Prim::Add => vec![f2(|a, b| a + b, x, y), (vec![I(3), I(-5)], I(-2))],
        Prim::Sub => vec![f2(|a, b| a - b, x, y), (vec![I(3), I(-5)], I(8))],
        Prim::Mul => vec![f2(|a, b| a * b, x, y), (vec![I(3), I(-5)], I(-15))],
        Prim::Div => vec![
            f2(|a, b| a / b, x, y),
            f2(|a, b| a / b, 1.0, 0.0),
            (vec![I(-7), I(2)], I(-3)),
        ],
        Prim::Rem => vec![
            (vec![I(-7), I(2)], I(-1)),
            (vec![I(7), I(-3)], I(1)),
            f2(|a, b| a % b, -5.3, 2.1),
            f2(|a, b| a % b, 1.0, 0.0),
            f2(|a, b| a % b, f64::INFINITY, 2.0),
            f2(|a, b| a % b, -0.0, 2.0),
        ],
        Prim::Neg => vec![f1(|a| -a, x), (vec![I(5)], I(-5))],
        Prim::Abs => vec![f1(f64::abs, y), (vec![I(-4)], I(4))],
        Prim::Max => vec![
            f2(f64::max, x, y),
            f2(f64::max, nan, 1.0),
            (vec![I(2), I(-9)], I(2)),
        ],
        Prim::Min => vec![
            f2(f64::min, x, y),
            f2(f64::min, 1.0, nan),
            (vec![I(2), I(-9)], I(-9)),
        ],
        Prim::Sin => vec![f1(f64::sin, x)],
        Prim::Cos => vec![f1(f64::cos, x)],
        Prim::Tan => vec![f1(f64::tan, x)],
        Prim::Exp => vec![f1(f64::exp, y)],
        Prim::Ln => vec![f1(f64::ln, 2.5), f1(f64::ln, -1.0)],
        Prim::Log2 => vec![f1(f64::log2, 2.5)],
        Prim::Log10 => vec![f1(f64::log10, 2.5)],
        Prim::Sqrt => vec![f1(f64::sqrt, 2.5)],
        Prim::Tanh => vec![f1(f64::tanh, y)],
        Prim::Sinh => vec![f1(f64::sinh, y)],
        Prim::Cosh => vec![f1(f64::cosh, y)],
        Prim::Atan => vec![f1(f64::atan, y)],
        Prim::Asin => vec![f1(f64::asin, y)],
        Prim::Acos => vec![f1(f64::acos, y)],
        Prim::Asinh => vec![f1(f64::asinh, y)],
        Prim::Acosh => vec![f1(f64::acosh, y)],
        Prim::Atanh => vec![f1(f64::atanh, y)],
        Prim::ExpM1 => vec![f1(f64::exp_m1, 1e-10)],
        Prim::Ln1p => vec![f1(f64::ln_1p, 1e-10)],
        Prim::Powi => vec![
            (vec![F(y), I(3)], F(black_box(y).powi(black_box(3)))),
            (vec![F(2.0), I(-2)], F(0.25)),
        ],
        Prim::Powf => vec![f2(f64::powf, x, y)],
        Prim::Atan2 => vec![f2(f64::atan2, y, -x)],
        Prim::Hypot => vec![f2(f64::hypot, x, y)],
        Prim::Copysign => vec![
            f2(f64::copysign, x, y),
            f2(f64::copysign, x, -0.0),
            f2(f64::copysign, -x, nan),
            f2(f64::copysign, nan, -1.0),
        ],
        Prim::Lt => vec![
            (vec![F(x), F(y)], B(false)),
            (vec![F(nan), F(y)], B(false)),
            (vec![I(1), I(2)], B(true)),
        ],
        Prim::Le => vec![(vec![F(x), F(x)], B(true)), (vec![I(3), I(2)], B(false))],
        Prim::Gt => vec![(vec![F(x), F(y)], B(true)), (vec![I(1), I(2)], B(false))],
        Prim::Ge => vec![(vec![F(y), F(x)], B(false)), (vec![I(2), I(2)], B(true))],
        Prim::Eq => vec![
            (vec![F(nan), F(nan)], B(false)),
            (vec![F(0.0), F(-0.0)], B(true)),
            (vec![I(2), I(2)], B(true)),
            (vec![B(true), B(false)], B(false)),
        ],
        Prim::Ne => vec![
            (vec![F(nan), F(nan)], B(true)),
            (vec![I(2), I(3)], B(true)),
            (vec![B(true), B(true)], B(false)),
        ],
        Prim::And => vec![
            (vec![B(true), B(false)], B(false)),
            (vec![B(true), B(true)], B(true)),
        ],
        Prim::Or => vec![
            (vec![B(false), B(false)], B(false)),
            (vec![B(true), B(false)], B(true)),
        ],
        Prim::Not => vec![(vec![B(true)], B(false))],
        Prim::ToF64 => vec![(vec![I(-3)], F(-3.0))],
        Prim::ToI64 => vec![
            (vec![F(-2.7)], I(-2)),
            (vec![F(1e300)], I(i64::MAX)),
            (vec![F(nan)], I(0)),
        ],
        Prim::Select => vec![
            (vec![B(true), F(1.0), F(2.0)], F(1.0)),
            (vec![B(false), I(1), I(2)], I(2)),
        ],
        Prim::MulAdd => {
            // fused: 0.1 * 10 + -1 is 5.55e-17 fused, 0 unfused
            let (a, b, c) = (0.1_f64, 10.0_f64, -1.0_f64);
            let fused = black_box(a).mul_add(black_box(b), black_box(c));
            assert_ne!(fused, a * b + c);
            vec![(vec![F(a), F(b), F(c)], F(fused))]
        }
        Prim::Exp2 => vec![
            f1(f64::exp2, 0.3),
            f1(f64::exp2, -1074.0),
            f1(f64::exp2, 3.0),
        ],
        Prim::Cbrt => vec![
            f1(f64::cbrt, -27.0),
            f1(f64::cbrt, 0.3),
            f1(f64::cbrt, -0.0),
        ],
        Prim::Floor => vec![
            f1(f64::floor, -2.5),
            f1(f64::floor, 2.5),
            f1(f64::floor, -0.0),
        ],
        Prim::Ceil => vec![f1(f64::ceil, -2.5), f1(f64::ceil, 2.5), f1(f64::ceil, -0.3)],
        Prim::Round => vec![
            f1(f64::round, -2.5),
            f1(f64::round, 2.5),
            f1(f64::round, 0.49),
        ],
        Prim::Trunc => vec![
            f1(f64::trunc, -2.7),
            f1(f64::trunc, 2.7),
            f1(f64::trunc, -0.3),
        ],
        Prim::Signum => vec![
            f1(f64::signum, -0.0),
            f1(f64::signum, 3.0),
            f1(f64::signum, nan),
        ],
        Prim::Clamp => vec![
            (vec![F(nan), F(0.0), F(1.0)], F(nan)),
            (vec![F(-0.0), F(0.0), F(1.0)], F(-0.0)),
            (vec![F(2.0), F(0.0), F(1.0)], F(1.0)),
            (vec![F(-2.0), F(0.0), F(1.0)], F(0.0)),
        ],
        Prim::IntArith(op, t) => {
            // a small in-range case of each operator (overflow: `int_overflow_is_an_error`)
            let (a, b, r) = match op {
                IntOp::Add => (3, 4, 7),
                IntOp::Sub => (9, 4, 5),
                IntOp::Mul => (3, 4, 12),
                IntOp::Div => (9, 4, 2),
                IntOp::Rem => (9, 4, 1),
            };
            let _ = t;
            vec![(vec![I(a), I(b)], I(r))]
        }
        Prim::IntCast(t) => {
            let v = 300 + (1 << 40);
            let want = match t {
                IntTy::U8 => v as u8 as i64,
                IntTy::U16 => v as u16 as i64,
                IntTy::U32 => v as u32 as i64,
                IntTy::U64 => v,
                IntTy::I8 => v as i8 as i64,
                IntTy::I16 => v as i16 as i64,
                IntTy::I32 => v as i32 as i64,
            };
            vec![(vec![I(v)], I(want)), (vec![I(-1)], I(t.wrap(-1)))]
        }
        Prim::FloatToInt(t) => {
            let sat = |x: f64| match t {
                IntTy::U8 => x as u8 as i64,
                IntTy::U16 => x as u16 as i64,
                IntTy::U32 => x as u32 as i64,
                IntTy::U64 => x as u64 as i64,
                IntTy::I8 => x as i8 as i64,
                IntTy::I16 => x as i16 as i64,
                IntTy::I32 => x as i32 as i64,
            };
            [nan, -1e300, 1e300, -2.7, 300.9, f64::INFINITY]
                .into_iter()
                .map(|x| (vec![F(x)], I(sat(black_box(x)))))
                .collect()
        }
        Prim::ULt => vec![(vec![I(-1), I(5)], B(false)), (vec![I(1), I(5)], B(true))],
        Prim::ULe => vec![(vec![I(5), I(-1)], B(true)), (vec![I(5), I(5)], B(true))],
        Prim::UGt => vec![(vec![I(-1), I(5)], B(true)), (vec![I(1), I(5)], B(false))],
        Prim::UGe => vec![(vec![I(5), I(-1)], B(false)), (vec![I(5), I(5)], B(true))],
        Prim::UMax => vec![(vec![I(-1), I(5)], I(-1)), (vec![I(1), I(5)], I(5))],
        Prim::UMin => vec![(vec![I(-1), I(5)], I(5)), (vec![I(1), I(5)], I(1))],
        Prim::U64ToF64 => vec![(vec![I(-1)], F(u64::MAX as f64)), (vec![I(5)], F(5.0))],
    }
}

/// Typed integer arithmetic fails (Rust's debug panic) where the narrow type
/// overflows although `i64` would not.
#[test]
fn int_overflow_is_an_error() {
    let cases = [
        (Prim::IntArith(IntOp::Add, IntTy::U8), 200, 100),
        (Prim::IntArith(IntOp::Sub, IntTy::U64), 0, 1),
        (Prim::IntArith(IntOp::Mul, IntTy::I16), 300, 300),
        (Prim::IntArith(IntOp::Div, IntTy::I8), -128, -1),
        (Prim::IntArith(IntOp::Rem, IntTy::U32), 5, 0),
    ];
    for (p, a, b) in cases {
        let args = [Value::I64(a), Value::I64(b)];
        eval_err(
            |bld| {
                let ps = params(bld, &args);
                vec![bld.prim(p, &ps).into()]
            },
            &args,
        );
    }
}

#[test]
fn every_prim_matches_rust() {
    for p in Prim::ALL {
        for (args, want) in prim_cases(p) {
            let got = eval(
                |b| {
                    let ps = params(b, &args);
                    vec![b.prim(p, &ps).into()]
                },
                &args,
            );
            assert!(
                got[0].bits_eq(&want),
                "{}({args:?}) = {} but Rust gives {want}",
                p.name(),
                got[0]
            );
        }
    }
}

#[test]
fn prims_on_literals() {
    let r = eval(
        |b| {
            let x = b.prim(Prim::Mul, &[2.0.into(), 3.5.into()]);
            let y = b.prim(Prim::Add, &[x.into(), 1.0.into()]);
            vec![y.into()]
        },
        &[],
    );
    assert_eq!(r, vec![Value::F64(8.0)]);
}

#[test]
fn i64_errors_are_eval_errors_with_source() {
    let cases: Vec<(Prim, Vec<Value>)> = vec![
        (Prim::Div, vec![Value::I64(1), Value::I64(0)]),
        (Prim::Rem, vec![Value::I64(1), Value::I64(0)]),
        (Prim::Div, vec![Value::I64(i64::MIN), Value::I64(-1)]),
        (Prim::Add, vec![Value::I64(i64::MAX), Value::I64(1)]),
        (Prim::Mul, vec![Value::I64(i64::MAX), Value::I64(2)]),
        (Prim::Sub, vec![Value::I64(i64::MIN), Value::I64(1)]),
        (Prim::Neg, vec![Value::I64(i64::MIN)]),
        (Prim::Abs, vec![Value::I64(i64::MIN)]),
        (Prim::Powi, vec![Value::F64(2.0), Value::I64(1 << 40)]),
    ];
    for (p, args) in cases {
        let e = eval_err(
            |b| {
                let ps = params(b, &args);
                b.set_src(Some(SrcId(7)));
                vec![b.prim(p, &ps).into()]
            },
            &args,
        );
        assert_eq!(e.src, Some(SrcId(7)), "{}: {e}", p.name());
        assert!(e.to_string().contains("source #7"), "{e}");
    }
}

// ------------------------------------------------------------------ atoms, tuples

#[test]
fn atom_tuple_untuple() {
    let r = eval(
        |b| {
            let x = b.param("x", Ty::F64);
            let c = b.emit1(Expr::Atom(x.into()));
            let t = b.emit1(Expr::Tuple(vec![c.into(), 3i64.into(), true.into()]));
            let (parts, _) = b.emit(Expr::Untuple(t.into()));
            vec![t.into(), parts[1].into(), parts[0].into()]
        },
        &[Value::F64(1.5)],
    );
    assert_eq!(
        r,
        vec![
            Value::Tuple(vec![Value::F64(1.5), Value::I64(3), Value::Bool(true)]),
            Value::I64(3),
            Value::F64(1.5)
        ]
    );
}

// ------------------------------------------------------------------ array ops

#[test]
fn index_element_and_row() {
    let idx2 = |ps: &[Atom]| ArrayOp::Index {
        arr: ps[0],
        idx: vec![Atom::I64(1), Atom::I64(2)],
    };
    assert_eq!(array1(idx2, &[m23()]), Value::F64(6.0));
    let row = |ps: &[Atom]| ArrayOp::Index {
        arr: ps[0],
        idx: vec![ps[1]],
    };
    assert_eq!(
        array1(row, &[m23(), Value::I64(1)]),
        f64s(&[3], &[4.0, 5.0, 6.0])
    );
}

#[test]
fn index_out_of_range_is_an_error() {
    for i in [2, -1, i64::MIN] {
        let row = |ps: &[Atom]| ArrayOp::Index {
            arr: ps[0],
            idx: vec![ps[1]],
        };
        let e = array1_err(row, &[m23(), Value::I64(i)]);
        assert!(e.msg.contains("out of range"), "{e}");
    }
}

#[test]
fn update_set_and_add() {
    let set = |ps: &[Atom]| ArrayOp::Update {
        arr: ps[0],
        idx: vec![Atom::I64(0), Atom::I64(1)],
        val: Atom::F64(10.0),
        add: false,
    };
    assert_eq!(
        array1(set, &[m23()]),
        f64s(&[2, 3], &[1.0, 10.0, 3.0, 4.0, 5.0, 6.0])
    );
    let add_row = |ps: &[Atom]| ArrayOp::Update {
        arr: ps[0],
        idx: vec![Atom::I64(1)],
        val: ps[1],
        add: true,
    };
    let r = array1(add_row, &[m23(), f64s(&[3], &[10.0, 20.0, 30.0])]);
    assert_eq!(r, f64s(&[2, 3], &[1.0, 2.0, 3.0, 14.0, 25.0, 36.0]));
    let add_int = |ps: &[Atom]| ArrayOp::Update {
        arr: ps[0],
        idx: vec![Atom::I64(2)],
        val: Atom::I64(5),
        add: true,
    };
    assert_eq!(array1(add_int, &[i64s(&[1, 2, 3])]), i64s(&[1, 2, 8]));
}

#[test]
fn update_with_wrong_shape_is_an_error() {
    let add_row = |ps: &[Atom]| ArrayOp::Update {
        arr: ps[0],
        idx: vec![Atom::I64(1)],
        val: ps[1],
        add: false,
    };
    let e = array1_err(add_row, &[m23(), f64s(&[2], &[1.0, 2.0])]);
    assert!(e.msg.contains("update"), "{e}");
}

#[test]
fn gather_rows_with_duplicates() {
    let g = |ps: &[Atom]| ArrayOp::Gather {
        arr: ps[0],
        idx: ps[1],
    };
    let r = array1(g, &[m23(), i64s(&[1, 1, 0])]);
    assert_eq!(
        r,
        f64s(&[3, 3], &[4.0, 5.0, 6.0, 4.0, 5.0, 6.0, 1.0, 2.0, 3.0])
    );
    let r = array1(g, &[f64s(&[3], &[7.0, 8.0, 9.0]), i64s(&[2, 0])]);
    assert_eq!(r, f64s(&[2], &[9.0, 7.0]));
    assert_eq!(array1(g, &[m23(), i64s(&[])]), f64s(&[0, 3], &[]));
    let e = array1_err(g, &[m23(), i64s(&[0, 2])]);
    assert!(e.msg.contains("out of range"), "{e}");
}

#[test]
fn scatter_add_sums_duplicates() {
    let s = |ps: &[Atom]| ArrayOp::ScatterAdd {
        len: Atom::I64(4),
        idx: ps[0],
        vals: ps[1],
    };
    let r = array1(s, &[i64s(&[3, 0, 3]), f64s(&[3], &[1.0, 2.0, 4.0])]);
    assert_eq!(r, f64s(&[4], &[2.0, 0.0, 0.0, 5.0]));
    let r = array1(s, &[i64s(&[1, 1]), m23()]);
    assert_eq!(
        r,
        f64s(
            &[4, 3],
            &[0.0, 0.0, 0.0, 5.0, 7.0, 9.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
        )
    );
    let e = array1_err(s, &[i64s(&[4]), f64s(&[1], &[1.0])]);
    assert!(e.msg.contains("out of range"), "{e}");
    let e = array1_err(s, &[i64s(&[0]), f64s(&[2], &[1.0, 2.0])]);
    assert!(e.msg.contains("rows"), "{e}");
}

fn reduce(op: ReduceOp, axis: Option<usize>, x: Value) -> Value {
    array1(
        |ps| ArrayOp::Reduce {
            op,
            arr: ps[0],
            axis,
        },
        &[x],
    )
}

#[test]
fn reduce_whole_and_along_each_axis() {
    use ReduceOp::*;
    assert_eq!(reduce(Sum, None, m23()), Value::F64(21.0));
    assert_eq!(reduce(Prod, None, m23()), Value::F64(720.0));
    assert_eq!(reduce(Max, None, m23()), Value::F64(6.0));
    assert_eq!(reduce(Min, None, m23()), Value::F64(1.0));
    assert_eq!(reduce(Sum, Some(0), m23()), f64s(&[3], &[5.0, 7.0, 9.0]));
    assert_eq!(reduce(Sum, Some(1), m23()), f64s(&[2], &[6.0, 15.0]));
    assert_eq!(reduce(Prod, Some(1), m23()), f64s(&[2], &[6.0, 120.0]));
    assert_eq!(reduce(Max, Some(0), m23()), f64s(&[3], &[4.0, 5.0, 6.0]));
    assert_eq!(reduce(Min, Some(1), m23()), f64s(&[2], &[1.0, 4.0]));
    // rank 1 along its axis gives a scalar
    assert_eq!(
        reduce(Sum, Some(0), f64s(&[2], &[1.0, 2.0])),
        Value::F64(3.0)
    );
    // integers
    assert_eq!(reduce(Sum, None, i64s(&[1, -2, 5])), Value::I64(4));
    assert_eq!(reduce(Max, None, i64s(&[1, -2, 5])), Value::I64(5));
}

#[test]
fn reduce_empty_gives_identities() {
    use ReduceOp::*;
    let e = || f64s(&[0], &[]);
    assert_eq!(reduce(Sum, None, e()), Value::F64(0.0));
    assert_eq!(reduce(Prod, None, e()), Value::F64(1.0));
    assert_eq!(reduce(Max, None, e()), Value::F64(f64::NEG_INFINITY));
    assert_eq!(reduce(Min, None, e()), Value::F64(f64::INFINITY));
    assert_eq!(reduce(Max, None, i64s(&[])), Value::I64(i64::MIN));
    assert_eq!(reduce(Min, None, i64s(&[])), Value::I64(i64::MAX));
    let e2 = f64s(&[2, 0], &[]);
    assert_eq!(reduce(Sum, Some(1), e2.clone()), f64s(&[2], &[0.0, 0.0]));
    assert_eq!(reduce(Sum, Some(0), e2), f64s(&[0], &[]));
}

#[test]
fn reduce_i64_overflow_is_an_error() {
    let e = array1_err(
        |ps| ArrayOp::Reduce {
            op: ReduceOp::Sum,
            arr: ps[0],
            axis: None,
        },
        &[i64s(&[i64::MAX, 1])],
    );
    assert!(e.msg.contains("overflow"), "{e}");
}

fn arg_reduce(op: ReduceOp, axis: Option<usize>, x: Value) -> Vec<Value> {
    let args = [x];
    eval(
        |b| {
            let ps = params(b, &args);
            let (r, _) = b.emit(Expr::Array(ArrayOp::ArgReduce {
                op,
                arr: ps[0],
                axis,
            }));
            r.into_iter().map(Atom::from).collect()
        },
        &args,
    )
}

#[test]
fn arg_reduce_first_extremum() {
    use ReduceOp::*;
    let x = f64s(&[2, 3], &[1.0, 9.0, 3.0, 9.0, 0.0, 0.0]);
    // whole array: the multi-index of the first maximum / minimum
    assert_eq!(
        arg_reduce(Max, None, x.clone()),
        vec![Value::I64(0), Value::I64(1)]
    );
    assert_eq!(
        arg_reduce(Min, None, x.clone()),
        vec![Value::I64(1), Value::I64(1)]
    );
    assert_eq!(arg_reduce(Max, Some(0), x.clone()), vec![i64s(&[1, 0, 0])]);
    assert_eq!(arg_reduce(Max, Some(1), x.clone()), vec![i64s(&[1, 0])]);
    assert_eq!(arg_reduce(Min, Some(1), x), vec![i64s(&[0, 1])]);
    // rank 1 along its axis: a scalar; NaNs skipped like f64::max
    let v = f64s(&[3], &[f64::NAN, 2.0, 5.0]);
    assert_eq!(arg_reduce(Max, Some(0), v.clone()), vec![Value::I64(2)]);
    assert_eq!(arg_reduce(Min, None, v), vec![Value::I64(1)]);
    // empty: all zeros
    assert_eq!(
        arg_reduce(Max, None, f64s(&[0, 2], &[])),
        vec![Value::I64(0), Value::I64(0)]
    );
    assert_eq!(
        arg_reduce(Min, None, i64s(&[4, -1, -1])),
        vec![Value::I64(1)]
    );
}

#[test]
fn scan_prefix_and_suffix() {
    let scan = |reverse: bool, x: Value| {
        array1(
            |ps| ArrayOp::Scan {
                arr: ps[0],
                reverse,
            },
            &[x],
        )
    };
    let v = f64s(&[4], &[1.0, 2.0, 3.0, 4.0]);
    assert_eq!(scan(false, v.clone()), f64s(&[4], &[1.0, 3.0, 6.0, 10.0]));
    assert_eq!(scan(true, v), f64s(&[4], &[10.0, 9.0, 7.0, 4.0]));
    assert_eq!(
        scan(false, m23()),
        f64s(&[2, 3], &[1.0, 2.0, 3.0, 5.0, 7.0, 9.0])
    );
    assert_eq!(
        scan(true, m23()),
        f64s(&[2, 3], &[5.0, 7.0, 9.0, 4.0, 5.0, 6.0])
    );
    assert_eq!(scan(false, i64s(&[1, 2])), i64s(&[1, 3]));
}

fn matmul(a: Value, b: Value) -> Result<Value, EvalError> {
    let args = [a, b];
    let prog = program(Box::new(|bld: &mut FuncBuilder| {
        let ps = params(bld, &args);
        let r = bld.array(ArrayOp::MatMul { a: ps[0], b: ps[1] });
        (vec![r.into()], vec![])
    }));
    run(&prog, "f", &args, &[]).map(|(r, _)| r[0].clone())
}

#[test]
fn matmul_by_ranks() {
    let v2 = f64s(&[2], &[1.0, -1.0]);
    let v3 = f64s(&[3], &[1.0, 0.0, 2.0]);
    assert_eq!(matmul(v3.clone(), v3.clone()).unwrap(), Value::F64(5.0));
    assert_eq!(matmul(m23(), v3.clone()).unwrap(), f64s(&[2], &[7.0, 16.0]));
    assert_eq!(
        matmul(v2.clone(), m23()).unwrap(),
        f64s(&[3], &[-3.0, -3.0, -3.0])
    );
    let m32 = f64s(&[3, 2], &[1.0, 0.0, 0.0, 1.0, 1.0, 1.0]);
    assert_eq!(
        matmul(m23(), m32).unwrap(),
        f64s(&[2, 2], &[4.0, 5.0, 10.0, 11.0])
    );
    assert!(matmul(m23(), v2.clone()).is_err());
    assert!(matmul(v3, v2).is_err());
}

#[test]
fn transpose_rank2() {
    let r = array1(|ps| ArrayOp::Transpose { arr: ps[0] }, &[m23()]);
    assert_eq!(r, f64s(&[3, 2], &[1.0, 4.0, 2.0, 5.0, 3.0, 6.0]));
}

#[test]
fn broadcast_fill_rows_and_columns() {
    let fill = |ps: &[Atom]| ArrayOp::Broadcast {
        arr: Atom::F64(2.5),
        shape: vec![ps[0], Atom::I64(2)],
        axes: vec![],
    };
    assert_eq!(array1(fill, &[Value::I64(2)]), f64s(&[2, 2], &[2.5; 4]));
    let bc = |axes: Vec<usize>, shape: Vec<i64>, x: Value| {
        array1(
            |ps| ArrayOp::Broadcast {
                arr: ps[0],
                shape: shape.into_iter().map(Atom::I64).collect(),
                axes,
            },
            &[x],
        )
    };
    let v = f64s(&[3], &[1.0, 2.0, 3.0]);
    assert_eq!(
        bc(vec![1], vec![2, 3], v.clone()),
        f64s(&[2, 3], &[1.0, 2.0, 3.0, 1.0, 2.0, 3.0])
    );
    assert_eq!(
        bc(vec![0], vec![3, 2], v),
        f64s(&[3, 2], &[1.0, 1.0, 2.0, 2.0, 3.0, 3.0])
    );
    // [2, 3] to [2, 4, 3] along axes 0 and 2
    let r = bc(vec![0, 2], vec![2, 4, 3], m23());
    let want: Vec<f64> = (0..2)
        .flat_map(|i| (0..4).flat_map(move |_| (0..3).map(move |k| (3 * i + k + 1) as f64)))
        .collect();
    assert_eq!(r, f64s(&[2, 4, 3], &want));
    let e = array1_err(
        |ps| ArrayOp::Broadcast {
            arr: ps[0],
            shape: vec![Atom::I64(2), Atom::I64(4)],
            axes: vec![1],
        },
        &[f64s(&[3], &[1.0, 2.0, 3.0])],
    );
    assert!(e.msg.contains("broadcast"), "{e}");
}

#[test]
fn shape_of_each_axis() {
    let sh = |axis| array1(|ps| ArrayOp::Shape { arr: ps[0], axis }, &[m23()]);
    assert_eq!(sh(0), Value::I64(2));
    assert_eq!(sh(1), Value::I64(3));
}

// ------------------------------------------------------------------ control

#[test]
fn if_takes_the_right_branch() {
    let f = |c: bool| {
        eval(
            |b| {
                let c = b.param("c", Ty::BOOL);
                let x = b.param("x", Ty::F64);
                let r = b.if_(
                    c.into(),
                    |b| vec![b.prim(Prim::Mul, &[x.into(), 2.0.into()]).into()],
                    |b| vec![b.prim(Prim::Neg, &[x.into()]).into()],
                );
                vec![r[0].into()]
            },
            &[Value::Bool(c), Value::F64(3.0)],
        )
    };
    assert_eq!(f(true), vec![Value::F64(6.0)]);
    assert_eq!(f(false), vec![Value::F64(-3.0)]);
}

#[test]
fn call_by_name() {
    let mut prog = Program::default();
    let g = {
        let mut b = FuncBuilder::new(&prog, "g");
        let x = b.param("x", Ty::F64);
        let y = b.param("y", Ty::F64);
        let s = b.prim(Prim::Sub, &[x.into(), y.into()]);
        b.finish(vec![s.into(), y.into()], vec![])
    };
    prog.insert(g);
    let f = {
        let mut b = FuncBuilder::new(&prog, "f");
        let x = b.param("x", Ty::F64);
        let r = b.call("g", &[x.into(), 1.5.into()]);
        let r2 = b.call("g", &[r[0].into(), r[1].into()]);
        b.finish(vec![r2[0].into()], vec![])
    };
    prog.insert(f);
    let (r, _) = run(&prog, "f", &[Value::F64(10.0)], &[]).unwrap();
    assert_eq!(r, vec![Value::F64(7.0)]);
    // calling a function missing from the program is an error
    prog.funcs.retain(|f| f.name != "g");
    let e = run(&prog, "f", &[Value::F64(10.0)], &[]).unwrap_err();
    assert!(e.msg.contains("unknown function `g`"), "{e}");
}

/// `f(n) = loop n (s = 0) |i| (s + i ; y = s before the update, z = [i, i])`:
/// final state, Y and Z.
fn counting_loop(n: i64, rev: bool) -> Vec<Value> {
    eval(
        |b| {
            let n = b.param("n", Ty::I64);
            let (st, ys) = b.loop_(n.into(), rev, &[0.0.into()], |b, i, s| {
                let fi = b.prim(Prim::ToF64, &[i.into()]);
                let s2 = b.prim(Prim::Add, &[s[0].into(), fi.into()]);
                let z = b.array(ArrayOp::Broadcast {
                    arr: i.into(),
                    shape: vec![Atom::I64(2)],
                    axes: vec![],
                });
                (vec![s2.into()], vec![s[0].into(), z.into()])
            });
            vec![st[0].into(), ys[0].into(), ys[1].into()]
        },
        &[Value::I64(n)],
    )
}

#[test]
fn loop_forward_stacks_by_index() {
    // i = 0: y = 0, s = 0; i = 1: y = 0, s = 1; i = 2: y = 1, s = 3
    assert_eq!(
        counting_loop(3, false),
        vec![
            Value::F64(3.0),
            f64s(&[3], &[0.0, 0.0, 1.0]),
            Value::i64s(&[3, 2], vec![0, 0, 1, 1, 2, 2])
        ]
    );
}

#[test]
fn loop_reversed_stacks_by_index_value() {
    // i = 2: y = 0, s = 2; i = 1: y = 2, s = 3; i = 0: y = 3, s = 3; Y[i] = y at i
    assert_eq!(
        counting_loop(3, true),
        vec![
            Value::F64(3.0),
            f64s(&[3], &[3.0, 2.0, 0.0]),
            Value::i64s(&[3, 2], vec![0, 0, 1, 1, 2, 2])
        ]
    );
}

#[test]
fn zero_trip_loop_has_empty_stacks() {
    for (n, rev) in [(0, false), (0, true), (-5, false)] {
        assert_eq!(
            counting_loop(n, rev),
            vec![
                Value::F64(0.0),
                f64s(&[0], &[]),
                Value::i64s(&[0, 0], Vec::<i64>::new())
            ]
        );
    }
}

#[test]
fn loop_outputs_of_different_shapes_are_an_error() {
    let e = eval_err(
        |b| {
            let (_, ys) = b.loop_(3i64.into(), false, &[], |b, i, _| {
                let r = b.build(&[i.into()], |_, _| vec![1.0.into()]);
                (vec![], vec![r[0].into()])
            });
            vec![ys[0].into()]
        },
        &[],
    );
    assert!(e.msg.contains("different types or shapes"), "{e}");
}

/// `loop n (; ds = dx) |i ; ds| (; 2 ds ; ly = (i + 1) ds)`: linear state and
/// stacked linear outputs.
fn linear_loop(n: i64, rev: bool) -> (Vec<Value>, Vec<Value>) {
    eval_lin(
        |b| {
            let dx = b.lin_param("dx", Ty::F64, ShapeTree::Scalar);
            let body = b.lambda(&[Ty::I64], &[Ty::F64], |b, ps, lps| {
                let i1 = b.prim(Prim::Add, &[ps[0].into(), 1i64.into()]);
                let fi = b.prim(Prim::ToF64, &[i1.into()]);
                let (_, d) = b.emit(Expr::Lin(LinOp::Dup(lps[0])));
                let s2 = b.lin(LinOp::Scale {
                    s: 2.0.into(),
                    x: d[0],
                });
                let ly = b.lin(LinOp::Scale {
                    s: fi.into(),
                    x: d[1],
                });
                (vec![], vec![s2, ly])
            });
            let (_, lr) = b.emit(Expr::Loop(Loop {
                n: n.into(),
                rev,
                init: vec![],
                lin_init: vec![dx],
                body,
            }));
            (vec![], lr)
        },
        &[],
        &[Value::F64(1.0)],
    )
}

#[test]
fn loop_with_linear_state_and_outputs() {
    // forward: i = 0: ly = 1, s = 2; i = 1: ly = 4, s = 4; i = 2: ly = 12, s = 8
    let (_, lr) = linear_loop(3, false);
    assert_eq!(lr, vec![Value::F64(8.0), f64s(&[3], &[1.0, 4.0, 12.0])]);
    // reversed: i = 2: ly = 3, s = 2; i = 1: ly = 4, s = 4; i = 0: ly = 4, s = 8
    let (_, lr) = linear_loop(3, true);
    assert_eq!(lr, vec![Value::F64(8.0), f64s(&[3], &[4.0, 4.0, 3.0])]);
    let (_, lr) = linear_loop(0, true);
    assert_eq!(lr, vec![Value::F64(1.0), f64s(&[0], &[])]);
}

#[test]
fn build_rank1_and_rank2_scalars() {
    let r = eval(
        |b| {
            let sq = b.build(&[4i64.into()], |b, ix| {
                vec![b.prim(Prim::Mul, &[ix[0].into(), ix[0].into()]).into()]
            });
            let t = b.build(&[2i64.into(), 3i64.into()], |b, ix| {
                let a = b.prim(Prim::Mul, &[ix[0].into(), 10i64.into()]);
                vec![b.prim(Prim::Add, &[a.into(), ix[1].into()]).into()]
            });
            vec![sq[0].into(), t[0].into()]
        },
        &[],
    );
    assert_eq!(
        r,
        vec![
            i64s(&[0, 1, 4, 9]),
            Value::i64s(&[2, 3], vec![0, 1, 2, 10, 11, 12])
        ]
    );
}

#[test]
fn build_array_elements_and_empty_spaces() {
    let rows = |n: i64, m: i64| {
        eval(
            |b| {
                let n = b.param("n", Ty::I64);
                let m = b.param("m", Ty::I64);
                let r = b.build(&[n.into()], |b, ix| {
                    let fi = b.prim(Prim::ToF64, &[ix[0].into()]);
                    let row = b.array(ArrayOp::Broadcast {
                        arr: fi.into(),
                        shape: vec![2i64.into()],
                        axes: vec![],
                    });
                    vec![row.into()]
                });
                let g = b.build(&[n.into(), m.into()], |_, ix| vec![ix[1].into()]);
                vec![r[0].into(), g[0].into()]
            },
            &[Value::I64(n), Value::I64(m)],
        )
    };
    assert_eq!(
        rows(3, 2),
        vec![
            f64s(&[3, 2], &[0.0, 0.0, 1.0, 1.0, 2.0, 2.0]),
            Value::i64s(&[3, 2], vec![0, 1, 0, 1, 0, 1])
        ]
    );
    // empty index space: the leading sizes are the build shape, the element sizes 0
    assert_eq!(
        rows(0, 2),
        vec![f64s(&[0, 0], &[]), Value::i64s(&[0, 2], Vec::<i64>::new())]
    );
    assert_eq!(rows(2, 0)[1], Value::i64s(&[2, 0], Vec::<i64>::new()));
}

#[test]
fn build_negative_size_is_an_error() {
    let e = eval_err(
        |b| {
            let n = b.param("n", Ty::I64);
            let r = b.build(&[n.into()], |_, ix| vec![ix[0].into()]);
            vec![r[0].into()]
        },
        &[Value::I64(-1)],
    );
    assert!(e.msg.contains("negative"), "{e}");
}

#[test]
fn map_over_two_arrays() {
    let body = |b: &mut FuncBuilder| {
        let x = b.param("x", Ty::f64s(2));
        let y = b.param("y", Ty::f64s(2));
        let r = b.map(&[x.into(), y.into()], |b, e| {
            let p = b.prim(Prim::Mul, &[e[0].into(), e[1].into()]);
            let q = b.prim(Prim::Gt, &[e[0].into(), e[1].into()]);
            vec![b.prim(Prim::Add, &[p.into(), 1.0.into()]).into(), q.into()]
        });
        vec![r[0].into(), r[1].into()]
    };
    let r = eval(
        body,
        &[m23(), f64s(&[2, 3], &[2.0, 2.0, 2.0, 0.0, 0.0, 10.0])],
    );
    assert_eq!(
        r,
        vec![
            f64s(&[2, 3], &[3.0, 5.0, 7.0, 1.0, 1.0, 61.0]),
            Value::bools(&[2, 3], vec![false, false, true, true, true, false])
        ]
    );
    let e = eval_err(body, &[m23(), f64s(&[3, 2], &[0.0; 6])]);
    assert!(e.msg.contains("map over arrays of shapes"), "{e}");
    let r = eval(body, &[f64s(&[0, 3], &[]), f64s(&[0, 3], &[])]);
    assert_eq!(r[0], f64s(&[0, 3], &[]));
}

#[test]
fn fold_elements_and_rows() {
    let r = eval(
        |b| {
            let x = b.param("x", Ty::f64s(1));
            let s = b.fold(&[0.0.into(), 0i64.into()], x.into(), |b, acc, e| {
                let sq = b.prim(Prim::Mul, &[e.into(), e.into()]);
                let a = b.prim(Prim::Add, &[acc[0].into(), sq.into()]);
                let c = b.prim(Prim::Add, &[acc[1].into(), 1i64.into()]);
                vec![a.into(), c.into()]
            });
            vec![s[0].into(), s[1].into()]
        },
        &[f64s(&[3], &[1.0, 2.0, 3.0])],
    );
    assert_eq!(r, vec![Value::F64(14.0), Value::I64(3)]);
    // over the rows of a matrix: acc = 10 acc + sum(row)
    let r = eval(
        |b| {
            let x = b.param("x", Ty::f64s(2));
            let s = b.fold(&[0.0.into()], x.into(), |b, acc, row| {
                let t = b.array(ArrayOp::Reduce {
                    op: ReduceOp::Sum,
                    arr: row.into(),
                    axis: None,
                });
                let a = b.prim(Prim::Mul, &[acc[0].into(), 10.0.into()]);
                vec![b.prim(Prim::Add, &[a.into(), t.into()]).into()]
            });
            vec![s[0].into()]
        },
        &[m23()],
    );
    assert_eq!(r, vec![Value::F64(75.0)]);
}

// ------------------------------------------------------------------ linear ops

#[test]
fn lin_zero_of_shape_trees() {
    let (_, lr) = eval_lin(
        |b| {
            let x = b.param("x", Ty::f64s(2));
            let n = b.param("n", Ty::I64);
            let st = ShapeTree::Tuple(vec![
                ShapeTree::Scalar,
                ShapeTree::Array(vec![Dim::Atom(n.into()), Dim::Of(x, 1)]),
            ]);
            (vec![], vec![b.lin(LinOp::Zero(st))])
        },
        &[m23(), Value::I64(2)],
        &[],
    );
    assert_eq!(
        lr,
        vec![Value::Tuple(vec![
            Value::F64(0.0),
            f64s(&[2, 3], &[0.0; 6])
        ])]
    );
}

#[test]
fn lin_add_neg_scale() {
    let a = f64s(&[2], &[1.0, 2.0]);
    let c = f64s(&[2], &[10.0, 20.0]);
    let add = lin1(|_, l| LinOp::Add(l[0], l[1]), &[], &[a.clone(), c.clone()]);
    assert_eq!(add, f64s(&[2], &[11.0, 22.0]));
    let t = Value::Tuple(vec![Value::F64(1.0), a.clone()]);
    let add = lin1(|_, l| LinOp::Add(l[0], l[1]), &[], &[t.clone(), t.clone()]);
    assert_eq!(
        add,
        Value::Tuple(vec![Value::F64(2.0), f64s(&[2], &[2.0, 4.0])])
    );
    assert_eq!(
        lin1(|_, l| LinOp::Neg(l[0]), &[], std::slice::from_ref(&a)),
        a.scale(-1.0)
    );
    let scale = |s: Value, x: Value| lin1(|p, l| LinOp::Scale { s: p[0], x: l[0] }, &[s], &[x]);
    assert_eq!(scale(Value::F64(3.0), a.clone()), f64s(&[2], &[3.0, 6.0]));
    assert_eq!(scale(c.clone(), Value::F64(0.5)), f64s(&[2], &[5.0, 10.0]));
    assert_eq!(scale(c, a), f64s(&[2], &[10.0, 40.0]));
    assert_eq!(scale(Value::F64(3.0), Value::F64(-2.0)), Value::F64(-6.0));
}

#[test]
fn lin_dup_drop_tuple_untuple() {
    let (_, lr) = eval_lin(
        |b| {
            let dx = b.lin_param("dx", Ty::f64s(1), fixed(&[2]));
            let dy = b.lin_param("dy", Ty::F64, ShapeTree::Scalar);
            let (_, d) = b.emit(Expr::Lin(LinOp::Dup(dx)));
            let (_, none) = b.emit(Expr::Lin(LinOp::Drop(dy)));
            assert!(none.is_empty());
            let t = b.lin(LinOp::Tuple(vec![d[0], d[1]]));
            let (_, parts) = b.emit(Expr::Lin(LinOp::Untuple(t)));
            (vec![], vec![parts[1], t])
        },
        &[],
        &[f64s(&[2], &[1.0, 2.0]), Value::F64(5.0)],
    );
    let a = f64s(&[2], &[1.0, 2.0]);
    assert_eq!(lr, vec![a.clone(), Value::Tuple(vec![a.clone(), a])]);
}

#[test]
fn lin_index_update_gather_scatter() {
    let x = m23();
    let ix = lin1(
        |_, l| LinOp::Index {
            x: l[0],
            idx: vec![Atom::I64(1)],
        },
        &[],
        std::slice::from_ref(&x),
    );
    assert_eq!(ix, f64s(&[3], &[4.0, 5.0, 6.0]));
    let up = lin1(
        |_, l| LinOp::Update {
            x: l[0],
            idx: vec![Atom::I64(0), Atom::I64(2)],
            val: l[1],
            add: true,
        },
        &[],
        &[x.clone(), Value::F64(0.5)],
    );
    assert_eq!(up, f64s(&[2, 3], &[1.0, 2.0, 3.5, 4.0, 5.0, 6.0]));
    let g = lin1(
        |p, l| LinOp::Gather { x: l[0], idx: p[0] },
        &[i64s(&[1, 0, 1])],
        &[f64s(&[2], &[7.0, 8.0])],
    );
    assert_eq!(g, f64s(&[3], &[8.0, 7.0, 8.0]));
    let s = lin1(
        |p, l| LinOp::ScatterAdd {
            len: Atom::I64(2),
            idx: p[0],
            x: l[0],
        },
        &[i64s(&[1, 0, 1])],
        &[f64s(&[3], &[1.0, 2.0, 3.0])],
    );
    assert_eq!(s, f64s(&[2], &[2.0, 4.0]));
}

#[test]
fn lin_sum_broadcast_transpose_scan() {
    let sum = |axis| lin1(|_, l| LinOp::Sum { x: l[0], axis }, &[], &[m23()]);
    assert_eq!(sum(None), Value::F64(21.0));
    assert_eq!(sum(Some(0)), f64s(&[3], &[5.0, 7.0, 9.0]));
    assert_eq!(sum(Some(1)), f64s(&[2], &[6.0, 15.0]));
    let bc = lin1(
        |_, l| LinOp::Broadcast {
            x: l[0],
            shape: vec![Atom::I64(2), Atom::I64(2)],
            axes: vec![0],
        },
        &[],
        &[f64s(&[2], &[1.0, 2.0])],
    );
    assert_eq!(bc, f64s(&[2, 2], &[1.0, 1.0, 2.0, 2.0]));
    let tr = lin1(|_, l| LinOp::Transpose(l[0]), &[], &[m23()]);
    assert_eq!(tr, f64s(&[3, 2], &[1.0, 4.0, 2.0, 5.0, 3.0, 6.0]));
    let sc = |reverse| lin1(|_, l| LinOp::Scan { x: l[0], reverse }, &[], &[m23()]);
    assert_eq!(sc(false), f64s(&[2, 3], &[1.0, 2.0, 3.0, 5.0, 7.0, 9.0]));
    assert_eq!(sc(true), f64s(&[2, 3], &[5.0, 7.0, 9.0, 4.0, 5.0, 6.0]));
}

#[test]
fn lin_matmul_and_outer_both_sides() {
    let mm = |a: Value, x: Value, lin_left| {
        lin1(
            |p, l| LinOp::MatMul {
                a: p[0],
                x: l[0],
                lin_left,
            },
            &[a],
            &[x],
        )
    };
    let v3 = f64s(&[3], &[1.0, 0.0, 2.0]);
    let v2 = f64s(&[2], &[1.0, -1.0]);
    assert_eq!(mm(m23(), v3.clone(), false), f64s(&[2], &[7.0, 16.0]));
    assert_eq!(mm(m23(), v2.clone(), true), f64s(&[3], &[-3.0, -3.0, -3.0]));
    assert_eq!(mm(v3.clone(), v3.clone(), true), Value::F64(5.0));
    let outer = |b: Value, x: Value, lin_left| {
        lin1(
            |p, l| LinOp::Outer {
                x: l[0],
                b: p[0],
                lin_left,
            },
            &[b],
            &[x],
        )
    };
    // lin_left: out[i, j] = x[i] * b[j]
    assert_eq!(
        outer(v3.clone(), v2.clone(), true),
        f64s(&[2, 3], &[1.0, 0.0, 2.0, -1.0, 0.0, -2.0])
    );
    // otherwise: out[i, j] = b[i] * x[j]
    assert_eq!(
        outer(v3, v2, false),
        f64s(&[3, 2], &[1.0, -1.0, 0.0, 0.0, 2.0, -2.0])
    );
}

#[test]
fn linear_map_and_build_capture() {
    let (r, lr) = eval_lin(
        |b| {
            let x = b.param("x", Ty::f64s(1));
            let dx = b.lin_param("dx", Ty::f64s(1), ShapeTree::Array(vec![Dim::Of(x, 0)]));
            let dc = b.lin_param("dc", Ty::F64, ShapeTree::Scalar);
            // map(|e ; de| (e * e ; e * de), x ; dx)
            let body = b.lambda(&[Ty::F64], &[Ty::F64], |b, p, lp| {
                let sq = b.prim(Prim::Mul, &[p[0].into(), p[0].into()]);
                let d = b.lin(LinOp::Scale {
                    s: p[0].into(),
                    x: lp[0],
                });
                (vec![sq.into()], vec![d])
            });
            let (m, lm) = b.emit(Expr::Map(Map {
                arrs: vec![x.into()],
                lin_arrs: vec![dx],
                body,
            }));
            // build([2], |i| ( ; (i + 1) * dc)) reading the captured dc
            let body = b.lambda(&[Ty::I64], &[], |b, p, _| {
                let i1 = b.prim(Prim::Add, &[p[0].into(), 1i64.into()]);
                let f = b.prim(Prim::ToF64, &[i1.into()]);
                let d = b.lin(LinOp::Scale { s: f.into(), x: dc });
                (vec![], vec![d])
            });
            let (_, lb) = b.emit(Expr::Build(Build {
                shape: vec![2i64.into()],
                body,
            }));
            (vec![m[0].into()], vec![lm[0], lb[0]])
        },
        &[f64s(&[3], &[1.0, 2.0, 3.0])],
        &[f64s(&[3], &[1.0, 1.0, 0.5]), Value::F64(0.5)],
    );
    assert_eq!(r, vec![f64s(&[3], &[1.0, 4.0, 9.0])]);
    assert_eq!(
        lr,
        vec![f64s(&[3], &[1.0, 2.0, 1.5]), f64s(&[2], &[0.5, 1.0])]
    );
}

/// `f(c ; dx) = if c { ( ; dx) } else { ( ; -dx) }` with the declared linear
/// result shape `[n]`.
fn linear_if(n: i64, c: bool) -> Result<Vec<Value>, EvalError> {
    let prog = program(Box::new(move |b: &mut FuncBuilder| {
        let c = b.param("c", Ty::BOOL);
        let dx = b.lin_param("dx", Ty::f64s(1), fixed(&[2]));
        let then_ = b.block(|_| (vec![], vec![dx]));
        let else_ = b.block(|b| (vec![], vec![b.lin(LinOp::Neg(dx))]));
        let (_, lr) = b.emit(Expr::If(If {
            cond: c.into(),
            then_,
            else_,
            lin_shapes: vec![fixed(&[n as usize])],
        }));
        (vec![], lr)
    }));
    run(&prog, "f", &[Value::Bool(c)], &[f64s(&[2], &[1.0, -2.0])]).map(|(_, lr)| lr)
}

#[test]
fn if_with_linear_results_checks_declared_shapes() {
    assert_eq!(linear_if(2, true).unwrap(), vec![f64s(&[2], &[1.0, -2.0])]);
    assert_eq!(linear_if(2, false).unwrap(), vec![f64s(&[2], &[-1.0, 2.0])]);
    let e = linear_if(3, true).unwrap_err();
    assert!(e.msg.contains("declared shape"), "{e}");
}

// ------------------------------------------------------------------ errors

#[test]
fn bad_calls_are_errors() {
    let prog = program(Box::new(|b: &mut FuncBuilder| {
        let x = b.param("x", Ty::F64);
        (vec![x.into()], vec![])
    }));
    assert!(run(&prog, "nope", &[], &[])
        .unwrap_err()
        .msg
        .contains("no function"));
    let e = run(&prog, "f", &[], &[]).unwrap_err();
    assert!(e.msg.contains("arguments"), "{e}");
    let e = run(&prog, "f", &[Value::I64(1)], &[]).unwrap_err();
    assert!(e.msg.contains("type"), "{e}");
    let bad = Value::Array(ad_core_ir::interp::ArrayValue {
        shape: vec![3],
        data: ad_core_ir::interp::ArrayData::F64(vec![1.0]),
    });
    assert!(run(&prog, "f", &[bad], &[]).is_err());
}

#[test]
fn unbound_variable_is_an_error() {
    let mut prog = program(Box::new(|b: &mut FuncBuilder| {
        let x = b.param("x", Ty::F64);
        let y = b.prim(Prim::Neg, &[x.into()]);
        (vec![y.into()], vec![])
    }));
    // drop the statement binding y
    prog.funcs[0].body.stmts.clear();
    let e = run(&prog, "f", &[Value::F64(1.0)], &[]).unwrap_err();
    assert!(e.msg.contains("unbound"), "{e}");
}

#[test]
fn recursion_is_an_error_not_a_stack_overflow() {
    let mut prog = Program::default();
    let f = {
        let mut b = FuncBuilder::new(&prog, "f");
        let x = b.param("x", Ty::F64);
        b.finish(vec![x.into()], vec![])
    };
    prog.insert(f);
    let f = {
        let mut b = FuncBuilder::new(&prog, "f");
        let x = b.param("x", Ty::F64);
        let r = b.call("f", &[x.into()]);
        b.finish(vec![r[0].into()], vec![])
    };
    prog.insert(f);
    let e = run(&prog, "f", &[Value::F64(1.0)], &[]).unwrap_err();
    assert!(e.msg.contains("recursive"), "{e}");
}

// ------------------------------------------------------------------ cost model

#[test]
fn run_counted_small_loop() {
    let mut prog = Program::default();
    let f = {
        let mut b = FuncBuilder::new(&prog, "f");
        let x = b.param("x", Ty::f64s(1));
        let n = b.shape(x.into(), 0); // 1
                                      // 1 + 3 iterations * (index 1 + mul 1 + add 1) + 3 stored outputs
        let (st, ys) = b.loop_(n.into(), false, &[0.0.into()], |b, i, s| {
            let e = b.index(x.into(), &[i.into()]);
            let e2 = b.prim(Prim::Mul, &[e.into(), e.into()]);
            let s2 = b.prim(Prim::Add, &[s[0].into(), e2.into()]);
            (vec![s2.into()], vec![e2.into()])
        });
        // the stacked [3] array summed: 3
        let t = b.array(ArrayOp::Reduce {
            op: ReduceOp::Sum,
            arr: ys[0].into(),
            axis: None,
        });
        // 3 x 3 outer-like broadcast: 9
        let m = b.array(ArrayOp::Broadcast {
            arr: ys[0].into(),
            shape: vec![n.into(), n.into()],
            axes: vec![0],
        });
        // mat·vec: 3·3·1 = 9
        let mv = b.array(ArrayOp::MatMul {
            a: m.into(),
            b: x.into(),
        });
        b.finish(vec![st[0].into(), t.into(), mv.into()], vec![])
    };
    prog.insert(f);
    let x = f64s(&[3], &[1.0, 2.0, 3.0]);
    let ((r, _), work) = run_counted(&prog, "f", &[x], &[]).unwrap();
    assert_eq!(r[0], Value::F64(14.0));
    assert_eq!(r[1], Value::F64(14.0));
    assert_eq!(r[2], f64s(&[3], &[6.0, 24.0, 54.0]));
    assert_eq!(work, 1 + (1 + 3 * 3 + 3) + 3 + 9 + 9);
}

#[test]
fn run_counted_control_and_linear() {
    let mut prog = Program::default();
    let g = {
        let mut b = FuncBuilder::new(&prog, "g");
        let x = b.param("x", Ty::F64);
        let y = b.prim(Prim::Sin, &[x.into()]);
        let z = b.prim(Prim::Cos, &[y.into()]);
        b.finish(vec![z.into()], vec![])
    };
    prog.insert(g);
    let f = {
        let mut b = FuncBuilder::new(&prog, "f");
        let c = b.param("c", Ty::BOOL);
        let dx = b.lin_param("dx", Ty::f64s(1), fixed(&[4]));
        // call: 1 + 2
        let r = b.call("g", &[1.0.into()]);
        // if: 1 + 1 (then) or 1 + 0 (else, counted as the if alone)
        let v = b.if_(
            c.into(),
            |b| vec![b.prim(Prim::Neg, &[r[0].into()]).into()],
            |_| vec![r[0].into()],
        );
        // a 2x2 build whose body has no statement: 1 + 4 stores; a map over
        // it: 1 + 4 bodies of 1 + 4 stores
        let m = b.build(&[2i64.into(), 2i64.into()], |_, ix| vec![ix[0].into()]);
        let mm = b.map(&[m[0].into()], |b, e| {
            vec![b.prim(Prim::Add, &[e[0].into(), 1i64.into()]).into()]
        });
        // dup 4, scale 4, add 4, drop 0
        let (_, d) = b.emit(Expr::Lin(LinOp::Dup(dx)));
        let s = b.lin(LinOp::Scale {
            s: 2.0.into(),
            x: d[0],
        });
        let a = b.lin(LinOp::Add(s, d[1]));
        b.emit(Expr::Lin(LinOp::Drop(a)));
        // zero of 4
        let z = b.lin(LinOp::Zero(fixed(&[4])));
        b.finish(vec![v[0].into(), mm[0].into()], vec![z])
    };
    prog.insert(f);
    let dx = f64s(&[4], &[1.0; 4]);
    let work = |c| {
        run_counted(&prog, "f", &[Value::Bool(c)], std::slice::from_ref(&dx))
            .unwrap()
            .1
    };
    let common = 3 + (1 + 4) + (1 + 4 + 4) + 4 + 4 + 4 + 4;
    assert_eq!(work(true), common + 2);
    assert_eq!(work(false), common + 1);
}

// ------------------------------------------------------------------ value helpers

#[test]
fn value_helpers() {
    let a = Value::Tuple(vec![Value::F64(1.0), f64s(&[2], &[2.0, 3.0])]);
    let b = Value::Tuple(vec![Value::F64(-1.0), f64s(&[2], &[0.5, 1.0])]);
    assert_eq!(
        a.zeros_like(),
        Value::Tuple(vec![Value::F64(0.0), f64s(&[2], &[0.0, 0.0])])
    );
    assert_eq!(
        a.add(&b),
        Value::Tuple(vec![Value::F64(0.0), f64s(&[2], &[2.5, 4.0])])
    );
    assert_eq!(
        a.scale(2.0),
        Value::Tuple(vec![Value::F64(2.0), f64s(&[2], &[4.0, 6.0])])
    );
    assert_eq!(dot(&a, &b), -1.0 + 1.0 + 3.0);
    assert_eq!(a.max_abs_diff(&b), 2.0);
    assert_eq!(m23().shape(), Some(&[2usize, 3][..]));
    assert_eq!(Value::F64(1.0).shape(), Some(&[][..]));
    assert_eq!(Value::F64(1.5).as_f64(), Some(1.5));
    assert_eq!(Value::I64(2).as_i64(), Some(2));
    assert_eq!(Value::Bool(true).as_bool(), Some(true));
    assert_eq!(Value::I64(2).as_f64(), None);
    assert_eq!(m23().to_string(), "[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]");
}

#[test]
fn max_abs_diff_and_bits_eq_nan_rules() {
    let nan = Value::F64(f64::NAN);
    assert_eq!(nan.max_abs_diff(&nan), 0.0);
    assert_eq!(nan.max_abs_diff(&Value::F64(1.0)), f64::INFINITY);
    let inf = Value::F64(f64::INFINITY);
    assert_eq!(inf.max_abs_diff(&inf), 0.0);
    assert_eq!(
        inf.max_abs_diff(&Value::F64(f64::NEG_INFINITY)),
        f64::INFINITY
    );
    assert_eq!(m23().max_abs_diff(&m23().scale(1.5)), 3.0);
    assert_eq!(m23().max_abs_diff(&f64s(&[3, 2], &[1.0; 6])), f64::INFINITY);
    assert_eq!(Value::I64(1).max_abs_diff(&Value::F64(1.0)), f64::INFINITY);
    assert!(nan.bits_eq(&nan));
    assert!(!Value::F64(0.0).bits_eq(&Value::F64(-0.0)));
    assert!(m23().bits_eq(&m23()));
    assert!(!m23().bits_eq(&m23().scale(-1.0)));
    assert!(Value::i64s(&[1], vec![3]).bits_eq(&i64s(&[3])));
}

#[test]
fn value_constructor_shape_type() {
    let v = Value::f64s(&[2, 2], vec![1.0, 2.0, 3.0, 4.0]);
    assert!(v.has_type(&Ty::f64s(2)));
    assert!(!v.has_type(&Ty::array(Scalar::I64, 2)));
    assert_eq!(v.num_scalars(), 4);
}

// ------------------------------------------------------------------ more control and errors

/// `g(x ; dx) = (x * x ; x * dx)` and `f(x ; dx) = g(x ; dx)` with the call's
/// declared linear result shape `shape(x, 0)` or `n`.
fn linear_call(declared: Option<i64>) -> Result<(Vec<Value>, Vec<Value>), EvalError> {
    let mut prog = Program::default();
    let g = {
        let mut b = FuncBuilder::new(&prog, "g");
        let x = b.param("x", Ty::f64s(1));
        let dx = b.lin_param("dx", Ty::f64s(1), ShapeTree::Array(vec![Dim::Of(x, 0)]));
        let sq = b.map(&[x.into()], |b, e| {
            vec![b.prim(Prim::Mul, &[e[0].into(), e[0].into()]).into()]
        });
        let d = b.lin(LinOp::Scale { s: x.into(), x: dx });
        b.finish(vec![sq[0].into()], vec![d])
    };
    prog.insert(g);
    let f = {
        let mut b = FuncBuilder::new(&prog, "f");
        let x = b.param("x", Ty::f64s(1));
        let dx = b.lin_param("dx", Ty::f64s(1), ShapeTree::Array(vec![Dim::Of(x, 0)]));
        let dim = match declared {
            None => Dim::Of(x, 0),
            Some(n) => Dim::Atom(Atom::I64(n)),
        };
        let (r, lr) = b.emit(Expr::Call(Call {
            func: "g".into(),
            args: vec![x.into()],
            lin_args: vec![dx],
            lin_shapes: vec![ShapeTree::Array(vec![dim])],
        }));
        b.finish(vec![r[0].into()], lr)
    };
    prog.insert(f);
    let x = f64s(&[2], &[2.0, 3.0]);
    run(&prog, "f", &[x], &[f64s(&[2], &[1.0, -1.0])])
}

#[test]
fn call_with_linear_arguments_and_results() {
    let (r, lr) = linear_call(None).unwrap();
    assert_eq!(r, vec![f64s(&[2], &[4.0, 9.0])]);
    assert_eq!(lr, vec![f64s(&[2], &[2.0, -3.0])]);
    let e = linear_call(Some(5)).unwrap_err();
    assert!(e.msg.contains("declared shape"), "{e}");
}

#[test]
fn linear_argument_of_wrong_shape_is_an_error() {
    let prog = program(Box::new(|b: &mut FuncBuilder| {
        let dx = b.lin_param("dx", Ty::f64s(1), fixed(&[3]));
        (vec![], vec![dx])
    }));
    assert!(run(&prog, "f", &[], &[f64s(&[3], &[0.0; 3])]).is_ok());
    let e = run(&prog, "f", &[], &[f64s(&[2], &[0.0; 2])]).unwrap_err();
    assert!(e.msg.contains("declared shape"), "{e}");
}

/// A loop whose body indexes `x[i + 1]` (out of range at the last iteration),
/// the index statement located at `inner`, the loop at `outer`.
fn failing_loop(inner: Option<SrcId>, outer: Option<SrcId>) -> EvalError {
    eval_err(
        |b| {
            let x = b.param("x", Ty::f64s(1));
            let body = b.lambda(&[Ty::I64, Ty::F64], &[], |b, ps, _| {
                let i1 = b.prim(Prim::Add, &[ps[0].into(), 1i64.into()]);
                b.set_src(inner);
                let e = b.index(x.into(), &[i1.into()]);
                b.set_src(None);
                let s = b.prim(Prim::Add, &[ps[1].into(), e.into()]);
                (vec![s.into()], vec![])
            });
            b.set_src(outer);
            let (r, _) = b.emit(Expr::Loop(Loop {
                n: 3i64.into(),
                rev: false,
                init: vec![0.0.into()],
                lin_init: vec![],
                body,
            }));
            vec![r[0].into()]
        },
        &[f64s(&[3], &[1.0, 2.0, 3.0])],
    )
}

#[test]
fn errors_carry_the_innermost_source_id() {
    let e = failing_loop(Some(SrcId(1)), Some(SrcId(2)));
    assert!(e.msg.contains("out of range"), "{e}");
    assert_eq!(e.src, Some(SrcId(1)));
    assert_eq!(failing_loop(None, Some(SrcId(2))).src, Some(SrcId(2)));
    assert_eq!(failing_loop(None, None).src, None);
    assert_eq!(
        EvalError {
            msg: "boom".into(),
            src: Some(SrcId(3))
        }
        .to_string(),
        "boom (source #3)"
    );
}

#[test]
fn huge_sizes_are_errors_not_aborts() {
    let e = array1_err(
        |ps| ArrayOp::Broadcast {
            arr: Atom::F64(0.0),
            shape: vec![ps[0], ps[0]],
            axes: vec![],
        },
        &[Value::I64(1 << 40)],
    );
    assert!(e.msg.contains("too large"), "{e}");
    let e = eval_err(
        |b| {
            let n = b.param("n", Ty::I64);
            let r = b.build(&[n.into(), n.into()], |_, ix| vec![ix[0].into()]);
            vec![r[0].into()]
        },
        &[Value::I64(1 << 33)],
    );
    assert!(e.msg.contains("too large"), "{e}");
}

#[test]
fn non_bool_condition_and_non_array_operands_are_errors() {
    // the builder types programs, so corrupt one after building
    let mut prog = program(Box::new(|b: &mut FuncBuilder| {
        let c = b.param("c", Ty::BOOL);
        let r = b.if_(c.into(), |_| vec![1.0.into()], |_| vec![2.0.into()]);
        (vec![r[0].into()], vec![])
    }));
    if let Expr::If(i) = &mut prog.funcs[0].body.stmts[0].expr {
        i.cond = Atom::F64(1.0);
    }
    let e = run(&prog, "f", &[Value::Bool(true)], &[]).unwrap_err();
    assert!(e.msg.contains("bool"), "{e}");
    let mut prog = program(Box::new(|b: &mut FuncBuilder| {
        let x = b.param("x", Ty::f64s(1));
        let e = b.index(x.into(), &[0i64.into()]);
        (vec![e.into()], vec![])
    }));
    if let Expr::Array(ArrayOp::Index { arr, .. }) = &mut prog.funcs[0].body.stmts[0].expr {
        *arr = Atom::F64(1.0);
    }
    let e = run(&prog, "f", &[f64s(&[1], &[1.0])], &[]).unwrap_err();
    assert!(e.msg.contains("must be an array"), "{e}");
}

/// `ltake x[idx]` binds `(x[idx], x with [idx] = 0)`; with `keep`,
/// `(x[idx], x)`; its work is the element's size.
#[test]
fn lin_take_reads_and_clears() {
    let take = |idx: &[i64], zero: bool| {
        let prog = program(Box::new(move |b: &mut FuncBuilder| {
            let d = b.lin_param("d", ty_of(&m23()), shape_tree(&m23()));
            let (_, l) = b.emit(Expr::Lin(LinOp::Take {
                x: d,
                idx: idx.iter().map(|i| Atom::I64(*i)).collect(),
                zero,
            }));
            (vec![], l)
        }));
        let ((_, lr), work) = run_counted(&prog, "f", &[], &[m23()]).unwrap();
        (lr, work)
    };
    let (r, w) = take(&[1, 2], true);
    assert_eq!(
        r,
        vec![
            Value::F64(6.0),
            f64s(&[2, 3], &[1.0, 2.0, 3.0, 4.0, 5.0, 0.0])
        ]
    );
    assert_eq!(w, 1);
    let (r, w) = take(&[0], true);
    assert_eq!(
        r,
        vec![
            f64s(&[3], &[1.0, 2.0, 3.0]),
            f64s(&[2, 3], &[0.0, 0.0, 0.0, 4.0, 5.0, 6.0])
        ]
    );
    assert_eq!(w, 3);
    let (r, _) = take(&[0, 1], false);
    assert_eq!(r, vec![Value::F64(2.0), m23()]);
}
