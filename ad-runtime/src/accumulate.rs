//! In-place accumulation into an existing array, and zeros.

use crate::check;
use crate::elem::Elem;
use crate::par;
use ndarray::{Array, ArrayBase, Axis, Data, DataMut, Dimension, Slice, Zip};

/// `acc[i] += s · x[i]` for every index (no broadcasting: same shapes).
#[track_caller]
pub fn add_scaled<T, S, SX, D>(acc: &mut ArrayBase<S, D>, s: T, x: &ArrayBase<SX, D>)
where
    T: Elem,
    S: DataMut<Elem = T>,
    SX: Data<Elem = T>,
    D: Dimension,
{
    check::same_shape("add_scaled", acc.shape(), x.shape());
    update(acc, x, |a, x| *a = *a + s * x);
}

/// `acc[i] += x[i]` for every index (no broadcasting: same shapes).
#[track_caller]
pub fn add_assign<T, S, SX, D>(acc: &mut ArrayBase<S, D>, x: &ArrayBase<SX, D>)
where
    T: Elem,
    S: DataMut<Elem = T>,
    SX: Data<Elem = T>,
    D: Dimension,
{
    check::same_shape("add_assign", acc.shape(), x.shape());
    update(acc, x, |a, x| *a = *a + x);
}

fn update<T, S, SX, D, F>(acc: &mut ArrayBase<S, D>, x: &ArrayBase<SX, D>, f: F)
where
    T: Elem,
    S: DataMut<Elem = T>,
    SX: Data<Elem = T>,
    D: Dimension,
    F: Fn(&mut T, T) + Sync + Send,
{
    match par::split_plan(acc.shape(), acc.len()) {
        Some((ax, k)) => par::for_each_item(
            acc.axis_chunks_iter_mut(ax, k)
                .zip(x.axis_chunks_iter(ax, k))
                .collect(),
            true,
            |(a, x)| Zip::from(a).and(x).for_each(|a, &x| f(a, x)),
        ),
        None => Zip::from(acc).and(x).for_each(|a, &x| f(a, x)),
    }
}

/// A new array of zeros with the shape of `x` (standard layout).
pub fn zeros_like<T, S, D>(x: &ArrayBase<S, D>) -> Array<T, D>
where
    T: Elem,
    S: Data<Elem = T>,
    D: Dimension,
{
    Array::from_elem(x.raw_dim(), T::ZERO)
}

/// Chunks of an accumulation loop are at least this many iterations long,
/// and all but the last start and end at multiples of it: a strip-mined
/// body (blocks of [`crate::LANES`] iterations) runs whole blocks.
pub const MIN_CHUNK_ITERS: usize = crate::LANES;

/// An accumulation loop is cut into at most this many chunks.
pub const MAX_CHUNKS: usize = 16;

/// The private accumulators of all chunks together hold at most the loop's
/// estimated work divided by this: zeroing and adding them (two operations
/// per element) then costs at most a quarter of the loop's own work, also
/// when the chunks run one after the other. (A loop touching a few elements
/// of a large accumulator per iteration, like the reverse of an elementwise
/// build, gets one chunk: 16 private copies of an `n`-element gradient cost
/// 60 times such a loop's work.)
pub const ACC_WORK_DIVISOR: usize = 8;

/// How many chunks [`accumulate_chunked`] cuts `n` iterations into, for
/// accumulators of `acc_len` elements in all and an estimated `work` (element
/// operations of the whole loop): a function of these only, never of the
/// number of threads, so the result is the same for every thread count.
/// Chunks hold at least `unit` iterations (`MIN_CHUNK_ITERS` for
/// [`accumulate_chunked`]).
fn accumulate_chunks_by(unit: usize, n: usize, acc_len: usize, work: usize) -> usize {
    let by_iters = (n / unit.max(1)).clamp(1, MAX_CHUNKS);
    let budget = work / ACC_WORK_DIVISOR;
    let by_memory = (budget / acc_len.max(1)).max(1);
    by_iters.min(by_memory)
}

/// Runs an *accumulation loop* (iterations `0..n` that only add into the
/// accumulator state `S`; `body(s, lo, hi)` runs iterations `lo..hi` on
/// state `s` and returns it) as `c` chunks (a function of `n`, `acc_len` and `work`)
/// of consecutive iterations (boundaries at multiples of [`MIN_CHUNK_ITERS`]
/// but the last): chunk 0 starts from `init`, the others from
/// `zero()`, and the chunk results are added left to right with `add`:
/// `((init + Σ chunk 0) + Σ chunk 1) + ..`.
///
/// Chunks run in parallel when `work` (an estimate of the loop's work in
/// element operations) reaches [`crate::par_threshold`] and the call is not
/// nested in another parallel kernel. The chunking, and so every bit of the
/// result, depends only on `n`, `acc_len` and `work`.
pub fn accumulate_chunked<S, Z, B, A>(
    n: usize,
    acc_len: usize,
    work: usize,
    init: S,
    zero: Z,
    body: B,
    add: A,
) -> S
where
    S: Send,
    Z: Fn() -> S + Sync,
    B: Fn(S, usize, usize) -> S + Sync,
    A: Fn(&mut S, S),
{
    accumulate_chunked_by(MIN_CHUNK_ITERS, n, acc_len, work, init, zero, body, add)
}

/// [`accumulate_chunked`] with chunks of at least `unit` iterations whose
/// boundaries (but the last) are multiples of `unit` (`1` for a loop whose
/// iterations are not strip-mined: the outer loop of an interchanged nest,
/// each of whose iterations runs a whole strip-mined loop over the points).
/// The chunking depends only on `unit`, `n`, `acc_len` and `work`.
#[allow(clippy::too_many_arguments)]
pub fn accumulate_chunked_by<S, Z, B, A>(
    unit: usize,
    n: usize,
    acc_len: usize,
    work: usize,
    init: S,
    zero: Z,
    body: B,
    add: A,
) -> S
where
    S: Send,
    Z: Fn() -> S + Sync,
    B: Fn(S, usize, usize) -> S + Sync,
    A: Fn(&mut S, S),
{
    let unit = unit.max(1);
    let c = accumulate_chunks_by(unit, n, acc_len, work);
    if c <= 1 {
        return body(init, 0, n);
    }
    // Multiples of `unit` (chunks of at least that many iterations stay
    // non-empty), the last chunk ending at `n`.
    let align = |i: usize| i - i % unit;
    let bounds = |t: usize| {
        let hi = if t + 1 == c {
            n
        } else {
            align((t + 1) * n / c)
        };
        (align(t * n / c), hi)
    };
    let rest_chunk = |t: usize| {
        let (lo, hi) = bounds(t);
        body(zero(), lo, hi)
    };
    // Chunk 0 starts from `init` (moved into its task), the others from zeros.
    let starts: Vec<(usize, Option<S>)> = std::iter::once((0, Some(init)))
        .chain((1..c).map(|t| (t, None)))
        .collect();
    let chunk = |(t, start): (usize, Option<S>)| match start {
        Some(s) => body(s, 0, bounds(0).1),
        None => rest_chunk(t),
    };
    let mut parts = par::map_items(starts, par::go_parallel(work), chunk).into_iter();
    let mut acc = parts.next().expect("at least two chunks");
    for r in parts {
        add(&mut acc, r);
    }
    acc
}

/// Runs an *accumulation loop* whose iterations own disjoint rows of every
/// accumulator (iteration `i` adds only into rows that no other iteration
/// touches: `ad_core_ir::accumulate::owned_rows`; `body(s, lo, hi)` runs
/// iterations `lo..hi` on `s` and returns it, indexing each accumulator
/// relative to the first row of `lo`'s).
///
/// Sequentially (`work` under [`crate::par_threshold`], one thread, or
/// nested in another parallel kernel) it is `body(state, 0, n)`. Otherwise
/// the iterations are cut into ranges (8 per thread, of sizes differing by
/// at most one), each range runs
/// on `take(&state, lo, hi)` (a copy of the rows it owns:
/// [`rows_copy`]) and `give(&mut state, part, lo, hi)` writes them back
/// ([`rows_put`]). Every element receives its contributions in the loop's
/// own order from its initial value, whatever the ranges: the result is
/// the sequential loop's, bit for bit, for any number of threads, and no
/// accumulator is copied more than once.
pub fn accumulate_rows<S, T, B, G>(n: usize, work: usize, state: S, take: T, body: B, give: G) -> S
where
    S: Send + Sync,
    T: Fn(&S, usize, usize) -> S + Sync + Send,
    B: Fn(S, usize, usize) -> S + Sync + Send,
    G: Fn(&mut S, S, usize, usize),
{
    if n < 2 || !par::go_parallel(work) {
        return body(state, 0, n);
    }
    // About 8 ranges per thread, of sizes differing by at most one
    // iteration (ceil-sized ranges leave a short last one: 100 components
    // on 2 threads as 14 x 7 + 2 left one thread 12% more work).
    let c = n.min(8 * rayon::current_num_threads());
    let bounds = |t: usize| (t * n / c, (t + 1) * n / c);
    let parts = par::map_tasks(c, true, |t| {
        let (lo, hi) = bounds(t);
        body(take(&state, lo, hi), lo, hi)
    });
    let mut state = state;
    for (t, part) in parts.into_iter().enumerate() {
        let (lo, hi) = bounds(t);
        give(&mut state, part, lo, hi);
    }
    state
}

/// A copy of the indices `lo..hi` of `a` along `axis` (clamped to its
/// length: past the end the copy is empty there, and an update beyond it
/// panics as it would on `a`).
pub fn rows_copy<T, S, D>(a: &ArrayBase<S, D>, axis: usize, lo: usize, hi: usize) -> Array<T, D>
where
    T: Elem,
    S: Data<Elem = T>,
    D: Dimension,
{
    let len = a.len_of(Axis(axis));
    let lo = lo.min(len);
    a.slice_axis(Axis(axis), Slice::from(lo..hi.clamp(lo, len)))
        .to_owned()
}

/// Writes `part` (made by [`rows_copy`] from `a`'s indices starting at `lo`
/// along `axis`) back into `a`.
pub fn rows_put<T, S, SP, D>(
    a: &mut ArrayBase<S, D>,
    axis: usize,
    lo: usize,
    part: &ArrayBase<SP, D>,
) where
    T: Elem,
    S: DataMut<Elem = T>,
    SP: Data<Elem = T>,
    D: Dimension,
{
    let lo = lo.min(a.len_of(Axis(axis)));
    let hi = lo + part.len_of(Axis(axis));
    a.slice_axis_mut(Axis(axis), Slice::from(lo..hi))
        .assign(part);
}

#[cfg(test)]
mod chunk_tests {
    use super::*;

    /// `acc[i % 3] += f(i)` over `0..n`, chunked.
    fn run(n: usize) -> Vec<f64> {
        accumulate_chunked(
            n,
            3,
            usize::MAX,
            vec![1.0, 0.0, 0.0],
            || vec![0.0; 3],
            |mut s, lo, hi| {
                for i in lo..hi {
                    s[i % 3] += (i as f64 * 0.37).sin();
                }
                s
            },
            |a, b| a.iter_mut().zip(b).for_each(|(x, y)| *x += y),
        )
    }

    /// With `unit` 1 a short loop (the components of an interchanged nest)
    /// still cuts into several chunks, of whole iterations, covering
    /// `0..n`; the result is the same with or without threads.
    #[test]
    fn unit_chunks_cover_short_loops() {
        let seen = std::sync::Mutex::new(vec![]);
        let sum = |threshold: usize| {
            let old = crate::par_threshold();
            crate::set_par_threshold(threshold);
            let r = accumulate_chunked_by(
                1,
                25,
                1,
                1 << 20,
                0.0,
                || 0.0,
                |s, lo, hi| {
                    seen.lock().unwrap().push((lo, hi));
                    (lo..hi).fold(s, |s, j| s + (j as f64 * 0.37).sin())
                },
                |a, b| *a += b,
            );
            crate::set_par_threshold(old);
            r
        };
        let (a, b) = (sum(usize::MAX), sum(1));
        assert_eq!(a.to_bits(), b.to_bits());
        let mut seen = seen.into_inner().unwrap();
        seen.sort();
        seen.dedup();
        assert_eq!(seen.len(), MAX_CHUNKS.min(25));
        assert_eq!((seen[0].0, seen[seen.len() - 1].1), (0, 25));
        assert!(seen.windows(2).all(|w| w[0].1 == w[1].0 && w[0].0 < w[0].1));
    }

    /// `acc[i, ..] += f(i, ..)` over the rows of a 37 x 3 accumulator
    /// starting from non-zero values: ranges of rows, copied and written
    /// back, give the sequential loop's bits with and without threads, and
    /// each row is copied once.
    #[test]
    fn owned_rows_give_the_sequential_bits() {
        let init = Array::from_shape_fn((37, 3), |(i, j)| (i * 3 + j) as f64 * 0.1);
        let copied = std::sync::atomic::AtomicUsize::new(0);
        let run = |threshold: usize| {
            let old = crate::par_threshold();
            crate::set_par_threshold(threshold);
            let r = accumulate_rows(
                37,
                1 << 20,
                init.clone(),
                |s: &Array<f64, ndarray::Ix2>, lo, hi| {
                    copied.fetch_add(hi - lo, std::sync::atomic::Ordering::Relaxed);
                    rows_copy(s, 0, lo, hi)
                },
                |mut s, lo, hi| {
                    for i in lo..hi {
                        for k in 0..5 {
                            for j in 0..3 {
                                s[[i - lo, j]] += ((i * 7 + j * 3 + k) as f64 * 0.37).sin();
                            }
                        }
                    }
                    s
                },
                |s, part, lo, _| rows_put(s, 0, lo, &part),
            );
            crate::set_par_threshold(old);
            r
        };
        let (a, b) = (run(usize::MAX), run(1));
        assert_eq!(a.mapv(f64::to_bits), b.mapv(f64::to_bits));
        let seq = copied.load(std::sync::atomic::Ordering::Relaxed);
        assert!(seq == 0 || seq == 37, "{seq}");
    }

    /// Copies past the end of the axis are clamped (empty), and written
    /// back where they came from.
    #[test]
    fn rows_copy_clamps_and_rows_put_writes_back() {
        let mut a = Array::from_shape_fn((4, 2), |(i, j)| (i * 2 + j) as f64);
        let part = rows_copy(&a, 0, 2, 9);
        assert_eq!(part.shape(), &[2, 2]);
        assert_eq!(rows_copy(&a, 0, 6, 9).shape(), &[0, 2]);
        assert_eq!(rows_copy(&a, 1, 1, 2).shape(), &[4, 1]);
        rows_put(&mut a, 0, 2, &(&part * 10.0));
        assert_eq!(a.row(3).to_vec(), vec![60.0, 70.0]);
        assert_eq!(a.row(1).to_vec(), vec![2.0, 3.0]);
    }

    /// Chunks cover `0..n` in order, each boundary but the last a multiple
    /// of `MIN_CHUNK_ITERS`, none empty.
    #[test]
    fn chunks_are_whole_blocks() {
        for n in [8, 9, 63, 1000, 1001] {
            let seen = std::sync::Mutex::new(vec![]);
            accumulate_chunked(
                n,
                1,
                0,
                (),
                || (),
                |(), lo, hi| seen.lock().unwrap().push((lo, hi)),
                |_, _| {},
            );
            let mut seen = seen.into_inner().unwrap();
            seen.sort();
            assert_eq!(seen.first().map(|c| c.0), Some(0));
            assert_eq!(seen.last().map(|c| c.1), Some(n));
            for w in seen.windows(2) {
                assert_eq!(w[0].1, w[1].0);
            }
            for (lo, hi) in seen {
                assert!(lo < hi && lo % MIN_CHUNK_ITERS == 0, "{n}: {lo}..{hi}");
            }
        }
    }

    #[test]
    fn chunking_depends_on_sizes_only() {
        assert_eq!(accumulate_chunks_by(MIN_CHUNK_ITERS, 0, 10, 0), 1);
        assert_eq!(accumulate_chunks_by(MIN_CHUNK_ITERS, 7, 10, 1000), 1);
        assert_eq!(accumulate_chunks_by(MIN_CHUNK_ITERS, 1000, 10, 1000), 12);
        assert_eq!(
            accumulate_chunks_by(MIN_CHUNK_ITERS, 1000, 1, 1_000_000),
            MAX_CHUNKS
        );
        // An accumulator as large as the loop's work: one chunk.
        assert_eq!(
            accumulate_chunks_by(MIN_CHUNK_ITERS, 50_000, 100_000, 1_300_000),
            1
        );
        // Much work per iteration pays for larger private accumulators.
        assert_eq!(
            accumulate_chunks_by(MIN_CHUNK_ITERS, 1000, 200_000, 8_000_000),
            5
        );
    }

    #[test]
    fn chunked_sum_is_the_sum_and_the_same_for_any_thread_count() {
        let n = 1001;
        let mut seq = vec![1.0, 0.0, 0.0];
        for i in 0..n {
            seq[i % 3] += (i as f64 * 0.37).sin();
        }
        let one = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap()
            .install(|| run(n));
        for threads in [2, 4] {
            let many = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap()
                .install(|| run(n));
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&one), bits(&many), "{threads} threads");
        }
        for (a, b) in one.iter().zip(&seq) {
            assert!((a - b).abs() < 1e-12, "{a} vs {b}");
        }
        assert_eq!(run(0), vec![1.0, 0.0, 0.0]);
    }
}
