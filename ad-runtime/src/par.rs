//! When and how kernels run in parallel.
//!
//! A kernel runs on rayon's current pool (the global pool, sized by
//! `RAYON_NUM_THREADS`, or the pool of an enclosing `ThreadPool::install`)
//! when all of these hold:
//! - the work (in elements, see each kernel) is at least [`par_threshold`];
//! - the call is not nested inside a closure that another ad-runtime kernel is
//!   already running in parallel (see [`in_parallel_kernel`]): inner levels run
//!   sequentially, so a `map` over rows whose closure calls `sum` parallelises
//!   the rows only;
//! - the current pool has more than one thread.
//!
//! Whether a kernel runs in parallel never changes its result: every
//! reduction is cut into chunks whose boundaries depend only on the input
//! length and fixed constants, and chunk results are combined in a fixed
//! order. The parallel and sequential paths execute the same arithmetic.
//!
//! Nesting is detected with a thread-local flag that ad-runtime sets while it
//! runs a parallel task, not with `rayon::current_thread_index()`: inside
//! `ThreadPool::install` the caller itself is a pool thread, and the
//! thread-index test would make every kernel called there sequential.

use rayon::prelude::*;
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Default of [`PAR_THRESHOLD`]: `2^17` elements. Below about that size the
/// cost of waking rayon workers (tens of microseconds, much more on a loaded
/// machine) is comparable to a memory-bound kernel's whole run time.
pub const DEFAULT_PAR_THRESHOLD: usize = 1 << 17;

/// Smallest amount of work, in elements, for which a kernel goes parallel.
///
/// Read it with [`par_threshold`] and change it with [`set_par_threshold`].
/// Changing it only changes speed, never results.
pub static PAR_THRESHOLD: AtomicUsize = AtomicUsize::new(DEFAULT_PAR_THRESHOLD);

/// The current parallel threshold in elements (see [`PAR_THRESHOLD`]).
pub fn par_threshold() -> usize {
    PAR_THRESHOLD.load(Ordering::Relaxed)
}

/// Set the parallel threshold to `n` elements; `0` or `1` parallelises every
/// kernel whose input can be split, `usize::MAX` disables parallelism.
pub fn set_par_threshold(n: usize) {
    PAR_THRESHOLD.store(n, Ordering::Relaxed);
}

thread_local! {
    static NESTED: Cell<bool> = const { Cell::new(false) };
}

/// `true` while the current thread runs a task of a parallel ad-runtime
/// kernel; kernels called from there run sequentially.
pub fn in_parallel_kernel() -> bool {
    NESTED.with(Cell::get)
}

/// Whether a kernel doing `work` element operations should use rayon: the
/// work reaches [`par_threshold`], the call is not nested in a parallel
/// kernel, and the current pool has more than one thread. Generated code
/// asks it before running a multi-output build or map in parallel.
pub fn go_parallel(work: usize) -> bool {
    work >= par_threshold() && !in_parallel_kernel() && rayon::current_num_threads() > 1
}

/// Restores the previous nesting flag, also when the task panics.
pub(crate) struct NestGuard(bool);

impl NestGuard {
    /// Set the nesting flag until the guard is dropped (use as the `init`
    /// of rayon's `map_init` / `for_each_init`, so the flag is set once per
    /// rayon job rather than once per element).
    pub(crate) fn enter() -> Self {
        NestGuard(NESTED.with(|c| c.replace(true)))
    }
}

impl Drop for NestGuard {
    fn drop(&mut self) {
        NESTED.with(|c| c.set(self.0));
    }
}

/// Run `f` with the nesting flag set, so kernels it calls stay sequential.
pub(crate) fn nested<R>(f: impl FnOnce() -> R) -> R {
    let _guard = NestGuard::enter();
    f()
}

/// `[f(0), f(1), .., f(n - 1)]`, computed in parallel when `parallel`.
///
/// The output order is the task order whatever thread ran each task.
pub(crate) fn map_tasks<R, F>(n: usize, parallel: bool, f: F) -> Vec<R>
where
    R: Send,
    F: Fn(usize) -> R + Sync + Send,
{
    if parallel && n > 1 {
        (0..n).into_par_iter().map(|t| nested(|| f(t))).collect()
    } else {
        (0..n).map(f).collect()
    }
}

/// Target number of elements per task of an elementwise kernel.
pub(crate) const BLOCK: usize = 1 << 14;

/// How to cut an elementwise kernel over `shape` into parallel blocks:
/// `Some((axis, k))` means blocks of `k` indices along `axis`; `None` means
/// run sequentially. Elementwise results do not depend on the blocks.
pub(crate) fn split_plan(shape: &[usize], work: usize) -> Option<(ndarray::Axis, usize)> {
    let size: usize = shape.iter().product();
    if shape.is_empty() || size == 0 || !go_parallel(work) {
        return None;
    }
    let blocks = size.div_ceil(BLOCK).max(2);
    let axis = if shape[0] >= blocks {
        0
    } else {
        // The longest axis, the first one on ties.
        (0..shape.len())
            .rev()
            .max_by_key(|&i| shape[i])
            .unwrap_or(0)
    };
    let len = shape[axis];
    if len < 2 {
        return None;
    }
    Some((ndarray::Axis(axis), len.div_ceil(blocks.min(len))))
}
