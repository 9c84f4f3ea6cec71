//! Types of the IR and their tangent types.
//!
//! Arrays are regular, row-major, with dynamic sizes and a static rank. The
//! tangent type of a type is what forward mode carries beside a value of that
//! type: `F64 -> F64`, `Array<F64, r> -> Array<F64, r>`, tuples componentwise;
//! integers, booleans and integer/boolean arrays have no tangent at all (they
//! are dropped from tangent signatures, never represented as zeros).

use std::fmt;

/// Element type of a scalar or of an array.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Scalar {
    /// 64-bit float: the only differentiable element type.
    F64,
    /// 64-bit signed integer: indices, sizes, counters.
    I64,
    /// Boolean: conditions and masks.
    Bool,
}

/// A type of the IR.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Ty {
    /// A scalar of the given element type.
    Scalar(Scalar),
    /// A tuple of values (possibly empty).
    Tuple(Vec<Ty>),
    /// A regular array of `elem` of static rank `rank >= 1`, sizes dynamic.
    Array {
        /// Element type.
        elem: Scalar,
        /// Number of axes (1..=3 are supported by the runtime; the IR allows more).
        rank: usize,
    },
    /// A value the IR does not look into, of a type the host names (the
    /// residuals an extern callee's forward half keeps for its linear maps,
    /// see [`crate::externs::declare_extern_residuals`]): produced and read
    /// only by extern calls, never differentiable, never stacked.
    Opaque(String),
}

impl Ty {
    /// `f64`.
    pub const F64: Ty = Ty::Scalar(Scalar::F64);
    /// `i64`.
    pub const I64: Ty = Ty::Scalar(Scalar::I64);
    /// `bool`.
    pub const BOOL: Ty = Ty::Scalar(Scalar::Bool);

    /// An array of `elem` with `rank` axes.
    pub fn array(elem: Scalar, rank: usize) -> Ty {
        assert!(rank >= 1, "array rank must be at least 1");
        Ty::Array { elem, rank }
    }

    /// `[f64]` of the given rank.
    pub fn f64s(rank: usize) -> Ty {
        Ty::array(Scalar::F64, rank)
    }

    /// The element type of a scalar or array, `None` for tuples.
    pub fn elem(&self) -> Option<Scalar> {
        match self {
            Ty::Scalar(s) => Some(*s),
            Ty::Array { elem, .. } => Some(*elem),
            Ty::Tuple(_) | Ty::Opaque(_) => None,
        }
    }

    /// Rank of the type: 0 for scalars, `rank` for arrays, `None` for tuples.
    pub fn rank(&self) -> Option<usize> {
        match self {
            Ty::Scalar(_) => Some(0),
            Ty::Array { rank, .. } => Some(*rank),
            Ty::Tuple(_) | Ty::Opaque(_) => None,
        }
    }

    /// Is this a scalar of the given element type?
    pub fn is_scalar(&self, s: Scalar) -> bool {
        *self == Ty::Scalar(s)
    }

    /// The type with `extra` leading axes added (stacking); scalars become arrays.
    /// `None` for tuples (they are never stacked).
    pub fn stacked(&self, extra: usize) -> Option<Ty> {
        if extra == 0 {
            return Some(self.clone());
        }
        match self {
            Ty::Scalar(s) => Some(Ty::array(*s, extra)),
            Ty::Array { elem, rank } => Some(Ty::array(*elem, rank + extra)),
            Ty::Tuple(_) | Ty::Opaque(_) => None,
        }
    }

    /// The type with `drop` leading axes removed (indexing); `None` if not an
    /// array of rank `>= drop`.
    pub fn unstacked(&self, drop: usize) -> Option<Ty> {
        match self {
            Ty::Array { elem, rank } if *rank == drop => Some(Ty::Scalar(*elem)),
            Ty::Array { elem, rank } if *rank > drop => Some(Ty::array(*elem, rank - drop)),
            _ if drop == 0 => Some(self.clone()),
            _ => None,
        }
    }

    /// The tangent type (`None` when the type carries no derivative).
    ///
    /// `tangent(F64) = F64`, `tangent([f64; r]) = [f64; r]`,
    /// `tangent((a, b)) = (tangent(a), tangent(b))` keeping only components
    /// that have a tangent, `None` if none has.
    pub fn tangent(&self) -> Option<Ty> {
        match self {
            Ty::Scalar(Scalar::F64)
            | Ty::Array {
                elem: Scalar::F64, ..
            } => Some(self.clone()),
            Ty::Scalar(_) | Ty::Array { .. } | Ty::Opaque(_) => None,
            Ty::Tuple(ts) => {
                let parts: Vec<Ty> = ts.iter().filter_map(Ty::tangent).collect();
                if parts.is_empty() {
                    None
                } else {
                    Some(Ty::Tuple(parts))
                }
            }
        }
    }

    /// Whether the type carries a derivative (`tangent().is_some()`).
    pub fn is_differentiable(&self) -> bool {
        self.tangent().is_some()
    }

    /// Whether the type is its own tangent type: a valid type for linear values
    /// (f64, f64 arrays, tuples of those).
    pub fn is_linear_space(&self) -> bool {
        match self {
            Ty::Scalar(Scalar::F64)
            | Ty::Array {
                elem: Scalar::F64, ..
            } => true,
            Ty::Scalar(_) | Ty::Array { .. } | Ty::Opaque(_) => false,
            Ty::Tuple(ts) => ts.iter().all(Ty::is_linear_space),
        }
    }
}

impl fmt::Display for Scalar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Scalar::F64 => "f64",
            Scalar::I64 => "i64",
            Scalar::Bool => "bool",
        })
    }
}

impl fmt::Display for Ty {
    /// `f64`, `[f64]`, `[[i64]]`, `(f64, [f64])`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ty::Scalar(s) => write!(f, "{s}"),
            Ty::Array { elem, rank } => {
                for _ in 0..*rank {
                    f.write_str("[")?;
                }
                write!(f, "{elem}")?;
                for _ in 0..*rank {
                    f.write_str("]")?;
                }
                Ok(())
            }
            Ty::Tuple(ts) => {
                f.write_str("(")?;
                for (i, t) in ts.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{t}")?;
                }
                if ts.len() == 1 {
                    f.write_str(",")?;
                }
                f.write_str(")")
            }
            Ty::Opaque(name) => write!(f, "opaque<{name}>"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tangent_types_drop_integers() {
        assert_eq!(Ty::F64.tangent(), Some(Ty::F64));
        assert_eq!(Ty::I64.tangent(), None);
        assert_eq!(Ty::array(Scalar::I64, 1).tangent(), None);
        let t = Ty::Tuple(vec![Ty::F64, Ty::I64, Ty::f64s(2)]);
        assert_eq!(t.tangent(), Some(Ty::Tuple(vec![Ty::F64, Ty::f64s(2)])));
        assert_eq!(Ty::Tuple(vec![Ty::BOOL]).tangent(), None);
    }

    #[test]
    fn display() {
        assert_eq!(Ty::f64s(2).to_string(), "[[f64]]");
        assert_eq!(Ty::Tuple(vec![Ty::F64, Ty::I64]).to_string(), "(f64, i64)");
    }
}
