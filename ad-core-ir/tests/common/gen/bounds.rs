//! What the generator knows of a value: closed intervals ([`Iv`]) with their
//! arithmetic, and the kinds of the pool ([`K`]: a type with bounds on its
//! value, sizes and indices).

use ad_core_ir::ir::ReduceOp;
use ad_core_ir::types::{Scalar, Ty};

/// Values whose bound exceeds this are squashed with `tanh`.
pub const LIMIT: f64 = 30.0;

/// A closed interval bounding a value (or every element of an array).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Iv {
    /// Lower bound.
    pub lo: f64,
    /// Upper bound.
    pub hi: f64,
}

impl Iv {
    pub(super) fn new(lo: f64, hi: f64) -> Iv {
        Iv { lo, hi }
    }
    pub(super) fn pt(x: f64) -> Iv {
        Iv { lo: x, hi: x }
    }
    /// `max |x|`.
    pub(super) fn m(self) -> f64 {
        self.lo.abs().max(self.hi.abs())
    }
    pub(super) fn add(self, o: Iv) -> Iv {
        Iv::new(self.lo + o.lo, self.hi + o.hi)
    }
    pub(super) fn neg(self) -> Iv {
        Iv::new(-self.hi, -self.lo)
    }
    pub(super) fn sub(self, o: Iv) -> Iv {
        self.add(o.neg())
    }
    pub(super) fn mul(self, o: Iv) -> Iv {
        let ps = [
            self.lo * o.lo,
            self.lo * o.hi,
            self.hi * o.lo,
            self.hi * o.hi,
        ];
        Iv::new(
            ps.iter().copied().fold(f64::INFINITY, f64::min),
            ps.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        )
    }
    pub(super) fn hull(self, o: Iv) -> Iv {
        Iv::new(self.lo.min(o.lo), self.hi.max(o.hi))
    }
    pub(super) fn within(self, o: Iv) -> bool {
        self.lo >= o.lo && self.hi <= o.hi
    }
    pub(super) fn mono(self, f: fn(f64) -> f64) -> Iv {
        Iv::new(f(self.lo), f(self.hi))
    }
    pub(super) fn abs(self) -> Iv {
        if self.lo >= 0.0 {
            self
        } else if self.hi <= 0.0 {
            self.neg()
        } else {
            Iv::new(0.0, self.m())
        }
    }
    /// Bound of a sum of `n` values each in `self`.
    pub(super) fn sum_n(self, n: usize) -> Iv {
        Iv::new(self.lo * n as f64, self.hi * n as f64)
    }
    /// Bound of a partial sum of at most `n` values each in `self` (at least one).
    pub(super) fn partial_sums(self, n: usize) -> Iv {
        Iv::new(
            self.lo.min(self.lo * n as f64),
            self.hi.max(self.hi * n as f64),
        )
    }
    /// Bound of a sum of between 0 and `n` values each in `self`.
    pub(super) fn sums_upto(self, n: usize) -> Iv {
        Iv::new((self.lo * n as f64).min(0.0), (self.hi * n as f64).max(0.0))
    }
}

pub(super) const UNIT: Iv = Iv { lo: -1.0, hi: 1.0 };
/// Bound of parameter values (random in [-1, 1], perturbed by finite differences).
pub(super) const PARAM: Iv = Iv {
    lo: -1.01,
    hi: 1.01,
};
/// Bound of helper parameters: call sites squash larger arguments.
pub(super) const HELPER: Iv = Iv { lo: -2.0, hi: 2.0 };

/// The kind of a variable of the pool: its type and what is known of its value.
#[derive(Clone, Debug, PartialEq)]
pub enum K {
    /// `f64` in the interval.
    F(Iv),
    /// `i64` in `lo..=hi`.
    I(i64, i64),
    /// `bool`.
    B,
    /// `[f64]` of the length, elements in the interval.
    A1(usize, Iv),
    /// `[[f64]]` of the shape, elements in the interval.
    A2(usize, usize, Iv),
    /// `[i64]` of the length with elements in `0..=max`.
    IA(usize, i64),
    /// A tuple.
    T(Vec<K>),
}

impl K {
    pub(super) fn ty(&self) -> Ty {
        match self {
            K::F(_) => Ty::F64,
            K::I(..) => Ty::I64,
            K::B => Ty::BOOL,
            K::A1(..) => Ty::f64s(1),
            K::A2(..) => Ty::f64s(2),
            K::IA(..) => Ty::array(Scalar::I64, 1),
            K::T(ks) => Ty::Tuple(ks.iter().map(K::ty).collect()),
        }
    }
    pub(super) fn iv(&self) -> Iv {
        match self {
            K::F(iv) | K::A1(_, iv) | K::A2(_, _, iv) => *iv,
            _ => UNIT,
        }
    }
    pub(super) fn with_iv(&self, iv: Iv) -> K {
        match self {
            K::F(_) => K::F(iv),
            K::A1(n, _) => K::A1(*n, iv),
            K::A2(r, c, _) => K::A2(*r, *c, iv),
            k => k.clone(),
        }
    }
    /// Same type and sizes (intervals may differ).
    pub(super) fn same_shape(&self, o: &K) -> bool {
        match (self, o) {
            (K::F(_), K::F(_)) | (K::I(..), K::I(..)) | (K::B, K::B) => true,
            (K::A1(a, _), K::A1(b, _)) => a == b,
            (K::A2(a, b, _), K::A2(c, d, _)) => a == c && b == d,
            (K::IA(a, _), K::IA(b, _)) => a == b,
            (K::T(xs), K::T(ys)) => {
                xs.len() == ys.len() && xs.iter().zip(ys).all(|(x, y)| x.same_shape(y))
            }
            _ => false,
        }
    }
    /// The kind bounding both (same shape assumed).
    pub(super) fn merge(&self, o: &K) -> K {
        match (self, o) {
            (K::I(a, b), K::I(c, d)) => K::I(*a.min(c), *b.max(d)),
            (K::IA(n, a), K::IA(_, b)) => K::IA(*n, *a.max(b)),
            (K::T(xs), K::T(ys)) => K::T(xs.iter().zip(ys).map(|(x, y)| x.merge(y)).collect()),
            (K::B, K::B) => K::B,
            _ => self.with_iv(self.iv().hull(o.iv())),
        }
    }
    pub(super) fn is_fa(&self) -> bool {
        matches!(self, K::F(_) | K::A1(..) | K::A2(..))
    }
    /// A value of this kind stacked `n` times (loop/build/map outputs).
    pub(super) fn stacked(&self, n: usize) -> K {
        match self {
            K::F(iv) => K::A1(n, *iv),
            K::A1(m, iv) => K::A2(n, *m, *iv),
            _ => unreachable!("only f64 and [f64] are stacked"),
        }
    }
}

/// Bound of the result of a reduction of `n` values each in `iv`.
pub(super) fn reduce_iv(op: ReduceOp, iv: Iv, n: usize) -> Iv {
    match op {
        ReduceOp::Sum => iv.sum_n(n),
        ReduceOp::Prod => {
            let m = iv.m().powi(n as i32);
            if iv.lo >= 0.0 {
                Iv::new(0.0, m)
            } else {
                Iv::new(-m, m)
            }
        }
        ReduceOp::Max | ReduceOp::Min => iv,
    }
}
