//! Run-time values of the interpreter and the value helpers the pass tests use
//! (linear-space arithmetic, inner products, comparisons).

use crate::types::{Scalar, Ty};
use std::fmt;

/// A run-time value. Linear values are ordinary values (`f64`, `[f64]` arrays,
/// tuples of these).
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// A float.
    F64(f64),
    /// An integer.
    I64(i64),
    /// A boolean.
    Bool(bool),
    /// A tuple.
    Tuple(Vec<Value>),
    /// A regular array (rank >= 1).
    Array(ArrayValue),
}

/// A regular row-major array: `data.len() == shape.iter().product()`.
#[derive(Clone, Debug, PartialEq)]
pub struct ArrayValue {
    /// Sizes of the axes (at least one axis).
    pub shape: Vec<usize>,
    /// The elements in row-major order.
    pub data: ArrayData,
}

/// The elements of an array, by element type.
#[derive(Clone, Debug, PartialEq)]
pub enum ArrayData {
    /// `f64` elements.
    F64(Vec<f64>),
    /// `i64` elements.
    I64(Vec<i64>),
    /// `bool` elements.
    Bool(Vec<bool>),
}

/// Applies `$e` to the element vector of an [`ArrayData`] whatever its element type.
macro_rules! on_data {
    ($data:expr, $d:ident => $e:expr) => {
        match $data {
            ArrayData::F64($d) => $e,
            ArrayData::I64($d) => $e,
            ArrayData::Bool($d) => $e,
        }
    };
}
pub(crate) use on_data;

impl From<Vec<f64>> for ArrayData {
    fn from(v: Vec<f64>) -> Self {
        ArrayData::F64(v)
    }
}
impl From<Vec<i64>> for ArrayData {
    fn from(v: Vec<i64>) -> Self {
        ArrayData::I64(v)
    }
}
impl From<Vec<bool>> for ArrayData {
    fn from(v: Vec<bool>) -> Self {
        ArrayData::Bool(v)
    }
}

impl ArrayData {
    /// Number of elements.
    pub fn len(&self) -> usize {
        on_data!(self, d => d.len())
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The element type.
    pub fn elem(&self) -> Scalar {
        match self {
            ArrayData::F64(_) => Scalar::F64,
            ArrayData::I64(_) => Scalar::I64,
            ArrayData::Bool(_) => Scalar::Bool,
        }
    }

    /// `n` zeros (`0.0`, `0`, `false`) of element type `elem`.
    pub fn zeros(elem: Scalar, n: usize) -> ArrayData {
        match elem {
            Scalar::F64 => ArrayData::F64(vec![0.0; n]),
            Scalar::I64 => ArrayData::I64(vec![0; n]),
            Scalar::Bool => ArrayData::Bool(vec![false; n]),
        }
    }

    /// Element `k` as a scalar value (`k < len()`).
    pub fn get(&self, k: usize) -> Option<Value> {
        match self {
            ArrayData::F64(d) => d.get(k).map(|x| Value::F64(*x)),
            ArrayData::I64(d) => d.get(k).map(|x| Value::I64(*x)),
            ArrayData::Bool(d) => d.get(k).map(|x| Value::Bool(*x)),
        }
    }
}

impl ArrayValue {
    /// An array of the given shape and data; `Err` if the sizes disagree or
    /// the shape has no axis.
    pub fn new(shape: Vec<usize>, data: ArrayData) -> Result<ArrayValue, String> {
        let a = ArrayValue { shape, data };
        a.validate()?;
        Ok(a)
    }

    /// Checks `rank >= 1` and `data.len() == product(shape)`.
    pub fn validate(&self) -> Result<(), String> {
        if self.shape.is_empty() {
            return Err("an array must have at least one axis".into());
        }
        let n = checked_size(&self.shape)?;
        if n != self.data.len() {
            return Err(format!(
                "an array of shape {:?} holds {} elements, not {n}",
                self.shape,
                self.data.len()
            ));
        }
        Ok(())
    }

    /// Number of elements: the product of the sizes.
    pub fn size(&self) -> usize {
        self.data.len()
    }

    /// Number of axes.
    pub fn rank(&self) -> usize {
        self.shape.len()
    }
}

/// The largest number of elements of an array the interpreter creates (and of
/// the index space of a `Build`): a bad size is an error, not an abort on
/// allocation failure.
pub const MAX_ELEMS: usize = 1 << 28;

/// The product of `shape`, or `Err` above [`MAX_ELEMS`].
pub(crate) fn checked_size(shape: &[usize]) -> Result<usize, String> {
    shape
        .iter()
        .try_fold(1usize, |n, s| n.checked_mul(*s))
        .filter(|n| *n <= MAX_ELEMS)
        .ok_or_else(|| {
            format!("array of shape {shape:?} is too large (limit {MAX_ELEMS} elements)")
        })
}

impl Value {
    /// An `f64` array of the given shape, row-major.
    ///
    /// # Panics
    /// If `data.len()` is not the product of `shape` or `shape` is empty.
    pub fn f64s(shape: &[usize], data: impl Into<Vec<f64>>) -> Value {
        Value::array(shape, ArrayData::F64(data.into()))
    }

    /// An `i64` array of the given shape, row-major.
    ///
    /// # Panics
    /// As [`Value::f64s`].
    pub fn i64s(shape: &[usize], data: impl Into<Vec<i64>>) -> Value {
        Value::array(shape, ArrayData::I64(data.into()))
    }

    /// A `bool` array of the given shape, row-major.
    ///
    /// # Panics
    /// As [`Value::f64s`].
    pub fn bools(shape: &[usize], data: impl Into<Vec<bool>>) -> Value {
        Value::array(shape, ArrayData::Bool(data.into()))
    }

    fn array(shape: &[usize], data: ArrayData) -> Value {
        match ArrayValue::new(shape.to_vec(), data) {
            Ok(a) => Value::Array(a),
            Err(msg) => panic!("Value::array: {msg}"),
        }
    }

    /// The float, if the value is an `f64` scalar.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::F64(x) => Some(*x),
            _ => None,
        }
    }

    /// The integer, if the value is an `i64` scalar.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::I64(x) => Some(*x),
            _ => None,
        }
    }

    /// The boolean, if the value is a `bool` scalar.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(x) => Some(*x),
            _ => None,
        }
    }

    /// The array, if the value is one.
    pub fn as_array(&self) -> Option<&ArrayValue> {
        match self {
            Value::Array(a) => Some(a),
            _ => None,
        }
    }

    /// The elements, if the value is an `f64` array.
    pub fn as_f64s(&self) -> Option<&[f64]> {
        match self {
            Value::Array(ArrayValue {
                data: ArrayData::F64(d),
                ..
            }) => Some(d),
            _ => None,
        }
    }

    /// The elements, if the value is an `i64` array.
    pub fn as_i64s(&self) -> Option<&[i64]> {
        match self {
            Value::Array(ArrayValue {
                data: ArrayData::I64(d),
                ..
            }) => Some(d),
            _ => None,
        }
    }

    /// The components, if the value is a tuple.
    pub fn as_tuple(&self) -> Option<&[Value]> {
        match self {
            Value::Tuple(vs) => Some(vs),
            _ => None,
        }
    }

    /// The shape: `[]` for a scalar, the sizes for an array, `None` for a tuple.
    pub fn shape(&self) -> Option<&[usize]> {
        match self {
            Value::F64(_) | Value::I64(_) | Value::Bool(_) => Some(&[]),
            Value::Array(a) => Some(&a.shape),
            Value::Tuple(_) => None,
        }
    }

    /// Number of scalars in the value: 1 for a scalar, the size of an array,
    /// the sum over the components of a tuple.
    pub fn num_scalars(&self) -> usize {
        match self {
            Value::F64(_) | Value::I64(_) | Value::Bool(_) => 1,
            Value::Array(a) => a.size(),
            Value::Tuple(vs) => vs.iter().map(Value::num_scalars).sum(),
        }
    }

    /// Whether the value has type `ty` (element types, ranks and tuple
    /// structure; sizes are dynamic).
    pub fn has_type(&self, ty: &Ty) -> bool {
        match (self, ty) {
            (Value::F64(_), Ty::Scalar(Scalar::F64))
            | (Value::I64(_), Ty::Scalar(Scalar::I64))
            | (Value::Bool(_), Ty::Scalar(Scalar::Bool)) => true,
            (Value::Array(a), Ty::Array { elem, rank }) => {
                a.data.elem() == *elem && a.rank() == *rank
            }
            (Value::Tuple(vs), Ty::Tuple(ts)) => {
                vs.len() == ts.len() && vs.iter().zip(ts).all(|(v, t)| v.has_type(t))
            }
            _ => false,
        }
    }

    /// Checks the array invariants of every array inside the value.
    pub fn validate(&self) -> Result<(), String> {
        match self {
            Value::Array(a) => a.validate(),
            Value::Tuple(vs) => vs.iter().try_for_each(Value::validate),
            _ => Ok(()),
        }
    }

    /// The zero of the value's space: `0.0`, `0`, `false`, arrays of those of
    /// the same shape, tuples componentwise.
    pub fn zeros_like(&self) -> Value {
        match self {
            Value::F64(_) => Value::F64(0.0),
            Value::I64(_) => Value::I64(0),
            Value::Bool(_) => Value::Bool(false),
            Value::Tuple(vs) => Value::Tuple(vs.iter().map(Value::zeros_like).collect()),
            Value::Array(a) => Value::Array(ArrayValue {
                shape: a.shape.clone(),
                data: ArrayData::zeros(a.data.elem(), a.size()),
            }),
        }
    }

    /// `self + other`, elementwise over `f64` scalars and arrays of one shape,
    /// componentwise over tuples (the addition of a linear space).
    ///
    /// # Panics
    /// If the values are not of one linear-space type and shape.
    pub fn add(&self, other: &Value) -> Value {
        match self.try_add(other) {
            Ok(v) => v,
            Err(msg) => panic!("Value::add: {msg}"),
        }
    }

    /// `self + other` as [`Value::add`], `Err` on a type or shape mismatch.
    pub fn try_add(&self, other: &Value) -> Result<Value, String> {
        match (self, other) {
            (Value::F64(a), Value::F64(b)) => Ok(Value::F64(a + b)),
            (Value::Tuple(xs), Value::Tuple(ys)) if xs.len() == ys.len() => Ok(Value::Tuple(
                xs.iter()
                    .zip(ys)
                    .map(|(x, y)| x.try_add(y))
                    .collect::<Result<_, _>>()?,
            )),
            (Value::Array(a), Value::Array(b)) if a.shape == b.shape => match (&a.data, &b.data) {
                (ArrayData::F64(x), ArrayData::F64(y)) => Ok(Value::Array(ArrayValue {
                    shape: a.shape.clone(),
                    data: ArrayData::F64(x.iter().zip(y).map(|(p, q)| p + q).collect()),
                })),
                _ => Err(mismatch("add", self, other)),
            },
            _ => Err(mismatch("add", self, other)),
        }
    }

    /// `-self` over a linear-space value, `Err` if it is not one.
    pub fn try_neg(&self) -> Result<Value, String> {
        match self {
            Value::F64(x) => Ok(Value::F64(-x)),
            Value::Tuple(vs) => Ok(Value::Tuple(
                vs.iter().map(Value::try_neg).collect::<Result<_, _>>()?,
            )),
            Value::Array(ArrayValue {
                shape,
                data: ArrayData::F64(d),
            }) => Ok(Value::Array(ArrayValue {
                shape: shape.clone(),
                data: ArrayData::F64(d.iter().map(|x| -x).collect()),
            })),
            _ => Err(format!(
                "negation of {}, not a linear value",
                describe(self)
            )),
        }
    }

    /// `c * self`: every `f64` (scalar or array element) multiplied by `c`;
    /// integers and booleans are returned unchanged.
    pub fn scale(&self, c: f64) -> Value {
        match self {
            Value::F64(x) => Value::F64(c * x),
            Value::I64(_) | Value::Bool(_) => self.clone(),
            Value::Tuple(vs) => Value::Tuple(vs.iter().map(|v| v.scale(c)).collect()),
            Value::Array(ArrayValue {
                shape,
                data: ArrayData::F64(d),
            }) => Value::Array(ArrayValue {
                shape: shape.clone(),
                data: ArrayData::F64(d.iter().map(|x| c * x).collect()),
            }),
            Value::Array(_) => self.clone(),
        }
    }

    /// The largest absolute difference between corresponding scalars:
    /// `max |a - b|`, with NaN vs NaN counting as 0, NaN vs a number and any
    /// difference in type, shape or tuple structure as `+inf`, equal infinities
    /// as 0 and booleans as 0 (equal) or `+inf`. 0 for empty arrays.
    pub fn max_abs_diff(&self, other: &Value) -> f64 {
        match (self, other) {
            (Value::F64(a), Value::F64(b)) => f64_diff(*a, *b),
            (Value::I64(a), Value::I64(b)) => (i128::from(*a) - i128::from(*b)).abs() as f64,
            (Value::Bool(a), Value::Bool(b)) => bool_diff(*a, *b),
            (Value::Tuple(xs), Value::Tuple(ys)) if xs.len() == ys.len() => xs
                .iter()
                .zip(ys)
                .map(|(x, y)| x.max_abs_diff(y))
                .fold(0.0, f64::max),
            (Value::Array(a), Value::Array(b)) if a.shape == b.shape => match (&a.data, &b.data) {
                (ArrayData::F64(x), ArrayData::F64(y)) => fold_diff(x, y, f64_diff),
                (ArrayData::I64(x), ArrayData::I64(y)) => {
                    fold_diff(x, y, |p, q| (i128::from(p) - i128::from(q)).abs() as f64)
                }
                (ArrayData::Bool(x), ArrayData::Bool(y)) => fold_diff(x, y, bool_diff),
                _ => f64::INFINITY,
            },
            _ => f64::INFINITY,
        }
    }

    /// Bit-identical equality: same structure, shapes and element types, and
    /// every `f64` with the same bits (so `NaN` equals itself, `0.0 != -0.0`).
    pub fn bits_eq(&self, other: &Value) -> bool {
        match (self, other) {
            (Value::F64(a), Value::F64(b)) => a.to_bits() == b.to_bits(),
            (Value::Tuple(xs), Value::Tuple(ys)) => {
                xs.len() == ys.len() && xs.iter().zip(ys).all(|(x, y)| x.bits_eq(y))
            }
            (Value::Array(a), Value::Array(b)) if a.shape == b.shape => match (&a.data, &b.data) {
                (ArrayData::F64(x), ArrayData::F64(y)) => {
                    x.iter().zip(y).all(|(p, q)| p.to_bits() == q.to_bits())
                }
                _ => a.data == b.data,
            },
            _ => self == other,
        }
    }
}

/// The inner product of two values of one linear-space type: the sum of the
/// products of corresponding `f64`s over scalars, arrays and tuples,
/// `<a, b> = sum_k a_k * b_k`.
///
/// # Panics
/// If the values are not of one linear-space type and shape.
pub fn dot(a: &Value, b: &Value) -> f64 {
    match try_dot(a, b) {
        Ok(x) => x,
        Err(msg) => panic!("dot: {msg}"),
    }
}

fn try_dot(a: &Value, b: &Value) -> Result<f64, String> {
    match (a, b) {
        (Value::F64(x), Value::F64(y)) => Ok(x * y),
        (Value::Tuple(xs), Value::Tuple(ys)) if xs.len() == ys.len() => {
            xs.iter().zip(ys).map(|(x, y)| try_dot(x, y)).sum()
        }
        (Value::Array(p), Value::Array(q)) if p.shape == q.shape => match (&p.data, &q.data) {
            (ArrayData::F64(x), ArrayData::F64(y)) => Ok(x.iter().zip(y).map(|(s, t)| s * t).sum()),
            _ => Err(mismatch("dot", a, b)),
        },
        _ => Err(mismatch("dot", a, b)),
    }
}

fn f64_diff(a: f64, b: f64) -> f64 {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => 0.0,
        (true, false) | (false, true) => f64::INFINITY,
        _ if a == b => 0.0,
        _ => (a - b).abs(),
    }
}

fn bool_diff(a: bool, b: bool) -> f64 {
    if a == b {
        0.0
    } else {
        f64::INFINITY
    }
}

fn fold_diff<T: Copy>(x: &[T], y: &[T], d: impl Fn(T, T) -> f64) -> f64 {
    x.iter().zip(y).map(|(p, q)| d(*p, *q)).fold(0.0, f64::max)
}

fn mismatch(what: &str, a: &Value, b: &Value) -> String {
    format!("{what} of {} and {}", describe(a), describe(b))
}

/// A short description of a value's type and shape, for error messages:
/// `f64`, `[f64; 2x3]`, `(f64, [i64; 4])`.
pub(crate) fn describe(v: &Value) -> String {
    match v {
        Value::F64(_) => "f64".into(),
        Value::I64(_) => "i64".into(),
        Value::Bool(_) => "bool".into(),
        Value::Tuple(vs) => {
            let parts: Vec<String> = vs.iter().map(describe).collect();
            format!("({})", parts.join(", "))
        }
        Value::Array(a) => {
            let dims: Vec<String> = a.shape.iter().map(|s| s.to_string()).collect();
            format!("[{}; {}]", a.data.elem(), dims.join("x"))
        }
    }
}

impl fmt::Display for Value {
    /// Scalars as Rust prints them (`1.5`, `3`, `true`), tuples `(a, b)`,
    /// arrays as nested lists `[[1.0, 2.0], [3.0, 4.0]]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::F64(x) => write!(f, "{x:?}"),
            Value::I64(x) => write!(f, "{x}"),
            Value::Bool(x) => write!(f, "{x}"),
            Value::Tuple(vs) => {
                f.write_str("(")?;
                for (k, v) in vs.iter().enumerate() {
                    if k > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{v}")?;
                }
                f.write_str(")")
            }
            Value::Array(a) => write_nested(f, &a.shape, &a.data, 0),
        }
    }
}

fn write_nested(
    f: &mut fmt::Formatter<'_>,
    shape: &[usize],
    data: &ArrayData,
    offset: usize,
) -> fmt::Result {
    let inner: usize = shape[1..].iter().product();
    f.write_str("[")?;
    for k in 0..shape[0] {
        if k > 0 {
            f.write_str(", ")?;
        }
        if shape.len() == 1 {
            match data.get(offset + k) {
                Some(v) => write!(f, "{v}")?,
                None => f.write_str("?")?,
            }
        } else {
            write_nested(f, &shape[1..], data, offset + k * inner)?;
        }
    }
    f.write_str("]")
}
