//! Broadcasting, its transpose (summing back to a shape), and the outer
//! product.

use crate::elem::Elem;
use crate::map::zip_map;
use crate::reduce::sum_axis;
use ndarray::{
    Array, Array2, ArrayBase, ArrayView, Axis, CowArray, Data, Dimension, IntoDimension, Ix1, IxDyn,
};

/// A read-only view of `x` broadcast to `shape` with NumPy rules: axes are
/// aligned at the end, missing leading axes are added, and axes of length 1
/// are repeated: `out[i₀, .., iₙ] = x[.., iₖ if xₖ > 1 else 0, ..]`. No data
/// is copied. Panics if the shapes are incompatible.
#[track_caller]
pub fn broadcast_to<T, S, D, E>(x: &ArrayBase<S, D>, shape: E) -> ArrayView<'_, T, E::Dim>
where
    S: Data<Elem = T>,
    D: Dimension,
    E: IntoDimension,
{
    let dim = shape.into_dimension();
    match x.broadcast(dim.clone()) {
        Some(v) => v,
        None => panic!(
            "ad_runtime::broadcast_to: cannot broadcast {:?} to {:?}",
            x.shape(),
            dim.slice()
        ),
    }
}

/// A view of `x` with a new axis of length `len` inserted at position
/// `axis`, repeating `x` along it: `out[.., k, ..] = x[.., ..]` for every
/// `k < len`. The transpose is [`crate::sum_axis`] over the same axis.
/// Panics if `axis > x.ndim()`.
#[track_caller]
pub fn broadcast_axis<T, S, D>(
    x: &ArrayBase<S, D>,
    axis: usize,
    len: usize,
) -> ArrayView<'_, T, D::Larger>
where
    S: Data<Elem = T>,
    D: Dimension,
{
    let nd = x.ndim();
    if axis > nd {
        panic!(
            "ad_runtime::broadcast_axis: axis {axis} out of range for inserting into shape {:?}",
            x.shape()
        );
    }
    // Broadcast with the new axis in front, then move it to `axis`.
    let mut front = D::Larger::zeros(nd + 1);
    front[0] = len;
    for (k, &n) in x.shape().iter().enumerate() {
        front[k + 1] = n;
    }
    let v = x
        .broadcast(front)
        .expect("adding a leading axis always broadcasts");
    let mut perm = D::Larger::zeros(nd + 1);
    for i in 0..=nd {
        perm[i] = match i.cmp(&axis) {
            std::cmp::Ordering::Less => i + 1,
            std::cmp::Ordering::Equal => 0,
            std::cmp::Ordering::Greater => i,
        };
    }
    v.permuted_axes(perm)
}

/// The transpose of [`broadcast_to`]: sums `x` down to `shape`, over the
/// leading axes `x` has in excess and over every axis where `shape` has
/// length 1 and `x` does not. Each axis is summed with [`crate::sum_axis`]
/// (deterministic), leading axes first, then the others left to right.
/// Panics if `x` could not have been broadcast from `shape`.
#[track_caller]
pub fn sum_to_shape<T, S, D, E>(x: &ArrayBase<S, D>, shape: E) -> Array<T, E::Dim>
where
    T: Elem,
    S: Data<Elem = T>,
    D: Dimension,
    E: IntoDimension,
{
    let target = shape.into_dimension();
    let (xs, ts) = (x.shape(), target.slice());
    let lead = xs.len().wrapping_sub(ts.len());
    let ok = ts.len() <= xs.len() && ts.iter().zip(&xs[lead..]).all(|(&t, &s)| t == s || t == 1);
    if !ok {
        panic!("ad_runtime::sum_to_shape: cannot sum {xs:?} to {ts:?}");
    }
    let mut cur: CowArray<'_, T, IxDyn> = x.view().into_dyn().into();
    for _ in 0..lead {
        cur = sum_axis(&cur, 0).into();
    }
    for (i, &t) in ts.iter().enumerate() {
        if t == 1 && cur.shape()[i] != 1 {
            cur = sum_axis(&cur, i).insert_axis(Axis(i)).into();
        }
    }
    cur.into_owned()
        .into_dimensionality::<E::Dim>()
        .expect("sum_to_shape: rank matches the target")
}

/// `x` broadcast to `shape` of the same rank, owned: `x` itself (moved, no
/// copy) when it has that shape, else a copy of [`broadcast_to`] (its axes
/// of length 1 repeated). Panics if the shapes are incompatible.
#[track_caller]
pub fn stretch_owned<T, D, E>(x: Array<T, D>, shape: E) -> Array<T, D>
where
    T: Copy + Send + Sync + 'static,
    D: Dimension,
    E: IntoDimension<Dim = D>,
{
    let target = shape.into_dimension();
    if x.raw_dim() == target {
        return x;
    }
    // A copy whose buffer is pooled when large (`map`); `x`'s goes back.
    let out = crate::map(&broadcast_to(&x, target), |v| v);
    crate::scratch::recycle_any(x);
    out
}

/// [`sum_to_shape`] of `x` when it differs from the target shape, `None`
/// when `x` already has it (nothing to sum: the caller reads `x` itself, no
/// copy).
#[track_caller]
pub fn sum_to_if_needed<T, S, D, E>(x: &ArrayBase<S, D>, shape: E) -> Option<Array<T, E::Dim>>
where
    T: Elem,
    S: Data<Elem = T>,
    D: Dimension,
    E: IntoDimension,
{
    let target = shape.into_dimension();
    (x.shape() != target.slice()).then(|| sum_to_shape(x, target))
}

/// [`sum_to_shape`] of an owned `x` of the target's rank: `x` itself
/// (moved, no copy) when it already has the target shape.
#[track_caller]
pub fn sum_to_owned<T, D, E>(x: Array<T, D>, shape: E) -> Array<T, D>
where
    T: Elem,
    D: Dimension,
    E: IntoDimension<Dim = D>,
{
    let target = shape.into_dimension();
    if x.raw_dim() == target {
        return x;
    }
    let out = sum_to_shape(&x, target);
    crate::scratch::recycle_any(x);
    out
}

/// Outer product `out[i, j] = u[i]·v[j]`.
pub fn outer<T, S1, S2>(u: &ArrayBase<S1, Ix1>, v: &ArrayBase<S2, Ix1>) -> Array2<T>
where
    T: Elem,
    S1: Data<Elem = T>,
    S2: Data<Elem = T>,
{
    let (m, n) = (u.len(), v.len());
    let uc = u.view().insert_axis(Axis(1));
    let uc = uc.broadcast((m, n)).expect("column broadcasts");
    let vr = v.broadcast((m, n)).expect("row broadcasts");
    zip_map(&uc, &vr, |a, b| a * b)
}
