//! linad: source-to-source automatic differentiation for Rust.
//!
//! Put `#[differentiable]` on a function over `f64`, tuples and `ndarray` arrays to
//! get `f_jvp` (forward mode) and `f_vjp` (reverse mode) companions.

pub use ad_macros::differentiable;
pub use ndarray;

pub mod testing;

#[doc(hidden)]
pub mod __private {
    pub use ad_runtime;
}
