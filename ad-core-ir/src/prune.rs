//! Residual pruning: after the simplifier has run on `f__lin`, residuals it
//! no longer reads are removed from both halves (from `f__fwd`'s results and
//! `f__lin`'s parameters), so the primal side neither keeps nor computes
//! them for the linear side.
//!
//! ```text
//! def f__fwd(x) {                        def f__fwd(x) {
//!   let s = sin x                          let s = sin x
//!   let c = cos x                          let c = cos x
//!   return s, c, x                         return s, c
//! }                                      }
//! def f__lin(c, x ; dx) {                def f__lin(c ; dx) {
//!   let ; d = lscale c, dx                 let ; d = lscale c, dx
//!   return ; d                             return ; d
//! }                                      }
//! ```

use crate::ir::*;
use crate::visit::{free_vars_block, shape_vars};

/// Removes the residuals that the linear function does not read from both
/// `fwd`'s results and `lin`'s parameters. Returns the number removed.
pub fn prune_residuals(fwd: &mut Func, lin: &mut Func, n_results: usize) -> usize {
    let mut used = free_vars_block(&lin.body).nl;
    for s in &lin.lin_param_shapes {
        shape_vars(s, &mut used);
    }
    let keep: Vec<bool> = lin.params.iter().map(|p| used.contains(p)).collect();
    let removed = keep.iter().filter(|k| !**k).count();
    if removed == 0 {
        return 0;
    }
    let mut k = 0;
    lin.params.retain(|_| {
        k += 1;
        keep[k - 1]
    });
    let mut j = 0;
    let res = std::mem::take(&mut fwd.body.results);
    for (i, a) in res.into_iter().enumerate() {
        if i < n_results {
            fwd.body.results.push(a);
        } else {
            if keep[j] {
                fwd.body.results.push(a);
            }
            j += 1;
        }
    }
    removed
}
