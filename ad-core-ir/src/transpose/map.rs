//! Transposition of a linear map. Capturing no arrays, it is a map of the
//! transposed body over the result cotangents, whose captured scalars get
//! per-element contributions, summed; capturing arrays, it is transposed as
//! the equivalent build (`build.rs`).
//!
//! ```text
//! let ; dm = map(e ; dv) |e_i ; dx| {     let ; v̄, ḡs = map(e ; ct) |e_i ; c| {
//!   let ; ng = lneg g       (g captured)     let ; d = lscale e_i, c
//!   let ; s = ladd dx, ng                    let ; d1, d2 = dup d
//!   let ; d = lscale e_i, s                  let ; ng = lneg d1
//!   yield ; d                                yield ; d2, ng
//! }                                       }
//!                                         let ; ḡ = lsum ḡs
//! ```

use super::{TransposeError, Transposer};
use crate::ir::*;
use crate::types::Ty;
use crate::visit::free_vars_lambda;

impl<'p> Transposer<'p> {
    /// A linear map. Capturing no arrays: a map of the transposed body over
    /// the result cotangents (captured scalars get per-element contributions,
    /// summed). Capturing arrays: as the equivalent build.
    pub(super) fn map(&mut self, s: &Stmt, m: &Map) -> Result<(), TransposeError> {
        let cts = self.result_cts(s)?;
        if cts.iter().all(Option::is_none) {
            return Ok(());
        }
        let caps: Vec<Var> = self.unique_roots(free_vars_lambda(&m.body).lin);
        if caps.iter().any(|v| self.b.ty(*v).rank() != Some(0)) {
            return self.map_as_build(s, m, &cts, &caps);
        }
        let saved = self.stash(&caps);
        let mut lin_arrs = vec![];
        let mut lin_params = vec![];
        let mut seeds = vec![];
        for ct in &cts {
            match ct {
                Some(c) => {
                    lin_arrs.push(*c);
                    let p = self.b.fresh_lin("ct_el", Ty::F64);
                    lin_params.push(p);
                    seeds.push(Some(p));
                }
                None => seeds.push(None),
            }
        }
        self.b.open();
        self.block(&m.body.body, &seeds)?;
        let mut outs = vec![];
        for &p in &m.body.lin_params {
            outs.push(self.materialize_or_zero(p)?);
        }
        let (used, cap_outs) = self.collect_caps(&caps)?;
        outs.extend(&cap_outs);
        let body = self.b.close(vec![], outs);
        self.restore(saved);
        let (_, arrs) = self.b.emit(Expr::Map(Map {
            arrs: m.arrs.clone(),
            lin_arrs,
            body: Lambda {
                params: m.body.params.clone(),
                lin_params,
                body,
            },
        }));
        let n_in = m.lin_arrs.len();
        for (x, a) in m.lin_arrs.iter().zip(&arrs[..n_in]) {
            self.add_dense(*x, Some(*a));
        }
        for (f, a) in used.into_iter().zip(&arrs[n_in..]) {
            let sum = self.b.lin(LinOp::Sum { x: *a, axis: None });
            self.add_dense(f, Some(sum));
        }
        Ok(())
    }

    /// `map(f, xs ; dxs)` capturing arrays, transposed as
    /// `build(shape(xs), |i| f(xs[i] ; dxs[i]))`.
    fn map_as_build(
        &mut self,
        s: &Stmt,
        m: &Map,
        cts: &[Option<Var>],
        caps: &[Var],
    ) -> Result<(), TransposeError> {
        let first = match (m.arrs.first(), m.lin_arrs.first()) {
            (Some(a), _) => Ok(*a),
            (None, Some(x)) => Err(*x),
            (None, None) => {
                return Err(TransposeError::internal(
                    "internal: map over no arrays",
                    s.src,
                ))
            }
        };
        let dims: Vec<Dim> = match first {
            Ok(Atom::Var(a)) => {
                let r = self.b.ty(a).rank().unwrap_or(0);
                (0..r).map(|k| Dim::Of(a, k)).collect()
            }
            Ok(_) => {
                return Err(TransposeError::internal(
                    "internal: map over a literal",
                    s.src,
                ))
            }
            Err(x) => self.dims_of(x)?,
        };
        let shape: Vec<Atom> = dims.iter().map(|d| self.dim_atom(d)).collect();
        let params: Vec<Var> = shape.iter().map(|_| self.b.fresh("i", Ty::I64)).collect();
        let idx: Vec<Atom> = params.iter().map(|v| Atom::Var(*v)).collect();
        let mut stmts = vec![];
        for (a, p) in m.arrs.iter().zip(&m.body.params) {
            stmts.push(Stmt {
                binds: vec![*p],
                lin_binds: vec![],
                expr: Expr::Array(ArrayOp::Index {
                    arr: *a,
                    idx: idx.clone(),
                }),
                src: None,
            });
        }
        for (x, p) in m.lin_arrs.iter().zip(&m.body.lin_params) {
            stmts.push(Stmt {
                binds: vec![],
                lin_binds: vec![*p],
                expr: Expr::Lin(LinOp::Index {
                    x: *x,
                    idx: idx.clone(),
                }),
                src: None,
            });
        }
        stmts.extend(m.body.body.stmts.iter().cloned());
        let body = Block {
            stmts,
            results: vec![],
            lin_results: m.body.body.lin_results.clone(),
        };
        let mut all_caps: Vec<Var> = caps.to_vec();
        for x in &m.lin_arrs {
            if !all_caps.contains(x) {
                all_caps.push(*x);
            }
        }
        let all_caps = self.unique_roots(all_caps);
        self.loop_nest(&shape, &params, &body, cts, &all_caps)
    }
}
