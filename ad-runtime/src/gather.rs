//! Indexing kernels: gather rows by an index array, scatter-add (its
//! transpose), and one-hot accumulation.
//!
//! Indices are `usize` (rank-1 arrays of `usize`), always along axis 0.
//! An out-of-range index panics with the kernel name, the index and the
//! axis length.

use crate::check;
use crate::elem::Elem;
use crate::fold::standard;
use crate::par;
use ndarray::{Array, ArrayBase, Axis, Data, DataMut, Dimension, Ix1, NdIndex, RemoveAxis, Zip};
use std::fmt::Debug;

/// Source elements per chunk of the private-accumulator path.
const PRIVATE_CHUNK: usize = 1 << 16;

/// Largest output (in elements) for which scatter-add always uses per-chunk
/// private accumulators (`Note [scatter order]`).
const PRIVATE_MAX: usize = 1 << 15;

/// `out[i, ..] = a[idx[i], ..]`: rows of `a` (axis 0) picked by `idx`; the
/// output has `idx.len()` rows. Work: the number of output elements.
#[track_caller]
pub fn gather<T, S, SI, D>(a: &ArrayBase<S, D>, idx: &ArrayBase<SI, Ix1>) -> Array<T, D>
where
    T: Copy + Default + Send + Sync + 'static,
    S: Data<Elem = T>,
    SI: Data<Elem = usize>,
    D: Dimension + RemoveAxis,
{
    let n0 = a.len_of(Axis(0));
    let parallel = par::go_parallel(idx.len() * a.len() / n0.max(1));
    if let Ok(a1) = a.view().into_dimensionality::<Ix1>() {
        let out = match (a1.as_slice(), idx.as_slice()) {
            (Some(xs), Some(is)) => {
                let pick = |&j: &usize| match xs.get(j) {
                    Some(&x) => x,
                    None => check::row_out_of_range("gather", j, n0),
                };
                let v = if parallel {
                    par::fill(is.len(), |k| pick(&is[k]))
                } else {
                    is.iter().map(pick).collect()
                };
                ndarray::Array1::from_vec(v)
            }
            _ => {
                let pick = |&j: &usize| {
                    check::row_in_range("gather", j, n0);
                    a1[j]
                };
                if parallel {
                    let idx = idx.view();
                    let v = par::fill(idx.len(), |k| pick(&idx[k]));
                    ndarray::Array1::from_vec(v)
                } else {
                    Zip::from(idx).map_collect(pick)
                }
            }
        };
        return out.into_dimensionality::<D>().expect("rank 1");
    }
    let mut dim = a.raw_dim();
    dim[0] = idx.len();
    let mut out = Array::from_elem(dim, T::default());
    let a = a.view();
    let copy_row = |(mut o, &j): (ndarray::ArrayViewMut<'_, T, D::Smaller>, &usize)| {
        check::row_in_range("gather", j, n0);
        o.assign(&a.index_axis(Axis(0), j));
    };
    let idx = idx.to_vec();
    par::for_each_item(
        out.outer_iter_mut().zip(idx.iter()).collect(),
        parallel,
        copy_row,
    );
    out
}

/// Scatter-add, the transpose of [`gather`]: `out` has `len` rows and
/// `out[r, ..] = Σ_{i : idx[i] = r} src[i, ..]`; duplicate indices are
/// summed, rows never indexed are 0. Work: the number of source elements.
///
/// `Note [scatter order]`: with `n` source rows and `row` elements per row,
/// - if the output is small (`len·row ≤ 2^15`) or heavily hit
///   (`n ≥ 8·len`), the source rows are cut into fixed chunks of
///   `max(⌈65536 / row⌉, 4·len)` rows; each chunk adds its rows in order into
///   a private zero accumulator, and the accumulators are added together in
///   chunk order, starting from the first (with a single chunk these are
///   the bits of the plain sequential loop);
/// - otherwise every output row adds its sources in increasing `i` starting
///   from 0: the plain sequential loop (this case is not parallelised).
///
/// Either way the bits depend only on the inputs, never on the threads.
#[track_caller]
pub fn scatter_add<T, S, SI, D>(
    src: &ArrayBase<S, D>,
    idx: &ArrayBase<SI, Ix1>,
    len: usize,
) -> Array<T, D>
where
    T: Elem,
    S: Data<Elem = T>,
    SI: Data<Elem = usize>,
    D: Dimension + RemoveAxis,
{
    let n = src.len_of(Axis(0));
    if idx.len() != n {
        panic!(
            "ad_runtime::scatter_add: shape mismatch: {} indices vs source shape {:?}",
            idx.len(),
            src.shape()
        );
    }
    let row: usize = src.shape()[1..].iter().product();
    let mut dim = src.raw_dim();
    dim[0] = len;
    let xs = standard(src);
    let xs = xs.as_slice().expect("standard layout");
    let idx_owned;
    let idx = match idx.as_slice() {
        Some(s) => s,
        None => {
            idx_owned = idx.to_vec();
            &idx_owned[..]
        }
    };
    let parallel = par::go_parallel(src.len());
    let out = if row == 0 {
        idx.iter()
            .for_each(|&j| check::row_in_range("scatter_add", j, len));
        Vec::new()
    } else if len * row <= PRIVATE_MAX || n >= 8 * len {
        scatter_private(xs, idx, len, row, parallel)
    } else {
        scatter_sequential(xs, idx, len, row)
    };
    Array::from_shape_vec(dim, out).expect("scatter_add output shape")
}

/// Per-chunk private accumulators, merged in chunk order.
fn scatter_private<T: Elem>(
    xs: &[T],
    idx: &[usize],
    len: usize,
    row: usize,
    parallel: bool,
) -> Vec<T> {
    let n = idx.len();
    let chunk = PRIVATE_CHUNK.div_ceil(row).max(4 * len).max(1);
    let parts = par::map_tasks(n.div_ceil(chunk), parallel, |c| {
        let lo = c * chunk;
        let hi = n.min(lo + chunk);
        let mut acc = vec![T::ZERO; len * row];
        if row == 1 {
            add_elems(&mut acc, &idx[lo..hi], &xs[lo..hi]);
        } else {
            for (&j, x) in idx[lo..hi]
                .iter()
                .zip(xs[lo * row..hi * row].chunks_exact(row))
            {
                check::row_in_range("scatter_add", j, len);
                add_row(&mut acc[j * row..(j + 1) * row], x);
            }
        }
        acc
    });
    let mut parts = parts.into_iter();
    let Some(mut out) = parts.next() else {
        return vec![T::ZERO; len * row];
    };
    for p in parts {
        add_row(&mut out, &p);
    }
    out
}

/// `acc[idx[i]] += xs[i]` in increasing `i`; every index checked against
/// `acc.len()`.
#[inline(never)]
fn add_elems<T: Elem>(acc: &mut [T], idx: &[usize], xs: &[T]) {
    for (&j, &x) in idx.iter().zip(xs) {
        match acc.get_mut(j) {
            Some(a) => *a = *a + x,
            None => check::row_out_of_range("scatter_add", j, acc.len()),
        }
    }
}

/// `dst[k] += x[k]`.
#[inline(always)]
fn add_row<T: Elem>(dst: &mut [T], x: &[T]) {
    for (d, &x) in dst.iter_mut().zip(x) {
        *d = *d + x;
    }
}

/// The plain sequential loop: every output row sums its sources in
/// increasing `i`. Used for large outputs with few sources per row, where
/// the loop is bound by cache misses on the output. Splitting the output
/// among threads (each reading all sources) measured slower than this loop
/// on the 2-core reference machine, so this path stays sequential.
fn scatter_sequential<T: Elem>(xs: &[T], idx: &[usize], len: usize, row: usize) -> Vec<T> {
    let mut out = vec![T::ZERO; len * row];
    if row == 1 {
        add_elems(&mut out, idx, xs);
        return out;
    }
    for (&j, x) in idx.iter().zip(xs.chunks_exact(row)) {
        check::row_in_range("scatter_add", j, len);
        add_row(&mut out[j * row..(j + 1) * row], x);
    }
    out
}

/// One-hot accumulation of a single element: `acc[index] += v`.
/// `index` is any ndarray index of the array's rank (`usize`, `(i, j)`,
/// `[i, j, k]`, ...).
#[track_caller]
pub fn add_at<T, S, D, I>(acc: &mut ArrayBase<S, D>, index: I, v: T)
where
    T: Elem,
    S: DataMut<Elem = T>,
    D: Dimension,
    I: NdIndex<D> + Debug,
{
    let shape = acc.shape().to_vec();
    let msg = format!("{index:?}");
    match acc.get_mut(index) {
        Some(x) => *x = *x + v,
        None => panic!("ad_runtime::add_at: index {msg} out of range for shape {shape:?}"),
    }
}

/// One-hot accumulation of a row: `acc[i, ..] += row` (axis 0).
#[track_caller]
pub fn add_row_at<T, S, SR, D>(acc: &mut ArrayBase<S, D>, i: usize, row: &ArrayBase<SR, D::Smaller>)
where
    T: Elem,
    S: DataMut<Elem = T>,
    SR: Data<Elem = T>,
    D: Dimension + RemoveAxis,
{
    check::row_in_range("add_row_at", i, acc.len_of(Axis(0)));
    let mut dst = acc.index_axis_mut(Axis(0), i);
    check::same_shape("add_row_at", dst.shape(), row.shape());
    Zip::from(&mut dst).and(row).for_each(|d, &x| *d = *d + x);
}

/// `out = zeros([len, ..]); out[idx[k], ..] += vals[k, ..]` for `i64`s
/// (exact, sequential). Panics if the counts differ or an index is out of
/// range.
pub fn scatter_add_i64(
    len: usize,
    idx: ndarray::ArrayView1<'_, i64>,
    vals: ndarray::ArrayViewD<'_, i64>,
) -> ndarray::ArrayD<i64> {
    assert_eq!(
        idx.len(),
        vals.shape()[0],
        "ad_runtime::scatter_add_i64: {} rows with {} indices",
        vals.shape()[0],
        idx.len()
    );
    let mut shape = vals.shape().to_vec();
    shape[0] = len;
    let mut out = ndarray::ArrayD::zeros(ndarray::IxDyn(&shape));
    for (k, &i) in idx.iter().enumerate() {
        let i = usize::try_from(i)
            .ok()
            .filter(|i| *i < len)
            .unwrap_or_else(|| {
                panic!("ad_runtime::scatter_add_i64: index {i} out of range for length {len}")
            });
        let mut row = out.index_axis_mut(Axis(0), i);
        row += &vals.index_axis(Axis(0), k);
    }
    out
}
