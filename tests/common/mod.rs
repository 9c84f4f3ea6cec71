//! Shared helpers of the integration tests: the public checker of
//! `linad::testing`, plus small conveniences.
#![allow(dead_code, unused_imports)]

pub use linad::testing::{
    assert_all_close, assert_close, check_derivatives, check_derivatives_with, CheckOptions,
    CheckReport, Flatten, Rng, Unflatten,
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

/// `f` run in a rayon pool of `threads` threads, with the runtime's
/// parallel threshold at 1 (every kernel that can split does).
pub fn in_pool<T: Send>(threads: usize, f: impl FnOnce() -> T + Send) -> T {
    linad::__private::ad_runtime::set_par_threshold(1);
    let r = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap()
        .install(f);
    linad::__private::ad_runtime::set_par_threshold(
        linad::__private::ad_runtime::par::DEFAULT_PAR_THRESHOLD,
    );
    r
}
