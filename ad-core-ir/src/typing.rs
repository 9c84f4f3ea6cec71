//! Type rules: the result types of every expression from its operand types.
//!
//! One function, [`expr_types`], states the rule of every construct; the builder
//! uses it to type the variables it creates and the checker uses it to verify
//! every statement. Linearity is not checked here (see [`crate::check`]).

use crate::ir::*;
use crate::types::{Scalar, Ty};

/// Result of typing one expression: `(non-linear result types, linear result types)`.
pub type ExprTys = (Vec<Ty>, Vec<Ty>);

/// The type of an atom.
pub fn atom_ty(a: &Atom, vars: &VarTable) -> Ty {
    match a {
        Atom::Var(v) => vars.ty(*v).clone(),
        Atom::F64(_) => Ty::F64,
        Atom::I64(_) => Ty::I64,
        Atom::Bool(_) => Ty::BOOL,
    }
}

/// Types of a block's results: `(non-linear, linear)`.
pub fn block_tys(b: &Block, vars: &VarTable) -> ExprTys {
    (
        b.results.iter().map(|a| atom_ty(a, vars)).collect(),
        b.lin_results.iter().map(|v| vars.ty(*v).clone()).collect(),
    )
}

/// The signature of a function: `(params, lin_params, results, lin_results)`.
pub fn func_sig(f: &Func) -> (Vec<Ty>, Vec<Ty>, Vec<Ty>, Vec<Ty>) {
    let (r, lr) = block_tys(&f.body, &f.vars);
    (f.param_tys(), f.lin_param_tys(), r, lr)
}

/// The type of a value of the given shape tree (always a linear-space type);
/// an error for an array shape with no sizes.
pub fn shape_ty(s: &ShapeTree) -> Result<Ty, String> {
    match s {
        ShapeTree::Scalar => Ok(Ty::F64),
        ShapeTree::Array(d) if d.is_empty() => Err("an array shape needs at least one size".into()),
        ShapeTree::Array(d) => Ok(Ty::f64s(d.len())),
        ShapeTree::Tuple(ts) => Ok(Ty::Tuple(
            ts.iter().map(shape_ty).collect::<Result<_, _>>()?,
        )),
    }
}

fn want(cond: bool, msg: impl FnOnce() -> String) -> Result<(), String> {
    if cond {
        Ok(())
    } else {
        Err(msg())
    }
}

fn want_i64(t: &Ty, what: &str) -> Result<(), String> {
    want(t.is_scalar(Scalar::I64), || {
        format!("{what} must be i64, found {t}")
    })
}

fn want_idx_array(t: &Ty, what: &str) -> Result<(), String> {
    want(*t == Ty::array(Scalar::I64, 1), || {
        format!("{what} must be an [i64] index array, found {t}")
    })
}

fn array_parts(t: &Ty, what: &str) -> Result<(Scalar, usize), String> {
    match t {
        Ty::Array { elem, rank } => Ok((*elem, *rank)),
        _ => Err(format!("{what} must be an array, found {t}")),
    }
}

fn index_ty(arr: &Ty, idx: &[Ty], what: &str) -> Result<Ty, String> {
    let (_, rank) = array_parts(arr, what)?;
    want(!idx.is_empty() && idx.len() <= rank, || {
        format!("{what}: {} indices into an array of rank {rank}", idx.len())
    })?;
    for t in idx {
        want_i64(t, "an index")?;
    }
    Ok(arr.unstacked(idx.len()).expect("rank checked"))
}

fn reduce_ty(arr: &Ty, axis: Option<usize>, elem_out: Option<Scalar>) -> Result<Ty, String> {
    let (elem, rank) = array_parts(arr, "the reduced operand")?;
    let elem = elem_out.unwrap_or(elem);
    match axis {
        None => Ok(Ty::Scalar(elem)),
        Some(a) => {
            want(a < rank, || {
                format!("reduction axis {a} out of range for rank {rank}")
            })?;
            Ok(if rank == 1 {
                Ty::Scalar(elem)
            } else {
                Ty::array(elem, rank - 1)
            })
        }
    }
}

fn matmul_ty(a: &Ty, b: &Ty) -> Result<Ty, String> {
    let (ea, ra) = array_parts(a, "matmul's left operand")?;
    let (eb, rb) = array_parts(b, "matmul's right operand")?;
    want(ea == Scalar::F64 && eb == Scalar::F64, || {
        "matmul operands must be f64 arrays".to_string()
    })?;
    match (ra, rb) {
        (1, 1) => Ok(Ty::F64),
        (2, 1) | (1, 2) => Ok(Ty::f64s(1)),
        (2, 2) => Ok(Ty::f64s(2)),
        _ => Err(format!("matmul of ranks {ra} and {rb} is not supported")),
    }
}

fn broadcast_ty(x: &Ty, shape: &[Ty], axes: &[usize]) -> Result<Ty, String> {
    let (elem, rank) = match x {
        Ty::Scalar(s) => (*s, 0),
        Ty::Array { elem, rank } => (*elem, *rank),
        Ty::Tuple(_) | Ty::Opaque(_) => return Err(format!("cannot broadcast {x}")),
    };
    want(!shape.is_empty(), || {
        "broadcast to an empty shape".to_string()
    })?;
    for t in shape {
        want_i64(t, "a broadcast size")?;
    }
    want(axes.len() == rank, || {
        format!(
            "broadcast lists {} axes for an operand of rank {rank}",
            axes.len()
        )
    })?;
    want(
        axes.windows(2).all(|w| w[0] < w[1]) && axes.iter().all(|a| *a < shape.len()),
        || {
            format!(
                "broadcast axes {axes:?} must increase and be below {}",
                shape.len()
            )
        },
    )?;
    Ok(Ty::array(elem, shape.len()))
}

fn scale_ty(s: &Ty, x: &Ty) -> Result<Ty, String> {
    let ok = |t: &Ty| matches!(t.elem(), Some(Scalar::F64));
    want(ok(s) && ok(x), || {
        format!("scale of {x} by {s}: both must be f64")
    })?;
    match (s.rank(), x.rank()) {
        (Some(0), _) => Ok(x.clone()),
        (_, Some(0)) => Ok(s.clone()),
        (Some(a), Some(b)) if a == b => Ok(x.clone()),
        _ => Err(format!("scale of {x} by {s}: ranks differ")),
    }
}

/// The type rule of a scalar primitive.
pub fn prim_ty(p: Prim, args: &[Ty]) -> Result<Ty, String> {
    want(args.len() == p.arity(), || {
        format!(
            "{} takes {} operands, found {}",
            p.name(),
            p.arity(),
            args.len()
        )
    })?;
    let same = || {
        want(args.iter().all(|t| *t == args[0]), || {
            let ts: Vec<String> = args.iter().map(|t| t.to_string()).collect();
            format!(
                "{} needs operands of one type, found {}",
                p.name(),
                ts.join(", ")
            )
        })
    };
    let num = |t: &Ty| t.is_scalar(Scalar::F64) || t.is_scalar(Scalar::I64);
    let float = |i: usize| {
        want(args[i].is_scalar(Scalar::F64), || {
            format!("{} needs f64, found {}", p.name(), args[i])
        })
    };
    match p {
        Prim::Add
        | Prim::Sub
        | Prim::Mul
        | Prim::Div
        | Prim::Rem
        | Prim::Max
        | Prim::Min
        | Prim::Neg
        | Prim::Abs => {
            same()?;
            want(num(&args[0]), || {
                format!("{} needs f64 or i64, found {}", p.name(), args[0])
            })?;
            Ok(args[0].clone())
        }
        Prim::Sin
        | Prim::Cos
        | Prim::Tan
        | Prim::Exp
        | Prim::Ln
        | Prim::Log2
        | Prim::Log10
        | Prim::Sqrt
        | Prim::Tanh
        | Prim::Sinh
        | Prim::Cosh
        | Prim::Atan
        | Prim::Asin
        | Prim::Acos
        | Prim::Asinh
        | Prim::Acosh
        | Prim::Atanh
        | Prim::ExpM1
        | Prim::Ln1p => {
            float(0)?;
            Ok(Ty::F64)
        }
        Prim::Powf | Prim::Atan2 | Prim::Hypot | Prim::Copysign => {
            float(0)?;
            float(1)?;
            Ok(Ty::F64)
        }
        Prim::Powi => {
            float(0)?;
            want_i64(&args[1], "powi's exponent")?;
            Ok(Ty::F64)
        }
        Prim::Lt | Prim::Le | Prim::Gt | Prim::Ge => {
            same()?;
            want(num(&args[0]), || {
                format!("{} needs f64 or i64, found {}", p.name(), args[0])
            })?;
            Ok(Ty::BOOL)
        }
        Prim::Eq | Prim::Ne => {
            same()?;
            want(args[0].rank() == Some(0), || {
                format!("{} needs scalars", p.name())
            })?;
            Ok(Ty::BOOL)
        }
        Prim::And | Prim::Or | Prim::Not => {
            want(args.iter().all(|t| *t == Ty::BOOL), || {
                format!("{} needs bool operands", p.name())
            })?;
            Ok(Ty::BOOL)
        }
        Prim::ToF64 => {
            want_i64(&args[0], "to_f64's operand")?;
            Ok(Ty::F64)
        }
        Prim::ToI64 | Prim::FloatToInt(_) => {
            float(0)?;
            Ok(Ty::I64)
        }
        Prim::Exp2
        | Prim::Cbrt
        | Prim::Floor
        | Prim::Ceil
        | Prim::Round
        | Prim::Trunc
        | Prim::Signum => {
            float(0)?;
            Ok(Ty::F64)
        }
        Prim::MulAdd | Prim::Clamp => {
            float(0)?;
            float(1)?;
            float(2)?;
            Ok(Ty::F64)
        }
        Prim::ULt | Prim::ULe | Prim::UGt | Prim::UGe => {
            want_i64(&args[0], "an unsigned comparison's operand")?;
            want_i64(&args[1], "an unsigned comparison's operand")?;
            Ok(Ty::BOOL)
        }
        Prim::IntArith(..) | Prim::UMax | Prim::UMin => {
            want_i64(&args[0], "integer arithmetic's operand")?;
            want_i64(&args[1], "integer arithmetic's operand")?;
            Ok(Ty::I64)
        }
        Prim::IntCast(_) => {
            want_i64(&args[0], "an integer cast's operand")?;
            Ok(Ty::I64)
        }
        Prim::U64ToF64 => {
            want_i64(&args[0], "u64_to_f64's operand")?;
            Ok(Ty::F64)
        }
        Prim::Select => {
            want(args[0] == Ty::BOOL, || {
                format!("select's condition must be bool, found {}", args[0])
            })?;
            want(args[1] == args[2] && args[1].rank() == Some(0), || {
                format!(
                    "select's branches must be scalars of one type, found {} and {}",
                    args[1], args[2]
                )
            })?;
            Ok(args[1].clone())
        }
    }
}

/// The type rule of a non-linear array operation. `ArgReduce` over the whole
/// array returns several results, so this returns a list.
pub fn array_op_tys(op: &ArrayOp, vars: &VarTable) -> Result<Vec<Ty>, String> {
    let t = |a: &Atom| atom_ty(a, vars);
    let ts = |xs: &[Atom]| xs.iter().map(|a| atom_ty(a, vars)).collect::<Vec<_>>();
    let one = |r: Result<Ty, String>| r.map(|t| vec![t]);
    match op {
        ArrayOp::Index { arr, idx } => one(index_ty(&t(arr), &ts(idx), "index")),
        ArrayOp::Update { arr, idx, val, add } => {
            let at = t(arr);
            let et = index_ty(&at, &ts(idx), "update")?;
            want(t(val) == et, || {
                format!("update writes {} into elements of {et}", t(val))
            })?;
            want(
                !add || matches!(at.elem(), Some(Scalar::F64 | Scalar::I64)),
                || "+= update needs a numeric array".to_string(),
            )?;
            Ok(vec![at])
        }
        ArrayOp::Gather { arr, idx } => {
            array_parts(&t(arr), "gather's source")?;
            want_idx_array(&t(idx), "gather's index")?;
            Ok(vec![t(arr)])
        }
        ArrayOp::ScatterAdd { len, idx, vals } => {
            want_i64(&t(len), "scatter_add's length")?;
            want_idx_array(&t(idx), "scatter_add's index")?;
            let (e, _) = array_parts(&t(vals), "scatter_add's values")?;
            want(e != Scalar::Bool, || "scatter_add of bools".to_string())?;
            Ok(vec![t(vals)])
        }
        ArrayOp::Reduce { op: _, arr, axis } => {
            let (e, _) = array_parts(&t(arr), "the reduced operand")?;
            want(e != Scalar::Bool, || "reduction of bools".to_string())?;
            one(reduce_ty(&t(arr), *axis, None))
        }
        ArrayOp::ArgReduce { op, arr, axis } => {
            want(matches!(op, ReduceOp::Max | ReduceOp::Min), || {
                "arg-reduction must be max or min".to_string()
            })?;
            let (e, rank) = array_parts(&t(arr), "arg-reduction's operand")?;
            want(e != Scalar::Bool, || "arg-reduction of bools".to_string())?;
            match axis {
                None => Ok(vec![Ty::I64; rank]),
                Some(_) => one(reduce_ty(&t(arr), *axis, Some(Scalar::I64))),
            }
        }
        ArrayOp::Scan { arr, .. } => {
            let (e, _) = array_parts(&t(arr), "scan's operand")?;
            want(e != Scalar::Bool, || "scan of bools".to_string())?;
            Ok(vec![t(arr)])
        }
        ArrayOp::MatMul { a, b } => one(matmul_ty(&t(a), &t(b))),
        ArrayOp::Transpose { arr } => {
            let (_, rank) = array_parts(&t(arr), "transpose's operand")?;
            want(rank == 2, || {
                format!("transpose needs rank 2, found rank {rank}")
            })?;
            Ok(vec![t(arr)])
        }
        ArrayOp::Broadcast { arr, shape, axes } => one(broadcast_ty(&t(arr), &ts(shape), axes)),
        ArrayOp::Shape { arr, axis } | ArrayOp::Stride { arr, axis } => {
            let name = op.name();
            let (_, rank) = array_parts(&t(arr), &format!("{name}'s operand"))?;
            want(*axis < rank, || {
                format!("{name} axis {axis} out of range for rank {rank}")
            })?;
            Ok(vec![Ty::I64])
        }
    }
}

/// The type rule of a linear operation: the linear result types.
pub fn lin_op_tys(op: &LinOp, vars: &VarTable) -> Result<Vec<Ty>, String> {
    let t = |a: &Atom| atom_ty(a, vars);
    let l = |v: &Var| vars.ty(*v).clone();
    let ts = |xs: &[Atom]| xs.iter().map(|a| atom_ty(a, vars)).collect::<Vec<_>>();
    let one = |r: Result<Ty, String>| r.map(|t| vec![t]);
    let space = |v: &Var| {
        want(l(v).is_linear_space(), || {
            format!("{v} of type {} cannot be a linear value", l(v))
        })
    };
    match op {
        LinOp::Zero(s) => Ok(vec![shape_ty(s)?]),
        LinOp::Add(x, y) => {
            space(x)?;
            want(l(x) == l(y), || {
                format!("linear add of {} and {}", l(x), l(y))
            })?;
            Ok(vec![l(x)])
        }
        LinOp::Neg(x) => {
            space(x)?;
            Ok(vec![l(x)])
        }
        LinOp::Scale { s, x } => one(scale_ty(&t(s), &l(x))),
        LinOp::Dup(x) => {
            space(x)?;
            Ok(vec![l(x), l(x)])
        }
        LinOp::Drop(x) => {
            space(x)?;
            Ok(vec![])
        }
        LinOp::Tuple(xs) => {
            for x in xs {
                space(x)?;
            }
            Ok(vec![Ty::Tuple(xs.iter().map(l).collect())])
        }
        LinOp::Untuple(x) => match l(x) {
            Ty::Tuple(parts) if l(x).is_linear_space() => Ok(parts),
            other => Err(format!("linear untuple of {other}")),
        },
        LinOp::Index { x, idx } => {
            space(x)?;
            one(index_ty(&l(x), &ts(idx), "linear index"))
        }
        LinOp::Update {
            x,
            idx,
            val,
            add: _,
        } => {
            space(x)?;
            let et = index_ty(&l(x), &ts(idx), "linear update")?;
            want(l(val) == et, || {
                format!("linear update writes {} into elements of {et}", l(val))
            })?;
            Ok(vec![l(x)])
        }
        LinOp::Take { x, idx, zero: _ } => {
            space(x)?;
            let et = index_ty(&l(x), &ts(idx), "linear take")?;
            Ok(vec![et, l(x)])
        }
        LinOp::Gather { x, idx } => {
            space(x)?;
            array_parts(&l(x), "linear gather's source")?;
            want_idx_array(&t(idx), "linear gather's index")?;
            Ok(vec![l(x)])
        }
        LinOp::ScatterAdd { len, idx, x } => {
            space(x)?;
            want_i64(&t(len), "linear scatter_add's length")?;
            want_idx_array(&t(idx), "linear scatter_add's index")?;
            array_parts(&l(x), "linear scatter_add's values")?;
            Ok(vec![l(x)])
        }
        LinOp::Sum { x, axis } => {
            space(x)?;
            one(reduce_ty(&l(x), *axis, None))
        }
        LinOp::Broadcast { x, shape, axes } => {
            space(x)?;
            one(broadcast_ty(&l(x), &ts(shape), axes))
        }
        LinOp::SumTo { x, shape } => {
            space(x)?;
            let (_, rank) = array_parts(&l(x), "linear sum_to's operand")?;
            want(rank == shape.len(), || {
                format!("sum_to of rank {rank} to {} sizes", shape.len())
            })?;
            for a in shape {
                want_i64(&t(a), "a sum_to size")?;
            }
            Ok(vec![l(x)])
        }
        LinOp::Transpose(x) => {
            space(x)?;
            let (_, rank) = array_parts(&l(x), "linear transpose's operand")?;
            want(rank == 2, || {
                format!("transpose needs rank 2, found rank {rank}")
            })?;
            Ok(vec![l(x)])
        }
        LinOp::MatMul { a, x, lin_left } => {
            space(x)?;
            if *lin_left {
                one(matmul_ty(&l(x), &t(a)))
            } else {
                one(matmul_ty(&t(a), &l(x)))
            }
        }
        LinOp::Outer { x, b, .. } => {
            space(x)?;
            want(l(x) == Ty::f64s(1) && t(b) == Ty::f64s(1), || {
                format!("outer product of {} and {}: both must be [f64]", l(x), t(b))
            })?;
            Ok(vec![Ty::f64s(2)])
        }
        LinOp::Scan { x, .. } => {
            space(x)?;
            array_parts(&l(x), "linear scan's operand")?;
            Ok(vec![l(x)])
        }
    }
}

fn lambda_param_tys(lam: &Lambda, vars: &VarTable) -> (Vec<Ty>, Vec<Ty>) {
    (
        lam.params.iter().map(|v| vars.ty(*v).clone()).collect(),
        lam.lin_params.iter().map(|v| vars.ty(*v).clone()).collect(),
    )
}

fn show(ts: &[Ty]) -> String {
    let s: Vec<String> = ts.iter().map(|t| t.to_string()).collect();
    format!("({})", s.join(", "))
}

fn stack_all(ts: &[Ty], extra: usize, what: &str) -> Result<Vec<Ty>, String> {
    ts.iter()
        .map(|t| {
            t.stacked(extra)
                .ok_or_else(|| format!("{what} cannot stack a tuple result {t}"))
        })
        .collect()
}

/// The type rule of any expression: `(non-linear results, linear results)`.
///
/// Compound expressions are typed from their lambdas' parameter and result
/// types (bodies are assumed already typed); calls from the callee in `prog`.
pub fn expr_types(e: &Expr, vars: &VarTable, prog: &Program) -> Result<ExprTys, String> {
    let t = |a: &Atom| atom_ty(a, vars);
    let l = |v: &Var| vars.ty(*v).clone();
    match e {
        Expr::Atom(a) => Ok((vec![t(a)], vec![])),
        Expr::Prim(p, args) => {
            let ts: Vec<Ty> = args.iter().map(t).collect();
            Ok((vec![prim_ty(*p, &ts)?], vec![]))
        }
        Expr::Array(op) => Ok((array_op_tys(op, vars)?, vec![])),
        Expr::Tuple(xs) => Ok((vec![Ty::Tuple(xs.iter().map(t).collect())], vec![])),
        Expr::Untuple(x) => match t(x) {
            Ty::Tuple(parts) => Ok((parts, vec![])),
            other => Err(format!("untuple of {other}")),
        },
        Expr::Lin(op) => Ok((vec![], lin_op_tys(op, vars)?)),
        Expr::Call(c) => {
            let f = prog
                .func(&c.func)
                .ok_or_else(|| format!("call of unknown function `{}`", c.func))?;
            let (p, lp, r, lr) = func_sig(f);
            let at: Vec<Ty> = c.args.iter().map(t).collect();
            let lt: Vec<Ty> = c.lin_args.iter().map(l).collect();
            want(at == p && lt == lp, || {
                format!(
                    "call of `{}` with arguments {} ; {} but it takes {} ; {}",
                    c.func,
                    show(&at),
                    show(&lt),
                    show(&p),
                    show(&lp)
                )
            })?;
            want(c.lin_shapes.len() == lr.len(), || {
                format!(
                    "call of `{}` gives {} linear result shapes for {} results",
                    c.func,
                    c.lin_shapes.len(),
                    lr.len()
                )
            })?;
            Ok((r, lr))
        }
        Expr::If(i) => {
            want(t(&i.cond) == Ty::BOOL, || {
                format!("if condition must be bool, found {}", t(&i.cond))
            })?;
            let a = block_tys(&i.then_, vars);
            let b = block_tys(&i.else_, vars);
            want(a == b, || {
                format!(
                    "if branches return different types: {} ; {} and {} ; {}",
                    show(&a.0),
                    show(&a.1),
                    show(&b.0),
                    show(&b.1)
                )
            })?;
            want(i.lin_shapes.len() == a.1.len(), || {
                format!(
                    "if gives {} linear result shapes for {} results",
                    i.lin_shapes.len(),
                    a.1.len()
                )
            })?;
            Ok(a)
        }
        Expr::Loop(lp) => {
            want_i64(&t(&lp.n), "a loop trip count")?;
            let (p, lparams) = lambda_param_tys(&lp.body, vars);
            let init: Vec<Ty> = lp.init.iter().map(t).collect();
            let linit: Vec<Ty> = lp.lin_init.iter().map(l).collect();
            want(!p.is_empty() && p[0] == Ty::I64, || {
                "a loop body's first parameter is the i64 index".to_string()
            })?;
            want(p[1..] == init[..], || {
                format!(
                    "loop state {} initialised with {}",
                    show(&p[1..]),
                    show(&init)
                )
            })?;
            want(lparams == linit, || {
                format!(
                    "linear loop state {} initialised with {}",
                    show(&lparams),
                    show(&linit)
                )
            })?;
            let (r, lr) = block_tys(&lp.body.body, vars);
            want(r.len() >= init.len() && r[..init.len()] == init[..], || {
                format!("loop body returns {} for state {}", show(&r), show(&init))
            })?;
            want(
                lr.len() >= linit.len() && lr[..linit.len()] == linit[..],
                || {
                    format!(
                        "loop body returns linear {} for linear state {}",
                        show(&lr),
                        show(&linit)
                    )
                },
            )?;
            let mut out = init.clone();
            out.extend(stack_all(&r[init.len()..], 1, "a loop")?);
            let mut lout = linit.clone();
            lout.extend(stack_all(&lr[linit.len()..], 1, "a loop")?);
            Ok((out, lout))
        }
        Expr::Build(b) => {
            want(!b.shape.is_empty(), || {
                "build over an empty shape".to_string()
            })?;
            for s in &b.shape {
                want_i64(&t(s), "a build size")?;
            }
            let (p, lparams) = lambda_param_tys(&b.body, vars);
            want(
                p.len() == b.shape.len() && p.iter().all(|t| *t == Ty::I64),
                || {
                    format!(
                        "a build of rank {} takes {} i64 indices",
                        b.shape.len(),
                        b.shape.len()
                    )
                },
            )?;
            want(lparams.is_empty(), || {
                "a build body has no linear parameters".to_string()
            })?;
            let (r, lr) = block_tys(&b.body.body, vars);
            Ok((
                stack_all(&r, p.len(), "a build")?,
                stack_all(&lr, p.len(), "a build")?,
            ))
        }
        Expr::Map(m) => {
            want(!m.arrs.is_empty() || !m.lin_arrs.is_empty(), || {
                "map over no arrays".to_string()
            })?;
            let mut rank = None;
            let mut elems = vec![];
            for a in &m.arrs {
                let (e, r) = array_parts(&t(a), "a map operand")?;
                want(rank.is_none_or(|r0| r0 == r), || {
                    "map operands of different ranks".to_string()
                })?;
                rank = Some(r);
                elems.push(Ty::Scalar(e));
            }
            let mut lelems = vec![];
            for x in &m.lin_arrs {
                let (e, r) = array_parts(&l(x), "a linear map operand")?;
                want(e == Scalar::F64, || {
                    "linear map operands must be [f64]".to_string()
                })?;
                want(rank.is_none_or(|r0| r0 == r), || {
                    "map operands of different ranks".to_string()
                })?;
                rank = Some(r);
                lelems.push(Ty::F64);
            }
            let rank = rank.expect("checked non-empty");
            let (p, lparams) = lambda_param_tys(&m.body, vars);
            want(p == elems && lparams == lelems, || {
                format!(
                    "map body takes {} ; {} but the elements are {} ; {}",
                    show(&p),
                    show(&lparams),
                    show(&elems),
                    show(&lelems)
                )
            })?;
            let (r, lr) = block_tys(&m.body.body, vars);
            Ok((
                stack_all(&r, rank, "a map")?,
                stack_all(&lr, rank, "a map")?,
            ))
        }
        Expr::Fold(fd) => {
            let at = t(&fd.arr);
            let x = at
                .unstacked(1)
                .ok_or_else(|| format!("fold over {at}, not an array"))?;
            let init: Vec<Ty> = fd.init.iter().map(t).collect();
            let (p, lparams) = lambda_param_tys(&fd.body, vars);
            let mut want_p = init.clone();
            want_p.push(x);
            want(p == want_p && lparams.is_empty(), || {
                format!("fold body takes {} but needs {}", show(&p), show(&want_p))
            })?;
            let (r, lr) = block_tys(&fd.body.body, vars);
            want(r == init && lr.is_empty(), || {
                format!(
                    "fold body returns {} for accumulators {}",
                    show(&r),
                    show(&init)
                )
            })?;
            Ok((init, vec![]))
        }
        Expr::While(w) => {
            let init: Vec<Ty> = w.init.iter().map(t).collect();
            for (lam, what) in [(&w.cond, "condition"), (&w.body, "body")] {
                let (p, lparams) = lambda_param_tys(lam, vars);
                want(p == init && lparams.is_empty(), || {
                    format!(
                        "a while {what} takes {} ; {} but the state is {}",
                        show(&p),
                        show(&lparams),
                        show(&init)
                    )
                })?;
            }
            let (c, lc) = block_tys(&w.cond.body, vars);
            want(c == [Ty::BOOL] && lc.is_empty(), || {
                format!("a while condition returns {}, not bool", show(&c))
            })?;
            let (r, lr) = block_tys(&w.body.body, vars);
            want(r == init && lr.is_empty(), || {
                format!(
                    "a while body returns {} for the state {}",
                    show(&r),
                    show(&init)
                )
            })?;
            Ok((vec![Ty::I64], vec![]))
        }
    }
}
