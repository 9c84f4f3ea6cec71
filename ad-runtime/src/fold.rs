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
//!    `(((l0·l4)·(l1·l5))·(l2·l6))·(l3·l7)` with `merge` (an order that
//!    compilers vectorise without lane shuffles);
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
use ndarray::{Array, ArrayBase, ArrayView, Axis, CowArray, Data, Dimension, RemoveAxis};

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
    type Acc: Copy + Send + Sync + 'static;
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

/// The fixed lane tree `(((l0·l4)·(l1·l5))·(l2·l6))·(l3·l7)`.
#[inline(always)]
pub(crate) fn tree<T, O: LaneOp<T>>(op: &O, a: [O::Acc; LANES]) -> O::Acc {
    let s = op.merge(op.merge(a[0], a[4]), op.merge(a[1], a[5]));
    let s = op.merge(s, op.merge(a[2], a[6]));
    op.merge(s, op.merge(a[3], a[7]))
}

/// Lane fold of one chunk held in a slice whose first element has index
/// `base`: lane `l` starts with `first(xs[l])` and steps through
/// `xs[l + 8], xs[l + 16], ..`; untouched lanes stay `init`.
#[inline]
pub(crate) fn fold_slice<T: Copy, O: LaneOp<T>>(op: &O, xs: &[T], base: usize, p: O::P) -> O::Acc {
    // Lane indices are loop constants everywhere (no `acc[dynamic]`), so the
    // lanes stay in registers and vectorise.
    let mut acc = [op.init(); LANES];
    let head = xs.len().min(LANES);
    for l in 0..LANES {
        if l < head {
            acc[l] = op.first(xs[l], base + l, p);
        }
    }
    let mut it = xs[head..].chunks_exact(LANES);
    let mut j = base + LANES;
    for c in &mut it {
        for l in 0..LANES {
            acc[l] = op.step(acc[l], c[l], j + l, p);
        }
        j += LANES;
    }
    let rem = it.remainder();
    for l in 0..LANES {
        if l < rem.len() {
            acc[l] = op.step(acc[l], rem[l], j + l, p);
        }
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
    if n > 0 && n <= CHUNK {
        return op.fold_chunk(xs, 0, p);
    }
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
        Some((ax, k)) => par::for_each_item(
            out.axis_chunks_iter_mut(ax, k)
                .zip(a.axis_chunks_iter(ax, k))
                .collect(),
            true,
            |(mut o, x)| o.assign(&x),
        ),
        None => out.assign(a),
    }
    CowArray::from(out)
}

/// Reduce `a` along `axis` (`Note [lane order]` for every lane), with the
/// per-output parameters `params` (shape of the output).
///
/// Tasks are (chunk of the reduced axis) × (block of outputs), and on the
/// rows path also × lane; partial results are merged by the lane tree and
/// then in chunk order. Blocks and tasks only change who computes what,
/// never the arithmetic of an output element.
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
    // Note [rows path]: when the reduced axis is not contiguous, whole rows
    // (index_axis(axis, k)) are streamed into per-lane accumulator rows;
    // wide outputs only, unless the rows are the consecutive rows of a
    // row-major buffer (`fold_rows_flat`: a group of 8 is one pass).
    let rows = a.stride_of(ax).unsigned_abs() != 1
        && n > 1
        && (out_len >= 2 * LANES || (axis == 0 && a.is_standard_layout()));
    let parallel = par::go_parallel(a.len());
    // Output blocks along the longest output axis (none for a 0-d output).
    let (ob, k, nb) = match (0..out_dim.ndim()).rev().max_by_key(|&i| out_dim[i]) {
        None => (0, 1, 1),
        Some(ob) => {
            let len = out_dim[ob];
            // Blocks bound the lane buffers of the rows path, and give the
            // lane path its parallel tasks; a sequential lane path needs none.
            let want = if rows {
                out_len.div_ceil(ROWS_BLOCK)
            } else if parallel {
                (out_len * n.min(CHUNK)).div_ceil(TASK_WORK)
            } else {
                1
            };
            let k = len.div_ceil(want.clamp(1, len));
            (ob, k, len.div_ceil(k))
        }
    };
    let ob_a = if ob < axis { ob } else { ob + 1 };
    let nc = n.div_ceil(CHUNK);
    // In parallel the rows path makes one task per lane; sequentially one
    // In parallel the rows path splits the 8 lanes into ROW_GROUPS tasks
    // (each reads runs of consecutive rows); sequentially one pass over the
    // rows feeds all 8 lanes (better locality, fewer buffers).
    let lanes = if rows && parallel { ROW_GROUPS } else { 1 };
    let block = |c: usize, b: usize| {
        let lo = c * CHUNK;
        let mut sub = a.slice_axis(ax, (lo..n.min(lo + CHUNK)).into());
        let mut ps = params.view();
        if nb > 1 {
            let r = b * k..out_dim[ob].min((b + 1) * k);
            sub.slice_axis_inplace(Axis(ob_a), r.clone().into());
            ps.slice_axis_inplace(Axis(ob), r.into());
        }
        (sub, ps, lo)
    };
    // Task t = (c, b, l): chunk c, output block b, lane l (rows path only).
    let parts = par::map_tasks(nc * nb * lanes, parallel, |t| {
        let (c, b, l) = (t / (nb * lanes), t / lanes % nb, t % lanes);
        let (sub, ps, base) = block(c, b);
        if rows && lanes > 1 {
            let per = LANES / lanes;
            fold_rows_lane(op, sub, ax, base, ps, l * per, per)
        } else if rows {
            let mut all = fold_rows_lane(op, sub, ax, base, ps, 0, LANES);
            tree_in_place(op, &mut all);
            all
        } else {
            fold_lanes(op, sub, ax, base, ps)
        }
    });
    if parts.len() == 1 {
        let v = parts.into_iter().next().expect("one task");
        return Array::from_shape_vec(out_dim, v).expect("output shape");
    }
    // Group the partials by block: by_block[b][c * lanes + l].
    let mut by_block: Vec<Vec<Vec<O::Acc>>> = (0..nb).map(|_| Vec::new()).collect();
    for (t, p) in parts.into_iter().enumerate() {
        by_block[t / lanes % nb].push(p);
    }
    let merge_block = |parts: Vec<Vec<O::Acc>>| {
        let chunks: Vec<Vec<O::Acc>> = if lanes == 1 {
            parts
        } else {
            // The groups of a chunk hold lanes 0..8 back to back.
            parts
                .chunks(lanes)
                .map(|groups| {
                    let mut all = groups.concat();
                    tree_in_place(op, &mut all);
                    all
                })
                .collect()
        };
        let mut chunks = chunks.into_iter();
        let mut acc = chunks.next().expect("at least one chunk");
        for p in chunks {
            for (t, x) in acc.iter_mut().zip(p) {
                *t = op.merge(*t, x);
            }
        }
        acc
    };
    let mut blocks: Vec<Vec<O::Acc>> = par::map_items(by_block, parallel, merge_block);
    if nb == 1 {
        let v = blocks.pop().expect("one block");
        return Array::from_shape_vec(out_dim, v).expect("output shape");
    }
    let mut out = Array::from_elem(out_dim.clone(), op.init());
    for (b, v) in blocks.iter().enumerate() {
        let r = b * k..out_dim[ob].min((b + 1) * k);
        let mut dst = out.slice_axis_mut(Axis(ob), r.into());
        let src = ArrayView::from_shape(dst.raw_dim(), v).expect("block shape");
        dst.assign(&src);
    }
    out
}

/// Parallel tasks per chunk and output block of the rows path; each takes
/// `8 / ROW_GROUPS` consecutive lanes.
const ROW_GROUPS: usize = 2;

/// Input elements per task of an axis reduction along contiguous lanes.
const TASK_WORK: usize = 1 << 15;

/// Output elements per block of the rows path.
const ROWS_BLOCK: usize = 1 << 15;

/// Lane path: every output element folds its own lane of the chunk; the
/// result is in logical (row-major) order of the output block.
fn fold_lanes<T, O, D>(
    op: &O,
    sub: ArrayView<'_, T, D>,
    ax: Axis,
    base: usize,
    ps: ArrayView<'_, O::P, D::Smaller>,
) -> Vec<O::Acc>
where
    T: Elem,
    O: LaneOp<T>,
    D: Dimension + RemoveAxis,
{
    let n = sub.len_of(ax);
    if let (Some(xs), true) = (sub.as_slice(), ax.index() + 1 == sub.ndim()) {
        // Row-major with the reduced axis last: lanes are consecutive runs.
        if n > 0 {
            let lanes = xs.chunks_exact(n);
            // A broadcast parameter (all strides 0, e.g. `()`) is one value.
            if let (true, Some(&p)) = (ps.strides().iter().all(|&s| s == 0), ps.iter().next()) {
                return lanes.map(|lane| op.fold_chunk(lane, base, p)).collect();
            }
            return lanes
                .zip(ps.iter())
                .map(|(lane, &p)| op.fold_chunk(lane, base, p))
                .collect();
        }
    }
    ps.iter()
        .zip(sub.lanes(ax))
        .map(|(&p, lane)| match lane.as_slice() {
            Some(xs) => op.fold_chunk(xs, base, p),
            None => fold_iter(op, lane.iter().copied(), base, p),
        })
        .collect()
}

/// Rows path over one chunk, for `count` consecutive lanes starting at lane
/// `l0`: lane `l` takes rows `l, l + 8, ...` of the chunk (`first` on row
/// `l`, `step` after) and stays `init` if the chunk has no row `l`. Returns
/// the `count` lane rows back to back, each in logical order of the output
/// block.
fn fold_rows_lane<T, O, D>(
    op: &O,
    sub: ArrayView<'_, T, D>,
    ax: Axis,
    base: usize,
    ps: ArrayView<'_, O::P, D::Smaller>,
    l0: usize,
    count: usize,
) -> Vec<O::Acc>
where
    T: Elem,
    O: LaneOp<T>,
    D: Dimension + RemoveAxis,
{
    let ps = param_vec(ps);
    let w = ps.len();
    // Pooled when large: the lane rows are as long as the output.
    let mut accs = crate::scratch::output_filled(w * count, op.init());
    let rows = sub.len_of(ax);
    // Row-major with the reduced axis first: row k is a slice of the buffer.
    let flat = if ax.index() == 0 {
        sub.as_slice()
    } else {
        None
    };
    if let Some(xs) = flat {
        fold_rows_flat(op, xs, w, base, &ps, l0, &mut accs);
        return accs;
    }
    let mine = (0..rows).filter(|k| k % LANES >= l0 && k % LANES < l0 + count);
    for k in mine {
        let l = k % LANES - l0;
        let acc = &mut accs[l * w..(l + 1) * w][..w];
        let j = base + k;
        let view;
        let r = match flat {
            Some(xs) => Some(&xs[k * w..(k + 1) * w]),
            None => {
                view = sub.index_axis(ax, k);
                view.as_slice()
            }
        };
        match (r, k < LANES) {
            (Some(r), true) => {
                let (r, ps) = (&r[..w], &ps[..w]);
                for i in 0..w {
                    acc[i] = op.first(r[i], j, ps[i]);
                }
            }
            (Some(r), false) => {
                let (r, ps) = (&r[..w], &ps[..w]);
                for i in 0..w {
                    acc[i] = op.step(acc[i], r[i], j, ps[i]);
                }
            }
            (None, first) => {
                let row = sub.index_axis(ax, k);
                for ((a, &x), &p) in acc.iter_mut().zip(row.iter()).zip(&ps) {
                    *a = if first {
                        op.first(x, j, p)
                    } else {
                        op.step(*a, x, j, p)
                    };
                }
            }
        }
    }
    accs
}

/// [`fold_rows_lane`] over a row-major buffer `xs` of rows of `w`
/// elements, for the `accs.len() / w` lanes from `l0`: rows `8g + l0 ..`
/// of every group of 8 rows lie back to back as the lane rows do in
/// `accs`, so each group is one elementwise pass over `accs` (a plain
/// vector add for a sum). The same arithmetic, in the same order per
/// output element, as the row-by-row loop.
fn fold_rows_flat<T, O>(
    op: &O,
    xs: &[T],
    w: usize,
    base: usize,
    ps: &[O::P],
    l0: usize,
    accs: &mut [O::Acc],
) where
    T: Elem,
    O: LaneOp<T>,
{
    let count = accs.len() / w.max(1);
    if w == 0 || count == 0 {
        return;
    }
    let rows = xs.len() / w;
    let span = count * w;
    // The parameters of every lane row back to back, as `accs`.
    let pz: Vec<O::P> = (0..count).flat_map(|_| ps.iter().copied()).collect();
    let groups = rows / LANES;
    for g in 0..groups {
        let lo = (g * LANES + l0) * w;
        let group = &xs[lo..lo + span];
        let j0 = base + g * LANES + l0;
        let (mut l, mut i) = (0, 0);
        for ((a, &x), &p) in accs.iter_mut().zip(group).zip(&pz) {
            *a = if g == 0 {
                op.first(x, j0 + l, p)
            } else {
                op.step(*a, x, j0 + l, p)
            };
            i += 1;
            if i == w {
                i = 0;
                l += 1;
            }
        }
    }
    // The last rows, fewer than 8: each its lane's next (or first) row.
    for k in groups * LANES..rows {
        let l = k % LANES;
        if l < l0 || l >= l0 + count {
            continue;
        }
        let acc = &mut accs[(l - l0) * w..(l - l0 + 1) * w];
        let row = &xs[k * w..(k + 1) * w];
        for ((a, &x), &p) in acc.iter_mut().zip(row).zip(ps) {
            *a = if k < LANES {
                op.first(x, base + k, p)
            } else {
                op.step(*a, x, base + k, p)
            };
        }
    }
}

/// The lane tree of [`tree`], elementwise over 8 lane rows stored back to
/// back in `acc`, leaving the result in the first row and truncating `acc`.
fn tree_in_place<T, O: LaneOp<T>>(op: &O, acc: &mut Vec<O::Acc>) {
    let w = acc.len() / LANES;
    let mut merge_into = |d: usize, s: usize| {
        let (lo, hi) = acc.split_at_mut(s * w);
        for (x, &y) in lo[d * w..(d + 1) * w].iter_mut().zip(&hi[..w]) {
            *x = op.merge(*x, y);
        }
    };
    // In the order of `tree`.
    merge_into(0, 4);
    merge_into(1, 5);
    merge_into(2, 6);
    merge_into(3, 7);
    merge_into(0, 1);
    merge_into(0, 2);
    merge_into(0, 3);
    acc.truncate(w);
}

/// The parameters of an output block as a vector in logical order; a
/// broadcast view (all strides 0, such as the `()` of most ops) is one value
/// repeated, without walking the view.
fn param_vec<P: Copy, E: Dimension>(ps: ArrayView<'_, P, E>) -> Vec<P> {
    if ps.strides().iter().all(|&s| s == 0) {
        if let Some(&p) = ps.iter().next() {
            return vec![p; ps.len()];
        }
    }
    ps.iter().copied().collect()
}
