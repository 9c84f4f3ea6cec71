//! Per-iteration values of a loop: stacks preallocated for a known trip
//! count that a loop writes one slot per iteration into and a later loop
//! reads back, [`ArrayStack`], which copies a loop's per-iteration arrays
//! into one buffer as they come, and [`stack_arrays`], which joins equally
//! shaped arrays into one with a leading axis.
//!
//! Nothing grows during the loop. Writing or reading past the trip count,
//! or storing an array of another shape, panics with a message naming the
//! stack.

use crate::scratch::{take_buffer, Pooled};
use ndarray::{
    Array, ArrayBase, ArrayD, ArrayView, ArrayViewD, ArrayViewMut, Data, Dimension, IntoDimension,
    IxDyn, Zip,
};

/// Stacks equally shaped arrays of rank `elem_rank`, given in row-major
/// order of the leading shape `lead`, into one array of shape
/// `lead ++ element shape` (element sizes 0 when there are none). Panics if
/// the count is not the product of `lead` or two shapes differ.
pub fn stack_arrays<T: crate::Pooled>(
    lead: &[usize],
    elem_rank: usize,
    elems: Vec<ArrayViewD<'_, T>>,
) -> ArrayD<T> {
    let count: usize = lead.iter().product();
    assert_eq!(
        elems.len(),
        count,
        "ad_runtime::stack_arrays: {} values for the shape {lead:?}",
        elems.len()
    );
    let elem_shape: Vec<usize> = match elems.first() {
        Some(e) => e.shape().to_vec(),
        None => vec![0; elem_rank],
    };
    let size: usize = elem_shape.iter().product();
    let mut data = crate::scratch::take_buffer(count * size);
    for e in &elems {
        assert_eq!(
            e.shape(),
            &elem_shape[..],
            "ad_runtime::stack_arrays: values of different shapes"
        );
        append(&mut data, e);
    }
    let mut shape = lead.to_vec();
    shape.extend(elem_shape);
    ArrayD::from_shape_vec(IxDyn(&shape), data).expect("the data has the stacked shape")
}

/// Appends the elements of `a` in logical order: a contiguous array in one
/// copy, others element by element.
fn append<T: Copy, S: Data<Elem = T>, D: Dimension>(data: &mut Vec<T>, a: &ArrayBase<S, D>) {
    match a.as_slice() {
        Some(s) => data.extend_from_slice(s),
        None => data.extend(a.iter().cloned()),
    }
}

/// The per-iteration arrays of a loop whose trip count is known, copied as
/// they come into one buffer: `push` copies an array's elements (in
/// logical order) and drops it (an owned array's buffer goes back to the
/// pool, as [`crate::recycle`]), so no iteration's array outlives its
/// iteration, and `finish` returns them stacked along a new leading axis,
/// `[count] ++ element shape`, without a second copy. All pushed arrays
/// must have one shape (a push of another shape panics); with none pushed
/// the element sizes are 0. The buffer comes from this thread's pool.
/// Unlike [`ArrayResidualStack`], it needs no shape before the first push
/// and ends as one owned array.
#[derive(Debug)]
pub struct ArrayStack<T, D: Dimension> {
    data: Vec<T>,
    elem: Option<D>,
    count: usize,
    trip: usize,
}

impl<T: Pooled, D: Dimension> ArrayStack<T, D> {
    /// An empty stack for a loop of `trip` iterations.
    pub fn with_capacity(trip: usize) -> Self {
        ArrayStack {
            data: Vec::new(),
            elem: None,
            count: 0,
            trip,
        }
    }

    /// Appends the array of the next iteration.
    pub fn push<S: Data<Elem = T>>(&mut self, a: ArrayBase<S, D>) {
        match &self.elem {
            Some(e) => assert_eq!(
                e.slice(),
                a.shape(),
                "ad_runtime::ArrayStack: values of different shapes"
            ),
            None => {
                self.data = take_buffer(self.trip.max(1) * a.len());
                self.elem = Some(a.raw_dim());
            }
        }
        append(&mut self.data, &a);
        self.count += 1;
        // An owned array's buffer goes back to this thread's pool (the next
        // iteration's array of the same size reuses it); a view is dropped.
        if let Ok(owned) = a.try_into_owned_nocopy() {
            crate::scratch::recycle(owned);
        }
    }

    /// The arrays stacked in iteration order: in the order pushed, or with
    /// `rev` (a loop that ran its iterations last to first) reversed.
    pub fn finish(mut self, rev: bool) -> Array<T, D::Larger> {
        let elem = self
            .elem
            .take()
            .unwrap_or_else(|| D::zeros(D::NDIM.unwrap_or(0)));
        let size = elem.size();
        if rev && size > 0 {
            let (n, mut data) = (self.count, std::mem::take(&mut self.data));
            for i in 0..n / 2 {
                let (head, tail) = data.split_at_mut((n - 1 - i) * size);
                head[i * size..(i + 1) * size].swap_with_slice(&mut tail[..size]);
            }
            self.data = data;
        }
        let mut shape = D::Larger::zeros(elem.ndim() + 1);
        shape.slice_mut()[0] = self.count;
        shape.slice_mut()[1..].copy_from_slice(elem.slice());
        Array::from_shape_vec(shape, std::mem::take(&mut self.data))
            .expect("the data has the stacked shape")
    }
}

/// Per-iteration scalars: slot `i` holds the value saved at iteration `i`
/// of a loop with a fixed trip count.
#[derive(Clone, Debug)]
pub struct ResidualStack<T> {
    data: Vec<T>,
    len: usize,
}

impl<T: Copy + Default> ResidualStack<T> {
    /// A stack of `trip_count` slots, all `T::default()`, none pushed.
    pub fn new(trip_count: usize) -> Self {
        Self {
            data: vec![T::default(); trip_count],
            len: 0,
        }
    }

    /// The trip count (number of slots).
    pub fn trip_count(&self) -> usize {
        self.data.len()
    }

    /// Number of values pushed and not popped.
    pub fn len(&self) -> usize {
        self.len
    }

    /// `true` when nothing is pushed.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Save `v` in the next slot (`slot[len] = v; len += 1`).
    #[track_caller]
    pub fn push(&mut self, v: T) {
        if self.len == self.data.len() {
            panic!(
                "ad_runtime::ResidualStack::push: iteration {} out of range for trip count {}",
                self.len,
                self.data.len()
            );
        }
        self.data[self.len] = v;
        self.len += 1;
    }

    /// Remove and return the last pushed value (`len -= 1; slot[len]`).
    #[track_caller]
    pub fn pop(&mut self) -> T {
        if self.len == 0 {
            panic!("ad_runtime::ResidualStack::pop: stack is empty");
        }
        self.len -= 1;
        self.data[self.len]
    }

    /// `slot[i] = v`.
    #[track_caller]
    pub fn set(&mut self, i: usize, v: T) {
        self.check(i, "set");
        self.data[i] = v;
    }

    /// `slot[i]`.
    #[track_caller]
    pub fn get(&self, i: usize) -> T {
        self.check(i, "get");
        self.data[i]
    }

    /// All slots, in iteration order.
    pub fn as_slice(&self) -> &[T] {
        &self.data
    }

    #[track_caller]
    fn check(&self, i: usize, op: &str) {
        if i >= self.data.len() {
            panic!(
                "ad_runtime::ResidualStack::{op}: iteration {i} out of range for trip count {}",
                self.data.len()
            );
        }
    }
}

/// Per-iteration arrays of one fixed shape, stored contiguously as a
/// `trip_count × shape` buffer: row `i` holds the array saved at iteration
/// `i`.
#[derive(Clone, Debug)]
pub struct ArrayResidualStack<T, D: Dimension> {
    data: Vec<T>,
    shape: D,
    row: usize,
    trip_count: usize,
    len: usize,
}

impl<T: Copy + Default, D: Dimension> ArrayResidualStack<T, D> {
    /// A stack of `trip_count` rows of shape `shape`, all `T::default()`.
    pub fn new<Sh: IntoDimension<Dim = D>>(trip_count: usize, shape: Sh) -> Self {
        let shape = shape.into_dimension();
        let row = shape.size();
        Self {
            data: vec![T::default(); trip_count * row],
            shape,
            row,
            trip_count,
            len: 0,
        }
    }

    /// The trip count (number of rows).
    pub fn trip_count(&self) -> usize {
        self.trip_count
    }

    /// The shape of every row.
    pub fn shape(&self) -> &[usize] {
        self.shape.slice()
    }

    /// Number of rows pushed and not popped.
    pub fn len(&self) -> usize {
        self.len
    }

    /// `true` when nothing is pushed.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// `row[i] = x`; panics if `x` has another shape.
    #[track_caller]
    pub fn set<S: Data<Elem = T>>(&mut self, i: usize, x: &ArrayBase<S, D>) {
        self.check(i, "set");
        if x.shape() != self.shape.slice() {
            panic!(
                "ad_runtime::ArrayResidualStack::set: shape mismatch: stack rows are {:?}, got {:?}",
                self.shape.slice(),
                x.shape()
            );
        }
        Zip::from(self.row_mut(i)).and(x).for_each(|d, &s| *d = s);
    }

    /// Save `x` as the next row (`row[len] = x; len += 1`).
    #[track_caller]
    pub fn push<S: Data<Elem = T>>(&mut self, x: &ArrayBase<S, D>) {
        if self.len == self.trip_count {
            panic!(
                "ad_runtime::ArrayResidualStack::push: iteration {} out of range for trip count {}",
                self.len, self.trip_count
            );
        }
        self.set(self.len, x);
        self.len += 1;
    }

    /// Remove the last pushed row and return a view of it.
    #[track_caller]
    pub fn pop(&mut self) -> ArrayView<'_, T, D> {
        if self.len == 0 {
            panic!("ad_runtime::ArrayResidualStack::pop: stack is empty");
        }
        self.len -= 1;
        self.get(self.len)
    }

    /// A view of `row[i]`.
    #[track_caller]
    pub fn get(&self, i: usize) -> ArrayView<'_, T, D> {
        self.check(i, "get");
        ArrayView::from_shape(
            self.shape.clone(),
            &self.data[i * self.row..(i + 1) * self.row],
        )
        .expect("row buffer matches the shape")
    }

    /// A mutable view of `row[i]`, to write an iteration's array in place.
    #[track_caller]
    pub fn row_mut(&mut self, i: usize) -> ArrayViewMut<'_, T, D> {
        self.check(i, "row_mut");
        ArrayViewMut::from_shape(
            self.shape.clone(),
            &mut self.data[i * self.row..(i + 1) * self.row],
        )
        .expect("row buffer matches the shape")
    }

    #[track_caller]
    fn check(&self, i: usize, op: &str) {
        if i >= self.trip_count {
            panic!(
                "ad_runtime::ArrayResidualStack::{op}: iteration {i} out of range for trip count {}",
                self.trip_count
            );
        }
    }
}

#[cfg(test)]
mod array_stack_tests {
    use super::*;

    /// An array stack gives the pushed arrays along a new leading axis, in
    /// order or reversed, whatever their layout; none pushed gives a zero
    /// leading size.
    #[test]
    fn array_stack_stacks_in_order_and_reversed() {
        let a = ndarray::arr2(&[[1.0, 2.0], [3.0, 4.0]]);
        let b = a.t().to_owned();
        let mut s = ArrayStack::with_capacity(3);
        s.push(a.clone());
        s.push(a.t());
        s.push(a.mapv(|v| -v));
        let got = s.finish(false);
        assert_eq!(got.shape(), &[3, 2, 2]);
        assert_eq!(got.index_axis(ndarray::Axis(0), 1), b);
        let mut r = ArrayStack::with_capacity(3);
        for k in 0..3 {
            r.push(ndarray::Array1::from_elem(2, k as f64));
        }
        assert_eq!(
            r.finish(true),
            ndarray::arr2(&[[2.0, 2.0], [1.0, 1.0], [0.0, 0.0]])
        );
        let e: ArrayStack<f64, ndarray::Ix2> = ArrayStack::with_capacity(0);
        assert_eq!(e.finish(true).shape(), &[0, 0, 0]);
        let bad = std::panic::catch_unwind(|| {
            let mut s = ArrayStack::with_capacity(2);
            s.push(ndarray::Array1::<f64>::zeros(2));
            s.push(ndarray::Array1::<f64>::zeros(3));
        });
        assert!(bad.is_err());
    }
}
