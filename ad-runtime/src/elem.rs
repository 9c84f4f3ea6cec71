//! The element trait every numeric kernel is generic over.

use ndarray::LinalgScalar;
use std::fmt::Debug;
use std::ops::Neg;

/// A floating-point array element: the scalar type of every numeric kernel.
///
/// Implemented for `f64` and `f32`. The trait carries exactly the operations
/// the kernels need, so adding an element type is one `impl` block.
/// [`LinalgScalar`] (ndarray's `+ - * /`, zero and one) is a supertrait so
/// the matrix kernels can hand their operands to ndarray's matrix multiply.
pub trait Elem:
    LinalgScalar + Neg<Output = Self> + crate::arg::Ordered + Debug + Default + Send + Sync + 'static
{
    /// Additive identity, `0`.
    const ZERO: Self;
    /// Multiplicative identity, `1`.
    const ONE: Self;
    /// `-∞`, the identity of `max`.
    const NEG_INFINITY: Self;
    /// `+∞`, the identity of `min`.
    const INFINITY: Self;
    /// `eˣ`.
    fn exp(self) -> Self;
    /// Natural logarithm `ln x`.
    fn ln(self) -> Self;
}

macro_rules! impl_elem {
    ($t:ident) => {
        impl Elem for $t {
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;
            const NEG_INFINITY: Self = $t::NEG_INFINITY;
            const INFINITY: Self = $t::INFINITY;
            #[inline]
            fn exp(self) -> Self {
                $t::exp(self)
            }
            #[inline]
            fn ln(self) -> Self {
                $t::ln(self)
            }
        }
    };
}

impl_elem!(f64);
impl_elem!(f32);
