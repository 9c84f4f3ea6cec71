//! Scalar primitives: Rust's `f64` / `i64` / `bool` operations of the same name,
//! with `i64` overflow, division by zero and out-of-range `powi` exponents as
//! errors instead of panics or wrap-around.

use super::value::Value;
use crate::ir::Prim;

/// A scalar operand or result.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Sc {
    /// A float.
    F(f64),
    /// An integer.
    I(i64),
    /// A boolean.
    B(bool),
}

impl Sc {
    /// The scalar of a value, `None` for arrays and tuples.
    pub(crate) fn of(v: &Value) -> Option<Sc> {
        match v {
            Value::F64(x) => Some(Sc::F(*x)),
            Value::I64(x) => Some(Sc::I(*x)),
            Value::Bool(x) => Some(Sc::B(*x)),
            _ => None,
        }
    }

    /// The scalar as a value.
    pub(crate) fn value(self) -> Value {
        match self {
            Sc::F(x) => Value::F64(x),
            Sc::I(x) => Value::I64(x),
            Sc::B(x) => Value::Bool(x),
        }
    }

    /// `f64`, `i64` or `bool`.
    pub(crate) fn ty_name(self) -> &'static str {
        match self {
            Sc::F(_) => "f64",
            Sc::I(_) => "i64",
            Sc::B(_) => "bool",
        }
    }
}

/// `p(args)`; `Err` on operand types the typing rule rejects, on `i64`
/// overflow or division by zero, and on a `powi` exponent outside `i32`.
///
/// One exhaustive `match` on the primitive: a new [`Prim`] is a compile error
/// here. The helpers' `_ =>` arms are operand kinds the checker rules out.
pub(crate) fn eval_prim(p: Prim, args: &[Sc]) -> Result<Sc, String> {
    use Prim as P;
    let bad = || bad_operands(p, args);
    match p {
        P::Add => arith(p, args, |a, b| a + b, i64::checked_add),
        P::Sub => arith(p, args, |a, b| a - b, i64::checked_sub),
        P::Mul => arith(p, args, |a, b| a * b, i64::checked_mul),
        P::Div => arith(p, args, |a, b| a / b, i64::checked_div),
        P::Rem => arith(p, args, |a, b| a % b, i64::checked_rem),
        P::IntArith(op, t) => int2(p, args, |a, b| t.checked(op, a, b)),
        P::Max => arith(p, args, f64::max, |a, b| Some(a.max(b))),
        P::Min => arith(p, args, f64::min, |a, b| Some(a.min(b))),
        P::UMax => int2(p, args, |a, b| Some((a as u64).max(b as u64) as i64)),
        P::UMin => int2(p, args, |a, b| Some((a as u64).min(b as u64) as i64)),
        P::Neg => match *args {
            [Sc::F(a)] => Ok(Sc::F(-a)),
            [Sc::I(a)] => a.checked_neg().map(Sc::I).ok_or_else(|| overflow(p, args)),
            _ => Err(bad()),
        },
        P::Abs => match *args {
            [Sc::F(a)] => Ok(Sc::F(a.abs())),
            [Sc::I(a)] => a.checked_abs().map(Sc::I).ok_or_else(|| overflow(p, args)),
            _ => Err(bad()),
        },
        P::Sin => float1(p, args, f64::sin),
        P::Cos => float1(p, args, f64::cos),
        P::Tan => float1(p, args, f64::tan),
        P::Exp => float1(p, args, f64::exp),
        P::Ln => float1(p, args, f64::ln),
        P::Log2 => float1(p, args, f64::log2),
        P::Log10 => float1(p, args, f64::log10),
        P::Sqrt => float1(p, args, f64::sqrt),
        P::Tanh => float1(p, args, f64::tanh),
        P::Sinh => float1(p, args, f64::sinh),
        P::Cosh => float1(p, args, f64::cosh),
        P::Atan => float1(p, args, f64::atan),
        P::Asin => float1(p, args, f64::asin),
        P::Acos => float1(p, args, f64::acos),
        P::Asinh => float1(p, args, f64::asinh),
        P::Acosh => float1(p, args, f64::acosh),
        P::Atanh => float1(p, args, f64::atanh),
        P::ExpM1 => float1(p, args, f64::exp_m1),
        P::Ln1p => float1(p, args, f64::ln_1p),
        P::Exp2 => float1(p, args, f64::exp2),
        P::Cbrt => float1(p, args, f64::cbrt),
        P::Floor => float1(p, args, f64::floor),
        P::Ceil => float1(p, args, f64::ceil),
        P::Round => float1(p, args, f64::round),
        P::Trunc => float1(p, args, f64::trunc),
        P::Signum => float1(p, args, f64::signum),
        P::Powf => float2(p, args, f64::powf),
        P::Atan2 => float2(p, args, f64::atan2),
        P::Hypot => float2(p, args, f64::hypot),
        P::Copysign => float2(p, args, f64::copysign),
        P::Powi => match *args {
            [Sc::F(a), Sc::I(n)] => i32::try_from(n)
                .map(|n| Sc::F(a.powi(n)))
                .map_err(|_| format!("powi exponent {n} does not fit in i32")),
            _ => Err(bad()),
        },
        P::MulAdd => match *args {
            [Sc::F(a), Sc::F(b), Sc::F(c)] => Ok(Sc::F(a.mul_add(b, c))),
            _ => Err(bad()),
        },
        // Rust's `f64::clamp` panics unless `lo <= hi`
        P::Clamp => match *args {
            [Sc::F(x), Sc::F(lo), Sc::F(hi)] if lo <= hi => Ok(Sc::F(x.clamp(lo, hi))),
            [Sc::F(_), Sc::F(lo), Sc::F(hi)] => Err(format!(
                "clamp: min > max, or either was NaN. min = {lo:?}, max = {hi:?}"
            )),
            _ => Err(bad()),
        },
        P::Lt => compare(p, args, Some(|a, b| a < b), Some(|a, b| a < b), None),
        P::Le => compare(p, args, Some(|a, b| a <= b), Some(|a, b| a <= b), None),
        P::Gt => compare(p, args, Some(|a, b| a > b), Some(|a, b| a > b), None),
        P::Ge => compare(p, args, Some(|a, b| a >= b), Some(|a, b| a >= b), None),
        P::Eq => compare(
            p,
            args,
            Some(|a, b| a == b),
            Some(|a, b| a == b),
            Some(|a, b| a == b),
        ),
        P::Ne => compare(
            p,
            args,
            Some(|a, b| a != b),
            Some(|a, b| a != b),
            Some(|a, b| a != b),
        ),
        P::ULt => compare(p, args, None, Some(|a, b| (a as u64) < (b as u64)), None),
        P::ULe => compare(p, args, None, Some(|a, b| (a as u64) <= (b as u64)), None),
        P::UGt => compare(p, args, None, Some(|a, b| (a as u64) > (b as u64)), None),
        P::UGe => compare(p, args, None, Some(|a, b| (a as u64) >= (b as u64)), None),
        P::And => compare(p, args, None, None, Some(|a, b| a && b)),
        P::Or => compare(p, args, None, None, Some(|a, b| a || b)),
        P::Not => match *args {
            [Sc::B(a)] => Ok(Sc::B(!a)),
            _ => Err(bad()),
        },
        P::ToF64 => match *args {
            [Sc::I(a)] => Ok(Sc::F(a as f64)),
            _ => Err(bad()),
        },
        P::U64ToF64 => match *args {
            [Sc::I(a)] => Ok(Sc::F(a as u64 as f64)),
            _ => Err(bad()),
        },
        P::ToI64 => match *args {
            [Sc::F(a)] => Ok(Sc::I(a as i64)),
            _ => Err(bad()),
        },
        P::FloatToInt(t) => match *args {
            [Sc::F(a)] => Ok(Sc::I(t.from_f64(a))),
            _ => Err(bad()),
        },
        P::IntCast(t) => match *args {
            [Sc::I(a)] => Ok(Sc::I(t.wrap(a))),
            _ => Err(bad()),
        },
        P::Select => match *args {
            [Sc::B(c), x, y] if same_kind(x, y) => Ok(if c { x } else { y }),
            _ => Err(bad()),
        },
    }
}

fn same_kind(x: Sc, y: Sc) -> bool {
    std::mem::discriminant(&x) == std::mem::discriminant(&y)
}

fn bad_operands(p: Prim, args: &[Sc]) -> String {
    let ts: Vec<&str> = args.iter().map(|a| a.ty_name()).collect();
    format!("{} applied to ({})", p.name(), ts.join(", "))
}

fn overflow(p: Prim, args: &[Sc]) -> String {
    let xs: Vec<String> = args
        .iter()
        .map(|a| match a {
            Sc::I(x) => x.to_string(),
            other => format!("{other:?}"),
        })
        .collect();
    format!(
        "i64 {} overflows or divides by zero: ({})",
        p.name(),
        xs.join(", ")
    )
}

/// A float-only unary primitive.
fn float1(p: Prim, args: &[Sc], f: fn(f64) -> f64) -> Result<Sc, String> {
    match *args {
        [Sc::F(a)] => Ok(Sc::F(f(a))),
        _ => Err(bad_operands(p, args)),
    }
}

/// A float-only binary primitive.
fn float2(p: Prim, args: &[Sc], f: fn(f64, f64) -> f64) -> Result<Sc, String> {
    match *args {
        [Sc::F(a), Sc::F(b)] => Ok(Sc::F(f(a, b))),
        _ => Err(bad_operands(p, args)),
    }
}

/// An integer-only binary primitive; `None` from `f` is an overflow (or a
/// division by zero).
fn int2(p: Prim, args: &[Sc], f: impl Fn(i64, i64) -> Option<i64>) -> Result<Sc, String> {
    match *args {
        [Sc::I(a), Sc::I(b)] => f(a, b).map(Sc::I).ok_or_else(|| overflow(p, args)),
        _ => Err(bad_operands(p, args)),
    }
}

/// A binary primitive of `f64` pairs (`f`) and checked `i64` pairs (`i`).
fn arith(
    p: Prim,
    args: &[Sc],
    f: fn(f64, f64) -> f64,
    i: impl Fn(i64, i64) -> Option<i64>,
) -> Result<Sc, String> {
    match *args {
        [Sc::F(a), Sc::F(b)] => Ok(Sc::F(f(a, b))),
        _ => int2(p, args, i),
    }
}

/// A comparison (or a boolean connective): `f` on `f64` pairs, `i` on `i64`
/// pairs, `b` on `bool` pairs; `None` where the primitive takes no such pair.
fn compare(
    p: Prim,
    args: &[Sc],
    f: Option<fn(f64, f64) -> bool>,
    i: Option<fn(i64, i64) -> bool>,
    b: Option<fn(bool, bool) -> bool>,
) -> Result<Sc, String> {
    match (args, f, i, b) {
        (&[Sc::F(x), Sc::F(y)], Some(f), _, _) => Ok(Sc::B(f(x, y))),
        (&[Sc::I(x), Sc::I(y)], _, Some(i), _) => Ok(Sc::B(i(x, y))),
        (&[Sc::B(x), Sc::B(y)], _, _, Some(b)) => Ok(Sc::B(b(x, y))),
        _ => Err(bad_operands(p, args)),
    }
}
