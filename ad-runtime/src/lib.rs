//! Deterministic, rayon-parallel array kernels on ndarray, called by the code
//! that linad's `#[differentiable]` macro generates.
//!
//! The crate knows nothing about differentiation. Every kernel takes its
//! array inputs as `&ArrayBase<S, D>` (owned arrays, views, strided or
//! transposed views), checks shapes and indices (panicking with a message
//! `ad_runtime::<kernel>: ...`), and runs on rayon's current pool above
//! [`par_threshold`] elements of work.
//!
//! | group | kernels |
//! |---|---|
//! | elementwise | [`build`], [`build_weighted`], [`build_lanes`] (strip-mined: [`LANES`] rows per call; [`LaneRows`], [`Columns`], [`lanes_sum`]), [`map`], [`zip_map`], [`zip3_map`], several results per element: [`multi_map_2_1`] .. [`multi_map_5_1`] (broadcast inputs read in blocks of slices); sums over rows of a map without the mapped matrix: [`map_sum_rows1`] .. [`map_sum_rows3`]; results stored in ndarray's memory order ([`result_order`], [`pooled_for_overwrite_in`]) |
//! | reductions | [`sum`], [`sum_axis`], [`product`], [`product_axis`], [`max_arg`], [`min_arg`], [`max_arg_axis`], [`min_arg_axis`], [`logsumexp`], [`logsumexp_axis`], [`unravel_index`] |
//! | arg-reductions (floats and integers, NaNs skipped) | [`arg_index`], [`arg_index_axis`] |
//! | scans | [`scan_inclusive`], [`scan_exclusive`], [`scan_reverse`], [`scan_axis`], [`scan_i64`] |
//! | indexing | [`lane1`], [`lane2`], [`lane3`] (a lane read in a loop, taken once before it), [`gather`], [`scatter_add`], [`scatter_add_i64`], [`add_at`], [`add_row_at`] |
//! | products | [`dot`], [`matvec`], [`matvec_t`], [`vecmat`], [`matmul`], [`matmul_tn`], [`matmul_nt`], [`outer`] |
//! | broadcasting | [`broadcast_to`], [`broadcast_axis`], [`sum_to_shape`], [`stretch_owned`], [`sum_to_owned`], [`sum_to_if_needed`] |
//! | accumulation | [`add_scaled`], [`add_assign`], [`zeros_like`], [`accumulate_chunked`], [`accumulate_chunked_by`] (accumulation loops in fixed chunks), [`accumulate_rows`], [`rows_copy`], [`rows_put`] (iterations owning their rows) |
//! | per-iteration values | [`stack_arrays`], [`ResidualStack`], [`ArrayResidualStack`], [`Scratch`], [`pooled_zeros`], [`recycle`] (per-thread reusable buffers) |
//! | tasks (blocks of a generated kernel with several outputs) | [`for_each_item`], [`rows_per_task`] |
//! | argument checks of generated derivatives | [`check_arg_shape`] |
//!
//! Generated code calls most of these; `ad-runtime/README.md` ("Not called
//! by generated code") lists the others and why they are kept.
//!
//! **Determinism**: every kernel returns bit-identical results for any
//! number of threads and across runs. Reductions, scans, scatter-add and
//! matrix products use chunk boundaries fixed by the shapes and constants of
//! this crate and combine partial results in a fixed order; no floating-point
//! atomics. See [`par`] for the parallel policy.

#![warn(missing_docs)]
#![deny(unsafe_code)]

mod accumulate;
pub mod arg;
mod blocks;
mod broadcast;
mod build_rows;
mod check;
mod elem;
mod fold;
mod gather;
mod lane;
mod layout;
mod map;
mod map_sum;
mod matmul;
pub mod par;
mod plain_arg;
mod reduce;
mod scan;
mod scratch;
mod stack;
mod strided;
mod strip;
mod zip_pass;

pub use accumulate::{
    accumulate_chunked, accumulate_chunked_by, accumulate_rows, add_assign, add_scaled, rows_copy,
    rows_put, zeros_like, ACC_WORK_DIVISOR, MAX_CHUNKS, MIN_CHUNK_ITERS,
};
pub use arg::{arg_index, arg_index_axis, Ordered, ARG_MAX_RANK};
pub use blocks::{
    multi_map_2_1, multi_map_2_2, multi_map_2_3, multi_map_2_4, multi_map_3_1, multi_map_3_2,
    multi_map_3_3, multi_map_4_1, multi_map_4_2, multi_map_5_1,
};
pub use broadcast::{
    broadcast_axis, broadcast_to, outer, stretch_owned, sum_to_if_needed, sum_to_owned,
    sum_to_shape,
};
pub use build_rows::{build_rows, RowSink};
pub use check::check_arg_shape;
pub use elem::Elem;
pub use gather::{add_at, add_row_at, gather, scatter_add, scatter_add_i64};
pub use lane::{lane1, lane2, lane3};
pub use layout::{
    from_vec_in, into_standard_layout, layout_of, pooled_for_overwrite_in, result_order, stored_in,
    ArrLayout, MemOrder,
};
pub use map::{build, build_weighted, map, zip3_map, zip_map};
pub use map_sum::{map_sum_rows1, map_sum_rows2, map_sum_rows3};
pub use matmul::{dot, matmul, matmul_nt, matmul_tn, matvec, matvec_t, vecmat};
pub use par::{
    for_each_item, go_parallel, in_parallel_kernel, par_threshold, rows_per_task,
    set_par_threshold, PAR_THRESHOLD,
};
pub use plain_arg::{in_standard_layout, plain_arg, PlainArg};
pub use reduce::{
    logsumexp, logsumexp_axis, max_arg, max_arg_axis, min_arg, min_arg_axis, product, product_axis,
    sum, sum_axis, unravel_index,
};
pub use scan::{scan_axis, scan_exclusive, scan_i64, scan_inclusive, scan_reverse, ScanKind};
pub use scratch::{
    pooled_for_overwrite, pooled_full, pooled_vec, pooled_zeros, recycle, Pooled, Scratch,
    POOL_LEN, POOL_MAX_BYTES, POOL_MAX_TOTAL_BYTES, POOL_MIN_BYTES,
};
pub use stack::{stack_arrays, ArrayResidualStack, ArrayStack, ResidualStack};
pub use strided::{diagonal_view, strided_view, StridedAxis};
pub use strip::{
    build_lanes, build_lanes_ctx, lane_rows_fit, lanes_at, lanes_sum, Columns, LaneCols, LaneRows,
    LANES, TILE_MAX_COLUMNS,
};
pub use zip_pass::{
    zip_pass, zip_pass1, zip_pass2, zip_pass3, zip_pass4, zip_pass5, zip_pass6, ZipPass,
};
