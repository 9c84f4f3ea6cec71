//! The parallel threshold; alone in its binary because it changes the global
//! threshold that other tests rely on.

mod common;

use ad_runtime::*;
use common::*;

#[test]
fn threshold_is_tunable_and_does_not_change_results() {
    let x = vec1(100_000, 9);
    set_par_threshold(usize::MAX);
    assert_eq!(par_threshold(), usize::MAX);
    let hits = in_pool(2, || map(&x, |_| in_parallel_kernel() as usize).sum());
    assert_eq!(hits, 0);
    let seq = in_pool(2, || sum(&x));
    set_par_threshold(1);
    let hits = in_pool(2, || map(&x, |_| in_parallel_kernel() as usize).sum());
    assert_eq!(hits, 100_000);
    let par = in_pool(2, || sum(&x));
    assert_eq!(seq.to_bits(), par.to_bits());
}
