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
pub(crate) fn eval_prim(p: Prim, args: &[Sc]) -> Result<Sc, String> {
    match *args {
        [x] if p.arity() == 1 => unary(p, x),
        [x, y] if p.arity() == 2 => binary(p, x, y),
        [Sc::B(c), x, y] if p == Prim::Select && same_kind(x, y) => Ok(if c { x } else { y }),
        [Sc::F(a), Sc::F(b), Sc::F(c)] if p == Prim::MulAdd => Ok(Sc::F(a.mul_add(b, c))),
        // Rust's `f64::clamp` panics unless `lo <= hi`
        [Sc::F(x), Sc::F(lo), Sc::F(hi)] if p == Prim::Clamp => {
            if lo <= hi {
                Ok(Sc::F(x.clamp(lo, hi)))
            } else {
                Err(format!(
                    "clamp: min > max, or either was NaN. min = {lo:?}, max = {hi:?}"
                ))
            }
        }
        _ => Err(bad_operands(p, args)),
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

/// The `f64 -> f64` method of a unary float primitive.
fn float_unary(p: Prim) -> Option<fn(f64) -> f64> {
    Some(match p {
        Prim::Neg => |x: f64| -x,
        Prim::Abs => f64::abs,
        Prim::Sin => f64::sin,
        Prim::Cos => f64::cos,
        Prim::Tan => f64::tan,
        Prim::Exp => f64::exp,
        Prim::Ln => f64::ln,
        Prim::Log2 => f64::log2,
        Prim::Log10 => f64::log10,
        Prim::Sqrt => f64::sqrt,
        Prim::Tanh => f64::tanh,
        Prim::Sinh => f64::sinh,
        Prim::Cosh => f64::cosh,
        Prim::Atan => f64::atan,
        Prim::ExpM1 => f64::exp_m1,
        Prim::Ln1p => f64::ln_1p,
        Prim::Exp2 => f64::exp2,
        Prim::Cbrt => f64::cbrt,
        _ => return None,
    })
}

fn unary(p: Prim, x: Sc) -> Result<Sc, String> {
    let ovf = || overflow(p, &[x]);
    match (p, x) {
        (Prim::Neg, Sc::I(a)) => a.checked_neg().map(Sc::I).ok_or_else(ovf),
        (Prim::Abs, Sc::I(a)) => a.checked_abs().map(Sc::I).ok_or_else(ovf),
        (Prim::Not, Sc::B(a)) => Ok(Sc::B(!a)),
        (Prim::ToF64, Sc::I(a)) => Ok(Sc::F(a as f64)),
        (Prim::ToI64, Sc::F(a)) => Ok(Sc::I(a as i64)),
        (Prim::FloatToInt(t), Sc::F(a)) => Ok(Sc::I(t.from_f64(a))),
        (Prim::IntCast(t), Sc::I(a)) => Ok(Sc::I(t.wrap(a))),
        (Prim::U64ToF64, Sc::I(a)) => Ok(Sc::F(a as u64 as f64)),
        (_, Sc::F(a)) => float_unary(p)
            .map(|f| Sc::F(f(a)))
            .ok_or_else(|| bad_operands(p, &[x])),
        _ => Err(bad_operands(p, &[x])),
    }
}

fn binary(p: Prim, x: Sc, y: Sc) -> Result<Sc, String> {
    match (x, y) {
        (Sc::F(a), Sc::F(b)) => float_binary(p, a, b),
        (Sc::I(a), Sc::I(b)) => int_binary(p, a, b),
        (Sc::F(a), Sc::I(n)) if p == Prim::Powi => i32::try_from(n)
            .map(|n| Sc::F(a.powi(n)))
            .map_err(|_| format!("powi exponent {n} does not fit in i32")),
        (Sc::B(a), Sc::B(b)) => match p {
            Prim::Eq => Ok(Sc::B(a == b)),
            Prim::Ne => Ok(Sc::B(a != b)),
            Prim::And => Ok(Sc::B(a && b)),
            Prim::Or => Ok(Sc::B(a || b)),
            _ => Err(bad_operands(p, &[x, y])),
        },
        _ => Err(bad_operands(p, &[x, y])),
    }
}

fn float_binary(p: Prim, a: f64, b: f64) -> Result<Sc, String> {
    Ok(match p {
        Prim::Add => Sc::F(a + b),
        Prim::Sub => Sc::F(a - b),
        Prim::Mul => Sc::F(a * b),
        Prim::Div => Sc::F(a / b),
        Prim::Max => Sc::F(a.max(b)),
        Prim::Min => Sc::F(a.min(b)),
        Prim::Powf => Sc::F(a.powf(b)),
        Prim::Atan2 => Sc::F(a.atan2(b)),
        Prim::Hypot => Sc::F(a.hypot(b)),
        Prim::Lt => Sc::B(a < b),
        Prim::Le => Sc::B(a <= b),
        Prim::Gt => Sc::B(a > b),
        Prim::Ge => Sc::B(a >= b),
        Prim::Eq => Sc::B(a == b),
        Prim::Ne => Sc::B(a != b),
        _ => return Err(bad_operands(p, &[Sc::F(a), Sc::F(b)])),
    })
}

fn int_binary(p: Prim, a: i64, b: i64) -> Result<Sc, String> {
    let checked = |r: Option<i64>| {
        r.map(Sc::I)
            .ok_or_else(|| overflow(p, &[Sc::I(a), Sc::I(b)]))
    };
    match p {
        Prim::Add => checked(a.checked_add(b)),
        Prim::Sub => checked(a.checked_sub(b)),
        Prim::Mul => checked(a.checked_mul(b)),
        Prim::Div => checked(a.checked_div(b)),
        Prim::Rem => checked(a.checked_rem(b)),
        Prim::IntArith(op, t) => checked(t.checked(op, a, b)),
        Prim::ULt => Ok(Sc::B((a as u64) < (b as u64))),
        Prim::ULe => Ok(Sc::B((a as u64) <= (b as u64))),
        Prim::UGt => Ok(Sc::B((a as u64) > (b as u64))),
        Prim::UGe => Ok(Sc::B((a as u64) >= (b as u64))),
        Prim::UMax => Ok(Sc::I((a as u64).max(b as u64) as i64)),
        Prim::UMin => Ok(Sc::I((a as u64).min(b as u64) as i64)),
        Prim::Max => Ok(Sc::I(a.max(b))),
        Prim::Min => Ok(Sc::I(a.min(b))),
        Prim::Lt => Ok(Sc::B(a < b)),
        Prim::Le => Ok(Sc::B(a <= b)),
        Prim::Gt => Ok(Sc::B(a > b)),
        Prim::Ge => Ok(Sc::B(a >= b)),
        Prim::Eq => Ok(Sc::B(a == b)),
        Prim::Ne => Ok(Sc::B(a != b)),
        _ => Err(bad_operands(p, &[Sc::I(a), Sc::I(b)])),
    }
}
