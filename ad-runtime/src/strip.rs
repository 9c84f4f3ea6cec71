//! Strip-mined builds: blocks of [`LANES`] consecutive indices of axis 0
//! computed by one call of a lane closure.
//!
//! The macro emits a build whose body runs inner loops with trip counts
//! independent of its first index twice: once as the scalar closure `f(idx)`
//! and once as a lane closure `g(idx)` that computes the elements at
//! `idx[0] + l` for `l` in `0..LANES` together, every per-index scalar held
//! as `[T; LANES]` (`ad-macros/src/emit/strip.rs`). The lanes are independent
//! dependency chains the processor overlaps (and that LLVM may put in vector
//! registers); each lane performs exactly the operations of `f` at its
//! index, in the same order, so the result is the same bits as
//! `build(shape, f)`.
//!
//! ```text
//! build [n, m] |i, j| body   =>   for i0 in (0..n).step_by(LANES): for j: out[i0 + l, j] = g(i0, j)[l]
//!                                 remainder rows (n % LANES): one more block ending at row n - 1
//!                                 (n < LANES: out[i, j] = f(i, j))
//! ```

use crate::map::unravel;
use crate::par;
use crate::scratch::{Pooled, Scratch};
use ndarray::{Array, Dimension, IntoDimension};
use std::borrow::Cow;

/// How many indices of axis 0 one call of a lane closure computes.
pub const LANES: usize = 32;

// `tile_of` fills a lane tile four lanes at a time.
const _: () = assert!(LANES.is_multiple_of(4));

// `lanes_sum`'s balanced tree halves the lanes level by level.
const _: () = assert!(LANES.is_power_of_two());

/// Longest rows [`LaneRows`] copies into a tile: 256 columns of [`LANES`]
/// lanes are 64 KiB of `f64`. Longer rows are read in place: a tile of
/// them outgrows the caches closest to the core, and a loop reading each element once
/// (a row times a vector) spent more on the copy than it saved (the linear
/// map of a 33 x 2,000 matrix-vector build: 570 us tiled, 75 us for 31
/// rows unblocked).
pub const TILE_MAX_COLUMNS: usize = 256;

/// Whether [`LaneRows`] of `a`'s rows (its last axis, as `lane1`..`lane3`
/// read them) may be a tile: rows of at most [`TILE_MAX_COLUMNS`]
/// elements. A strip-mined build whose lanes would read longer rows in
/// place runs its scalar code instead (the emitter's guard).
pub fn lane_rows_fit<S: ndarray::RawData, D: Dimension>(a: &ndarray::ArrayBase<S, D>) -> bool {
    a.shape().last().is_none_or(|&w| w <= TILE_MAX_COLUMNS)
}

/// `out[idx] = f(idx)` for every index of `shape`, computed for blocks of
/// [`LANES`] rows by `g`: `g(idx)[l] == f(idx with idx[0] + l)` for every
/// `l`, bit for bit (the emitter's invariant). Rows past the last full block
/// are computed by one more block ending at the last row (it overlaps the
/// block before; the rows both cover keep their first value, the same
/// bits), or by `f` when there are fewer than [`LANES`] rows. Parallel over
/// blocks of rows (a multiple of [`LANES`] per task) when `size ·
/// work_per_elem` reaches the threshold; the blocks change who computes an
/// element, never its value.
pub fn build_lanes<T, Sh, D, F, G>(shape: Sh, work_per_elem: usize, f: F, g: G) -> Array<T, D>
where
    T: Copy + Default + Send + Sync + 'static,
    Sh: IntoDimension<Dim = D>,
    D: Dimension + Copy,
    D::Pattern: Send,
    F: Fn(D::Pattern) -> T + Sync + Send,
    G: Fn(D::Pattern) -> [T; LANES] + Sync + Send,
{
    build_lanes_ctx(shape, work_per_elem, f, |_| (), |_: &(), idx| g(idx))
}

/// [`build_lanes`] with a per-block context: `ctx(i0)` is made once per
/// block of [`LANES`] rows starting at row `i0` (the rows of an input the
/// lanes read, say, held as [`LaneRows`]) and passed to every call
/// `g(&ctx, idx)` of that block, whatever the other indices. The same
/// contract: `g(&ctx(i0), idx)[l] == f(idx with idx[0] + l)`, bit for bit.
pub fn build_lanes_ctx<T, Sh, D, F, C, X, G>(
    shape: Sh,
    work_per_elem: usize,
    f: F,
    ctx: X,
    g: G,
) -> Array<T, D>
where
    T: Copy + Default + Send + Sync + 'static,
    Sh: IntoDimension<Dim = D>,
    D: Dimension + Copy,
    D::Pattern: Send,
    F: Fn(D::Pattern) -> T + Sync + Send,
    X: Fn(usize) -> C + Sync + Send,
    G: Fn(&C, D::Pattern) -> [T; LANES] + Sync + Send,
{
    let dim = shape.into_dimension();
    let size = dim.size();
    let mut out = crate::scratch::output_filled(size, T::default());
    let rows = if dim.ndim() == 0 { 0 } else { dim[0] };
    if size == 0 || rows == 0 {
        return Array::from_shape_vec(dim, out).expect("row-major shape");
    }
    let row_len = size / rows;
    // The block of LANES rows starting at row `s`, its lanes `skip..`
    // written to the chunk that starts at row `r0` (`s + skip >= r0`).
    let block = |chunk: &mut [T], r0: usize, s: usize, skip: usize| {
        let c = ctx(s);
        for q in 0..row_len {
            let v = g(&c, unravel(&dim, s * row_len + q));
            for (l, x) in v.into_iter().enumerate().skip(skip) {
                chunk[(s + l - r0) * row_len + q] = x;
            }
        }
    };
    // Rows `r0..` of the output, `chunk` holding whole rows; `r0` is a
    // multiple of LANES.
    let fill = |chunk: &mut [T], r0: usize| {
        let nr = chunk.len() / row_len;
        let full = nr / LANES * LANES;
        for b in (0..full).step_by(LANES) {
            block(chunk, r0, r0 + b, 0);
        }
        if full == nr {
            return;
        }
        // The remainder: when the build has LANES rows up to the chunk's
        // end, one more block ending there (overlapping rows already
        // written, which it recomputes to the same bits and leaves alone);
        // else `f` row by row.
        if r0 + nr >= LANES {
            let s = r0 + nr - LANES;
            block(chunk, r0, s, r0 + full - s);
        } else {
            for r in full..nr {
                for q in 0..row_len {
                    chunk[r * row_len + q] = f(unravel(&dim, (r0 + r) * row_len + q));
                }
            }
        }
    };
    if par::go_parallel(size.saturating_mul(work_per_elem.max(1))) {
        let per_task = par::rows_per_task(rows).div_ceil(LANES) * LANES;
        let items: Vec<(usize, &mut [T])> = out
            .chunks_mut(per_task * row_len)
            .enumerate()
            .map(|(t, c)| (t * per_task, c))
            .collect();
        par::for_each_item(items, true, |(r0, chunk)| fill(chunk, r0));
    } else {
        fill(&mut out, 0);
    }
    Array::from_shape_vec(dim, out).expect("row-major shape")
}

/// The rows a strip-mined loop reads in each of its [`LANES`] lanes (row
/// `i0 + l` of `x` for lane `l`, say), read one column at a time.
///
/// When the rows are short next to the work of the loop reading them (at
/// most `4 · max(trip, 16)` elements, `trip` being that loop's trip count)
/// and short enough for the tile to stay small (at most
/// [`TILE_MAX_COLUMNS`] elements: 64 KiB of `f64`) they are copied once into a column-major
/// tile (`tile[k · LANES + l]`), so that a column of all lanes is one
/// contiguous load; otherwise they are read in place. The tile is a
/// per-thread reused buffer ([`Scratch`]).
/// A read past the shortest row panics, as the element read it replaces
/// would in that lane.
// One per block, on the stack for the block's loop: boxing the rows (768
// bytes at 32 lanes) would allocate once per block.
#[allow(clippy::large_enum_variant)]
pub enum LaneRows<'a, T: Pooled> {
    /// Column-major copy of the rows' first `w` elements (`w` the shortest
    /// row's length).
    Tile(Scratch<T>),
    /// The rows as they are, when one of them is not a slice of its array
    /// (a strided row `lane2` copied).
    Rows([Cow<'a, [T]>; LANES]),
    /// The rows in place, each cut to the shortest row's length.
    Slices([&'a [T]; LANES]),
}

impl<'a, T: Pooled> LaneRows<'a, T> {
    /// The rows of the lanes (`row(l)` is lane `l`'s), read by a loop of
    /// `trip` iterations. A tile is filled one row at a time, each row
    /// taken when it is copied: no array of the eight rows is built (one,
    /// built here or by the caller, is reloaded in halves of what was just
    /// stored, a stall on store forwarding: HAND's Jacobian 1.93 against
    /// 1.70 ms). So `row` runs twice per lane, to measure and to copy; a
    /// strided row (copied by `lane2`) is copied twice.
    pub fn new(row: impl Fn(usize) -> Cow<'a, [T]>, trip: usize) -> Self {
        let w = (0..LANES).map(|l| row(l).len()).min().unwrap_or(0);
        if !tiled(w, trip) {
            let rows: [Cow<'a, [T]>; LANES] = std::array::from_fn(row);
            let mut slices: [&'a [T]; LANES] = [&[]; LANES];
            for (l, s) in slices.iter_mut().enumerate() {
                match &rows[l] {
                    Cow::Borrowed(r) => *s = &r[..w],
                    Cow::Owned(_) => return LaneRows::Rows(rows),
                }
            }
            return LaneRows::Slices(slices);
        }
        LaneRows::Tile(tile_of(w, row))
    }

    /// [`LaneRows::new`] for rows of a matrix, `row(l) = lane2(a, index(l))`:
    /// the same lanes, the rows sliced out of `a`'s buffer when `a` is in
    /// standard layout and every index is in range (else through
    /// [`crate::lane2`], as `new` takes them). A tile is made for each block
    /// of a strip-mined build or loop: taking each row twice through a view
    /// (to measure it, then to copy it) cost more than copying a short row
    /// (HAND's rest positions: 3 values a row).
    pub fn of_matrix<S: ndarray::Data<Elem = T>>(
        a: &'a ndarray::ArrayBase<S, ndarray::Ix2>,
        index: impl Fn(usize) -> usize,
        trip: usize,
    ) -> Self {
        let rows: [usize; LANES] = std::array::from_fn(&index);
        let (n, w) = a.dim();
        let buf = a.as_slice().filter(|_| rows.iter().all(|&r| r < n));
        let Some(buf) = buf else {
            return Self::new(|l| crate::lane2(a, rows[l]), trip);
        };
        let row = |l: usize| &buf[rows[l] * w..][..w];
        if !tiled(w, trip) {
            return LaneRows::Slices(std::array::from_fn(row));
        }
        LaneRows::Tile(tile_of(w, row))
    }

    /// Column `k` of every lane: `[rows[0][k], .., rows[LANES - 1][k]]`.
    #[inline(always)]
    pub fn at(&self, k: usize) -> [T; LANES] {
        match self {
            LaneRows::Tile(t) => lanes_at(t, k),
            LaneRows::Rows(r) => std::array::from_fn(|l| r[l][k]),
            LaneRows::Slices(r) => std::array::from_fn(|l| r[l][k]),
        }
    }
}

/// Whether rows of `w` elements read by a loop of `trip` iterations are
/// copied into a tile (short next to the loop's work, and at most
/// [`TILE_MAX_COLUMNS`]) rather than read in place.
fn tiled(w: usize, trip: usize) -> bool {
    w <= 4 * trip.max(16) && w <= TILE_MAX_COLUMNS
}

/// The column-major tile of the lanes' rows cut to `w` elements:
/// `tile[k · LANES + l] = row(l)[k]`, each row taken once. Four lanes at a
/// time: each column gets four adjacent values instead of four stores a
/// column apart (`LANES` is a multiple of four, asserted beside it).
fn tile_of<T: Pooled, R: std::ops::Deref<Target = [T]>>(
    w: usize,
    row: impl Fn(usize) -> R,
) -> Scratch<T> {
    let mut tile = Scratch::<T>::new();
    tile.reset_for_overwrite(w * LANES);
    for l in (0..LANES).step_by(4) {
        let (r0, r1, r2, r3) = (row(l), row(l + 1), row(l + 2), row(l + 3));
        let (r0, r1, r2, r3) = (&r0[..w], &r1[..w], &r2[..w], &r3[..w]);
        for (k, col) in tile.chunks_exact_mut(LANES).enumerate() {
            col[l..l + 4].copy_from_slice(&[r0[k], r1[k], r2[k], r3[k]]);
        }
    }
    tile
}

/// The columns of a matrix held as contiguous rows (`column k` of `a` at
/// `k · a.nrows()..`), copied once per call of a generated function whose
/// strip-mined loop runs inside a loop over another index and reads
/// `a[i, k]` with `i` the strip-mined index (the interchanged reverse of a
/// build over points and components): a block of [`LANES`] consecutive
/// `i` at column `k` is then one contiguous load ([`LaneCols`]), where
/// [`LaneRows`] would copy the block's rows once per outer iteration.
pub struct Columns<T> {
    /// `a`'s transpose in standard layout.
    t: ndarray::Array2<T>,
}

impl<T: Copy> Columns<T> {
    /// The columns of `a`.
    pub fn new<S: ndarray::Data<Elem = T>>(a: &ndarray::ArrayBase<S, ndarray::Ix2>) -> Self {
        Columns {
            t: a.t().as_standard_layout().into_owned(),
        }
    }

    /// Rows `i0..i0 + LANES`, read a column at a time by [`LaneCols::at`].
    #[inline]
    pub fn block(&self, i0: usize) -> LaneCols<'_, T> {
        LaneCols {
            data: self.t.as_slice().expect("standard layout"),
            rows: self.t.ncols(),
            i0,
        }
    }
}

/// [`LANES`] consecutive rows of a matrix whose [`Columns`] were taken.
pub struct LaneCols<'a, T> {
    data: &'a [T],
    rows: usize,
    i0: usize,
}

impl<T: Copy> LaneCols<'_, T> {
    /// Column `k` of the block's rows: `[a[[i0, k]], .., a[[i0 + LANES - 1, k]]]`.
    /// Panics, as the element reads it replaces would, when `k` is not a
    /// column or the block runs past the last row.
    #[inline(always)]
    pub fn at(&self, k: usize) -> [T; LANES] {
        let col = &self.data[k * self.rows..][..self.rows];
        let c = &col[self.i0..self.i0 + LANES];
        std::array::from_fn(|l| c[l])
    }
}

impl LaneCols<'_, f64> {
    /// `tab[k · LANES + l] = self.at(k)[l] - lane[k]` for every column `k`
    /// of the block that `lane` also has: the differences `x[i, k] - m[k]`
    /// of the block's points and an invariant row, which a strip-mined body
    /// reads at many `(r, k)` (a triangular product over `x - m`), computed
    /// once per block into the reused buffer `tab` (the same operation on
    /// the same values: the same bits). Read them with [`lanes_at`].
    pub fn differences<'t>(&self, tab: &'t mut Scratch<f64>, lane: &[f64]) -> &'t [f64] {
        let n = self.data.len() / self.rows.max(1);
        differences(
            n,
            |k| {
                let col = &self.data[k * self.rows..][..self.rows];
                &col[self.i0..self.i0 + LANES]
            },
            tab,
            lane,
        )
    }
}

impl LaneRows<'_, f64> {
    /// [`LaneCols::differences`] for the rows of a block: `tab[k · LANES +
    /// l] = self.at(k)[l] - lane[k]` for every column `k` the rows (all of
    /// them) and `lane` have, once per run of the strip-mined loop that
    /// reads `x[i, k] - m[k]` at many `(r, k)` (a forward triangular
    /// product over `x - m`). The same bits as the subtractions it replaces.
    pub fn differences<'t>(&self, tab: &'t mut Scratch<f64>, lane: &[f64]) -> &'t [f64] {
        let width = |r: &[&[f64]]| r.iter().map(|r| r.len()).min().unwrap_or(0);
        match self {
            LaneRows::Tile(t) => {
                differences(t.len() / LANES, |k| &t[k * LANES..][..LANES], tab, lane)
            }
            LaneRows::Rows(r) => {
                let rows: [&[f64]; LANES] = std::array::from_fn(|l| &r[l][..]);
                differences(
                    width(&rows),
                    |k| -> [f64; LANES] { std::array::from_fn(|l| rows[l][k]) },
                    tab,
                    lane,
                )
            }
            LaneRows::Slices(r) => differences(
                width(r),
                |k| -> [f64; LANES] { std::array::from_fn(|l| r[l][k]) },
                tab,
                lane,
            ),
        }
    }
}

/// `tab[k · LANES + l] = col(k)[l] - lane[k]` for `k < min(width,
/// lane.len())` (see [`LaneCols::differences`]): `col(k)` is column `k` of
/// the [`LANES`] lanes, a slice of a tile or of copied columns, or gathered
/// from rows as an array. The subtractions run over the column as a slice,
/// which LLVM vectorises for contiguous columns (built as `[f64; LANES]`
/// values and written lane by lane, they stayed scalar: 16% of GMM's
/// `f_vjp` at d = 10). The same operations, the same bits.
#[inline(always)]
fn differences<'t, C: AsRef<[f64]>>(
    width: usize,
    col: impl Fn(usize) -> C,
    tab: &'t mut Scratch<f64>,
    lane: &[f64],
) -> &'t [f64] {
    let n = width.min(lane.len());
    tab.reset_for_overwrite(n * LANES);
    for (k, (out, &m)) in tab.chunks_exact_mut(LANES).zip(lane).enumerate() {
        for (o, &x) in out.iter_mut().zip(col(k).as_ref()) {
            *o = x - m;
        }
    }
    &tab[..]
}

/// Lanes `k · LANES .. (k + 1) · LANES` of a lane-major table (a
/// [`LaneRows`] tile, a table made by [`LaneCols::differences`]); panics
/// past its end (where one of the reads it replaces would have).
#[inline(always)]
pub fn lanes_at<T: Copy>(tab: &[T], k: usize) -> [T; LANES] {
    let c = &tab[k * LANES..][..LANES];
    std::array::from_fn(|l| c[l])
}

/// The sum of the lanes of a strip-mined value, pairwise in a fixed order:
/// a balanced tree that adds the upper half of the lanes to the lower half
/// level by level (for 8 lanes `((x0 + x4) + (x2 + x6)) + ((x1 + x5) +
/// (x3 + x7))`), so that every level is whole vector additions (pairing
/// neighbours instead, `x0 + x1`, shuffled every pair within a register:
/// GMM's reverse nest spent most of its lane sums on the shuffles).
/// Generated reverse passes add it to an accumulator once per block of
/// [`LANES`] iterations.
#[inline]
pub fn lanes_sum(x: [f64; LANES]) -> f64 {
    // Level by level: `v[l] = v[l] + v[l + w]` for the lower half `l < w`;
    // the reads are of this level's values (`l + w >= w` is not written).
    let mut v = x;
    let mut w = LANES;
    while w > 1 {
        w /= 2;
        for l in 0..w {
            v[l] += v[l + w];
        }
    }
    v[0]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build;

    /// `lanes_sum` adds every lane (integers: exact whatever the order), in
    /// a balanced tree whose first level adds lane `l + LANES / 2` to lane
    /// `l`: with `1e16, 1` in lanes 0, 1 and `-1e16, 1` in lanes
    /// `LANES / 2`, `LANES / 2 + 1`, `(1e16 + -1e16) + (1 + 1) = 2`
    /// (neighbours first would give `(1e16 + 1) + (-1e16 + 1) = 0`, left to
    /// right 1).
    #[test]
    fn lanes_sum_adds_every_lane_pairwise() {
        let x: [f64; LANES] = std::array::from_fn(|l| (l + 1) as f64);
        assert_eq!(lanes_sum(x), (LANES * (LANES + 1) / 2) as f64);
        let mut y = [0.0; LANES];
        (y[0], y[1], y[LANES / 2], y[LANES / 2 + 1]) = (1e16, 1.0, -1e16, 1.0);
        assert_eq!(lanes_sum(y), 2.0);
        let mut z = [0.0; LANES];
        z[LANES - 1] = 2.5;
        assert_eq!(lanes_sum(z), 2.5);
    }

    /// A block's column differences are `x[i, k] - m[k]` for the columns
    /// both have, read back a column at a time; past them a read panics.
    #[test]
    fn column_differences_of_a_block() {
        let x = ndarray::Array2::from_shape_fn((LANES + 3, 3), |(i, k)| (i * 3 + k) as f64 * 0.5);
        let cols = Columns::new(&x);
        let mut tab = Scratch::<f64>::new();
        let m = [0.25, -1.0];
        let t = cols.block(2).differences(&mut tab, &m);
        assert_eq!(t.len(), 2 * LANES);
        for k in 0..2 {
            let want: [f64; LANES] = std::array::from_fn(|l| x[[2 + l, k]] - m[k]);
            assert_eq!(lanes_at(t, k), want);
        }
        assert!(std::panic::catch_unwind(|| lanes_at(t, 2)).is_err());
        // A block running past the last row panics, as its reads would.
        let past = std::panic::catch_unwind(|| {
            let mut tab = Scratch::<f64>::new();
            cols.block(4).differences(&mut tab, &m).len()
        });
        assert!(past.is_err());
    }

    /// The rows' differences with a row, whichever way the rows are held
    /// (a tile, in place, owned copies): over the columns both have.
    #[test]
    fn row_differences_of_a_block() {
        let x: Vec<Vec<f64>> = (0..LANES)
            .map(|l| (0..6).map(|k| (l * 10 + k) as f64 * 0.25).collect())
            .collect();
        let m = [0.5, -1.0, 2.0, 0.125];
        let held = [
            LaneRows::new(|l| Cow::Borrowed(&x[l][..]), 30),
            LaneRows::new(|l| Cow::Borrowed(&x[l][..]), 1),
            LaneRows::new(|l| Cow::Owned(x[l].clone()), 1),
        ];
        for rows in &held {
            let mut tab = Scratch::<f64>::new();
            let t = rows.differences(&mut tab, &m);
            assert_eq!(t.len(), 4 * LANES);
            for (k, mk) in m.iter().enumerate() {
                let want: [f64; LANES] = std::array::from_fn(|l| x[l][k] - mk);
                assert_eq!(lanes_at(t, k), want);
            }
            let mut tab = Scratch::<f64>::new();
            assert_eq!(rows.differences(&mut tab, &[0.0; 9]).len(), 6 * LANES);
        }
    }

    fn lanes2(f: impl Fn((usize, usize)) -> f64) -> impl Fn((usize, usize)) -> [f64; LANES] {
        move |(i0, j)| std::array::from_fn(|l| f((i0 + l, j)))
    }

    /// Every element comes from the lane closure at its block's first row
    /// (or from `f` in the remainder), in any shape and with or without
    /// threads.
    #[test]
    fn equals_the_scalar_build() {
        let f = |(i, j): (usize, usize)| (i * 31 + j) as f64 * 0.5;
        for (n, m) in [(0, 3), (3, 0), (1, 1), (7, 2), (8, 3), (17, 5), (100, 1)] {
            let want = build((n, m), f);
            for threshold in [usize::MAX, 1] {
                let old = par::par_threshold();
                par::set_par_threshold(threshold);
                let got = build_lanes((n, m), 1, f, lanes2(f));
                par::set_par_threshold(old);
                assert_eq!(got, want, "{n}x{m}");
            }
        }
        let f1 = |i: usize| i as f64;
        let got = build_lanes(19, 1, f1, |i0: usize| {
            std::array::from_fn(|l| (i0 + l) as f64)
        });
        assert_eq!(got, build(19, f1));
    }

    /// Who computes what: whole blocks and the remainder of a build of at
    /// least `LANES` rows by `g` (the remainder in a last block ending at
    /// the last row), every row of a shorter build by `f`; in parallel too
    /// (only the last task has a remainder).
    #[test]
    fn the_remainder_is_a_last_block_when_there_are_enough_rows() {
        let f = |i: usize| -(i as f64);
        let g = |i0: usize| std::array::from_fn(|l| (i0 + l) as f64);
        for n in [LANES - 1, LANES, LANES + 1, 2 * LANES + 5, 10 * LANES + 3] {
            for threshold in [usize::MAX, 1] {
                let old = par::par_threshold();
                par::set_par_threshold(threshold);
                let got = build_lanes(n, 1, f, g);
                par::set_par_threshold(old);
                let by_g = n >= LANES;
                for (i, v) in got.iter().enumerate() {
                    assert_eq!(*v, if by_g { i as f64 } else { f(i) }, "n {n} row {i}");
                }
            }
        }
    }

    /// A tile and rows read in place give the same columns.
    #[test]
    fn lane_rows_read_columns() {
        let x: Vec<Vec<f64>> = (0..LANES)
            .map(|l| (0..100).map(|k| (l * 1000 + k) as f64).collect())
            .collect();
        let rows = |l: usize| Cow::Borrowed(&x[l][..]);
        let tile = LaneRows::new(rows, 30);
        let inplace = LaneRows::new(rows, 1);
        let owned = LaneRows::new(|l| Cow::Owned(x[l].clone()), 1);
        assert!(matches!(tile, LaneRows::Tile(_)) && matches!(inplace, LaneRows::Slices(_)));
        assert!(matches!(owned, LaneRows::Rows(_)));
        for k in 0..100usize {
            let want: [f64; LANES] = std::array::from_fn(|l| (l * 1000 + k) as f64);
            assert_eq!(tile.at(k), want);
            assert_eq!(inplace.at(k), want);
            assert_eq!(owned.at(k), want);
        }
        assert!(std::panic::catch_unwind(|| tile.at(100)).is_err());
        assert!(std::panic::catch_unwind(|| inplace.at(100)).is_err());
        assert!(std::panic::catch_unwind(|| owned.at(100)).is_err());
        // Rows longer than a tile holds are read in place however much
        // the loop reads them.
        let long: Vec<Vec<f64>> = (0..LANES)
            .map(|l| (0..=TILE_MAX_COLUMNS).map(|k| (l + k) as f64).collect())
            .collect();
        let held = LaneRows::new(|l| Cow::Borrowed(&long[l][..TILE_MAX_COLUMNS]), usize::MAX);
        let inplace = LaneRows::new(|l| Cow::Borrowed(&long[l][..]), usize::MAX);
        assert!(matches!(held, LaneRows::Tile(_)) && matches!(inplace, LaneRows::Slices(_)));
        assert_eq!(
            inplace.at(TILE_MAX_COLUMNS),
            std::array::from_fn(|l| (l + TILE_MAX_COLUMNS) as f64)
        );
        // Rows of different lengths: the tile holds the shortest row's
        // columns, each column from every row.
        let ragged: Vec<Vec<f64>> = (0..LANES)
            .map(|l| (0..20 + l).map(|k| (l * 1000 + k) as f64).collect())
            .collect();
        let tile = LaneRows::new(|l| Cow::Borrowed(&ragged[l][..]), 30);
        assert!(matches!(tile, LaneRows::Tile(_)));
        for k in 0..20usize {
            let want: [f64; LANES] = std::array::from_fn(|l| (l * 1000 + k) as f64);
            assert_eq!(tile.at(k), want);
        }
        assert!(std::panic::catch_unwind(|| tile.at(20)).is_err());
    }

    /// The rows of a matrix give the lanes `new` gives through `lane2`: in
    /// a tile, in place, from a matrix not in standard layout, and with an
    /// index past the last row (empty lanes: no column).
    #[test]
    fn matrix_rows_are_the_lanes_of_lane2() {
        let a = ndarray::Array2::from_shape_fn((2 * LANES + 3, 7), |(i, k)| (i * 100 + k) as f64);
        let same = |x: &LaneRows<f64>, y: &LaneRows<f64>, w: usize| {
            for k in 0..w {
                assert_eq!(x.at(k), y.at(k), "column {k}");
            }
            assert!(std::panic::catch_unwind(|| x.at(w)).is_err());
            assert!(std::panic::catch_unwind(|| y.at(w)).is_err());
        };
        let rows = |l: usize| (3 * l + 1) % a.nrows();
        for trip in [1, 30] {
            let want = LaneRows::new(|l| crate::lane2(&a, rows(l)), trip);
            let got = LaneRows::of_matrix(&a, rows, trip);
            assert_eq!(
                matches!(got, LaneRows::Tile(_)),
                matches!(want, LaneRows::Tile(_))
            );
            same(&got, &want, 7);
            let t = a.t();
            let want = LaneRows::new(|l| crate::lane2(&t, l % 7), trip);
            same(&LaneRows::of_matrix(&t, |l| l % 7, trip), &want, a.nrows());
        }
        let past = LaneRows::of_matrix(&a, |l| l + a.nrows() - 1, 30);
        same(
            &past,
            &LaneRows::new(|l| crate::lane2(&a, l + a.nrows() - 1), 30),
            0,
        );
    }

    /// The guard on a build's lane closure: rows (the last axis) of at most
    /// `TILE_MAX_COLUMNS` elements; an array of no axis has none.
    #[test]
    fn rows_fit_a_tile_up_to_its_columns() {
        let fits = |shape: &[usize]| lane_rows_fit(&ndarray::ArrayD::<f64>::zeros(shape));
        assert!(fits(&[3, TILE_MAX_COLUMNS]) && fits(&[2, 2, 1]) && fits(&[]) && fits(&[0]));
        assert!(!fits(&[3, TILE_MAX_COLUMNS + 1]) && !fits(&[1, 1, 1000]));
        // The logical shape counts: a transposed 1000 x 4 has rows of 1000.
        assert!(!lane_rows_fit(
            &ndarray::Array2::<f64>::zeros((1000, 4)).t()
        ));
    }

    /// A block of columns reads the rows' elements; past the last column
    /// or row it panics.
    #[test]
    fn columns_read_blocks_of_rows() {
        let n = 2 * LANES + 11;
        let a = ndarray::Array2::from_shape_fn((n, 3), |(i, k)| (i * 10 + k) as f64);
        let cols = Columns::new(&a.view());
        for i0 in [0, 5, 11] {
            for k in 0..3 {
                let want: [f64; LANES] = std::array::from_fn(|l| a[[i0 + l, k]]);
                assert_eq!(cols.block(i0).at(k), want);
            }
        }
        let strided = a.slice(ndarray::s![..;2, ..]);
        let cols = Columns::new(&strided);
        assert_eq!(
            cols.block(1).at(2),
            std::array::from_fn(|l| strided[[1 + l, 2]])
        );
        assert!(std::panic::catch_unwind(|| Columns::new(&a).block(0).at(3)).is_err());
        assert!(std::panic::catch_unwind(|| Columns::new(&a).block(n - LANES + 1).at(0)).is_err());
    }

    /// The context is made once per block (the last one ending at the last
    /// row), from the block's first row, and every call of the block gets it.
    #[test]
    fn the_context_is_made_once_per_block() {
        let f = |(i, j): (usize, usize)| (i * 10 + j) as f64;
        let made = std::sync::atomic::AtomicUsize::new(0);
        let got = build_lanes_ctx(
            (2 * LANES + 3, 4),
            1,
            f,
            |i0| {
                made.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                i0
            },
            |i0: &usize, (i, j): (usize, usize)| {
                assert_eq!(*i0, i);
                std::array::from_fn(|l| f((i + l, j)))
            },
        );
        assert_eq!(got, build((2 * LANES + 3, 4), f));
        assert_eq!(made.into_inner(), 3);
    }

    /// In two dimensions too: a build of at least `LANES` rows goes through
    /// `g` whole (its remainder in a last block), a shorter one through `f`.
    #[test]
    fn full_blocks_use_the_lane_closure() {
        let f = |_: (usize, usize)| 1.0;
        let g = |_: (usize, usize)| [2.0; LANES];
        let got = build_lanes((LANES + 2, 2), 1, f, g);
        assert!(got.iter().all(|&x| x == 2.0), "{got:?}");
        let got = build_lanes((LANES - 1, 2), 1, f, g);
        assert!(got.iter().all(|&x| x == 1.0), "{got:?}");
    }
}
