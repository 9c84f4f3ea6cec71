//! Strided views: the sub-array `x[start_k + step_k * i_k, .., c, ..]` of
//! an array as ndarray's own slice of it, so that it keeps the memory
//! layout `f`'s `x.slice(s![..])` has. ndarray's reductions walk memory
//! (a `sum` adds a contiguous array 8 lanes at a time, a strided one row by
//! row): a row-major copy of the slice would be added in another order.

use ndarray::{ArrayView, ArrayView1, ArrayView2, Dimension, IxDyn, SliceInfo, SliceInfoElem};

/// One axis of a strided view ([`strided_view`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StridedAxis {
    /// The axis is indexed at one position and removed.
    At(i64),
    /// `len` elements from `start` on, `step` apart (`step != 0`; negative
    /// walks backwards).
    Range {
        /// The first element's index.
        start: i64,
        /// The distance from one element to the next.
        step: i64,
        /// The number of elements (non-negative).
        len: i64,
    },
}

/// The view of `x` whose element `(i_0, .., i_m)` is `x[p_0, .., p_n]`,
/// `p` from `axes` (one per axis of `x`, the `Range`s in order giving the
/// view's axes): ndarray's slice, with `x`'s strides times the steps.
///
/// # Panics
/// With a message naming `what` when a position it reads lies outside
/// `x` (as the element reads of the sub-array it stands for would).
pub fn strided_view<'a, A, D, E>(
    x: ArrayView<'a, A, D>,
    axes: &[StridedAxis],
    what: &str,
) -> ArrayView<'a, A, E>
where
    D: Dimension,
    E: Dimension,
{
    assert_eq!(
        axes.len(),
        x.ndim(),
        "linad: {what}: a view of {} axes of an array of rank {}",
        axes.len(),
        x.ndim()
    );
    let elems: Vec<SliceInfoElem> = axes
        .iter()
        .zip(x.shape())
        .map(|(a, &n)| {
            let n = n as i64;
            match *a {
                StridedAxis::At(i) => {
                    assert!(
                        (0..n).contains(&i),
                        "linad: {what}: index {i} out of range for an axis of length {n}"
                    );
                    SliceInfoElem::Index(i as isize)
                }
                StridedAxis::Range { len: 0, .. } => SliceInfoElem::Slice {
                    start: 0,
                    end: Some(0),
                    step: 1,
                },
                StridedAxis::Range { start, step, len } => {
                    let last = start + step * (len - 1);
                    let (lo, hi) = (start.min(last), start.max(last));
                    assert!(
                        step != 0 && lo >= 0 && hi < n,
                        "linad: {what}: index {} out of range for an axis of length {n}",
                        if lo < 0 { lo } else { hi }
                    );
                    // ndarray steps backwards from the end of `lo..hi + 1`
                    // for a negative step: from `start`, as wanted.
                    SliceInfoElem::Slice {
                        start: lo as isize,
                        end: Some(hi as isize + 1),
                        step: step as isize,
                    }
                }
            }
        })
        .collect();
    // ndarray slices any rank through `IxDyn` (the strides are kept)
    let info = SliceInfo::<Vec<SliceInfoElem>, IxDyn, E>::try_from(elems)
        .unwrap_or_else(|e| panic!("linad: {what}: a view of another rank ({e})"));
    x.into_dyn().slice_move(info)
}

/// The first `len` elements of the leading diagonal of `x` (`x.diag()`,
/// which has the strides' sum as its stride).
///
/// # Panics
/// With a message naming `what` when `len` exceeds the diagonal.
pub fn diagonal_view<'a, A>(x: ArrayView2<'a, A>, len: i64, what: &str) -> ArrayView1<'a, A> {
    let d = x.into_diag();
    assert!(
        (0..=d.len() as i64).contains(&len),
        "linad: {what}: index {} out of range for a diagonal of length {}",
        len - 1,
        d.len()
    );
    d.slice_move(ndarray::s![..len as usize])
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{s, Array2, Ix1, Ix2, ShapeBuilder};

    #[test]
    fn views_are_ndarray_slices_with_their_strides() {
        for f in [false, true] {
            let a = Array2::from_shape_fn((5, 7).set_f(f), |(i, j)| (10 * i + j) as f64);
            let v: ArrayView<f64, Ix2> = strided_view(
                a.view(),
                &[
                    StridedAxis::Range {
                        start: 1,
                        step: 2,
                        len: 2,
                    },
                    StridedAxis::Range {
                        start: 6,
                        step: -1,
                        len: 7,
                    },
                ],
                "t",
            );
            let w = a.slice(s![1..4;2, ..;-1]);
            assert_eq!(v, w);
            assert_eq!(v.strides(), w.strides());
            let c: ArrayView<f64, Ix1> = strided_view(
                a.view(),
                &[
                    StridedAxis::Range {
                        start: 4,
                        step: -3,
                        len: 2,
                    },
                    StridedAxis::At(2),
                ],
                "t",
            );
            let d = a.slice(s![1..5;-3, 2]);
            assert_eq!((c.to_vec(), c.strides()), (d.to_vec(), d.strides()));
            let e: ArrayView<f64, Ix2> = strided_view(
                a.view(),
                &[
                    StridedAxis::Range {
                        start: 9,
                        step: 1,
                        len: 0,
                    },
                    StridedAxis::Range {
                        start: 0,
                        step: 1,
                        len: 7,
                    },
                ],
                "t",
            );
            assert_eq!(e.shape(), &[0, 7]);
        }
    }

    #[test]
    fn diagonals_have_the_strides_sum_as_stride() {
        let a = Array2::from_shape_fn((4, 6).f(), |(i, j)| (10 * i + j) as f64);
        let d = diagonal_view(a.view(), 3, "t");
        assert_eq!(
            (d.to_vec(), d.strides()),
            (vec![0.0, 11.0, 22.0], a.diag().strides())
        );
    }

    #[test]
    #[should_panic(expected = "linad: t: index 5 out of range")]
    fn a_view_past_the_end_panics() {
        let a = Array2::<f64>::zeros((5, 7));
        let _: ArrayView<f64, Ix2> = strided_view(
            a.view(),
            &[
                StridedAxis::Range {
                    start: 1,
                    step: 2,
                    len: 3,
                },
                StridedAxis::Range {
                    start: 0,
                    step: 1,
                    len: 7,
                },
            ],
            "t",
        );
    }

    #[test]
    #[should_panic(expected = "linad: t: index -1 out of range")]
    fn a_view_before_the_start_panics() {
        let a = Array2::<f64>::zeros((5, 7));
        let _: ArrayView<f64, Ix1> = strided_view(
            a.view(),
            &[
                StridedAxis::At(0),
                StridedAxis::Range {
                    start: 1,
                    step: -1,
                    len: 3,
                },
            ],
            "t",
        );
    }
}
