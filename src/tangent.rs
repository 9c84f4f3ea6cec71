//! Tangent spaces of parameter types: what `#[derive(linad::Differentiable)]`
//! builds a struct's tangent from, and what optimisers and tests use to
//! treat any tangent as a flat vector.
//!
//! A type `P` is [`Differentiable`] when it names its tangent type
//! `P::Tangent`; that type is a [`Tangent`] (zeros shaped like a primal,
//! sums, scaling, an inner product, and a flat `Vec<f64>` view). `f64`,
//! `f32`, tuples of them, `f64` / `f32` arrays of any rank and fixed-size
//! arrays `[f64; N]` are their own tangents; a `Vec<f64>` is too. For a struct,
//!
//! ```
//! use linad::ndarray::{Array1, Array2};
//! use linad::Tangent;
//!
//! #[derive(linad::Differentiable, Clone, Debug)]
//! pub struct Affine {
//!     pub w: Array2<f64>,
//!     pub b: Array1<f64>,
//!     #[linad(constant)]
//!     pub act: usize,
//! }
//!
//! let p = Affine { w: Array2::ones((2, 3)), b: Array1::ones(2), act: 1 };
//! // `AffineTangent { w, b }`: the differentiable fields, with their types.
//! let t = AffineTangent::zeros_like(&p) + AffineTangent { w: Array2::ones((2, 3)), b: Array1::ones(2) } * 0.5;
//! assert_eq!(t.dot(&t), 8.0 * 0.25);
//! let flat = t.to_flat();
//! assert_eq!(flat.len(), 8);
//! assert_eq!(AffineTangent::from_flat(&p, &flat), t);
//! ```

use ndarray::{Array, Dimension};

/// A type with a tangent space: the type of the derivatives of a parameter
/// of type `Self` (`f_jvp` takes them, `f_vjp` returns them).
pub trait Differentiable {
    /// The tangent type.
    type Tangent: Tangent<Primal = Self>;
}

/// A tangent space: a real vector space shaped like a primal value.
pub trait Tangent: Clone {
    /// The primal type whose tangents these are.
    type Primal: ?Sized;

    /// The zero tangent at `p` (arrays shaped like `p`'s).
    fn zero_at(p: &Self::Primal) -> Self;

    /// `self + other` (same shapes).
    fn plus(&self, other: &Self) -> Self;

    /// `self * s`.
    fn times(&self, s: f64) -> Self;

    /// The inner product `<self, other>`: the sum of the products of
    /// corresponding components.
    fn inner(&self, other: &Self) -> f64;

    /// Appends the components in order (fields in declaration order,
    /// arrays in logical row-major order).
    fn write_flat(&self, out: &mut Vec<f64>);

    /// Reads a tangent shaped like `p` from the front of `xs`, advancing it.
    ///
    /// # Panics
    ///
    /// If `xs` is too short.
    fn read_flat(p: &Self::Primal, xs: &mut &[f64]) -> Self;

    /// The components as one vector (see [`Tangent::write_flat`]).
    fn to_flat(&self) -> Vec<f64> {
        let mut out = vec![];
        self.write_flat(&mut out);
        out
    }

    /// The tangent at `p` whose components are `xs` (the inverse of
    /// [`Tangent::to_flat`]).
    ///
    /// # Panics
    ///
    /// If `xs` does not have exactly as many components as a tangent at `p`.
    fn from_flat(p: &Self::Primal, xs: &[f64]) -> Self {
        let mut rest = xs;
        let t = Self::read_flat(p, &mut rest);
        assert!(
            rest.is_empty(),
            "Tangent::from_flat: {} components left over",
            rest.len()
        );
        t
    }
}

/// Takes `k` components off the front of `xs`.
fn take<'a>(xs: &mut &'a [f64], k: usize) -> &'a [f64] {
    assert!(
        xs.len() >= k,
        "Tangent::read_flat: {k} components needed, {} left",
        xs.len()
    );
    let (a, b) = xs.split_at(k);
    *xs = b;
    a
}

macro_rules! float_tangent {
    ($t:ty) => {
        impl Differentiable for $t {
            type Tangent = $t;
        }
        impl Tangent for $t {
            type Primal = $t;
            fn zero_at(_: &$t) -> Self {
                0.0
            }
            fn plus(&self, o: &Self) -> Self {
                self + o
            }
            fn times(&self, s: f64) -> Self {
                (*self as f64 * s) as $t
            }
            fn inner(&self, o: &Self) -> f64 {
                *self as f64 * *o as f64
            }
            fn write_flat(&self, out: &mut Vec<f64>) {
                out.push(*self as f64);
            }
            fn read_flat(_: &$t, xs: &mut &[f64]) -> Self {
                take(xs, 1)[0] as $t
            }
        }
        impl<D: Dimension> Differentiable for Array<$t, D> {
            type Tangent = Array<$t, D>;
        }
        impl<D: Dimension> Tangent for Array<$t, D> {
            type Primal = Array<$t, D>;
            fn zero_at(p: &Self) -> Self {
                Array::zeros(p.raw_dim())
            }
            fn plus(&self, o: &Self) -> Self {
                self + o
            }
            fn times(&self, s: f64) -> Self {
                self.mapv(|x| (x as f64 * s) as $t)
            }
            fn inner(&self, o: &Self) -> f64 {
                self.iter()
                    .zip(o.iter())
                    .map(|(a, b)| *a as f64 * *b as f64)
                    .sum()
            }
            fn write_flat(&self, out: &mut Vec<f64>) {
                out.extend(self.iter().map(|x| *x as f64));
            }
            fn read_flat(p: &Self, xs: &mut &[f64]) -> Self {
                let part = take(xs, p.len());
                Array::from_shape_vec(p.raw_dim(), part.iter().map(|x| *x as $t).collect())
                    .expect("as many components as the primal has")
            }
        }
        impl Differentiable for Vec<$t> {
            type Tangent = Vec<$t>;
        }
        impl Tangent for Vec<$t> {
            type Primal = Vec<$t>;
            fn zero_at(p: &Self) -> Self {
                vec![0.0; p.len()]
            }
            fn plus(&self, o: &Self) -> Self {
                self.iter().zip(o).map(|(a, b)| a + b).collect()
            }
            fn times(&self, s: f64) -> Self {
                self.iter().map(|x| (*x as f64 * s) as $t).collect()
            }
            fn inner(&self, o: &Self) -> f64 {
                self.iter().zip(o).map(|(a, b)| *a as f64 * *b as f64).sum()
            }
            fn write_flat(&self, out: &mut Vec<f64>) {
                out.extend(self.iter().map(|x| *x as f64));
            }
            fn read_flat(p: &Self, xs: &mut &[f64]) -> Self {
                take(xs, p.len()).iter().map(|x| *x as $t).collect()
            }
        }
        impl<const N: usize> Differentiable for [$t; N] {
            type Tangent = [$t; N];
        }
        impl<const N: usize> Tangent for [$t; N] {
            type Primal = [$t; N];
            fn zero_at(_: &Self) -> Self {
                [0.0; N]
            }
            fn plus(&self, o: &Self) -> Self {
                core::array::from_fn(|k| self[k] + o[k])
            }
            fn times(&self, s: f64) -> Self {
                self.map(|x| (x as f64 * s) as $t)
            }
            fn inner(&self, o: &Self) -> f64 {
                self.iter().zip(o).map(|(a, b)| *a as f64 * *b as f64).sum()
            }
            fn write_flat(&self, out: &mut Vec<f64>) {
                out.extend(self.iter().map(|x| *x as f64));
            }
            fn read_flat(_: &Self, xs: &mut &[f64]) -> Self {
                let part = take(xs, N);
                core::array::from_fn(|k| part[k] as $t)
            }
        }
    };
}

float_tangent!(f64);
float_tangent!(f32);

macro_rules! tuple_tangent {
    ($($t:ident $i:tt),+) => {
        impl<$($t: Differentiable),+> Differentiable for ($($t,)+) {
            type Tangent = ($($t::Tangent,)+);
        }
        impl<$($t: Tangent),+> Tangent for ($($t,)+)
        where
            $($t::Primal: Sized),+
        {
            type Primal = ($($t::Primal,)+);
            fn zero_at(p: &Self::Primal) -> Self {
                ($($t::zero_at(&p.$i),)+)
            }
            fn plus(&self, o: &Self) -> Self {
                ($(self.$i.plus(&o.$i),)+)
            }
            fn times(&self, s: f64) -> Self {
                ($(self.$i.times(s),)+)
            }
            fn inner(&self, o: &Self) -> f64 {
                0.0 $(+ self.$i.inner(&o.$i))+
            }
            fn write_flat(&self, out: &mut Vec<f64>) {
                $(self.$i.write_flat(out);)+
            }
            fn read_flat(p: &Self::Primal, xs: &mut &[f64]) -> Self {
                ($($t::read_flat(&p.$i, xs),)+)
            }
        }
    };
}

tuple_tangent!(A 0);
tuple_tangent!(A 0, B 1);
tuple_tangent!(A 0, B 1, C 2);
tuple_tangent!(A 0, B 1, C 2, D 3);

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    #[test]
    fn flat_round_trips_and_inner_products() {
        let p = (1.0f64, array![[1.0, 2.0], [3.0, 4.0]], vec![0.5f64; 3]);
        let t = <(f64, ndarray::Array2<f64>, Vec<f64>)>::zero_at(&p)
            .plus(&p)
            .times(2.0);
        assert_eq!(t.to_flat(), [2.0, 2.0, 4.0, 6.0, 8.0, 1.0, 1.0, 1.0]);
        assert_eq!(t.inner(&t), 4.0 + 4.0 + 16.0 + 36.0 + 64.0 + 3.0);
        let back = <(f64, ndarray::Array2<f64>, Vec<f64>)>::from_flat(&p, &t.to_flat());
        assert_eq!(back, t);
    }

    #[test]
    #[should_panic(expected = "components left over")]
    fn from_flat_wants_the_exact_length() {
        let _ = f64::from_flat(&1.0, &[1.0, 2.0]);
    }
}
