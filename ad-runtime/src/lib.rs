//! Deterministic, rayon-parallel array kernels on ndarray, called by the code
//! that linad's `#[differentiable]` macro generates.
//!
//! The crate knows nothing about differentiation. Every kernel takes its
//! array inputs as `&ArrayBase<S, D>` (owned arrays, views, strided or
//! transposed views), checks shapes and indices (panicking with a message
//! `ad_runtime::<kernel>: ...`), and runs on rayon's current pool above
//! [`par_threshold`] elements of work.
//!
//! **Determinism**: every kernel returns bit-identical results for any
//! number of threads and across runs. Reductions, scans, scatter-add and
//! matrix products use chunk boundaries fixed by the shapes and constants of
//! this crate and combine partial results in a fixed order; no floating-point
//! atomics. See [`par`] for the parallel policy.

#![warn(missing_docs)]
#![deny(unsafe_code)]

mod check;
mod elem;
mod fold;
mod map;
pub mod par;
mod reduce;

pub use elem::Elem;
pub use map::{build, map, zip3_map, zip_map};
pub use par::{in_parallel_kernel, par_threshold, set_par_threshold, PAR_THRESHOLD};
pub use reduce::{
    logsumexp, logsumexp_axis, max_arg, max_arg_axis, min_arg, min_arg_axis, product, product_axis,
    sum, sum_axis, unravel_index,
};
