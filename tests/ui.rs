//! Diagnostics of `#[differentiable]` (trybuild): every case in `tests/ui/`
//! must fail to compile with the message recorded in its `.stderr` file;
//! every case in `tests/pass/` must compile without warnings and run.
//!
//! Regenerate the `.stderr` files with `TRYBUILD=overwrite cargo test --test ui`
//! and read the diff: each must show one clear, spanned message from the macro.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/**/*.rs");
    t.pass("tests/pass/*.rs");
}
