//! Argument checks shared by the kernels; each panics with a message naming
//! the kernel and the shapes or index involved. The checks are inlined and
//! their panic paths kept out of line, so a check in an inner loop costs one
//! predictable comparison.

/// Panic unless `a` and `b` are the same shape.
#[inline(always)]
#[track_caller]
pub(crate) fn same_shape(kernel: &str, a: &[usize], b: &[usize]) {
    if a != b {
        shape_mismatch(kernel, a, b);
    }
}

#[cold]
#[inline(never)]
#[track_caller]
fn shape_mismatch(kernel: &str, a: &[usize], b: &[usize]) -> ! {
    panic!("ad_runtime::{kernel}: shape mismatch: {a:?} vs {b:?}");
}

/// Panic unless `axis < ndim`.
#[inline(always)]
#[track_caller]
pub(crate) fn axis_in_range(kernel: &str, axis: usize, shape: &[usize]) {
    if axis >= shape.len() {
        axis_out_of_range(kernel, axis, shape);
    }
}

#[cold]
#[inline(never)]
#[track_caller]
fn axis_out_of_range(kernel: &str, axis: usize, shape: &[usize]) -> ! {
    panic!("ad_runtime::{kernel}: axis {axis} out of range for an array of shape {shape:?}");
}

/// Panic unless `index < len`.
#[inline(always)]
#[track_caller]
pub(crate) fn index_in_range(kernel: &str, index: usize, len: usize) {
    if index >= len {
        index_out_of_range(kernel, index, len);
    }
}

#[cold]
#[inline(never)]
#[track_caller]
fn index_out_of_range(kernel: &str, index: usize, len: usize) -> ! {
    panic!("ad_runtime::{kernel}: index {index} out of range for length {len}");
}

/// Panic unless row index `index` is below `len`, the length of axis 0.
#[inline(always)]
#[track_caller]
pub(crate) fn row_in_range(kernel: &str, index: usize, len: usize) {
    if index >= len {
        row_out_of_range(kernel, index, len);
    }
}

/// The panic of [`row_in_range`], for loops that test the index themselves.
#[cold]
#[inline(never)]
#[track_caller]
pub(crate) fn row_out_of_range(kernel: &str, index: usize, len: usize) -> ! {
    panic!("ad_runtime::{kernel}: index {index} out of range for axis 0 of length {len}");
}

/// Checks the shape of an array argument of a generated derivative (a
/// tangent of `f_jvp` or a cotangent of `f_vjp`) on entry, so a wrong shape
/// is reported at the call, naming the argument, rather than inside a
/// kernel, or not at all.
///
/// Panics unless `given == expected`, with the message
/// `{func}: {role} `{name}` has shape {given:?}, expected {expected:?} ({of})`,
/// e.g. ``f_jvp: tangent `d_w` has shape [3], expected [4] (the shape of `w`)``.
#[inline(always)]
#[track_caller]
pub fn check_arg_shape(
    func: &str,
    role: &str,
    name: &str,
    given: &[usize],
    expected: &[usize],
    of: &str,
) {
    if given != expected {
        arg_shape_mismatch(func, role, name, given, expected, of);
    }
}

#[cold]
#[inline(never)]
#[track_caller]
fn arg_shape_mismatch(
    func: &str,
    role: &str,
    name: &str,
    given: &[usize],
    expected: &[usize],
    of: &str,
) -> ! {
    panic!("{func}: {role} `{name}` has shape {given:?}, expected {expected:?} ({of})");
}
