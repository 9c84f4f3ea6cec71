//! Lanes: the last axis of an array at fixed leading indices, as a slice.
//!
//! Generated code reads array elements one by one inside loops. When a loop
//! reads `a[[i, k]]` with `a` and `i` fixed while the loop runs, the emitter
//! takes `a`'s lane at `i` once before the loop ([`lane2`]) and reads
//! `lane[k]` inside: one bounds check on a slice instead of a check and a
//! stride multiplication per axis of a general ndarray index, and a unit
//! stride LLVM can see.
//!
//! A lane is borrowed when it is contiguous and copied otherwise (a
//! transposed or broadcast view), so the slice always has the lane's
//! elements at positions `0..len`. A leading index out of bounds gives an
//! empty lane: the loop's first element read then panics, as the indexing
//! it replaces would, and a loop that reads nothing does not panic.
//!
//! ```
//! use ad_runtime::lane2;
//! use ndarray::array;
//! let a = array![[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]];
//! assert_eq!(&*lane2(&a, 1), &[4.0, 5.0, 6.0]);
//! assert_eq!(&*lane2(&a.t(), 2), &[3.0, 6.0]); // a copy: the column is strided
//! assert!(lane2(&a, 7).is_empty());
//! ```

use ndarray::{ArrayBase, ArrayView1, Axis, Data, Ix1, Ix2, Ix3};
use std::borrow::Cow;

/// `v`'s elements as a slice: borrowed when contiguous in order, copied
/// otherwise.
fn contiguous<A: Clone>(v: ArrayView1<'_, A>) -> Cow<'_, [A]> {
    match v.to_slice() {
        Some(s) => Cow::Borrowed(s),
        None => Cow::Owned(v.to_vec()),
    }
}

/// All of the vector `a`: `lane1(a)[k] == a[k]` for every `k < a.len()`.
#[inline]
pub fn lane1<A: Clone, S: Data<Elem = A>>(a: &ArrayBase<S, Ix1>) -> Cow<'_, [A]> {
    contiguous(a.view())
}

/// Row `i` of the matrix `a`: `lane2(a, i)[k] == a[[i, k]]` for every
/// `k < a.ncols()`; empty when `i >= a.nrows()`.
#[inline]
pub fn lane2<A: Clone, S: Data<Elem = A>>(a: &ArrayBase<S, Ix2>, i: usize) -> Cow<'_, [A]> {
    if i >= a.nrows() {
        return Cow::Borrowed(&[]);
    }
    contiguous(a.row(i))
}

/// The lane of the rank-3 array `a` at `(i, j)`: `lane3(a, i, j)[k] ==
/// a[[i, j, k]]` for every `k < a.shape()[2]`; empty when `i` or `j` is out
/// of bounds.
#[inline]
pub fn lane3<A: Clone, S: Data<Elem = A>>(
    a: &ArrayBase<S, Ix3>,
    i: usize,
    j: usize,
) -> Cow<'_, [A]> {
    let (n0, n1, _) = a.dim();
    if i >= n0 || j >= n1 {
        return Cow::Borrowed(&[]);
    }
    // Fixing two axes one at a time: cheaper than a slice descriptor (hot
    // in loops that take a lane per iteration).
    contiguous(a.index_axis(Axis(0), i).index_axis_move(Axis(0), j))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{s, Array, Array3};

    #[test]
    fn lanes_read_what_indexing_reads() {
        let a = Array3::from_shape_fn((2, 3, 4), |(i, j, k)| (100 * i + 10 * j + k) as f64);
        for i in 0..2 {
            for j in 0..3 {
                let l = lane3(&a, i, j);
                assert!(matches!(l, Cow::Borrowed(_)));
                for k in 0..4 {
                    assert_eq!(l[k], a[[i, j, k]]);
                }
            }
        }
        // A permuted view: lanes are strided, so copied, with the same values.
        let p = a.view().permuted_axes([2, 1, 0]);
        for i in 0..4 {
            for j in 0..3 {
                let l = lane3(&p, i, j);
                assert!(matches!(l, Cow::Owned(_)));
                assert_eq!(l.len(), 2);
                for k in 0..2 {
                    assert_eq!(l[k], p[[i, j, k]]);
                }
            }
        }
        let m = a.index_axis(Axis(0), 1);
        for i in 0..3 {
            assert_eq!(&*lane2(&m, i), m.row(i).to_vec().as_slice());
            assert_eq!(&*lane2(&m.t(), i.min(3)), m.column(i).to_vec().as_slice());
        }
        let v = Array::from_vec(vec![1, 2, 3]);
        assert_eq!(&*lane1(&v), &[1, 2, 3]);
        assert_eq!(&*lane1(&v.slice(s![..;-1])), &[3, 2, 1]);
        // A broadcast lane (stride 0) has its full length.
        let b = v.broadcast((2, 3)).unwrap();
        let c = Array::from_vec(vec![5.0]);
        let cb = c.broadcast(4).unwrap();
        assert_eq!(&*lane1(&cb), &[5.0; 4]);
        assert_eq!(&*lane2(&b.t(), 1), &[2, 2]);
    }

    #[test]
    fn out_of_bounds_leading_indices_give_empty_lanes() {
        let a = Array3::<f64>::zeros((2, 3, 4));
        assert!(lane3(&a, 2, 0).is_empty());
        assert!(lane3(&a, 0, 3).is_empty());
        assert!(lane3(&a, usize::MAX, 0).is_empty());
        let m = ndarray::Array2::<f64>::zeros((2, 5));
        assert!(lane2(&m, 2).is_empty());
        assert!(lane2(&m, usize::MAX).is_empty());
        assert_eq!(lane2(&m, 1).len(), 5);
    }
}
