//! The linad compiler core: a typed Linear-A IR with arrays and the passes that
//! turn a primal program into forward and reverse derivatives.
//!
//! Pipeline: a non-linear [`ir::Func`] goes through JVP (Linear A: primal and
//! tangent, tangent provably linear), unzip (a primal function returning
//! residuals and a Linear-B linear function reading them) and transpose (the
//! linear function run backwards), with the simplifier between passes. The
//! [`interp`] module is the reference semantics every pass is tested against.
#![warn(missing_docs)]

pub mod accumulate;
pub mod build;
pub mod check;
pub mod dense;
pub mod driver;
pub mod dupdrop;
pub mod error;
pub mod externs;
pub mod fast_hash;
pub mod interp;
pub mod ir;
pub mod jvp;
pub mod linear_form;
pub mod linear_shapes;
pub mod names;
pub mod normalize;
pub mod parse;
pub mod pretty;
pub mod prune;
pub mod simplify;
pub mod taint;
pub mod testing;
pub mod transpose;
pub mod types;
pub mod typing;
pub mod unzip;
pub mod visit;
pub mod vjp;
