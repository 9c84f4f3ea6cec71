//! JVP rules of the scalar primitives: one place states the derivative of
//! every [`Prim`].
//!
//! Most rules are given as partial derivatives (`∂f/∂x_k` as non-linear
//! expressions of the operands `x` and the result `y`), combined as
//! `dy = Σ_k lscale(∂f/∂x_k, dx_k)` over the operands with non-zero tangents.
//! Linear primitives (`neg`, `add`, `sub`) and selections (`max`, `min`,
//! `select`) have direct rules.

use super::Jvp;
use crate::ir::*;

/// How a primitive differentiates.
enum Rule {
    /// No tangent (integer, boolean and comparison results; casts from i64).
    None,
    /// Linear in its operands: `neg`, `add`, `sub`.
    Linear(Linear),
    /// Chooses one operand's tangent: `select(c, a, b)`, `max`, `min`, `clamp`.
    Choice(Choice),
    /// Partial derivatives with respect to each operand.
    Partials,
}

/// The primitives linear in their operands.
#[derive(Clone, Copy)]
enum Linear {
    Neg,
    Add,
    Sub,
}

/// The primitives whose tangent is one operand's, chosen by a comparison.
#[derive(Clone, Copy)]
enum Choice {
    Select,
    Max,
    Min,
    Clamp,
}

fn rule(p: Prim) -> Rule {
    match p {
        Prim::Neg => Rule::Linear(Linear::Neg),
        Prim::Add => Rule::Linear(Linear::Add),
        Prim::Sub => Rule::Linear(Linear::Sub),
        Prim::Select => Rule::Choice(Choice::Select),
        Prim::Max => Rule::Choice(Choice::Max),
        Prim::Min => Rule::Choice(Choice::Min),
        Prim::Clamp => Rule::Choice(Choice::Clamp),
        Prim::Mul
        | Prim::Div
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
        | Prim::Powi
        | Prim::Powf
        | Prim::Atan2
        | Prim::Hypot
        | Prim::Copysign
        | Prim::Rem
        | Prim::MulAdd
        | Prim::Exp2
        | Prim::Cbrt => Rule::Partials,
        Prim::Lt
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
        | Prim::IntArith(..)
        | Prim::IntCast(_)
        | Prim::FloatToInt(_)
        | Prim::U64ToF64
        | Prim::ULt
        | Prim::ULe
        | Prim::UGt
        | Prim::UGe
        | Prim::UMax
        | Prim::UMin
        // Piecewise constant: the derivative is zero wherever it exists.
        | Prim::Floor
        | Prim::Ceil
        | Prim::Round
        | Prim::Trunc
        | Prim::Signum => Rule::None,
    }
}

/// Whether `∂p/∂x_k` is zero everywhere (no term for that operand):
/// `copysign` reads only the sign bit of its second operand.
fn zero_partial(p: Prim, k: usize) -> bool {
    matches!((p, k), (Prim::Copysign, 1))
}

/// Whether `p` can give its result a tangent (a rule other than `None`).
pub(super) fn has_rule(p: Prim) -> bool {
    !matches!(rule(p), Rule::None)
}

impl<'p> Jvp<'p> {
    /// The tangent of `y = p(args)` given the operand tangents (`None` = zero).
    pub(super) fn prim_jvp(
        &mut self,
        p: Prim,
        args: &[Atom],
        y: Var,
        dargs: &[Option<Var>],
    ) -> Option<Var> {
        match rule(p) {
            Rule::None => None,
            Rule::Linear(l) => match l {
                Linear::Neg => dargs[0].map(|d| self.lin(LinOp::Neg(d))),
                Linear::Add => self.ladd(dargs[0], dargs[1]),
                Linear::Sub => {
                    let nb = dargs[1].map(|d| self.lin(LinOp::Neg(d)));
                    self.ladd(dargs[0], nb)
                }
            },
            Rule::Choice(c) => {
                let (cond, a, b) = match c {
                    Choice::Select => (args[0], 1, 2),
                    Choice::Max => (self.nl(Prim::Ge, &[args[0], args[1]]), 0, 1),
                    Choice::Min => (self.nl(Prim::Le, &[args[0], args[1]]), 0, 1),
                    Choice::Clamp => return Some(self.clamp_tangent(args, dargs)),
                };
                Some(self.choose(cond, dargs[a], dargs[b]))
            }
            Rule::Partials => {
                let mut acc = None;
                for (k, d) in dargs.iter().enumerate() {
                    if zero_partial(p, k) {
                        continue;
                    }
                    if let Some(d) = d {
                        let g = self.partial(p, k, args, Atom::Var(y));
                        let t = self.lscale(g, Some(*d));
                        acc = self.ladd(acc, t);
                    }
                }
                acc
            }
        }
    }

    /// `exp`'s own result as its derivative, flushed to zero where it is
    /// subnormal: `select(y < MIN_POSITIVE, 0, y)` for `y = exp(x) >= 0`
    /// (or NaN, kept). The primal keeps `y`; only the coefficient of the
    /// linear map `dy = y dx` is flushed. A flushed term is below
    /// `2.2e-308 |dx|`, under half an ulp of any derivative entry larger than
    /// about `1e-292 |dx|` it is summed into, so results change only where
    /// the whole derivative is that small; in exchange the linear and
    /// transposed programs never multiply subnormals, which costs a
    /// microcode assist per operation on x86 (a softmax or logsumexp over
    /// far-apart values makes many such weights: GMM d64 K100's gradient
    /// ran 3.8x slower). XLA (JAX) flushes every operation's subnormals.
    fn flushed(&mut self, y: Atom) -> Atom {
        let tiny = self.nl(Prim::Lt, &[y, Atom::F64(f64::MIN_POSITIVE)]);
        self.nl(Prim::Select, &[tiny, Atom::F64(0.0), y])
    }

    /// The tangent of `clamp(x, lo, hi)`: `lo`'s if `x < lo`, `hi`'s if
    /// `x > hi`, else `x`'s.
    fn clamp_tangent(&mut self, args: &[Atom], dargs: &[Option<Var>]) -> Var {
        let below = self.nl(Prim::Lt, &[args[0], args[1]]);
        let above = self.nl(Prim::Gt, &[args[0], args[2]]);
        let inner = if dargs[0].is_none() && dargs[2].is_none() {
            None
        } else {
            Some(self.choose(above, dargs[2], dargs[0]))
        };
        self.choose(below, dargs[1], inner)
    }

    /// A scalar linear `if cond { da } else { db }` (zeros where absent).
    fn choose(&mut self, cond: Atom, da: Option<Var>, db: Option<Var>) -> Var {
        let branch = |j: &mut Self, d: Option<Var>| {
            j.b.open();
            let v = match d {
                Some(v) => v,
                None => j.lin(LinOp::Zero(ShapeTree::Scalar)),
            };
            j.b.close(vec![], vec![v])
        };
        let then_ = branch(self, da);
        let else_ = branch(self, db);
        self.b.emit1(Expr::If(If {
            cond,
            then_,
            else_,
            lin_shapes: vec![ShapeTree::Scalar],
        }))
    }

    /// `∂p/∂x_k` at `args` (with result `y`), emitted as non-linear statements.
    fn partial(&mut self, p: Prim, k: usize, args: &[Atom], y: Atom) -> Atom {
        use Prim::*;
        let x = args[0];
        let one = Atom::F64(1.0);
        match (p, k) {
            (Mul, 0) => args[1],
            (Mul, _) => args[0],
            // d(a/b) = da / b - (y / b) db
            (Div, 0) => self.nl(Div, &[one, args[1]]),
            (Div, _) => {
                let q = self.nl(Div, &[y, args[1]]);
                self.nl(Neg, &[q])
            }
            (Abs, _) => {
                let c = self.nl(Ge, &[x, Atom::F64(0.0)]);
                self.nl(Select, &[c, one, Atom::F64(-1.0)])
            }
            (Sin, _) => self.nl(Cos, &[x]),
            (Cos, _) => {
                let s = self.nl(Sin, &[x]);
                self.nl(Neg, &[s])
            }
            // tan' = 1 + tan²
            (Tan, _) => {
                let y2 = self.nl(Mul, &[y, y]);
                self.nl(Add, &[one, y2])
            }
            (Exp, _) => self.flushed(y),
            (Ln, _) => self.nl(Div, &[one, x]),
            (Log2, _) => {
                let d = self.nl(Mul, &[x, Atom::F64(std::f64::consts::LN_2)]);
                self.nl(Div, &[one, d])
            }
            (Log10, _) => {
                let d = self.nl(Mul, &[x, Atom::F64(std::f64::consts::LN_10)]);
                self.nl(Div, &[one, d])
            }
            // sqrt' = 0.5 / sqrt
            (Sqrt, _) => self.nl(Div, &[Atom::F64(0.5), y]),
            // tanh' = 1 - tanh²
            (Tanh, _) => {
                let y2 = self.nl(Mul, &[y, y]);
                self.nl(Sub, &[one, y2])
            }
            (Sinh, _) => self.nl(Cosh, &[x]),
            (Cosh, _) => self.nl(Sinh, &[x]),
            // atan' = 1 / (1 + x²)
            (Atan, _) => {
                let x2 = self.nl(Mul, &[x, x]);
                let d = self.nl(Add, &[one, x2]);
                self.nl(Div, &[one, d])
            }
            // asin' = 1 / sqrt(1 - x²), acos' = -asin'
            (Asin | Acos, _) => {
                let x2 = self.nl(Mul, &[x, x]);
                let d = self.nl(Sub, &[one, x2]);
                let r = self.nl(Sqrt, &[d]);
                let num = if p == Asin { one } else { Atom::F64(-1.0) };
                self.nl(Div, &[num, r])
            }
            // asinh' = 1 / sqrt(x² + 1) = 1 / hypot(x, 1) (no overflow of x²)
            (Asinh, _) => {
                let h = self.nl(Hypot, &[x, one]);
                self.nl(Div, &[one, h])
            }
            // acosh' = 1 / sqrt(x² - 1) = 1 / (sqrt(x - 1) sqrt(x + 1))
            (Acosh, _) => {
                let a = self.nl(Sub, &[x, one]);
                let b = self.nl(Add, &[x, one]);
                let (sa, sb) = (self.nl(Sqrt, &[a]), self.nl(Sqrt, &[b]));
                let d = self.nl(Mul, &[sa, sb]);
                self.nl(Div, &[one, d])
            }
            // atanh' = 1 / (1 - x²)
            (Atanh, _) => {
                let x2 = self.nl(Mul, &[x, x]);
                let d = self.nl(Sub, &[one, x2]);
                self.nl(Div, &[one, d])
            }
            // exp_m1' = exp = y + 1
            (ExpM1, _) => self.nl(Add, &[y, one]),
            // ln_1p' = 1 / (1 + x)
            (Ln1p, _) => {
                let d = self.nl(Add, &[one, x]);
                self.nl(Div, &[one, d])
            }
            // powi(x, n)' = n x^(n-1), and exactly 0 for n = 0 (not 0 * x^-1,
            // which is NaN at x = 0)
            (Powi, _) => {
                let nm1 = self.nl(Sub, &[args[1], Atom::I64(1)]);
                let pw = self.nl(Powi, &[x, nm1]);
                let nf = self.nl(ToF64, &[args[1]]);
                let g = self.nl(Mul, &[nf, pw]);
                let n0 = self.nl(Eq, &[args[1], Atom::I64(0)]);
                self.nl(Select, &[n0, Atom::F64(0.0), g])
            }
            // ∂x powf(x, e) = e x^(e-1), and exactly 0 for e = 0
            (Powf, 0) => {
                let em1 = self.nl(Sub, &[args[1], one]);
                let pw = self.nl(Powf, &[x, em1]);
                let g = self.nl(Mul, &[args[1], pw]);
                let e0 = self.nl(Eq, &[args[1], Atom::F64(0.0)]);
                self.nl(Select, &[e0, Atom::F64(0.0), g])
            }
            // ∂e powf(x, e) = y ln x, and 0 at x = 0 (where y = 0 for e > 0)
            (Powf, _) => {
                let l = self.nl(Ln, &[x]);
                let g = self.nl(Mul, &[y, l]);
                let x0 = self.nl(Eq, &[x, Atom::F64(0.0)]);
                self.nl(Select, &[x0, Atom::F64(0.0), g])
            }
            // atan2(a, b): ∂a = b / (a² + b²), ∂b = -a / (a² + b²)
            // (0 at the origin, where atan2 has no derivative: see hypot)
            (Atan2, k) => {
                let a2 = self.nl(Mul, &[args[0], args[0]]);
                let b2 = self.nl(Mul, &[args[1], args[1]]);
                let den = self.nl(Add, &[a2, b2]);
                let g = if k == 0 {
                    self.nl(Div, &[args[1], den])
                } else {
                    let q = self.nl(Div, &[args[0], den]);
                    self.nl(Neg, &[q])
                };
                let at0 = self.nl(Eq, &[den, Atom::F64(0.0)]);
                self.nl(Select, &[at0, Atom::F64(0.0), g])
            }
            // hypot(a, b): ∂a = a / y, ∂b = b / y, and 0 at the origin (where
            // hypot has no derivative: 0/0 would make forward and reverse
            // mode disagree on NaNs)
            (Hypot, k) => {
                let q = self.nl(Div, &[args[k], y]);
                let at0 = self.nl(Eq, &[y, Atom::F64(0.0)]);
                self.nl(Select, &[at0, Atom::F64(0.0), q])
            }
            // a % b = a - b trunc(a / b) (f64; i64 operands have no
            // tangents): ∂a = 1, ∂b = -trunc(a / b), the quotient being
            // piecewise constant
            (Rem, 0) => one,
            (Rem, _) => {
                let q = self.nl(Div, &[args[0], args[1]]);
                let t = self.nl(Trunc, &[q]);
                self.nl(Neg, &[t])
            }
            // copysign(a, b) = ±|a|: ∂a = sign(a) sign(b) (the sign bits,
            // as copysign reads them), ∂b = 0
            (Copysign, 0) => {
                let sa = self.nl(Copysign, &[one, x]);
                let sb = self.nl(Copysign, &[one, args[1]]);
                self.nl(Mul, &[sa, sb])
            }
            (Copysign, _) => unreachable!("copysign's sign operand has no partial (zero_partial)"),
            // mul_add(a, b, c) = a b + c: ∂a = b, ∂b = a, ∂c = 1
            (MulAdd, 0) => args[1],
            (MulAdd, 1) => args[0],
            (MulAdd, _) => one,
            // exp2' = 2^x ln 2
            (Exp2, _) => {
                let c = self.flushed(y);
                self.nl(Mul, &[c, Atom::F64(std::f64::consts::LN_2)])
            }
            // cbrt' = 1 / (3 cbrt(x)^2) (infinite at 0, as sqrt's)
            (Cbrt, _) => {
                let yy = self.nl(Mul, &[y, y]);
                let d = self.nl(Mul, &[Atom::F64(3.0), yy]);
                self.nl(Div, &[one, d])
            }
            (
                Add | Sub | Neg | Max | Min | Lt | Le | Gt | Ge | Eq | Ne | And | Or | Not | ToF64
                | ToI64 | Select | Clamp | IntArith(..) | IntCast(_) | FloatToInt(_) | U64ToF64
                | ULt | ULe | UGt | UGe | UMax | UMin | Floor | Ceil | Round | Trunc | Signum,
                _,
            ) => unreachable!("{p:?} has no partials rule"),
        }
    }
}
