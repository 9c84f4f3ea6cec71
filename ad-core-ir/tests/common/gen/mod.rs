//! A generator of random well-typed, non-linear, *safe and smooth* programs for
//! the property tests of the passes.
//!
//! # Design
//!
//! The generator is a typed expression generator driven by a *choice sequence*
//! (a `Vec<u8>`, Hypothesis style): every decision reads the next byte, and a
//! byte `0` (also what an exhausted sequence reads) always means the simplest
//! option (fewest statements, the simplest construct, the first candidate).
//! [`ChoiceStrategy`] shrinks the sequence (truncating, deleting chunks,
//! zeroing and halving bytes), which shrinks the program; the argument values
//! come from a separate seed.
//!
//! It keeps, per scope, a pool of available variables with their kind (`K`):
//! `f64` with an interval bound on its value, `i64` with a range (sizes,
//! indices), `bool`, `[f64]`/`[[f64]]` of known sizes with an element interval,
//! `[i64]` index arrays of known length and maximum, and tuples of these. The
//! intervals make the programs safe: indices are literals below the length,
//! indices of loops/builds over at most that length, or `rem` of a
//! non-negative integer by the length; `ln`, `sqrt`, `powf`, ... get arguments
//! with a positive lower bound (`x*x + c`, `cosh x`, `exp x`, `hypot(x, c)`),
//! `div`/`atan2` positive denominators, `tan` arguments in `[-1.2, 1.2]`; any
//! value whose bound exceeds `LIMIT` is squashed with `tanh`, and loop state
//! is squashed whenever its update could leave the (widened) interval of its
//! initial value, so values stay bounded whatever the trip count.
//!
//! Programs are smooth at the generated arguments with probability one: `max`,
//! `min`, `abs`, comparisons, `select` and arg-reductions only see distinct
//! variables and random continuous inputs (ties between exact copies are
//! harmless: copies have equal tangents).
//!
//! A program has 0..=2 helper functions (`h0`, `h1`; `f64` and `[f64]`
//! parameters bounded by 2 and results) followed by the entry `f`, whose
//! parameters are 1..=4 of `f64`, `[f64]` (length 1..=6), `[[f64]]` (2..=4 ×
//! 2..=4), plus sometimes an `i64` trip count (1..=4, not differentiated).
//!
//! # Files
//!
//! - `config.rs`: [`GenConfig`], which constructs the generator may use
//!   (`LINAD_GEN_DISABLE`, `LINAD_GEN_STACK_ARRAYS`);
//! - `choices.rs`: the choice streams ([`Choices`]), how the generator reads
//!   decisions from them (`Src`) and how they shrink ([`ChoiceStrategy`],
//!   [`ChoiceTree`]);
//! - `bounds.rs`: interval arithmetic (`Iv`) and the kinds of the pool
//!   (`K`: a type and what is known of its value);
//! - `generator.rs`: the generator's state (`Gen`, the pool of variables) and
//!   how it finds or makes operands of a given kind;
//! - `statements.rs`: one random statement of each construct;
//! - `case.rs`: case assembly: helpers, then the entry, `wrt` and the
//!   argument values ([`generate`], [`Case`], the strategy [`cases`]).

#![allow(dead_code)]

mod bounds;
mod case;
mod choices;
mod config;
mod generator;
mod statements;

// What the test files use (each binary some of it).
#[allow(unused_imports)]
pub use case::{cases, generate, Case};
#[allow(unused_imports)]
pub use choices::{ChoiceStrategy, ChoiceTree, Choices};
pub use config::GenConfig;
