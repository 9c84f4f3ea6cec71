//! Elementwise passes over broadcast inputs in blocks of contiguous slices.
//!
//! NumPy-style code broadcasts: `&xc * &diag` with `diag` a row stretched
//! over the rows of `xc` (strides `[0, 1]`), `&z * &w` with `w` a column
//! stretched along the rows (`[1, 0]`), `x * 2.0` with a scalar stretched
//! over everything. ndarray's `Zip` walks such inputs with run-time
//! strides, one short row at a time, a loop LLVM does not vectorise: the
//! reverse pass of the NumPy-style GMM spent 18% of its time there.
//!
//! Here every input is read as a slice of one *block* of the row-major
//! output (at most [`BLOCK`] elements: whole rows, or a piece of one long
//! row):
//!
//! ```text
//! input            strides (2-D)   block of rows r..r+m
//! standard layout  [d, 1]          the input's own slice
//! row broadcast    [0, 1]          the row repeated m times (made once per call)
//! value per row    [1, 0]          each row's value repeated d times (per block)
//! ```
//!
//! so the body runs over equal-length slices, a loop that vectorises.
//! Each element is computed by the same closure from the same values in any
//! walk, so results are the same bits as the `Zip` walk's.

use crate::check;
use crate::layout::{layout_of, pooled_for_overwrite_in, result_order};
use crate::par;
use crate::scratch::{output_vec, recycle_vec_any, Pooled};
use crate::zip_pass::zip_pass;
use ndarray::{Array, ArrayBase, Axis, Data, Dimension, Slice, Zip};

/// Most elements of one block: the stack buffers of broadcast inputs hold
/// this many (2 KB of `f64`, in L1 with the block's other slices).
pub(crate) const BLOCK: usize = 256;

/// A block of the row-major output: `len` elements from flat index
/// `start`, either whole rows from `row` on (`whole`: `len` a multiple of
/// the row length) or a piece of row `row` from column `col`.
pub(crate) struct Block {
    start: usize,
    len: usize,
    row: usize,
    col: usize,
    whole: bool,
}

/// The length of the rows (the last axis; 1 for a 0-d array).
pub(crate) fn row_len<D: Dimension>(dim: &D) -> usize {
    dim.slice().last().copied().unwrap_or(1)
}

/// Calls `f` on consecutive blocks covering `0..total` in order: groups of
/// `BLOCK / row_len` whole rows when rows are at most [`BLOCK`] long, else
/// pieces of one row at most [`BLOCK`] long.
pub(crate) fn for_each_block(total: usize, row_len: usize, mut f: impl FnMut(&Block)) {
    if total == 0 || row_len == 0 {
        return;
    }
    let rows = total / row_len;
    if row_len <= BLOCK {
        let m = BLOCK / row_len;
        let mut r = 0;
        while r < rows {
            let q = m.min(rows - r);
            f(&Block {
                start: r * row_len,
                len: q * row_len,
                row: r,
                col: 0,
                whole: true,
            });
            r += q;
        }
    } else {
        for r in 0..rows {
            let mut c = 0;
            while c < row_len {
                let len = BLOCK.min(row_len - c);
                f(&Block {
                    start: r * row_len + c,
                    len,
                    row: r,
                    col: c,
                    whole: false,
                });
                c += len;
            }
        }
    }
}

/// How an input is read block by block.
enum Kind<'a, A> {
    /// Standard layout: its elements in row-major order.
    Flat(&'a [A]),
    /// Every row the same slice (the last axis has stride 1, the others 0).
    Row(&'a [A]),
    /// Every row one value, `vals[row]` (the last axis has stride 0, the
    /// others are a standard layout).
    Splat(&'a [A]),
}

/// One input of a blocked pass and its buffer (a row repeated, or values
/// repeated along their rows).
pub(crate) struct Src<'a, A: 'static> {
    kind: Kind<'a, A>,
    /// A broadcast input's elements of the current block: empty for a
    /// `Flat` input, else taken from the per-thread pool at the first
    /// [`Src::fill`] (given back when the pass ends) and made as long as the
    /// longest block (`min(elements, BLOCK)`: a 25-element map called once
    /// per row of a matrix writes 25 values per call, not [`BLOCK`]).
    buf: Vec<A>,
    /// The longest block of this input's array.
    cap: usize,
    /// Whether `buf` holds the row repeated (made once, for `Row`).
    tiled: bool,
}

impl<'a, A: Copy + 'static> Src<'a, A> {
    /// `a` read by blocks, or `None` when it is neither in standard layout
    /// nor a broadcast of the two kinds above (then the caller walks it
    /// with `Zip`). An empty array is `None`.
    pub(crate) fn of<S: Data<Elem = A>, D: Dimension>(a: &'a ArrayBase<S, D>) -> Option<Self> {
        // Classified first: an input the walk cannot read fills no buffer.
        let kind = Kind::of(a)?;
        a.first()?;
        Some(Src {
            buf: Vec::new(),
            cap: a.len().min(BLOCK),
            kind,
            tiled: false,
        })
    }
}

impl<'a, A: Copy> Kind<'a, A> {
    /// How `a` is read by blocks ([`Src::of`]).
    fn of<S: Data<Elem = A>, D: Dimension>(a: &'a ArrayBase<S, D>) -> Option<Self> {
        Some(if let Some(xs) = a.as_slice() {
            Kind::Flat(xs)
        } else if a.ndim() == 0 {
            return None;
        } else {
            let n = a.ndim();
            let (shape, strides) = (a.shape(), a.strides());
            let last_unit = shape[n - 1] <= 1 || strides[n - 1] == 1;
            let others_zero = (0..n - 1).all(|k| shape[k] <= 1 || strides[k] == 0);
            if last_unit && others_zero {
                Kind::Row(a.rows().into_iter().next()?.to_slice()?)
            } else if shape[n - 1] > 1 && strides[n - 1] == 0 {
                Kind::Splat(a.slice_axis(Axis(n - 1), Slice::from(0..1)).to_slice()?)
            } else {
                return None;
            }
        })
    }
}

impl<'a, A: Copy + 'static> Src<'a, A> {
    /// Whether the input is its own slice (no buffer).
    pub(crate) fn is_flat(&self) -> bool {
        matches!(self.kind, Kind::Flat(_))
    }

    /// Prepares the buffer for block `b` (rows of `row_len` elements).
    #[inline]
    pub(crate) fn fill(&mut self, b: &Block, row_len: usize) {
        match self.kind {
            Kind::Flat(_) => {}
            Kind::Row(row) => {
                if b.whole && !self.tiled {
                    self.buf = output_vec(self.cap);
                    while self.buf.len() + row_len <= self.cap {
                        self.buf.extend_from_slice(row);
                    }
                    self.tiled = true;
                }
            }
            Kind::Splat(vals) => {
                if self.buf.len() < self.cap {
                    self.buf = output_vec(self.cap);
                    self.buf.resize(self.cap, vals[0]);
                }
                if b.whole {
                    let rows = self.buf[..b.len].chunks_exact_mut(row_len);
                    for (chunk, &v) in rows.zip(&vals[b.row..]) {
                        chunk.fill(v);
                    }
                } else {
                    self.buf[..b.len].fill(vals[b.row]);
                }
            }
        }
    }

    /// The input's elements in block `b` (after [`Src::fill`]).
    #[inline]
    pub(crate) fn get(&self, b: &Block) -> &[A] {
        match self.kind {
            Kind::Flat(xs) => &xs[b.start..b.start + b.len],
            Kind::Row(row) if !b.whole => &row[b.col..b.col + b.len],
            Kind::Row(_) | Kind::Splat(_) => &self.buf[..b.len],
        }
    }
}

impl<A: 'static> Drop for Src<'_, A> {
    fn drop(&mut self) {
        recycle_vec_any(std::mem::take(&mut self.buf));
    }
}

/// The first of a list of expressions.
macro_rules! first_of {
    ($x:expr $(, $rest:expr)*) => {
        $x
    };
}

/// A map with several scalar results per element: one public function per
/// number of outputs and inputs.
macro_rules! multi_map {
    ($name:ident, $outs:literal, $ins:literal;
     [$O0:ident $o0:ident $r0:ident $(, $O:ident $o:ident $r:ident)*];
     [$($A:ident $S:ident $x:ident $src:ident $xs:ident $e:ident),+]) => {
        #[doc = concat!(
            "`(out₁[i], .., out", $outs, "[i]) = f(x₁[i], .., x", $ins, "[i])` for every index `i` of ",
            "the inputs (all of one shape): a map with ", $outs, " scalar results per element and ",
            $ins, " inputs, in one pass. The outputs are stored as ndarray stores the result of ",
            "an elementwise operation on the first `order_from` inputs (all of them when it is 0: ",
            "a forward-mode map's tangents follow its primal operands, which alone make the ",
            "primal's layout in the user's code; [`crate::result_order`]). Row-major ",
            "outputs over inputs in standard layout or broadcast (a row repeated, a value per ",
            "row) are computed in blocks of slices; other layouts, and passes whose elements ",
            "times `work_per_elem` reach the parallel threshold, by ndarray's `Zip` ",
            "([`crate::zip_pass`]). The same bits either way."
        )]
        #[track_caller]
        #[allow(clippy::too_many_arguments)]
        pub fn $name<D, $O0, $($O,)* $($A, $S,)+ F>(
            $($x: &ArrayBase<$S, D>,)+
            order_from: usize,
            work_per_elem: usize,
            f: F,
        ) -> (Array<$O0, D>, $(Array<$O, D>,)*)
        where
            D: Dimension,
            $O0: Pooled + Send + Sync,
            $($O: Pooled + Send + Sync,)*
            $($A: Copy + Sync + 'static, $S: Data<Elem = $A>,)+
            F: Fn($($A),+) -> ($O0, $($O,)*) + Sync + Send,
        {
            let first = first_of!($($x),+);
            $(check::same_shape(stringify!($name), first.shape(), $x.shape());)+
            let dim = first.raw_dim();
            let layouts = [$(layout_of($x)),+];
            let from = if order_from == 0 { layouts.len() } else { order_from.min(layouts.len()) };
            let order = result_order(&layouts[..from]);
            let mut $o0: Array<$O0, D> = pooled_for_overwrite_in(dim.clone(), &order);
            $(let mut $o: Array<$O, D> = pooled_for_overwrite_in(dim.clone(), &order);)*
            let n = dim.size();
            let parallel = par::go_parallel(n.saturating_mul(work_per_elem));
            'blocks: {
                if parallel || !order.is_row_major() {
                    break 'blocks;
                }
                $(let Some(mut $src) = Src::of($x) else { break 'blocks };)+
                let rl = if true $(&& $src.is_flat())+ { n } else { row_len(&dim) };
                {
                    let $o0 = $o0.as_slice_mut().expect("row-major output");
                    $(let $o = $o.as_slice_mut().expect("row-major output");)*
                    for_each_block(n, rl, |b| {
                        $($src.fill(b, rl);)+
                        $(let $xs = &$src.get(b)[..b.len];)+
                        let $o0 = &mut $o0[b.start..b.start + b.len];
                        $(let $o = &mut $o[b.start..b.start + b.len];)*
                        for k in 0..b.len {
                            let ($r0, $($r,)*) = f($($xs[k]),+);
                            $o0[k] = $r0;
                            $($o[k] = $r;)*
                        }
                    });
                }
                return ($o0, $($o,)*);
            }
            zip_pass(
                Zip::from(&mut $o0)$(.and(&mut $o))*$(.and($x))+,
                parallel,
                |$o0: &mut $O0, $($o: &mut $O,)* $(&$e: &$A),+| {
                    let ($r0, $($r,)*) = f($($e),+);
                    *$o0 = $r0;
                    $(*$o = $r;)*
                },
            );
            ($o0, $($o,)*)
        }
    };
}

multi_map!(multi_map_2_1, 2, 1; [O1 o1 r1, O2 o2 r2]; [A1 S1 x1 s1 xs1 e1]);
multi_map!(multi_map_2_2, 2, 2; [O1 o1 r1, O2 o2 r2];
    [A1 S1 x1 s1 xs1 e1, A2 S2 x2 s2 xs2 e2]);
multi_map!(multi_map_2_3, 2, 3; [O1 o1 r1, O2 o2 r2];
    [A1 S1 x1 s1 xs1 e1, A2 S2 x2 s2 xs2 e2, A3 S3 x3 s3 xs3 e3]);
multi_map!(multi_map_2_4, 2, 4; [O1 o1 r1, O2 o2 r2];
    [A1 S1 x1 s1 xs1 e1, A2 S2 x2 s2 xs2 e2, A3 S3 x3 s3 xs3 e3, A4 S4 x4 s4 xs4 e4]);
multi_map!(multi_map_3_1, 3, 1; [O1 o1 r1, O2 o2 r2, O3 o3 r3]; [A1 S1 x1 s1 xs1 e1]);
multi_map!(multi_map_3_2, 3, 2; [O1 o1 r1, O2 o2 r2, O3 o3 r3];
    [A1 S1 x1 s1 xs1 e1, A2 S2 x2 s2 xs2 e2]);
multi_map!(multi_map_3_3, 3, 3; [O1 o1 r1, O2 o2 r2, O3 o3 r3];
    [A1 S1 x1 s1 xs1 e1, A2 S2 x2 s2 xs2 e2, A3 S3 x3 s3 xs3 e3]);
multi_map!(multi_map_4_1, 4, 1; [O1 o1 r1, O2 o2 r2, O3 o3 r3, O4 o4 r4]; [A1 S1 x1 s1 xs1 e1]);
multi_map!(multi_map_4_2, 4, 2; [O1 o1 r1, O2 o2 r2, O3 o3 r3, O4 o4 r4];
    [A1 S1 x1 s1 xs1 e1, A2 S2 x2 s2 xs2 e2]);
multi_map!(multi_map_5_1, 5, 1; [O1 o1 r1, O2 o2 r2, O3 o3 r3, O4 o4 r4, O5 o5 r5];
    [A1 S1 x1 s1 xs1 e1]);

/// An elementwise map with one result per element over inputs of one shape,
/// in blocks of slices ([`Src`]): the row-major elements of the result, or
/// `None` when an input is neither in standard layout nor a broadcast
/// [`Src`] reads, or is empty (the caller walks it otherwise).
macro_rules! blocked_map {
    ($name:ident; $($A:ident $S:ident $x:ident $src:ident $xs:ident),+) => {
        pub(crate) fn $name<D, C, $($A, $S,)+ F>($($x: &ArrayBase<$S, D>,)+ f: F) -> Option<Vec<C>>
        where
            D: Dimension,
            C: 'static,
            $($A: Copy + 'static, $S: Data<Elem = $A>,)+
            F: Fn($($A),+) -> C,
        {
            let dim = first_of!($($x),+).raw_dim();
            $(let mut $src = Src::of($x)?;)+
            let n = dim.size();
            let rl = if true $(&& $src.is_flat())+ { n } else { row_len(&dim) };
            let mut v = crate::scratch::output_vec(n);
            for_each_block(n, rl, |b| {
                $($src.fill(b, rl);)+
                $(let $xs = &$src.get(b)[..b.len];)+
                v.extend((0..b.len).map(|k| f($($xs[k]),+)));
            });
            Some(v)
        }
    };
}

blocked_map!(blocked_map1; A1 S1 x1 s1 xs1);
blocked_map!(blocked_map2; A1 S1 x1 s1 xs1, A2 S2 x2 s2 xs2);
blocked_map!(blocked_map3; A1 S1 x1 s1 xs1, A2 S2 x2 s2 xs2, A3 S3 x3 s3 xs3);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{map, zip3_map, zip_map};
    use ndarray::{s, Array1, Array2, Array3, ArrayView2, Axis};

    /// Blocks cover `0..total` once, in order, whole rows or pieces of one
    /// row, none longer than `BLOCK`.
    #[test]
    fn blocks_cover_every_element_once_in_order() {
        for (total, rl) in [
            (0, 3),
            (1, 1),
            (10, 10),
            (1000, 10),
            (771, 257),
            (512, 256),
            (7, 7),
        ] {
            let mut next = 0;
            for_each_block(total, rl, |b| {
                assert_eq!(b.start, next);
                assert!(b.len >= 1 && b.len <= BLOCK);
                assert_eq!(b.start, b.row * rl + b.col);
                if b.whole {
                    assert_eq!((b.col, b.len % rl), (0, 0));
                } else {
                    assert!(b.col + b.len <= rl);
                }
                next += b.len;
            });
            assert_eq!(next, total, "{total} x {rl}");
        }
    }

    fn body(x: f64, y: f64, z: f64) -> (f64, f64) {
        (x * y - z, (x + 1.5 * z) * y)
    }

    /// The inputs of the tests: standard layout, a row, a value per row and
    /// a scalar broadcast over `n x d`, a column-major array and a strided
    /// view (both walked by `Zip`).
    fn inputs(n: usize, d: usize) -> (Array2<f64>, Array1<f64>, Array1<f64>, Array2<f64>) {
        let x = Array2::from_shape_fn((n, d), |(i, j)| (i * 7 + j) as f64 * 0.37 - 3.0);
        let row = Array1::from_shape_fn(d, |j| j as f64 * 1.1 + 0.25);
        let col = Array1::from_shape_fn(n, |i| 2.0 - i as f64 * 0.3);
        let wide = Array2::from_shape_fn((n, 2 * d), |(i, j)| (i + 3 * j) as f64 * 0.5);
        (x, row, col, wide)
    }

    /// Every layout the blocked walk reads, and those it leaves to `Zip`,
    /// give what ndarray's `Zip` gives, element for element, for row
    /// lengths around [`BLOCK`] and beyond.
    #[test]
    fn broadcast_inputs_map_like_zip() {
        for n in [0, 1, 7, 300] {
            for d in [1, 3, 10, 255, 256, 257, 600] {
                let (x, row, col, wide) = inputs(n, d);
                let sh = (n, d);
                let rowb = row.broadcast(sh).unwrap();
                let colb = col.view().insert_axis(Axis(1));
                let colb = colb.broadcast(sh).unwrap();
                let two = ndarray::arr0(2.5);
                let scal = two.broadcast(sh).unwrap();
                let xf = x.t().as_standard_layout().into_owned();
                let xcm = xf.t();
                let strided = wide.slice(s![.., ..;2]);
                let views: [ArrayView2<f64>; 6] = [x.view(), rowb, colb, scal, xcm, strided];
                for a in &views {
                    for b in &views {
                        for c in [&views[1], &views[2], &views[4]] {
                            let (p, q) = multi_map_2_3(a, b, c, 0, 1, body);
                            let want_p = Zip::from(a)
                                .and(b)
                                .and(c)
                                .map_collect(|&x, &y, &z| body(x, y, z).0);
                            let want_q = Zip::from(a)
                                .and(b)
                                .and(c)
                                .map_collect(|&x, &y, &z| body(x, y, z).1);
                            assert_eq!(p, want_p, "{n} x {d}");
                            assert_eq!(q, want_q, "{n} x {d}");
                            let one = zip3_map(a, b, c, |x, y, z| body(x, y, z).0);
                            assert_eq!(one, want_p);
                        }
                        let two = zip_map(a, b, |x, y| x * 3.0 - y);
                        assert_eq!(two, Zip::from(a).and(b).map_collect(|&x, &y| x * 3.0 - y));
                    }
                    assert_eq!(map(a, |x| x * x + 1.0), a.mapv(|x| x * x + 1.0));
                }
            }
        }
    }

    /// Rank 3: a row broadcast over two axes and one value per row of a
    /// matrix stretched along the last axis.
    #[test]
    fn rank_three_broadcasts() {
        let (m, n, d) = (3, 5, 7);
        let x = Array3::from_shape_fn((m, n, d), |(i, j, k)| (i * 35 + j * 7 + k) as f64);
        let row = Array1::from_shape_fn(d, |k| k as f64 - 2.0);
        let per_row = Array2::from_shape_fn((m, n), |(i, j)| (i * 5 + j) as f64 * 0.5);
        let rowb = row.broadcast((m, n, d)).unwrap();
        let splat = per_row.view().insert_axis(Axis(2));
        let splat = splat.broadcast((m, n, d)).unwrap();
        let (p, q, r) = multi_map_3_3(&x, &rowb, &splat, 0, 1, |a, b, c| (a + b, b * c, a - c));
        assert_eq!(p, Zip::from(&x).and(rowb).map_collect(|&a, &b| a + b));
        assert_eq!(q, Zip::from(rowb).and(splat).map_collect(|&b, &c| b * c));
        assert_eq!(r, Zip::from(&x).and(splat).map_collect(|&a, &c| a - c));
        assert!(p.is_standard_layout() && q.is_standard_layout());
    }

    /// In parallel (a pool of 4 threads, threshold 1) the outputs are the
    /// same bits, and column-major inputs give column-major outputs, as
    /// ndarray's `Zip::map_collect` does.
    #[test]
    fn parallel_and_column_major_passes() {
        let (x, row, _, _) = inputs(40, 9);
        let rowb = row.broadcast((40, 9)).unwrap();
        let seq = multi_map_2_2(&x, &rowb, 0, 1, |a, b| (a * b, a - b));
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(4)
            .build()
            .unwrap();
        let old = par::par_threshold();
        par::set_par_threshold(1);
        let parallel = pool.install(|| multi_map_2_2(&x, &rowb, 0, 1, |a, b| (a * b, a - b)));
        par::set_par_threshold(old);
        assert_eq!(seq, parallel);
        let xf = x.t().as_standard_layout().into_owned();
        let (p, _) = multi_map_2_1(&xf.t(), 0, 1, |a| (a, a));
        assert_eq!(p, x);
        assert_eq!(
            p.strides(),
            Zip::from(&xf.t()).map_collect(|&a| a).strides()
        );
    }
}
