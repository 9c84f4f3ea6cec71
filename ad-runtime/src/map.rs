//! Elementwise kernels: `build`, `map`, `zip_map`, `zip3_map`.
//!
//! Inputs are any `&ArrayBase` (owned arrays, views, strided or transposed
//! views) of the same shape; there is no implicit broadcasting (use
//! [`crate::broadcast_to`] to make a broadcast view). Outputs are new arrays
//! in standard (row-major) layout. Work for the parallel threshold: the
//! number of output elements. Elementwise results never depend on threads.

use crate::check;
use crate::par;
use ndarray::{Array, ArrayBase, ArrayViewMut, Data, Dimension, IntoDimension, Zip};
use rayon::prelude::*;

/// `out[idx] = f(idx)` for every index of `shape`.
///
/// The closure receives the index as ndarray's pattern type: `usize` for
/// rank 1 (`build(n, |i| ..)`), `(usize, usize)` for rank 2
/// (`build((m, n), |(i, j)| ..)`), `(usize, usize, usize)` for rank 3.
pub fn build<T, Sh, D, F>(shape: Sh, f: F) -> Array<T, D>
where
    T: Copy + Default + Send + Sync,
    Sh: IntoDimension<Dim = D>,
    D: Dimension + Copy,
    F: Fn(D::Pattern) -> T + Sync + Send,
{
    let mut out = Array::from_elem(shape.into_dimension(), T::default());
    match par::split_plan(out.shape(), out.len()) {
        Some((ax, k)) => out
            .axis_chunks_iter_mut(ax, k)
            .into_par_iter()
            .enumerate()
            .for_each(|(b, blk)| par::nested(|| fill(blk, ax.index(), b * k, &f))),
        None => fill(out.view_mut(), 0, 0, &f),
    }
    out
}

/// Fill a block whose index along `axis` starts at `off`.
fn fill<T, D, F>(blk: ArrayViewMut<'_, T, D>, axis: usize, off: usize, f: &F)
where
    D: Dimension + Copy,
    F: Fn(D::Pattern) -> T,
{
    Zip::indexed(blk).for_each(|idx, o| {
        if off == 0 {
            *o = f(idx);
        } else {
            let mut d = idx.into_dimension();
            d[axis] += off;
            *o = f(d.into_pattern());
        }
    });
}

/// `out[i] = f(a[i])` for every index `i`.
pub fn map<A, B, S, D, F>(a: &ArrayBase<S, D>, f: F) -> Array<B, D>
where
    A: Copy + Sync,
    B: Copy + Default + Send + Sync,
    S: Data<Elem = A>,
    D: Dimension,
    F: Fn(A) -> B + Sync + Send,
{
    let mut out = Array::from_elem(a.raw_dim(), B::default());
    let body = |o: ArrayViewMut<'_, B, D>, a: ndarray::ArrayView<'_, A, D>| {
        Zip::from(o).and(a).for_each(|o, &x| *o = f(x))
    };
    match par::split_plan(a.shape(), a.len()) {
        Some((ax, k)) => out
            .axis_chunks_iter_mut(ax, k)
            .into_par_iter()
            .zip(a.axis_chunks_iter(ax, k))
            .for_each(|(o, x)| par::nested(|| body(o, x))),
        None => body(out.view_mut(), a.view()),
    }
    out
}

/// `out[i] = f(a[i], b[i])`; `a` and `b` must have the same shape.
pub fn zip_map<A, B, C, SA, SB, D, F>(
    a: &ArrayBase<SA, D>,
    b: &ArrayBase<SB, D>,
    f: F,
) -> Array<C, D>
where
    A: Copy + Sync,
    B: Copy + Sync,
    C: Copy + Default + Send + Sync,
    SA: Data<Elem = A>,
    SB: Data<Elem = B>,
    D: Dimension,
    F: Fn(A, B) -> C + Sync + Send,
{
    check::same_shape("zip_map", a.shape(), b.shape());
    let mut out = Array::from_elem(a.raw_dim(), C::default());
    let body = |o: ArrayViewMut<'_, C, D>,
                a: ndarray::ArrayView<'_, A, D>,
                b: ndarray::ArrayView<'_, B, D>| {
        Zip::from(o)
            .and(a)
            .and(b)
            .for_each(|o, &x, &y| *o = f(x, y))
    };
    match par::split_plan(a.shape(), a.len()) {
        Some((ax, k)) => out
            .axis_chunks_iter_mut(ax, k)
            .into_par_iter()
            .zip(a.axis_chunks_iter(ax, k))
            .zip(b.axis_chunks_iter(ax, k))
            .for_each(|((o, x), y)| par::nested(|| body(o, x, y))),
        None => body(out.view_mut(), a.view(), b.view()),
    }
    out
}

/// `out[i] = f(a[i], b[i], c[i])`; all inputs must have the same shape.
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
    E: Copy + Default + Send + Sync,
    SA: Data<Elem = A>,
    SB: Data<Elem = B>,
    SC: Data<Elem = C>,
    D: Dimension,
    F: Fn(A, B, C) -> E + Sync + Send,
{
    check::same_shape("zip3_map", a.shape(), b.shape());
    check::same_shape("zip3_map", a.shape(), c.shape());
    let mut out = Array::from_elem(a.raw_dim(), E::default());
    let body = |o: ArrayViewMut<'_, E, D>,
                a: ndarray::ArrayView<'_, A, D>,
                b: ndarray::ArrayView<'_, B, D>,
                c: ndarray::ArrayView<'_, C, D>| {
        Zip::from(o)
            .and(a)
            .and(b)
            .and(c)
            .for_each(|o, &x, &y, &z| *o = f(x, y, z))
    };
    match par::split_plan(a.shape(), a.len()) {
        Some((ax, k)) => out
            .axis_chunks_iter_mut(ax, k)
            .into_par_iter()
            .zip(a.axis_chunks_iter(ax, k))
            .zip(b.axis_chunks_iter(ax, k))
            .zip(c.axis_chunks_iter(ax, k))
            .for_each(|(((o, x), y), z)| par::nested(|| body(o, x, y, z))),
        None => body(out.view_mut(), a.view(), b.view(), c.view()),
    }
    out
}
