//! Reductions: sum, product, arg-max/arg-min, logsumexp — over the whole
//! array or along one axis.
//!
//! Every result is bit-identical for any thread count: the summation order is
//! fixed by the input shape alone (see `Note [lane order]` in `fold.rs`:
//! chunks of 8192 elements, 8 lanes per chunk, a fixed lane tree, chunks
//! merged left to right). Whole-array reductions follow the logical
//! row-major order, so a view and its owned copy give the same bits, and an
//! axis reduction gives the same bits whatever the memory layout. Work for
//! the parallel threshold: the number of input elements.

use crate::check;
use crate::elem::Elem;
use crate::fold::{reduce_axis, reduce_flat, LaneOp};
use ndarray::{arr0, Array, ArrayBase, Data, Dimension, RemoveAxis};

/// `acc + x`.
struct Sum;

impl<T: Elem> LaneOp<T> for Sum {
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

/// `(product of non-zeros, zero count)`.
struct Prod;

impl<T: Elem> LaneOp<T> for Prod {
    type Acc = (T, usize);
    type P = ();
    #[inline(always)]
    fn init(&self) -> (T, usize) {
        (T::ONE, 0)
    }
    #[inline(always)]
    fn step(&self, (p, z): (T, usize), x: T, _: usize, _: ()) -> (T, usize) {
        if x == T::ZERO {
            (p, z + 1)
        } else {
            (p * x, z)
        }
    }
    #[inline(always)]
    fn merge(&self, a: (T, usize), b: (T, usize)) -> (T, usize) {
        (a.0 * b.0, a.1 + b.1)
    }
}

/// `(best value, first index of it)`; `MAX` selects max or min. NaNs are
/// skipped (the IR's rule, [`crate::arg`]): a number beats a NaN, a NaN
/// beats nothing. The index `usize::MAX` marks an empty accumulator.
struct ArgBest<const MAX: bool>;

#[inline(always)]
fn better<T: Elem, const MAX: bool>(a: T, b: T) -> bool {
    crate::arg::beats(a, b, MAX)
}

impl<T: Elem, const MAX: bool> LaneOp<T> for ArgBest<MAX> {
    type Acc = (T, usize);
    type P = ();
    #[inline(always)]
    fn init(&self) -> (T, usize) {
        (T::ZERO, usize::MAX)
    }
    #[inline(always)]
    fn first(&self, x: T, j: usize, _: ()) -> (T, usize) {
        (x, j)
    }
    /// Only called on a lane that already holds an element (after `first`).
    #[inline(always)]
    fn step(&self, acc: (T, usize), x: T, j: usize, _: ()) -> (T, usize) {
        let b = better::<T, MAX>(x, acc.0);
        (if b { x } else { acc.0 }, if b { j } else { acc.1 })
    }
    #[inline(always)]
    fn merge(&self, a: (T, usize), b: (T, usize)) -> (T, usize) {
        let take_b = a.1 == usize::MAX
            || (b.1 != usize::MAX
                && (better::<T, MAX>(b.0, a.0) || (!better::<T, MAX>(a.0, b.0) && b.1 < a.1)));
        if take_b {
            b
        } else {
            a
        }
    }
}

/// `acc + exp(x - p)`, `p` the shift.
struct SumExp;

impl<T: Elem> LaneOp<T> for SumExp {
    type Acc = T;
    type P = T;
    #[inline(always)]
    fn init(&self) -> T {
        T::ZERO
    }
    #[inline(always)]
    fn step(&self, acc: T, x: T, _: usize, m: T) -> T {
        acc + (x - m).exp()
    }
    #[inline(always)]
    fn merge(&self, a: T, b: T) -> T {
        a + b
    }
}

/// `Σᵢ a[i]` over every element (0 for an empty array).
pub fn sum<T, S, D>(a: &ArrayBase<S, D>) -> T
where
    T: Elem,
    S: Data<Elem = T>,
    D: Dimension,
{
    reduce_flat(&Sum, a, ())
}

/// `out[..] = Σₖ a[.., k, ..]` with `k` running along `axis`; the output
/// has the input's shape without `axis` (a 0-d array for a rank-1 input).
#[track_caller]
pub fn sum_axis<T, S, D>(a: &ArrayBase<S, D>, axis: usize) -> Array<T, D::Smaller>
where
    T: Elem,
    S: Data<Elem = T>,
    D: Dimension + RemoveAxis,
{
    check::axis_in_range("sum_axis", axis, a.shape());
    let unit = arr0(());
    let ps = unit
        .broadcast(a.raw_dim().remove_axis(ndarray::Axis(axis)))
        .expect("0-d broadcasts");
    reduce_axis(&Sum, a, axis, ps)
}

/// `(Π_{a[i] ≠ 0} a[i], #{i : a[i] = 0})`: the product of the non-zero
/// elements and the number of zeros (the product is 1 when there are none).
pub fn product<T, S, D>(a: &ArrayBase<S, D>) -> (T, usize)
where
    T: Elem,
    S: Data<Elem = T>,
    D: Dimension,
{
    reduce_flat(&Prod, a, ())
}

/// [`product`] along `axis`: `(product of non-zeros, zero count)` arrays of
/// the input's shape without `axis`.
#[track_caller]
pub fn product_axis<T, S, D>(
    a: &ArrayBase<S, D>,
    axis: usize,
) -> (Array<T, D::Smaller>, Array<usize, D::Smaller>)
where
    T: Elem,
    S: Data<Elem = T>,
    D: Dimension + RemoveAxis,
{
    check::axis_in_range("product_axis", axis, a.shape());
    let unit = arr0(());
    let ps = unit
        .broadcast(a.raw_dim().remove_axis(ndarray::Axis(axis)))
        .expect("0-d broadcasts");
    let r = reduce_axis(&Prod, a, axis, ps);
    (r.map(|p| p.0), r.map(|p| p.1))
}

/// `(max a, i*)` where `i*` is the first flat index (logical row-major
/// order) holding the maximum, NaNs skipped (the value is NaN only when
/// every element is).
/// Turn `i*` into a multi-index with [`unravel_index`]. Panics on an empty
/// array.
#[track_caller]
pub fn max_arg<T, S, D>(a: &ArrayBase<S, D>) -> (T, usize)
where
    T: Elem,
    S: Data<Elem = T>,
    D: Dimension,
{
    non_empty("max_arg", a.shape());
    reduce_flat(&ArgBest::<true>, a, ())
}

/// `(min a, i*)`, `i*` the first flat index of the minimum, NaNs skipped.
/// Panics on an empty array.
#[track_caller]
pub fn min_arg<T, S, D>(a: &ArrayBase<S, D>) -> (T, usize)
where
    T: Elem,
    S: Data<Elem = T>,
    D: Dimension,
{
    non_empty("min_arg", a.shape());
    reduce_flat(&ArgBest::<false>, a, ())
}

/// [`max_arg`] along `axis`: `(values, indices)` with
/// `values[..] = max_k a[.., k, ..]` and `indices[..]` the first such `k`.
/// Panics if `axis` has length 0.
#[track_caller]
pub fn max_arg_axis<T, S, D>(
    a: &ArrayBase<S, D>,
    axis: usize,
) -> (Array<T, D::Smaller>, Array<usize, D::Smaller>)
where
    T: Elem,
    S: Data<Elem = T>,
    D: Dimension + RemoveAxis,
{
    arg_axis::<true, _, _, _>("max_arg_axis", a, axis)
}

/// [`min_arg`] along `axis`: `(values, indices)` with
/// `values[..] = min_k a[.., k, ..]` and `indices[..]` the first such `k`.
/// Panics if `axis` has length 0.
#[track_caller]
pub fn min_arg_axis<T, S, D>(
    a: &ArrayBase<S, D>,
    axis: usize,
) -> (Array<T, D::Smaller>, Array<usize, D::Smaller>)
where
    T: Elem,
    S: Data<Elem = T>,
    D: Dimension + RemoveAxis,
{
    arg_axis::<false, _, _, _>("min_arg_axis", a, axis)
}

#[track_caller]
fn arg_axis<const MAX: bool, T, S, D>(
    kernel: &str,
    a: &ArrayBase<S, D>,
    axis: usize,
) -> (Array<T, D::Smaller>, Array<usize, D::Smaller>)
where
    T: Elem,
    S: Data<Elem = T>,
    D: Dimension + RemoveAxis,
{
    check::axis_in_range(kernel, axis, a.shape());
    if a.len_of(ndarray::Axis(axis)) == 0 {
        panic!(
            "ad_runtime::{kernel}: axis {axis} has length 0 in shape {:?}",
            a.shape()
        );
    }
    let unit = arr0(());
    let ps = unit
        .broadcast(a.raw_dim().remove_axis(ndarray::Axis(axis)))
        .expect("0-d broadcasts");
    let r = reduce_axis(&ArgBest::<MAX>, a, axis, ps);
    (r.map(|p| p.0), r.map(|p| p.1))
}

#[track_caller]
fn non_empty(kernel: &str, shape: &[usize]) {
    if shape.iter().product::<usize>() == 0 {
        panic!("ad_runtime::{kernel}: empty array of shape {shape:?}");
    }
}

/// `log Σᵢ exp(a[i])`, computed as `m + log Σᵢ exp(a[i] - m)` with
/// `m = max a` in two passes without a temporary array. Returns `-∞` for an
/// empty array or when every element is `-∞`, `+∞` if an element is `+∞`,
/// NaN if an element is NaN.
pub fn logsumexp<T, S, D>(a: &ArrayBase<S, D>) -> T
where
    T: Elem,
    S: Data<Elem = T>,
    D: Dimension,
{
    if a.is_empty() {
        return T::NEG_INFINITY;
    }
    let (m, _) = reduce_flat(&ArgBest::<true>, a, ());
    if !finite(m) {
        return m;
    }
    m + reduce_flat(&SumExp, a, m).ln()
}

/// [`logsumexp`] along `axis`: `out[..] = log Σₖ exp(a[.., k, ..])`, each
/// output shifted by its own maximum.
#[track_caller]
pub fn logsumexp_axis<T, S, D>(a: &ArrayBase<S, D>, axis: usize) -> Array<T, D::Smaller>
where
    T: Elem,
    S: Data<Elem = T>,
    D: Dimension + RemoveAxis,
{
    check::axis_in_range("logsumexp_axis", axis, a.shape());
    let dim = a.raw_dim().remove_axis(ndarray::Axis(axis));
    if a.len_of(ndarray::Axis(axis)) == 0 {
        return Array::from_elem(dim, T::NEG_INFINITY);
    }
    let unit = arr0(());
    let ps = unit.broadcast(dim).expect("0-d broadcasts");
    let m = reduce_axis(&ArgBest::<true>, a, axis, ps).map(|p| p.0);
    // Non-finite maxima are the answer; shift by 0 there to keep exp finite.
    let shift = m.map(|&x| if finite(x) { x } else { T::ZERO });
    let s = reduce_axis(&SumExp, a, axis, shift.view());
    ndarray::Zip::from(&m)
        .and(&s)
        .map_collect(|&m, &s| if finite(m) { m + s.ln() } else { m })
}

fn finite<T: Elem>(x: T) -> bool {
    x > T::NEG_INFINITY && x < T::INFINITY
}

/// The multi-index of the element at flat (row-major) position `flat` of an
/// array of shape `dim`, as ndarray's pattern (`usize`, `(usize, usize)`,
/// ...). Inverse of row-major flattening: with `dim = (m, n)`,
/// `flat = i·n + j ↦ (i, j)`. Panics if `flat` is not below the size.
#[track_caller]
pub fn unravel_index<D: Dimension>(flat: usize, dim: D) -> D::Pattern {
    check::index_in_range("unravel_index", flat, dim.size());
    let mut idx = dim.clone();
    let mut rest = flat;
    for k in (0..dim.ndim()).rev() {
        idx[k] = rest % dim[k];
        rest /= dim[k];
    }
    idx.into_pattern()
}
