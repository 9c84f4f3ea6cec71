//! The fuzzer's own small AST of a `#[differentiable]` function: it prints
//! itself as Rust source and evaluates itself with Rust's semantics (`f64`
//! operations as `std` computes them, integer arithmetic of each width with
//! overflow as a trap, casts as Rust's `as`).

use std::fmt::Write;

/// A Rust integer type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IntTy {
    U8,
    U16,
    U32,
    U64,
    Usize,
    I8,
    I16,
    I32,
    I64,
    Isize,
}

/// Every integer type.
pub const INT_TYS: [IntTy; 10] = [
    IntTy::U8,
    IntTy::U16,
    IntTy::U32,
    IntTy::U64,
    IntTy::Usize,
    IntTy::I8,
    IntTy::I16,
    IntTy::I32,
    IntTy::I64,
    IntTy::Isize,
];

impl IntTy {
    /// The Rust name.
    pub fn name(self) -> &'static str {
        match self {
            IntTy::U8 => "u8",
            IntTy::U16 => "u16",
            IntTy::U32 => "u32",
            IntTy::U64 => "u64",
            IntTy::Usize => "usize",
            IntTy::I8 => "i8",
            IntTy::I16 => "i16",
            IntTy::I32 => "i32",
            IntTy::I64 => "i64",
            IntTy::Isize => "isize",
        }
    }

    /// Whether the type is signed.
    pub fn signed(self) -> bool {
        matches!(
            self,
            IntTy::I8 | IntTy::I16 | IntTy::I32 | IntTy::I64 | IntTy::Isize
        )
    }

    /// The range of the type (64-bit target).
    pub fn bounds(self) -> (i128, i128) {
        match self {
            IntTy::U8 => (0, u8::MAX as i128),
            IntTy::U16 => (0, u16::MAX as i128),
            IntTy::U32 => (0, u32::MAX as i128),
            IntTy::U64 | IntTy::Usize => (0, u64::MAX as i128),
            IntTy::I8 => (i8::MIN as i128, i8::MAX as i128),
            IntTy::I16 => (i16::MIN as i128, i16::MAX as i128),
            IntTy::I32 => (i32::MIN as i128, i32::MAX as i128),
            IntTy::I64 | IntTy::Isize => (i64::MIN as i128, i64::MAX as i128),
        }
    }

    /// `v as Self` for an integer `v` (two's-complement truncation).
    pub fn wrap(self, v: i128) -> i128 {
        match self {
            IntTy::U8 => v as u8 as i128,
            IntTy::U16 => v as u16 as i128,
            IntTy::U32 => v as u32 as i128,
            IntTy::U64 | IntTy::Usize => v as u64 as i128,
            IntTy::I8 => v as i8 as i128,
            IntTy::I16 => v as i16 as i128,
            IntTy::I32 => v as i32 as i128,
            IntTy::I64 | IntTy::Isize => v as i64 as i128,
        }
    }

    /// `x as Self` for an `f64` (saturating, NaN to 0).
    pub fn from_f64(self, x: f64) -> i128 {
        match self {
            IntTy::U8 => x as u8 as i128,
            IntTy::U16 => x as u16 as i128,
            IntTy::U32 => x as u32 as i128,
            IntTy::U64 | IntTy::Usize => x as u64 as i128,
            IntTy::I8 => x as i8 as i128,
            IntTy::I16 => x as i16 as i128,
            IntTy::I32 => x as i32 as i128,
            IntTy::I64 | IntTy::Isize => x as i64 as i128,
        }
    }
}

/// A type of the fuzzer's programs.
#[derive(Clone, Debug, PartialEq)]
pub enum Ty {
    F,
    I(IntTy),
    B,
    /// `(f64, f64)`
    T2,
    /// `f64` array of rank 1-3 (every axis has the program's size `N`).
    A(usize),
}

impl Ty {
    /// The Rust type (arrays owned).
    pub fn rust(&self) -> String {
        match self {
            Ty::F => "f64".into(),
            Ty::I(t) => t.name().into(),
            Ty::B => "bool".into(),
            Ty::T2 => "(f64, f64)".into(),
            Ty::A(r) => format!("Array{r}<f64>"),
        }
    }

    /// Whether the type has a tangent.
    pub fn differentiable(&self) -> bool {
        matches!(self, Ty::F | Ty::T2 | Ty::A(_))
    }
}

/// How an array parameter is passed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pass {
    Ref,
    View,
    Owned,
}

/// A value.
#[derive(Clone, Debug, PartialEq)]
pub enum V {
    F(f64),
    I(i128, IntTy),
    B(bool),
    T(Vec<V>),
    /// shape, row-major data
    A(Vec<usize>, Vec<f64>),
}

impl V {
    pub fn f(&self) -> f64 {
        match self {
            V::F(x) => *x,
            _ => panic!("not f64: {self:?}"),
        }
    }
    pub fn i(&self) -> i128 {
        match self {
            V::I(v, _) => *v,
            _ => panic!("not int: {self:?}"),
        }
    }
    pub fn b(&self) -> bool {
        match self {
            V::B(b) => *b,
            _ => panic!("not bool: {self:?}"),
        }
    }
    pub fn arr(&self) -> (&[usize], &[f64]) {
        match self {
            V::A(s, d) => (s, d),
            _ => panic!("not array: {self:?}"),
        }
    }
    /// All `f64` components in order (integers and booleans dropped).
    pub fn flat(&self, out: &mut Vec<f64>) {
        match self {
            V::F(x) => out.push(*x),
            V::T(vs) => vs.iter().for_each(|v| v.flat(out)),
            V::A(_, d) => out.extend_from_slice(d),
            _ => {}
        }
    }
}

/// Arithmetic operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
}

impl Op {
    pub fn sym(self) -> &'static str {
        match self {
            Op::Add => "+",
            Op::Sub => "-",
            Op::Mul => "*",
            Op::Div => "/",
            Op::Rem => "%",
        }
    }
}

/// Comparisons.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cmp {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
}

impl Cmp {
    pub fn sym(self) -> &'static str {
        match self {
            Cmp::Lt => "<",
            Cmp::Le => "<=",
            Cmp::Gt => ">",
            Cmp::Ge => ">=",
            Cmp::Eq => "==",
            Cmp::Ne => "!=",
        }
    }
    fn eval<T: PartialOrd>(self, a: T, b: T) -> bool {
        match self {
            Cmp::Lt => a < b,
            Cmp::Le => a <= b,
            Cmp::Gt => a > b,
            Cmp::Ge => a >= b,
            Cmp::Eq => a == b,
            Cmp::Ne => a != b,
        }
    }
}

/// Unary `f64` methods (argument domains are kept safe by the generator).
pub const M1: [&str; 24] = [
    "sin",
    "cos",
    "tan",
    "exp",
    "ln",
    "log2",
    "log10",
    "sqrt",
    "abs",
    "tanh",
    "sinh",
    "cosh",
    "atan",
    "exp_m1",
    "ln_1p",
    "recip",
    "exp2",
    "to_degrees",
    "to_radians",
    "asin",
    "acos",
    "asinh",
    "acosh",
    "atanh",
];

/// Piecewise-constant `f64` methods (no derivative) and `fract`
/// ([`crate::gen::Feature::Steps`]).
pub const STEPS: [&str; 6] = ["floor", "ceil", "round", "trunc", "signum", "fract"];

/// Binary `f64` methods.
pub const M2: [&str; 7] = ["powf", "atan2", "hypot", "max", "min", "log", "copysign"];

fn m1(name: &str, x: f64) -> f64 {
    match name {
        "sin" => x.sin(),
        "cos" => x.cos(),
        "tan" => x.tan(),
        "exp" => x.exp(),
        "ln" => x.ln(),
        "log2" => x.log2(),
        "log10" => x.log10(),
        "sqrt" => x.sqrt(),
        "abs" => x.abs(),
        "tanh" => x.tanh(),
        "sinh" => x.sinh(),
        "cosh" => x.cosh(),
        "atan" => x.atan(),
        "exp_m1" => x.exp_m1(),
        "ln_1p" => x.ln_1p(),
        "recip" => x.recip(),
        "exp2" => x.exp2(),
        "to_degrees" => x.to_degrees(),
        "to_radians" => x.to_radians(),
        "asin" => x.asin(),
        "acos" => x.acos(),
        "asinh" => x.asinh(),
        "acosh" => x.acosh(),
        "atanh" => x.atanh(),
        "floor" => x.floor(),
        "ceil" => x.ceil(),
        "round" => x.round(),
        "trunc" => x.trunc(),
        "signum" => x.signum(),
        "fract" => x.fract(),
        _ => unreachable!("{name}"),
    }
}

fn m2(name: &str, x: f64, y: f64) -> f64 {
    match name {
        "powf" => x.powf(y),
        "atan2" => x.atan2(y),
        "hypot" => x.hypot(y),
        "max" => x.max(y),
        "min" => x.min(y),
        "log" => x.log(y),
        "copysign" => x.copysign(y),
        _ => unreachable!("{name}"),
    }
}

/// Known constants.
pub const CONSTS: [(&str, f64); 5] = [
    ("std::f64::consts::PI", std::f64::consts::PI),
    ("std::f64::consts::E", std::f64::consts::E),
    ("std::f64::consts::LN_2", std::f64::consts::LN_2),
    ("std::f64::consts::SQRT_2", std::f64::consts::SQRT_2),
    ("f64::EPSILON", f64::EPSILON),
];

/// Expressions. Every expression's type is known to the generator.
#[derive(Clone, Debug)]
pub enum E {
    F(f64),
    I(i64, IntTy),
    B(bool),
    /// A variable: name, type, and for arrays how it is held (a `&Array`
    /// parameter is printed without `&` where a reference is wanted).
    Var(String, Ty, Pass),
    Const(usize),
    Field(Box<E>, usize),
    Tup(Box<E>, Box<E>),
    /// Arithmetic on `f64` (`Ty::F`) or one integer type.
    Bin(Op, Box<E>, Box<E>, Ty),
    Neg(Box<E>),
    M1(&'static str, Box<E>),
    M2(&'static str, Box<E>, Box<E>),
    Powi(Box<E>, i32),
    MulAdd(Box<E>, Box<E>, Box<E>),
    Clamp(Box<E>, f64, f64),
    /// Integer `max`/`min`/`pow`.
    IntM(&'static str, Box<E>, Box<E>, IntTy),
    Cast(Box<E>, Ty, Ty),
    Cmp(Cmp, Box<E>, Box<E>, Ty),
    And(Box<E>, Box<E>),
    Or(Box<E>, Box<E>),
    Not(Box<E>),
    If(Box<E>, Box<E>, Box<E>),
    /// `a[i]`, `a[[i, j]]`, ...
    Index(Box<E>, Vec<E>),
    /// Size of an axis: `v.len()`, `m.nrows()`, `m.ncols()`, `t.shape()[k]`.
    Len(Box<E>, usize),
    Sum(Box<E>),
    Dot(Box<E>, Box<E>),
    /// `Array1::zeros(n)`, ...: rank, size expression.
    Zeros(usize, Box<E>),
    /// `ArrayR::from_shape_fn(..., |(i, j)| body)`.
    Build(usize, Box<E>, Vec<String>, Box<E>),
    Mapv(Box<E>, String, Box<E>),
    /// Elementwise array-array operation.
    Ew(Op, Box<E>, Box<E>),
    /// `a op v.insert_axis(Axis(k))` (ndarray's co-broadcasting: `v` has
    /// one axis fewer than `a`, stretched along `k`); `left` puts `v` first.
    EwIns(Op, Box<E>, Box<E>, usize, bool),
    /// `&a * s`.
    Scale(Box<E>, Box<E>),
    /// `a.slice(s![.., ..;-1])`: the array (of the given rank) reversed
    /// along one axis (a view).
    Rev(Box<E>, usize, usize),
    /// `m.t()` (a view).
    T(Box<E>),
    /// `m.diag()` (a view).
    Diag(Box<E>),
    /// `a.index_axis(Axis(k), i)` of an array of the given rank (a view);
    /// `named`: `row(i)` / `column(i)` for a matrix.
    AxisAt(Box<E>, usize, usize, Box<E>, bool),
    /// `a.sum_axis(Axis(k))`.
    SumAxis(Box<E>, usize),
    /// `a.map_axis(Axis(k), |lane| lane.sum())`, or `lane.dot(&lane)` when
    /// `true`.
    MapAxis(Box<E>, usize, bool),
    /// `&a op &v` with `v` of one rank fewer, broadcast along `a`'s leading
    /// axis (ndarray's broadcasting); `left` puts `v` first.
    EwB(Op, Box<E>, Box<E>, bool),
    /// A whole-array reduction other than `sum`.
    Reduce(Reduction, Box<E>),
    /// `a.select(Axis(k), &[i0, ..])` of an array of the given rank, with
    /// as many indices (in `0..N`, repeats allowed) as the axis is long.
    Select(Box<E>, usize, usize, Vec<usize>),
    /// `v.exact_chunks(c).into_iter().map(|ch| ch.sum()).sum::<f64>()` of a
    /// vector (`ch.dot(&ch)` when `true`).
    ChunkSums(Box<E>, usize, bool),
    Call(String, Vec<E>),
    /// Verbatim source (mutations only; not evaluable).
    Raw(String),
}

/// Whole-array reductions besides `sum` ([`E::Reduce`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reduction {
    /// `a.mean().unwrap()`: ndarray's `sum() / n` (panics when empty).
    Mean,
    /// `a.product()`.
    Product,
    /// `a.iter().sum::<f64>()`: std's sequential fold from -0.0, in
    /// logical order.
    IterSum,
    /// `a.var(0.0)`: Welford's one pass with `mul_add`, in memory order.
    /// (Not `var(1.0)`: of one element it is 0 / 0, a NaN that a program
    /// may drop while the reverse pass multiplies a zero cotangent by it;
    /// nor `std`: its derivative at a constant array, common here, is
    /// `sqrt`'s at 0.)
    Var,
    /// `a.iter().copied().max_by(f64::total_cmp).unwrap()`: the last of
    /// equal maxima in IEEE's total order (panics when empty).
    MaxByTotal,
    /// `*a.iter().min_by(|l, r| l.partial_cmp(r).unwrap()).unwrap()`: the
    /// first of equal minima (panics when empty or on comparing a NaN).
    MinByPartial,
}

impl Reduction {
    /// Every reduction.
    pub const ALL: [Reduction; 6] = [
        Reduction::Mean,
        Reduction::Product,
        Reduction::IterSum,
        Reduction::Var,
        Reduction::MaxByTotal,
        Reduction::MinByPartial,
    ];
}

/// One part of `s![..]` in a [`S::SliceFill`].
#[derive(Clone, Debug)]
pub enum SlicePart {
    /// `..`
    Full,
    /// `..;2`
    Every2,
    /// `..;-1`
    Rev,
    /// `1..`
    From1,
    /// An index.
    At(E),
}

impl SlicePart {
    fn text(&self) -> String {
        match self {
            SlicePart::Full => "..".into(),
            SlicePart::Every2 => "..;2".into(),
            SlicePart::Rev => "..;-1".into(),
            SlicePart::From1 => "1..".into(),
            SlicePart::At(e) => pe(e),
        }
    }
}

/// A `cfg` predicate on a statement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CfgPred {
    Test,
    NotTest,
    DebugAssertions,
    NotDebugAssertions,
    All,
    Any,
}

impl CfgPred {
    pub fn text(self) -> &'static str {
        match self {
            CfgPred::Test => "test",
            CfgPred::NotTest => "not(test)",
            CfgPred::DebugAssertions => "debug_assertions",
            CfgPred::NotDebugAssertions => "not(debug_assertions)",
            CfgPred::All => "all()",
            CfgPred::Any => "any()",
        }
    }
    /// Its value in the oracle's configuration (`test` and
    /// `debug_assertions` off, as in a release build of a library).
    pub fn holds(self, debug_assertions: bool) -> bool {
        match self {
            CfgPred::Test => false,
            CfgPred::NotTest => true,
            CfgPred::DebugAssertions => debug_assertions,
            CfgPred::NotDebugAssertions => !debug_assertions,
            CfgPred::All => true,
            CfgPred::Any => false,
        }
    }
}

/// Statements.
#[derive(Clone, Debug)]
pub enum S {
    Let {
        name: String,
        ty: Ty,
        mutable: bool,
        annot: bool,
        e: E,
    },
    /// `let (a, b) = e;`
    LetTup(String, String, E),
    /// `name = e;` or `name op= e;`
    Assign(String, Option<Op>, E),
    /// `a[i] = e;` or `a[[i, j]] += e;`
    Set(String, Vec<E>, bool, E),
    /// `a.slice_mut(s![..]).fill(e);`, one part per axis.
    SliceFill(String, Vec<SlicePart>, E),
    /// Every element updated in place, `x = x.sin() * w + x` with `w = e`:
    /// `for v in a.iter_mut() { acc = acc * 0.5 + *v; *v = .. }` (logical
    /// order; `acc` an `f64` variable, when given) or, with `map`,
    /// `a.map_inplace(|v| *v = ..)`.
    InPlace {
        arr: String,
        map: bool,
        acc: Option<String>,
        e: E,
    },
    For {
        var: String,
        lo: i64,
        hi: E,
        inclusive: bool,
        rev: bool,
        body: Vec<S>,
        /// `if brk { break; }` after the body.
        brk: Option<E>,
        /// `'label: for ..`, the target of [`S::ExitTo`]s in nested loops.
        label: Option<String>,
    },
    /// `let mut var = lo; while var < hi && cond { body; if brk { break; }
    /// var += 1; }`, or the same as `loop { if var >= hi { break; } .. }`
    /// (`as_loop`; the extra condition then comes after the bound).
    While {
        var: String,
        lo: i64,
        hi: E,
        cond: Option<E>,
        body: Vec<S>,
        brk: Option<E>,
        as_loop: bool,
        /// `'label: while ..` / `'label: loop ..`.
        label: Option<String>,
    },
    If(E, Vec<S>, Vec<S>),
    /// `let mut counter = 0usize; let var[: f64] = loop { body; counter +=
    /// 1; if counter >= hi || cond { break val; } };` (`annot`: the `let`
    /// is typed; else `val` is a name whose type the syntax shows).
    LoopValue {
        var: String,
        counter: String,
        hi: E,
        body: Vec<S>,
        cond: E,
        val: E,
        annot: bool,
    },
    /// `let mut vec = Vec::new();` (`kind` 1: `Vec::with_capacity(4)`, 2:
    /// `vec![]`), then `for_loop`, whose body pushes to it
    /// ([`S::Push`], not in loops nested in it), then `let var =
    /// vec.iter().sum::<f64>() * 0.5 + vec.len() as f64;`.
    Pushes {
        vec: String,
        kind: u8,
        for_loop: Box<S>,
        var: String,
    },
    /// `vec.push(e);` inside the loop of an [`S::Pushes`].
    Push(String, E),
    /// `let var[: f64];` then `if c { a; var = av; } else { b; var = bv; }`
    /// (`annot`: typed; else `av` is a name whose type the syntax shows).
    Deferred {
        var: String,
        annot: bool,
        c: E,
        a: Vec<S>,
        av: E,
        b: Vec<S>,
        bv: E,
    },
    /// `break;` (`true`) or `continue;` (`false`), the last statement of an
    /// `if` branch inside a loop body.
    Exit(bool),
    /// `break 'label;` (`true`) or `continue 'label;`, the last statement
    /// of an `if` branch inside a loop nested in the labelled one (or in
    /// the labelled loop itself).
    ExitTo(bool, String),
    Cfg(CfgPred, Box<S>),
    /// Verbatim source (mutations only).
    Raw(String),
}

/// A parameter.
#[derive(Clone, Debug)]
pub struct Param {
    pub name: String,
    pub ty: Ty,
    pub pass: Pass,
    /// The argument the fuzzer calls the function with.
    pub value: V,
}

/// A function.
#[derive(Clone, Debug)]
pub struct Func {
    pub name: String,
    pub params: Vec<Param>,
    pub body: Vec<S>,
    pub ret: E,
    pub out: Ty,
    /// Extra text before `fn` (mutations), e.g. attribute arguments.
    pub attr: String,
    /// Raw parameter text appended (mutations).
    pub extra_params: Vec<String>,
}

/// A program: helper functions (callees) then the main function.
#[derive(Clone, Debug)]
pub struct Program {
    pub helpers: Vec<Func>,
    pub main: Func,
    /// The common array size.
    pub n: usize,
}

// ---------------------------------------------------------------- printing

/// Whether the expression's type is an unsuffixed literal's (`{float}`),
/// on which Rust refuses method calls: such receivers use `f64::m(..)`.
fn is_lit_tree(e: &E) -> bool {
    !typed(e)
}

/// Whether Rust knows the expression's type without context (`f64`, not
/// `{float}`).
/// A loop bound typed `usize` (a literal bound would leave the loop
/// variable `{integer}`, whose methods do not resolve).
fn usize_bound(hi: &E) -> String {
    if typed(hi) {
        pe(hi)
    } else {
        format!("({} as usize)", pe(hi))
    }
}

pub fn typed(e: &E) -> bool {
    match e {
        E::F(_) | E::I(..) | E::B(_) | E::Raw(_) => false,
        E::Bin(_, a, b, _) => typed(a) || typed(b),
        E::Neg(a) => typed(a),
        E::If(_, a, b) => typed(a) || typed(b),
        E::Field(t, _) => typed(t),
        E::Tup(a, b) => typed(a) && typed(b),
        // Arrays of `{float}` elements.
        E::Build(_, _, _, body) | E::Mapv(_, _, body) => typed(body),
        E::Zeros(..) => false,
        E::Ew(_, a, b) | E::Dot(a, b) | E::EwIns(_, a, b, _, _) => typed(a) || typed(b),
        E::Scale(a, s) => typed(a) || typed(s),
        E::Sum(a) | E::Index(a, _) => typed(a),
        E::Rev(a, ..)
        | E::T(a)
        | E::Diag(a)
        | E::AxisAt(a, ..)
        | E::SumAxis(a, _)
        | E::MapAxis(a, ..)
        | E::Select(a, ..)
        | E::ChunkSums(a, ..)
        | E::Reduce(_, a) => typed(a),
        E::EwB(_, a, v, _) => typed(a) || typed(v),
        _ => true,
    }
}

fn fmt_f(x: f64) -> String {
    let s = format!("{x:?}");
    if x < 0.0 || s.starts_with('-') {
        format!("({s})")
    } else {
        s
    }
}

/// `&e` where a reference to an array is wanted (a view as it is).
fn aref(e: &E) -> String {
    match e {
        E::Var(n, _, Pass::Ref) => n.clone(),
        E::Var(n, _, _) => format!("&{n}"),
        _ => match view(e) {
            Some(v) => format!("&{v}"),
            None => format!("&({})", pe(e)),
        },
    }
}

/// A receiver: a variable bare, a view as it is, anything else
/// parenthesised.
fn recv(e: &E) -> String {
    match e {
        E::Var(n, _, _) => n.clone(),
        _ => match view(e) {
            Some(v) => v,
            None => format!("({})", pe(e)),
        },
    }
}

/// The text of a view expression (`m.t()`, `m.row(i)`, ...), which `pe`
/// makes owned (`.to_owned()`) where a value is wanted.
fn view(e: &E) -> Option<String> {
    let axis = |k: usize| format!("linad::ndarray::Axis({k})");
    Some(match e {
        E::Rev(a, rank, k) => {
            let parts: Vec<&str> = (0..*rank)
                .map(|j| if j == *k { "..;-1" } else { ".." })
                .collect();
            format!(
                "{}.slice(linad::ndarray::s![{}])",
                recv(a),
                parts.join(", ")
            )
        }
        E::T(a) => format!("{}.t()", recv(a)),
        E::Diag(a) => format!("{}.diag()", recv(a)),
        E::AxisAt(a, 2, 0, i, true) => format!("{}.row({})", recv(a), pe(i)),
        E::AxisAt(a, 2, 1, i, true) => format!("{}.column({})", recv(a), pe(i)),
        E::AxisAt(a, _, k, i, _) => format!("{}.index_axis({}, {})", recv(a), axis(*k), pe(i)),
        _ => return None,
    })
}

fn shape_text(rank: usize, n: &str) -> String {
    match rank {
        1 => n.to_string(),
        2 => format!("({n}, {n})"),
        _ => format!("({n}, {n}, {n})"),
    }
}

/// Prints an expression.
pub fn pe(e: &E) -> String {
    match e {
        E::F(x) => fmt_f(*x),
        E::I(v, _) => {
            if *v < 0 {
                format!("({v})")
            } else {
                v.to_string()
            }
        }
        E::B(b) => b.to_string(),
        E::Var(n, _, _) => n.clone(),
        E::Const(k) => CONSTS[*k].0.to_string(),
        E::Field(t, k) => format!("{}.{k}", recv(t)),
        E::Tup(a, b) => format!("({}, {})", pe(a), pe(b)),
        E::Bin(op, a, b, _) => format!("({} {} {})", pe(a), op.sym(), pe(b)),
        E::Neg(a) => format!("(-{})", pe(a)),
        E::M1(m, a) => {
            if is_lit_tree(a) {
                format!("f64::{m}({})", pe(a))
            } else {
                format!("{}.{m}()", recv(a))
            }
        }
        E::M2(m, a, b) => {
            if is_lit_tree(a) {
                format!("f64::{m}({}, {})", pe(a), pe(b))
            } else {
                format!("{}.{m}({})", recv(a), pe(b))
            }
        }
        E::Powi(a, k) => {
            if is_lit_tree(a) {
                format!("f64::powi({}, {k})", pe(a))
            } else {
                format!("{}.powi({k})", recv(a))
            }
        }
        E::MulAdd(a, b, c) => {
            if is_lit_tree(a) {
                format!("f64::mul_add({}, {}, {})", pe(a), pe(b), pe(c))
            } else {
                format!("{}.mul_add({}, {})", recv(a), pe(b), pe(c))
            }
        }
        E::Clamp(a, lo, hi) => {
            if is_lit_tree(a) {
                format!("f64::clamp({}, {}, {})", pe(a), fmt_f(*lo), fmt_f(*hi))
            } else {
                format!("{}.clamp({}, {})", recv(a), fmt_f(*lo), fmt_f(*hi))
            }
        }
        E::IntM(m, a, b, t) => {
            if is_lit_tree(a) {
                format!("{}::{m}({}, {})", t.name(), pe(a), pe(b))
            } else {
                format!("{}.{m}({})", recv(a), pe(b))
            }
        }
        // rustc types an unsuffixed integer literal by the cast's target
        // (`(-5) as usize` is an error): type the literal first.
        E::Cast(a, Ty::I(from), to) if !typed(a) => {
            format!("(({} as {}) as {})", pe(a), from.name(), to.rust())
        }
        E::Cast(a, _, to) => format!("({} as {})", pe(a), to.rust()),
        E::Cmp(c, a, b, _) => format!("({} {} {})", pe(a), c.sym(), pe(b)),
        E::And(a, b) => format!("({} && {})", pe(a), pe(b)),
        E::Or(a, b) => format!("({} || {})", pe(a), pe(b)),
        E::Not(a) => format!("(!{})", pe(a)),
        E::If(c, a, b) => format!("(if {} {{ {} }} else {{ {} }})", pe(c), pe(a), pe(b)),
        E::Index(a, ix) => {
            if ix.len() == 1 {
                format!("{}[{}]", recv(a), pe(&ix[0]))
            } else {
                let xs: Vec<String> = ix.iter().map(pe).collect();
                format!("{}[[{}]]", recv(a), xs.join(", "))
            }
        }
        E::Len(a, k) => {
            let rank = match a.as_ref() {
                E::Var(_, Ty::A(r), _) => *r,
                _ => 3,
            };
            match (rank, k) {
                (1, 0) => format!("{}.len()", recv(a)),
                (2, 0) => format!("{}.nrows()", recv(a)),
                (2, 1) => format!("{}.ncols()", recv(a)),
                _ => format!("{}.shape()[{k}]", recv(a)),
            }
        }
        E::Sum(a) => format!("{}.sum()", recv(a)),
        E::Dot(a, b) => format!("{}.dot({})", recv(a), aref(b)),
        E::Zeros(r, n) => format!("Array{r}::zeros({})", shape_text(*r, &pe(n))),
        E::Build(r, n, ix, body) => {
            let pat = if *r == 1 {
                ix[0].clone()
            } else {
                format!("({})", ix.join(", "))
            };
            format!(
                "Array{r}::from_shape_fn({}, |{pat}| {})",
                shape_text(*r, &pe(n)),
                pe(body)
            )
        }
        E::Mapv(a, x, body) => format!("{}.mapv(|{x}| {})", recv(a), pe(body)),
        E::Ew(op, a, b) => format!("({} {} {})", aref(a), op.sym(), aref(b)),
        E::EwIns(op, a, v, k, left) => {
            let ins = format!(
                "&{}.to_owned().insert_axis(linad::ndarray::Axis({k}))",
                recv(v)
            );
            if *left {
                format!("({ins} {} {})", op.sym(), aref(a))
            } else {
                format!("({} {} {ins})", aref(a), op.sym())
            }
        }
        E::Scale(a, s) => format!("({} * {})", aref(a), pe(s)),
        E::Rev(..) | E::T(_) | E::Diag(_) | E::AxisAt(..) => {
            format!("{}.to_owned()", view(e).unwrap_or_default())
        }
        E::SumAxis(a, k) => format!("{}.sum_axis(linad::ndarray::Axis({k}))", recv(a)),
        E::Select(a, _, k, idx) => {
            let idx: Vec<String> = idx.iter().map(|i| i.to_string()).collect();
            format!(
                "{}.select(linad::ndarray::Axis({k}), &[{}])",
                recv(a),
                idx.join(", ")
            )
        }
        E::ChunkSums(a, c, dot) => {
            let body = if *dot { "ch.dot(&ch)" } else { "ch.sum()" };
            format!(
                "{}.exact_chunks({c}).into_iter().map(|ch| {body}).sum::<f64>()",
                recv(a)
            )
        }
        E::MapAxis(a, k, squares) => {
            let body = if *squares {
                "lane.dot(&lane)"
            } else {
                "lane.sum()"
            };
            format!(
                "{}.map_axis(linad::ndarray::Axis({k}), |lane| {body})",
                recv(a)
            )
        }
        E::Reduce(kind, a) => match kind {
            Reduction::Mean => format!("{}.mean().unwrap()", recv(a)),
            Reduction::Product => format!("{}.product()", recv(a)),
            Reduction::IterSum => format!("{}.iter().sum::<f64>()", recv(a)),
            Reduction::Var => format!("{}.var(0.0)", recv(a)),
            Reduction::MaxByTotal => format!(
                "{}.iter().copied().max_by(f64::total_cmp).unwrap()",
                recv(a)
            ),
            Reduction::MinByPartial => format!(
                "*{}.iter().min_by(|l, r| l.partial_cmp(r).unwrap()).unwrap()",
                recv(a)
            ),
        },
        E::EwB(op, a, v, left) => {
            if *left {
                format!("({} {} {})", aref(v), op.sym(), aref(a))
            } else {
                format!("({} {} {})", aref(a), op.sym(), aref(v))
            }
        }
        E::Call(f, args) => {
            let xs: Vec<String> = args.iter().map(pe).collect();
            format!("{f}({})", xs.join(", "))
        }
        E::Raw(s) => s.clone(),
    }
}

pub(crate) fn ps(s: &S, ind: usize, out: &mut String) {
    let pad = "    ".repeat(ind);
    match s {
        S::Let {
            name,
            ty,
            mutable,
            annot,
            e,
        } => {
            let m = if *mutable { "mut " } else { "" };
            // An untyped float initializer needs the annotation (methods
            // on `{float}` do not resolve).
            let annot = *annot || (matches!(ty, Ty::F | Ty::T2) && !typed(e));
            let a = if annot {
                format!(": {}", ty.rust())
            } else {
                String::new()
            };
            let _ = writeln!(out, "{pad}let {m}{name}{a} = {};", pe(e));
        }
        S::LetTup(a, b, e) => {
            let annot = if typed(e) { "" } else { ": (f64, f64)" };
            let _ = writeln!(out, "{pad}let ({a}, {b}){annot} = {};", pe(e));
        }
        S::Assign(n, op, e) => {
            let o = op.map(|o| o.sym()).unwrap_or("");
            let _ = writeln!(out, "{pad}{n} {o}= {};", pe(e));
        }
        S::SliceFill(a, parts, e) => {
            let ps: Vec<String> = parts.iter().map(SlicePart::text).collect();
            // The value first: `a.slice_mut(..)` borrows `a` mutably, and
            // the value may read `a`.
            let _ = writeln!(
                out,
                "{pad}{{ let fill_value: f64 = {}; {a}.slice_mut(linad::ndarray::s![{}]).fill(fill_value); }}",
                pe(e),
                ps.join(", ")
            );
        }
        S::InPlace { arr, map, acc, e } => {
            let update = "*inplace_v = inplace_v.sin() * inplace_w + *inplace_v";
            let walk = if *map {
                format!("{arr}.map_inplace(|inplace_v| {update});")
            } else {
                let acc = acc
                    .as_ref()
                    .map(|c| format!("{c} = {c} * 0.5 + *inplace_v; "))
                    .unwrap_or_default();
                format!("for inplace_v in {arr}.iter_mut() {{ {acc}{update}; }}")
            };
            let _ = writeln!(out, "{pad}{{ let inplace_w: f64 = {}; {walk} }}", pe(e));
        }
        S::Set(a, ix, add, e) => {
            let o = if *add { "+" } else { "" };
            let idx = if ix.len() == 1 {
                pe(&ix[0])
            } else {
                let xs: Vec<String> = ix.iter().map(pe).collect();
                format!("[{}]", xs.join(", "))
            };
            let _ = writeln!(out, "{pad}{a}[{idx}] {o}= {};", pe(e));
        }
        S::For {
            var,
            lo,
            hi,
            inclusive,
            rev,
            body,
            brk,
            label,
        } => {
            let label = label
                .as_ref()
                .map(|l| format!("'{l}: "))
                .unwrap_or_default();
            // A literal bound leaves the loop variable `{integer}` (methods
            // on it do not resolve): type it.
            let hi_s = usize_bound(hi);
            let range = if *inclusive {
                format!("{lo}..=({hi_s} - 1)")
            } else {
                format!("{lo}..{hi_s}")
            };
            let range = if *rev {
                format!("({range}).rev()")
            } else {
                range
            };
            let _ = writeln!(out, "{pad}{label}for {var} in {range} {{");
            for s in body {
                ps(s, ind + 1, out);
            }
            if let Some(b) = brk {
                let _ = writeln!(out, "{pad}    if {} {{ break; }}", pe(b));
            }
            let _ = writeln!(out, "{pad}}}");
        }
        S::While {
            var,
            lo,
            hi,
            cond,
            body,
            brk,
            as_loop,
            label,
        } => {
            let label = label
                .as_ref()
                .map(|l| format!("'{l}: "))
                .unwrap_or_default();
            let hi_s = usize_bound(hi);
            let _ = writeln!(out, "{pad}let mut {var} = {lo}usize;");
            if *as_loop {
                let _ = writeln!(out, "{pad}{label}loop {{");
                let _ = writeln!(out, "{pad}    if {var} >= {hi_s} {{ break; }}");
                if let Some(c) = cond {
                    let _ = writeln!(out, "{pad}    if !{} {{ break; }}", pe(c));
                }
            } else {
                let extra = cond
                    .as_ref()
                    .map(|c| format!(" && {}", pe(c)))
                    .unwrap_or_default();
                let _ = writeln!(out, "{pad}{label}while {var} < {hi_s}{extra} {{");
            }
            for s in body {
                ps(s, ind + 1, out);
            }
            if let Some(b) = brk {
                let _ = writeln!(out, "{pad}    if {} {{ break; }}", pe(b));
            }
            let _ = writeln!(out, "{pad}    {var} += 1;");
            let _ = writeln!(out, "{pad}}}");
        }
        S::If(c, a, b) => {
            let _ = writeln!(out, "{pad}if {} {{", pe(c));
            for s in a {
                ps(s, ind + 1, out);
            }
            if b.is_empty() {
                let _ = writeln!(out, "{pad}}}");
            } else {
                let _ = writeln!(out, "{pad}}} else {{");
                for s in b {
                    ps(s, ind + 1, out);
                }
                let _ = writeln!(out, "{pad}}}");
            }
        }
        S::Cfg(p, s) => {
            let _ = writeln!(out, "{pad}#[cfg({})]", p.text());
            ps(s, ind, out);
        }
        S::Exit(is_break) => {
            let _ = writeln!(
                out,
                "{pad}{};",
                if *is_break { "break" } else { "continue" }
            );
        }
        S::Pushes {
            vec,
            kind,
            for_loop,
            var,
        } => {
            let init = match kind {
                0 => "Vec::new()",
                1 => "Vec::with_capacity(4)",
                _ => "vec![]",
            };
            let _ = writeln!(out, "{pad}let mut {vec} = {init};");
            ps(for_loop, ind, out);
            let _ = writeln!(
                out,
                "{pad}let {var} = {vec}.iter().sum::<f64>() * 0.5 + {vec}.len() as f64;"
            );
        }
        S::Push(vec, e) => {
            let _ = writeln!(out, "{pad}{vec}.push({});", pe(e));
        }
        S::Deferred {
            var,
            annot,
            c,
            a,
            av,
            b,
            bv,
        } => {
            let t = if *annot { ": f64" } else { "" };
            let _ = writeln!(out, "{pad}let {var}{t};");
            let _ = writeln!(out, "{pad}if {} {{", pe(c));
            for s in a {
                ps(s, ind + 1, out);
            }
            let _ = writeln!(out, "{pad}    {var} = {};", pe(av));
            let _ = writeln!(out, "{pad}}} else {{");
            for s in b {
                ps(s, ind + 1, out);
            }
            let _ = writeln!(out, "{pad}    {var} = {};", pe(bv));
            let _ = writeln!(out, "{pad}}}");
        }
        S::LoopValue {
            var,
            counter,
            hi,
            body,
            cond,
            val,
            annot,
        } => {
            let a = if *annot { ": f64" } else { "" };
            let _ = writeln!(out, "{pad}let mut {counter} = 0usize;");
            let _ = writeln!(out, "{pad}let {var}{a} = loop {{");
            for s in body {
                ps(s, ind + 1, out);
            }
            let _ = writeln!(out, "{pad}    {counter} += 1;");
            let _ = writeln!(
                out,
                "{pad}    if {counter} >= {} || {} {{ break {}; }}",
                usize_bound(hi),
                pe(cond),
                pe(val)
            );
            let _ = writeln!(out, "{pad}}};");
        }
        S::ExitTo(is_break, label) => {
            let how = if *is_break { "break" } else { "continue" };
            let _ = writeln!(out, "{pad}{how} '{label};");
        }
        S::Raw(t) => {
            let _ = writeln!(out, "{pad}{t}");
        }
    }
}

fn param_ty(p: &Param) -> String {
    match (&p.ty, p.pass) {
        (Ty::A(r), Pass::Ref) => format!("&Array{r}<f64>"),
        (Ty::A(r), Pass::View) => format!("ArrayView{r}<f64>"),
        (t, _) => t.rust(),
    }
}

impl Func {
    /// The function's source, with its attribute.
    pub fn source(&self) -> String {
        let mut out = String::new();
        let attr = if self.attr.is_empty() {
            "#[differentiable]".to_string()
        } else {
            self.attr.clone()
        };
        let _ = writeln!(out, "{attr}");
        let _ = writeln!(out, "{}", self.signature());
        self.body_source(&mut out);
        out
    }

    /// `fn name(params) -> out {`
    pub fn signature(&self) -> String {
        let mut ps: Vec<String> = self
            .params
            .iter()
            .map(|p| format!("{}: {}", p.name, param_ty(p)))
            .collect();
        ps.extend(self.extra_params.iter().cloned());
        format!(
            "fn {}({}) -> {} {{",
            self.name,
            ps.join(", "),
            self.out.rust()
        )
    }

    fn body_source(&self, out: &mut String) {
        for s in &self.body {
            ps(s, 1, out);
        }
        let _ = writeln!(out, "    {}", pe(&self.ret));
        let _ = writeln!(out, "}}");
    }

    /// The source without the attribute (what the macro gets as `item`).
    pub fn item_source(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "{}", self.signature());
        self.body_source(&mut out);
        out
    }
}

impl Program {
    /// All functions' sources, helpers first.
    pub fn source(&self) -> String {
        let mut s = String::new();
        for f in &self.helpers {
            s.push_str(&f.source());
            s.push('\n');
        }
        s.push_str(&self.main.source());
        s
    }
}

// ---------------------------------------------------------------- evaluation

/// Why Rust would not give a value (a panic in a debug build): the
/// generator discards such programs.
#[derive(Clone, Debug, PartialEq)]
pub enum Trap {
    Overflow,
    DivZero,
    Bounds,
    Unevaluable,
}

/// Evaluation environment.
pub struct Eval<'a> {
    vars: Vec<(String, V)>,
    helpers: &'a [Func],
    /// `cfg(debug_assertions)` in the oracle's configuration.
    pub debug_assertions: bool,
    /// Work counter (guards against runaway programs).
    pub steps: u64,
    /// The largest finite |x| of any f64 value an expression produced.
    pub max_abs: f64,
    /// A `break` (`true`) or `continue` (`false`) ran and the statements
    /// up to the end of its loop's body are skipped; with a label, of the
    /// loop so labelled (the loops in between stop).
    flow: Option<(bool, Option<String>)>,
}

fn int_check(v: i128, t: IntTy) -> Result<V, Trap> {
    let (lo, hi) = t.bounds();
    if v < lo || v > hi {
        Err(Trap::Overflow)
    } else {
        Ok(V::I(v, t))
    }
}

/// The multi-index of the row-major position `j` in `shape`.
fn unravel(shape: &[usize], mut j: usize) -> Vec<usize> {
    let mut ix = vec![0; shape.len()];
    for a in (0..shape.len()).rev() {
        ix[a] = j % shape[a];
        j /= shape[a];
    }
    ix
}

/// The row-major position of the multi-index `ix` in `shape`.
fn ravel(shape: &[usize], ix: &[usize]) -> usize {
    ix.iter().zip(shape).fold(0, |k, (i, d)| k * d + i)
}

fn flat_index(shape: &[usize], ix: &[usize]) -> Result<usize, Trap> {
    let mut k = 0;
    for (d, i) in shape.iter().zip(ix) {
        if i >= d {
            return Err(Trap::Bounds);
        }
        k = k * d + i;
    }
    Ok(k)
}

impl<'a> Eval<'a> {
    pub fn new(helpers: &'a [Func]) -> Eval<'a> {
        Eval {
            vars: vec![],
            helpers,
            debug_assertions: false,
            steps: 0,
            max_abs: 0.0,
            flow: None,
        }
    }

    fn get(&self, n: &str) -> V {
        self.vars
            .iter()
            .rev()
            .find(|(m, _)| m == n)
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| panic!("unbound {n}"))
    }

    fn get_ref(&self, n: &str) -> &V {
        self.vars
            .iter()
            .rev()
            .find(|(m, _)| m == n)
            .map(|(_, v)| v)
            .unwrap_or_else(|| panic!("unbound {n}"))
    }

    fn slot(&mut self, n: &str) -> &mut V {
        &mut self
            .vars
            .iter_mut()
            .rev()
            .find(|(m, _)| m == n)
            .unwrap_or_else(|| panic!("unbound {n}"))
            .1
    }

    /// Runs `f` on `args`.
    pub fn call(&mut self, f: &Func, args: Vec<V>) -> Result<V, Trap> {
        let saved = std::mem::take(&mut self.vars);
        for (p, a) in f.params.iter().zip(args) {
            self.vars.push((p.name.clone(), a));
        }
        let r = f
            .body
            .iter()
            .try_for_each(|s| self.s(s))
            .and_then(|_| self.e(&f.ret));
        self.vars = saved;
        r
    }

    /// Runs a loop body, then `brk` (if any) in the body's scope: whether
    /// the loop (labelled `label`) stops there. An exit to another loop's
    /// label stops it and stays in `flow` for the loops outside.
    fn body_then_break(
        &mut self,
        body: &[S],
        brk: Option<&E>,
        label: Option<&String>,
    ) -> Result<bool, Trap> {
        let mark = self.vars.len();
        for s in body {
            self.s(s)?;
            if self.flow.is_some() {
                break;
            }
        }
        // An exit in the body skips the `if brk { break; }` after it.
        let stop = match (self.flow.take(), brk) {
            (Some((is_break, None)), _) => is_break,
            (Some((is_break, Some(to))), _) if Some(&to) == label => is_break,
            (Some(outer), _) => {
                self.flow = Some(outer);
                true
            }
            (None, Some(b)) => self.e(b)?.b(),
            (None, None) => false,
        };
        self.vars.truncate(mark);
        Ok(stop)
    }

    fn block(&mut self, ss: &[S]) -> Result<(), Trap> {
        let mark = self.vars.len();
        for s in ss {
            if self.flow.is_some() {
                break;
            }
            self.s(s)?;
        }
        self.vars.truncate(mark);
        Ok(())
    }

    fn s(&mut self, s: &S) -> Result<(), Trap> {
        self.steps += 1;
        match s {
            S::Let { name, e, .. } => {
                let v = self.e(e)?;
                self.vars.push((name.clone(), v));
            }
            S::LetTup(a, b, e) => match self.e(e)? {
                V::T(vs) => {
                    self.vars.push((a.clone(), vs[0].clone()));
                    self.vars.push((b.clone(), vs[1].clone()));
                }
                _ => return Err(Trap::Unevaluable),
            },
            S::Assign(n, op, e) => {
                let r = self.e(e)?;
                let v = match op {
                    None => r,
                    Some(op) => {
                        let cur = self.get(n);
                        let ty = match cur {
                            V::F(_) => Ty::F,
                            V::I(_, t) => Ty::I(t),
                            _ => return Err(Trap::Unevaluable),
                        };
                        arith(*op, &cur, &r, &ty)?
                    }
                };
                *self.slot(n) = v;
            }
            S::SliceFill(a, parts, e) => {
                // The selected indices of every axis (ndarray: an index out
                // of range panics; `1..` on an empty axis selects nothing in
                // linad but panics in ndarray, so the generator only uses it
                // where the size is at least 1: see `gen.rs`).
                let mut at = vec![];
                for p in parts {
                    at.push(match p {
                        SlicePart::At(i) => Some(self.e(i)?.i()),
                        _ => None,
                    });
                }
                let r = self.e(e)?.f();
                let V::A(shape, data) = self.slot(a) else {
                    return Err(Trap::Unevaluable);
                };
                let shape = shape.clone();
                let mut sel: Vec<Vec<usize>> = vec![];
                for ((p, len), i) in parts.iter().zip(&shape).zip(&at) {
                    let len = *len;
                    sel.push(match p {
                        SlicePart::Full | SlicePart::Rev => (0..len).collect(),
                        SlicePart::Every2 => (0..len).step_by(2).collect(),
                        SlicePart::From1 => {
                            if len < 1 {
                                return Err(Trap::Bounds);
                            }
                            (1..len).collect()
                        }
                        SlicePart::At(_) => {
                            let i = i.unwrap_or(-1);
                            if i < 0 || i as usize >= len {
                                return Err(Trap::Bounds);
                            }
                            vec![i as usize]
                        }
                    });
                }
                // Every combination of the selected indices.
                let mut idx = vec![0usize; sel.len()];
                if sel.iter().all(|s| !s.is_empty()) {
                    loop {
                        let ix: Vec<usize> = idx.iter().zip(&sel).map(|(k, s)| s[*k]).collect();
                        let k = flat_index(&shape, &ix)?;
                        data[k] = r;
                        let mut ax = sel.len();
                        loop {
                            if ax == 0 {
                                break;
                            }
                            ax -= 1;
                            idx[ax] += 1;
                            if idx[ax] < sel[ax].len() {
                                break;
                            }
                            idx[ax] = 0;
                        }
                        if idx.iter().all(|k| *k == 0) {
                            break;
                        }
                    }
                }
            }
            S::InPlace { arr, acc, e, .. } => {
                let w = self.e(e)?.f();
                let mut c = acc.as_ref().map(|c| self.slot(c).f());
                // Row-major (`iter_mut`); `map_inplace` runs without `acc`,
                // where the order does not matter.
                match self.slot(arr) {
                    V::A(_, data) => {
                        for x in data.iter_mut() {
                            if let Some(c) = &mut c {
                                *c = *c * 0.5 + *x;
                            }
                            // (IEEE addition commutes: `x.sin() * w + x`'s bits.)
                            *x += x.sin() * w;
                        }
                    }
                    _ => return Err(Trap::Unevaluable),
                }
                if let (Some(name), Some(c)) = (acc, c) {
                    *self.slot(name) = V::F(c);
                }
            }
            S::Set(a, ix, add, e) => {
                let mut idx = vec![];
                for x in ix {
                    idx.push(self.e(x)?.i() as usize);
                }
                let r = self.e(e)?.f();
                match self.slot(a) {
                    V::A(shape, data) => {
                        let k = flat_index(shape, &idx)?;
                        if *add {
                            data[k] += r;
                        } else {
                            data[k] = r;
                        }
                    }
                    _ => return Err(Trap::Unevaluable),
                }
            }
            S::For {
                var,
                lo,
                hi,
                inclusive,
                rev,
                body,
                brk,
                label,
            } => {
                let hi = self.e(hi)?.i();
                let hi = if *inclusive {
                    // `..=(hi - 1)`: `hi - 1` on usize.
                    if hi == 0 {
                        return Err(Trap::Overflow);
                    }
                    hi
                } else {
                    hi
                };
                let lo = *lo as i128;
                let mut ks: Vec<i128> = (lo..hi.max(lo)).collect();
                if *rev {
                    ks.reverse();
                }
                for k in ks {
                    if self.steps > 2_000_000 {
                        return Err(Trap::Unevaluable);
                    }
                    self.vars.push((var.clone(), V::I(k, IntTy::Usize)));
                    let stop = self.body_then_break(body, brk.as_ref(), label.as_ref())?;
                    self.vars.pop();
                    if stop {
                        break;
                    }
                }
            }
            S::While {
                var,
                lo,
                hi,
                cond,
                body,
                brk,
                as_loop: _,
                label,
            } => {
                // Both forms: the bound first, then the extra condition.
                self.vars
                    .push((var.clone(), V::I(*lo as i128, IntTy::Usize)));
                loop {
                    if self.steps > 2_000_000 {
                        return Err(Trap::Unevaluable);
                    }
                    let k = self.get(var).i();
                    if k >= self.e(hi)?.i() {
                        break;
                    }
                    if let Some(c) = cond {
                        if !self.e(c)?.b() {
                            break;
                        }
                    }
                    if self.body_then_break(body, brk.as_ref(), label.as_ref())? {
                        break;
                    }
                    *self.slot(var) = V::I(k + 1, IntTy::Usize);
                }
            }
            S::If(c, a, b) => {
                if self.e(c)?.b() {
                    self.block(a)?;
                } else {
                    self.block(b)?;
                }
            }
            S::Cfg(p, s) => {
                if p.holds(self.debug_assertions) {
                    self.s(s)?;
                }
            }
            S::Exit(is_break) => self.flow = Some((*is_break, None)),
            S::LoopValue {
                var,
                counter: _,
                hi,
                body,
                cond,
                val,
                annot: _,
            } => {
                let mut k = 0i128;
                let v = loop {
                    if self.steps > 2_000_000 {
                        return Err(Trap::Unevaluable);
                    }
                    let mark = self.vars.len();
                    for s in body {
                        self.s(s)?;
                        if self.flow.is_some() {
                            break;
                        }
                    }
                    if self.flow.is_some() {
                        // A labelled exit to a loop outside: this `let`
                        // never completes.
                        self.vars.truncate(mark);
                        return Ok(());
                    }
                    k += 1;
                    let stop = k >= self.e(hi)?.i() || self.e(cond)?.b();
                    let v = if stop { Some(self.e(val)?) } else { None };
                    self.vars.truncate(mark);
                    if let Some(v) = v {
                        break v;
                    }
                };
                self.vars.push((var.clone(), v));
            }
            S::ExitTo(is_break, label) => self.flow = Some((*is_break, Some(label.clone()))),
            S::Pushes {
                vec,
                kind: _,
                for_loop,
                var,
            } => {
                self.vars.push((vec.clone(), V::A(vec![0], vec![])));
                self.s(for_loop)?;
                if self.flow.is_some() {
                    // A labelled exit to a loop outside: the `let` after
                    // the loop does not run.
                    return Ok(());
                }
                let (sum, len) = match self.get(vec) {
                    // `iter().sum()`: from 0.0, in order.
                    V::A(_, data) => (data.iter().fold(0.0, |s, x| s + x), data.len()),
                    _ => return Err(Trap::Unevaluable),
                };
                self.vars.push((var.clone(), V::F(sum * 0.5 + len as f64)));
            }
            S::Push(vec, e) => {
                let x = self.e(e)?.f();
                match self.slot(vec) {
                    V::A(shape, data) => {
                        data.push(x);
                        shape[0] += 1;
                    }
                    _ => return Err(Trap::Unevaluable),
                }
            }
            S::Deferred {
                var,
                annot: _,
                c,
                a,
                av,
                b,
                bv,
            } => {
                let (body, val) = if self.e(c)?.b() { (a, av) } else { (b, bv) };
                let mark = self.vars.len();
                for s in body {
                    self.s(s)?;
                    if self.flow.is_some() {
                        // A labelled exit from a loop in the branch.
                        self.vars.truncate(mark);
                        return Ok(());
                    }
                }
                let v = self.e(val)?;
                self.vars.truncate(mark);
                self.vars.push((var.clone(), v));
            }
            S::Raw(_) => return Err(Trap::Unevaluable),
        }
        Ok(())
    }

    /// Evaluates an expression (and records its magnitude in `max_abs`).
    pub fn e(&mut self, e: &E) -> Result<V, Trap> {
        let v = self.e_untracked(e)?;
        let mut fl = vec![];
        v.flat(&mut fl);
        for x in fl {
            if x.is_finite() {
                self.max_abs = self.max_abs.max(x.abs());
            }
        }
        Ok(v)
    }

    fn e_untracked(&mut self, e: &E) -> Result<V, Trap> {
        self.steps += 1;
        Ok(match e {
            E::F(x) => V::F(*x),
            E::I(v, t) => V::I(*v as i128, *t),
            E::B(b) => V::B(*b),
            E::Var(n, _, _) => self.get(n),
            E::Const(k) => V::F(CONSTS[*k].1),
            E::Field(t, k) => match self.e(t)? {
                V::T(vs) => vs[*k].clone(),
                _ => return Err(Trap::Unevaluable),
            },
            E::Tup(a, b) => V::T(vec![self.e(a)?, self.e(b)?]),
            E::Bin(op, a, b, ty) => {
                let (x, y) = (self.e(a)?, self.e(b)?);
                arith(*op, &x, &y, ty)?
            }
            E::Neg(a) => match self.e(a)? {
                V::F(x) => V::F(-x),
                V::I(v, t) => int_check(-v, t)?,
                _ => return Err(Trap::Unevaluable),
            },
            E::M1(m, a) => V::F(m1(m, self.e(a)?.f())),
            E::M2(m, a, b) => {
                let x = self.e(a)?.f();
                V::F(m2(m, x, self.e(b)?.f()))
            }
            E::Powi(a, k) => V::F(self.e(a)?.f().powi(*k)),
            E::MulAdd(a, b, c) => {
                let x = self.e(a)?.f();
                let y = self.e(b)?.f();
                V::F(x.mul_add(y, self.e(c)?.f()))
            }
            E::Clamp(a, lo, hi) => V::F(self.e(a)?.f().clamp(*lo, *hi)),
            E::IntM(m, a, b, t) => {
                let x = self.e(a)?.i();
                let y = self.e(b)?.i();
                match *m {
                    "max" => V::I(x.max(y), *t),
                    "min" => V::I(x.min(y), *t),
                    "pow" => {
                        let mut r: i128 = 1;
                        for _ in 0..y {
                            r = r.checked_mul(x).ok_or(Trap::Overflow)?;
                            int_check(r, *t)?;
                        }
                        V::I(r, *t)
                    }
                    _ => return Err(Trap::Unevaluable),
                }
            }
            E::Cast(a, from, to) => {
                let v = self.e(a)?;
                match (from, to, v) {
                    (_, Ty::F, V::F(x)) => V::F(x),
                    (_, Ty::F, V::I(v, _)) => V::F(v as f64),
                    (_, Ty::I(t), V::F(x)) => V::I(t.from_f64(x), *t),
                    (_, Ty::I(t), V::I(v, _)) => V::I(t.wrap(v), *t),
                    _ => return Err(Trap::Unevaluable),
                }
            }
            E::Cmp(c, a, b, _) => {
                let (x, y) = (self.e(a)?, self.e(b)?);
                V::B(match (x, y) {
                    (V::F(x), V::F(y)) => c.eval(x, y),
                    (V::I(x, _), V::I(y, _)) => c.eval(x, y),
                    _ => return Err(Trap::Unevaluable),
                })
            }
            E::And(a, b) => V::B(self.e(a)?.b() && self.e(b)?.b()),
            E::Or(a, b) => V::B(self.e(a)?.b() || self.e(b)?.b()),
            E::Not(a) => V::B(!self.e(a)?.b()),
            E::If(c, a, b) => {
                if self.e(c)?.b() {
                    self.e(a)?
                } else {
                    self.e(b)?
                }
            }
            E::Index(a, ix) => {
                let mut idx = vec![];
                for x in ix {
                    idx.push(self.e(x)?.i() as usize);
                }
                let read = |av: &V| -> Result<V, Trap> {
                    let (s, d) = av.arr();
                    Ok(V::F(d[flat_index(s, &idx)?]))
                };
                match a.as_ref() {
                    E::Var(n, _, _) => read(self.get_ref(n))?,
                    _ => read(&self.e(a)?)?,
                }
            }
            E::Len(a, k) => V::I(self.e(a)?.arr().0[*k] as i128, IntTy::Usize),
            E::Sum(a) => {
                // ndarray's `sum` of a contiguous array: pairwise in
                // unrolled chunks; the oracle does not model it (see
                // `approx_sum`), so sums are compared with a tolerance.
                // Its accumulators start at +0.0 (std's `Sum` for f64
                // starts at -0.0: the sum of [-0.0] would differ in sign).
                let v = self.e(a)?;
                V::F(plus_zero_sum(v.arr().1.iter().copied()))
            }
            E::Dot(a, b) => {
                let (x, y) = (self.e(a)?, self.e(b)?);
                let (xs, xd) = x.arr();
                let (ys, yd) = y.arr();
                if ys.len() == 2 {
                    // matrix-matrix or vector-matrix product
                    let (m, kk) = if xs.len() == 2 {
                        (xs[0], xs[1])
                    } else {
                        (1, xs[0])
                    };
                    let c = ys[1];
                    if ys[0] != kk {
                        return Err(Trap::Bounds);
                    }
                    let out = (0..m * c)
                        .map(|ij| {
                            let (i, j) = (ij / c, ij % c);
                            plus_zero_sum((0..kk).map(|t| xd[i * kk + t] * yd[t * c + j]))
                        })
                        .collect();
                    let shape = if xs.len() == 2 { vec![m, c] } else { vec![c] };
                    V::A(shape, out)
                } else if xs.len() == 2 {
                    // matrix-vector product
                    let (r, c) = (xs[0], xs[1]);
                    let out = (0..r)
                        .map(|i| plus_zero_sum((0..c).map(|j| xd[i * c + j] * yd[j])))
                        .collect();
                    V::A(vec![r], out)
                } else {
                    V::F(plus_zero_sum(xd.iter().zip(yd).map(|(p, q)| p * q)))
                }
            }
            E::Zeros(r, n) => {
                let n = self.e(n)?.i() as usize;
                V::A(vec![n; *r], vec![0.0; n.pow(*r as u32)])
            }
            E::Build(r, n, ix, body) => {
                let n = self.e(n)?.i() as usize;
                let total = n.pow(*r as u32);
                let mut data = Vec::with_capacity(total);
                for k in 0..total {
                    let mut rem = k;
                    let mut idx = vec![0; *r];
                    for a in (0..*r).rev() {
                        idx[a] = rem % n;
                        rem /= n;
                    }
                    for (name, i) in ix.iter().zip(&idx) {
                        self.vars
                            .push((name.clone(), V::I(*i as i128, IntTy::Usize)));
                    }
                    let v = self.e(body);
                    for _ in ix {
                        self.vars.pop();
                    }
                    data.push(v?.f());
                }
                V::A(vec![n; *r], data)
            }
            E::Mapv(a, x, body) => {
                let av = self.e(a)?;
                let (s, d) = av.arr();
                let mut out = Vec::with_capacity(d.len());
                for &v in d {
                    self.vars.push((x.clone(), V::F(v)));
                    let r = self.e(body);
                    self.vars.pop();
                    out.push(r?.f());
                }
                V::A(s.to_vec(), out)
            }
            E::Ew(op, a, b) => {
                let (x, y) = (self.e(a)?, self.e(b)?);
                let (s, d) = x.arr();
                let d2 = y.arr().1;
                let out = d
                    .iter()
                    .zip(d2)
                    .map(|(p, q)| arith(*op, &V::F(*p), &V::F(*q), &Ty::F).map(|v| v.f()))
                    .collect::<Result<Vec<f64>, Trap>>()?;
                V::A(s.to_vec(), out)
            }
            E::EwIns(op, a, v, k, left) => {
                let (x, y) = (self.e(a)?, self.e(v)?);
                let (s, d) = x.arr();
                let (sv, dv) = y.arr();
                let mut without: Vec<usize> = s.to_vec();
                without.remove(*k);
                if without != sv {
                    return Err(Trap::Bounds);
                }
                let mut out = Vec::with_capacity(d.len());
                for (j, p) in d.iter().enumerate() {
                    // The multi-index of `j` in `s`, without axis `k`, in `sv`.
                    let (mut rest, mut jv, mut stride) = (j, 0, 1);
                    for ax in (0..s.len()).rev() {
                        let i = rest % s[ax];
                        rest /= s[ax];
                        if ax != *k {
                            jv += i * stride;
                            stride *= s[ax];
                        }
                    }
                    let q = dv[jv];
                    let (l, r) = if *left { (q, *p) } else { (*p, q) };
                    out.push(arith(*op, &V::F(l), &V::F(r), &Ty::F).map(|v| v.f())?);
                }
                V::A(s.to_vec(), out)
            }
            E::Scale(a, sc) => {
                let x = self.e(a)?;
                let c = self.e(sc)?.f();
                let (s, d) = x.arr();
                V::A(s.to_vec(), d.iter().map(|v| v * c).collect())
            }
            E::Rev(a, _, k) => {
                let x = self.e(a)?;
                let (s, d) = x.arr();
                let out = (0..d.len())
                    .map(|j| {
                        let mut ix = unravel(s, j);
                        ix[*k] = s[*k] - 1 - ix[*k];
                        d[ravel(s, &ix)]
                    })
                    .collect();
                V::A(s.to_vec(), out)
            }
            E::T(a) => {
                let x = self.e(a)?;
                let (s, d) = x.arr();
                let (r, c) = (s[0], s[1]);
                V::A(
                    vec![c, r],
                    (0..r * c).map(|j| d[(j % r) * c + j / r]).collect(),
                )
            }
            E::Select(a, _, k, idx) => {
                let x = self.e(a)?;
                let (s, d) = x.arr();
                if idx.iter().any(|&i| i >= s[*k]) {
                    return Err(Trap::Bounds);
                }
                let mut shape = s.to_vec();
                shape[*k] = idx.len();
                // Row-major strides of the source.
                let strides: Vec<usize> =
                    (0..s.len()).map(|q| s[q + 1..].iter().product()).collect();
                let total: usize = shape.iter().product();
                let mut out = Vec::with_capacity(total);
                for flat in 0..total {
                    let mut rest = flat;
                    let mut src = 0;
                    for q in (0..shape.len()).rev() {
                        let pos = rest % shape[q];
                        rest /= shape[q];
                        let at = if q == *k { idx[pos] } else { pos };
                        src += at * strides[q];
                    }
                    out.push(d[src]);
                }
                V::A(shape, out)
            }
            E::ChunkSums(a, c, dot) => {
                let x = self.e(a)?;
                let d = x.arr().1;
                // Each chunk's `sum` / `dot` in ndarray's unrolled order is
                // not modelled: compared with a tolerance (`has_reductions`).
                let mut total = 0.0;
                for ch in d.chunks_exact(*c) {
                    total += if *dot {
                        plus_zero_sum(ch.iter().map(|v| v * v))
                    } else {
                        plus_zero_sum(ch.iter().copied())
                    };
                }
                V::F(total)
            }
            E::Diag(a) => {
                let x = self.e(a)?;
                let (s, d) = x.arr();
                let n = s[0].min(s[1]);
                V::A(vec![n], (0..n).map(|i| d[i * s[1] + i]).collect())
            }
            E::AxisAt(a, _, k, i, _) => {
                let x = self.e(a)?;
                let i = self.e(i)?.i() as usize;
                let (s, d) = x.arr();
                if i >= s[*k] {
                    return Err(Trap::Bounds);
                }
                let mut rest = s.to_vec();
                rest.remove(*k);
                let out = (0..rest.iter().product())
                    .map(|j| {
                        let mut ix = unravel(&rest, j);
                        ix.insert(*k, i);
                        d[ravel(s, &ix)]
                    })
                    .collect();
                V::A(rest, out)
            }
            E::SumAxis(a, k) | E::MapAxis(a, k, _) => {
                let squares = matches!(e, E::MapAxis(_, _, true));
                let x = self.e(a)?;
                let (s, d) = x.arr();
                let mut rest = s.to_vec();
                rest.remove(*k);
                let out = (0..rest.iter().product())
                    .map(|j| {
                        let ix = unravel(&rest, j);
                        plus_zero_sum((0..s[*k]).map(|t| {
                            let mut full = ix.clone();
                            full.insert(*k, t);
                            let v = d[ravel(s, &full)];
                            if squares {
                                v * v
                            } else {
                                v
                            }
                        }))
                    })
                    .collect();
                V::A(rest, out)
            }
            E::Reduce(kind, a) => {
                let x = self.e(a)?;
                let d = x.arr().1;
                let n = d.len() as f64;
                V::F(match kind {
                    // ndarray's order is its unrolled one: compared with a
                    // tolerance (`has_reductions`).
                    Reduction::Mean | Reduction::MaxByTotal | Reduction::MinByPartial
                        if d.is_empty() =>
                    {
                        return Err(Trap::Bounds)
                    }
                    Reduction::MaxByTotal => {
                        d.iter().copied().max_by(f64::total_cmp).unwrap_or(0.0)
                    }
                    Reduction::MinByPartial if d.len() > 1 && d.iter().any(|x| x.is_nan()) => {
                        return Err(Trap::Bounds)
                    }
                    Reduction::MinByPartial => d
                        .iter()
                        .copied()
                        .min_by(|l, r| l.partial_cmp(r).unwrap_or(std::cmp::Ordering::Equal))
                        .unwrap_or(0.0),
                    Reduction::Mean => plus_zero_sum(d.iter().copied()) / n,
                    Reduction::Product => d.iter().fold(1.0, |p, x| p * x),
                    Reduction::IterSum => d.iter().fold(-0.0, |s, x| s + x),
                    Reduction::Var => {
                        let (mut mean, mut ss) = (0.0f64, 0.0f64);
                        for (i, &x) in d.iter().enumerate() {
                            let delta = x - mean;
                            mean += delta / (i + 1) as f64;
                            ss = (x - mean).mul_add(delta, ss);
                        }
                        ss / n
                    }
                })
            }
            E::EwB(op, a, v, left) => {
                let (x, y) = (self.e(a)?, self.e(v)?);
                let (s, d) = x.arr();
                let (sv, dv) = y.arr();
                if sv != &s[1..] {
                    return Err(Trap::Bounds);
                }
                let inner = dv.len();
                let mut out = Vec::with_capacity(d.len());
                for (j, p) in d.iter().enumerate() {
                    let q = dv[j % inner.max(1)];
                    let (l, r) = if *left { (q, *p) } else { (*p, q) };
                    out.push(arith(*op, &V::F(l), &V::F(r), &Ty::F).map(|v| v.f())?);
                }
                V::A(s.to_vec(), out)
            }
            E::Call(f, args) => {
                let mut vs = vec![];
                for a in args {
                    vs.push(self.e(a)?);
                }
                let helpers = self.helpers;
                let g = helpers
                    .iter()
                    .find(|g| &g.name == f)
                    .ok_or(Trap::Unevaluable)?;
                self.call(g, vs)?
            }
            E::Raw(_) => return Err(Trap::Unevaluable),
        })
    }
}

fn arith(op: Op, x: &V, y: &V, ty: &Ty) -> Result<V, Trap> {
    match ty {
        Ty::F => {
            let (a, b) = (x.f(), y.f());
            Ok(V::F(match op {
                Op::Add => a + b,
                Op::Sub => a - b,
                Op::Mul => a * b,
                Op::Div => a / b,
                Op::Rem => a % b,
            }))
        }
        Ty::I(t) => {
            let (a, b) = (x.i(), y.i());
            let r = match op {
                Op::Add => a + b,
                Op::Sub => a - b,
                Op::Mul => a.checked_mul(b).ok_or(Trap::Overflow)?,
                Op::Div | Op::Rem if b == 0 => return Err(Trap::DivZero),
                Op::Div => a.checked_div(b).ok_or(Trap::Overflow)?,
                // Rust checks the quotient of a remainder too:
                // `i8::MIN % -1` panics although the remainder is 0.
                Op::Rem => {
                    int_check(a.checked_div(b).ok_or(Trap::Overflow)?, *t)?;
                    a.checked_rem(b).ok_or(Trap::Overflow)?
                }
            };
            int_check(r, *t)
        }
        _ => Err(Trap::Unevaluable),
    }
}

impl Program {
    /// The main function's result on its parameters' values (the oracle).
    pub fn eval(&self, debug_assertions: bool) -> Result<V, Trap> {
        self.eval_tracked(debug_assertions).0
    }

    /// As [`Program::eval`], with the largest finite |x| of any f64 value
    /// the evaluation produced (see [`Eval::max_abs`]).
    pub fn eval_tracked(&self, debug_assertions: bool) -> (Result<V, Trap>, f64) {
        let mut ev = Eval::new(&self.helpers);
        ev.debug_assertions = debug_assertions;
        let args = self.main.params.iter().map(|p| p.value.clone()).collect();
        let r = ev.call(&self.main, args);
        (r, ev.max_abs)
    }

    /// Whether the program contains a `sum` or `dot` (whose summation order
    /// the oracle does not model bit for bit).
    pub fn has_reductions(&self) -> bool {
        let src = self.source();
        src.contains(".sum()")
            || src.contains(".dot(")
            || src.contains(".sum_axis(")
            || src.contains(".map_axis(")
            || src.contains(".mean()")
            || src.contains(".product()")
    }
}

/// A sum as ndarray's `sum` and `dot` compute it: from +0.0, so an empty or
/// all-`-0.0` sum is +0.0 (std's `Iterator::sum` for f64 starts at -0.0).
fn plus_zero_sum(xs: impl Iterator<Item = f64>) -> f64 {
    xs.fold(0.0, |a, x| a + x)
}
