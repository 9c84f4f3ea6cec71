//! Builds whose elements hold arrays: `out[idx] = f(idx)` where `f` returns
//! scalars and, through a [`RowSink`], arrays of one shape for every index
//! (a forward pass keeping, per point, the exponentials of a log-sum-exp
//! over components for its reverse pass).
//!
//! ```text
//! build [n] |i| { ..; yield s, e }     (e: [f64] of length k for every i)
//!   =>  (S, E) = build_rows([n], w, &[1], |i, sink| { ..; sink.put(0, &e); s })
//!       S: [n], E: [n, k] (row i of E is e at i)
//! ```
//!
//! The element arrays are copied into rows of outputs allocated once, after
//! the first element shows their shapes: no allocation per element. An
//! element whose array has another shape than the first's panics (the
//! compiler stores only arrays whose shape it proved the same for every
//! index). Every element is written by one call of `f`, whoever runs it, so
//! the results are the same bits for any number of threads.

use crate::map::unravel;
use crate::par;
use crate::scratch::{output_for_overwrite, output_vec};
use ndarray::{Array, ArrayBase, ArrayD, Data, Dimension, IntoDimension, IxDyn};

/// Where a build's element writes its array results ([`build_rows`]).
pub struct RowSink<'a, E> {
    mode: Mode<'a, E>,
}

enum Mode<'a, E> {
    /// The first element: its arrays' shapes and values, kept.
    First(Vec<Option<(Vec<usize>, Vec<E>)>>),
    /// Later elements: the rows of every output for a range of elements,
    /// and the current element's position in that range.
    Rows {
        bufs: Vec<&'a mut [E]>,
        shapes: &'a [Vec<usize>],
        row: usize,
    },
}

impl<E: Copy> RowSink<'_, E> {
    /// Array result `k` of the current element is `a`.
    #[inline]
    pub fn put<S: Data<Elem = E>, D: Dimension>(&mut self, k: usize, a: &ArrayBase<S, D>) {
        match &mut self.mode {
            Mode::First(kept) => {
                kept[k] = Some((a.shape().to_vec(), a.iter().copied().collect()));
            }
            Mode::Rows { bufs, shapes, row } => {
                assert_eq!(
                    a.shape(),
                    shapes[k].as_slice(),
                    "linad: a build's array result changes shape between elements"
                );
                let len = a.len();
                let dst = &mut bufs[k][*row * len..(*row + 1) * len];
                match a.as_slice() {
                    Some(xs) => dst.copy_from_slice(xs),
                    None => dst.iter_mut().zip(a.iter()).for_each(|(d, x)| *d = *x),
                }
            }
        }
    }
}

/// `build` for a body returning scalars `T` and `ranks.len()` arrays of
/// element type `E` (array `k` of rank `ranks[k]`) through the sink: the
/// scalars' array of `shape`, and for each array result the array of shape
/// `shape ++ (its shape)` whose sub-array at `idx` is the element's. The
/// first element runs first (its arrays' shapes size the outputs); the
/// others run in parallel blocks of consecutive indices when
/// `size · work_per_elem` reaches the threshold.
pub fn build_rows<T, E, Sh, D, F>(
    shape: Sh,
    work_per_elem: usize,
    ranks: &[usize],
    f: F,
) -> (Array<T, D>, Vec<ArrayD<E>>)
where
    T: Copy + Send + Sync + 'static,
    E: Copy + Send + Sync + 'static,
    Sh: IntoDimension<Dim = D>,
    D: Dimension + Copy,
    D::Pattern: Send,
    F: Fn(D::Pattern, &mut RowSink<'_, E>) -> T + Sync + Send,
{
    let dim = shape.into_dimension();
    let n = dim.size();
    let full = |elem: &[usize]| IxDyn(&[dim.slice(), elem].concat());
    if n == 0 {
        let outs = ranks
            .iter()
            .map(|r| ArrayD::from_shape_vec(full(&vec![0; *r]), vec![]).expect("empty"))
            .collect();
        return (Array::from_shape_vec(dim, vec![]).expect("empty"), outs);
    }
    let mut first = RowSink {
        mode: Mode::First(vec![None; ranks.len()]),
    };
    let t0 = f(unravel(&dim, 0), &mut first);
    let Mode::First(kept) = first.mode else {
        unreachable!("the first element's sink keeps its arrays")
    };
    let kept: Vec<(Vec<usize>, Vec<E>)> = kept
        .into_iter()
        .map(|k| k.expect("linad: a build's element did not give every array result"))
        .collect();
    let shapes: Vec<Vec<usize>> = kept.iter().map(|(s, _)| s.clone()).collect();
    let mut ts = output_for_overwrite(n, t0);
    ts[0] = t0;
    let mut bufs: Vec<Vec<E>> = kept
        .iter()
        .map(|(_, xs)| {
            let mut v = output_vec(n * xs.len());
            v.extend_from_slice(xs);
            if let Some(&x) = xs.first() {
                v.resize(n * xs.len(), x);
            }
            v
        })
        .collect();
    // Elements `lo..lo + ts.len()`, `bufs` their rows; element 0 is done.
    let run = |lo: usize, ts: &mut [T], bufs: Vec<&mut [E]>| {
        let mut sink = RowSink {
            mode: Mode::Rows {
                bufs,
                shapes: &shapes,
                row: 0,
            },
        };
        for (r, t) in ts.iter_mut().enumerate() {
            if lo + r == 0 {
                continue;
            }
            if let Mode::Rows { row, .. } = &mut sink.mode {
                *row = r;
            }
            *t = f(unravel(&dim, lo + r), &mut sink);
        }
    };
    let lens: Vec<usize> = kept.iter().map(|(_, xs)| xs.len()).collect();
    if par::go_parallel(n.saturating_mul(work_per_elem.max(1))) {
        let per_task = par::rows_per_task(n);
        let mut rest: Vec<&mut [E]> = bufs.iter_mut().map(|b| b.as_mut_slice()).collect();
        let mut items = vec![];
        for (t, chunk) in ts.chunks_mut(per_task).enumerate() {
            let rows = chunk.len();
            let mut mine = Vec::with_capacity(rest.len());
            rest = rest
                .into_iter()
                .zip(&lens)
                .map(|(b, len)| {
                    let (a, b) = b.split_at_mut(rows * len);
                    mine.push(a);
                    b
                })
                .collect();
            items.push((t * per_task, chunk, mine));
        }
        par::for_each_item(items, true, |(lo, ts, mine)| run(lo, ts, mine));
    } else {
        let all: Vec<&mut [E]> = bufs.iter_mut().map(|b| b.as_mut_slice()).collect();
        run(0, &mut ts, all);
    }
    let outs = bufs
        .into_iter()
        .zip(&shapes)
        .map(|(v, s)| ArrayD::from_shape_vec(full(s), v).expect("row-major shape"))
        .collect();
    (
        Array::from_shape_vec(dim, ts).expect("row-major shape"),
        outs,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{arr1, Array1, Array2};

    #[test]
    fn rows_hold_each_elements_array() {
        let (s, outs) = build_rows([5], 1, &[1], |i: usize, sink: &mut RowSink<'_, f64>| {
            let e = Array1::from_shape_fn(3, |k| (i * 10 + k) as f64);
            sink.put(0, &e);
            i as f64
        });
        assert_eq!(s, arr1(&[0.0, 1.0, 2.0, 3.0, 4.0]));
        let e = outs[0]
            .clone()
            .into_dimensionality::<ndarray::Ix2>()
            .unwrap();
        assert_eq!(
            e,
            Array2::from_shape_fn((5, 3), |(i, k)| (i * 10 + k) as f64)
        );
    }

    #[test]
    fn empty_builds_have_empty_rows() {
        let (s, outs) = build_rows([0], 1, &[2], |_: usize, _: &mut RowSink<'_, f64>| 1.0);
        assert_eq!(s.len(), 0);
        assert_eq!(outs[0].shape(), &[0, 0, 0]);
    }

    #[test]
    #[should_panic(expected = "changes shape")]
    fn a_shape_change_panics() {
        build_rows([3], 1, &[1], |i: usize, sink: &mut RowSink<'_, f64>| {
            sink.put(0, &Array1::<f64>::zeros(i + 1));
            0.0
        });
    }
}
