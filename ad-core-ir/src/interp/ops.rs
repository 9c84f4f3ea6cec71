//! Array operations and linear operations: fetch the operands, call the
//! kernels of [`super::array`], and report the work done (see the cost model
//! in [`crate::interp`]).

use super::array::{self, want_array, want_size, KResult};
use super::value::Value;
use super::Frame;
use crate::ir::{ArrayOp, LinOp, ReduceOp, ShapeTree, Var};

/// Results of an operation and its work.
type OpResult = KResult<(Vec<Value>, u64)>;

/// The largest number of scalars among `vals`.
fn largest(vals: &[&Value]) -> u64 {
    vals.iter()
        .map(|v| v.num_scalars() as u64)
        .max()
        .unwrap_or(1)
}

/// One result whose work is the largest size among the operands and it.
fn one(r: Value, operands: &[&Value]) -> (Vec<Value>, u64) {
    let w = largest(operands).max(r.num_scalars() as u64);
    (vec![r], w)
}

/// A non-linear array operation.
pub(super) fn array_op(fr: &Frame<'_>, op: &ArrayOp) -> OpResult {
    match op {
        ArrayOp::Index { arr, idx } => index(&*fr.atom(arr)?, &fr.i64s(idx, "an index")?),
        ArrayOp::Update { arr, idx, val, add } => update(
            &*fr.atom(arr)?,
            &fr.i64s(idx, "an index")?,
            &*fr.atom(val)?,
            *add,
        ),
        ArrayOp::Gather { arr, idx } => gather(&*fr.atom(arr)?, &*fr.atom(idx)?),
        ArrayOp::ScatterAdd { len, idx, vals } => {
            scatter_add(&*fr.atom(len)?, &*fr.atom(idx)?, &*fr.atom(vals)?)
        }
        ArrayOp::Reduce { op, arr, axis } => reduce(*op, &*fr.atom(arr)?, *axis),
        ArrayOp::ArgReduce { op, arr, axis } => {
            let x = fr.atom(arr)?;
            let a = want_array(&x, "arg-reduction's operand")?;
            let r = array::arg_reduce(*op, a, *axis)?;
            let w = largest(&[&x]);
            Ok((r, w))
        }
        ArrayOp::Scan { arr, reverse } => scan(&*fr.atom(arr)?, *reverse),
        ArrayOp::MatMul { a, b } => matmul(&*fr.atom(a)?, &*fr.atom(b)?),
        ArrayOp::Transpose { arr } => transpose(&*fr.atom(arr)?),
        ArrayOp::Broadcast { arr, shape, axes } => {
            broadcast(&*fr.atom(arr)?, fr.sizes(shape, "a broadcast size")?, axes)
        }
        ArrayOp::Shape { arr, axis } => {
            let x = fr.atom(arr)?;
            let a = want_array(&x, "shape's operand")?;
            let n = a
                .shape
                .get(*axis)
                .ok_or_else(|| format!("shape axis {axis} of an array of rank {}", a.rank()))?;
            Ok((vec![Value::I64(*n as i64)], 1))
        }
        // The interpreter's arrays are row-major: the stride of an axis is
        // the product of the later axes' sizes.
        ArrayOp::Stride { arr, axis } => {
            let x = fr.atom(arr)?;
            let a = want_array(&x, "stride's operand")?;
            if *axis >= a.rank() {
                return Err(format!(
                    "stride axis {axis} of an array of rank {}",
                    a.rank()
                ));
            }
            let s: usize = a.shape[axis + 1..].iter().product();
            Ok((vec![Value::I64(s as i64)], 1))
        }
    }
}

/// A linear operation.
pub(super) fn lin_op(fr: &Frame<'_>, op: &LinOp) -> OpResult {
    let get = |v: &Var| fr.get(*v);
    match op {
        LinOp::Zero(st) => {
            let z = zero(fr, st)?;
            let w = z.num_scalars() as u64;
            Ok((vec![z], w))
        }
        LinOp::Add(x, y) => {
            let (x, y) = (get(x)?, get(y)?);
            Ok(one(x.try_add(y)?, &[x, y]))
        }
        LinOp::Neg(x) => {
            let x = get(x)?;
            Ok(one(x.try_neg()?, &[x]))
        }
        LinOp::Scale { s, x } => {
            let (s, x) = (fr.atom(s)?, get(x)?);
            Ok(one(array::scale(&s, x)?, &[&s, x]))
        }
        LinOp::Dup(x) => {
            let x = get(x)?;
            Ok((vec![x.clone(), x.clone()], super::copy_work(x)))
        }
        LinOp::Drop(x) => {
            get(x)?;
            Ok((vec![], 0))
        }
        LinOp::Tuple(xs) => {
            let parts = xs
                .iter()
                .map(|x| get(x).cloned())
                .collect::<Result<_, _>>()?;
            Ok((vec![Value::Tuple(parts)], 1))
        }
        LinOp::Untuple(x) => match get(x)? {
            Value::Tuple(parts) => Ok((parts.clone(), 1)),
            other => Err(format!(
                "linear untuple of a {}",
                super::value::describe(other)
            )),
        },
        LinOp::Index { x, idx } => index(get(x)?, &fr.i64s(idx, "an index")?),
        LinOp::Update { x, idx, val, add } => {
            update(get(x)?, &fr.i64s(idx, "an index")?, get(val)?, *add)
        }
        LinOp::Take { x, idx, zero } => {
            let a = want_array(get(x)?, "the operand of ltake")?;
            let (e, rest) = array::take(a, &fr.i64s(idx, "an index")?, *zero)?;
            // In place in compiled code: read (and clear) the element.
            let w = e.num_scalars() as u64;
            Ok((vec![e, rest], w))
        }
        LinOp::Gather { x, idx } => gather(get(x)?, &*fr.atom(idx)?),
        LinOp::ScatterAdd { len, idx, x } => scatter_add(&*fr.atom(len)?, &*fr.atom(idx)?, get(x)?),
        LinOp::Sum { x, axis } => reduce(ReduceOp::Sum, get(x)?, *axis),
        LinOp::Broadcast { x, shape, axes } => {
            broadcast(get(x)?, fr.sizes(shape, "a broadcast size")?, axes)
        }
        LinOp::SumTo { x, shape } => {
            let r = array::sum_to(get(x)?, &fr.sizes(shape, "a sum_to size")?)?;
            Ok(one(r, &[get(x)?]))
        }
        LinOp::Transpose(x) => transpose(get(x)?),
        LinOp::MatMul { a, x, lin_left } => {
            let (a, x) = (fr.atom(a)?, get(x)?);
            if *lin_left {
                matmul(x, &a)
            } else {
                matmul(&a, x)
            }
        }
        LinOp::Outer { x, b, lin_left } => {
            let (b, x) = (fr.atom(b)?, get(x)?);
            let (bv, xv) = (
                want_array(&b, "outer's operand")?,
                want_array(x, "outer's operand")?,
            );
            let r = if *lin_left {
                array::outer(xv, bv)?
            } else {
                array::outer(bv, xv)?
            };
            let w = r.num_scalars() as u64;
            Ok((vec![r], w))
        }
        LinOp::Scan { x, reverse } => scan(get(x)?, *reverse),
    }
}

/// The zero of a shape tree: `0.0`, zero `f64` arrays, tuples of those.
fn zero(fr: &Frame<'_>, st: &ShapeTree) -> KResult {
    match st {
        ShapeTree::Scalar => Ok(Value::F64(0.0)),
        ShapeTree::Array(ds) if ds.is_empty() => Err("a zero array of rank 0".into()),
        ShapeTree::Array(ds) => array::zeros(fr.dims(ds)?),
        ShapeTree::Tuple(ts) => Ok(Value::Tuple(
            ts.iter().map(|t| zero(fr, t)).collect::<KResult<_>>()?,
        )),
    }
}

fn index(x: &Value, idx: &[i64]) -> OpResult {
    let r = array::index(want_array(x, "the indexed operand")?, idx)?;
    let w = r.num_scalars() as u64;
    Ok((vec![r], w))
}

fn update(x: &Value, idx: &[i64], val: &Value, add: bool) -> OpResult {
    let r = array::update(want_array(x, "the updated operand")?, idx, val, add)?;
    Ok((vec![r], val.num_scalars() as u64))
}

fn gather(x: &Value, idx: &Value) -> OpResult {
    let r = array::gather(want_array(x, "gather's source")?, idx)?;
    Ok(one(r, &[x, idx]))
}

fn scatter_add(len: &Value, idx: &Value, vals: &Value) -> OpResult {
    let n = want_size(len, "scatter_add's length")?;
    let r = array::scatter_add(n, idx, want_array(vals, "scatter_add's values")?)?;
    Ok(one(r, &[idx, vals]))
}

fn reduce(op: ReduceOp, x: &Value, axis: Option<usize>) -> OpResult {
    let r = array::reduce(op, want_array(x, "the reduced operand")?, axis)?;
    Ok(one(r, &[x]))
}

fn scan(x: &Value, reverse: bool) -> OpResult {
    let r = array::scan(want_array(x, "scan's operand")?, reverse)?;
    Ok(one(r, &[x]))
}

fn matmul(a: &Value, b: &Value) -> OpResult {
    let (r, w) = array::matmul(
        want_array(a, "matmul's left operand")?,
        want_array(b, "matmul's right operand")?,
    )?;
    Ok((vec![r], w))
}

fn transpose(x: &Value) -> OpResult {
    let r = array::transpose(want_array(x, "transpose's operand")?)?;
    Ok(one(r, &[x]))
}

fn broadcast(x: &Value, shape: Vec<usize>, axes: &[usize]) -> OpResult {
    let r = array::broadcast(x, shape, axes)?;
    Ok(one(r, &[x]))
}
