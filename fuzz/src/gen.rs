//! The generator of random well-typed `#[differentiable]` functions.

use crate::ast::*;
use crate::rng::Rng;

/// A switchable feature class of generated programs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Feature {
    /// `f64` methods and constants beyond `+ - * /`.
    Math,
    /// Integer locals and parameters of every width, integer arithmetic.
    Ints,
    /// Casts: int -> f64, f64 -> int (saturating), int -> int (narrowing).
    Casts,
    /// `(f64, f64)` parameters, locals, fields, destructuring, outputs.
    Tuples,
    Arrays1,
    Arrays2,
    Arrays3,
    /// `for` loops (nested, reversed, inclusive), loop-carried updates.
    Loops,
    /// `ArrayN::from_shape_fn`.
    Builds,
    /// `mapv`.
    Maps,
    /// `sum`, `dot` (vec·vec, mat·vec).
    Reductions,
    /// `if`/`else` statements and expressions, comparisons, `&& || !`.
    Branches,
    /// Calls of other generated `#[differentiable]` functions.
    Calls,
    /// `#[cfg(..)]` on statements.
    Cfg,
    /// Locals named like keywords (raw identifiers), like the generated
    /// items (`ct`, `d_x`, `__linad_t0`), Unicode.
    OddNames,
    /// Parameters named so: `r#in`, `ct`, `x` with `d_x`, `α` with `d_α`.
    OddParams,
    /// Array outputs.
    ArrayOut,
    /// Local arrays written element by element in loops.
    ArrayWrites,
    /// Casts that wrap or saturate: `f64` to an integer narrower than 64
    /// bits, integer to a narrower or differently signed integer (without
    /// it, casts only widen).
    Narrowing,
    /// `mul_add` (fused: one rounding).
    MulAdd,
    /// `exp2`.
    Exp2,
    /// Piecewise-constant methods (`floor`, `ceil`, `round`, `trunc`,
    /// `signum`: no derivative) and `fract`.
    Steps,
    /// `while` and `loop` with `break` (counted by a `usize` variable), and
    /// `break` in `for`.
    Whiles,
    /// `break` / `continue` ending a branch of an `if` anywhere in a loop
    /// body (`continue` in `for` loops only: a `while` counts at its end).
    Exits,
    /// Views and whole-array forms of ndarray's docs: `t()`, `row(i)`,
    /// `sum_axis`, `map_axis`, matrix products (`mat.dot(&mat)`,
    /// `vec.dot(&mat)`), broadcasting a lower-rank array along the leading
    /// axes (`&m - &v`), and the reductions `mean`, `product`, `var`,
    /// `iter().sum()`.
    Views,
    /// With [`Feature::Views`], views whose elements are not one block of
    /// memory in ndarray (`column(j)`, reversed slices `s![..;-1]`,
    /// `diag()`, `index_axis` of a rank-3 array): the generated code must
    /// read them as ndarray's views with their strides, or their sums and
    /// dot products add in another order than `f`'s.
    Strided,
    /// With [`Feature::ArrayWrites`], local arrays updated in place: `for v
    /// in a.iter_mut()` (accumulating into an `f64` variable in logical
    /// order) and `a.map_inplace(..)`.
    InPlace,
    /// With [`Feature::Exits`], labelled loops and `break 'l` / `continue
    /// 'l` from loops nested in them (`continue` to `for` loops only).
    Labels,
    /// `let r = loop { .. break v; };` (typed by the `let`, or a value
    /// that is a name).
    LoopValues,
    /// With [`Feature::Loops`], a `Vec` grown by `push` in a `for` loop
    /// (`Vec::new()`, `with_capacity`, `vec![]`; pushes under conditions,
    /// skipped by `continue`, cut short by `break`), then its sum and
    /// length.
    Pushes,
    /// With [`Feature::Branches`], `let y[: f64];` assigned in both
    /// branches of an `if`.
    Deferred,
    /// With [`Feature::Views`] and [`Feature::Reductions`], gathers:
    /// `a.select(Axis(k), &[..])` (a matrix selected along axis 1 is
    /// column-major in ndarray: its sums must add by columns) and sums over
    /// a vector's `exact_chunks(c)`.
    Gathers,
}

/// Every feature, with its switch name.
pub const FEATURES: [(Feature, &str); 32] = [
    (Feature::Math, "math"),
    (Feature::Ints, "ints"),
    (Feature::Casts, "casts"),
    (Feature::Tuples, "tuples"),
    (Feature::Arrays1, "arrays1"),
    (Feature::Arrays2, "arrays2"),
    (Feature::Arrays3, "arrays3"),
    (Feature::Loops, "loops"),
    (Feature::Builds, "builds"),
    (Feature::Maps, "maps"),
    (Feature::Reductions, "reductions"),
    (Feature::Branches, "branches"),
    (Feature::Calls, "calls"),
    (Feature::Cfg, "cfg"),
    (Feature::OddNames, "oddnames"),
    (Feature::OddParams, "oddparams"),
    (Feature::ArrayOut, "arrayout"),
    (Feature::ArrayWrites, "arraywrites"),
    (Feature::Narrowing, "narrowing"),
    (Feature::MulAdd, "muladd"),
    (Feature::Exp2, "exp2"),
    (Feature::Steps, "steps"),
    (Feature::Whiles, "whiles"),
    (Feature::Exits, "exits"),
    (Feature::Views, "views"),
    (Feature::Strided, "strided"),
    (Feature::InPlace, "inplace"),
    (Feature::Labels, "labels"),
    (Feature::LoopValues, "loopvalues"),
    (Feature::Pushes, "pushes"),
    (Feature::Deferred, "deferred"),
    (Feature::Gathers, "gathers"),
];

/// A set of features.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Features(pub u64);

impl Features {
    pub fn all() -> Features {
        Features((1 << FEATURES.len()) - 1)
    }
    pub fn none() -> Features {
        Features(0)
    }
    pub fn has(self, f: Feature) -> bool {
        self.0 & (1 << f as u64) != 0
    }
    pub fn with(self, f: Feature) -> Features {
        Features(self.0 | (1 << f as u64))
    }
    pub fn without(self, f: Feature) -> Features {
        Features(self.0 & !(1 << f as u64))
    }

    /// Parses `"all,-cfg,-oddnames"` or `"math,loops"` (comma-separated;
    /// `all`/`none`; `-name` removes).
    pub fn parse(s: &str) -> Result<Features, String> {
        let mut fs = Features::none();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (neg, name) = match part.strip_prefix('-') {
                Some(n) => (true, n),
                None => (false, part),
            };
            if name == "all" {
                fs = Features::all();
                continue;
            }
            if name == "none" {
                fs = Features::none();
                continue;
            }
            let f = FEATURES
                .iter()
                .find(|(_, n)| *n == name)
                .map(|(f, _)| *f)
                .ok_or_else(|| format!("unknown feature `{name}`"))?;
            fs = if neg { fs.without(f) } else { fs.with(f) };
        }
        Ok(fs)
    }

    /// The names of the features in the set.
    pub fn names(self) -> Vec<&'static str> {
        FEATURES
            .iter()
            .filter(|(f, _)| self.has(*f))
            .map(|(_, n)| *n)
            .collect()
    }
}

#[derive(Clone, Debug)]
struct VarInfo {
    name: String,
    ty: Ty,
    pass: Pass,
    mutable: bool,
    /// A usize whose value is always a valid index (`< N`).
    index: bool,
}

/// Names like those the macro generates, keywords as raw identifiers,
/// Unicode.
const ODD_NAMES: [&str; 16] = [
    "r#type",
    "r#match",
    "r#ref",
    "ct",
    "dx",
    "d_x",
    "y",
    "tmp",
    "__linad_t0",
    "__t",
    "x_jvp",
    "primal",
    "lin_t",
    "α",
    "ñame",
    "_unused",
];

struct Gen<'a> {
    rng: &'a mut Rng,
    fs: Features,
    scope: Vec<VarInfo>,
    counter: usize,
    n: usize,
    helpers: Vec<(String, usize)>,
    /// Statements generated so far (bounds program size).
    budget: usize,
    in_helper: bool,
    /// Inside a loop body (and not in a nested expression): where an exit
    /// may end an `if` branch.
    in_loop: bool,
    /// The labels of the loops around the statement generated, outermost
    /// first (with [`Feature::Labels`]).
    labels: Vec<String>,
}

/// The `continue 'label`s in a loop body (at any depth) made `break
/// 'label`s: a `while` loop labelled so counts at its end, which they
/// would skip.
fn labelled_continues_to_breaks(body: &mut [S], label: &str) {
    for s in body {
        match s {
            S::ExitTo(is_break, l) if l == label => *is_break = true,
            S::If(_, a, b) => {
                labelled_continues_to_breaks(a, label);
                labelled_continues_to_breaks(b, label);
            }
            S::For { body, .. } | S::While { body, .. } | S::LoopValue { body, .. } => {
                labelled_continues_to_breaks(body, label)
            }
            S::Pushes { for_loop, .. } => {
                labelled_continues_to_breaks(std::slice::from_mut(&mut **for_loop), label)
            }
            S::Deferred { a, b, .. } => {
                labelled_continues_to_breaks(a, label);
                labelled_continues_to_breaks(b, label);
            }
            _ => {}
        }
    }
}

/// The `f64` variables of `scope` that are not loop indices: names whose
/// type a `break` value's or an assigned value's syntax shows.
fn f_names(scope: &[VarInfo]) -> Vec<VarInfo> {
    scope
        .iter()
        .filter(|v| v.ty == Ty::F && !v.index)
        .cloned()
        .collect()
}

/// The `continue`s of a loop body (in its `if`s, not in nested loops) made
/// `break`s.
fn continues_to_breaks(body: &mut [S]) {
    for s in body {
        match s {
            S::Exit(is_break) => *is_break = true,
            S::If(_, a, b) => {
                continues_to_breaks(a);
                continues_to_breaks(b);
            }
            _ => {}
        }
    }
}

/// `e`, or `e + f64::EPSILON` when `e` alone would be a `{float}` (an array
/// of `{float}` leaves the closure parameters of a later `mapv` untyped).
fn typed_f(e: E) -> E {
    if typed(&e) {
        e
    } else {
        E::Bin(Op::Add, b(e), b(E::Const(4)), Ty::F)
    }
}

fn b(e: E) -> Box<E> {
    Box::new(e)
}

impl<'a> Gen<'a> {
    fn on(&self, f: Feature) -> bool {
        self.fs.has(f)
    }

    fn fresh(&mut self, base: &str) -> String {
        self.counter += 1;
        if self.on(Feature::OddNames) && self.rng.chance(0.2) {
            let odd = *self.rng.pick(&ODD_NAMES);
            // Odd names may shadow, but never a parameter (the parameter
            // is then unreachable, and the output could lose it).
            if !self.scope.iter().any(|v| v.name == odd) {
                return odd.to_string();
            }
        }
        format!("{base}{}", self.counter)
    }

    /// `r` distinct fresh names (a closure pattern may not repeat one).
    fn distinct_names(&mut self, r: usize) -> Vec<String> {
        let mut names: Vec<String> = vec![];
        for _ in 0..r {
            let n = self.fresh("b");
            if names.contains(&n) {
                names.push(format!("b{}", self.counter));
            } else {
                names.push(n);
            }
        }
        names
    }

    /// The visible (unshadowed) variables.
    fn visible(&self) -> Vec<VarInfo> {
        let mut out: Vec<VarInfo> = vec![];
        for v in self.scope.iter().rev() {
            if !out.iter().any(|w| w.name == v.name) {
                out.push(v.clone());
            }
        }
        out
    }

    fn vars_of(&self, pred: impl Fn(&VarInfo) -> bool) -> Vec<VarInfo> {
        self.visible().into_iter().filter(|v| pred(v)).collect()
    }

    fn var_e(v: &VarInfo) -> E {
        E::Var(v.name.clone(), v.ty.clone(), v.pass)
    }

    fn size_e(&mut self) -> E {
        let arrs = self.vars_of(|v| matches!(v.ty, Ty::A(_)));
        let ns = self.vars_of(|v| v.name == "n" && v.ty == Ty::I(IntTy::Usize));
        match self.rng.below(3) {
            0 if !arrs.is_empty() => {
                let a = self.rng.pick(&arrs).clone();
                let r = if let Ty::A(r) = a.ty { r } else { 1 };
                E::Len(b(Self::var_e(&a)), self.rng.below(r))
            }
            1 if !ns.is_empty() => Self::var_e(&ns[0]),
            _ => E::I(self.n as i64, IntTy::Usize),
        }
    }

    fn index_e(&mut self) -> E {
        let ix = self.vars_of(|v| v.index);
        if !ix.is_empty() && self.rng.chance(0.85) {
            Self::var_e(self.rng.pick(&ix))
        } else {
            E::I(self.rng.below(self.n) as i64, IntTy::Usize)
        }
    }

    fn guard_pos(&mut self, a: E, c: f64) -> E {
        // `a * a + c`
        E::Bin(
            Op::Add,
            b(E::Bin(Op::Mul, b(a.clone()), b(a), Ty::F)),
            b(E::F(c)),
            Ty::F,
        )
    }

    /// An `f64` expression.
    fn ef(&mut self, d: usize) -> E {
        let leaf = d == 0 || self.rng.chance(0.25);
        if leaf {
            let fvars = self.vars_of(|v| v.ty == Ty::F);
            return match self.rng.below(10) {
                0 | 1 => E::F(self.rng.nice(3)),
                2 if self.on(Feature::Math) => E::Const(self.rng.below(CONSTS.len())),
                _ if !fvars.is_empty() => Self::var_e(self.rng.pick(&fvars)),
                _ => E::F(self.rng.nice(2)),
            };
        }
        let d1 = d - 1;
        loop {
            match self.rng.below(20) {
                0..=3 => {
                    let op = *self.rng.pick(&[Op::Add, Op::Sub, Op::Mul]);
                    return E::Bin(op, b(self.ef(d1)), b(self.ef(d1)), Ty::F);
                }
                4 => {
                    let num = self.ef(d1);
                    // `%` by a literal (piecewise: its jumps, like the
                    // steps', are measure-zero for finite differences)
                    if self.on(Feature::Steps) && self.rng.below(4) == 0 {
                        let m = *self.rng.pick(&[1.5, 2.5, -3.0]);
                        return E::Bin(Op::Rem, b(num), b(E::F(m)), Ty::F);
                    }
                    let den = self.ef(d1);
                    let den = self.guard_pos(den, 1.0);
                    return E::Bin(Op::Div, b(num), b(den), Ty::F);
                }
                5 => return E::Neg(b(self.ef(d1))),
                6 | 7 if self.on(Feature::Math) => {
                    let m = if self.on(Feature::Steps) && self.rng.below(6) == 0 {
                        *self.rng.pick(&STEPS)
                    } else {
                        *self.rng.pick(&M1)
                    };
                    if m == "exp2" && !self.on(Feature::Exp2) {
                        continue;
                    }
                    let a = self.ef(d1);
                    let a = match m {
                        "ln" | "log2" | "log10" | "sqrt" => self.guard_pos(a, 0.5),
                        "recip" => self.guard_pos(a, 1.0),
                        "ln_1p" => self.guard_pos(a, 0.0),
                        "tan" => E::M1("sin", b(a)),
                        "exp" | "exp2" | "sinh" | "cosh" | "exp_m1" => E::M1("tanh", b(a)),
                        // Inside (-0.9, 0.9) and from 1.2 up: away from the
                        // poles of their derivatives.
                        "asin" | "acos" | "atanh" => {
                            E::Bin(Op::Mul, b(E::F(0.9)), b(E::M1("sin", b(a))), Ty::F)
                        }
                        "acosh" => self.guard_pos(a, 1.2),
                        _ => a,
                    };
                    return E::M1(m, b(a));
                }
                8 if self.on(Feature::Math) => {
                    let m = *self.rng.pick(&M2);
                    let (x, y) = (self.ef(d1), self.ef(d1));
                    return match m {
                        "powf" => {
                            let x = self.guard_pos(x, 0.5);
                            E::M2(m, b(x), b(E::M1("sin", b(y))))
                        }
                        "log" => {
                            let x = self.guard_pos(x, 0.5);
                            E::M2(m, b(x), b(E::F(*self.rng.pick(&[2.0, 3.0, 10.0]))))
                        }
                        // the sign of a literal: a kink at x = 0 only, as abs
                        "copysign" => E::M2(m, b(x), b(E::F(*self.rng.pick(&[1.5, -0.5])))),
                        _ => E::M2(m, b(x), b(y)),
                    };
                }
                9 if self.on(Feature::Math) => {
                    let k = self.rng.range(-2, 4) as i32;
                    let a = self.ef(d1);
                    let a = if k < 0 { self.guard_pos(a, 1.0) } else { a };
                    return E::Powi(b(a), k);
                }
                10 if self.on(Feature::Math) => {
                    return if self.on(Feature::MulAdd) && self.rng.chance(0.5) {
                        E::MulAdd(b(self.ef(d1)), b(self.ef(d1)), b(self.ef(d1)))
                    } else {
                        let lo = self.rng.nice(1) - 0.5;
                        E::Clamp(b(self.ef(d1)), lo, lo + 1.5)
                    };
                }
                11 | 19 if self.on(Feature::Ints) || self.on(Feature::Loops) => {
                    let ints = self.vars_of(|v| matches!(v.ty, Ty::I(_)));
                    if ints.is_empty() && !self.on(Feature::Ints) {
                        continue;
                    }
                    let t = if ints.is_empty() || self.rng.chance(0.3) {
                        *self.rng.pick(&INT_TYS)
                    } else {
                        match self.rng.pick(&ints).ty {
                            Ty::I(t) => t,
                            _ => IntTy::I64,
                        }
                    };
                    let i = self.ei(t, d1.min(2));
                    return E::Cast(b(i), Ty::I(t), Ty::F);
                }
                12 if self.on(Feature::Tuples) => {
                    let ts = self.vars_of(|v| v.ty == Ty::T2);
                    let k = self.rng.below(2);
                    if !ts.is_empty() {
                        return E::Field(b(Self::var_e(self.rng.pick(&ts))), k);
                    }
                    return E::Field(b(E::Tup(b(self.ef(d1)), b(self.ef(d1)))), k);
                }
                13 | 14 => {
                    let arrs = self.vars_of(|v| matches!(v.ty, Ty::A(_)));
                    if arrs.is_empty() {
                        continue;
                    }
                    let a = self.rng.pick(&arrs).clone();
                    let r = if let Ty::A(r) = a.ty { r } else { 1 };
                    let ix = (0..r).map(|_| self.index_e()).collect();
                    return E::Index(b(Self::var_e(&a)), ix);
                }
                15 if self.on(Feature::Reductions) => {
                    let r = self.rank();
                    if r == 0 {
                        continue;
                    }
                    if r == 1 && self.rng.chance(0.4) {
                        return E::Dot(b(self.ea(1, d1)), b(self.ea(1, d1)));
                    }
                    // The other whole-array reductions (draws only with
                    // `views` on: programs without it stay as they were).
                    if self.on(Feature::Views) && self.rng.chance(0.5) {
                        let kind = *self.rng.pick(&Reduction::ALL);
                        return E::Reduce(kind, b(self.ea(r, d1)));
                    }
                    if r == 1 && self.on(Feature::Gathers) && self.rng.chance(0.3) {
                        let c = 1 + self.rng.below(self.n.max(1));
                        let dot = self.rng.chance(0.5);
                        return E::ChunkSums(b(self.ea(1, d1)), c, dot);
                    }
                    return E::Sum(b(self.ea(r, d1)));
                }
                16 if self.on(Feature::Branches) => {
                    return E::If(b(self.eb(d1)), b(self.ef(d1)), b(self.ef(d1)));
                }
                17 if self.on(Feature::Calls) && !self.helpers.is_empty() && !self.in_helper => {
                    let (h, arity) = self.rng.pick(&self.helpers).clone();
                    let args = (0..arity).map(|_| self.ef(d1)).collect();
                    return E::Call(h, args);
                }
                18 if self.on(Feature::Math) => {
                    // `f64::sin(x)` style and methods on a parenthesised tree.
                    let m = *self.rng.pick(&["sin", "cos", "atan", "tanh", "abs"]);
                    return E::M1(m, b(self.ef(d1)));
                }
                _ => {
                    let fvars = self.vars_of(|v| v.ty == Ty::F);
                    if !fvars.is_empty() {
                        return Self::var_e(self.rng.pick(&fvars));
                    }
                    return E::F(self.rng.nice(2));
                }
            }
        }
    }

    /// A rank of an enabled array kind (0 if none).
    fn rank(&mut self) -> usize {
        let mut rs = vec![];
        if self.on(Feature::Arrays1) {
            rs.push(1);
        }
        if self.on(Feature::Arrays2) {
            rs.push(2);
        }
        if self.on(Feature::Arrays3) {
            rs.push(3);
        }
        if rs.is_empty() || self.in_helper {
            0
        } else {
            *self.rng.pick(&rs)
        }
    }

    /// An integer expression of type `t`.
    fn ei(&mut self, t: IntTy, d: usize) -> E {
        let same = self.vars_of(|v| v.ty == Ty::I(t));
        if d == 0 || self.rng.chance(0.3) {
            return match self.rng.below(4) {
                0 | 1 if !same.is_empty() => Self::var_e(self.rng.pick(&same)),
                _ => {
                    let v = if t.signed() {
                        self.rng.range(-9, 9)
                    } else {
                        self.rng.range(0, 9)
                    };
                    E::I(v, t)
                }
            };
        }
        let d1 = d - 1;
        match self.rng.below(10) {
            0..=2 => {
                let op = *self.rng.pick(&[Op::Add, Op::Sub, Op::Mul]);
                E::Bin(op, b(self.ei(t, d1)), b(self.ei(t, d1)), Ty::I(t))
            }
            3 => {
                let op = *self.rng.pick(&[Op::Div, Op::Rem]);
                let k = if t.signed() && self.rng.chance(0.3) {
                    -self.rng.range(1, 5)
                } else {
                    self.rng.range(1, 7)
                };
                E::Bin(op, b(self.ei(t, d1)), b(E::I(k, t)), Ty::I(t))
            }
            4 if self.on(Feature::Casts)
                && (self.on(Feature::Narrowing)
                    || matches!(t, IntTy::I64 | IntTy::Isize | IntTy::U64 | IntTy::Usize)) =>
            {
                // f64 -> int (saturating)
                let f = self.ef(d1.min(2));
                let f = E::Bin(
                    Op::Mul,
                    b(f),
                    b(E::F(*self.rng.pick(&[4.0, 100.0, 1e3]))),
                    Ty::F,
                );
                E::Cast(b(f), Ty::F, Ty::I(t))
            }
            5 if self.on(Feature::Casts) => {
                // int -> int (possibly narrowing)
                let narrowing = self.on(Feature::Narrowing);
                let froms: Vec<IntTy> = INT_TYS
                    .iter()
                    .copied()
                    .filter(|f| {
                        let ((a, b), (c, d)) = (f.bounds(), t.bounds());
                        narrowing || (c <= a && b <= d)
                    })
                    .collect();
                let from = *self.rng.pick(&froms);
                E::Cast(b(self.ei(from, d1)), Ty::I(from), Ty::I(t))
            }
            6 => {
                let ix = self.vars_of(|v| v.index);
                if ix.is_empty() {
                    return self.ei(t, d1);
                }
                let i = Self::var_e(self.rng.pick(&ix));
                if t == IntTy::Usize {
                    i
                } else {
                    E::Cast(b(i), Ty::I(IntTy::Usize), Ty::I(t))
                }
            }
            7 => {
                let m = *self.rng.pick(&["max", "min", "pow"]);
                if m == "pow" {
                    E::IntM(
                        m,
                        b(self.ei(t, d1)),
                        b(E::I(self.rng.range(0, 3), IntTy::U32)),
                        t,
                    )
                } else {
                    E::IntM(m, b(self.ei(t, d1)), b(self.ei(t, d1)), t)
                }
            }
            8 if t.signed() => E::Neg(b(self.ei(t, d1))),
            9 if t == IntTy::Usize => {
                let arrs = self.vars_of(|v| matches!(v.ty, Ty::A(_)));
                if arrs.is_empty() {
                    return E::I(self.n as i64, t);
                }
                let a = self.rng.pick(&arrs).clone();
                let r = if let Ty::A(r) = a.ty { r } else { 1 };
                E::Len(b(Self::var_e(&a)), self.rng.below(r))
            }
            _ => {
                if !same.is_empty() {
                    Self::var_e(self.rng.pick(&same))
                } else {
                    E::I(self.rng.range(0, 5), t)
                }
            }
        }
    }

    /// A `bool` expression.
    fn eb(&mut self, d: usize) -> E {
        let bools = self.vars_of(|v| v.ty == Ty::B);
        let d1 = d.saturating_sub(1);
        match self.rng.below(8) {
            0 if !bools.is_empty() => Self::var_e(self.rng.pick(&bools)),
            1 if d > 0 => E::And(b(self.eb(d1)), b(self.eb(d1))),
            2 if d > 0 => E::Or(b(self.eb(d1)), b(self.eb(d1))),
            3 if d > 0 => E::Not(b(self.eb(d1))),
            4 if self.on(Feature::Ints) => {
                let t = *self.rng.pick(&INT_TYS);
                let c = *self
                    .rng
                    .pick(&[Cmp::Lt, Cmp::Le, Cmp::Gt, Cmp::Ge, Cmp::Eq, Cmp::Ne]);
                E::Cmp(
                    c,
                    b(self.ei(t, d1.min(2))),
                    b(self.ei(t, d1.min(2))),
                    Ty::I(t),
                )
            }
            _ => {
                let c = *self.rng.pick(&[Cmp::Lt, Cmp::Le, Cmp::Gt, Cmp::Ge]);
                E::Cmp(c, b(self.ef(d1.min(2))), b(self.ef(d1.min(2))), Ty::F)
            }
        }
    }

    /// An array expression of rank `r`.
    fn ea(&mut self, r: usize, d: usize) -> E {
        let same = self.vars_of(|v| v.ty == Ty::A(r));
        let d1 = d.saturating_sub(1);
        // Without `Views` the draws are those of the generator before it
        // (the fixed regression seeds keep their programs).
        let arms = if self.on(Feature::Views) { 11 } else { 8 };
        for _ in 0..10 {
            match self.rng.below(arms) {
                0..=2 if !same.is_empty() => return Self::var_e(self.rng.pick(&same)),
                3 if self.on(Feature::Builds) => {
                    let n = self.size_e();
                    let names = self.distinct_names(r);
                    let mark = self.scope.len();
                    for nm in &names {
                        self.scope.push(VarInfo {
                            name: nm.clone(),
                            ty: Ty::I(IntTy::Usize),
                            pass: Pass::Owned,
                            mutable: false,
                            index: true,
                        });
                    }
                    let body = typed_f(self.ef(d1.min(3)));
                    self.scope.truncate(mark);
                    return E::Build(r, b(n), names, b(body));
                }
                4 if self.on(Feature::Maps) => {
                    let a = self.ea(r, d1);
                    let z = self.fresh("z");
                    let mark = self.scope.len();
                    self.scope.push(VarInfo {
                        name: z.clone(),
                        ty: Ty::F,
                        pass: Pass::Owned,
                        mutable: false,
                        index: false,
                    });
                    let body = typed_f(self.ef(d1.min(3)));
                    self.scope.truncate(mark);
                    return E::Mapv(b(a), z, b(body));
                }
                5 if d > 0 => {
                    let op = *self.rng.pick(&[Op::Add, Op::Sub, Op::Mul]);
                    // One time in four with rank >= 2: a lower-rank operand
                    // made same-rank by `insert_axis` (co-broadcasting).
                    if r >= 2 && self.rng.chance(0.25) {
                        let k = self.rng.below(r);
                        let left = self.rng.chance(0.5);
                        return E::EwIns(op, b(self.ea(r, d1)), b(self.ea(r - 1, d1)), k, left);
                    }
                    return E::Ew(op, b(self.ea(r, d1)), b(self.ea(r, d1)));
                }
                6 if d > 0 => return E::Scale(b(self.ea(r, d1)), b(self.ef(d1.min(2)))),
                7 if r == 1
                    && self.on(Feature::Reductions)
                    && self.on(Feature::Arrays2)
                    && d > 0 =>
                {
                    return E::Dot(b(self.ea(2, d1)), b(self.ea(1, d1)));
                }
                8..=10 if d > 0 => {
                    if let Some(e) = self.view_e(r, d1) {
                        return e;
                    }
                }
                _ => {}
            }
        }
        if let Some(v) = same.first() {
            return Self::var_e(v);
        }
        // The fallback (even with builds switched off): a constant build.
        let n = self.size_e();
        let names = self.distinct_names(r);
        E::Build(r, b(n), names, b(E::Const(0)))
    }

    /// Whether arrays of rank `r` are enabled (and may be made here).
    fn rank_on(&self, r: usize) -> bool {
        !self.in_helper
            && match r {
                1 => self.on(Feature::Arrays1),
                2 => self.on(Feature::Arrays2),
                3 => self.on(Feature::Arrays3),
                _ => false,
            }
    }

    /// A view or whole-array form ([`Feature::Views`]) of rank `r`, if one
    /// applies to that rank with the enabled array ranks.
    fn view_e(&mut self, r: usize, d: usize) -> Option<E> {
        let up = r + 1;
        let strided = self.on(Feature::Strided);
        // Draws only with the feature on: other programs stay the same.
        if self.on(Feature::Gathers) && self.rng.chance(0.15) {
            let k = if r == 3 { 0 } else { self.rng.below(r) };
            let idx = (0..self.n).map(|_| self.rng.below(self.n)).collect();
            return Some(E::Select(b(self.ea(r, d)), r, k, idx));
        }
        match self.rng.below(7) {
            0 if strided => {
                let k = self.rng.below(r);
                Some(E::Rev(b(self.ea(r, d)), r, k))
            }
            0 | 1 if r == 2 => Some(E::T(b(self.ea(2, d)))),
            1 if r == 1 && strided && self.rank_on(2) => Some(E::Diag(b(self.ea(2, d)))),
            2 if self.rank_on(up) && (up == 2 || strided) => {
                // A matrix's column is strided: `strided` only (rows are
                // contiguous).
                let k = if strided { self.rng.below(up) } else { 0 };
                let i = self.index_e();
                let named = up == 2 && self.rng.chance(0.7);
                Some(E::AxisAt(b(self.ea(up, d)), up, k, b(i), named))
            }
            3 if self.rank_on(up) && self.on(Feature::Reductions) => {
                let k = self.rng.below(up);
                Some(E::SumAxis(b(self.ea(up, d)), k))
            }
            // `map_axis` is supported on matrices.
            4 if up == 2 && self.rank_on(2) && self.on(Feature::Reductions) => {
                let k = self.rng.below(up);
                let squares = self.rng.chance(0.5);
                Some(E::MapAxis(b(self.ea(up, d)), k, squares))
            }
            5 if r <= 2 && self.rank_on(2) && self.on(Feature::Reductions) => {
                // `mat.dot(&mat)` or `vec.dot(&mat)`.
                Some(E::Dot(b(self.ea(r, d)), b(self.ea(2, d))))
            }
            6 if r >= 2 && self.rank_on(r - 1) => {
                let op = *self.rng.pick(&[Op::Add, Op::Sub, Op::Mul]);
                let left = self.rng.chance(0.5);
                Some(E::EwB(op, b(self.ea(r, d)), b(self.ea(r - 1, d)), left))
            }
            _ => None,
        }
    }

    fn push(&mut self, name: &str, ty: Ty, mutable: bool) {
        self.scope.push(VarInfo {
            name: name.to_string(),
            ty,
            pass: Pass::Owned,
            mutable,
            index: false,
        });
    }

    /// A statement list of about `k` statements at nesting depth `depth`.
    fn block(&mut self, k: usize, depth: usize) -> Vec<S> {
        let mut out = vec![];
        for _ in 0..k {
            if self.budget == 0 {
                break;
            }
            self.budget -= 1;
            let s = self.stmt(depth);
            out.push(s);
        }
        out
    }

    /// A [`S::LoopValue`]: its body may not `break` or `continue` it
    /// (a `break;` of a loop with a value is a type error), loops nested
    /// in it may leave it for a labelled loop outside.
    fn loop_value(&mut self, depth: usize) -> S {
        // Not an odd name: the body may bind those again, and the counter's
        // increment after it must see this one.
        self.counter += 1;
        let counter = format!("c{}", self.counter);
        let hi = self.size_e();
        let mark = self.scope.len();
        let outer = std::mem::replace(&mut self.in_loop, false);
        let k = 1 + self.rng.below(3);
        let body = self.block(k, depth + 1);
        self.in_loop = outer;
        let cond = self.eb(2);
        // A name bound before the loop: its type is known where the loop
        // is lowered (a `let` of the body is seen only through its
        // initialiser's syntax, which calls of other functions hide).
        let names = f_names(&self.scope[..mark]);
        let (val, annot) = if !names.is_empty() && self.rng.chance(0.5) {
            let v = self.rng.pick(&names).clone();
            (E::Var(v.name, Ty::F, v.pass), false)
        } else {
            (self.ef(2), true)
        };
        self.scope.truncate(mark);
        let var = self.fresh("r");
        self.push(&var, Ty::F, false);
        S::LoopValue {
            var,
            counter,
            hi,
            body,
            cond,
            val,
            annot,
        }
    }

    /// A [`S::Pushes`]: a `for` loop over `0..hi` (or reversed) whose body
    /// pushes once, first or last, under a condition or not; `continue`
    /// and `break` in the body may skip the push.
    fn pushes(&mut self, depth: usize) -> S {
        self.counter += 1;
        let vec = format!("pv{}", self.counter);
        let var = self.fresh("i");
        let hi = self.size_e();
        let rev = self.rng.chance(0.25);
        let mark = self.scope.len();
        self.scope.push(VarInfo {
            name: var.clone(),
            ty: Ty::I(IntTy::Usize),
            pass: Pass::Owned,
            mutable: false,
            index: true,
        });
        let first = self.rng.chance(0.4);
        let push = |g: &mut Self| {
            let val = g.ef(2);
            let push = S::Push(vec.clone(), val);
            if g.rng.chance(0.6) {
                let c = g.eb(2);
                S::If(c, vec![push], vec![])
            } else {
                push
            }
        };
        let early = first.then(|| push(self));
        // Labelled as other `for` loops are with the feature on (their
        // bodies' exits name a label then).
        let label = self.on(Feature::Labels).then(|| {
            self.counter += 1;
            format!("l{}", self.counter)
        });
        self.labels.extend(label.clone());
        let outer = std::mem::replace(&mut self.in_loop, true);
        let k = 1 + self.rng.below(3);
        let mut body = self.block(k, depth + 1);
        self.in_loop = outer;
        if label.is_some() {
            self.labels.pop();
        }
        match early {
            Some(p) => body.insert(0, p),
            None => {
                let p = push(self);
                body.push(p);
            }
        }
        self.scope.truncate(mark);
        let kind = self.rng.below(3) as u8;
        let sum = self.fresh("s");
        self.push(&sum, Ty::F, false);
        S::Pushes {
            vec,
            kind,
            for_loop: Box::new(S::For {
                var,
                lo: 0,
                hi,
                inclusive: false,
                rev,
                body,
                brk: None,
                label,
            }),
            var: sum,
        }
    }

    /// A [`S::Deferred`]: branches without exits of their own (a `break`
    /// before the assignment would leave it unassigned on that path, which
    /// rustc accepts, but the branch is then pointless).
    fn deferred(&mut self, depth: usize) -> S {
        let c = self.eb(2);
        let names = f_names(&self.scope);
        let outer = std::mem::replace(&mut self.in_loop, false);
        let branch = |g: &mut Self, named: bool| {
            let mark = g.scope.len();
            let k = g.rng.below(3);
            let body = g.block(k, depth + 1);
            // A name bound before the `let`: its type is known where the
            // declaration is lowered.
            let val = if named {
                let v = g.rng.pick(&names).clone();
                E::Var(v.name, Ty::F, v.pass)
            } else {
                g.ef(2)
            };
            g.scope.truncate(mark);
            (body, val)
        };
        let annot = names.is_empty() || self.rng.chance(0.5);
        let (a, av) = branch(self, !annot);
        let named_b = !annot && self.rng.chance(0.5);
        let (b, bv) = branch(self, named_b);
        self.in_loop = outer;
        // An odd name is not in scope, but a branch may bind it with a
        // `let` of its own (it was not in scope there either): the branch's
        // assignment would then reach that binding (invalid Rust, seed
        // 19026008345). Such a name gives way to a plain one.
        let mut var = self.fresh("d");
        let mut text = String::new();
        for s in a.iter().chain(&b) {
            ps(s, 0, &mut text);
        }
        if text.contains(var.as_str()) {
            var = format!("d{}", self.counter);
        }
        self.push(&var, Ty::F, false);
        S::Deferred {
            var,
            annot,
            c,
            a,
            av,
            b,
            bv,
        }
    }

    fn stmt(&mut self, depth: usize) -> S {
        let ed = 3;
        loop {
            match self.rng.below(16) {
                0..=2 => {
                    let name = self.fresh("s");
                    let e = self.ef(ed);
                    let mutable = self.rng.chance(0.4);
                    self.push(&name, Ty::F, mutable);
                    return S::Let {
                        name,
                        ty: Ty::F,
                        mutable,
                        annot: self.rng.chance(0.3),
                        e,
                    };
                }
                3 if self.on(Feature::Ints) => {
                    let t = *self.rng.pick(&INT_TYS);
                    let e = self.ei(t, 3);
                    let name = self.fresh("k");
                    let mutable = self.rng.chance(0.3);
                    self.push(&name, Ty::I(t), mutable);
                    return S::Let {
                        name,
                        ty: Ty::I(t),
                        mutable,
                        annot: true,
                        e,
                    };
                }
                4 if self.on(Feature::Tuples) => {
                    if self.rng.chance(0.5) {
                        let e = E::Tup(b(self.ef(ed)), b(self.ef(ed)));
                        let name = self.fresh("t");
                        self.push(&name, Ty::T2, false);
                        return S::Let {
                            name,
                            ty: Ty::T2,
                            mutable: false,
                            annot: self.rng.chance(0.3),
                            e,
                        };
                    }
                    let ts = self.vars_of(|v| v.ty == Ty::T2);
                    let e = if !ts.is_empty() && self.rng.chance(0.5) {
                        Self::var_e(self.rng.pick(&ts))
                    } else {
                        E::Tup(b(self.ef(ed)), b(self.ef(ed)))
                    };
                    let (x, y) = (self.fresh("u"), self.fresh("w"));
                    if x == y {
                        continue;
                    }
                    self.push(&x, Ty::F, false);
                    self.push(&y, Ty::F, false);
                    return S::LetTup(x, y, e);
                }
                5 | 6 => {
                    let r = self.rank();
                    if r == 0 {
                        continue;
                    }
                    if self.on(Feature::ArrayWrites)
                        && self.on(Feature::Loops)
                        && self.rng.chance(0.5)
                    {
                        // `let mut a = ArrayR::zeros(..);` filled by a loop nest below.
                        let n = self.size_e();
                        let name = self.fresh("a");
                        self.push(&name, Ty::A(r), true);
                        return S::Let {
                            name,
                            ty: Ty::A(r),
                            mutable: true,
                            annot: true,
                            e: E::Zeros(r, b(n)),
                        };
                    }
                    let e = self.ea(r, 2);
                    // `let a = b;` would move `b`: copy it instead.
                    let e = if matches!(e, E::Var(..)) {
                        E::Scale(b(e), b(E::F(1.0)))
                    } else {
                        e
                    };
                    let name = self.fresh("a");
                    self.push(&name, Ty::A(r), false);
                    return S::Let {
                        name,
                        ty: Ty::A(r),
                        mutable: false,
                        annot: true,
                        e,
                    };
                }
                7..=9 => {
                    let muts = self.vars_of(|v| v.mutable && matches!(v.ty, Ty::F | Ty::I(_)));
                    if muts.is_empty() {
                        continue;
                    }
                    let v = self.rng.pick(&muts).clone();
                    let s = match v.ty {
                        Ty::F => {
                            let op = *self.rng.pick(&[
                                None,
                                Some(Op::Add),
                                Some(Op::Sub),
                                Some(Op::Mul),
                            ]);
                            let e = self.ef(ed);
                            // Keep products bounded: `s *= tanh(..)`-like.
                            let e = if op == Some(Op::Mul) {
                                E::M1("cos", b(e))
                            } else {
                                e
                            };
                            S::Assign(v.name.clone(), op, e)
                        }
                        Ty::I(t) => {
                            let op = *self.rng.pick(&[None, Some(Op::Add)]);
                            S::Assign(v.name.clone(), op, E::I(self.rng.range(0, 3), t))
                        }
                        _ => continue,
                    };
                    // (`#[cfg]` on an assignment is unstable Rust: cfg is
                    // generated on shadowing `let`s only, below.)
                    if false {
                        let p = *self.rng.pick(&[
                            CfgPred::Test,
                            CfgPred::NotTest,
                            CfgPred::DebugAssertions,
                            CfgPred::NotDebugAssertions,
                            CfgPred::All,
                            CfgPred::Any,
                        ]);
                        return S::Cfg(p, Box::new(s));
                    }
                    return s;
                }
                10 if self.on(Feature::ArrayWrites) => {
                    let arrs = self.vars_of(|v| v.mutable && matches!(v.ty, Ty::A(_)));
                    if arrs.is_empty() {
                        continue;
                    }
                    let a = self.rng.pick(&arrs).clone();
                    let r = if let Ty::A(r) = a.ty { r } else { 1 };
                    if self.on(Feature::InPlace) && self.rng.chance(0.3) {
                        let map = self.rng.chance(0.3);
                        let accs = self.vars_of(|v| v.mutable && v.ty == Ty::F);
                        let acc = (!map && !accs.is_empty() && self.rng.chance(0.6))
                            .then(|| self.rng.pick(&accs).name.clone());
                        let e = self.ef(ed);
                        return S::InPlace {
                            arr: a.name.clone(),
                            map,
                            acc,
                            e,
                        };
                    }
                    // One write in four: a slice filled through `slice_mut`.
                    if self.rng.chance(0.25) {
                        let parts = (0..r)
                            .map(|_| match self.rng.below(5) {
                                0 => SlicePart::Full,
                                1 => SlicePart::Every2,
                                2 => SlicePart::Rev,
                                3 => SlicePart::At(self.index_e()),
                                _ => SlicePart::From1,
                            })
                            .collect();
                        let e = self.ef(ed);
                        return S::SliceFill(a.name.clone(), parts, e);
                    }
                    let ix = (0..r).map(|_| self.index_e()).collect();
                    let e = self.ef(ed);
                    return S::Set(a.name.clone(), ix, self.rng.chance(0.5), e);
                }
                11 | 12 if self.on(Feature::Loops) && depth < 3 => {
                    if self.on(Feature::LoopValues) && self.rng.chance(0.3) {
                        return self.loop_value(depth);
                    }
                    if self.on(Feature::Pushes) && self.rng.chance(0.3) {
                        return self.pushes(depth);
                    }
                    let var = self.fresh("i");
                    let (lo, index) = if self.rng.chance(0.8) {
                        (0, true)
                    } else {
                        (1, true)
                    };
                    let hi = self.size_e();
                    let inclusive = self.rng.chance(0.2);
                    let rev = self.rng.chance(0.25);
                    let mark = self.scope.len();
                    self.scope.push(VarInfo {
                        name: var.clone(),
                        ty: Ty::I(IntTy::Usize),
                        pass: Pass::Owned,
                        mutable: false,
                        index,
                    });
                    let k = 1 + self.rng.below(4);
                    let label = self.on(Feature::Labels).then(|| {
                        self.counter += 1;
                        format!("l{}", self.counter)
                    });
                    self.labels.extend(label.clone());
                    let outer = std::mem::replace(&mut self.in_loop, true);
                    let mut body = self.block(k, depth + 1);
                    self.in_loop = outer;
                    if label.is_some() {
                        self.labels.pop();
                    }
                    // Draws only with the feature on: programs of the other
                    // feature sets (and the regression seeds) stay the same.
                    let whiles = self.on(Feature::Whiles);
                    let brk = (whiles && self.rng.chance(0.3)).then(|| self.eb(2));
                    self.scope.truncate(mark);
                    if whiles && !inclusive && !rev && self.rng.chance(0.5) {
                        // A `continue` would skip the counter's increment.
                        continues_to_breaks(&mut body);
                        if let Some(l) = &label {
                            labelled_continues_to_breaks(&mut body, l);
                        }
                        let cond = self.rng.chance(0.4).then(|| self.eb(2));
                        return S::While {
                            var,
                            lo,
                            hi,
                            cond,
                            body,
                            brk,
                            as_loop: self.rng.chance(0.5),
                            label,
                        };
                    }
                    return S::For {
                        var,
                        lo,
                        hi,
                        inclusive,
                        rev,
                        body,
                        brk,
                        label,
                    };
                }
                13 if self.on(Feature::Branches) && depth < 3 => {
                    if self.on(Feature::Deferred) && self.rng.chance(0.3) {
                        return self.deferred(depth);
                    }
                    let c = self.eb(2);
                    let mark = self.scope.len();
                    let k = 1 + self.rng.below(3);
                    let a = self.block(k, depth + 1);
                    self.scope.truncate(mark);
                    let k = self.rng.below(3);
                    let mut e = self.block(k, depth + 1);
                    self.scope.truncate(mark);
                    let mut a = a;
                    if self.in_loop && self.on(Feature::Exits) && self.rng.chance(0.7) {
                        let is_break = self.rng.chance(0.5);
                        let exit = if self.on(Feature::Labels) && self.rng.chance(0.6) {
                            let to = self.rng.pick(&self.labels).clone();
                            S::ExitTo(is_break, to)
                        } else {
                            S::Exit(is_break)
                        };
                        if self.rng.chance(0.5) {
                            a.push(exit);
                        } else {
                            e.push(exit);
                        }
                    }
                    return S::If(c, a, e);
                }
                14 if self.on(Feature::Cfg) => {
                    // A shadowing `let` of an existing f64 under cfg.
                    let fv = self.vars_of(|v| v.ty == Ty::F && !v.index);
                    if fv.is_empty() {
                        continue;
                    }
                    let v = self.rng.pick(&fv).clone();
                    let e = self.ef(2);
                    let p = *self.rng.pick(&[
                        CfgPred::Test,
                        CfgPred::NotTest,
                        CfgPred::DebugAssertions,
                        CfgPred::NotDebugAssertions,
                        CfgPred::All,
                        CfgPred::Any,
                    ]);
                    // The shadow keeps the mutability (later assignments
                    // must compile whether or not it exists); the scope
                    // keeps the original entry.
                    return S::Cfg(
                        p,
                        Box::new(S::Let {
                            name: v.name.clone(),
                            ty: Ty::F,
                            mutable: v.mutable,
                            annot: false,
                            e,
                        }),
                    );
                }
                _ => {}
            }
        }
    }
}

/// Generation settings.
#[derive(Clone, Debug)]
pub struct Config {
    pub features: Features,
    /// Statements in the main body (upper bound, nested ones included).
    pub max_stmts: usize,
    /// Array sizes are drawn from `1..=max_n` (3 by default; larger sizes
    /// reach the 8-way unrolled sums of ndarray, whose order a wrong
    /// layout changes).
    pub max_n: usize,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            features: Features::all(),
            max_stmts: 8,
            max_n: crate::env_num("LINAD_FUZZ_MAX_N", 3).max(1) as usize,
        }
    }
}

fn param(g: &mut Gen, name: String, ty: Ty, pass: Pass) -> Param {
    let value = match &ty {
        // Generic values (no ties between parameters: a comparison of two
        // parameters must not sit on its discontinuity).
        Ty::F => V::F(g.rng.nice(2) + 0.1 * g.rng.unit()),
        Ty::T2 => V::T(vec![
            V::F(g.rng.nice(2) + 0.1 * g.rng.unit()),
            V::F(g.rng.nice(2) + 0.1 * g.rng.unit()),
        ]),
        Ty::A(r) => {
            let total = g.n.pow(*r as u32);
            V::A(
                vec![g.n; *r],
                (0..total)
                    .map(|_| g.rng.nice(2) + 0.1 * g.rng.unit())
                    .collect(),
            )
        }
        Ty::I(t) if name == "n" => V::I(g.n as i128, *t),
        Ty::I(t) => V::I(
            if t.signed() {
                g.rng.range(-20, 20) as i128
            } else {
                g.rng.range(0, 20) as i128
            },
            *t,
        ),
        Ty::B => V::B(g.rng.chance(0.5)),
    };
    g.scope.push(VarInfo {
        name: name.clone(),
        ty: ty.clone(),
        pass,
        mutable: false,
        index: false,
    });
    Param {
        name,
        ty,
        pass,
        value,
    }
}

/// Generates one program (no validity filtering: see [`generate`]).
pub fn generate_raw(rng: &mut Rng, cfg: &Config, fn_name: &str) -> Program {
    let fs = cfg.features;
    let n = 1 + rng.below(cfg.max_n);
    let mut g = Gen {
        rng,
        fs,
        scope: vec![],
        counter: 0,
        n,
        helpers: vec![],
        budget: 0,
        in_helper: false,
        in_loop: false,
        labels: vec![],
    };
    // Helpers.
    let mut helpers = vec![];
    if fs.has(Feature::Calls) {
        let k = 1 + g.rng.below(2);
        for h in 0..k {
            g.in_helper = true;
            g.scope.clear();
            let name = format!("{fn_name}_h{h}");
            let arity = 1 + g.rng.below(2);
            let params: Vec<Param> = (0..arity)
                .map(|j| param(&mut g, format!("p{j}"), Ty::F, Pass::Owned))
                .collect();
            g.budget = 3;
            let body = g.block(2, 2);
            let ret = g.ef(2);
            helpers.push(Func {
                name: name.clone(),
                params,
                body,
                ret,
                out: Ty::F,
                attr: String::new(),
                extra_params: vec![],
            });
            g.helpers.push((name, arity));
        }
        g.in_helper = false;
    }
    g.scope.clear();
    // Parameters.
    let mut params = vec![];
    let odd = fs.has(Feature::OddParams) && g.rng.chance(0.3);
    let xname = if odd {
        g.rng.pick(&["x", "r#in", "ct", "α"]).to_string()
    } else {
        "x".into()
    };
    params.push(param(&mut g, xname.clone(), Ty::F, Pass::Owned));
    if odd && g.rng.chance(0.5) {
        let d = format!("d_{}", xname.trim_start_matches("r#"));
        params.push(param(&mut g, d, Ty::F, Pass::Owned));
    }
    if odd && g.rng.chance(0.3) && xname != "ct" {
        params.push(param(&mut g, "ct".into(), Ty::F, Pass::Owned));
    }
    for k in 0..g.rng.below(3) {
        params.push(param(&mut g, format!("y{k}"), Ty::F, Pass::Owned));
    }
    if fs.has(Feature::Tuples) && g.rng.chance(0.4) {
        params.push(param(&mut g, "p".into(), Ty::T2, Pass::Owned));
    }
    for r in 1..=3 {
        let f = [Feature::Arrays1, Feature::Arrays2, Feature::Arrays3][r - 1];
        if fs.has(f) && g.rng.chance(0.6) {
            for k in 0..1 + g.rng.below(2) {
                let pass = *g.rng.pick(&[Pass::Ref, Pass::Ref, Pass::View, Pass::Owned]);
                params.push(param(&mut g, format!("v{r}{k}"), Ty::A(r), pass));
            }
        }
    }
    if fs.has(Feature::Loops) && g.rng.chance(0.5) {
        params.push(param(&mut g, "n".into(), Ty::I(IntTy::Usize), Pass::Owned));
    }
    if fs.has(Feature::Ints) && g.rng.chance(0.5) {
        let t = *g.rng.pick(&INT_TYS);
        params.push(param(&mut g, "m".into(), Ty::I(t), Pass::Owned));
    }
    if fs.has(Feature::Branches) && g.rng.chance(0.2) {
        params.push(param(&mut g, "flag".into(), Ty::B, Pass::Owned));
    }
    // Body.
    g.budget = cfg.max_stmts;
    let k = 2 + g.rng.below(cfg.max_stmts.max(3) - 2);
    let body = g.block(k, 0);
    // Output: depends on several visible values.
    let mut out_tys = vec![Ty::F, Ty::F];
    if fs.has(Feature::Tuples) {
        out_tys.push(Ty::T2);
    }
    if fs.has(Feature::ArrayOut) && fs.has(Feature::Arrays1) {
        out_tys.push(Ty::A(1));
    }
    let out = g.rng.pick(&out_tys).clone();
    let mut acc = g.ef(2);
    for v in g.visible() {
        if !g.rng.chance(0.6) {
            continue;
        }
        let term = match &v.ty {
            Ty::F => Gen::var_e(&v),
            Ty::T2 => E::Field(b(Gen::var_e(&v)), g.rng.below(2)),
            // Integers reach the output through `as f64`.
            Ty::I(_) if !v.index => E::Cast(b(Gen::var_e(&v)), v.ty.clone(), Ty::F),
            Ty::A(_) if fs.has(Feature::Reductions) => E::Sum(b(Gen::var_e(&v))),
            Ty::A(r) => {
                let ix = (0..*r).map(|_| E::I(0, IntTy::Usize)).collect();
                E::Index(b(Gen::var_e(&v)), ix)
            }
            _ => continue,
        };
        acc = E::Bin(Op::Add, b(acc), b(term), Ty::F);
    }
    let ret = match out {
        Ty::T2 => E::Tup(b(acc), b(g.ef(2))),
        Ty::A(1) => E::Scale(b(g.ea(1, 2)), b(acc)),
        _ => acc,
    };
    let main = Func {
        name: fn_name.to_string(),
        params,
        body,
        ret,
        out,
        attr: String::new(),
        extra_params: vec![],
    };
    Program { helpers, main, n }
}

/// A generated program with its oracle result.
#[derive(Clone, Debug)]
pub struct Case {
    pub seed: u64,
    pub program: Program,
    /// The main function's result (test and debug_assertions off).
    pub expected: V,
    /// Programs discarded before this one (traps, non-finite results).
    pub discarded: usize,
    /// The largest finite |x| of an f64 value during the evaluation. Past
    /// 2^53 (~9e15) an input step below 1 is absorbed (`1.8e19 - s` is
    /// `1.8e19`): the floating-point function is flat where its real
    /// derivative, which AD computes, is not, and finite differences say
    /// nothing about the derivative.
    pub max_abs: f64,
}

/// Past this magnitude (about 2^53) an f64 absorbs input steps below 1:
/// finite differences of a program whose values reach it say nothing about
/// its derivative (see [`Case::max_abs`]).
pub const ABSORBS: f64 = 9.0e15;

/// Generates a valid program from `seed`: programs whose evaluation traps
/// (integer overflow, ...) or whose result is not finite or huge are
/// discarded and regenerated from the same stream.
pub fn generate(seed: u64, cfg: &Config, fn_name: &str) -> Case {
    let mut rng = Rng::new(seed);
    let mut discarded = 0;
    loop {
        let p = generate_raw(&mut rng, cfg, fn_name);
        if let (Ok(v), max_abs) = p.eval_tracked(false) {
            let mut fl = vec![];
            v.flat(&mut fl);
            if fl.iter().all(|x| x.is_finite() && x.abs() < 1e8) {
                return Case {
                    seed,
                    program: p,
                    expected: v,
                    discarded,
                    max_abs,
                };
            }
        }
        discarded += 1;
    }
}
