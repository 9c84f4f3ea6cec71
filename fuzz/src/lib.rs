//! The linad fuzzer: random well-typed `#[differentiable]` functions over the
//! supported syntax (`gen`), their direct evaluation with Rust semantics
//! (`ast`), a mutator turning valid functions into invalid ones (`mutate`),
//! and end-to-end batches compiled by rustc (`e2e`).
//!
//! The in-process level runs in `ad-macros` (`src/fuzz_tests.rs`), where the
//! macro's expansion is reachable as a library function.

pub mod ast;
pub mod e2e;
pub mod gen;
pub mod mutate;
pub mod rng;

pub use gen::{generate, Case, Config, Feature, Features};

/// Feature classes that fail today and are switched off in the CI corpus
/// (see the README's "Fuzzing" section and issue 8): none (`strided` was,
/// until slices became ndarray's views).
pub const KNOWN_FAILING: &str = "";

/// Fixed-seed regression cases from the fuzzer's findings (issue 8): the
/// feature set, the seed and what failed. All pass now and are checked in CI
/// (`cargo test -p ad-macros --release fuzz_regressions`, and end to end by
/// `linad-fuzz regressions`). The seeds are tied to this generator: when it
/// changes, re-derive them from the minimal sources in the README.
pub const REGRESSIONS: &[(&str, u64, &str)] = &[
    (
        "cfg",
        1000012,
        "`#[cfg(test)] let x = ..;` is lowered although cfg(test) is off",
    ),
    (
        "oddparams",
        1000076,
        "a parameter named `ct` collides with f_vjp's `ct`",
    ),
    (
        "oddparams",
        1000219,
        "a raw identifier parameter `r#in`: the macro panics (\"d_r#in\" is not a valid Ident)",
    ),
    (
        "ints,casts,narrowing",
        1000110,
        "`(x * 100.0) as i8`: no saturation at the target width",
    ),
    ("math,muladd", 1000059, "`mul_add` is not fused"),
    (
        "math,exp2",
        1000039,
        "`exp2` differs in the last bit from std",
    ),
    (
        "all,-whiles,-exits,-views,-strided",
        101004381,
        "`hypot(a, b)` at the origin: a NaN cotangent where the tangent is finite",
    ),
    (
        "all,-whiles,-exits,-views,-strided",
        102000715,
        "a false finding: finite differences across the jump of `(s * 1000.0) as i16` (the error grows like 1/h)",
    ),
    (
        "all,-whiles,-exits,-views,-strided",
        202004042,
        "`atan2(0, b)` with b = 0: a NaN cotangent where the tangent is finite",
    ),
    (
        "all,-whiles,-exits,-views,-strided",
        7098933,
        "`i8::MIN % -1` panics in Rust (the quotient overflows); the oracle computed 0 (a harness bug)",
    ),
    (
        "all,-whiles,-exits,-views,-strided",
        644000678,
        "a false finding: finite differences across the jump of `((-x).to_degrees() * 1000.0) as u32` at steps 1e-4 and 1e-6 (now also 1e-8)",
    ),
    (
        "all,-whiles,-exits,-views,-strided",
        200003488,
        "a false finding: finite differences through `v *= v.cos()` at |v| ~ 2.5e7 need steps down to 1e-9 (the jvp was right)",
    ),
    (
        "all,-whiles,-exits,-views,-strided",
        7077171,
        "an oracle bug: the sum of an array of -0.0 is +0.0 in ndarray (std's f64 `Sum` starts at -0.0)",
    ),
    (
        "all,-whiles,-exits,-views,-strided",
        7005563,
        "a false finding: `sin` of a value of 1e26 is chaotic at every step; finite differences resolve no component",
    ),
    (
        "all,-whiles,-exits,-views,-strided",
        7078066,
        "a false finding: `cos(1.8e19 - s)` absorbs the step (`1.8e19 - s == 1.8e19`); f64 is flat where the real derivative is not",
    ),
    (
        "all,-whiles,-exits,-views,-strided",
        8035544,
        "the simplifier's `x + 0.0 = x` turned f's +0.0 (`-0.0 + 0.0`) into -0.0 in f_jvp / f_vjp: only `x + (-0.0)` and `x - 0.0` are identities",
    ),
];

/// Fixed-seed regression mutants (mutation kind, seed of the program
/// generated with all features but `whiles` and `exits`, what fails), checked by the
/// same test.
pub const MUTANT_REGRESSIONS: &[(&str, u64, &str)] = &[(
    "keyword_fn_name",
    1000363,
    "`fn r#loop(..)`: the macro panics (\"__linad_r#loop_support\" is not a valid Ident)",
), (
    "unknown_method",
    7078309,
    "a harness bug: the errors of both `#[cfg(debug_assertions)]` variants were counted although rustc compiles one",
)];

/// The CI feature set: everything except [`KNOWN_FAILING`].
pub fn ci_features() -> Features {
    let mut s = String::from("all");
    for f in KNOWN_FAILING.split(',').filter(|f| !f.is_empty()) {
        s.push_str(",-");
        s.push_str(f);
    }
    Features::parse(&s).expect("known feature names")
}

/// Features from `LINAD_FUZZ_FEATURES` (e.g. `all,-cfg`), default
/// [`ci_features`].
pub fn env_features() -> Features {
    match std::env::var("LINAD_FUZZ_FEATURES") {
        Ok(s) => Features::parse(&s).unwrap_or_else(|e| panic!("LINAD_FUZZ_FEATURES: {e}")),
        Err(_) => ci_features(),
    }
}

/// `name` from the environment as a number, else `default`.
pub fn env_num(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}
