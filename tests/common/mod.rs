//! Shared helpers of the integration tests: the public checker of
//! `linad::testing`, plus small conveniences.
#![allow(dead_code, unused_imports)]

pub use linad::testing::{
    assert_close, check_derivatives, check_derivatives_with, CheckOptions, CheckReport, Flatten,
    Rng, Unflatten,
};

/// A generator seeded by the test's name, so every test has its own inputs.
pub fn rng(name: &str) -> Rng {
    let seed = name.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
    });
    Rng::new(seed)
}

/// Asserts `a` and `b` are bit-identical leaf by leaf (and shaped alike).
#[track_caller]
pub fn assert_same_bits<T: Flatten>(a: &T, b: &T) {
    assert_eq!(a.shapes(), b.shapes(), "shapes differ");
    let (fa, fb) = (a.flatten(), b.flatten());
    for (i, (x, y)) in fa.iter().zip(&fb).enumerate() {
        assert_eq!(x.to_bits(), y.to_bits(), "leaf {i}: {x:e} vs {y:e}");
    }
}
