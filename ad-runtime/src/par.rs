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
//!
//! Every kernel reaches rayon through one function, `run_tasks`, which is
//! not generic: rayon's machinery (jobs, joins, producer bridges) is
//! compiled once, in this crate. Kernels are generic over their closures
//! and array types and so are compiled in the crate that calls them; when
//! each called rayon's parallel iterators itself, their instances made
//! about 70% of the machine code of a crate of `#[differentiable]`
//! functions (`bench/compile-time`). The helpers below (`map_tasks`,
//! [`for_each_item`], `fill`) hand their tasks to `run_tasks` as
//! `&dyn Fn(usize)`: one indirect call per task, a block of elements each.

use rayon::prelude::*;
use std::cell::Cell;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};

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

/// Runs `task(0)`, .., `task(n - 1)` on rayon's current pool, each with the
/// nesting flag set, and returns when all have run (a task's panic is
/// propagated). The only call into rayon's parallel iterators (module doc).
pub(crate) fn run_tasks(n: usize, task: &(dyn Fn(usize) + Sync)) {
    (0..n).into_par_iter().for_each(|t| nested(|| task(t)));
}

/// Takes the value out of a slot that one task owns.
fn take<T>(slot: &Mutex<Option<T>>) -> Option<T> {
    slot.lock().unwrap_or_else(PoisonError::into_inner).take()
}

/// `[f(0), f(1), .., f(n - 1)]`, computed in parallel when `parallel`.
///
/// The output order is the task order whatever thread ran each task.
pub(crate) fn map_tasks<R, F>(n: usize, parallel: bool, f: F) -> Vec<R>
where
    R: Send,
    F: Fn(usize) -> R + Sync + Send,
{
    map_tasks_dyn(n, parallel, &f)
}

/// [`map_tasks`] for every closure: `f` runs behind a vtable, once per task
/// (a block of work), so a kernel's body is compiled once per call site,
/// not once for each path here (issue 12: each copy is LLVM's work in the
/// user's crate).
#[inline(never)]
fn map_tasks_dyn<R: Send>(n: usize, parallel: bool, f: &(dyn Fn(usize) -> R + Sync)) -> Vec<R> {
    if parallel && n > 1 {
        let slots: Vec<Mutex<Option<R>>> = (0..n).map(|_| Mutex::new(None)).collect();
        run_tasks(n, &|t| {
            let r = f(t);
            *slots[t].lock().unwrap_or_else(PoisonError::into_inner) = Some(r);
        });
        slots
            .iter()
            .map(|s| take(s).expect("run_tasks ran every task"))
            .collect()
    } else {
        (0..n).map(f).collect()
    }
}

/// `f(item)` for every item, each moved into its own task, in parallel when
/// `parallel` (e.g. the blocks of an output array zipped with the blocks of
/// an input). Generated code uses it for builds and maps with several
/// outputs, cut into blocks of [`rows_per_task`] rows.
pub fn for_each_item<I, F>(items: Vec<I>, parallel: bool, f: F)
where
    I: Send,
    F: Fn(I) + Sync + Send,
{
    map_items(items, parallel, f);
}

/// `[f(item) for item in items]` in order, each item moved into its own
/// task, in parallel when `parallel`.
pub(crate) fn map_items<I, R, F>(items: Vec<I>, parallel: bool, f: F) -> Vec<R>
where
    I: Send,
    R: Send,
    F: Fn(I) -> R + Sync + Send,
{
    map_items_dyn(items, parallel, &f)
}

/// [`map_items`] for every closure, as [`map_tasks_dyn`].
#[inline(never)]
fn map_items_dyn<I: Send, R: Send>(
    items: Vec<I>,
    parallel: bool,
    f: &(dyn Fn(I) -> R + Sync),
) -> Vec<R> {
    // In order on this thread: no slots to hand the items over.
    if !parallel || items.len() <= 1 {
        return items.into_iter().map(f).collect();
    }
    let slots: Vec<Mutex<Option<I>>> = items.into_iter().map(|i| Mutex::new(Some(i))).collect();
    map_tasks(slots.len(), true, |t| {
        f(take(&slots[t]).expect("each item is taken by one task"))
    })
}

/// How many of `n` rows one task of an elementwise kernel takes: about 8
/// tasks per thread of the current pool, at least one row each.
pub fn rows_per_task(n: usize) -> usize {
    n.div_ceil(8 * rayon::current_num_threads()).max(1)
}

/// `[f(0), f(1), .., f(n - 1)]` computed in parallel blocks of consecutive
/// indices (about 8 per thread), written straight into the result (no
/// `Default` needed, no copy). The blocks change who computes an element,
/// never its value.
pub(crate) fn fill<T, F>(n: usize, f: F) -> Vec<T>
where
    T: Send + 'static,
    F: Fn(usize) -> T + Sync + Send,
{
    let block = rows_per_task(n);
    // Empty, with room for at least `n` (pooled when large).
    let mut v: Vec<T> = crate::scratch::output_vec(n);
    {
        let slots: Vec<Mutex<&mut [MaybeUninit<T>]>> = v.spare_capacity_mut()[..n]
            .chunks_mut(block)
            .map(Mutex::new)
            .collect();
        run_tasks(slots.len(), &|t| {
            let mut chunk = slots[t].lock().unwrap_or_else(PoisonError::into_inner);
            for (j, slot) in chunk.iter_mut().enumerate() {
                slot.write(f(t * block + j));
            }
        });
    }
    // SAFETY: the chunks partition the first `n` slots of the capacity,
    // `run_tasks` returns only after every task ran (a panic in `f` unwinds
    // through it before this line, leaving `v` empty: the elements written
    // so far leak, which is safe), and each task wrote
    // every slot of its chunk in the loop above; so slots `0..n` are
    // initialised. Tested by `fill_writes_every_element` (odd sizes, 1, 2
    // and 4 threads) and `fill_panics_cleanly`.
    #[allow(unsafe_code)]
    unsafe {
        v.set_len(n);
    }
    v
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

#[cfg(test)]
mod fill_tests {
    use super::*;

    #[test]
    fn fill_writes_every_element() {
        for threads in [1, 2, 4] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            for n in [0, 1, 7, 8, 63, 1000, 1001] {
                let v = pool.install(|| fill(n, |k| (k, k as f64 * 0.5)));
                assert_eq!(v.len(), n);
                assert!(v
                    .iter()
                    .enumerate()
                    .all(|(k, &(i, x))| i == k && x == k as f64 * 0.5));
            }
        }
    }

    #[test]
    fn fill_panics_cleanly() {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            pool.install(|| {
                fill(100, |k| {
                    if k == 57 {
                        panic!("element 57")
                    } else {
                        vec![k]
                    }
                })
            })
        }));
        assert!(r.is_err());
    }

    #[test]
    fn tasks_and_items_keep_their_order() {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(4)
            .build()
            .unwrap();
        let v = pool.install(|| map_tasks(50, true, |t| t * t));
        assert_eq!(v, (0..50).map(|t| t * t).collect::<Vec<_>>());
        let out: Vec<Mutex<usize>> = (0..20).map(|_| Mutex::new(0)).collect();
        pool.install(|| {
            for_each_item((0..20).collect(), true, |i: usize| {
                *out[i].lock().unwrap() = i + 1;
            })
        });
        assert!(out
            .iter()
            .enumerate()
            .all(|(i, m)| *m.lock().unwrap() == i + 1));
    }
}
