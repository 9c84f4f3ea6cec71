//! In-place accumulation into an existing array, and zeros.

use crate::check;
use crate::elem::Elem;
use crate::par;
use ndarray::{Array, ArrayBase, Data, DataMut, Dimension, Zip};
use rayon::prelude::*;

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
        Some((ax, k)) => acc
            .axis_chunks_iter_mut(ax, k)
            .into_par_iter()
            .zip(x.axis_chunks_iter(ax, k))
            .for_each(|(a, x)| Zip::from(a).and(x).for_each(|a, &x| f(a, x))),
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
