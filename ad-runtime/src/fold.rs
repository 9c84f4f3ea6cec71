//! The deterministic reduction engine behind sums, products, arg-max/min,
//! logsumexp, dot products and matrix-vector products.
//!
//! # The fixed reduction order (`Note [lane order]`)
//!
//! A sequence `x[0..n]` is reduced as follows, whatever the thread count:
//! 1. it is cut into chunks of [`CHUNK`] elements (the last one shorter);
//! 2. inside a chunk, element `k` goes to lane `k % 8`; each lane folds its
//!    elements left to right: `first` of its first element, then `step`;
//! 3. the 8 lanes are combined by the fixed tree
//!    `((l0·l1)·(l2·l3))·((l4·l5)·(l6·l7))` with `merge`;
//! 4. the chunk results are merged left to right, starting from the first
//!    (an empty sequence gives `init`).
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
    /// Accumulator of the single element `x`: the first element of a lane.
    #[inline(always)]
    fn first(&self, x: T, j: usize, p: Self::P) -> Self::Acc {
        self.step(self.init(), x, j, p)
    }
    /// [`fold_slice`] of one chunk; an op may override it with a faster
    /// kernel doing exactly the same arithmetic.
    #[inline(always)]
    fn fold_chunk(&self, xs: &[T], base: usize, p: Self::P) -> Self::Acc
    where
        T: Copy,
        Self: Sized,
    {
        fold_slice(self, xs, base, p)
    }
}

#[inline(always)]
pub(crate) fn tree<T, O: LaneOp<T>>(op: &O, a: [O::Acc; LANES]) -> O::Acc {
    let l = op.merge(op.merge(a[0], a[1]), op.merge(a[2], a[3]));
    let r = op.merge(op.merge(a[4], a[5]), op.merge(a[6], a[7]));
    op.merge(l, r)
}

/// Lane fold of one chunk held in a slice whose first element has index
/// `base`: lane `l` starts with `first(xs[l])` and steps through
/// `xs[l + 8], xs[l + 16], ..`; untouched lanes stay `init`.
#[inline]
pub(crate) fn fold_slice<T: Copy, O: LaneOp<T>>(op: &O, xs: &[T], base: usize, p: O::P) -> O::Acc {
    let mut acc = [op.init(); LANES];
    let head = xs.len().min(LANES);
    for (l, &x) in xs[..head].iter().enumerate() {
        acc[l] = op.first(x, base + l, p);
    }
    let mut it = xs[head..].chunks_exact(LANES);
    let mut j = base + LANES;
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
        acc[k % LANES] = if k < LANES {
            op.first(x, base + k, p)
        } else {
            op.step(acc[k % LANES], x, base + k, p)
        };
    }
    tree(op, acc)
}

/// Reduce a contiguous sequence (`Note [lane order]`).
pub(crate) fn reduce_slice<T: Elem, O: LaneOp<T>>(op: &O, xs: &[T], p: O::P) -> O::Acc {
    let n = xs.len();
    let parts = par::map_tasks(n.div_ceil(CHUNK), par::go_parallel(n), |c| {
        let lo = c * CHUNK;
        op.fold_chunk(&xs[lo..n.min(lo + CHUNK)], lo, p)
    });
    merge_in_order(op, parts)
}

/// `((p₀ · p₁) · p₂) · …`; `init` when there is no chunk.
fn merge_in_order<T, O: LaneOp<T>>(op: &O, parts: Vec<O::Acc>) -> O::Acc {
    parts
        .into_iter()
        .reduce(|t, x| op.merge(t, x))
        .unwrap_or_else(|| op.init())
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
        return merge_in_order(op, parts);
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
///
/// Tasks are (chunk of the reduced axis) × (block of outputs); the partials
/// of a block are merged in chunk order. Blocks only change who computes
/// what, never the arithmetic of an output element.
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
    let out_len = out_dim.size();
    if out_len == 0 || n == 0 {
        return Array::from_elem(out_dim, op.init());
    }
    let a = a.view();
    let strided = a.stride_of(ax).unsigned_abs() != 1 && n > 1;
    // Output blocks along the longest output axis (none for a 0-d output),
    // about TASK_WORK input elements per task.
    let (ob, k, nb) = match (0..out_dim.ndim()).rev().max_by_key(|&i| out_dim[i]) {
        None => (0, 1, 1),
        Some(ob) => {
            let len = out_dim[ob];
            let min_width = if strided { ROWS_MIN_WIDTH } else { 1 };
            let want = (out_len * n.min(CHUNK)).div_ceil(TASK_WORK);
            let nb = want.clamp(1, (out_len / min_width).clamp(1, len));
            let k = len.div_ceil(nb);
            (ob, k, len.div_ceil(k))
        }
    };
    let ob_a = if ob < axis { ob } else { ob + 1 };
    let has_blocks = out_dim.ndim() > 0;
    let nc = n.div_ceil(CHUNK);
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
        fold_block(op, sub, ax, lo, ps, strided)
    });
    // Partials of block b are parts[c * nb + b]; merge them in chunk order.
    let mut by_block: Vec<Vec<Array<O::Acc, D::Smaller>>> = (0..nb).map(|_| Vec::new()).collect();
    for (t, p) in parts.into_iter().enumerate() {
        by_block[t % nb].push(p);
    }
    let merge_block = |chunks: Vec<Array<O::Acc, D::Smaller>>| {
        let mut it = chunks.into_iter();
        let mut acc = it.next().expect("at least one chunk");
        for p in it {
            Zip::from(&mut acc)
                .and(&p)
                .for_each(|t, &x| *t = op.merge(*t, x));
        }
        acc
    };
    let mut blocks: Vec<Array<O::Acc, D::Smaller>> = if parallel && nc > 1 && nb > 1 {
        by_block.into_par_iter().map(merge_block).collect()
    } else {
        by_block.into_iter().map(merge_block).collect()
    };
    if blocks.len() == 1 {
        return blocks.pop().expect("one block");
    }
    let mut out = Array::from_elem(out_dim, op.init());
    for (b, blk) in blocks.iter().enumerate() {
        let r = b * k..(b * k + blk.len_of(Axis(ob)));
        out.slice_axis_mut(Axis(ob), r.into()).assign(blk);
    }
    out
}

/// Input elements per task of an axis reduction.
const TASK_WORK: usize = 1 << 15;

/// Narrowest output block of the rows path (`Note [rows path]`).
const ROWS_MIN_WIDTH: usize = 256;

/// Partial reduction of one chunk of the reduced axis over one output block.
fn fold_block<T, O, D>(
    op: &O,
    sub: ArrayView<'_, T, D>,
    ax: Axis,
    base: usize,
    ps: ArrayView<'_, O::P, D::Smaller>,
    strided: bool,
) -> Array<O::Acc, D::Smaller>
where
    T: Elem,
    O: LaneOp<T>,
    D: Dimension + RemoveAxis,
{
    let w = ps.len();
    if !strided || w < 2 * LANES {
        return Zip::from(&ps)
            .and(sub.lanes(ax))
            .map_collect(|&p, lane| match lane.as_slice() {
                Some(xs) => op.fold_chunk(xs, base, p),
                None => fold_iter(op, lane.iter().copied(), base, p),
            });
    }
    // Note [rows path]: lane l of every output element lives in the l-th
    // section of `acc`; row k of the chunk goes to lane k % 8 (`first` for
    // k < 8, `step` after), and the lanes are merged by the tree of
    // `fold_slice`. Each output element sees exactly the arithmetic of
    // `fold_slice` on its lane.
    let step_row =
        |lane: &mut [O::Acc], row: ArrayView<'_, T, D::Smaller>, ps: &[O::P], k: usize| {
            let j = base + k;
            match row.as_slice() {
                Some(r) if k < LANES => {
                    for ((a, &x), &p) in lane.iter_mut().zip(r).zip(ps) {
                        *a = op.first(x, j, p);
                    }
                }
                Some(r) => {
                    for ((a, &x), &p) in lane.iter_mut().zip(r).zip(ps) {
                        *a = op.step(*a, x, j, p);
                    }
                }
                None => {
                    for ((a, &x), &p) in lane.iter_mut().zip(row.iter()).zip(ps) {
                        *a = if k < LANES {
                            op.first(x, j, p)
                        } else {
                            op.step(*a, x, j, p)
                        };
                    }
                }
            }
        };
    let ps_vec: Vec<O::P> = ps.iter().copied().collect();
    let mut acc = vec![op.init(); LANES * w];
    for (k, row) in sub.axis_iter(ax).enumerate() {
        let l = k % LANES;
        step_row(&mut acc[l * w..(l + 1) * w], row, &ps_vec, k);
    }
    let merge_into = |acc: &mut [O::Acc], d: usize, s: usize| {
        let (lo, hi) = acc.split_at_mut(s * w);
        for (x, &y) in lo[d * w..(d + 1) * w].iter_mut().zip(&hi[..w]) {
            *x = op.merge(*x, y);
        }
    };
    // ((l0·l1)·(l2·l3))·((l4·l5)·(l6·l7)), as in `tree`.
    merge_into(&mut acc, 0, 1);
    merge_into(&mut acc, 2, 3);
    merge_into(&mut acc, 0, 2);
    merge_into(&mut acc, 4, 5);
    merge_into(&mut acc, 6, 7);
    merge_into(&mut acc, 4, 6);
    merge_into(&mut acc, 0, 4);
    acc.truncate(w);
    Array::from_shape_vec(ps.raw_dim(), acc).expect("block shape")
}
