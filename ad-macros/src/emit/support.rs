//! The support module emitted next to the generated functions (only when
//! they use it): helpers that the runtime does not provide — stacking
//! per-iteration arrays, arg-max/min with the interpreter's NaN rule, and
//! integer scans and scatter-adds. Named per function
//! (`__linad_f_support`), private to the user's module.

use super::types::nd;
use proc_macro2::{Ident, TokenStream};
use quote::quote;

/// The module's items.
pub fn module(name: &Ident) -> TokenStream {
    let nd = nd();
    quote! {
        #[doc(hidden)]
        #[allow(dead_code, unused_imports, unused_variables, clippy::all, clippy::pedantic, clippy::nursery)]
        mod #name {
            use #nd::{ArrayBase, ArrayD, ArrayView1, ArrayViewD, Axis, Data, Dimension, IxDyn};

            /// Stacks equally shaped arrays of rank `elem_rank`, given in
            /// row-major order of the leading shape `lead`, into one array of
            /// shape `lead ++ element shape` (element sizes 0 when there are none).
            pub(super) fn stack<T: Clone>(
                lead: &[usize],
                elem_rank: usize,
                elems: ::std::vec::Vec<ArrayViewD<'_, T>>,
            ) -> ArrayD<T> {
                let count: usize = lead.iter().product();
                assert_eq!(elems.len(), count, "linad: stacking {} values into {:?}", elems.len(), lead);
                let elem_shape: ::std::vec::Vec<usize> = match elems.first() {
                    Some(e) => e.shape().to_vec(),
                    None => ::std::vec![0; elem_rank],
                };
                let size: usize = elem_shape.iter().product();
                let mut data = ::std::vec::Vec::with_capacity(count * size);
                for e in &elems {
                    assert_eq!(e.shape(), &elem_shape[..], "linad: stacked values of different shapes");
                    data.extend(e.iter().cloned());
                }
                let mut shape = lead.to_vec();
                shape.extend(elem_shape);
                ArrayD::from_shape_vec(IxDyn(&shape), data).expect("linad: stack shape")
            }

            /// Ordered elements with a NaN test.
            pub(super) trait Num: Copy + PartialOrd {
                /// Whether the value is NaN.
                fn nan(self) -> bool;
            }
            impl Num for f64 {
                fn nan(self) -> bool {
                    self.is_nan()
                }
            }
            impl Num for i64 {
                fn nan(self) -> bool {
                    false
                }
            }

            /// Whether `x` beats the best so far (NaNs are skipped; the first extremum wins).
            fn beats<T: Num>(x: T, best: T, max: bool) -> bool {
                if best.nan() {
                    !x.nan()
                } else if max {
                    x > best
                } else {
                    x < best
                }
            }

            /// The multi-index of the first maximum (`max`) or minimum (all 0 when empty),
            /// in the leading entries of a fixed array (no allocation; rank <= 6).
            pub(super) fn arg_all<T: Num, S: Data<Elem = T>, D: Dimension>(a: &ArrayBase<S, D>, max: bool) -> [i64; 6] {
                let mut best: Option<(usize, T)> = None;
                for (k, &x) in a.iter().enumerate() {
                    match best {
                        Some((_, b)) if !beats(x, b, max) => {}
                        _ => best = Some((k, x)),
                    }
                }
                let mut k = best.map_or(0, |b| b.0);
                let shape = a.shape();
                let mut idx = [0i64; 6];
                for ax in (0..shape.len()).rev() {
                    if shape[ax] > 0 {
                        idx[ax] = (k % shape[ax]) as i64;
                        k /= shape[ax];
                    }
                }
                idx
            }

            /// Along `axis`: the position of the first maximum / minimum of every lane.
            pub(super) fn arg_axis<T: Num>(a: ArrayViewD<'_, T>, axis: usize, max: bool) -> ArrayD<i64> {
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

            /// Inclusive prefix (suffix when `reverse`) sums of `i64`s along axis 0.
            pub(super) fn scan_i64(a: ArrayViewD<'_, i64>, reverse: bool) -> ArrayD<i64> {
                let mut out = a.to_owned();
                let n = out.shape()[0];
                for step in 1..n {
                    let (prev, k) = if reverse { (n - step, n - 1 - step) } else { (step - 1, step) };
                    let p = out.index_axis(Axis(0), prev).to_owned();
                    let mut row = out.index_axis_mut(Axis(0), k);
                    row += &p;
                }
                out
            }

            /// `out = zeros([len, ..]); out[idx[k], ..] += vals[k, ..]` for `i64`s.
            pub(super) fn scatter_add_i64(len: usize, idx: ArrayView1<'_, i64>, vals: ArrayViewD<'_, i64>) -> ArrayD<i64> {
                assert_eq!(idx.len(), vals.shape()[0], "linad: scatter_add of {} rows with {} indices", vals.shape()[0], idx.len());
                let mut shape = vals.shape().to_vec();
                shape[0] = len;
                let mut out = ArrayD::zeros(IxDyn(&shape));
                for (k, &i) in idx.iter().enumerate() {
                    let mut row = out.index_axis_mut(Axis(0), i as usize);
                    row += &vals.index_axis(Axis(0), k);
                }
                out
            }
        }
    }
}
