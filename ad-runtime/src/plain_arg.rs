//! An `f64` array passed to a plain (not differentiated) Rust function as
//! that function takes it. A `#[differentiable]` body may call a plain
//! function with constant arrays (`helper(&w)`, `helper(&v[..])`,
//! `helper(q)` for `q: [f64; 3]`); the generated code holds them as ndarray
//! arrays and writes `helper(plain_arg(&a))`: the parameter's type picks the
//! conversion.
//!
//! ```
//! use ad_runtime::plain_arg;
//! use ndarray::array;
//! fn sum(v: &[f64]) -> f64 { v.iter().sum() }
//! fn first(q: [f64; 2]) -> f64 { q[0] }
//! let a = array![1.0, 2.0];
//! assert_eq!(sum(plain_arg(&a)), 3.0);
//! assert_eq!(first(plain_arg(&a)), 1.0);
//! ```

use ndarray::{Array, ArrayView, Dimension, Ix1};
use std::borrow::Cow;

/// A parameter type a plain function may take an `f64` array of dimension
/// `D` as: `&Array<f64, D>`, `ArrayView<f64, D>`, and for one dimension
/// `&[f64]`, `Vec<f64>` and `[f64; N]`.
#[diagnostic::on_unimplemented(
    message = "a function that is not #[differentiable] takes a constant array as `{Self}`",
    label = "linad passes constant arrays here",
    note = "linad passes a constant `f64` array to a plain function as `&Array`, an `ArrayView`, `&[f64]`, `Vec<f64>` or `[f64; N]`: declare the parameter as one of these (or make the function #[differentiable])"
)]
pub trait PlainArg<'a, D: Dimension>: Sized {
    /// The argument made from `a` (a borrow where the type is one).
    fn from_array(a: &'a Array<f64, D>) -> Self;
}

/// `a` as the plain function's parameter type (see [`PlainArg`]).
#[inline]
pub fn plain_arg<'a, D: Dimension, T: PlainArg<'a, D>>(a: &'a Array<f64, D>) -> T {
    T::from_array(a)
}

/// `a` itself when it is in standard (row-major, contiguous) layout, else a
/// copy in that layout: what [`plain_arg`] takes.
#[inline]
pub fn in_standard_layout<D: Dimension>(a: &Array<f64, D>) -> Cow<'_, Array<f64, D>> {
    if a.is_standard_layout() {
        Cow::Borrowed(a)
    } else {
        Cow::Owned(a.as_standard_layout().into_owned())
    }
}

impl<'a, D: Dimension> PlainArg<'a, D> for &'a Array<f64, D> {
    #[inline]
    fn from_array(a: &'a Array<f64, D>) -> Self {
        a
    }
}

impl<'a, D: Dimension> PlainArg<'a, D> for ArrayView<'a, f64, D> {
    #[inline]
    fn from_array(a: &'a Array<f64, D>) -> Self {
        a.view()
    }
}

impl<'a> PlainArg<'a, Ix1> for &'a [f64] {
    /// # Panics
    /// If `a` is not in standard layout (the generated code passes arrays
    /// through [`in_standard_layout`]).
    #[inline]
    fn from_array(a: &'a Array<f64, Ix1>) -> Self {
        a.as_slice()
            .expect("linad: a one-dimensional array passed as a slice is contiguous")
    }
}

impl<'a> PlainArg<'a, Ix1> for Vec<f64> {
    #[inline]
    fn from_array(a: &'a Array<f64, Ix1>) -> Self {
        a.to_vec()
    }
}

impl<'a, const N: usize> PlainArg<'a, Ix1> for [f64; N] {
    /// # Panics
    /// If `a` does not have `N` elements.
    #[inline]
    fn from_array(a: &'a Array<f64, Ix1>) -> Self {
        assert_eq!(
            a.len(),
            N,
            "linad: an array of {} elements passed as `[f64; {N}]`",
            a.len()
        );
        std::array::from_fn(|i| a[i])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{array, Array2};

    fn by_ref(m: &Array2<f64>) -> f64 {
        m.sum()
    }
    fn by_view(v: ndarray::ArrayView1<f64>) -> f64 {
        v[1]
    }
    fn by_vec(v: Vec<f64>) -> usize {
        v.len()
    }

    #[test]
    fn every_parameter_type() {
        let a = array![1.0, 2.0, 4.0];
        let m = Array2::from_elem((2, 2), 0.5);
        assert_eq!(by_ref(plain_arg(&m)), 2.0);
        assert_eq!(by_view(plain_arg(&a)), 2.0);
        assert_eq!(by_vec(plain_arg(&a)), 3);
        let s: &[f64] = plain_arg(&a);
        assert_eq!(s, &[1.0, 2.0, 4.0]);
        let f: [f64; 3] = plain_arg(&a);
        assert_eq!(f, [1.0, 2.0, 4.0]);
        let mut r = a.clone();
        r.invert_axis(ndarray::Axis(0));
        let c = in_standard_layout(&r);
        let s: &[f64] = plain_arg(&c);
        assert_eq!(s, &[4.0, 2.0, 1.0]);
    }

    #[test]
    #[should_panic(expected = "an array of 3 elements passed as `[f64; 2]`")]
    fn fixed_length_is_checked() {
        let _: [f64; 2] = plain_arg(&array![1.0, 2.0, 4.0]);
    }
}
