//! Elementwise kernels: `build`, `map`, `zip_map`, `zip3_map`.
//!
//! Inputs are any `&ArrayBase` (owned arrays, views, strided or transposed
//! views) of the same shape; there is no implicit broadcasting (use
//! [`crate::broadcast_to`] to make a broadcast view). Outputs are new arrays
//! stored as ndarray stores the same operation's result (`crate::layout`):
//! `map` keeps the memory order of a contiguous input (a transposed view's
//! map is column-major), `zip_map` / `zip3_map` are column-major where
//! `Zip::map_collect` is, and everything else is row-major; a later sum then
//! adds in ndarray's order. Work for the parallel threshold: the number of output
//! elements. Elementwise results never depend on the thread count.
//!
//! In parallel, the output is cut into blocks of consecutive elements, one
//! task each (`par::fill`: the nesting flag of [`crate::par`] is set once
//! per task, so kernels the closure calls stay sequential at no
//! per-element cost). Outputs are written straight into a row-major vector,
//! never pre-filled: element types need no `Default` (a closure may return
//! a tuple of any arity, e.g. a map body's result and all its per-element
//! residuals). Inputs that are not row-major are first copied to row-major
//! in the parallel path. A large result's buffer comes from the per-thread
//! pool ([`crate::scratch`]).

use crate::blocks::{blocked_map1, blocked_map2, blocked_map3};
use crate::check;
use crate::layout::{contiguous_order, from_vec_in, layout_of, prefer_f};
use crate::par;
use crate::scratch::{output_for_overwrite, output_vec};
use ndarray::{Array, ArrayBase, CowArray, Data, Dimension, IntoDimension, Zip};

/// `out[idx] = f(idx)` for every index of `shape`.
///
/// The closure receives the index as ndarray's pattern type: `usize` for
/// rank 1 (`build(n, |i| ..)`), `(usize, usize)` for rank 2
/// (`build((m, n), |(i, j)| ..)`), `(usize, usize, usize)` for rank 3.
pub fn build<T, Sh, D, F>(shape: Sh, f: F) -> Array<T, D>
where
    T: Copy + Send + Sync + 'static,
    Sh: IntoDimension<Dim = D>,
    D: Dimension + Copy,
    D::Pattern: Send,
    F: Fn(D::Pattern) -> T + Sync + Send,
{
    build_weighted(shape, 1, f)
}

/// [`build`] for a closure doing about `work_per_elem` element operations
/// per call: it goes parallel when `size · work_per_elem` reaches the
/// threshold (a build whose body runs inner loops is worth splitting at
/// fewer elements). The result does not depend on it.
pub fn build_weighted<T, Sh, D, F>(shape: Sh, work_per_elem: usize, f: F) -> Array<T, D>
where
    T: Copy + Send + Sync + 'static,
    Sh: IntoDimension<Dim = D>,
    D: Dimension + Copy,
    D::Pattern: Send,
    F: Fn(D::Pattern) -> T + Sync + Send,
{
    let dim = shape.into_dimension();
    if !par::go_parallel(dim.size().saturating_mul(work_per_elem.max(1))) {
        let mut v = output_vec(dim.size());
        ndarray::indices(dim)
            .into_iter()
            .for_each(|ix| v.push(f(ix)));
        return Array::from_shape_vec(dim, v).expect("row-major shape");
    }
    let v = par::fill(dim.size(), |k| f(unravel(&dim, k)));
    Array::from_shape_vec(dim, v).expect("row-major shape")
}

/// The index pattern of row-major position `k` in `dim` (`k < dim.size()`).
pub(crate) fn unravel<D: Dimension>(dim: &D, mut k: usize) -> D::Pattern {
    let mut ix = D::zeros(dim.ndim());
    for ax in (0..dim.ndim()).rev() {
        let n = dim[ax];
        ix[ax] = k % n;
        k /= n;
    }
    ix.into_pattern()
}

/// The values of `iter` (`n` of them) in a vector, pooled when large.
fn collect_vec<T: 'static>(n: usize, iter: impl Iterator<Item = T>) -> Vec<T> {
    let mut v = output_vec(n);
    v.extend(iter);
    v
}

/// A row-major array of `dim` holding `v`.
fn from_vec<T, D: Dimension>(dim: D, v: Vec<T>) -> Array<T, D> {
    Array::from_shape_vec(dim, v).expect("row-major shape")
}

/// A row-major array of `dim` whose buffer is pooled, for the kernel to
/// overwrite in `Zip`'s order (the fast walk over strided inputs, which is
/// not row-major); its values are a pooled buffer's, or `first()` (the
/// first element's value; `f` is pure) beyond that buffer's length.
/// `None` for an empty result: `Zip` then makes it.
fn prefilled<T: Copy + 'static, D: Dimension>(
    dim: D,
    first: impl FnOnce() -> T,
) -> Option<Array<T, D>> {
    let n = dim.size();
    if n == 0 {
        return None;
    }
    Some(from_vec(dim, output_for_overwrite(n, first())))
}

/// `a` itself when row-major, else a row-major copy.
fn row_major<A: Copy, S: Data<Elem = A>, D: Dimension>(a: &ArrayBase<S, D>) -> CowArray<'_, A, D> {
    a.as_standard_layout()
}

/// Whether every row of `a` (lane of its last axis) is contiguous and
/// worth a loop of its own: the last axis has stride 1 and at least
/// [`MIN_ROW`] elements, and there are at least two axes (rank 1 is one
/// row, handled by `as_slice`). A row-broadcast view (`x - &means.row(j)`:
/// stride 0 on axis 0) qualifies. Walking such arrays row by row, each row a
/// slice, vectorises; `Zip`'s walk with run-time strides does not. (Rows
/// that are not contiguous, copied into a buffer first, measured slower
/// than `Zip`'s walk.)
fn rows_contiguous<A, S: Data<Elem = A>, D: Dimension>(a: &ArrayBase<S, D>) -> bool {
    let n = a.ndim();
    n >= 2 && a.shape()[n - 1] >= MIN_ROW && a.strides()[n - 1] == 1
}

/// The shortest row [`rows_contiguous`] accepts: shorter rows cost more
/// per row than the strided walk saves.
const MIN_ROW: usize = 4;

/// The rows of `a` as slices, in row-major order ([`rows_contiguous`] holds).
fn row_slices<'a, A, S: Data<Elem = A>, D: Dimension>(
    a: &'a ArrayBase<S, D>,
) -> impl Iterator<Item = &'a [A]> + 'a {
    a.rows()
        .into_iter()
        .map(|r| r.to_slice().expect("contiguous row"))
}

/// `out[i] = f(a[i])` for every index `i`.
pub fn map<A, B, S, D, F>(a: &ArrayBase<S, D>, f: F) -> Array<B, D>
where
    A: Copy + Sync + 'static,
    B: Copy + Send + Sync + 'static,
    S: Data<Elem = A>,
    D: Dimension,
    F: Fn(A) -> B + Sync + Send,
{
    // ndarray's `map` keeps the memory order of a contiguous input.
    let order = match layout_of(a) {
        Some(l) if !a.is_standard_layout() => contiguous_order(&l),
        _ => None,
    };
    if let (Some(order), Some(xs)) = (order, a.as_slice_memory_order()) {
        if !order.is_row_major() {
            let v = if par::go_parallel(a.len()) {
                par::fill(xs.len(), |k| f(xs[k]))
            } else {
                collect_vec(xs.len(), xs.iter().map(|&x| f(x)))
            };
            return from_vec_in(a.raw_dim(), v, &order);
        }
    }
    if !par::go_parallel(a.len()) {
        if let Some(xs) = a.as_slice() {
            return from_vec(a.raw_dim(), collect_vec(xs.len(), xs.iter().map(|&x| f(x))));
        }
        if let Some(v) = blocked_map1(a, &f) {
            return from_vec(a.raw_dim(), v);
        }
        if rows_contiguous(a) {
            let mut v = output_vec(a.len());
            for xs in row_slices(a) {
                v.extend(xs.iter().map(|&x| f(x)));
            }
            return from_vec(a.raw_dim(), v);
        }
        let Some(mut out) = prefilled(a.raw_dim(), || f(*a.first().expect("nonempty"))) else {
            // Row-major, as ndarray's `map` of a non-contiguous input.
            return from_vec(a.raw_dim(), collect_vec(a.len(), a.iter().map(|&x| f(x))));
        };
        Zip::from(&mut out).and(a).for_each(|o, &x| *o = f(x));
        return out;
    }
    let a = row_major(a);
    let xs = a.as_slice().expect("row-major");
    let v = par::fill(xs.len(), |k| f(xs[k]));
    Array::from_shape_vec(a.raw_dim(), v).expect("row-major shape")
}

/// `out[i] = f(a[i], b[i])`; `a` and `b` must have the same shape.
#[track_caller]
pub fn zip_map<A, B, C, SA, SB, D, F>(
    a: &ArrayBase<SA, D>,
    b: &ArrayBase<SB, D>,
    f: F,
) -> Array<C, D>
where
    A: Copy + Sync + 'static,
    B: Copy + Sync + 'static,
    C: Copy + Send + Sync + 'static,
    SA: Data<Elem = A>,
    SB: Data<Elem = B>,
    D: Dimension,
    F: Fn(A, B) -> C + Sync + Send,
{
    check::same_shape("zip_map", a.shape(), b.shape());
    // Column-major where `Zip::map_collect` (ndarray's `&a + &b`) is: the
    // row-major result of the transposed inputs, transposed.
    let column_major = prefer_f(&[layout_of(a), layout_of(b)]);
    let (a, b) = if column_major {
        (a.view().reversed_axes(), b.view().reversed_axes())
    } else {
        (a.view(), b.view())
    };
    let (a, b) = (&a, &b);
    let out = 'rows: {
        if !par::go_parallel(a.len()) {
            if let (Some(xs), Some(ys)) = (a.as_slice(), b.as_slice()) {
                let v = collect_vec(xs.len(), xs.iter().zip(ys).map(|(&x, &y)| f(x, y)));
                break 'rows from_vec(a.raw_dim(), v);
            }
            if let Some(v) = blocked_map2(a, b, &f) {
                break 'rows from_vec(a.raw_dim(), v);
            }
            if rows_contiguous(a) && rows_contiguous(b) {
                let mut v = output_vec(a.len());
                for (xs, ys) in row_slices(a).zip(row_slices(b)) {
                    v.extend(xs.iter().zip(ys).map(|(&x, &y)| f(x, y)));
                }
                break 'rows from_vec(a.raw_dim(), v);
            }
            let first = || f(*a.first().expect("nonempty"), *b.first().expect("nonempty"));
            let Some(mut out) = prefilled(a.raw_dim(), first) else {
                let v = a.iter().zip(b.iter()).map(|(&x, &y)| f(x, y));
                break 'rows from_vec(a.raw_dim(), collect_vec(a.len(), v));
            };
            Zip::from(&mut out)
                .and(a)
                .and(b)
                .for_each(|o, &x, &y| *o = f(x, y));
            break 'rows out;
        }
        let (a, b) = (row_major(a), row_major(b));
        let (xs, ys) = (
            a.as_slice().expect("row-major"),
            b.as_slice().expect("row-major"),
        );
        let v = par::fill(xs.len(), |k| f(xs[k], ys[k]));
        Array::from_shape_vec(a.raw_dim(), v).expect("row-major shape")
    };
    if column_major {
        out.reversed_axes()
    } else {
        out
    }
}

/// `out[i] = f(a[i], b[i], c[i])`; all inputs must have the same shape.
#[track_caller]
pub fn zip3_map<A, B, C, E, SA, SB, SC, D, F>(
    a: &ArrayBase<SA, D>,
    b: &ArrayBase<SB, D>,
    c: &ArrayBase<SC, D>,
    f: F,
) -> Array<E, D>
where
    A: Copy + Sync + 'static,
    B: Copy + Sync + 'static,
    C: Copy + Sync + 'static,
    E: Copy + Send + Sync + 'static,
    SA: Data<Elem = A>,
    SB: Data<Elem = B>,
    SC: Data<Elem = C>,
    D: Dimension,
    F: Fn(A, B, C) -> E + Sync + Send,
{
    check::same_shape("zip3_map", a.shape(), b.shape());
    check::same_shape("zip3_map", a.shape(), c.shape());
    // Column-major where `Zip::map_collect` is (see `zip_map`).
    let column_major = prefer_f(&[layout_of(a), layout_of(b), layout_of(c)]);
    let (a, b, c) = if column_major {
        (
            a.view().reversed_axes(),
            b.view().reversed_axes(),
            c.view().reversed_axes(),
        )
    } else {
        (a.view(), b.view(), c.view())
    };
    let (a, b, c) = (&a, &b, &c);
    let out = 'rows: {
        if !par::go_parallel(a.len()) {
            if let (Some(xs), Some(ys), Some(ws)) = (a.as_slice(), b.as_slice(), c.as_slice()) {
                let it = xs.iter().zip(ys).zip(ws).map(|((&x, &y), &w)| f(x, y, w));
                break 'rows from_vec(a.raw_dim(), collect_vec(xs.len(), it));
            }
            if let Some(v) = blocked_map3(a, b, c, &f) {
                break 'rows from_vec(a.raw_dim(), v);
            }
            if rows_contiguous(a) && rows_contiguous(b) && rows_contiguous(c) {
                let mut v = output_vec(a.len());
                let rows = row_slices(a).zip(row_slices(b)).zip(row_slices(c));
                for ((xs, ys), ws) in rows {
                    v.extend(xs.iter().zip(ys).zip(ws).map(|((&x, &y), &w)| f(x, y, w)));
                }
                break 'rows from_vec(a.raw_dim(), v);
            }
            let e = "nonempty";
            let first = || {
                f(
                    *a.first().expect(e),
                    *b.first().expect(e),
                    *c.first().expect(e),
                )
            };
            let Some(mut out) = prefilled(a.raw_dim(), first) else {
                let v = a.iter().zip(b.iter()).zip(c.iter());
                let v = v.map(|((&x, &y), &w)| f(x, y, w));
                break 'rows from_vec(a.raw_dim(), collect_vec(a.len(), v));
            };
            Zip::from(&mut out)
                .and(a)
                .and(b)
                .and(c)
                .for_each(|o, &x, &y, &w| *o = f(x, y, w));
            break 'rows out;
        }
        let (a, b, c) = (row_major(a), row_major(b), row_major(c));
        let xs = a.as_slice().expect("row-major");
        let (ys, ws) = (
            b.as_slice().expect("row-major"),
            c.as_slice().expect("row-major"),
        );
        let v = par::fill(xs.len(), |k| f(xs[k], ys[k], ws[k]));
        Array::from_shape_vec(a.raw_dim(), v).expect("row-major shape")
    };
    if column_major {
        out.reversed_axes()
    } else {
        out
    }
}
