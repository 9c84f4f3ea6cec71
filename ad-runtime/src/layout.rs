//! The memory order of elementwise results, as ndarray chooses it.
//!
//! ndarray's reductions add in memory order: `a.sum()` of a contiguous
//! array folds its buffer front to back, whatever its strides. The layout
//! of an elementwise result therefore decides the bits of a later sum, and
//! ndarray does not always make row-major results:
//!
//! - `a.map(f)` / `a.mapv(f)` / `&a * s` keep the memory order of a
//!   contiguous input (`m.t().mapv(f)` is column-major, a reversed slice's
//!   map is stored reversed) and are row-major otherwise;
//! - `&a + &b` (`Zip::map_collect`) is column-major when its inputs lean
//!   that way (all column-major, or more column- than row-leaning) and
//!   row-major otherwise.
//!
//! The elementwise kernels ([`crate::map`], [`crate::zip_map`],
//! [`crate::zip3_map`]) and the outputs of generated multi-output passes
//! ([`pooled_for_overwrite_in`]) follow the same rules, so that the primal
//! of a derivative sums in the order of the function it differentiates.
//!
//! ```text
//! let t = m.t().mapv(|x| x * 2.0);  // ndarray: column-major; so is map(&m.t(), ..)
//! t.sum()                           // both add m's buffer in the same order
//! ```

use crate::scratch::{output_for_overwrite, Pooled};
use ndarray::{Array, ArrayBase, Axis, Data, Dimension};

/// The most axes a layout is worked out for (held inline: kernels called
/// in loops allocate nothing for it); higher ranks are stored row-major.
const MAX_RANK: usize = 8;

/// The shape and strides of one input of an elementwise operation.
#[derive(Clone, Copy, Debug)]
pub struct ArrLayout {
    n: usize,
    dim: [usize; MAX_RANK],
    strides: [isize; MAX_RANK],
}

/// The shape and strides of `a` (`None` past 8 axes).
pub fn layout_of<A, S: Data<Elem = A>, D: Dimension>(a: &ArrayBase<S, D>) -> Option<ArrLayout> {
    let n = a.ndim();
    if n > MAX_RANK {
        return None;
    }
    let mut l = ArrLayout {
        n,
        dim: [0; MAX_RANK],
        strides: [0; MAX_RANK],
    };
    l.dim[..n].copy_from_slice(a.shape());
    l.strides[..n].copy_from_slice(a.strides());
    Some(l)
}

impl ArrLayout {
    fn dim(&self) -> &[usize] {
        &self.dim[..self.n]
    }
}

/// The memory order of an array: its axes from outermost to innermost, and
/// which of them run backwards in memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemOrder {
    n: usize,
    axes: [usize; MAX_RANK],
    flip: [bool; MAX_RANK],
}

impl MemOrder {
    /// Row-major order of a rank-`n` array.
    pub fn row_major(n: usize) -> MemOrder {
        let mut axes = [0; MAX_RANK];
        for (k, a) in axes.iter_mut().enumerate() {
            *a = k;
        }
        MemOrder {
            n,
            axes,
            flip: [false; MAX_RANK],
        }
    }

    /// Column-major order of a rank-`n` array (`n` at most 8).
    pub fn column_major(n: usize) -> MemOrder {
        let mut o = MemOrder::row_major(n);
        o.axes[..n].reverse();
        o
    }

    /// Whether this is the row-major order.
    pub fn is_row_major(&self) -> bool {
        self.axes[..self.n].iter().enumerate().all(|(k, &a)| k == a)
            && !self.flip[..self.n].contains(&true)
    }
}

/// The memory order ndarray gives the result of an elementwise operation
/// on `inputs`: one input, `ArrayBase::map`'s rule (the input's own order
/// when its elements are contiguous in memory, else row-major); several,
/// `Zip::map_collect`'s (column-major when the inputs lean so, else
/// row-major). Lengths-1 axes are placed outermost (their place changes
/// no address).
pub fn result_order(inputs: &[Option<ArrLayout>]) -> MemOrder {
    let n = inputs.iter().flatten().next().map_or(0, |l| l.n);
    match inputs {
        [Some(one)] => contiguous_order(one).unwrap_or(MemOrder::row_major(n)),
        _ if prefer_f(inputs) => MemOrder::column_major(n),
        _ => MemOrder::row_major(n),
    }
}

/// The order of `l`'s elements in memory when they fill one block without
/// gaps (ndarray's `is_contiguous`): the axes longer than 1 by decreasing
/// stride magnitude, after those of length 1; row-major when that is the
/// order of the longer axes and none runs backwards.
pub(crate) fn contiguous_order(l: &ArrLayout) -> Option<MemOrder> {
    let n = l.n;
    let mut order = MemOrder::row_major(n);
    // The axes of length 1 first (in index order), then the others by
    // decreasing stride magnitude (a stable sort on a key that is 0 for
    // the short ones).
    let axes = &mut order.axes[..n];
    axes.sort_by_key(|&k| {
        let long = l.dim[k] > 1;
        (
            long,
            std::cmp::Reverse(if long { l.strides[k].unsigned_abs() } else { 0 }),
        )
    });
    let mut expect = 1usize;
    for &k in axes.iter().rev() {
        if l.dim[k] > 1 {
            if l.strides[k].unsigned_abs() != expect {
                return None;
            }
            expect *= l.dim[k];
        }
    }
    for k in 0..n {
        order.flip[k] = l.dim[k] > 1 && l.strides[k] < 0;
    }
    // Row-major when the longer axes keep their index order (checked
    // without collecting them: `map` calls this on every non-standard input).
    let mut long = axes.iter().copied().filter(|&k| l.dim[k] > 1);
    let mut in_order = true;
    if let Some(mut prev) = long.next() {
        for k in long {
            in_order &= prev < k;
            prev = k;
        }
    }
    if in_order && !order.flip[..n].contains(&true) {
        return Some(MemOrder::row_major(n));
    }
    Some(order)
}

const CORDER: u8 = 1;
const FORDER: u8 = 2;
const CPREFER: u8 = 4;
const FPREFER: u8 = 8;

/// ndarray's `Zip` layout of one input (`array_layout` in ndarray's
/// `zip/mod.rs`).
fn layout_bits(l: &ArrLayout) -> u8 {
    let (dim, st, n) = (l.dim(), &l.strides, l.n);
    if is_layout(l, false) {
        if n <= 1 || dim.iter().filter(|&&d| d > 1).count() <= 1 {
            CORDER | FORDER | CPREFER | FPREFER
        } else {
            CORDER | CPREFER
        }
    } else if n > 1 && is_layout(l, true) {
        FORDER | FPREFER
    } else if n > 1 {
        if dim[0] > 1 && st[0] == 1 {
            FPREFER
        } else if dim[n - 1] > 1 && st[n - 1] == 1 {
            CPREFER
        } else {
            0
        }
    } else {
        0
    }
}

/// ndarray's `is_layout_c` (`f`: `is_layout_f`): unit-stride contiguous
/// in that order, axes of length 1 ignored (ndarray's special case for
/// `Ix1`, "stride 1 or at most one element", is what this gives for one
/// axis).
fn is_layout(l: &ArrLayout, f: bool) -> bool {
    if l.dim().contains(&0) {
        return true;
    }
    let mut contig = 1isize;
    let n = l.n;
    for j in 0..n {
        let k = if f { j } else { n - 1 - j };
        if l.dim[k] != 1 {
            if l.strides[k] != contig {
                return false;
            }
            contig *= l.dim[k] as isize;
        }
    }
    true
}

/// `Zip::prefer_f`: not all row-major, and all column-major or more
/// column- than row-leaning (false when a layout is past 8 axes).
pub(crate) fn prefer_f(inputs: &[Option<ArrLayout>]) -> bool {
    if inputs.iter().any(Option::is_none) {
        return false;
    }
    let bits = inputs.iter().flatten().map(layout_bits);
    let all = bits.clone().fold(!0u8, |a, b| a & b);
    let tendency: i32 = bits
        .map(|b| {
            i32::from(b & CORDER != 0) - i32::from(b & FORDER != 0) + i32::from(b & CPREFER != 0)
                - i32::from(b & FPREFER != 0)
        })
        .sum();
    all & CORDER == 0 && (all & FORDER != 0 || tendency < 0)
}

/// An array of shape `dim` holding `v`, the elements listed in the memory
/// order `order` (`v` in row-major order of the shape permuted by
/// `order`).
pub fn from_vec_in<T, D: Dimension>(dim: D, v: Vec<T>, order: &MemOrder) -> Array<T, D> {
    if order.is_row_major() {
        return Array::from_shape_vec(dim, v).expect("row-major shape");
    }
    let n = order.n;
    let mut pdim = dim.clone();
    for (j, &k) in order.axes[..n].iter().enumerate() {
        pdim[j] = dim[k];
    }
    let stored = Array::from_shape_vec(pdim, v).expect("permuted shape");
    // Axis k of the result is axis j of `stored` where order.axes[j] == k.
    let mut back = D::zeros(dim.ndim());
    for (j, &k) in order.axes[..n].iter().enumerate() {
        back[k] = j;
    }
    let mut out = stored.permuted_axes(back);
    for (k, &f) in order.flip[..n].iter().enumerate() {
        if f {
            out.invert_axis(Axis(k));
        }
    }
    out
}

/// `a` stored in the memory order `order` (a copy unless it is row-major
/// and so is `order`): the result of a generated elementwise kernel over
/// more arrays than [`crate::zip3_map`] takes, stored as ndarray would.
pub fn stored_in<T: Copy, D: Dimension>(a: Array<T, D>, order: &MemOrder) -> Array<T, D> {
    if order.is_row_major() && a.is_standard_layout() {
        return a;
    }
    let n = order.n;
    let mut walk = a.view();
    for (k, &f) in order.flip[..n].iter().enumerate() {
        if f {
            walk.invert_axis(Axis(k));
        }
    }
    let mut axes = D::zeros(a.ndim());
    for (j, &k) in order.axes[..n].iter().enumerate() {
        axes[j] = k;
    }
    let v: Vec<T> = walk.permuted_axes(axes).iter().copied().collect();
    from_vec_in(a.raw_dim(), v, order)
}

/// [`crate::pooled_for_overwrite`] in the memory order `order`: the output
/// of a generated multi-output pass, stored as ndarray would store the
/// result of the same elementwise operation.
pub fn pooled_for_overwrite_in<T: Pooled, D: Dimension>(dim: D, order: &MemOrder) -> Array<T, D> {
    let buf = output_for_overwrite(dim.size(), T::default());
    from_vec_in(dim, buf, order)
}

/// `a` itself when it is in standard (row-major, contiguous) layout, else
/// a copy in that layout: every array a public derivative returns (a
/// transpose is free in ndarray, so a gradient may come out column-major).
/// One generic function instead of the branch written out at every result.
#[inline]
pub fn into_standard_layout<A: Clone, D: Dimension>(a: Array<A, D>) -> Array<A, D> {
    if a.is_standard_layout() {
        a
    } else {
        a.as_standard_layout().into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{s, Array2, Array3, ShapeBuilder, Zip};

    /// A row-major array is returned as it is (its buffer kept); a
    /// column-major one as a row-major copy with the same elements.
    #[test]
    fn results_come_out_row_major() {
        let a = Array2::from_shape_fn((3, 4), |(i, j)| (10 * i + j) as f64);
        let ptr = a.as_ptr();
        let same = into_standard_layout(a);
        assert_eq!(same.as_ptr(), ptr);
        let t = Array2::from_shape_fn((3, 4).f(), |(i, j)| (10 * i + j) as f64);
        assert!(!t.is_standard_layout());
        let r = into_standard_layout(t.clone());
        assert!(r.is_standard_layout());
        assert_eq!(r, t);
    }

    /// The order chosen for one input is the memory order of ndarray's own
    /// `map` result, for row- and column-major, permuted, reversed and
    /// strided inputs: a result built in that order has the strides of
    /// ndarray's.
    #[test]
    fn map_results_are_stored_as_ndarray_stores_them() {
        let a = Array3::from_shape_fn((3, 4, 5), |(i, j, k)| (i * 20 + j * 5 + k) as f64);
        let views = [
            a.view(),
            a.view().reversed_axes(),
            a.view().permuted_axes([1, 0, 2]),
            a.slice(s![..;-1, .., ..;-1]),
            a.slice(s![.., ..;2, ..]),
            a.slice(s![.., 1..2, ..]),
        ];
        for v in views {
            let theirs = v.map(|x| x * 2.0);
            let order = result_order(&[layout_of(&v)]);
            let mine = from_vec_in(
                v.raw_dim(),
                theirs.as_slice_memory_order().unwrap().to_vec(),
                &order,
            );
            assert_eq!(mine, theirs);
            assert_eq!(
                mine.strides(),
                theirs.strides(),
                "strides of {:?}",
                v.strides()
            );
        }
    }

    /// The kernels' results have the strides of ndarray's own: `map` of a
    /// transposed or reversed view, `zip_map` of transposed views
    /// (column-major) and of mixed layouts (row-major), `zip3_map` as
    /// `Zip::map_collect` of its three inputs.
    #[test]
    fn kernel_results_have_ndarrays_strides() {
        let a = Array2::from_shape_fn((5, 7), |(i, j)| (i * 7 + j) as f64);
        let b = Array2::from_shape_fn((7, 5), |(i, j)| (i * 5 + j) as f64 * 0.5);
        for v in [a.t(), a.slice(s![..;-1, ..]).reversed_axes()] {
            let (mine, theirs) = (crate::map(&v, |x| x + 1.0), v.map(|x| x + 1.0));
            assert_eq!((&mine, mine.strides()), (&theirs, theirs.strides()));
        }
        for (x, y) in [(a.t(), b.view()), (b.view(), b.view()), (a.t(), a.t())] {
            let mine = crate::zip_map(&x, &y, |p, q| p * q);
            let theirs = &x * &y;
            assert_eq!((&mine, mine.strides()), (&theirs, theirs.strides()));
            let mine3 = crate::zip3_map(&x, &y, &x, |p, q, r| p * q - r);
            let theirs3 = Zip::from(&x)
                .and(&y)
                .and(&x)
                .map_collect(|p, q, r| p * q - r);
            assert_eq!((&mine3, mine3.strides()), (&theirs3, theirs3.strides()));
        }
    }

    /// `stored_in` keeps the values and takes the order's strides.
    #[test]
    fn stored_in_relays_out_without_changing_values() {
        let a = Array3::from_shape_fn((3, 4, 5), |(i, j, k)| (i * 20 + j * 5 + k) as f64);
        for v in [a.view().reversed_axes(), a.slice(s![..;-1, .., ..])] {
            let order = result_order(&[layout_of(&v)]);
            let row_major = v.as_standard_layout().into_owned();
            let out = stored_in(row_major, &order);
            assert_eq!(out, v);
            assert_eq!(out.strides(), v.map(|x| *x).strides());
        }
    }

    /// Several inputs: column-major exactly where `Zip::map_collect` makes
    /// column-major results.
    #[test]
    fn zip_results_are_stored_as_ndarray_stores_them() {
        let a = Array2::from_shape_fn((4, 6), |(i, j)| (i * 6 + j) as f64);
        let b = Array2::from_shape_fn((6, 4), |(i, j)| (i * 4 + j) as f64);
        let c = a.t().to_owned();
        let pairs = [
            (a.view(), a.view()),
            (b.t(), b.t()),
            (b.t(), a.view()),
            (a.view(), c.t()),
            (c.view().reversed_axes().reversed_axes(), b.view()),
            (a.slice(s![.., ..;-1]), b.t()),
        ];
        for (x, y) in pairs {
            if x.shape() != y.shape() {
                continue;
            }
            let theirs = Zip::from(&x).and(&y).map_collect(|p, q| p + q);
            let order = result_order(&[layout_of(&x), layout_of(&y)]);
            let f = order == MemOrder::column_major(2);
            assert_eq!(
                f,
                !theirs.is_standard_layout(),
                "{:?} {:?}",
                x.strides(),
                y.strides()
            );
        }
    }
}
