//! Argument checks shared by the kernels; each panics with a message naming
//! the kernel and the shapes or index involved.

/// Panic unless `a` and `b` are the same shape.
#[track_caller]
pub(crate) fn same_shape(kernel: &str, a: &[usize], b: &[usize]) {
    if a != b {
        panic!("ad_runtime::{kernel}: shape mismatch: {a:?} vs {b:?}");
    }
}

/// Panic unless `axis < ndim`.
#[track_caller]
pub(crate) fn axis_in_range(kernel: &str, axis: usize, shape: &[usize]) {
    if axis >= shape.len() {
        panic!("ad_runtime::{kernel}: axis {axis} out of range for an array of shape {shape:?}");
    }
}

/// Panic unless `index < len`.
#[track_caller]
pub(crate) fn index_in_range(kernel: &str, index: usize, len: usize) {
    if index >= len {
        panic!("ad_runtime::{kernel}: index {index} out of range for length {len}");
    }
}

/// Panic unless row index `index` is below `len`, the length of axis 0.
#[track_caller]
pub(crate) fn row_in_range(kernel: &str, index: usize, len: usize) {
    if index >= len {
        panic!("ad_runtime::{kernel}: index {index} out of range for axis 0 of length {len}");
    }
}
