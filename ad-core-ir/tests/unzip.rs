//! The unzip pass (`ad_core_ir::unzip`), through the driver on random
//! programs (`common/gen/`): `f__fwd` and `f__jvp` reproduce the primal bit
//! for bit, and `f__lin` reproduces the tangents of `f__jvp`.
//!
//! `PROPTEST_CASES` sets the number of cases (default 256);
//! `LINAD_GEN_DISABLE=loop,fold` switches constructs off (see `GenConfig`);
//! `LINAD_NO_SIMPLIFY` runs the driver without the simplifier.

mod common;

use common::props::{at_most, derive, derived_to_string, fail, jvp_tangents, run_prop};

/// (b) unzip: fwd and jvp reproduce the primal bit for bit, lin reproduces jvp.
#[test]
fn prop_unzip_reproduces_jvp() {
    run_prop("unzip reproduces jvp", |c| {
        let (d, r) = derive(c)?;
        if !(r.jvp_primal_exact && r.fwd_primal_exact) {
            return Err(fail(format!("primal results differ: {r:?}")));
        }
        let scale = jvp_tangents(c, &d)?
            .iter()
            .map(|t| t.max_abs_diff(&t.zeros_like()))
            .fold(1.0, f64::max);
        if !at_most(r.lin_vs_jvp, 1e-12 * scale) {
            return Err(fail(format!(
                "lin vs jvp: {:e} (|jvp| = {scale:e}); {r:?}\n{}",
                r.lin_vs_jvp,
                derived_to_string(&d)
            )));
        }
        Ok(())
    });
}
