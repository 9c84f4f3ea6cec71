//! Elementwise kernels: `build`, `map`, `zip_map`, `zip3_map`.
//!
//! Inputs are any `&ArrayBase` (owned arrays, views, strided or transposed
//! views) of the same shape; there is no implicit broadcasting (use
//! [`crate::broadcast_to`] to make a broadcast view). The output is a new
//! array in row-major layout, or column-major when every input is
//! column-major (as ndarray's `map_collect`). Work for the parallel
//! threshold: the number of output elements. Elementwise results never
//! depend on the thread count.
//!
//! In parallel, ndarray's `Zip::par_map_collect` writes the output in place
//! (no zero-filled buffer); the closure runs under the nesting flag of
//! [`crate::par`], so kernels it calls stay sequential.

use crate::check;
use crate::par;
use ndarray::{indices, Array, ArrayBase, Data, Dimension, IntoDimension, Zip};

/// `out[idx] = f(idx)` for every index of `shape`.
///
/// The closure receives the index as ndarray's pattern type: `usize` for
/// rank 1 (`build(n, |i| ..)`), `(usize, usize)` for rank 2
/// (`build((m, n), |(i, j)| ..)`), `(usize, usize, usize)` for rank 3.
pub fn build<T, Sh, D, F>(shape: Sh, f: F) -> Array<T, D>
where
    T: Send,
    Sh: IntoDimension<Dim = D>,
    D: Dimension + Copy,
    D::Pattern: Send,
    F: Fn(D::Pattern) -> T + Sync + Send,
{
    let z = Zip::from(indices(shape));
    if par::go_parallel(z.size()) {
        z.par_map_collect(|i| par::nested(|| f(i)))
    } else {
        z.map_collect(f)
    }
}

/// `out[i] = f(a[i])` for every index `i`.
pub fn map<A, B, S, D, F>(a: &ArrayBase<S, D>, f: F) -> Array<B, D>
where
    A: Copy + Sync,
    B: Send,
    S: Data<Elem = A>,
    D: Dimension,
    F: Fn(A) -> B + Sync + Send,
{
    let z = Zip::from(a);
    if par::go_parallel(a.len()) {
        z.par_map_collect(|&x| par::nested(|| f(x)))
    } else {
        z.map_collect(|&x| f(x))
    }
}

/// `out[i] = f(a[i], b[i])`; `a` and `b` must have the same shape.
#[track_caller]
pub fn zip_map<A, B, C, SA, SB, D, F>(
    a: &ArrayBase<SA, D>,
    b: &ArrayBase<SB, D>,
    f: F,
) -> Array<C, D>
where
    A: Copy + Sync,
    B: Copy + Sync,
    C: Send,
    SA: Data<Elem = A>,
    SB: Data<Elem = B>,
    D: Dimension,
    F: Fn(A, B) -> C + Sync + Send,
{
    check::same_shape("zip_map", a.shape(), b.shape());
    let z = Zip::from(a).and(b);
    if par::go_parallel(a.len()) {
        z.par_map_collect(|&x, &y| par::nested(|| f(x, y)))
    } else {
        z.map_collect(|&x, &y| f(x, y))
    }
}

/// `out[i] = f(a[i], b[i], c[i])`; all inputs must have the same shape.
#[track_caller]
pub fn zip3_map<A, B, C, E, SA, SB, SC, D, F>(
    a: &ArrayBase<SA, D>,
    b: &ArrayBase<SB, D>,
    c: &ArrayBase<SC, D>,
    f: F,
) -> Array<E, D>
where
    A: Copy + Sync,
    B: Copy + Sync,
    C: Copy + Sync,
    E: Send,
    SA: Data<Elem = A>,
    SB: Data<Elem = B>,
    SC: Data<Elem = C>,
    D: Dimension,
    F: Fn(A, B, C) -> E + Sync + Send,
{
    check::same_shape("zip3_map", a.shape(), b.shape());
    check::same_shape("zip3_map", a.shape(), c.shape());
    let z = Zip::from(a).and(b).and(c);
    if par::go_parallel(a.len()) {
        z.par_map_collect(|&x, &y, &w| par::nested(|| f(x, y, w)))
    } else {
        z.map_collect(|&x, &y, &w| f(x, y, w))
    }
}
