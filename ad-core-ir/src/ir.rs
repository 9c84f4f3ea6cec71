//! The IR: typed, first-order, A-normal form, with the non-linear / linear split
//! of Linear A visible in the syntax.
//!
//! A [`Program`] is a list of [`Func`]s. A function body is a [`Block`]: a list of
//! [`Stmt`]s followed by its results. Every statement binds *non-linear* results
//! and *linear* results separately, printed `let (a, b ; da) = e`. Every operand
//! is an [`Atom`] (a variable or a literal) or, for linear operands, a [`Var`].
//! Variables are function-local indices into the function's [`VarTable`]; each
//! variable is bound exactly once in the whole function (nested blocks included)
//! and is either linear or non-linear for its whole life.
//!
//! # Semantics (the interpreter in [`crate::interp`] is normative)
//!
//! Arrays are regular and row-major. Integers used as sizes or indices are `i64`
//! and must be in range at run time (out-of-range is an error, never a wrap).
//! Linear values are ordinary values (`f64`, `[f64]`, tuples of these); linearity
//! is a static discipline checked by [`crate::check`]: every linear variable is
//! consumed exactly once (use [`LinOp::Dup`] to share and [`LinOp::Drop`] to
//! discard), and nothing non-linear is ever computed from a linear value.
//!
//! Compound expressions ([`Call`], [`If`], [`Loop`], [`Build`], [`Map`]) may bind
//! both kinds of results: that is Linear A. After unzip every statement is all
//! non-linear or all linear: that is Linear B.
//!
//! *Stacking.* [`Loop`] per-iteration outputs and [`Build`]/[`Map`] element
//! results are *stacked*: a result of type `t` produced for every index of an
//! index space of shape `s` becomes an array of type `t` with `s` prepended to
//! its shape. All the stacked values must have the same shape (checked at run
//! time). This is how unzip stores residuals: loops stack per-iteration
//! residuals (struct of arrays, one array per residual), maps per-element ones.

use crate::types::Ty;
use std::fmt;

/// A variable: an index into the function's [`VarTable`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Var(pub u32);

/// A source location handle: the macro front end keeps a side table from these
/// ids to spans, so checker and pass errors can point at user code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SrcId(pub u32);

/// What the function knows about one variable.
#[derive(Clone, Debug, PartialEq)]
pub struct VarInfo {
    /// A readable name hint (not unique; the printer appends the index).
    pub name: String,
    /// Its type.
    pub ty: Ty,
    /// Linear (a tangent or cotangent) or non-linear (a primal value).
    pub linear: bool,
}

/// The variables of one function.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct VarTable {
    /// Indexed by [`Var`].
    pub vars: Vec<VarInfo>,
}

impl VarTable {
    /// Creates a fresh variable.
    pub fn fresh(&mut self, name: impl Into<String>, ty: Ty, linear: bool) -> Var {
        let v = Var(self.vars.len() as u32);
        self.vars.push(VarInfo {
            name: name.into(),
            ty,
            linear,
        });
        v
    }

    /// The info of a variable. Panics on a variable of another function.
    pub fn info(&self, v: Var) -> &VarInfo {
        &self.vars[v.0 as usize]
    }

    /// The type of a variable.
    pub fn ty(&self, v: Var) -> &Ty {
        &self.info(v).ty
    }

    /// Whether a variable is linear.
    pub fn is_linear(&self, v: Var) -> bool {
        self.info(v).linear
    }

    /// Number of variables.
    pub fn len(&self) -> usize {
        self.vars.len()
    }

    /// Whether the table is empty.
    pub fn is_empty(&self) -> bool {
        self.vars.is_empty()
    }
}

/// An operand: a variable or a literal.
#[derive(Clone, Copy, Debug)]
pub enum Atom {
    /// A variable (non-linear when used as a non-linear operand).
    Var(Var),
    /// A float literal.
    F64(f64),
    /// An integer literal.
    I64(i64),
    /// A boolean literal.
    Bool(bool),
}

impl PartialEq for Atom {
    /// Literals compare by bits, so `NaN == NaN` and `0.0 != -0.0` (what CSE needs).
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Atom::Var(a), Atom::Var(b)) => a == b,
            (Atom::F64(a), Atom::F64(b)) => a.to_bits() == b.to_bits(),
            (Atom::I64(a), Atom::I64(b)) => a == b,
            (Atom::Bool(a), Atom::Bool(b)) => a == b,
            _ => false,
        }
    }
}
impl Eq for Atom {}
impl std::hash::Hash for Atom {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        std::mem::discriminant(self).hash(state);
        match self {
            Atom::Var(v) => v.hash(state),
            Atom::F64(x) => x.to_bits().hash(state),
            Atom::I64(x) => x.hash(state),
            Atom::Bool(x) => x.hash(state),
        }
    }
}

impl Atom {
    /// The literal zero of a scalar type (`0.0`, `0`, `false`).
    pub fn zero(elem: crate::types::Scalar) -> Atom {
        match elem {
            crate::types::Scalar::F64 => Atom::F64(0.0),
            crate::types::Scalar::I64 => Atom::I64(0),
            crate::types::Scalar::Bool => Atom::Bool(false),
        }
    }

    /// The variable, if the atom is one.
    pub fn var(&self) -> Option<Var> {
        match self {
            Atom::Var(v) => Some(*v),
            _ => None,
        }
    }
}

impl From<Var> for Atom {
    fn from(v: Var) -> Atom {
        Atom::Var(v)
    }
}
impl From<f64> for Atom {
    fn from(x: f64) -> Atom {
        Atom::F64(x)
    }
}
impl From<i64> for Atom {
    fn from(x: i64) -> Atom {
        Atom::I64(x)
    }
}
impl From<bool> for Atom {
    fn from(x: bool) -> Atom {
        Atom::Bool(x)
    }
}

/// One size of a [`ShapeTree`]: a non-linear `i64` atom, or `shape(v, axis)` of a
/// non-linear array variable (kept symbolic so that unzip can store the size as
/// an `i64` residual instead of keeping the whole array alive).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dim {
    /// An `i64` atom.
    Atom(Atom),
    /// `shape(v, axis)` of a non-linear array variable `v`.
    Of(Var, usize),
}

/// The run-time shape of a (linear) value: what is needed to materialise a zero
/// of it. Used where a pass cannot derive shapes from operands: linear results of
/// [`Call`] and [`If`], and the linear parameters of a function.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ShapeTree {
    /// A scalar.
    Scalar,
    /// An array with these sizes.
    Array(Vec<Dim>),
    /// A tuple.
    Tuple(Vec<ShapeTree>),
}

/// Scalar primitives. Arithmetic, `Neg`, `Abs`, `Max`, `Min` and comparisons are
/// polymorphic over `f64` and `i64` (all operands of one type); the others take
/// `f64` unless stated. Semantics are those of Rust's `f64` / `i64` methods of the
/// same name (`i64` division truncates; division by zero is an error).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Prim {
    /// `a + b`
    Add,
    /// `a - b`
    Sub,
    /// `a * b`
    Mul,
    /// `a / b`
    Div,
    /// `a % b`: for `i64` truncated (division by zero is an error), for
    /// `f64` Rust's `%` (`fmod`: `a - b·trunc(a / b)` computed exactly, the
    /// sign of `a`)
    Rem,
    /// `-a`
    Neg,
    /// `|a|`
    Abs,
    /// `max(a, b)` (for `f64`: `f64::max`)
    Max,
    /// `min(a, b)`
    Min,
    /// `sin a`
    Sin,
    /// `cos a`
    Cos,
    /// `tan a`
    Tan,
    /// `e^a`
    Exp,
    /// `ln a`
    Ln,
    /// `log2 a`
    Log2,
    /// `log10 a`
    Log10,
    /// `sqrt a`
    Sqrt,
    /// `tanh a`
    Tanh,
    /// `sinh a`
    Sinh,
    /// `cosh a`
    Cosh,
    /// `atan a`
    Atan,
    /// `asin a`
    Asin,
    /// `acos a`
    Acos,
    /// `asinh a`
    Asinh,
    /// `acosh a`
    Acosh,
    /// `atanh a`
    Atanh,
    /// `e^a - 1`
    ExpM1,
    /// `ln(1 + a)`
    Ln1p,
    /// `a.powi(n)`: `a: f64`, `n: i64` (must fit in `i32`)
    Powi,
    /// `a.powf(b)`
    Powf,
    /// `a.atan2(b)` (`atan(a / b)` with quadrant)
    Atan2,
    /// `a.hypot(b)` = `sqrt(a² + b²)`
    Hypot,
    /// `a.copysign(b)`: `|a|` with the sign bit of `b`
    Copysign,
    /// `a < b` → bool
    Lt,
    /// `a <= b` → bool
    Le,
    /// `a > b` → bool
    Gt,
    /// `a >= b` → bool
    Ge,
    /// `a == b` → bool (also on bools)
    Eq,
    /// `a != b` → bool (also on bools)
    Ne,
    /// `a && b` (bools; both operands are evaluated)
    And,
    /// `a || b` (bools; both operands are evaluated)
    Or,
    /// `!a` (bool)
    Not,
    /// `a as f64` (from i64)
    ToF64,
    /// `a as i64` (from f64, truncating, saturating like Rust's `as`)
    ToI64,
    /// `if c { a } else { b }` on scalars: `c: bool`, `a`, `b` of one type
    Select,
    /// `a.mul_add(b, c)`: `a * b + c` with one rounding (fused, as Rust's `f64::mul_add`)
    MulAdd,
    /// `2^a` (Rust's `f64::exp2`)
    Exp2,
    /// the cube root of `a` (Rust's `f64::cbrt`; defined for negative `a`)
    Cbrt,
    /// `a.floor()`: piecewise constant, no tangent (zero almost everywhere)
    Floor,
    /// `a.ceil()`: piecewise constant, no tangent
    Ceil,
    /// `a.round()` (half away from zero, Rust's `f64::round`): no tangent
    Round,
    /// `a.trunc()`: no tangent
    Trunc,
    /// `a.signum()` (`1.0`, `-1.0`, or NaN; `±0` gives `±1`): no tangent
    Signum,
    /// `a.clamp(lo, hi)` as Rust's `f64::clamp`: `lo` if `a < lo`, `hi` if
    /// `a > hi`, else `a` (NaN stays NaN); an error (Rust panics) unless `lo <= hi`
    Clamp,
    /// `a op b` in the Rust integer type `t` (operands and result hold values of
    /// `t` in `i64`): overflow is an error here, and in generated code follows
    /// the build profile exactly as the user's own `op` on `t` does
    IntArith(IntOp, IntTy),
    /// `a as t` from any integer held in `i64` (wrapping to `t`'s width, as Rust's `as`)
    IntCast(IntTy),
    /// `a as t` from `f64`: truncating, saturating at `t`'s bounds, NaN to 0 (Rust's `as`)
    FloatToInt(IntTy),
    /// `a as f64` from a `u64`/`usize` held in `i64` (its bit pattern)
    U64ToF64,
    /// `a < b` of `u64`/`usize` values held in `i64` (their bit patterns)
    ULt,
    /// `a <= b` of `u64` values
    ULe,
    /// `a > b` of `u64` values
    UGt,
    /// `a >= b` of `u64` values
    UGe,
    /// `max(a, b)` of `u64` values
    UMax,
    /// `min(a, b)` of `u64` values
    UMin,
}

/// A Rust integer type other than `i64`/`isize` (whose values the IR holds
/// in `i64`, `u64`/`usize` values as their bit pattern). `usize` is `U64` and
/// `isize` is `i64` (64-bit targets).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum IntTy {
    /// `u8`
    U8,
    /// `u16`
    U16,
    /// `u32`
    U32,
    /// `u64` and `usize`
    U64,
    /// `i8`
    I8,
    /// `i16`
    I16,
    /// `i32`
    I32,
}

impl IntTy {
    /// Every type.
    pub const ALL: [IntTy; 7] = [
        IntTy::U8,
        IntTy::U16,
        IntTy::U32,
        IntTy::U64,
        IntTy::I8,
        IntTy::I16,
        IntTy::I32,
    ];

    /// The Rust name.
    pub fn name(self) -> &'static str {
        match self {
            IntTy::U8 => "u8",
            IntTy::U16 => "u16",
            IntTy::U32 => "u32",
            IntTy::U64 => "u64",
            IntTy::I8 => "i8",
            IntTy::I16 => "i16",
            IntTy::I32 => "i32",
        }
    }

    /// `v as t` (then back to `i64`): Rust's wrapping integer cast.
    pub fn wrap(self, v: i64) -> i64 {
        match self {
            IntTy::U8 => v as u8 as i64,
            IntTy::U16 => v as u16 as i64,
            IntTy::U32 => v as u32 as i64,
            IntTy::U64 => v,
            IntTy::I8 => v as i8 as i64,
            IntTy::I16 => v as i16 as i64,
            IntTy::I32 => v as i32 as i64,
        }
    }

    /// `x as t` from `f64` (saturating, NaN to 0), held in `i64`.
    pub fn from_f64(self, x: f64) -> i64 {
        match self {
            IntTy::U8 => x as u8 as i64,
            IntTy::U16 => x as u16 as i64,
            IntTy::U32 => x as u32 as i64,
            IntTy::U64 => x as u64 as i64,
            IntTy::I8 => x as i8 as i64,
            IntTy::I16 => x as i16 as i64,
            IntTy::I32 => x as i32 as i64,
        }
    }

    /// `a op b` in `t` with overflow and division by zero as `None` (Rust's
    /// `checked_*`); operands are values of `t` held in `i64`.
    pub fn checked(self, op: IntOp, a: i64, b: i64) -> Option<i64> {
        // operands converted to `t` (a `u64` from its bit pattern)
        macro_rules! on {
            ($t:ty) => {{
                on!($t, <$t>::try_from(a).ok()?, <$t>::try_from(b).ok()?)
            }};
            ($t:ty, $a:expr, $b:expr) => {{
                let (a, b): ($t, $t) = ($a, $b);
                let r = match op {
                    IntOp::Add => a.checked_add(b),
                    IntOp::Sub => a.checked_sub(b),
                    IntOp::Mul => a.checked_mul(b),
                    IntOp::Div => a.checked_div(b),
                    IntOp::Rem => a.checked_rem(b),
                };
                r.map(|r| r as i64)
            }};
        }
        match self {
            IntTy::U8 => on!(u8),
            IntTy::U16 => on!(u16),
            IntTy::U32 => on!(u32),
            IntTy::U64 => on!(u64, a as u64, b as u64),
            IntTy::I8 => on!(i8),
            IntTy::I16 => on!(i16),
            IntTy::I32 => on!(i32),
        }
    }
}

/// An integer arithmetic operator of [`Prim::IntArith`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum IntOp {
    /// `a + b`
    Add,
    /// `a - b`
    Sub,
    /// `a * b`
    Mul,
    /// `a / b`
    Div,
    /// `a % b`
    Rem,
}

impl IntOp {
    /// Every operator.
    pub const ALL: [IntOp; 5] = [IntOp::Add, IntOp::Sub, IntOp::Mul, IntOp::Div, IntOp::Rem];

    /// The IR name (`add`, ...).
    pub fn name(self) -> &'static str {
        match self {
            IntOp::Add => "add",
            IntOp::Sub => "sub",
            IntOp::Mul => "mul",
            IntOp::Div => "div",
            IntOp::Rem => "rem",
        }
    }
}

impl Prim {
    /// Every primitive (each integer type and operator of the parameterised
    /// ones), for tables and tests.
    pub const ALL: [Prim; Prim::BASIC.len() + 5 * 7 + 7 + 7 + 1] = Prim::all();

    const BASIC: [Prim; 60] = [
        Prim::Add,
        Prim::Sub,
        Prim::Mul,
        Prim::Div,
        Prim::Rem,
        Prim::Neg,
        Prim::Abs,
        Prim::Max,
        Prim::Min,
        Prim::Sin,
        Prim::Cos,
        Prim::Tan,
        Prim::Exp,
        Prim::Ln,
        Prim::Log2,
        Prim::Log10,
        Prim::Sqrt,
        Prim::Tanh,
        Prim::Sinh,
        Prim::Cosh,
        Prim::Atan,
        Prim::Asin,
        Prim::Acos,
        Prim::Asinh,
        Prim::Acosh,
        Prim::Atanh,
        Prim::ExpM1,
        Prim::Ln1p,
        Prim::Powi,
        Prim::Powf,
        Prim::Atan2,
        Prim::Hypot,
        Prim::Copysign,
        Prim::Lt,
        Prim::Le,
        Prim::Gt,
        Prim::Ge,
        Prim::Eq,
        Prim::Ne,
        Prim::And,
        Prim::Or,
        Prim::Not,
        Prim::ToF64,
        Prim::ToI64,
        Prim::Select,
        Prim::MulAdd,
        Prim::Exp2,
        Prim::Cbrt,
        Prim::Floor,
        Prim::Ceil,
        Prim::Round,
        Prim::Trunc,
        Prim::Signum,
        Prim::Clamp,
        Prim::ULt,
        Prim::ULe,
        Prim::UGt,
        Prim::UGe,
        Prim::UMax,
        Prim::UMin,
    ];

    /// [`Prim::ALL`]: every basic primitive, then per integer type its five
    /// operators, cast and float-to-int conversion, then `u64 as f64`.
    const fn all() -> [Prim; Prim::BASIC.len() + 5 * 7 + 7 + 7 + 1] {
        let mut out = [Prim::Add; Prim::BASIC.len() + 5 * 7 + 7 + 7 + 1];
        let mut k = 0;
        while k < Prim::BASIC.len() {
            out[k] = Prim::BASIC[k];
            k += 1;
        }
        let mut t = 0;
        while t < 7 {
            let mut o = 0;
            while o < 5 {
                out[k] = Prim::IntArith(IntOp::ALL[o], IntTy::ALL[t]);
                k += 1;
                o += 1;
            }
            out[k] = Prim::IntCast(IntTy::ALL[t]);
            out[k + 1] = Prim::FloatToInt(IntTy::ALL[t]);
            k += 2;
            t += 1;
        }
        out[k] = Prim::U64ToF64;
        out
    }

    /// The name used by the printer (and the parser).
    pub fn name(self) -> &'static str {
        match self {
            Prim::Add => "add",
            Prim::Sub => "sub",
            Prim::Mul => "mul",
            Prim::Div => "div",
            Prim::Rem => "rem",
            Prim::Neg => "neg",
            Prim::Abs => "abs",
            Prim::Max => "max",
            Prim::Min => "min",
            Prim::Sin => "sin",
            Prim::Cos => "cos",
            Prim::Tan => "tan",
            Prim::Exp => "exp",
            Prim::Ln => "ln",
            Prim::Log2 => "log2",
            Prim::Log10 => "log10",
            Prim::Sqrt => "sqrt",
            Prim::Tanh => "tanh",
            Prim::Sinh => "sinh",
            Prim::Cosh => "cosh",
            Prim::Atan => "atan",
            Prim::Asin => "asin",
            Prim::Acos => "acos",
            Prim::Asinh => "asinh",
            Prim::Acosh => "acosh",
            Prim::Atanh => "atanh",
            Prim::ExpM1 => "exp_m1",
            Prim::Ln1p => "ln_1p",
            Prim::Powi => "powi",
            Prim::Powf => "powf",
            Prim::Atan2 => "atan2",
            Prim::Hypot => "hypot",
            Prim::Copysign => "copysign",
            Prim::Lt => "lt",
            Prim::Le => "le",
            Prim::Gt => "gt",
            Prim::Ge => "ge",
            Prim::Eq => "eq",
            Prim::Ne => "ne",
            Prim::And => "and",
            Prim::Or => "or",
            Prim::Not => "not",
            Prim::ToF64 => "to_f64",
            Prim::ToI64 => "to_i64",
            Prim::Select => "select",
            Prim::MulAdd => "mul_add",
            Prim::Exp2 => "exp2",
            Prim::Cbrt => "cbrt",
            Prim::Floor => "floor",
            Prim::Ceil => "ceil",
            Prim::Round => "round",
            Prim::Trunc => "trunc",
            Prim::Signum => "signum",
            Prim::Clamp => "clamp",
            Prim::IntArith(op, t) => INT_ARITH_NAMES[op as usize][t as usize],
            Prim::IntCast(t) => INT_CAST_NAMES[t as usize],
            Prim::FloatToInt(t) => FLOAT_TO_INT_NAMES[t as usize],
            Prim::U64ToF64 => "u64_to_f64",
            Prim::ULt => "lt_u64",
            Prim::ULe => "le_u64",
            Prim::UGt => "gt_u64",
            Prim::UGe => "ge_u64",
            Prim::UMax => "max_u64",
            Prim::UMin => "min_u64",
        }
    }

    /// Number of operands.
    pub fn arity(self) -> usize {
        match self {
            Prim::Neg
            | Prim::Abs
            | Prim::Sin
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
            | Prim::Ln1p
            | Prim::Not
            | Prim::ToF64
            | Prim::ToI64
            | Prim::Exp2
            | Prim::Cbrt
            | Prim::Floor
            | Prim::Ceil
            | Prim::Round
            | Prim::Trunc
            | Prim::Signum
            | Prim::IntCast(_)
            | Prim::FloatToInt(_)
            | Prim::U64ToF64 => 1,
            Prim::Add
            | Prim::Sub
            | Prim::Mul
            | Prim::Div
            | Prim::Rem
            | Prim::Max
            | Prim::Min
            | Prim::Powi
            | Prim::Powf
            | Prim::Atan2
            | Prim::Hypot
            | Prim::Copysign
            | Prim::Lt
            | Prim::Le
            | Prim::Gt
            | Prim::Ge
            | Prim::Eq
            | Prim::Ne
            | Prim::And
            | Prim::Or
            | Prim::IntArith(..)
            | Prim::ULt
            | Prim::ULe
            | Prim::UGt
            | Prim::UGe
            | Prim::UMax
            | Prim::UMin => 2,
            Prim::Select | Prim::MulAdd | Prim::Clamp => 3,
        }
    }

    /// Whether recomputing the primitive costs about as much as a load from
    /// memory (a few cycles, no libm call): the residual policy of unzip
    /// recomputes chains of such primitives instead of storing their results.
    pub fn is_cheap(self) -> bool {
        match self {
            Prim::Add
            | Prim::Sub
            | Prim::Mul
            | Prim::Div
            | Prim::Neg
            | Prim::Abs
            | Prim::Max
            | Prim::Min
            | Prim::Lt
            | Prim::Le
            | Prim::Gt
            | Prim::Ge
            | Prim::Eq
            | Prim::Ne
            | Prim::And
            | Prim::Or
            | Prim::Not
            | Prim::ToF64
            | Prim::ToI64
            | Prim::Select
            | Prim::MulAdd
            | Prim::Clamp
            | Prim::Floor
            | Prim::Ceil
            | Prim::Round
            | Prim::Trunc
            | Prim::Signum
            | Prim::Copysign
            | Prim::IntArith(..)
            | Prim::IntCast(_)
            | Prim::FloatToInt(_)
            | Prim::U64ToF64
            | Prim::ULt
            | Prim::ULe
            | Prim::UGt
            | Prim::UGe
            | Prim::UMax
            | Prim::UMin => true,
            Prim::Rem
            | Prim::Sin
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
            | Prim::Ln1p
            | Prim::Powi
            | Prim::Powf
            | Prim::Atan2
            | Prim::Hypot
            | Prim::Exp2
            | Prim::Cbrt => false,
        }
    }
}

/// Printer names of [`Prim::IntArith`], by operator and type (the order of
/// [`IntOp::ALL`] and [`IntTy::ALL`]).
const INT_ARITH_NAMES: [[&str; 7]; 5] = [
    [
        "add_u8", "add_u16", "add_u32", "add_u64", "add_i8", "add_i16", "add_i32",
    ],
    [
        "sub_u8", "sub_u16", "sub_u32", "sub_u64", "sub_i8", "sub_i16", "sub_i32",
    ],
    [
        "mul_u8", "mul_u16", "mul_u32", "mul_u64", "mul_i8", "mul_i16", "mul_i32",
    ],
    [
        "div_u8", "div_u16", "div_u32", "div_u64", "div_i8", "div_i16", "div_i32",
    ],
    [
        "rem_u8", "rem_u16", "rem_u32", "rem_u64", "rem_i8", "rem_i16", "rem_i32",
    ],
];

/// Printer names of [`Prim::IntCast`], by type.
const INT_CAST_NAMES: [&str; 7] = [
    "as_u8", "as_u16", "as_u32", "as_u64", "as_i8", "as_i16", "as_i32",
];

/// Printer names of [`Prim::FloatToInt`], by type.
const FLOAT_TO_INT_NAMES: [&str; 7] = [
    "f64_as_u8",
    "f64_as_u16",
    "f64_as_u32",
    "f64_as_u64",
    "f64_as_i8",
    "f64_as_i16",
    "f64_as_i32",
];

/// A reduction operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    /// Sum (0 for an empty array).
    Sum,
    /// Product (1 for an empty array).
    Prod,
    /// Maximum (`-inf` for an empty array).
    Max,
    /// Minimum (`+inf` for an empty array).
    Min,
}

/// Non-linear array operations. `idx` lists are non-linear `i64` atoms.
#[derive(Clone, Debug, PartialEq)]
pub enum ArrayOp {
    /// `arr[i0, .., ik]` with `k <= rank`: an element (`k == rank`) or the
    /// sub-array with the leading `k` axes fixed.
    Index {
        /// The array.
        arr: Atom,
        /// Leading indices.
        idx: Vec<Atom>,
    },
    /// `arr with [idx] = val` (or `+= val` when `add`): a new array equal to `arr`
    /// except at `idx` (an element or a sub-array, as for `Index`).
    Update {
        /// The array.
        arr: Atom,
        /// Leading indices.
        idx: Vec<Atom>,
        /// The new (or added) element / sub-array.
        val: Atom,
        /// Add instead of overwrite.
        add: bool,
    },
    /// `out[k, ..] = arr[idx[k], ..]` for an `[i64]` index array.
    Gather {
        /// The source array.
        arr: Atom,
        /// `[i64]` indices into axis 0.
        idx: Atom,
    },
    /// `out = zeros([len, ..rest]); out[idx[k], ..] += vals[k, ..]` (duplicates summed).
    ScatterAdd {
        /// Length of axis 0 of the result.
        len: Atom,
        /// `[i64]` indices, one per row of `vals`.
        idx: Atom,
        /// The values, `[f64]` of rank >= 1.
        vals: Atom,
    },
    /// Reduction of the whole array (`axis: None`, a scalar) or along one axis.
    Reduce {
        /// The operator.
        op: ReduceOp,
        /// The array (`f64` or `i64`).
        arr: Atom,
        /// `None` for all elements, `Some(a)` to remove axis `a`.
        axis: Option<usize>,
    },
    /// Position of the first maximum (`op = Max`) or minimum (`op = Min`).
    /// Whole array: binds `rank` `i64` results (the multi-index; all 0 for an
    /// empty array). Along `axis`: one `[i64]` array of the reduced shape.
    ArgReduce {
        /// `Max` or `Min`.
        op: ReduceOp,
        /// The array.
        arr: Atom,
        /// As for `Reduce`.
        axis: Option<usize>,
    },
    /// Inclusive prefix sum along axis 0 (`reverse`: suffix sum,
    /// `out[i] = sum_{j >= i} arr[j]`).
    Scan {
        /// The array.
        arr: Atom,
        /// Suffix instead of prefix.
        reverse: bool,
    },
    /// Matrix product by ranks: (1,1) dot, (2,1) mat·vec, (1,2) vec·mat, (2,2) mat·mat.
    MatMul {
        /// Left operand.
        a: Atom,
        /// Right operand.
        b: Atom,
    },
    /// Transpose of a rank-2 array.
    Transpose {
        /// The matrix.
        arr: Atom,
    },
    /// Broadcast to `shape`: `out[j] = arr[j restricted to axes]`; `axes` lists,
    /// increasing, the output axes that `arr`'s axes map to (`arr` may be a
    /// scalar: `axes = []`, a fill). Along `axes`, each size of `arr` equals
    /// the output's or is 1; an axis of length 1 is repeated (ndarray's and
    /// NumPy's stretching: the index into it is 0).
    Broadcast {
        /// The value to repeat.
        arr: Atom,
        /// The output shape.
        shape: Vec<Atom>,
        /// Output axes carrying `arr`'s axes, increasing, `len = rank(arr)`.
        axes: Vec<usize>,
    },
    /// Size of axis `axis` (an `i64`).
    Shape {
        /// The array.
        arr: Atom,
        /// Which axis.
        axis: usize,
    },
    /// The distance in elements between neighbours along axis `axis` in the
    /// array's memory (an `i64`; negative along a reversed axis): generated
    /// code reads the ndarray array's stride, the interpreter's arrays are
    /// row-major (the product of the later axes' sizes). It exists to visit
    /// elements in the order ndarray's `fold` and `Zip` do (their memory
    /// order), and only decides such an order.
    Stride {
        /// The array.
        arr: Atom,
        /// Which axis.
        axis: usize,
    },
}

impl ArrayOp {
    /// The operation's name in printed IR, the keyword [`crate::pretty`]
    /// prints and [`crate::parse`] reads (`index`, `reduce_sum`, `argmax`,
    /// ..). Each name is spelled here only.
    pub fn name(&self) -> &'static str {
        match self {
            ArrayOp::Index { .. } => "index",
            ArrayOp::Update { .. } => "update",
            ArrayOp::Gather { .. } => "gather",
            ArrayOp::ScatterAdd { .. } => "scatter_add",
            ArrayOp::Reduce { op, .. } => match op {
                ReduceOp::Sum => "reduce_sum",
                ReduceOp::Prod => "reduce_prod",
                ReduceOp::Max => "reduce_max",
                ReduceOp::Min => "reduce_min",
            },
            ArrayOp::ArgReduce { op, .. } => match op {
                ReduceOp::Sum => "argsum",
                ReduceOp::Prod => "argprod",
                ReduceOp::Max => "argmax",
                ReduceOp::Min => "argmin",
            },
            ArrayOp::Scan { .. } => "scan",
            ArrayOp::MatMul { .. } => "matmul",
            ArrayOp::Transpose { .. } => "transpose",
            ArrayOp::Broadcast { .. } => "broadcast",
            ArrayOp::Shape { .. } => "shape",
            ArrayOp::Stride { .. } => "stride",
        }
    }

    /// A short prefix for the names of its results (`ix`, `red`, ..).
    pub fn hint(&self) -> &'static str {
        match self {
            ArrayOp::Index { .. } => "ix",
            ArrayOp::Update { .. } => "upd",
            ArrayOp::Gather { .. } => "gat",
            ArrayOp::ScatterAdd { .. } => "sca",
            ArrayOp::Reduce { .. } => "red",
            ArrayOp::ArgReduce { .. } => "arg",
            ArrayOp::Scan { .. } => "scan",
            ArrayOp::MatMul { .. } => "mm",
            ArrayOp::Transpose { .. } => "tr",
            ArrayOp::Broadcast { .. } => "bc",
            ArrayOp::Shape { .. } => "n",
            ArrayOp::Stride { .. } => "st",
        }
    }

    /// Calls `f` on each operand, in the order printed IR lists them (the
    /// array first, then indices, values, sizes).
    pub fn for_each_atom<'a>(&'a self, f: &mut dyn FnMut(&'a Atom)) {
        match self {
            ArrayOp::Index { arr, idx } => {
                f(arr);
                idx.iter().for_each(f);
            }
            ArrayOp::Update { arr, idx, val, .. } => {
                f(arr);
                idx.iter().for_each(&mut *f);
                f(val);
            }
            ArrayOp::Gather { arr, idx } => [arr, idx].into_iter().for_each(f),
            ArrayOp::ScatterAdd { len, idx, vals } => [len, idx, vals].into_iter().for_each(f),
            ArrayOp::Reduce { arr, .. }
            | ArrayOp::ArgReduce { arr, .. }
            | ArrayOp::Scan { arr, .. }
            | ArrayOp::Transpose { arr }
            | ArrayOp::Shape { arr, .. }
            | ArrayOp::Stride { arr, .. } => f(arr),
            ArrayOp::MatMul { a, b } => [a, b].into_iter().for_each(f),
            ArrayOp::Broadcast { arr, shape, .. } => {
                f(arr);
                shape.iter().for_each(f);
            }
        }
    }

    /// As [`ArrayOp::for_each_atom`], rewriting each operand in place.
    pub fn for_each_atom_mut(&mut self, f: &mut dyn FnMut(&mut Atom)) {
        match self {
            ArrayOp::Index { arr, idx } => {
                f(arr);
                idx.iter_mut().for_each(f);
            }
            ArrayOp::Update { arr, idx, val, .. } => {
                f(arr);
                idx.iter_mut().for_each(&mut *f);
                f(val);
            }
            ArrayOp::Gather { arr, idx } => [arr, idx].into_iter().for_each(f),
            ArrayOp::ScatterAdd { len, idx, vals } => [len, idx, vals].into_iter().for_each(f),
            ArrayOp::Reduce { arr, .. }
            | ArrayOp::ArgReduce { arr, .. }
            | ArrayOp::Scan { arr, .. }
            | ArrayOp::Transpose { arr }
            | ArrayOp::Shape { arr, .. }
            | ArrayOp::Stride { arr, .. } => f(arr),
            ArrayOp::MatMul { a, b } => [a, b].into_iter().for_each(f),
            ArrayOp::Broadcast { arr, shape, .. } => {
                f(arr);
                shape.iter_mut().for_each(f);
            }
        }
    }

    /// Its parameters that are not operands (flags, the operator, axes) as
    /// numbers: two operations with the same [`name`](ArrayOp::name),
    /// operands and parameters compute the same value.
    pub fn params(&self) -> Vec<usize> {
        let axis_code = |a: &Option<usize>| a.map_or(usize::MAX, |a| a);
        match self {
            ArrayOp::Index { .. }
            | ArrayOp::Gather { .. }
            | ArrayOp::ScatterAdd { .. }
            | ArrayOp::MatMul { .. }
            | ArrayOp::Transpose { .. } => vec![],
            ArrayOp::Update { idx, add, .. } => vec![idx.len(), *add as usize],
            ArrayOp::Reduce { op, axis, .. } | ArrayOp::ArgReduce { op, axis, .. } => {
                vec![*op as usize, axis_code(axis)]
            }
            ArrayOp::Scan { reverse, .. } => vec![*reverse as usize],
            ArrayOp::Broadcast { axes, .. } => axes.clone(),
            ArrayOp::Shape { axis, .. } | ArrayOp::Stride { axis, .. } => vec![*axis],
        }
    }
}

/// Linear operations: every operand in a `Var` position is linear, every `Atom`
/// non-linear. Each is linear in its linear operands jointly.
#[derive(Clone, Debug, PartialEq)]
pub enum LinOp {
    /// The zero of the given shape (never materialised by the simplifier unless
    /// a result needs it).
    Zero(ShapeTree),
    /// `x + y` (same shapes).
    Add(Var, Var),
    /// `-x`.
    Neg(Var),
    /// `s * x`: `s` non-linear f64 scalar or array; same shapes, or one side a scalar.
    Scale {
        /// Non-linear factor.
        s: Atom,
        /// Linear operand.
        x: Var,
    },
    /// Fan-out: binds two copies of `x`. Transposes to addition.
    Dup(Var),
    /// Discard `x`. Transposes to a zero.
    Drop(Var),
    /// Tuple construction.
    Tuple(Vec<Var>),
    /// Tuple destructuring: binds one linear variable per component.
    Untuple(Var),
    /// `x[idx]` as in [`ArrayOp::Index`].
    Index {
        /// Linear array.
        x: Var,
        /// Leading indices.
        idx: Vec<Atom>,
    },
    /// `x with [idx] = val` / `+= val`, as [`ArrayOp::Update`].
    Update {
        /// Linear array.
        x: Var,
        /// Leading indices.
        idx: Vec<Atom>,
        /// Linear element or sub-array.
        val: Var,
        /// Add instead of overwrite.
        add: bool,
    },
    /// Splits `x` into its element (or leading-axes sub-array) at `idx` and
    /// the array itself, with that element zeroed when `zero`: binds
    /// `(x[idx], x with [idx] = 0)` (`zero`) or `(x[idx], x)` (not `zero`).
    /// It consumes `x` once, so compiled code reads and clears the element in
    /// place on the owned array (O(size of the element)), where `dup` +
    /// `lindex` + `lupdate` would copy the whole array. It is the transpose
    /// of `lupdate` (`=` when `zero`, `+=` otherwise) and transposes back to
    /// it.
    Take {
        /// Linear array.
        x: Var,
        /// Leading indices.
        idx: Vec<Atom>,
        /// Zero the element in the array result.
        zero: bool,
    },
    /// As [`ArrayOp::Gather`].
    Gather {
        /// Linear array.
        x: Var,
        /// `[i64]` indices.
        idx: Atom,
    },
    /// As [`ArrayOp::ScatterAdd`].
    ScatterAdd {
        /// Length of axis 0 of the result.
        len: Atom,
        /// `[i64]` indices.
        idx: Atom,
        /// Linear values.
        x: Var,
    },
    /// Sum of all elements (`axis: None`) or along one axis.
    Sum {
        /// Linear array.
        x: Var,
        /// As for [`ArrayOp::Reduce`].
        axis: Option<usize>,
    },
    /// As [`ArrayOp::Broadcast`].
    Broadcast {
        /// Linear value.
        x: Var,
        /// Output shape.
        shape: Vec<Atom>,
        /// Output axes carrying `x`'s axes.
        axes: Vec<usize>,
    },
    /// Sum to `shape`, the transpose of stretching (see
    /// [`ArrayOp::Broadcast`]): `x` has `shape`'s rank; along each axis
    /// where `shape` has length 1 and `x` does not, `x` is summed (keeping
    /// the axis, of length 1); every other size of `x` equals `shape`'s.
    /// `out[j] = sum of x[i] over i with i_a = j_a where shape_a = x_a`.
    SumTo {
        /// Linear array.
        x: Var,
        /// Output shape, of `x`'s rank.
        shape: Vec<Atom>,
    },
    /// Transpose of a rank-2 linear array.
    Transpose(Var),
    /// `a · x` (`lin_left = false`) or `x · a` (`lin_left = true`), ranks as for
    /// [`ArrayOp::MatMul`].
    MatMul {
        /// Non-linear operand.
        a: Atom,
        /// Linear operand.
        x: Var,
        /// Whether the linear operand is on the left.
        lin_left: bool,
    },
    /// Outer product of two vectors, one linear: `out[i, j] = x[i] * b[j]`
    /// (`lin_left`) or `b[i] * x[j]`.
    Outer {
        /// Linear vector.
        x: Var,
        /// Non-linear vector.
        b: Atom,
        /// Whether the linear operand gives the rows.
        lin_left: bool,
    },
    /// As [`ArrayOp::Scan`].
    Scan {
        /// Linear array.
        x: Var,
        /// Suffix instead of prefix.
        reverse: bool,
    },
}

impl LinOp {
    /// The operation's name in printed IR, the keyword [`crate::pretty`]
    /// prints and [`crate::parse`] reads (`lzero`, `ladd`, `dup`, ..). Each
    /// name is spelled here only.
    pub fn name(&self) -> &'static str {
        match self {
            LinOp::Zero(_) => "lzero",
            LinOp::Add(..) => "ladd",
            LinOp::Neg(_) => "lneg",
            LinOp::Scale { .. } => "lscale",
            LinOp::Dup(_) => "dup",
            LinOp::Drop(_) => "drop",
            LinOp::Tuple(_) => "ltuple",
            LinOp::Untuple(_) => "luntuple",
            LinOp::Index { .. } => "lindex",
            LinOp::Update { .. } => "lupdate",
            LinOp::Take { .. } => "ltake",
            LinOp::Gather { .. } => "lgather",
            LinOp::ScatterAdd { .. } => "lscatter_add",
            LinOp::Sum { .. } => "lsum",
            LinOp::Broadcast { .. } => "lbroadcast",
            LinOp::SumTo { .. } => "lsum_to",
            LinOp::Transpose(_) => "ltranspose",
            LinOp::MatMul { .. } => "lmatmul",
            LinOp::Outer { .. } => "louter",
            LinOp::Scan { .. } => "lscan",
        }
    }

    /// Calls `nl` on each non-linear operand, `lin` on each linear operand
    /// and `shape` on the shape it carries (`lzero`'s), in printed order.
    pub fn for_each_operand<'a>(
        &'a self,
        nl: &mut dyn FnMut(&'a Atom),
        lin: &mut dyn FnMut(Var),
        shape: &mut dyn FnMut(&'a ShapeTree),
    ) {
        match self {
            LinOp::Zero(s) => shape(s),
            LinOp::Add(x, y) => {
                lin(*x);
                lin(*y);
            }
            LinOp::Neg(x)
            | LinOp::Dup(x)
            | LinOp::Drop(x)
            | LinOp::Untuple(x)
            | LinOp::Transpose(x)
            | LinOp::Sum { x, .. }
            | LinOp::Scan { x, .. } => lin(*x),
            LinOp::Scale { s, x } => {
                nl(s);
                lin(*x);
            }
            LinOp::Tuple(xs) => xs.iter().for_each(|x| lin(*x)),
            LinOp::Index { x, idx } | LinOp::Take { x, idx, .. } => {
                lin(*x);
                idx.iter().for_each(nl);
            }
            LinOp::Update { x, idx, val, .. } => {
                lin(*x);
                idx.iter().for_each(nl);
                lin(*val);
            }
            LinOp::Gather { x, idx } => {
                lin(*x);
                nl(idx);
            }
            LinOp::ScatterAdd { len, idx, x } => {
                nl(len);
                nl(idx);
                lin(*x);
            }
            LinOp::Broadcast { x, shape, .. } | LinOp::SumTo { x, shape } => {
                lin(*x);
                shape.iter().for_each(nl);
            }
            LinOp::MatMul { a, x, .. } => {
                nl(a);
                lin(*x);
            }
            LinOp::Outer { x, b, .. } => {
                lin(*x);
                nl(b);
            }
        }
    }

    /// As [`LinOp::for_each_operand`], rewriting each operand in place.
    pub fn for_each_operand_mut<'a>(
        &'a mut self,
        nl: &mut dyn FnMut(&mut Atom),
        lin: &mut dyn FnMut(&mut Var),
        shape: &mut dyn FnMut(&'a mut ShapeTree),
    ) {
        match self {
            LinOp::Zero(s) => shape(s),
            LinOp::Add(x, y) => {
                lin(x);
                lin(y);
            }
            LinOp::Neg(x)
            | LinOp::Dup(x)
            | LinOp::Drop(x)
            | LinOp::Untuple(x)
            | LinOp::Transpose(x)
            | LinOp::Sum { x, .. }
            | LinOp::Scan { x, .. } => lin(x),
            LinOp::Scale { s, x } => {
                nl(s);
                lin(x);
            }
            LinOp::Tuple(xs) => xs.iter_mut().for_each(lin),
            LinOp::Index { x, idx } | LinOp::Take { x, idx, .. } => {
                lin(x);
                idx.iter_mut().for_each(nl);
            }
            LinOp::Update { x, idx, val, .. } => {
                lin(x);
                idx.iter_mut().for_each(nl);
                lin(val);
            }
            LinOp::Gather { x, idx } => {
                lin(x);
                nl(idx);
            }
            LinOp::ScatterAdd { len, idx, x } => {
                nl(len);
                nl(idx);
                lin(x);
            }
            LinOp::Broadcast { x, shape, .. } | LinOp::SumTo { x, shape } => {
                lin(x);
                shape.iter_mut().for_each(nl);
            }
            LinOp::MatMul { a, x, .. } => {
                nl(a);
                lin(x);
            }
            LinOp::Outer { x, b, .. } => {
                lin(x);
                nl(b);
            }
        }
    }
}

/// A function of the program, called by name.
#[derive(Clone, Debug, PartialEq)]
pub struct Call {
    /// Callee name.
    pub func: String,
    /// Non-linear arguments.
    pub args: Vec<Atom>,
    /// Linear arguments.
    pub lin_args: Vec<Var>,
    /// Shapes of the linear results (one per linear result).
    pub lin_shapes: Vec<ShapeTree>,
}

/// `if cond { then_ } else { else_ }`: both blocks return the same types.
#[derive(Clone, Debug, PartialEq)]
pub struct If {
    /// A non-linear bool.
    pub cond: Atom,
    /// Taken when `cond`.
    pub then_: Block,
    /// Taken otherwise.
    pub else_: Block,
    /// Shapes of the linear results (one per linear result); atoms may refer to
    /// the non-linear results of this same statement.
    pub lin_shapes: Vec<ShapeTree>,
}

/// A counted loop with loop-carried state, `i` running `0..n` (or `n-1` down to
/// `0` when `rev`).
///
/// `body.params = [i, s_1..s_k]`, `body.lin_params = [ls_1..ls_m]` where `k =
/// init.len()`, `m = lin_init.len()`. `body.results = [s'_1..s'_k, y_1..y_p]`,
/// `body.lin_results = [ls'_1..ls'_m, ly_1..ly_q]`. The statement binds
/// `[s_final.., Y_1..Y_p ; ls_final.., LY_1..LY_q]` where `Y_j` stacks `y_j` by the
/// value of `i`: `Y_j[i] = y_j` at iteration `i` (so forward and reversed loops
/// index residuals the same way), and likewise `LY_j` for linear outputs.
/// With `n = 0` the state is returned unchanged and each `Y_j` has all sizes 0.
/// A linear variable of the enclosing scope read in the body (captured) is
/// consumed once per iteration; the whole loop counts as its one use.
#[derive(Clone, Debug, PartialEq)]
pub struct Loop {
    /// Trip count, a non-linear i64 (negative counts as 0).
    pub n: Atom,
    /// Run `i = n-1, .., 0`.
    pub rev: bool,
    /// Initial non-linear state.
    pub init: Vec<Atom>,
    /// Initial linear state.
    pub lin_init: Vec<Var>,
    /// The body.
    pub body: Lambda,
}

/// `build(shape, |i_1..i_r| body)`: for every multi-index of `shape` (in any
/// order; the body must not depend on order), run the body and stack its
/// results, non-linear and linear. `body.params` are the `r` i64 indices,
/// `body.lin_params` is empty. Linear variables of the enclosing scope may be
/// read inside (captured); the whole Build counts as their one use.
#[derive(Clone, Debug, PartialEq)]
pub struct Build {
    /// The index space (non-linear i64 atoms, at least one).
    pub shape: Vec<Atom>,
    /// The element function.
    pub body: Lambda,
}

/// `map(|x_1.. ; dx_1..| body, arrs ; lin_arrs)`: elementwise over arrays of one
/// shape; `body.params` are the elements of `arrs`, `body.lin_params` those of
/// `lin_arrs`; results are stacked to that shape. At least one array.
#[derive(Clone, Debug, PartialEq)]
pub struct Map {
    /// Non-linear arrays.
    pub arrs: Vec<Atom>,
    /// Linear arrays.
    pub lin_arrs: Vec<Var>,
    /// The element function.
    pub body: Lambda,
}

impl Map {
    /// The map over `arrs ; lin_arrs` whose element function binds `params ;
    /// lin_params` (one per array, in order) and runs `body`.
    pub fn new(
        arrs: Vec<Atom>,
        lin_arrs: Vec<Var>,
        params: Vec<Var>,
        lin_params: Vec<Var>,
        body: Block,
    ) -> Map {
        Map {
            arrs,
            lin_arrs,
            body: Lambda {
                params,
                lin_params,
                body,
            },
        }
    }
}

/// `fold(init, |acc_1.., x| body, arr)`: sequential left fold over axis 0 of
/// `arr` (`x` is an element or a row). Non-linear only; JVP first lowers it to a
/// [`Loop`] with [`ArrayOp::Index`].
#[derive(Clone, Debug, PartialEq)]
pub struct Fold {
    /// Initial accumulators.
    pub init: Vec<Atom>,
    /// The array folded over.
    pub arr: Atom,
    /// `params = [acc.., x]`, `results = [acc'..]`.
    pub body: Lambda,
}

/// `while(init, |s..| cond, |s..| body)`: the trip count of a `while` loop.
/// Starting from `s = init`, while `cond(s)` is true, `s = body(s)`; the
/// statement binds one i64, the number of times the body ran (the final
/// state is not a result). Non-linear only. The front end runs the loop's
/// work again as a counted [`Loop`] of that many iterations, which every pass
/// differentiates, unzips and transposes as usual:
///
/// ```text
/// while x > 1.0 { x = x / 2.0 }   let n = while (x) |x| { gt x, 1.0 } |x| { div x, 2.0 }
///                                 let x = loop n (x) |i, x| { div x, 2.0 }
/// ```
///
/// `cond.params = body.params = [s_1..s_k]` (`k = init.len()`),
/// `cond.results = [c]` (a bool), `body.results = [s'_1..s'_k]`.
#[derive(Clone, Debug, PartialEq)]
pub struct While {
    /// Initial state.
    pub init: Vec<Atom>,
    /// The condition, checked before every iteration.
    pub cond: Lambda,
    /// The state update.
    pub body: Lambda,
}

/// An expression: the right-hand side of a statement.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    /// A copy of a non-linear atom.
    Atom(Atom),
    /// A scalar primitive applied to non-linear atoms.
    Prim(Prim, Vec<Atom>),
    /// A non-linear array operation.
    Array(ArrayOp),
    /// Tuple construction (non-linear).
    Tuple(Vec<Atom>),
    /// Tuple destructuring: binds one variable per component (non-linear).
    Untuple(Atom),
    /// A linear operation.
    Lin(LinOp),
    /// A call of another function of the program.
    Call(Call),
    /// A conditional.
    If(If),
    /// A counted loop.
    Loop(Loop),
    /// An array built from an index function.
    Build(Build),
    /// An elementwise map.
    Map(Map),
    /// A sequential fold.
    Fold(Fold),
    /// The trip count of a `while` loop.
    While(While),
}

/// A statement: `let (binds ; lin_binds) = expr`.
#[derive(Clone, Debug, PartialEq)]
pub struct Stmt {
    /// Non-linear results.
    pub binds: Vec<Var>,
    /// Linear results.
    pub lin_binds: Vec<Var>,
    /// The expression.
    pub expr: Expr,
    /// Where it came from, if known.
    pub src: Option<SrcId>,
}

impl Stmt {
    /// Whether the statement computes one non-linear scalar from scalars and
    /// array elements without a body: a primitive, a copy, an element read
    /// or a shape (what a residual recomputation or a table may repeat).
    pub fn is_scalar_step(&self, vars: &VarTable) -> bool {
        let scalar = self.lin_binds.is_empty()
            && matches!(self.binds.as_slice(), [v] if matches!(vars.ty(*v), Ty::Scalar(_)));
        scalar
            && match &self.expr {
                Expr::Prim(..) | Expr::Atom(_) => true,
                Expr::Array(ArrayOp::Index { .. } | ArrayOp::Shape { .. }) => true,
                Expr::Array(_)
                | Expr::Tuple(_)
                | Expr::Untuple(_)
                | Expr::Lin(_)
                | Expr::If(_)
                | Expr::Loop(_)
                | Expr::Build(_)
                | Expr::Map(_)
                | Expr::Fold(_)
                | Expr::While(_)
                | Expr::Call(_) => false,
            }
    }
}

/// A block: statements then results.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Block {
    /// Statements, in order.
    pub stmts: Vec<Stmt>,
    /// Non-linear results.
    pub results: Vec<Atom>,
    /// Linear results.
    pub lin_results: Vec<Var>,
}

/// A block with parameters: the body of a loop, build, map or fold.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Lambda {
    /// Non-linear parameters.
    pub params: Vec<Var>,
    /// Linear parameters.
    pub lin_params: Vec<Var>,
    /// The body.
    pub body: Block,
}

/// A function: `def name(params ; lin_params) -> (results ; lin_results)`.
#[derive(Clone, Debug, PartialEq)]
pub struct Func {
    /// Name (unique in the program).
    pub name: String,
    /// Non-linear parameters.
    pub params: Vec<Var>,
    /// Linear parameters.
    pub lin_params: Vec<Var>,
    /// Shapes of the linear parameters, one per linear parameter, in terms of
    /// the non-linear parameters (needed to materialise zero cotangents). May be
    /// empty for functions that are never transposed.
    pub lin_param_shapes: Vec<ShapeTree>,
    /// The body; its results are the function's results.
    pub body: Block,
    /// All variables of the function.
    pub vars: VarTable,
}

/// A program: functions that may call each other (no recursion).
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Program {
    /// The functions, callees before callers.
    pub funcs: Vec<Func>,
    /// Declarations of functions defined elsewhere (signature only: the body
    /// has no statements and its results are unbound variables of the result
    /// types). A differentiable extern `g` comes with declarations of
    /// `g__jvp(x ; dx) -> (y ; dy)`, `g__lin(x ; dx) -> (; dy)` and
    /// `g__lin_t(x ; ȳ) -> (; x̄)`, which take the primal arguments (not
    /// residuals) and recompute what they need: derivatives checkpoint at
    /// extern calls (see [`crate::externs::declare_extern`]).
    pub externs: Vec<Func>,
    /// Externs declared linear in some parameters, with a flag per
    /// parameter: such a `g` also comes with `g__linear(a ; x) -> (; y)` (g
    /// itself, its other parameters `a` non-linear) and its transpose
    /// `g__linear_t(a ; ȳ) -> (; x̄)`, which JVP calls directly where only
    /// linear arguments carry tangents (see
    /// [`crate::externs::declare_linear_extern`]).
    pub linear_externs: Vec<(String, Vec<bool>)>,
    /// Externs whose derivatives also exist with respect to some of their
    /// parameters only (a `#[differentiable(wrt(..))]` callee), with a flag
    /// per parameter: such a `g` also comes with the extern `g__w` (the
    /// same function) and its derived `g__w__jvp(x ; dx_wrt)`,
    /// `g__w__lin` and `g__w__lin_t`, which JVP calls where no argument
    /// outside the flagged ones carries a tangent, so the callee computes
    /// no derivative with respect to its constant arguments (see
    /// [`crate::externs::declare_wrt_extern`]).
    pub wrt_externs: Vec<(String, Vec<bool>)>,
}

impl Program {
    /// Looks up a function or extern declaration by name.
    pub fn func(&self, name: &str) -> Option<&Func> {
        self.funcs
            .iter()
            .find(|f| f.name == name)
            .or_else(|| self.externs.iter().find(|f| f.name == name))
    }

    /// The linear-parameter flags of an extern declared linear.
    pub fn linear_in(&self, name: &str) -> Option<&[bool]> {
        self.linear_externs
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, l)| l.as_slice())
    }

    /// The flags of the parameters an extern also has derivatives with
    /// respect to (alone), if declared so.
    pub fn wrt_in(&self, name: &str) -> Option<&[bool]> {
        self.wrt_externs
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, w)| w.as_slice())
    }

    /// Whether `name` is an extern declaration.
    pub fn is_extern(&self, name: &str) -> bool {
        self.externs.iter().any(|f| f.name == name)
    }

    /// Looks up a function by name, mutably.
    pub fn func_mut(&mut self, name: &str) -> Option<&mut Func> {
        self.funcs.iter_mut().find(|f| f.name == name)
    }

    /// Adds or replaces a function of the same name.
    pub fn insert(&mut self, f: Func) {
        match self.func_mut(&f.name) {
            Some(old) => *old = f,
            None => self.funcs.push(f),
        }
    }
}

impl Func {
    /// Types of the non-linear parameters.
    pub fn param_tys(&self) -> Vec<Ty> {
        self.params
            .iter()
            .map(|v| self.vars.ty(*v).clone())
            .collect()
    }

    /// Types of the linear parameters.
    pub fn lin_param_tys(&self) -> Vec<Ty> {
        self.lin_params
            .iter()
            .map(|v| self.vars.ty(*v).clone())
            .collect()
    }
}

impl fmt::Display for Var {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "%{}", self.0)
    }
}
