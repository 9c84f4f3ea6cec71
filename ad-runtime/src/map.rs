//! Elementwise kernels: `build`, `map`, `zip_map`, `zip3_map`.
//!
//! Inputs are any `&ArrayBase` (owned arrays, views, strided or transposed
//! views) of the same shape; there is no implicit broadcasting (use
//! [`crate::broadcast_to`] to make a broadcast view). Outputs are new arrays
//! in row-major layout. Work for the parallel threshold: the number of output
//! elements. Elementwise results never depend on the thread count.
//!
//! In parallel, the nesting flag of [`crate::par`] is set once per rayon
//! job (`map_init` / `for_each_init`), not once per element, so kernels the
//! closure calls stay sequential at no per-element cost. Row-major inputs are
//! collected straight into the output vector (no zero fill); other layouts
//! fill a zeroed output through ndarray's parallel `Zip`.

use crate::check;
use crate::par::{self, NestGuard};
use ndarray::{Array, ArrayBase, Data, Dimension, IntoDimension, Zip};
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
    D::Pattern: Send,
    F: Fn(D::Pattern) -> T + Sync + Send,
{
    let dim = shape.into_dimension();
    if !par::go_parallel(dim.size()) {
        return Array::from_shape_fn(dim, f);
    }
    let mut out = Array::from_elem(dim, T::default());
    Zip::indexed(&mut out)
        .into_par_iter()
        .for_each_init(NestGuard::enter, |_, (i, o)| *o = f(i));
    out
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
    if !par::go_parallel(a.len()) {
        return Zip::from(a).map_collect(|&x| f(x));
    }
    if let Some(xs) = a.as_slice() {
        let mut v = Vec::with_capacity(xs.len());
        xs.par_iter()
            .map_init(NestGuard::enter, |_, &x| f(x))
            .collect_into_vec(&mut v);
        return Array::from_shape_vec(a.raw_dim(), v).expect("row-major shape");
    }
    let mut out = Array::from_elem(a.raw_dim(), B::default());
    Zip::from(&mut out)
        .and(a)
        .into_par_iter()
        .for_each_init(NestGuard::enter, |_, (o, &x)| *o = f(x));
    out
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
    C: Copy + Default + Send + Sync,
    SA: Data<Elem = A>,
    SB: Data<Elem = B>,
    D: Dimension,
    F: Fn(A, B) -> C + Sync + Send,
{
    check::same_shape("zip_map", a.shape(), b.shape());
    if !par::go_parallel(a.len()) {
        return Zip::from(a).and(b).map_collect(|&x, &y| f(x, y));
    }
    if let (Some(xs), Some(ys)) = (a.as_slice(), b.as_slice()) {
        let mut v = Vec::with_capacity(xs.len());
        xs.par_iter()
            .zip(ys)
            .map_init(NestGuard::enter, |_, (&x, &y)| f(x, y))
            .collect_into_vec(&mut v);
        return Array::from_shape_vec(a.raw_dim(), v).expect("row-major shape");
    }
    let mut out = Array::from_elem(a.raw_dim(), C::default());
    Zip::from(&mut out)
        .and(a)
        .and(b)
        .into_par_iter()
        .for_each_init(NestGuard::enter, |_, (o, &x, &y)| *o = f(x, y));
    out
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
    E: Copy + Default + Send + Sync,
    SA: Data<Elem = A>,
    SB: Data<Elem = B>,
    SC: Data<Elem = C>,
    D: Dimension,
    F: Fn(A, B, C) -> E + Sync + Send,
{
    check::same_shape("zip3_map", a.shape(), b.shape());
    check::same_shape("zip3_map", a.shape(), c.shape());
    if !par::go_parallel(a.len()) {
        return Zip::from(a)
            .and(b)
            .and(c)
            .map_collect(|&x, &y, &w| f(x, y, w));
    }
    if let (Some(xs), Some(ys), Some(ws)) = (a.as_slice(), b.as_slice(), c.as_slice()) {
        let mut v = Vec::with_capacity(xs.len());
        xs.par_iter()
            .zip(ys)
            .zip(ws)
            .map_init(NestGuard::enter, |_, ((&x, &y), &w)| f(x, y, w))
            .collect_into_vec(&mut v);
        return Array::from_shape_vec(a.raw_dim(), v).expect("row-major shape");
    }
    let mut out = Array::from_elem(a.raw_dim(), E::default());
    Zip::from(&mut out)
        .and(a)
        .and(b)
        .and(c)
        .into_par_iter()
        .for_each_init(NestGuard::enter, |_, (o, &x, &y, &w)| *o = f(x, y, w));
    out
}
