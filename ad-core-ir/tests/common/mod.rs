//! Shared support of the property tests: the random program generator
//! (`gen/`), the proptest configuration (here), and the properties' driver
//! (`props.rs`).

pub mod gen;
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
