//! Structured control with lambdas: `Loop`, `Build`, `Map`, `Fold`, `While`. Bodies run
//! in the caller's environment with their parameters rebound per iteration;
//! per-iteration outputs are stacked (see [`crate::ir`], *Stacking*).

use super::array::{self, Stacker};
use super::value::{describe, ArrayValue, Value};
use super::{EvalError, Frame, Interp};
use crate::ir::{Build, Fold, Lambda, Loop, Map, Stmt, While};
use crate::types::Ty;

/// Checks a lambda's parameter counts.
fn want_params(lam: &Lambda, nl: usize, lin: usize, what: &str) -> Result<(), String> {
    if lam.params.len() == nl && lam.lin_params.len() == lin {
        Ok(())
    } else {
        Err(format!(
            "{what} body takes {} ; {} parameters, expected {nl} ; {lin}",
            lam.params.len(),
            lam.lin_params.len()
        ))
    }
}

/// Static types of a lambda's non-linear results from `from` on and of its
/// linear results from `lin_from` on (the stacked outputs).
fn result_tys(
    fr: &Frame<'_>,
    lam: &Lambda,
    from: usize,
    lin_from: usize,
) -> Result<(Vec<Ty>, Vec<Ty>), String> {
    let r = lam.body.results[from..]
        .iter()
        .map(|a| fr.ty(a))
        .collect::<Result<_, _>>()?;
    let lr = lam.body.lin_results[lin_from..]
        .iter()
        .map(|v| fr.var_ty(*v))
        .collect::<Result<_, _>>()?;
    Ok((r, lr))
}

/// One stacker per result.
fn stackers(n: usize) -> Vec<Stacker> {
    (0..n).map(|_| Stacker::new()).collect()
}

/// Pushes per-iteration values onto their stacks.
fn push_all(stacks: &mut [Stacker], vals: Vec<Value>) -> Result<(), String> {
    for (st, v) in stacks.iter_mut().zip(vals) {
        st.push(v)?;
    }
    Ok(())
}

/// Finishes stacks with the leading shape `lead`.
fn finish_all(stacks: Vec<Stacker>, lead: &[usize], tys: &[Ty]) -> Result<Vec<Value>, String> {
    stacks
        .into_iter()
        .zip(tys)
        .map(|(st, ty)| st.finish(lead, ty))
        .collect()
}

/// Row-major successor of the multi-index `idx` in `shape` (wraps to zeros).
fn next_index(idx: &mut [usize], shape: &[usize]) {
    for a in (0..shape.len()).rev() {
        idx[a] += 1;
        if idx[a] < shape[a] {
            return;
        }
        idx[a] = 0;
    }
}

impl<'p> Interp<'p> {
    /// `Loop`: `i` over `0..n` (or `n-1..=0` when `rev`), non-linear and
    /// linear state threaded, non-linear and linear per-iteration outputs
    /// stacked by the value of `i`.
    pub(super) fn loop_(
        &mut self,
        fr: &mut Frame<'p>,
        lp: &'p Loop,
        s: &Stmt,
    ) -> Result<u64, EvalError> {
        let n = usize::try_from(fr.i64(&lp.n, "a trip count")?).unwrap_or(0);
        let lam = &lp.body;
        let (k, m) = (lp.init.len(), lp.lin_init.len());
        want_params(lam, 1 + k, m, "loop")?;
        if lam.body.results.len() < k || lam.body.lin_results.len() < m {
            return Err(EvalError::new(
                "a loop body's results do not match its state",
            ));
        }
        let mut state: Vec<Value> = lp
            .init
            .iter()
            .map(|a| fr.owned(a))
            .collect::<Result<_, _>>()?;
        let mut lstate: Vec<Value> = lp
            .lin_init
            .iter()
            .map(|v| fr.get(*v).cloned())
            .collect::<Result<_, _>>()?;
        let (tys, ltys) = result_tys(fr, lam, k, m)?;
        let (mut stacks, mut lstacks) = (stackers(tys.len()), stackers(ltys.len()));
        let mut stored = 0;
        for step in 0..n {
            let i = if lp.rev { n - 1 - step } else { step };
            fr.set(lam.params[0], Value::I64(i as i64))?;
            fr.bind(&lam.params[1..], state)?;
            fr.bind(&lam.lin_params, lstate)?;
            let (mut r, mut lr) = self.block(fr, &lam.body)?;
            let (ys, lys) = (r.split_off(k), lr.split_off(m));
            (state, lstate) = (r, lr);
            stored += stored_size(&ys) + stored_size(&lys);
            push_all(&mut stacks, ys)?;
            push_all(&mut lstacks, lys)?;
        }
        if lp.rev {
            stacks.iter_mut().for_each(Stacker::reverse);
            lstacks.iter_mut().for_each(Stacker::reverse);
        }
        state.extend(finish_all(stacks, &[n], &tys)?);
        lstate.extend(finish_all(lstacks, &[n], &ltys)?);
        fr.bind(&s.binds, state)?;
        fr.bind(&s.lin_binds, lstate)?;
        Ok(1 + stored)
    }

    /// `Build`: the body at every multi-index of the shape (row-major), its
    /// results stacked to `shape ++ element shape`.
    pub(super) fn build(
        &mut self,
        fr: &mut Frame<'p>,
        b: &'p Build,
        s: &Stmt,
    ) -> Result<u64, EvalError> {
        let shape = fr.sizes(&b.shape, "a build size")?;
        let lam = &b.body;
        want_params(lam, shape.len(), 0, "build")?;
        if shape.is_empty() {
            return Err(EvalError::new("a build over an empty shape"));
        }
        let total = super::value::checked_size(&shape)?;
        let (tys, ltys) = result_tys(fr, lam, 0, 0)?;
        let (mut stacks, mut lstacks) = (stackers(tys.len()), stackers(ltys.len()));
        let mut idx = vec![0usize; shape.len()];
        let mut stored = 0;
        for _ in 0..total {
            for (p, i) in lam.params.iter().zip(&idx) {
                fr.set(*p, Value::I64(*i as i64))?;
            }
            let (r, lr) = self.block(fr, &lam.body)?;
            stored += stored_size(&r) + stored_size(&lr);
            push_all(&mut stacks, r)?;
            push_all(&mut lstacks, lr)?;
            next_index(&mut idx, &shape);
        }
        fr.bind(&s.binds, finish_all(stacks, &shape, &tys)?)?;
        fr.bind(&s.lin_binds, finish_all(lstacks, &shape, &ltys)?)?;
        Ok(1 + stored)
    }

    /// `Map`: the body on corresponding elements of arrays of one shape, its
    /// results stacked to that shape.
    pub(super) fn map(
        &mut self,
        fr: &mut Frame<'p>,
        m: &'p Map,
        s: &Stmt,
    ) -> Result<u64, EvalError> {
        let lam = &m.body;
        want_params(lam, m.arrs.len(), m.lin_arrs.len(), "map")?;
        let mut arrs: Vec<ArrayValue> = vec![];
        for a in &m.arrs {
            arrs.push(map_operand(&*fr.atom(a)?)?);
        }
        for v in &m.lin_arrs {
            arrs.push(map_operand(fr.get(*v)?)?);
        }
        let Some(shape) = arrs.first().map(|a| a.shape.clone()) else {
            return Err(EvalError::new("a map over no arrays"));
        };
        if let Some(a) = arrs.iter().find(|a| a.shape != shape) {
            return Err(format!("map over arrays of shapes {shape:?} and {:?}", a.shape).into());
        }
        let (tys, ltys) = result_tys(fr, lam, 0, 0)?;
        let (mut stacks, mut lstacks) = (stackers(tys.len()), stackers(ltys.len()));
        let params: Vec<_> = lam.params.iter().chain(&lam.lin_params).copied().collect();
        let total = arrs[0].size();
        let mut stored = 0;
        for k in 0..total {
            for (p, a) in params.iter().zip(&arrs) {
                let x = a.data.get(k).expect("arrays of one shape");
                fr.set(*p, x)?;
            }
            let (r, lr) = self.block(fr, &lam.body)?;
            stored += stored_size(&r) + stored_size(&lr);
            push_all(&mut stacks, r)?;
            push_all(&mut lstacks, lr)?;
        }
        fr.bind(&s.binds, finish_all(stacks, &shape, &tys)?)?;
        fr.bind(&s.lin_binds, finish_all(lstacks, &shape, &ltys)?)?;
        Ok(1 + stored)
    }

    /// `Fold`: `acc = body(acc, arr[k])` for `k` in `0..len(arr)`.
    pub(super) fn fold(
        &mut self,
        fr: &mut Frame<'p>,
        fd: &'p Fold,
        s: &Stmt,
    ) -> Result<u64, EvalError> {
        let lam = &fd.body;
        let k = fd.init.len();
        want_params(lam, k + 1, 0, "fold")?;
        let a = array::want_array(&*fr.atom(&fd.arr)?, "a fold's operand")?.clone();
        let mut accs: Vec<Value> = fd
            .init
            .iter()
            .map(|x| fr.owned(x))
            .collect::<Result<_, _>>()?;
        for row in 0..a.shape[0] {
            let x = array::index(&a, &[row as i64])?;
            fr.bind(&lam.params[..k], accs)?;
            fr.set(lam.params[k], x)?;
            let (r, _) = self.block(fr, &lam.body)?;
            accs = r;
        }
        fr.bind(&s.binds, accs)?;
        Ok(1)
    }

    /// `While`: `s = body(s)` while `cond(s)`, from `s = init`; binds the
    /// number of iterations. Past [`MAX_WHILE_TRIPS`] iterations it is an
    /// error (the interpreter serves tests: a loop that does not end is a
    /// bug there, not a program to wait for).
    pub(super) fn while_(
        &mut self,
        fr: &mut Frame<'p>,
        w: &'p While,
        s: &Stmt,
    ) -> Result<u64, EvalError> {
        let k = w.init.len();
        want_params(&w.cond, k, 0, "while condition")?;
        want_params(&w.body, k, 0, "while body")?;
        let mut state: Vec<Value> = w
            .init
            .iter()
            .map(|a| fr.owned(a))
            .collect::<Result<_, _>>()?;
        let mut trips: i64 = 0;
        loop {
            fr.bind(&w.cond.params, state.clone())?;
            let (c, _) = self.block(fr, &w.cond.body)?;
            match c.as_slice() {
                [Value::Bool(true)] => {}
                [Value::Bool(false)] => break,
                _ => return Err(EvalError::new("a while condition must return one bool")),
            }
            if trips >= MAX_WHILE_TRIPS {
                return Err(EvalError::new(
                    "a while loop ran more than MAX_WHILE_TRIPS iterations",
                ));
            }
            fr.bind(&w.body.params, state)?;
            let (r, _) = self.block(fr, &w.body.body)?;
            if r.len() != k {
                return Err(EvalError::new(
                    "a while body's results do not match its state",
                ));
            }
            state = r;
            trips += 1;
        }
        fr.bind(&s.binds, vec![Value::I64(trips)])?;
        Ok(1)
    }
}

/// The most iterations the interpreter runs a `While` for.
pub const MAX_WHILE_TRIPS: i64 = 10_000_000;

/// The work of storing per-iteration (per-element) outputs: one per scalar
/// written (a store in compiled code), summed over the values.
fn stored_size(xs: &[Value]) -> u64 {
    fn one(x: &Value) -> u64 {
        match x {
            Value::F64(_) | Value::I64(_) | Value::Bool(_) => 1,
            Value::Array(a) => a.size() as u64,
            Value::Tuple(parts) => parts.iter().map(one).sum(),
        }
    }
    xs.iter().map(one).sum()
}

/// An operand of a map: an array, cloned out of the environment.
fn map_operand(x: &Value) -> Result<ArrayValue, String> {
    x.as_array()
        .cloned()
        .ok_or_else(|| format!("a map operand must be an array, found {}", describe(x)))
}
