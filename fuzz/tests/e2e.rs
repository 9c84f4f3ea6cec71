//! One end-to-end batch with a fixed seed (the CI corpus): generated
//! functions compiled by rustc in a scratch crate under
//! `target/linad-fuzz-e2e/`, checked for primal bit-identity, jvp vs finite
//! differences and vjp vs jvp; mutants must give one clear error each.
//! `LINAD_FUZZ_E2E=N` sets the batch size (default 100), `LINAD_FUZZ_SEED`
//! the seed, `LINAD_FUZZ_FEATURES` the feature classes.

use linad_fuzz::{e2e, env_features, env_num};

#[test]
fn e2e_batch() {
    let n = env_num("LINAD_FUZZ_E2E", 100) as usize;
    let seed = env_num("LINAD_FUZZ_SEED", 1);
    assert!(
        e2e::run_batch(n, seed, env_features()),
        "end-to-end fuzz batch failed (see the report above)"
    );
}
