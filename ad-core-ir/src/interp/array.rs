//! Array kernels shared by the non-linear [`crate::ir::ArrayOp`]s and their
//! linear twins: indexing, update, gather, scatter-add, reductions, scans,
//! matrix products, transposition, broadcasting and stacking.
//!
//! Every kernel checks shapes, element types and indices and returns `Err`
//! instead of panicking. Sums run sequentially from `0` in index order, so
//! e.g. the last element of a scan equals the sum bit for bit.

use super::value::{checked_size, describe, on_data, ArrayData, ArrayValue, Value};
use crate::ir::ReduceOp;
use crate::types::{Scalar, Ty};

/// Result of a kernel: the value or an error message.
pub(crate) type KResult<T = Value> = Result<T, String>;

/// Numeric element types (`f64`, `i64`): the arithmetic the kernels need, with
/// `i64` overflow as an error.
pub(crate) trait Num: Copy + PartialOrd + Into<Value> {
    /// Additive identity.
    const ZERO: Self;
    /// Multiplicative identity.
    const ONE: Self;
    /// Identity of `max`: `-inf` / `i64::MIN`.
    const LOWEST: Self;
    /// Identity of `min`: `+inf` / `i64::MAX`.
    const HIGHEST: Self;
    /// `a + b`.
    fn add(self, b: Self) -> KResult<Self>;
    /// `a * b`.
    fn mul(self, b: Self) -> KResult<Self>;
    /// `max(a, b)` (`f64::max` for floats: NaN is ignored).
    fn max(self, b: Self) -> Self;
    /// `min(a, b)`.
    fn min(self, b: Self) -> Self;
    /// Whether `self` is NaN.
    fn is_nan(self) -> bool;
}

impl Num for f64 {
    const ZERO: f64 = 0.0;
    const ONE: f64 = 1.0;
    const LOWEST: f64 = f64::NEG_INFINITY;
    const HIGHEST: f64 = f64::INFINITY;
    fn add(self, b: f64) -> KResult<f64> {
        Ok(self + b)
    }
    fn mul(self, b: f64) -> KResult<f64> {
        Ok(self * b)
    }
    fn max(self, b: f64) -> f64 {
        f64::max(self, b)
    }
    fn min(self, b: f64) -> f64 {
        f64::min(self, b)
    }
    fn is_nan(self) -> bool {
        f64::is_nan(self)
    }
}

impl Num for i64 {
    const ZERO: i64 = 0;
    const ONE: i64 = 1;
    const LOWEST: i64 = i64::MIN;
    const HIGHEST: i64 = i64::MAX;
    fn add(self, b: i64) -> KResult<i64> {
        self.checked_add(b)
            .ok_or_else(|| format!("i64 overflow in {self} + {b}"))
    }
    fn mul(self, b: i64) -> KResult<i64> {
        self.checked_mul(b)
            .ok_or_else(|| format!("i64 overflow in {self} * {b}"))
    }
    fn max(self, b: i64) -> i64 {
        Ord::max(self, b)
    }
    fn min(self, b: i64) -> i64 {
        Ord::min(self, b)
    }
    fn is_nan(self) -> bool {
        false
    }
}

impl From<f64> for Value {
    fn from(x: f64) -> Value {
        Value::F64(x)
    }
}
impl From<i64> for Value {
    fn from(x: i64) -> Value {
        Value::I64(x)
    }
}
impl From<bool> for Value {
    fn from(x: bool) -> Value {
        Value::Bool(x)
    }
}

/// Applies `$e` to the element vector of a numeric [`ArrayData`]; `Err` for bools.
macro_rules! on_num {
    ($data:expr, $what:expr, $d:ident => $e:expr) => {
        match $data {
            ArrayData::F64($d) => $e,
            ArrayData::I64($d) => $e,
            ArrayData::Bool(_) => Err(format!("{} of a bool array", $what)),
        }
    };
}

// ---------------------------------------------------------------- helpers

/// An array with the given shape and data (the caller guarantees the sizes).
pub(crate) fn arr(shape: Vec<usize>, data: ArrayData) -> Value {
    debug_assert_eq!(shape.iter().product::<usize>(), data.len());
    Value::Array(ArrayValue { shape, data })
}

/// `v` as an array, or `Err` naming `what`.
pub(crate) fn want_array<'v>(v: &'v Value, what: &str) -> KResult<&'v ArrayValue> {
    v.as_array()
        .ok_or_else(|| format!("{what} must be an array, found {}", describe(v)))
}

/// `v` as an `i64` scalar, or `Err` naming `what`.
pub(crate) fn want_i64(v: &Value, what: &str) -> KResult<i64> {
    v.as_i64()
        .ok_or_else(|| format!("{what} must be an i64, found {}", describe(v)))
}

/// `v` as a size (an `i64 >= 0`), or `Err` naming `what`.
pub(crate) fn want_size(v: &Value, what: &str) -> KResult<usize> {
    let n = want_i64(v, what)?;
    usize::try_from(n).map_err(|_| format!("{what} {n} is negative"))
}

/// `v` as an `[i64]` index vector with every entry in `0..bound`.
fn want_indices(v: &Value, bound: usize, what: &str) -> KResult<Vec<usize>> {
    let a = want_array(v, what)?;
    let d = match (&a.data, a.rank()) {
        (ArrayData::I64(d), 1) => d,
        _ => return Err(format!("{what} must be an [i64], found {}", describe(v))),
    };
    d.iter().map(|&i| in_range(i, bound, what)).collect()
}

/// `i` as an index in `0..bound`.
fn in_range(i: i64, bound: usize, what: &str) -> KResult<usize> {
    usize::try_from(i)
        .ok()
        .filter(|k| *k < bound)
        .ok_or_else(|| format!("{what} {i} out of range 0..{bound}"))
}

/// `[outer, n, inner]`: the sizes before, at and after `axis`.
fn split_at_axis(shape: &[usize], axis: usize) -> (usize, usize, usize) {
    let outer = shape[..axis].iter().product();
    let inner = shape[axis + 1..].iter().product();
    (outer, shape[axis], inner)
}

/// A rank-0-or-more result: a scalar when `shape` is empty, else an array.
fn shaped<T: Copy + Into<Value>>(shape: Vec<usize>, data: Vec<T>) -> Value
where
    Vec<T>: Into<ArrayData>,
{
    if shape.is_empty() {
        data[0].into()
    } else {
        arr(shape, data.into())
    }
}

// ---------------------------------------------------------------- indexing

/// `(offset, sub-array size)` of `a[idx]` for `k = idx.len() <= rank` leading indices.
fn locate(a: &ArrayValue, idx: &[i64]) -> KResult<(usize, usize)> {
    if idx.len() > a.rank() {
        return Err(format!(
            "{} indices into an array of rank {}",
            idx.len(),
            a.rank()
        ));
    }
    let mut off = 0;
    for (&i, &n) in idx.iter().zip(&a.shape) {
        match usize::try_from(i) {
            Ok(k) if k < n => off = off * n + k,
            _ => {
                return Err(format!(
                    "index {idx:?} out of range for shape {:?}",
                    a.shape
                ))
            }
        }
    }
    let sub: usize = a.shape[idx.len()..].iter().product();
    Ok((off * sub, sub))
}

/// `a[i0, .., ik]`: the element (`k == rank`) or a copy of the sub-array with
/// the leading `k` axes fixed.
pub(crate) fn index(a: &ArrayValue, idx: &[i64]) -> KResult {
    let (off, sub) = locate(a, idx)?;
    if idx.len() == a.rank() {
        return Ok(a.data.get(off).expect("located in range"));
    }
    let shape = a.shape[idx.len()..].to_vec();
    Ok(on_data!(&a.data, d => arr(shape, d[off..off + sub].to_vec().into())))
}

/// `a with [idx] = val` (`add`: `+= val`); `val` must have the element /
/// sub-array shape and the element type of `a`.
pub(crate) fn update(a: &ArrayValue, idx: &[i64], val: &Value, add: bool) -> KResult {
    let (off, sub) = locate(a, idx)?;
    let want_shape = &a.shape[idx.len()..];
    let (vshape, vdata) = as_data(val)?;
    if vshape != want_shape || vdata.elem() != a.data.elem() {
        return Err(format!(
            "update of elements of shape {want_shape:?} of a {} with a {}",
            describe(&Value::Array(a.clone())),
            describe(val)
        ));
    }
    let mut out = a.data.clone();
    let n = sub.min(vdata.len());
    match (&mut out, vdata.as_ref()) {
        (ArrayData::F64(o), ArrayData::F64(v)) => write_slice(&mut o[off..off + n], v, add)?,
        (ArrayData::I64(o), ArrayData::I64(v)) => write_slice(&mut o[off..off + n], v, add)?,
        (ArrayData::Bool(o), ArrayData::Bool(v)) if !add => o[off..off + n].copy_from_slice(v),
        _ => return Err("+= update of a bool array".into()),
    }
    Ok(arr(a.shape.clone(), out))
}

/// `(a[idx], a with [idx] = 0)` when `zero`, else `(a[idx], a)` (zero of the
/// element type: `0.0`, `0`, `false`).
pub(crate) fn take(a: &ArrayValue, idx: &[i64], zero: bool) -> KResult<(Value, Value)> {
    let e = index(a, idx)?;
    let (off, sub) = locate(a, idx)?;
    let mut out = a.data.clone();
    if zero {
        match &mut out {
            ArrayData::F64(o) => o[off..off + sub].fill(0.0),
            ArrayData::I64(o) => o[off..off + sub].fill(0),
            ArrayData::Bool(o) => o[off..off + sub].fill(false),
        }
    }
    Ok((e, arr(a.shape.clone(), out)))
}

fn write_slice<T: Num>(out: &mut [T], v: &[T], add: bool) -> KResult<()> {
    for (o, x) in out.iter_mut().zip(v) {
        *o = if add { o.add(*x)? } else { *x };
    }
    Ok(())
}

/// The shape and data of a scalar or array value (a scalar as one element of
/// shape `[]`); `Err` for a tuple.
fn as_data(v: &Value) -> KResult<(&[usize], std::borrow::Cow<'_, ArrayData>)> {
    use std::borrow::Cow;
    Ok(match v {
        Value::Array(a) => (&a.shape, Cow::Borrowed(&a.data)),
        Value::F64(x) => (&[], Cow::Owned(ArrayData::F64(vec![*x]))),
        Value::I64(x) => (&[], Cow::Owned(ArrayData::I64(vec![*x]))),
        Value::Bool(x) => (&[], Cow::Owned(ArrayData::Bool(vec![*x]))),
        Value::Tuple(_) => {
            return Err(format!(
                "expected a scalar or an array, found {}",
                describe(v)
            ))
        }
    })
}

// ---------------------------------------------------------------- gather / scatter

/// `out[k, ..] = a[idx[k], ..]`.
pub(crate) fn gather(a: &ArrayValue, idx: &Value) -> KResult {
    let rows = want_indices(idx, a.shape[0], "gather index")?;
    let row: usize = a.shape[1..].iter().product();
    let mut shape = a.shape.clone();
    shape[0] = rows.len();
    checked_size(&shape)?;
    let data = on_data!(&a.data, d => {
        let mut out = Vec::with_capacity(rows.len() * row);
        for &r in &rows {
            out.extend_from_slice(&d[r * row..(r + 1) * row]);
        }
        ArrayData::from(out)
    });
    Ok(arr(shape, data))
}

/// `out = zeros([len, ..]); out[idx[k], ..] += vals[k, ..]` in order of `k`.
pub(crate) fn scatter_add(len: usize, idx: &Value, vals: &ArrayValue) -> KResult {
    let rows = want_indices(idx, len, "scatter_add index")?;
    if rows.len() != vals.shape[0] {
        return Err(format!(
            "scatter_add of {} rows with {} indices",
            vals.shape[0],
            rows.len()
        ));
    }
    let row: usize = vals.shape[1..].iter().product();
    let mut shape = vals.shape.clone();
    shape[0] = len;
    let n = checked_size(&shape)?;
    let data = on_num!(&vals.data, "scatter_add", d => {
        let mut out = vec![Num::ZERO; n];
        for (k, &r) in rows.iter().enumerate() {
            write_slice(&mut out[r * row..(r + 1) * row], &d[k * row..(k + 1) * row], true)?;
        }
        Ok(ArrayData::from(out))
    })?;
    Ok(arr(shape, data))
}

// ---------------------------------------------------------------- reductions

fn identity<T: Num>(op: ReduceOp) -> T {
    match op {
        ReduceOp::Sum => T::ZERO,
        ReduceOp::Prod => T::ONE,
        ReduceOp::Max => T::LOWEST,
        ReduceOp::Min => T::HIGHEST,
    }
}

fn combine<T: Num>(op: ReduceOp, acc: T, x: T) -> KResult<T> {
    match op {
        ReduceOp::Sum => acc.add(x),
        ReduceOp::Prod => acc.mul(x),
        ReduceOp::Max => Ok(acc.max(x)),
        ReduceOp::Min => Ok(acc.min(x)),
    }
}

/// Reduction of all elements (`axis: None`, a scalar) or along `axis`
/// (that axis removed; a scalar for a rank-1 array). Sequential in index
/// order from the identity (0, 1, -inf / i64::MIN, +inf / i64::MAX).
pub(crate) fn reduce(op: ReduceOp, a: &ArrayValue, axis: Option<usize>) -> KResult {
    on_num!(&a.data, "reduction", d => reduce_t(op, &a.shape, d, axis))
}

fn reduce_t<T: Num>(op: ReduceOp, shape: &[usize], d: &[T], axis: Option<usize>) -> KResult
where
    Vec<T>: Into<ArrayData>,
{
    let Some(axis) = axis else {
        let r = d
            .iter()
            .try_fold(identity(op), |acc, x| combine(op, acc, *x))?;
        return Ok(r.into());
    };
    check_axis(axis, shape.len())?;
    let (outer, n, inner) = split_at_axis(shape, axis);
    let mut out = vec![identity::<T>(op); outer * inner];
    for o in 0..outer {
        for k in 0..n {
            let src = &d[(o * n + k) * inner..(o * n + k + 1) * inner];
            for (acc, x) in out[o * inner..(o + 1) * inner].iter_mut().zip(src) {
                *acc = combine(op, *acc, *x)?;
            }
        }
    }
    Ok(shaped(without_axis(shape, axis), out))
}

fn check_axis(axis: usize, rank: usize) -> KResult<()> {
    if axis < rank {
        Ok(())
    } else {
        Err(format!("axis {axis} out of range for rank {rank}"))
    }
}

fn without_axis(shape: &[usize], axis: usize) -> Vec<usize> {
    let mut s = shape.to_vec();
    s.remove(axis);
    s
}

/// Whether `x` beats the best so far for an arg-max (`max`) or arg-min: strictly
/// greater (less), or the best is NaN and `x` is not (so NaNs are skipped like
/// `f64::max` skips them, and the *first* extremum wins).
fn beats<T: Num>(x: T, best: T, max: bool) -> bool {
    if best.is_nan() {
        !x.is_nan()
    } else if max {
        x > best
    } else {
        x < best
    }
}

fn want_max(op: ReduceOp) -> KResult<bool> {
    match op {
        ReduceOp::Max => Ok(true),
        ReduceOp::Min => Ok(false),
        other => Err(format!("arg-reduction by {other:?}")),
    }
}

/// Position of the first maximum / minimum (NaNs skipped). Whole array: the
/// multi-index as `rank` `i64` values (all 0 when empty). Along `axis`: an
/// `i64` array of the reduced shape (a scalar for rank 1).
pub(crate) fn arg_reduce(op: ReduceOp, a: &ArrayValue, axis: Option<usize>) -> KResult<Vec<Value>> {
    let max = want_max(op)?;
    on_num!(&a.data, "arg-reduction", d => arg_reduce_t(max, &a.shape, d, axis))
}

fn arg_reduce_t<T: Num>(
    max: bool,
    shape: &[usize],
    d: &[T],
    axis: Option<usize>,
) -> KResult<Vec<Value>> {
    let Some(axis) = axis else {
        let mut best = 0;
        for (k, x) in d.iter().enumerate() {
            if beats(*x, d[best], max) {
                best = k;
            }
        }
        return Ok(unravel(best, shape).into_iter().map(Value::I64).collect());
    };
    check_axis(axis, shape.len())?;
    let (outer, n, inner) = split_at_axis(shape, axis);
    let mut pos = vec![0i64; outer * inner];
    for o in 0..outer {
        for i in 0..inner {
            let at = |k: usize| d[(o * n + k) * inner + i];
            let mut best = 0;
            for k in 1..n {
                if beats(at(k), at(best), max) {
                    best = k;
                }
            }
            pos[o * inner + i] = best as i64;
        }
    }
    Ok(vec![shaped(without_axis(shape, axis), pos)])
}

/// The multi-index of flat position `k` in `shape` (row-major).
fn unravel(mut k: usize, shape: &[usize]) -> Vec<i64> {
    let mut idx = vec![0i64; shape.len()];
    for (axis, &s) in shape.iter().enumerate().rev() {
        if s > 0 {
            idx[axis] = (k % s) as i64;
            k /= s;
        }
    }
    idx
}

/// Inclusive prefix sums along axis 0 (`reverse`: suffix sums).
pub(crate) fn scan(a: &ArrayValue, reverse: bool) -> KResult {
    let data = on_num!(&a.data, "scan", d => scan_t(&a.shape, d, reverse).map(ArrayData::from))?;
    Ok(arr(a.shape.clone(), data))
}

fn scan_t<T: Num>(shape: &[usize], d: &[T], reverse: bool) -> KResult<Vec<T>> {
    let (_, n, inner) = split_at_axis(shape, 0);
    let mut out = vec![T::ZERO; d.len()];
    let mut acc = vec![T::ZERO; inner];
    for step in 0..n {
        let k = if reverse { n - 1 - step } else { step };
        let row = k * inner..(k + 1) * inner;
        for ((s, x), o) in acc
            .iter_mut()
            .zip(&d[row.clone()])
            .zip(&mut out[row.clone()])
        {
            *s = s.add(*x)?;
            *o = *s;
        }
    }
    Ok(out)
}

// ---------------------------------------------------------------- products

/// The `f64` elements of an array operand of a product.
fn floats<'a>(a: &'a ArrayValue, what: &str) -> KResult<&'a [f64]> {
    match &a.data {
        ArrayData::F64(d) => Ok(d),
        _ => Err(format!(
            "{what} must be an f64 array, found {}",
            describe(&Value::Array(a.clone()))
        )),
    }
}

/// Matrix product by ranks: (1,1) dot, (2,1) mat·vec, (1,2) vec·mat, (2,2)
/// mat·mat; `out[i, j] = sum_k a[i, k] * b[k, j]` summed in order of `k`.
/// Returns the product and its work `m·k·n`.
pub(crate) fn matmul(a: &ArrayValue, b: &ArrayValue) -> KResult<(Value, u64)> {
    let x = floats(a, "matmul's left operand")?;
    let y = floats(b, "matmul's right operand")?;
    // View both as matrices: a vector on the left is a row, on the right a column.
    let (m, ka) = match a.shape[..] {
        [k] => (1, k),
        [m, k] => (m, k),
        _ => return Err(format!("matmul of rank {} and {}", a.rank(), b.rank())),
    };
    let (kb, n) = match b.shape[..] {
        [k] => (k, 1),
        [k, n] => (k, n),
        _ => return Err(format!("matmul of rank {} and {}", a.rank(), b.rank())),
    };
    if ka != kb {
        return Err(format!("matmul of shapes {:?} and {:?}", a.shape, b.shape));
    }
    let mut out = vec![0.0; checked_size(&[m, n])?];
    for i in 0..m {
        for j in 0..n {
            let mut s = 0.0;
            for k in 0..ka {
                s += x[i * ka + k] * y[k * n + j];
            }
            out[i * n + j] = s;
        }
    }
    let mut shape = vec![];
    if a.rank() == 2 {
        shape.push(m);
    }
    if b.rank() == 2 {
        shape.push(n);
    }
    let work = (m as u64) * (ka as u64) * (n as u64);
    Ok((shaped(shape, out), work))
}

/// Outer product `out[i, j] = u[i] * v[j]` of two `f64` vectors.
pub(crate) fn outer(u: &ArrayValue, v: &ArrayValue) -> KResult {
    let x = floats(u, "outer's operand")?;
    let y = floats(v, "outer's operand")?;
    if u.rank() != 1 || v.rank() != 1 {
        return Err(format!(
            "outer product of ranks {} and {}",
            u.rank(),
            v.rank()
        ));
    }
    checked_size(&[x.len(), y.len()])?;
    let data = x
        .iter()
        .flat_map(|p| y.iter().map(move |q| p * q))
        .collect();
    Ok(arr(vec![x.len(), y.len()], ArrayData::F64(data)))
}

/// Transpose of a rank-2 array.
pub(crate) fn transpose(a: &ArrayValue) -> KResult {
    let [m, n] = a.shape[..] else {
        return Err(format!("transpose of an array of rank {}", a.rank()));
    };
    let data = on_data!(&a.data, d => {
        let mut out = Vec::with_capacity(m * n);
        for j in 0..n {
            out.extend((0..m).map(|i| d[i * n + j]));
        }
        ArrayData::from(out)
    });
    Ok(arr(vec![n, m], data))
}

/// `out[j] = x[j restricted to axes]` for `out` of shape `shape`; `x` a scalar
/// (`axes = []`) or an array whose sizes equal `shape` at `axes`.
pub(crate) fn broadcast(x: &Value, shape: Vec<usize>, axes: &[usize]) -> KResult {
    let (xshape, xdata) = as_data(x)?;
    if shape.is_empty() || axes.len() != xshape.len() {
        return Err(format!(
            "broadcast of {} to {} axes along axes {axes:?}",
            describe(x),
            shape.len()
        ));
    }
    // Stride of each output axis in `x` (0 where `x` is repeated).
    let mut strides = vec![0usize; shape.len()];
    let mut stride = 1;
    for (k, &ax) in axes.iter().enumerate().rev() {
        if ax >= shape.len()
            || (shape[ax] != xshape[k] && xshape[k] != 1)
            || (k + 1 < axes.len() && axes[k + 1] <= ax)
        {
            return Err(format!(
                "broadcast of shape {xshape:?} along axes {axes:?} to shape {shape:?}"
            ));
        }
        // A stretched axis of length 1 is read at index 0 (stride 0).
        strides[ax] = if shape[ax] == xshape[k] { stride } else { 0 };
        stride *= xshape[k];
    }
    let n = checked_size(&shape)?;
    let data = on_data!(xdata.as_ref(), d => ArrayData::from(strided_copy(d, &shape, &strides, n)));
    Ok(arr(shape, data))
}

/// `x` summed to `shape` (the transpose of stretching length-1 axes in
/// [`broadcast`]): each axis where `shape` has length 1 and `x` does not is
/// summed (left to right, each in index order) and kept with length 1;
/// every other size of `x` must equal `shape`'s.
pub(crate) fn sum_to(x: &Value, shape: &[usize]) -> KResult {
    let Value::Array(a) = x else {
        return Err(format!("sum_to of {}", describe(x)));
    };
    let ok =
        a.shape.len() == shape.len() && a.shape.iter().zip(shape).all(|(&s, &t)| s == t || t == 1);
    if !ok {
        return Err(format!("sum_to of shape {:?} to {shape:?}", a.shape));
    }
    let mut cur = a.clone();
    for (axis, &t) in shape.iter().enumerate() {
        if t == 1 && cur.shape[axis] != 1 {
            // A rank-1 sum is a scalar: the result has one element.
            let data = match reduce(ReduceOp::Sum, &cur, Some(axis))? {
                Value::Array(r) => r.data,
                Value::F64(s) => ArrayData::F64(vec![s]),
                other => return Err(format!("sum_to of {}", describe(&other))),
            };
            let mut sh = cur.shape.clone();
            sh[axis] = 1;
            cur = ArrayValue { shape: sh, data };
        }
    }
    Ok(Value::Array(cur))
}

/// `out[j] = d[sum_a j_a * strides_a]` over the row-major multi-indices `j` of `shape`.
fn strided_copy<T: Copy>(d: &[T], shape: &[usize], strides: &[usize], n: usize) -> Vec<T> {
    let mut out = Vec::with_capacity(n);
    if n == 0 {
        return out;
    }
    let mut j = vec![0usize; shape.len()];
    let mut src = 0usize;
    for _ in 0..n {
        out.push(d[src]);
        // Odometer increment, keeping `src` in step.
        for a in (0..shape.len()).rev() {
            j[a] += 1;
            src += strides[a];
            if j[a] < shape[a] {
                break;
            }
            src -= strides[a] * shape[a];
            j[a] = 0;
        }
    }
    out
}

/// `s * x` for `f64` scalars or arrays: same shapes, or one side a scalar.
pub(crate) fn scale(s: &Value, x: &Value) -> KResult {
    let bad = || format!("scale of {} by {}", describe(x), describe(s));
    match (s, x) {
        (Value::F64(a), Value::F64(b)) => Ok(Value::F64(a * b)),
        (Value::F64(a), Value::Array(xa)) => {
            let d = floats(xa, "scale's operand").map_err(|_| bad())?;
            Ok(arr(
                xa.shape.clone(),
                ArrayData::F64(d.iter().map(|v| a * v).collect()),
            ))
        }
        (Value::Array(sa), Value::F64(b)) => {
            let d = floats(sa, "scale's factor").map_err(|_| bad())?;
            Ok(arr(
                sa.shape.clone(),
                ArrayData::F64(d.iter().map(|v| v * b).collect()),
            ))
        }
        (Value::Array(sa), Value::Array(xa)) if sa.shape == xa.shape => {
            let p = floats(sa, "scale's factor").map_err(|_| bad())?;
            let q = floats(xa, "scale's operand").map_err(|_| bad())?;
            let d = p.iter().zip(q).map(|(a, b)| a * b).collect();
            Ok(arr(xa.shape.clone(), ArrayData::F64(d)))
        }
        _ => Err(bad()),
    }
}

// ---------------------------------------------------------------- stacking

/// Stacks values produced for every point of an index space (row-major) into
/// one array of shape `lead ++ element shape`.
///
/// All values must be scalars or arrays of one element type and shape. With
/// no values (an empty index space) the element type and rank come from the
/// static type `ty` and every element size is 0.
pub(crate) struct Stacker {
    /// The shape of every value (that of the first one pushed).
    elem_shape: Vec<usize>,
    /// The elements pushed so far, `None` before the first value.
    data: Option<ArrayData>,
    count: usize,
}

impl Stacker {
    /// An empty stack.
    pub(crate) fn new() -> Stacker {
        Stacker {
            elem_shape: vec![],
            data: None,
            count: 0,
        }
    }

    /// Appends the next value.
    pub(crate) fn push(&mut self, v: Value) -> KResult<()> {
        self.count += 1;
        let Some(d0) = &mut self.data else {
            let (shape, data) = match v {
                Value::Array(a) => (a.shape, a.data),
                Value::F64(x) => (vec![], ArrayData::F64(vec![x])),
                Value::I64(x) => (vec![], ArrayData::I64(vec![x])),
                Value::Bool(x) => (vec![], ArrayData::Bool(vec![x])),
                Value::Tuple(_) => return Err("cannot stack a tuple".into()),
            };
            self.elem_shape = shape;
            self.data = Some(data);
            return Ok(());
        };
        let scalar = self.elem_shape.is_empty();
        match (d0, v) {
            (ArrayData::F64(d), Value::F64(x)) if scalar => d.push(x),
            (ArrayData::I64(d), Value::I64(x)) if scalar => d.push(x),
            (ArrayData::Bool(d), Value::Bool(x)) if scalar => d.push(x),
            (d0, Value::Array(a)) if a.shape == self.elem_shape => append(d0, a.data)?,
            (d0, v) => {
                return Err(format!(
                    "stacked values of different types or shapes: {} of shape {:?} then {}",
                    d0.elem(),
                    self.elem_shape,
                    describe(&v)
                ))
            }
        }
        Ok(())
    }

    /// Reverses the order of the values pushed so far.
    pub(crate) fn reverse(&mut self) {
        let Some(data) = &mut self.data else {
            return;
        };
        let chunk = self.elem_shape.iter().product::<usize>();
        if chunk == 0 {
            return;
        }
        on_data!(data, d => {
            let rev: Vec<_> = d.chunks(chunk).rev().flatten().copied().collect();
            *d = rev;
        });
    }

    /// The stacked array of shape `lead ++ element shape`; `ty` is the static
    /// type of the values (used when there are none).
    pub(crate) fn finish(self, lead: &[usize], ty: &Ty) -> KResult {
        let mut shape = lead.to_vec();
        let data = match self.data {
            Some(d) => {
                shape.extend(self.elem_shape);
                d
            }
            None => {
                let (elem, rank) = match ty {
                    Ty::Scalar(e) => (*e, 0),
                    Ty::Array { elem, rank } => (*elem, *rank),
                    Ty::Tuple(_) | Ty::Opaque(_) => {
                        return Err(format!("cannot stack a value of type {ty}"))
                    }
                };
                shape.extend(std::iter::repeat_n(0, rank));
                ArrayData::zeros(elem, 0)
            }
        };
        if checked_size(&shape)? != data.len() || self.count != lead.iter().product::<usize>() {
            return Err(format!(
                "stacking {} values into shape {shape:?}",
                self.count
            ));
        }
        Ok(arr(shape, data))
    }
}

fn append(d0: &mut ArrayData, d: ArrayData) -> KResult<()> {
    match (d0, d) {
        (ArrayData::F64(a), ArrayData::F64(b)) => a.extend(b),
        (ArrayData::I64(a), ArrayData::I64(b)) => a.extend(b),
        (ArrayData::Bool(a), ArrayData::Bool(b)) => a.extend(b),
        (a, b) => {
            return Err(format!(
                "stacked values of different element types: {} then {}",
                a.elem(),
                b.elem()
            ))
        }
    }
    Ok(())
}

/// The zero `f64` array of the given shape (`shape` empty: the scalar `0.0`).
pub(crate) fn zeros(shape: Vec<usize>) -> KResult {
    if shape.is_empty() {
        return Ok(Value::F64(0.0));
    }
    let n = checked_size(&shape)?;
    Ok(arr(shape, ArrayData::zeros(Scalar::F64, n)))
}
