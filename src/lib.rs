//! linad: source-to-source automatic differentiation for Rust.
//!
//! Put `#[differentiable]` on a function over `f64`, tuples of `f64` and
//! `ndarray` arrays; beside the unchanged function it generates `f_jvp`
//! (forward mode: the primal result and its tangent along given input
//! tangents) and `f_vjp` (reverse mode: the primal result and the gradients
//! of the differentiable parameters for a given output cotangent). The
//! derivative is plain Rust generated at compile time: no tape, no graph.
//!
//! ```
//! use linad::differentiable;
//! use linad::ndarray::{array, Array1};
//!
//! #[differentiable]
//! fn energy(x: f64, w: &Array1<f64>) -> f64 {
//!     w.iter().map(|wi| (wi * x).sin()).sum::<f64>() * x
//! }
//!
//! let w = array![0.5, -1.0, 2.0];
//! // Forward mode: tangents after the primal parameters.
//! let (y, dy) = energy_jvp(0.3, &w, 1.0, &Array1::zeros(3));
//! // Reverse mode: a cotangent of the output; gradients in parameter order.
//! let (y2, (gx, gw)) = energy_vjp(0.3, &w, 1.0);
//! assert_eq!(y.to_bits(), energy(0.3, &w).to_bits());
//! assert_eq!(y.to_bits(), y2.to_bits());
//! assert!((dy - gx).abs() < 1e-12); // d energy / dx both ways
//! assert_eq!(gw.len(), 3);
//! ```
//!
//! See the README for the supported syntax, `#[differentiable(wrt(..))]` and
//! `#[differentiable(dump)]`.
#![warn(missing_docs)]

pub use ad_macros::{custom_jvp, differentiable, linear, Differentiable};
/// The `ndarray` crate, re-exported so that user code and generated code
/// agree on one version.
pub use ndarray;
pub use tangent::{Differentiable, Tangent};

pub mod tangent;
pub mod testing;

#[doc(hidden)]
pub mod __private {
    pub use ad_runtime;

    /// The type of field `K` of a struct deriving `Differentiable` (the
    /// derive implements it for fields that are structs), so generated code
    /// can name it where the field's type is not in scope.
    pub trait Field<const K: usize> {
        /// The field's type.
        type Primal;
    }
}
