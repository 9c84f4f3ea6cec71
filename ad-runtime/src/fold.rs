//! The deterministic reduction engine behind sums, products, arg-max/min,
//! logsumexp, dot products and matrix-vector products.
//!
//! # The fixed reduction order (`Note [lane order]`)
//!
//! A sequence `x[0..n]` is reduced as follows, whatever the thread count:
//! 1. it is cut into chunks of [`CHUNK`] elements (the last one shorter);
//! 2. inside a chunk, element `k` goes to lane `k % 8`; each lane folds its
//!    elements left to right with `step`, starting from `init`;
//! 3. the 8 lanes are combined by the fixed tree
//!    `((l0·l1)·(l2·l3))·((l4·l5)·(l6·l7))` with `merge`;
//! 4. the chunk results are merged left to right into `init`.
//!
//! Threads only decide who computes which chunk; the arithmetic is the same.
//! A whole-array reduction uses the logical row-major order of the array.
//! An axis reduction applies the same order to every lane along the axis, and
//! when that axis is not contiguous in memory it reaches the same bits by
//! accumulating whole rows into 8 lane arrays (`Note [rows path]`).

use crate::elem::Elem;
use crate::par;
use ndarray::{Array, ArrayBase, ArrayView, Axis, CowArray, Data, Dimension, RemoveAxis, Zip};
use rayon::prelude::*;

/// Number of lanes of a chunk fold.
pub(crate) const LANES: usize = 8;

/// Elements per chunk; a multiple of [`LANES`].
pub(crate) const CHUNK: usize = 8192;

/// Target number of output elements per task of an axis reduction.
const OUT_BLOCK: usize = 4096;

/// A reduction: an accumulator with a per-element `step` and an associative
/// (up to rounding) `merge`. `P` is a per-output parameter (for example the
/// shift of logsumexp); `j` is the index of the element along the reduced
/// sequence.
pub(crate) trait LaneOp<T>: Sync {
    /// Accumulator.
    type Acc: Copy + Send + Sync;
    /// Per-output parameter.
    type P: Copy + Send + Sync;
    /// Accumulator of no element.
    fn init(&self) -> Self::Acc;
    /// Add element `x` with index `j`.
    fn step(&self, acc: Self::Acc, x: T, j: usize, p: Self::P) -> Self::Acc;
    /// Combine an earlier accumulator `a` with a later one `b`.
    fn merge(&self, a: Self::Acc, b: Self::Acc) -> Self::Acc;
}

#[inline(always)]
fn tree<T, O: LaneOp<T>>(op: &O, a: [O::Acc; LANES]) -> O::Acc {
    let l = op.merge(op.merge(a[0], a[1]), op.merge(a[2], a[3]));
    let r = op.merge(op.merge(a[4], a[5]), op.merge(a[6], a[7]));
    op.merge(l, r)
}

/// Lane fold of one chunk held in a slice whose first element has index `base`.
#[inline]
pub(crate) fn fold_slice<T: Copy, O: LaneOp<T>>(op: &O, xs: &[T], base: usize, p: O::P) -> O::Acc {
    let mut acc = [op.init(); LANES];
    let mut it = xs.chunks_exact(LANES);
    let mut j = base;
    for c in &mut it {
        for l in 0..LANES {
            acc[l] = op.step(acc[l], c[l], j + l, p);
        }
        j += LANES;
    }
    for (l, &x) in it.remainder().iter().enumerate() {
        acc[l] = op.step(acc[l], x, j + l, p);
    }
    tree(op, acc)
}

/// Lane fold of one chunk given as an iterator; same bits as [`fold_slice`].
#[inline]
pub(crate) fn fold_iter<T, O: LaneOp<T>>(
    op: &O,
    xs: impl Iterator<Item = T>,
    base: usize,
    p: O::P,
) -> O::Acc {
    let mut acc = [op.init(); LANES];
    for (k, x) in xs.enumerate() {
        acc[k % LANES] = op.step(acc[k % LANES], x, base + k, p);
    }
    tree(op, acc)
}

/// Reduce a contiguous sequence (`Note [lane order]`).
pub(crate) fn reduce_slice<T: Elem, O: LaneOp<T>>(op: &O, xs: &[T], p: O::P) -> O::Acc {
    let n = xs.len();
    let parts = par::map_tasks(n.div_ceil(CHUNK), par::go_parallel(n), |c| {
        let lo = c * CHUNK;
        fold_slice(op, &xs[lo..n.min(lo + CHUNK)], lo, p)
    });
    parts.into_iter().fold(op.init(), |t, x| op.merge(t, x))
}

/// Reduce the logical row-major sequence of `a` (`Note [lane order]`).
pub(crate) fn reduce_flat<T, O, S, D>(op: &O, a: &ArrayBase<S, D>, p: O::P) -> O::Acc
where
    T: Elem,
    O: LaneOp<T>,
    S: Data<Elem = T>,
    D: Dimension,
{
    if let Some(xs) = a.as_slice() {
        return reduce_slice(op, xs, p);
    }
    if let Ok(v) = a.view().into_dimensionality::<ndarray::Ix1>() {
        let n = v.len();
        let parts = par::map_tasks(n.div_ceil(CHUNK), par::go_parallel(n), |c| {
            let lo = c * CHUNK;
            let chunk = v.slice(ndarray::s![lo..n.min(lo + CHUNK)]);
            fold_iter(op, chunk.iter().copied(), lo, p)
        });
        return parts.into_iter().fold(op.init(), |t, x| op.merge(t, x));
    }
    let c = standard(a);
    reduce_slice(op, c.as_slice().expect("standard layout"), p)
}

/// `a` in standard (row-major contiguous) layout, copied in parallel if needed.
pub(crate) fn standard<'a, T, S, D>(a: &'a ArrayBase<S, D>) -> CowArray<'a, T, D>
where
    T: Elem,
    S: Data<Elem = T>,
    D: Dimension,
{
    if a.is_standard_layout() {
        return CowArray::from(a.view());
    }
    let mut out = Array::from_elem(a.raw_dim(), T::ZERO);
    match par::split_plan(a.shape(), a.len()) {
        Some((ax, k)) => out
            .axis_chunks_iter_mut(ax, k)
            .into_par_iter()
            .zip(a.axis_chunks_iter(ax, k))
            .for_each(|(mut o, x)| o.assign(&x)),
        None => out.assign(a),
    }
    CowArray::from(out)
}

/// Reduce `a` along `axis` (`Note [lane order]` for every lane), with the
/// per-output parameters `params` (shape of the output).
pub(crate) fn reduce_axis<T, O, S, D>(
    op: &O,
    a: &ArrayBase<S, D>,
    axis: usize,
    params: ArrayView<'_, O::P, D::Smaller>,
) -> Array<O::Acc, D::Smaller>
where
    T: Elem,
    O: LaneOp<T>,
    S: Data<Elem = T>,
    D: Dimension + RemoveAxis,
{
    let ax = Axis(axis);
    let n = a.len_of(ax);
    let out_dim = a.raw_dim().remove_axis(ax);
    let mut out = Array::from_elem(out_dim.clone(), op.init());
    let out_len = out.len();
    if out_len == 0 || n == 0 {
        return out;
    }
    // Output blocks along the longest output axis (none for a 0-d output).
    let (ob, nb, k) = match (0..out_dim.ndim()).rev().max_by_key(|&i| out_dim[i]) {
        None => (0, 1, 1),
        Some(ob) => {
            let len = out_dim[ob];
            let nb = out_len.div_ceil(OUT_BLOCK).min(len);
            let k = len.div_ceil(nb);
            (ob, len.div_ceil(k), k)
        }
    };
    let ob_a = if ob < axis { ob } else { ob + 1 };
    let has_blocks = out_dim.ndim() > 0;
    let nc = n.div_ceil(CHUNK);
    let a = a.view();
    let parallel = par::go_parallel(a.len());
    let parts = par::map_tasks(nc * nb, parallel, |t| {
        let (c, b) = (t / nb, t % nb);
        let lo = c * CHUNK;
        let mut sub = a.slice_axis(ax, (lo..n.min(lo + CHUNK)).into());
        let mut ps = params.view();
        if has_blocks {
            let r = b * k..out_dim[ob].min((b + 1) * k);
            sub.slice_axis_inplace(Axis(ob_a), r.clone().into());
            ps.slice_axis_inplace(Axis(ob), r.into());
        }
        fold_block(op, sub, ax, lo, ps)
    });
    // Merge the chunk partials of every block in chunk order.
    let combine = |b: usize, mut dst: ndarray::ArrayViewMut<'_, O::Acc, D::Smaller>| {
        for c in 0..nc {
            Zip::from(&mut dst)
                .and(&parts[c * nb + b])
                .for_each(|t, &x| *t = op.merge(*t, x));
        }
    };
    if has_blocks {
        if parallel {
            out.axis_chunks_iter_mut(Axis(ob), k)
                .into_par_iter()
                .enumerate()
                .for_each(|(b, dst)| combine(b, dst));
        } else {
            for (b, dst) in out.axis_chunks_iter_mut(Axis(ob), k).enumerate() {
                combine(b, dst);
            }
        }
    } else {
        combine(0, out.view_mut());
    }
    out
}

/// Partial reduction of one chunk of the reduced axis over one output block.
fn fold_block<T, O, D>(
    op: &O,
    sub: ArrayView<'_, T, D>,
    ax: Axis,
    base: usize,
    ps: ArrayView<'_, O::P, D::Smaller>,
) -> Array<O::Acc, D::Smaller>
where
    T: Elem,
    O: LaneOp<T>,
    D: Dimension + RemoveAxis,
{
    let mut out = Array::from_elem(ps.raw_dim(), op.init());
    let n = sub.len_of(ax);
    let strided = sub.stride_of(ax).unsigned_abs() != 1 && n > 1;
    if !strided || out.len() < 2 * LANES {
        Zip::from(&mut out)
            .and(sub.lanes(ax))
            .and(&ps)
            .for_each(|o, lane, &p| {
                *o = match lane.as_slice() {
                    Some(xs) => fold_slice(op, xs, base, p),
                    None => fold_iter(op, lane.iter().copied(), base, p),
                }
            });
        return out;
    }
    // Note [rows path]: lane l of every output element is the array acc[l];
    // row k of the chunk is added to acc[k % 8]. Each output element sees
    // exactly the arithmetic of `fold_slice` on its lane.
    let mut acc: Vec<Array<O::Acc, D::Smaller>> = (0..LANES).map(|_| out.clone()).collect();
    for (k, row) in sub.axis_iter(ax).enumerate() {
        Zip::from(&mut acc[k % LANES])
            .and(&row)
            .and(&ps)
            .for_each(|a, &x, &p| *a = op.step(*a, x, base + k, p));
    }
    let merge_into = |acc: &mut [Array<O::Acc, D::Smaller>], d: usize, s: usize| {
        let (lo, hi) = acc.split_at_mut(s);
        Zip::from(&mut lo[d])
            .and(&hi[0])
            .for_each(|x, &y| *x = op.merge(*x, y));
    };
    // ((l0·l1)·(l2·l3))·((l4·l5)·(l6·l7)), as in `tree`.
    merge_into(&mut acc, 0, 1);
    merge_into(&mut acc, 2, 3);
    merge_into(&mut acc, 0, 2);
    merge_into(&mut acc, 4, 5);
    merge_into(&mut acc, 6, 7);
    merge_into(&mut acc, 4, 6);
    merge_into(&mut acc, 0, 4);
    acc.swap_remove(0)
}
