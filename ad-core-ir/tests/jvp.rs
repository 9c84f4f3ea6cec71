//! The JVP pass (`ad_core_ir::jvp`), through the driver on random programs
//! (`common/gen/`): the tangents agree with central finite differences.
//!
//! `PROPTEST_CASES` sets the number of cases (default 256);
//! `LINAD_GEN_DISABLE=loop,fold` switches constructs off (see `GenConfig`);
//! `LINAD_NO_SIMPLIFY` runs the driver without the simplifier.

mod common;

use common::props::{below, derive, fail, run_prop};

/// (a) jvp agrees with central finite differences.
#[test]
fn prop_jvp_matches_finite_differences() {
    run_prop("jvp vs finite differences", |c| {
        let (_, r) = derive(c)?;
        if !below(r.fd_rel_err, 1e-5) {
            return Err(fail(format!("fd_rel_err = {:e}; {r:?}", r.fd_rel_err)));
        }
        Ok(())
    });
}
