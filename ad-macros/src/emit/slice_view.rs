//! Builds that are slices: `build [n_0, ..] |i_0, ..| index x[p_0, ..]`
//! with each position `p` an invariant index or `start ± step * i_k` (each
//! build index once, in order), as the lowering makes `x.slice(s![..])`,
//! `x.slice(s![.., c])` and reversed or strided slices. Emitted as
//! ndarray's own slice of `x` (`ad_runtime::strided_view`) where the
//! result is only read ([`super::uses::Uses`]), the view has the strides
//! `f`'s slice has, so a `sum` (which adds a strided array row by row and
//! a contiguous one 8 lanes at a time), `fold` or `Zip` of it walks memory
//! as ndarray does in `f`; and no copy is made.
//!
//! ```text
//! let b = build [n, m - 1] |i, j| { let c = add 1, j; let e = index x[i, c]; yield e }
//! ==>  let b: ArrayView2<f64> = strided_view(x.view(), &[Range { start: 0, step: 1, len: n },
//!                                                       Range { start: 1, step: 1, len: m - 1 }], ..);
//! ```

use crate::text::{text, Code};
use ad_core_ir::ir::*;
use ad_core_ir::types::Ty;

/// One axis of the sliced array.
#[derive(Clone, Debug, PartialEq)]
pub enum SliceAxis {
    /// An invariant index (the axis is removed).
    At(Atom),
    /// `start + step * i_k` for build index `k`.
    Range {
        /// The first position (an invariant atom).
        start: Atom,
        /// The distance between positions (non-zero).
        step: i64,
        /// The build axis.
        axis: usize,
    },
}

/// A build that reads `arr` along `axes` (one per axis of `arr`), and the
/// linear arrays forward mode reads at the same positions (`lin`: a
/// slice's tangent).
#[derive(Clone, Debug, PartialEq)]
pub struct Slice {
    /// The sliced array (bound outside the build).
    pub arr: Var,
    /// How each of its axes is read.
    pub axes: Vec<SliceAxis>,
    /// Linear arrays read at the same positions, one per linear result.
    pub lin: Vec<Var>,
    /// `x[i, i]` (`diag()`): the leading diagonal, `axes` empty.
    pub diagonal: bool,
}

/// The slice `b` stands for, if it is one: its body only computes the
/// positions (`i_k`, `step * i_k`, `start + t`, `t + start`, `start - t`
/// with `t` one of the former, literal steps, invariant starts) and reads
/// one element of an array bound outside it at every axis (and, in
/// forward mode, the tangents of such arrays at the same positions), the
/// build indices each once and in order.
pub fn slice_of(b: &Build, vars: &VarTable) -> Option<Slice> {
    let lam = &b.body;
    let body = &lam.body;
    if !lam.lin_params.is_empty() || body.results.len() != 1 {
        return None;
    }
    let local = |v: &Var| {
        lam.params.contains(v)
            || body
                .stmts
                .iter()
                .any(|s| s.binds.contains(v) || s.lin_binds.contains(v))
    };
    // The element read, the tangents read, the position steps.
    let mut read = None;
    let mut lin = vec![];
    let mut steps = vec![];
    for s in &body.stmts {
        match &s.expr {
            Expr::Array(ArrayOp::Index {
                arr: Atom::Var(x),
                idx,
            }) if read.is_none() && s.binds.len() == 1 => read = Some((*x, idx, s.binds[0])),
            Expr::Lin(LinOp::Index { x, idx }) if s.lin_binds.len() == 1 => {
                lin.push((*x, idx, s.lin_binds[0]))
            }
            _ => steps.push(s),
        }
    }
    let (arr, idx, elem) = read?;
    if body.results[0] != Atom::Var(elem)
        || vars.ty(arr).rank() != Some(idx.len())
        || local(&arr)
        || body.lin_results != lin.iter().map(|l| l.2).collect::<Vec<_>>()
        || lin
            .iter()
            .any(|(x, i, _)| *i != idx || local(x) || vars.ty(*x).rank() != Some(idx.len()))
    {
        return None;
    }
    let lin: Vec<Var> = lin.into_iter().map(|l| l.0).collect();
    if let ([Atom::Var(a), Atom::Var(c)], [p], true) = (&idx[..], &lam.params[..], steps.is_empty())
    {
        if a == p && c == p {
            return Some(Slice {
                arr,
                axes: vec![],
                lin,
                diagonal: true,
            });
        }
    }
    // Each body variable's affine form `(start, step, axis)`: `axis` is the
    // build index it moves with.
    let mut forms: Vec<(Var, (Atom, i64, usize))> = lam
        .params
        .iter()
        .enumerate()
        .map(|(k, p)| (*p, (Atom::I64(0), 1, k)))
        .collect();
    let form_of = |forms: &[(Var, (Atom, i64, usize))], a: &Atom| -> Option<(Atom, i64, usize)> {
        let v = a.var()?;
        forms.iter().find(|(w, _)| *w == v).map(|(_, f)| *f)
    };
    let invariant =
        |a: &Atom| a.var().is_none_or(|v| !local(&v)) && matches!(a, Atom::I64(_) | Atom::Var(_));
    for s in &steps {
        let [y] = s.binds[..] else { return None };
        if !s.lin_binds.is_empty() || vars.ty(y) != &Ty::I64 {
            return None;
        }
        let Expr::Prim(p, args) = &s.expr else {
            return None;
        };
        let form = match (p, &args[..]) {
            (Prim::Mul, [a, Atom::I64(c)]) | (Prim::Mul, [Atom::I64(c), a]) if *c != 0 => {
                let (start, step, k) = form_of(&forms, a)?;
                (start == Atom::I64(0)).then_some(())?;
                (Atom::I64(0), step.checked_mul(*c)?, k)
            }
            (Prim::Add, [o, t]) | (Prim::Add, [t, o]) if invariant(o) => {
                let (start, step, k) = form_of(&forms, t)?;
                (start == Atom::I64(0)).then_some(())?;
                (*o, step, k)
            }
            (Prim::Sub, [o, t]) if invariant(o) => {
                let (start, step, k) = form_of(&forms, t)?;
                (start == Atom::I64(0)).then_some(())?;
                (*o, step.checked_neg()?, k)
            }
            _ => return None,
        };
        forms.push((y, form));
    }
    // Every step feeds the index (nothing else computed), each build index
    // used once, in order.
    let mut axes = vec![];
    let mut next = 0;
    for a in idx {
        if let Some((start, step, k)) = form_of(&forms, a) {
            if k != next {
                return None;
            }
            next += 1;
            axes.push(SliceAxis::Range {
                start,
                step,
                axis: k,
            });
        } else if invariant(a) {
            axes.push(SliceAxis::At(*a));
        } else {
            return None;
        }
    }
    let mut used: Vec<Var> = idx.iter().filter_map(Atom::var).collect();
    for s in &steps {
        ad_core_ir::visit::for_each_operand(&s.expr, &mut |a| used.extend(a.var()), &mut |_| {});
    }
    if next != lam.params.len() || !steps.iter().all(|s| used.contains(&s.binds[0])) {
        return None;
    }
    Some(Slice {
        arr,
        axes,
        lin,
        diagonal: false,
    })
}

impl super::func::Emitter<'_> {
    /// The slice `b` (bound by `s`) as ndarray's view of the sliced array,
    /// when it is a slice ([`slice_of`]) whose result is only read
    /// ([`super::uses::Uses::borrows_operand`]: the sliced array lives
    /// until the view's last use); `None` otherwise (a copy is built).
    pub fn slice_view(&mut self, b: &Build, s: &Stmt) -> Option<super::func::Out> {
        let [y] = s.binds[..] else { return None };
        if !self.uses.borrows_operand(y) {
            return None;
        }
        let sl = slice_of(b, &self.f.vars)?;
        let rt = super::types::rt();
        let x = self.name(sl.arr);
        let parts: Vec<Code> = sl
            .axes
            .iter()
            .map(|a| match a {
                SliceAxis::At(i) => {
                    let i = self.scalar(i);
                    text!(#rt::StridedAxis::At(#i))
                }
                SliceAxis::Range { start, step, axis } => {
                    let (start, len) = (self.scalar(start), self.scalar(&b.shape[*axis]));
                    text!(#rt::StridedAxis::Range { start: #start, step: #step, len: #len })
                }
            })
            .collect();
        let what = format!(
            "a slice in `{}`",
            self.f.name.split("__").next().unwrap_or(&self.f.name)
        );
        let view_of = |a: &proc_macro2::Ident| {
            if sl.diagonal {
                let n = self.scalar(&b.shape[0]);
                text!(#rt::diagonal_view(#a.view(), #n, #what))
            } else {
                text!(#rt::strided_view(#a.view(), &[#(#parts),*], #what))
            }
        };
        let view = view_of(&x);
        if sl.lin.is_empty() {
            return Some(super::func::Out::one(view, super::types::Repr::View));
        }
        // forward mode: the tangents' slices as copies (their order of
        // addition is no one's bits)
        let mut exprs = vec![view];
        let mut reprs = vec![super::types::Repr::View];
        for dx in &sl.lin {
            let dx = self.name(*dx);
            let v = view_of(&dx);
            exprs.push(text!(#v.to_owned()));
            reprs.push(super::types::Repr::Owned);
        }
        Some(super::func::Out {
            expr: text!((#(#exprs),*)),
            reprs,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ad_core_ir::parse::parse_program;

    /// The builds of `src`'s function `f`, in order, with its body.
    fn builds(src: &str) -> (Func, Vec<Build>) {
        let p = parse_program(src).unwrap();
        let f = p.funcs[0].clone();
        let bs = f
            .body
            .stmts
            .iter()
            .filter_map(|s| match &s.expr {
                Expr::Build(b) => Some(b.clone()),
                _ => None,
            })
            .collect();
        (f, bs)
    }

    #[test]
    fn slices_are_recognised_with_their_starts_and_steps() {
        let (f, bs) = builds(
            "
def f(x_0: [[f64]], n_1: i64, m_2: i64, s_3: i64 ; dx_4: [[f64]]) -> (f64 ; f64) {
  let a_5: [[f64]] = build [n_1, m_2] |i_6: i64, j_7: i64| {
    let t_8: i64 = mul i_6, 2
    let u_9: i64 = add s_3, t_8
    let v_10: i64 = sub 9, j_7
    let e_11: f64 = index x_0[u_9, v_10]
    yield e_11
  }
  let b_12: [f64] ; db_13: [f64] = build [n_1] |i_14: i64| {
    let e_15: f64 = index x_0[i_14, 3]
    let ; d_16: f64 = lindex dx_4[i_14, 3]
    yield e_15 ; d_16
  }
  let c_17: [[f64]] = build [n_1, m_2] |i_18: i64, j_19: i64| {
    let e_20: f64 = index x_0[j_19, i_18]
    yield e_20
  }
  let d_21: [f64] = build [n_1] |i_22: i64| {
    let e_23: f64 = index x_0[i_22, i_22]
    yield e_23
  }
  let e_24: [f64] = build [n_1] |i_25: i64| {
    let w_26: i64 = mul i_25, i_25
    let e_27: f64 = index x_0[0, w_26]
    yield e_27
  }
  let g_28: [f64] = build [n_1] |i_29: i64| {
    let e_30: f64 = index x_0[0, i_29]
    let h_31: f64 = exp e_30
    yield h_31
  }
  let r_32: f64 = reduce_sum a_5
  let ; dr_33: f64 = lsum db_13
  return r_32 ; dr_33
}",
        );
        let s = |k: usize| slice_of(&bs[k], &f.vars);
        assert_eq!(
            s(0),
            Some(Slice {
                arr: Var(0),
                axes: vec![
                    SliceAxis::Range {
                        start: Atom::Var(Var(3)),
                        step: 2,
                        axis: 0
                    },
                    SliceAxis::Range {
                        start: Atom::I64(9),
                        step: -1,
                        axis: 1
                    },
                ],
                lin: vec![],
                diagonal: false,
            })
        );
        assert_eq!(
            s(1),
            Some(Slice {
                arr: Var(0),
                axes: vec![
                    SliceAxis::Range {
                        start: Atom::I64(0),
                        step: 1,
                        axis: 0
                    },
                    SliceAxis::At(Atom::I64(3))
                ],
                lin: vec![Var(4)],
                diagonal: false,
            })
        );
        assert!(s(3).is_some_and(|d| d.diagonal && d.axes.is_empty()));
        // a transpose, a non-affine position, a computed element
        for k in [2, 4, 5] {
            assert_eq!(s(k), None, "build {k}");
        }
    }

    #[test]
    fn a_slice_only_read_is_a_view_that_keeps_its_array() {
        let p = parse_program(
            "
def f(n_0: i64, m_1: i64) -> (f64, [f64]) {
  let x_2: [[f64]] = build [n_0, m_1] |i_3: i64, j_4: i64| {
    let e_5: f64 = to_f64 i_3
    yield e_5
  }
  let a_6: [f64] = build [m_1] |i_7: i64| {
    let e_8: f64 = index x_2[1, i_7]
    yield e_8
  }
  let b_9: [f64] = build [m_1] |i_10: i64| {
    let e_11: f64 = index x_2[0, i_10]
    yield e_11
  }
  let s_12: f64 = reduce_sum a_6
  return s_12, b_9
}",
        )
        .unwrap();
        let u = super::super::uses::Uses::of(&p.funcs[0]);
        // `a` is only summed: a view of `x`; `b` is returned: a copy
        assert_eq!(u.lenders(Var(6)), vec![Var(2)]);
        assert!(u.borrows_operand(Var(6)) && !u.borrows_operand(Var(9)));
    }
}
