//! Sums of elementwise maps over the rows of matrices, without the mapped
//! matrix: `out[c] = Σ_i f(a[i, c], b[i, c], ..)`.
//!
//! A reverse pass sums a per-row cotangent over the rows (the points of a
//! batch) after an elementwise map (`Σ_i xc[i, c] · ct[i, c]` for a
//! mean's cotangent): generated code calls these instead of writing the
//! map's `n x d` result and reading it back for the sum.
//!
//! Order: the rows are added in order within fixed parts of [`PART_ROWS`]
//! rows, and the parts' sums in order, whatever the thread count or the
//! operands' layouts (the same bits on 1, 2 or 16 threads).

use crate::check;
use crate::elem::Elem;
use crate::par;
use ndarray::{s, Array1, ArrayBase, ArrayView2, Data, Ix2};

/// Rows per part (a task when the sum runs in parallel).
pub const PART_ROWS: usize = 1024;

/// `out[c] = Σ_i` of what `part(lo, hi, acc)` adds into `acc` for the
/// rows `lo..hi` (in order), over `n` rows of `d` columns: parts of
/// [`PART_ROWS`] rows, their sums added in order.
fn sum_parts<T: Elem>(
    n: usize,
    d: usize,
    work: usize,
    part: impl Fn(usize, usize, &mut [T]) + Sync + Send,
) -> Array1<T> {
    let parts = n.div_ceil(PART_ROWS).max(1);
    let parallel = par::go_parallel(n.saturating_mul(d).saturating_mul(work.max(1)));
    let sums = par::map_tasks(parts, parallel, |p| {
        let mut acc = vec![T::ZERO; d];
        part(p * PART_ROWS, n.min((p + 1) * PART_ROWS), &mut acc);
        acc
    });
    let mut sums = sums.into_iter();
    let mut out = sums.next().unwrap_or_else(|| vec![T::ZERO; d]);
    for s in sums {
        for (o, x) in out.iter_mut().zip(s) {
            *o = *o + x;
        }
    }
    Array1::from_vec(out)
}

/// The rows `lo..hi` of `a`.
fn rows<S: Data>(a: &ArrayBase<S, Ix2>, lo: usize, hi: usize) -> ArrayView2<'_, S::Elem> {
    a.slice(s![lo..hi, ..])
}

/// `acc[c] += f(xs[c], ..)` along a row: slices where the rows are
/// contiguous, element iterators otherwise (the same order either way).
macro_rules! add_row {
    ($acc:expr, $f:expr, $($r:ident),+) => {
        match ($($r.as_slice(),)+) {
            ($(Some($r),)+) => add_row!(@zip $acc, $f, $($r),+),
            _ => add_row!(@zip $acc, $f, $($r),+),
        }
    };
    (@zip $acc:expr, $f:expr, $a:ident) => {
        $acc.iter_mut().zip($a).for_each(|(s, &x)| *s = *s + $f(x))
    };
    (@zip $acc:expr, $f:expr, $a:ident, $b:ident) => {
        $acc.iter_mut()
            .zip($a.into_iter().zip($b))
            .for_each(|(s, (&x, &y))| *s = *s + $f(x, y))
    };
    (@zip $acc:expr, $f:expr, $a:ident, $b:ident, $e:ident) => {
        $acc.iter_mut()
            .zip($a.into_iter().zip($b).zip($e))
            .for_each(|(s, ((&x, &y), &z))| *s = *s + $f(x, y, z))
    };
}

/// `out[c] = Σ_i f(a[i, c])`; `work_per_elem` estimates the operations of
/// one call of `f` (for the parallel threshold).
#[track_caller]
pub fn map_sum_rows1<T, SA, F>(a: &ArrayBase<SA, Ix2>, work_per_elem: usize, f: F) -> Array1<T>
where
    T: Elem,
    SA: Data<Elem = T> + Sync,
    F: Fn(T) -> T + Sync + Send,
{
    let (n, d) = a.dim();
    sum_parts(n, d, work_per_elem, |lo, hi, acc| {
        for ra in rows(a, lo, hi).rows() {
            add_row!(acc, f, ra);
        }
    })
}

/// `out[c] = Σ_i f(a[i, c], b[i, c])`; `a` and `b` have one shape.
#[track_caller]
pub fn map_sum_rows2<T, SA, SB, F>(
    a: &ArrayBase<SA, Ix2>,
    b: &ArrayBase<SB, Ix2>,
    work_per_elem: usize,
    f: F,
) -> Array1<T>
where
    T: Elem,
    SA: Data<Elem = T> + Sync,
    SB: Data<Elem = T> + Sync,
    F: Fn(T, T) -> T + Sync + Send,
{
    check::same_shape("map_sum_rows2", a.shape(), b.shape());
    let (n, d) = a.dim();
    sum_parts(n, d, work_per_elem, |lo, hi, acc| {
        for (ra, rb) in rows(a, lo, hi)
            .rows()
            .into_iter()
            .zip(rows(b, lo, hi).rows())
        {
            add_row!(acc, f, ra, rb);
        }
    })
}

/// `out[c] = Σ_i f(a[i, c], b[i, c], e[i, c])`; the operands have one shape.
#[track_caller]
pub fn map_sum_rows3<T, SA, SB, SE, F>(
    a: &ArrayBase<SA, Ix2>,
    b: &ArrayBase<SB, Ix2>,
    e: &ArrayBase<SE, Ix2>,
    work_per_elem: usize,
    f: F,
) -> Array1<T>
where
    T: Elem,
    SA: Data<Elem = T> + Sync,
    SB: Data<Elem = T> + Sync,
    SE: Data<Elem = T> + Sync,
    F: Fn(T, T, T) -> T + Sync + Send,
{
    check::same_shape("map_sum_rows3", a.shape(), b.shape());
    check::same_shape("map_sum_rows3", a.shape(), e.shape());
    let (n, d) = a.dim();
    sum_parts(n, d, work_per_elem, |lo, hi, acc| {
        let (ra, rb, re) = (rows(a, lo, hi), rows(b, lo, hi), rows(e, lo, hi));
        for ((ra, rb), re) in ra.rows().into_iter().zip(rb.rows()).zip(re.rows()) {
            add_row!(acc, f, ra, rb, re);
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{Array2, Axis, ShapeBuilder};

    fn mat(n: usize, d: usize, seed: f64) -> Array2<f64> {
        Array2::from_shape_fn((n, d), |(i, c)| ((i * 7 + c * 3) as f64 * seed).sin())
    }

    /// The fused sums agree with the map's result summed over its rows, on
    /// contiguous, transposed and broadcast operands, across several parts.
    #[test]
    fn sums_of_maps_over_rows_agree_with_map_then_sum() {
        let n = 2 * PART_ROWS + 37;
        let (a, b, e) = (mat(n, 5, 0.3), mat(n, 5, 0.7), mat(n, 5, 1.1));
        let bt = mat(5, n, 0.7).reversed_axes();
        let row = mat(1, 5, 0.9);
        let bc = row.broadcast((n, 5)).expect("a row broadcasts");
        let close = |x: &Array1<f64>, y: &Array1<f64>| {
            x.iter()
                .zip(y)
                .all(|(p, q)| (p - q).abs() <= 1e-12 * (1.0 + q.abs()))
        };
        let f2 = |x: f64, y: f64| x * y - 0.5 * y;
        for bb in [b.view(), bt.view(), bc.view()] {
            let want = ndarray::Zip::from(&a)
                .and(&bb)
                .map_collect(|&x, &y| f2(x, y))
                .sum_axis(Axis(0));
            assert!(close(&map_sum_rows2(&a, &bb, 2, f2), &want));
        }
        let want = a.mapv(|x| 2.0 * x).sum_axis(Axis(0));
        assert!(close(&map_sum_rows1(&a, 1, |x| 2.0 * x), &want));
        let f3 = |x: f64, y: f64, z: f64| x * y + z;
        let want = ndarray::Zip::from(&a)
            .and(&b)
            .and(&e)
            .map_collect(|&x, &y, &z| f3(x, y, z))
            .sum_axis(Axis(0));
        assert!(close(&map_sum_rows3(&a, &b, &e, 2, f3), &want));
        // No rows: zeros.
        let empty = Array2::<f64>::zeros((0, 3));
        assert_eq!(map_sum_rows1(&empty, 1, |x| x), Array1::zeros(3));
    }

    /// The same bits on one thread and on four, and for a transposed copy
    /// of an operand (the order does not follow the layout).
    #[test]
    fn sums_of_maps_over_rows_have_one_order() {
        let n = 3 * PART_ROWS + 5;
        let (a, b) = (mat(n, 3, 0.37), mat(n, 3, 1.3));
        let f = |x: f64, y: f64| x * y;
        let one = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .expect("pool");
        let four = rayon::ThreadPoolBuilder::new()
            .num_threads(4)
            .build()
            .expect("pool");
        // Work large enough to run in parallel on four threads.
        let r1 = one.install(|| map_sum_rows2(&a, &b, 1 << 20, f));
        let r4 = four.install(|| map_sum_rows2(&a, &b, 1 << 20, f));
        // A column-major copy of `b`: the same values, another layout.
        let bf = Array2::from_shape_fn((n, 3).f(), |(i, c)| b[[i, c]]);
        let rt = map_sum_rows2(&a, &bf, 1, f);
        for (x, y) in r1.iter().zip(&r4).chain(r1.iter().zip(&rt)) {
            assert_eq!(x.to_bits(), y.to_bits());
        }
    }
}
