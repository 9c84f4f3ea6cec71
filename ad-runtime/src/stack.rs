//! Per-iteration values of a loop: stacks preallocated for a known trip
//! count that a loop writes one slot per iteration into and a later loop
//! reads back, and [`stack_arrays`], which joins equally shaped arrays into
//! one with a leading axis.
//!
//! Nothing grows during the loop. Writing or reading past the trip count,
//! or storing an array of another shape, panics with a message naming the
//! stack.

use ndarray::{
    ArrayBase, ArrayD, ArrayView, ArrayViewD, ArrayViewMut, Data, Dimension, IntoDimension, IxDyn,
    Zip,
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
        // A contiguous value is one copy; others go element by element.
        match e.as_slice() {
            Some(s) => data.extend_from_slice(s),
            None => data.extend(e.iter().cloned()),
        }
    }
    let mut shape = lead.to_vec();
    shape.extend(elem_shape);
    ArrayD::from_shape_vec(IxDyn(&shape), data).expect("the data has the stacked shape")
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
