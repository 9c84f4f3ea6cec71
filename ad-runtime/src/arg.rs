//! Arg-reductions with the IR's rule, for floats and integers: the position
//! of the first maximum (or minimum), NaNs skipped (a NaN never beats a
//! number; a number beats a NaN), all 0 when the array is empty. The same
//! rule as [`max_arg`](crate::max_arg) and the interpreter of `ad-core-ir`.

use ndarray::{ArrayBase, ArrayD, ArrayViewD, Axis, Data, Dimension};

/// An element an arg-reduction compares: ordered, with a NaN test (a
/// supertrait of [`Elem`](crate::Elem), so every reduction shares
/// `beats`). The interpreter of `ad-core-ir`, which depends on nothing,
/// states the same rule in `interp/array.rs`.
pub trait Ordered: Copy + PartialOrd {
    /// Whether the value is a NaN (never, for integers).
    fn is_nan(self) -> bool;
}

impl Ordered for f64 {
    fn is_nan(self) -> bool {
        f64::is_nan(self)
    }
}

impl Ordered for f32 {
    fn is_nan(self) -> bool {
        f32::is_nan(self)
    }
}

impl Ordered for i64 {
    fn is_nan(self) -> bool {
        false
    }
}

/// Whether `x` beats the best so far `best`: a number beats a NaN, a NaN
/// beats nothing, otherwise `x > best` (`x < best` for a minimum).
#[inline(always)]
pub(crate) fn beats<T: Ordered>(x: T, best: T, max: bool) -> bool {
    if best.is_nan() {
        !x.is_nan()
    } else if max {
        x > best
    } else {
        x < best
    }
}

/// The largest rank [`arg_index`] returns a multi-index for.
pub const ARG_MAX_RANK: usize = 6;

/// The multi-index of the first maximum (`max`) or minimum of `a` in
/// row-major order, NaNs skipped, in the leading `a.ndim()` entries (the
/// rest 0; all 0 when `a` is empty). No allocation. Panics above rank
/// [`ARG_MAX_RANK`].
pub fn arg_index<T, S, D>(a: &ArrayBase<S, D>, max: bool) -> [i64; ARG_MAX_RANK]
where
    T: Ordered,
    S: Data<Elem = T>,
    D: Dimension,
{
    let shape = a.shape();
    assert!(
        shape.len() <= ARG_MAX_RANK,
        "ad_runtime::arg_index: rank {} above {ARG_MAX_RANK}",
        shape.len()
    );
    let mut best: Option<(usize, T)> = None;
    for (k, &x) in a.iter().enumerate() {
        match best {
            Some((_, b)) if !beats(x, b, max) => {}
            _ => best = Some((k, x)),
        }
    }
    let mut k = best.map_or(0, |b| b.0);
    let mut idx = [0i64; ARG_MAX_RANK];
    for ax in (0..shape.len()).rev() {
        if shape[ax] > 0 {
            idx[ax] = (k % shape[ax]) as i64;
            k /= shape[ax];
        }
    }
    idx
}

/// Along `axis`: the position of the first maximum (`max`) or minimum of
/// every lane, NaNs skipped (0 for an empty lane). Panics if `axis` is out
/// of range.
pub fn arg_index_axis<T: Ordered>(a: ArrayViewD<'_, T>, axis: usize, max: bool) -> ArrayD<i64> {
    crate::check::axis_in_range("arg_index_axis", axis, a.shape());
    a.map_axis(Axis(axis), |lane| {
        let mut best = 0usize;
        for k in 1..lane.len() {
            if beats(lane[k], lane[best], max) {
                best = k;
            }
        }
        best as i64
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{array, Array1};

    #[test]
    fn first_extremum_nans_skipped() {
        let a = array![[1.0, f64::NAN, 3.0], [3.0, -2.0, f64::NAN]];
        assert_eq!(arg_index(&a, true)[..2], [0, 2]);
        assert_eq!(arg_index(&a, false)[..2], [1, 1]);
        let nan_first = array![f64::NAN, 2.0, 2.0];
        assert_eq!(arg_index(&nan_first, true)[0], 1);
        let all_nan = Array1::from_elem(3, f64::NAN);
        assert_eq!(arg_index(&all_nan, true)[0], 0);
        let empty = Array1::<i64>::zeros(0);
        assert_eq!(arg_index(&empty, true), [0; ARG_MAX_RANK]);
        let ints = array![[4i64, 9], [9, 1]];
        assert_eq!(arg_index(&ints, true)[..2], [0, 1]);
    }

    #[test]
    fn along_an_axis() {
        let a = array![[1.0, f64::NAN, 3.0], [3.0, -2.0, f64::NAN]].into_dyn();
        assert_eq!(
            arg_index_axis(a.view(), 0, true)
                .into_raw_vec_and_offset()
                .0,
            vec![1, 1, 0]
        );
        assert_eq!(
            arg_index_axis(a.view(), 1, false)
                .into_raw_vec_and_offset()
                .0,
            vec![0, 1]
        );
    }
}
