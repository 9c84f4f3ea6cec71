//! Reusable per-thread buffers for per-iteration values of loops that run
//! inside other loops or kernels.
//!
//! A loop nested in a loop (or in the body of a [`crate::build`] /
//! [`crate::map`]) that saves one value per iteration would otherwise
//! allocate a fresh vector every time it runs. A [`Scratch`] takes a buffer
//! from a small pool owned by the current thread and gives it back when
//! dropped, so after the first few runs no allocation happens at all:
//!
//! ```
//! use ad_runtime::Scratch;
//! let mut total = 0.0;
//! for outer in 0..1000 {
//!     let mut s = Scratch::<f64>::new();
//!     s.reset(8); // 8 zeros; reuses a pooled buffer after the first run
//!     for i in 0..8 {
//!         s[i] = (outer * i) as f64;
//!     }
//!     total += s.view()[7];
//! }
//! assert_eq!(total, 7.0 * 999.0 * 1000.0 / 2.0);
//! ```
//!
//! [`pooled_zeros`] and [`recycle`] do the same for zero arrays that live
//! for one iteration (a row's cotangent, say).
//!
//! The kernels that make arrays ([`crate::map`], [`crate::build`] and the
//! others) take the buffer of their result from the pool too, and generated
//! code hands every temporary array back once it is dead ([`recycle`]): a
//! small array made and dropped once per iteration of a loop (a row's
//! `mapv` in the body of a `map_axis`, say) is the same buffer every
//! iteration, not an allocation and a free. A derivative made of whole-array operations
//! (one array per operation) so reuses the same memory call after call,
//! instead of returning it to the system and page-faulting it in again
//! (glibc trims the heap's top when a large block is freed).
//!
//! Each thread has its own pool (rayon workers each reuse theirs), so the
//! buffers need no synchronisation and the values never depend on the
//! thread. The pool keeps at most [`SMALL_POOL_LEN`] small buffers (under
//! [`POOL_MIN_BYTES`]) and apart from them at most [`POOL_LEN`] large ones
//! per element type, these at most [`POOL_MAX_TOTAL_BYTES`] together, and
//! lets buffers larger than [`POOL_MAX_BYTES`] go. `take_buffer` hands out the smallest pooled
//! buffer that fits (residual stacks take theirs so; `f_vjp` recycles its
//! residuals), so a derivative called again and again reuses its memory
//! instead of page-faulting fresh memory from the system on every call.

use ndarray::{Array, ArrayView1, Dimension, ShapeBuilder};
use std::any::Any;
use std::cell::RefCell;
use std::ops::{Deref, DerefMut};

/// Most large buffers (of at least [`POOL_MIN_BYTES`]) a thread keeps per
/// element type.
pub const POOL_LEN: usize = 32;

/// Largest buffer (in bytes of capacity) a thread keeps for reuse.
pub const POOL_MAX_BYTES: usize = 1 << 26;

/// Most bytes (of capacity) a thread keeps pooled per element type: what a
/// derivative call leaves for the next one to reuse (residual stacks
/// included) instead of asking the system for fresh pages every call.
pub const POOL_MAX_TOTAL_BYTES: usize = 1 << 28;

/// Smallest buffer (in bytes) for which the pool is searched for the best
/// fit; a smaller request only looks at the newest pooled buffer (what a
/// loop gave back last), which is O(1) per iteration.
pub const POOL_MIN_BYTES: usize = 1 << 12;

/// Most small buffers (under [`POOL_MIN_BYTES`]) a thread keeps per
/// element type, apart from the large ones: a loop's per-iteration arrays
/// are given back and taken again in the same order, so a few suffice. A
/// full list lets its older half go at once (one shift per
/// `SMALL_POOL_LEN / 2` drops, not one per drop).
pub const SMALL_POOL_LEN: usize = 32;

/// How many of the newest small buffers a small request looks at.
const SMALL_SEARCH: usize = 8;

/// One thread's buffers of one element type, newest last: small ones
/// (capacity under [`POOL_MIN_BYTES`]) and large ones kept apart, so that
/// per-iteration arrays of a few elements neither crowd out the large
/// arrays of a whole-array derivative nor are crowded out by them.
#[derive(Debug, Default)]
pub struct Pool<T> {
    small: Vec<Vec<T>>,
    large: Vec<Vec<T>>,
}

impl<T> Pool<T> {
    /// How many buffers are held.
    pub fn len(&self) -> usize {
        self.small.len() + self.large.len()
    }

    /// Whether no buffer is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Lets every buffer go.
    pub fn clear(&mut self) {
        self.small.clear();
        self.large.clear();
    }
}

/// Element types with a per-thread pool of buffers.
pub trait Pooled: Copy + Default + 'static {
    /// Runs `f` on this thread's pool of buffers of `Self` (`None` while
    /// the thread is being torn down and its pool is gone).
    fn with_pool<R>(f: impl FnOnce(&mut Pool<Self>) -> R) -> Option<R>;
}

macro_rules! pooled {
    ($($t:ty => $pool:ident),*) => {$(
        thread_local! {
            static $pool: RefCell<Pool<$t>> = const {
                RefCell::new(Pool { small: Vec::new(), large: Vec::new() })
            };
        }
        impl Pooled for $t {
            fn with_pool<R>(f: impl FnOnce(&mut Pool<Self>) -> R) -> Option<R> {
                $pool.try_with(|p| f(&mut p.borrow_mut())).ok()
            }
        }
    )*};
}

pooled!(f64 => POOL_F64, f32 => POOL_F32, i64 => POOL_I64, bool => POOL_BOOL);

/// A buffer taken from this thread's pool, given back when dropped.
/// Dereferences to a slice of the length set by [`Scratch::reset`].
#[derive(Debug)]
pub struct Scratch<T: Pooled> {
    buf: Vec<T>,
}

impl<T: Pooled> Scratch<T> {
    /// An empty buffer, reusing the small pooled one given back last (a
    /// loop taking one per iteration gets its own back at once), else the
    /// newest large one.
    pub fn new() -> Self {
        let buf = T::with_pool(|p| p.small.pop().or_else(|| p.large.pop()))
            .flatten()
            .unwrap_or_default();
        Scratch { buf }
    }

    /// Makes the buffer `n` values `T::default()` long: the buffer it has
    /// when it holds `n`, or else the smallest pooled one that does
    /// (`take_buffer`; it allocates only when none does).
    pub fn reset(&mut self, n: usize) {
        self.hold(n);
        self.buf.clear();
        self.buf.resize(n, T::default());
    }

    /// Swaps in a pooled buffer holding `n` values when this one is too
    /// small (the old one goes back to the pool).
    fn hold(&mut self, n: usize) {
        if self.buf.capacity() < n {
            let old = std::mem::replace(&mut self.buf, take_buffer_as_is(n));
            drop(Scratch { buf: old });
        }
    }

    /// Makes the buffer `n` values long for a caller that writes every
    /// element before it reads any (the per-iteration outputs of a counted
    /// loop): like [`Scratch::reset`], but values the buffer already holds
    /// are left as they are instead of being zeroed again (only elements
    /// beyond its current length become `T::default()`). A loop run once
    /// per block of a strip-mined kernel so pays no memset per run.
    pub fn reset_for_overwrite(&mut self, n: usize) {
        self.hold(n);
        keep_for_overwrite(&mut self.buf, n, T::default());
    }

    /// The values as a one-dimensional array view.
    pub fn view(&self) -> ArrayView1<'_, T> {
        ArrayView1::from(&self.buf[..])
    }
}

impl<T: Pooled> Default for Scratch<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Pooled> Deref for Scratch<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        &self.buf
    }
}

impl<T: Pooled> DerefMut for Scratch<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        &mut self.buf
    }
}

impl<T: Pooled> Drop for Scratch<T> {
    fn drop(&mut self) {
        let buf = std::mem::take(&mut self.buf);
        if buf.capacity() == 0 || buf.capacity() * std::mem::size_of::<T>() > POOL_MAX_BYTES {
            return;
        }
        let size = std::mem::size_of::<T>();
        let bytes = buf.capacity() * size;
        T::with_pool(|p| {
            if bytes < POOL_MIN_BYTES {
                // Full, the older half goes at once: the newest are what a
                // running loop takes again, and letting one buffer go per
                // drop shifted the whole list at every small drop of a loop
                // that gives back more than it takes (LSTM's gradient:
                // 6% of its instructions).
                if p.small.len() >= SMALL_POOL_LEN {
                    p.small.drain(..SMALL_POOL_LEN / 2);
                }
                p.small.push(buf);
                return;
            }
            let p = &mut p.large;
            // A full pool gives its smallest buffer up for a larger one.
            if p.len() >= POOL_LEN {
                let Some((k, small)) = p.iter().enumerate().min_by_key(|(_, b)| b.capacity())
                else {
                    return;
                };
                if small.capacity() >= buf.capacity() {
                    return;
                }
                p.swap_remove(k);
            }
            // Buffers of up to 64 KiB cannot approach the total (POOL_LEN
            // of them): only a larger one pays for adding up what is held.
            let fits = bytes <= 1 << 16
                || p.iter().map(|b| b.capacity() * size).sum::<usize>() + bytes
                    <= POOL_MAX_TOTAL_BYTES;
            if fits {
                p.push(buf);
            }
        });
    }
}

/// An empty vector with room for `n` values: the smallest pooled buffer
/// that holds `n` (no allocation), else a new one. Give it back through
/// [`recycle`] (as an array's buffer) once dead.
pub(crate) fn take_buffer<T: Pooled>(n: usize) -> Vec<T> {
    let mut buf = take_buffer_as_is(n);
    buf.clear();
    buf
}

/// [`take_buffer`] with the values the pooled buffer holds left in it (a
/// vector of any length up to its capacity, which holds `n`): for callers
/// that overwrite what they read.
fn take_buffer_as_is<T: Pooled>(n: usize) -> Vec<T> {
    T::with_pool(|p| {
        // The newest buffer that fits without waste (a loop taking and
        // giving back a few buffers per iteration finds its own at once).
        let snug = |b: &Vec<T>| b.capacity() >= n && b.capacity() / 2 <= n.max(256);
        if !is_large::<T>(n) {
            // A small buffer: one of the newest few small ones that is
            // snug, else a new one (a loop gives back and takes its arrays
            // in about the same order, so one of the newest is the one it
            // needs; a search of the whole pool per request, once per
            // iteration, cost more than the allocator).
            let small = &mut p.small;
            // The newest first, without a search: a loop taking back the
            // buffer it gave back last.
            if small.last().is_some_and(snug) {
                return small.pop();
            }
            let k = small.iter().rev().take(SMALL_SEARCH).position(snug)?;
            return Some(small.remove(small.len() - 1 - k));
        }
        let p = &mut p.large;
        if let Some(k) = p.iter().rposition(snug) {
            return Some(p.remove(k));
        }
        let best = p
            .iter()
            .enumerate()
            .filter(|(_, b)| b.capacity() >= n)
            .min_by_key(|(_, b)| b.capacity())
            .map(|(k, _)| k)?;
        Some(p.remove(best))
    })
    .flatten()
    .unwrap_or_else(|| Vec::with_capacity(n))
}

/// Whether `n` values of `T` take at least [`POOL_MIN_BYTES`]: a buffer
/// worth pooling.
pub(crate) fn is_large<T>(n: usize) -> bool {
    n.saturating_mul(std::mem::size_of::<T>()) >= POOL_MIN_BYTES
}

/// `v` as a `Vec<P>` when `T` is `P` (the same vector, handed over through
/// `dyn Any`, which gives it out only as the type it is: safe code), else
/// `v` back.
fn cast<T: 'static, P: 'static>(v: Vec<T>) -> Result<Vec<P>, Vec<T>> {
    let mut slot = Some(v);
    match (&mut slot as &mut dyn Any).downcast_mut::<Option<Vec<P>>>() {
        Some(p) => Ok(p.take().expect("the slot was just filled")),
        None => Err(slot.expect("the slot was not taken")),
    }
}

/// A vector with room for `n` values of any type `T`: this thread's pooled
/// buffer that fits ([`take_buffer_as_is`], its values left in it) when `T`
/// has a pool, else a new empty one.
fn any_buffer_as_is<T: 'static>(n: usize) -> Vec<T> {
    fn pooled<T: 'static, P: Pooled>(n: usize) -> Option<Vec<T>> {
        let same = std::any::TypeId::of::<T>() == std::any::TypeId::of::<P>();
        same.then(|| cast(take_buffer_as_is::<P>(n)).ok()).flatten()
    }
    pooled::<T, f64>(n)
        .or_else(|| pooled::<T, i64>(n))
        .or_else(|| pooled::<T, bool>(n))
        .or_else(|| pooled::<T, f32>(n))
        .unwrap_or_else(|| Vec::with_capacity(n))
}

/// An empty vector with room for `n` values of any type `T`, for a
/// kernel's result: a pooled buffer ([`take_buffer`]) when `T` has a pool
/// and one fits, else a new one.
pub(crate) fn output_vec<T: 'static>(n: usize) -> Vec<T> {
    let mut v = any_buffer_as_is(n);
    v.clear();
    v
}

/// `n` copies of `value` in an [`output_vec`].
pub(crate) fn output_filled<T: Copy + 'static>(n: usize, value: T) -> Vec<T> {
    let mut v = output_vec(n);
    v.resize(n, value);
    v
}

/// `n` values for a kernel that overwrites every one before reading any:
/// a pooled buffer's values as they are when `T` has a pool and one fits
/// (only elements beyond its current length become `value`), else `n`
/// copies of `value`.
pub(crate) fn output_for_overwrite<T: Copy + 'static>(n: usize, value: T) -> Vec<T> {
    let mut v = any_buffer_as_is(n);
    keep_for_overwrite(&mut v, n, value);
    v
}

/// Makes `v` (its capacity holds `n`) `n` values long for a caller that
/// overwrites them: the values it holds are kept, only elements beyond its
/// length become `value`.
fn keep_for_overwrite<T: Copy>(v: &mut Vec<T>, n: usize, value: T) {
    if v.len() >= n {
        v.truncate(n);
    } else {
        v.resize(n, value);
    }
}

/// An array of shape `shape` filled with `value`, its buffer from this
/// thread's pool.
pub fn pooled_full<T: Pooled, Sh: ShapeBuilder>(shape: Sh, value: T) -> Array<T, Sh::Dim> {
    let shape = shape.into_shape_with_order();
    let n = shape.size();
    Array::from_shape_vec(shape, output_filled(n, value)).expect("a buffer of the shape's size")
}

/// An array of shape `shape` for a caller that writes every element before
/// it reads any (the outputs of a multi-output map or build, written in one
/// pass): a pooled buffer whose values are left as they are instead of
/// being filled first, only elements beyond the buffer's current length
/// becoming `T::default()` (as [`Scratch::reset_for_overwrite`]). Its
/// values are unspecified until written (never uninitialised memory).
pub fn pooled_for_overwrite<T: Pooled, Sh: ShapeBuilder>(shape: Sh) -> Array<T, Sh::Dim> {
    let shape = shape.into_shape_with_order();
    let buf = output_for_overwrite(shape.size(), T::default());
    Array::from_shape_vec(shape, buf).expect("a buffer of the shape's size")
}

/// An array of zeros of shape `shape` whose buffer comes from this thread's
/// pool (no allocation when a large enough buffer is pooled). Hand the
/// buffer back with [`recycle`] once the array is dead.
pub fn pooled_zeros<T: Pooled, Sh: ShapeBuilder>(shape: Sh) -> Array<T, Sh::Dim> {
    let shape = shape.into_shape_with_order();
    let buf = pooled_vec(shape.size());
    Array::from_shape_vec(shape, buf).expect("a buffer of the shape's size")
}

/// `n` values `T::default()` in a vector whose buffer comes from this
/// thread's pool: a loop's per-iteration scalars, stacked in it and made an
/// array once the loop is done (whose buffer goes back to the pool when the
/// array is dead, for the next run of the loop: no allocation per run when
/// the loop runs inside another loop).
pub fn pooled_vec<T: Pooled>(n: usize) -> Vec<T> {
    let mut buf = take_buffer(n);
    buf.resize(n, T::default());
    buf
}

/// Gives the buffer of an array that is no longer needed back to this
/// thread's pool, for [`pooled_zeros`], [`Scratch`] and the kernels'
/// results to reuse. Generated code recycles each temporary array after
/// its last use.
pub fn recycle<T: Pooled, D: Dimension>(a: Array<T, D>) {
    drop(Scratch {
        buf: a.into_raw_vec_and_offset().0,
    });
}

/// [`recycle`] for an array of any element type: its buffer goes to the
/// pool when the type has one; else it is freed.
pub(crate) fn recycle_any<T: 'static, D: Dimension>(a: Array<T, D>) {
    recycle_vec_any(a.into_raw_vec_and_offset().0);
}

/// [`recycle_any`] for a vector (a kernel's working buffer taken with
/// [`output_vec`]).
pub(crate) fn recycle_vec_any<T: 'static>(buf: Vec<T>) {
    fn give_back<T: 'static, P: Pooled>(buf: Vec<T>) -> Result<(), Vec<T>> {
        cast::<T, P>(buf).map(|buf| drop(Scratch { buf }))
    }
    let _ = give_back::<T, f64>(buf)
        .or_else(give_back::<T, i64>)
        .or_else(give_back::<T, bool>)
        .or_else(give_back::<T, f32>);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reset_for_overwrite_gives_the_length_and_keeps_values() {
        let mut s = Scratch::<f64>::new();
        s.reset_for_overwrite(3);
        assert_eq!(&s[..], &[0.0; 3]);
        s[1] = 5.0;
        s.reset_for_overwrite(2);
        assert_eq!(&s[..], &[0.0, 5.0]);
        s.reset_for_overwrite(4);
        assert_eq!(s.len(), 4);
        s.reset(2);
        assert_eq!(&s[..], &[0.0; 2]);
    }

    #[test]
    fn reset_gives_zeros_of_the_length() {
        let mut s = Scratch::<i64>::new();
        s.reset(3);
        s[1] = 5;
        assert_eq!(&*s, &[0, 5, 0]);
        s.reset(2);
        assert_eq!(&*s, &[0, 0]);
        assert_eq!(s.view().len(), 2);
    }

    #[test]
    fn buffers_are_reused() {
        let cap = {
            let mut s = Scratch::<f64>::new();
            s.reset(100);
            s.buf.as_ptr()
        };
        let mut t = Scratch::<f64>::new();
        t.reset(50);
        assert_eq!(t.buf.as_ptr(), cap, "the dropped buffer is taken again");
        // Two live scratches never share a buffer.
        let mut u = Scratch::<f64>::new();
        u.reset(50);
        assert_ne!(t.buf.as_ptr(), u.buf.as_ptr());
    }

    #[test]
    fn recycled_arrays_give_their_buffers_to_pooled_zeros() {
        let a = pooled_zeros::<f64, _>((3, 4));
        assert_eq!(a.shape(), &[3, 4]);
        assert!(a.iter().all(|x| *x == 0.0));
        let mut b = a;
        b[[1, 2]] = 5.0;
        let ptr = b.as_ptr();
        recycle(b);
        let c = pooled_zeros::<f64, _>(12);
        assert_eq!(c.as_ptr(), ptr);
        assert!(c.iter().all(|x| *x == 0.0), "zeroed again");
    }

    #[test]
    fn take_buffer_gives_a_pooled_buffer_that_fits() {
        // Empty this thread's pool, then give back three buffers.
        i64::with_pool(|p| p.clear());
        for n in [10usize, 1000, 100] {
            recycle(ndarray::Array1::<i64>::zeros(n));
        }
        let b = take_buffer::<i64>(50);
        assert!(b.is_empty() && b.capacity() >= 100 && b.capacity() < 1000);
        let c = take_buffer::<i64>(600);
        assert!(c.capacity() >= 1000, "the only one that holds 600");
        let d = take_buffer::<i64>(5000);
        assert!(d.capacity() >= 5000, "none fits: a new one");
        assert_eq!(i64::with_pool(|p| p.len()), Some(1), "the 10 is left");
    }

    #[test]
    fn outputs_take_pooled_buffers_of_their_type() {
        let big = POOL_MIN_BYTES / 8 + 10;
        let a = ndarray::Array1::<f64>::zeros(big);
        let ptr = a.as_ptr();
        recycle(a);
        let v: Vec<f64> = output_vec(big);
        assert_eq!(v.as_ptr(), ptr, "the recycled buffer");
        assert!(v.is_empty() && v.capacity() >= big);
        // Another type, or a small result, never takes it.
        recycle(ndarray::Array1::from_vec(v));
        let w: Vec<(f64, f64)> = output_vec(big);
        assert!(w.capacity() >= big);
        let small: Vec<f64> = output_vec(3);
        assert_ne!(small.as_ptr(), ptr);
        // A small array goes back to the pool too, and the next small
        // result of a size it holds snugly takes it (a loop's per-iteration
        // array is one buffer); the large one stays for large results.
        let two = ndarray::Array1::<f64>::zeros(4);
        let two_ptr = two.as_ptr();
        recycle(two);
        let again: Vec<f64> = output_for_overwrite(3, 0.0);
        assert_eq!((again.as_ptr(), again.len()), (two_ptr, 3));
        let full = pooled_full((2, big / 2), 1.5);
        assert_eq!(full.as_ptr(), ptr);
        assert!(full.iter().all(|x| *x == 1.5));
        // `recycle_any` pools it again through its type.
        recycle_any(full);
        let again = take_buffer::<f64>(big);
        assert_eq!(again.as_ptr(), ptr);
    }

    #[test]
    fn a_full_pool_gives_its_smallest_buffer_for_a_larger_one() {
        let at_least = POOL_MIN_BYTES;
        bool::with_pool(|p| p.clear());
        for _ in 0..POOL_LEN {
            recycle(ndarray::Array1::<bool>::from_elem(at_least + 8, false));
        }
        let big = ndarray::Array1::<bool>::from_elem(100_000, false);
        let ptr = big.as_ptr();
        recycle(big);
        assert_eq!(bool::with_pool(|p| p.len()), Some(POOL_LEN));
        let taken = take_buffer::<bool>(100_000);
        assert_eq!(taken.as_ptr(), ptr);
        // Full again, a smaller one than all held is let go.
        recycle(ndarray::Array1::<bool>::from_elem(at_least + 8, false));
        recycle(ndarray::Array1::<bool>::from_elem(at_least, false));
        assert_eq!(bool::with_pool(|p| p.len()), Some(POOL_LEN));
        let all_kept = |p: &mut Pool<bool>| p.large.iter().all(|b| b.capacity() >= at_least + 8);
        assert!(bool::with_pool(all_kept).unwrap());
        // Small buffers are kept apart: they neither evict a large one
        // nor are refused for lack of room among the large ones; at most
        // SMALL_POOL_LEN of them, the newest (a full pool lets its older
        // half go).
        for _ in 0..SMALL_POOL_LEN {
            recycle(ndarray::Array1::<bool>::from_elem(3, false));
        }
        let lens = |p: &mut Pool<bool>| (p.large.len(), p.small.len());
        assert_eq!(bool::with_pool(lens), Some((POOL_LEN, SMALL_POOL_LEN)));
        for _ in 0..5 {
            recycle(ndarray::Array1::<bool>::from_elem(8, false));
        }
        let (large, small) = bool::with_pool(lens).unwrap();
        assert_eq!(large, POOL_LEN);
        assert_eq!(
            small,
            SMALL_POOL_LEN / 2 + 5,
            "the older half let go at once"
        );
        let eights = |p: &mut Pool<bool>| p.small.iter().filter(|b| b.capacity() == 8).count();
        assert_eq!(bool::with_pool(eights), Some(5));
        let newest_last =
            |p: &mut Pool<bool>| p.small.iter().rev().take(5).all(|b| b.capacity() == 8);
        assert!(bool::with_pool(newest_last).unwrap());
        let small = take_buffer::<bool>(5);
        assert_eq!(small.capacity(), 8, "the newest small buffer that holds 5");
    }

    #[test]
    fn large_buffers_are_not_kept() {
        {
            let mut s = Scratch::<bool>::new();
            s.reset(POOL_MAX_BYTES + 1);
        }
        let s = Scratch::<bool>::new();
        assert_eq!(s.buf.capacity(), 0);
    }
}
