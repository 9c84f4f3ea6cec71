//! Shared support of the pass tests: the random program generator (`gen/`),
//! the proptest configuration (here), the properties' driver (`props.rs`),
//! and the passes one at a time for unit tests (`passes.rs`).

pub mod gen;
pub mod passes;
pub mod props;

use proptest::test_runner::Config;

/// Number of cases: `PROPTEST_CASES` if set, else 256.
pub fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(256)
}

/// The proptest configuration of the properties: `cases()` cases, no
/// regression files, bounded shrinking.
pub fn config() -> Config {
    Config {
        cases: cases(),
        failure_persistence: None,
        max_shrink_iters: 20_000,
        max_shrink_time: 180_000,
        ..Config::default()
    }
}
