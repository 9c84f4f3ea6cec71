//! Prefix sums: inclusive, exclusive and reverse (suffix) inclusive scans of
//! rank-1 arrays, and the same scans along an axis.
//!
//! # The fixed scan order (`Note [scan order]`)
//!
//! The sequence (read backwards for the reverse scan) is cut into chunks of
//! 8192 elements. The offset of chunk `c` is `(t₀ + t₁) + … + t_{c-1}` (0 for
//! the first chunk)
//! where `tₖ` is the total of chunk `k` summed in the fixed lane order of
//! `Note [lane order]` (fold.rs). Inside a chunk, starting from its offset
//! `s`, elements are taken in groups of four `y₀..y₃`:
//! `out = s+y₀, s+(y₀+y₁), s+((y₀+y₁)+y₂), s+((y₀+y₁)+(y₂+y₃))`, and the
//! last value is the `s` of the next group. The running dependency is one
//! addition per four elements, and the chunk offsets make chunks independent,
//! so the scan runs in parallel with the same bits for any thread count.
//! The exclusive scan is the inclusive scan shifted right by one:
//! `excl[0] = 0`, `excl[j] = incl[j-1]` bit for bit.
//!
//! Work for the parallel threshold: the number of elements.

use crate::check;
use crate::elem::Elem;
use crate::fold::{fold_iter, fold_slice, tree, LaneOp, CHUNK, LANES};
use crate::par;
use ndarray::{
    Array, Array1, ArrayBase, ArrayView1, ArrayViewMut1, Axis, Data, Dimension, Ix1, Zip,
};
use std::mem::MaybeUninit;

/// Which scan [`scan_axis`] computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScanKind {
    /// `out[j] = Σ_{i ≤ j} x[i]`.
    Inclusive,
    /// `out[j] = Σ_{i < j} x[i]` (`out[0] = 0`).
    Exclusive,
    /// `out[j] = Σ_{i ≥ j} x[i]` (suffix sums).
    ReverseInclusive,
}

/// Inclusive prefix sum: `out[j] = Σ_{i ≤ j} x[i]` (`Note [scan order]`).
pub fn scan_inclusive<T, S>(x: &ArrayBase<S, Ix1>) -> Array1<T>
where
    T: Elem,
    S: Data<Elem = T>,
{
    scan1(x.view(), ScanKind::Inclusive, par::go_parallel(x.len()))
}

/// Exclusive prefix sum: `out[0] = 0`, `out[j] = Σ_{i < j} x[i]`.
pub fn scan_exclusive<T, S>(x: &ArrayBase<S, Ix1>) -> Array1<T>
where
    T: Elem,
    S: Data<Elem = T>,
{
    scan1(x.view(), ScanKind::Exclusive, par::go_parallel(x.len()))
}

/// Reverse inclusive (suffix) scan: `out[j] = Σ_{i ≥ j} x[i]`.
pub fn scan_reverse<T, S>(x: &ArrayBase<S, Ix1>) -> Array1<T>
where
    T: Elem,
    S: Data<Elem = T>,
{
    scan1(
        x.view(),
        ScanKind::ReverseInclusive,
        par::go_parallel(x.len()),
    )
}

/// The scan `kind` along `axis` of `a`, for every lane: for
/// [`ScanKind::Inclusive`], `out[.., j, ..] = Σ_{i ≤ j} a[.., i, ..]`.
/// Each lane gets exactly the bits of the rank-1 scan of that lane.
#[track_caller]
pub fn scan_axis<T, S, D>(a: &ArrayBase<S, D>, axis: usize, kind: ScanKind) -> Array<T, D>
where
    T: Elem,
    S: Data<Elem = T>,
    D: Dimension,
{
    check::axis_in_range("scan_axis", axis, a.shape());
    let ax = Axis(axis);
    let mut out = Array::from_elem(a.raw_dim(), T::ZERO);
    let n = a.len_of(ax);
    if n == 0 || a.is_empty() {
        return out;
    }
    let lanes = a.len() / n;
    let parallel = par::go_parallel(a.len());
    let one = |x: ArrayView1<'_, T>, mut o: ArrayViewMut1<'_, T>, parallel: bool| {
        o.assign(&scan1(x, kind, parallel));
    };
    if parallel && lanes >= 2 && lanes >= n / CHUNK {
        let items = out.lanes_mut(ax).into_iter().zip(a.lanes(ax)).collect();
        par::for_each_item(items, true, |(o, x)| one(x, o, false));
    } else {
        Zip::from(out.lanes_mut(ax))
            .and(a.lanes(ax))
            .for_each(|o, x| one(x, o, parallel));
    }
    out
}

fn scan1<T: Elem>(x: ArrayView1<'_, T>, kind: ScanKind, parallel: bool) -> Array1<T> {
    let owned;
    let xs = match x.as_slice() {
        Some(xs) => xs,
        None => {
            owned = x.to_vec();
            &owned[..]
        }
    };
    let n = xs.len();
    let mut out: Vec<T> = Vec::with_capacity(n);
    let buf = &mut out.spare_capacity_mut()[..n];
    match kind {
        ScanKind::Inclusive => scan_into(xs, buf, false, parallel),
        ScanKind::ReverseInclusive => scan_into(xs, buf, true, parallel),
        ScanKind::Exclusive if n > 0 => {
            buf[0].write(T::ZERO);
            scan_into(&xs[..n - 1], &mut buf[1..], false, parallel);
        }
        ScanKind::Exclusive => {}
    }
    // SAFETY: the first `n` elements of the capacity are initialised.
    // `scan_into(xs, buf, ..)` asserts `buf.len() == xs.len()` and hands every
    // element of `buf` to exactly one `scan_chunk_*` call: sequentially the
    // chunk ranges `range(0), .., range(nc - 1)` tile `0..n`; in parallel
    // `par_(r)chunks_mut(CHUNK)` of `buf` is zipped with the same chunking of
    // `xs`, which has the same length. Each `scan_chunk_*` asserts its two
    // slices have equal length and writes every element of its output (all
    // full groups of four, then the remainder). The exclusive scan writes
    // `buf[0]` itself and the rest through `scan_into`. `T: Copy`, so if a
    // panic unwinds before this point nothing needs dropping and the vector
    // still has length 0.
    #[allow(unsafe_code)]
    unsafe {
        out.set_len(n)
    };
    Array1::from_vec(out)
}

/// `x + y` as a lane op, for chunk totals.
struct Add;

impl<T: Elem> LaneOp<T> for Add {
    type Acc = T;
    type P = ();
    #[inline(always)]
    fn init(&self) -> T {
        T::ZERO
    }
    #[inline(always)]
    fn step(&self, acc: T, x: T, _: usize, _: ()) -> T {
        acc + x
    }
    #[inline(always)]
    fn merge(&self, a: T, b: T) -> T {
        a + b
    }
}

/// Inclusive scan of `xs` into `out` (same length), forwards or backwards.
fn scan_into<T: Elem>(xs: &[T], out: &mut [MaybeUninit<T>], rev: bool, parallel: bool) {
    let n = xs.len();
    assert_eq!(out.len(), n, "scan output length");
    let nc = n.div_ceil(CHUNK);
    // Chunk c in scan order, as a range of memory positions.
    let range = |c: usize| {
        if rev {
            n.saturating_sub((c + 1) * CHUNK)..n - c * CHUNK
        } else {
            c * CHUNK..n.min((c + 1) * CHUNK)
        }
    };
    let total = |c: usize| {
        let r = range(c);
        if rev {
            total_rev(&xs[r])
        } else {
            total_fwd(&xs[r])
        }
    };
    let body = |x: &[T], o: &mut [MaybeUninit<T>], s: T| {
        if rev {
            scan_chunk_rev(x, o, s);
        } else {
            scan_chunk_fwd(x, o, s);
        }
    };
    if !parallel || nc <= 1 {
        // One pass: scan a chunk, then total it while it is still in cache.
        let mut s = T::ZERO;
        for c in 0..nc {
            let r = range(c);
            body(&xs[r.clone()], &mut out[r], s);
            if c + 1 < nc {
                let t = total(c);
                s = if c == 0 { t } else { s + t };
            }
        }
        return;
    }
    // offsets = [0, t₀, t₀ + t₁, ...]
    let totals = par::map_tasks(nc - 1, true, total);
    let mut offsets = Vec::with_capacity(nc);
    offsets.push(T::ZERO);
    for (c, t) in totals.into_iter().enumerate() {
        offsets.push(if c == 0 { t } else { offsets[c] + t });
    }
    let items: Vec<_> = if rev {
        out.rchunks_mut(CHUNK)
            .zip(xs.rchunks(CHUNK))
            .enumerate()
            .collect()
    } else {
        out.chunks_mut(CHUNK)
            .zip(xs.chunks(CHUNK))
            .enumerate()
            .collect()
    };
    par::for_each_item(items, true, |(c, (o, x))| body(x, o, offsets[c]));
}

/// The lane fold of `xs` (`Note [lane order]`), as a plain 8-lane loop when
/// the length is a multiple of 8 (`first` of `Add` is `0 + x`).
fn total_fwd<T: Elem>(xs: &[T]) -> T {
    if !xs.len().is_multiple_of(LANES) {
        return fold_slice(&Add, xs, 0, ());
    }
    let mut acc = [T::ZERO; LANES];
    for c in xs.chunks_exact(LANES) {
        for l in 0..LANES {
            acc[l] = acc[l] + c[l];
        }
    }
    tree(&Add, acc)
}

/// The lane fold of `xs` read backwards (`Note [lane order]`), without a
/// reversed iterator when the length is a multiple of 8: element `m` of a
/// group of 8 is reversed element `7 - m`, so it goes to lane `7 - m`.
fn total_rev<T: Elem>(xs: &[T]) -> T {
    if !xs.len().is_multiple_of(LANES) {
        return fold_iter(&Add, xs.iter().rev().copied(), 0, ());
    }
    let mut acc = [T::ZERO; LANES];
    for c in xs.chunks_exact(LANES).rev() {
        for l in 0..LANES {
            acc[l] = acc[l] + c[LANES - 1 - l];
        }
    }
    tree(&Add, acc)
}

/// Outputs of one group `y` (1 to 4 elements in scan order) from offset `s`:
/// `s+y₀, s+(y₀+y₁), s+((y₀+y₁)+y₂), s+((y₀+y₁)+(y₂+y₃))`.
#[inline(always)]
fn group<T: Elem>(s: T, y: [T; 4]) -> [T; 4] {
    let p01 = y[0] + y[1];
    [
        s + y[0],
        s + p01,
        s + (p01 + y[2]),
        s + (p01 + (y[2] + y[3])),
    ]
}

/// Scan one chunk forwards from offset `s`; writes every element of `out`
/// (`xs.len() == out.len()`).
fn scan_chunk_fwd<T: Elem>(xs: &[T], out: &mut [MaybeUninit<T>], mut s: T) {
    assert_eq!(xs.len(), out.len(), "scan chunk length");
    let mut xi = xs.chunks_exact(4);
    let mut oi = out.chunks_exact_mut(4);
    for (x, o) in (&mut xi).zip(&mut oi) {
        let g = group(s, [x[0], x[1], x[2], x[3]]);
        // Stored last to first like `scan_chunk_rev`: the compiler then keeps
        // the running sum in scalar registers instead of building vectors
        // around it (which lengthens the dependency chain).
        o[3].write(g[3]);
        o[2].write(g[2]);
        o[1].write(g[1]);
        o[0].write(g[0]);
        s = g[3];
    }
    let (x, o) = (xi.remainder(), oi.into_remainder());
    let mut y = [T::ZERO; 4];
    y[..x.len()].copy_from_slice(x);
    for (o, g) in o.iter_mut().zip(group(s, y)) {
        o.write(g);
    }
}

/// Scan one chunk backwards from offset `s`; writes every element of `out`
/// (`xs.len() == out.len()`).
fn scan_chunk_rev<T: Elem>(xs: &[T], out: &mut [MaybeUninit<T>], mut s: T) {
    assert_eq!(xs.len(), out.len(), "scan chunk length");
    let mut xi = xs.rchunks_exact(4);
    let mut oi = out.rchunks_exact_mut(4);
    for (x, o) in (&mut xi).zip(&mut oi) {
        let g = group(s, [x[3], x[2], x[1], x[0]]);
        o[3].write(g[0]);
        o[2].write(g[1]);
        o[1].write(g[2]);
        o[0].write(g[3]);
        s = g[3];
    }
    let (x, o) = (xi.remainder(), oi.into_remainder());
    let r = x.len();
    let mut y = [T::ZERO; 4];
    for k in 0..r {
        y[k] = x[r - 1 - k];
    }
    let g = group(s, y);
    for k in 0..r {
        o[r - 1 - k].write(g[k]);
    }
}

/// Inclusive prefix (suffix when `reverse`) sums of `i64`s along axis 0:
/// exact, so sequential (integer sums do not depend on the order).
pub fn scan_i64(a: ndarray::ArrayViewD<'_, i64>, reverse: bool) -> ndarray::ArrayD<i64> {
    let mut out = a.to_owned();
    let n = out.shape().first().copied().unwrap_or(0);
    for step in 1..n {
        let (prev, k) = if reverse {
            (n - step, n - 1 - step)
        } else {
            (step - 1, step)
        };
        let p = out.index_axis(Axis(0), prev).to_owned();
        let mut row = out.index_axis_mut(Axis(0), k);
        row += &p;
    }
    out
}
