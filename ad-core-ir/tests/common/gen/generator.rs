//! The generator's state ([`Gen`]: the choice source, the function builder,
//! the pool of variables in scope) and how it finds or makes operands of a
//! given kind (`f64` with bounds, integers, sizes, indices, arrays of given
//! shapes, booleans), squashing large values with `tanh`.

use super::bounds::{Iv, K, LIMIT, UNIT};
use super::choices::Src;
use super::config::GenConfig;
use ad_core_ir::build::FuncBuilder;
use ad_core_ir::ir::*;
use std::collections::HashSet;

/// A variable of the pool.
#[derive(Clone, Debug)]
pub(super) struct E {
    pub(super) v: Var,
    pub(super) k: K,
}

/// The variables in scope.
#[derive(Clone, Debug, Default)]
pub(super) struct Env {
    pub(super) es: Vec<E>,
}

impl Env {
    pub(super) fn push(&mut self, v: Var, k: K) {
        self.es.push(E { v, k });
    }
}

/// Signature of a generated helper function.
#[derive(Clone, Debug)]
pub(super) struct HelperSig {
    pub(super) name: String,
    pub(super) params: Vec<K>,
    pub(super) results: Vec<K>,
}

pub(super) struct Gen<'s, 'd, 'p> {
    pub(super) src: &'s mut Src<'d>,
    pub(super) cfg: &'s GenConfig,
    pub(super) b: FuncBuilder<'p>,
    pub(super) helpers: &'s [HelperSig],
    pub(super) budget: usize,
    pub(super) depth: usize,
    pub(super) used: HashSet<Var>,
    /// Inside a loop or fold body whose state includes arrays: bias towards updates.
    pub(super) loop_arrays: Vec<Var>,
}

pub(super) const F_LITS: [f64; 8] = [1.0, 0.5, -0.75, 2.0, 0.3, -1.25, 1.5, -0.2];

impl<'s, 'd, 'p> Gen<'s, 'd, 'p> {
    // ----- basics -----

    pub(super) fn mark(&mut self, a: &Atom) {
        if let Atom::Var(v) = a {
            self.used.insert(*v);
        }
    }

    pub(super) fn prim(&mut self, p: Prim, args: &[Atom]) -> Var {
        for a in args {
            self.mark(a);
        }
        self.b.prim(p, args)
    }

    pub(super) fn array(&mut self, op: ArrayOp) -> Var {
        ad_core_ir::visit::for_each_operand(
            &Expr::Array(op.clone()),
            &mut |a| {
                if let Atom::Var(v) = a {
                    self.used.insert(*v);
                }
            },
            &mut |_| {},
        );
        self.b.array(op)
    }

    /// Picks the position of an entry satisfying `pred`, biased to recent ones.
    pub(super) fn pick(&mut self, env: &Env, pred: impl Fn(&K) -> bool) -> Option<usize> {
        let cands: Vec<usize> = (0..env.es.len()).filter(|&i| pred(&env.es[i].k)).collect();
        if cands.is_empty() {
            return None;
        }
        match self.src.weighted(&[4, 4, 3]) {
            0 => Some(cands[self.src.below(cands.len())]),
            1 => {
                let r = self.src.below(cands.len().min(3));
                Some(cands[cands.len() - 1 - r])
            }
            _ => {
                let unused: Vec<usize> = cands
                    .iter()
                    .copied()
                    .filter(|&i| !self.used.contains(&env.es[i].v))
                    .collect();
                let from = if unused.is_empty() { &cands } else { &unused };
                let r = self.src.below(from.len().min(4));
                Some(from[from.len() - 1 - r])
            }
        }
    }

    /// Picks a block result satisfying `pred`, preferring the unused values
    /// computed in the block (positions `start..`), then any computed in it.
    pub(super) fn pick_result(
        &mut self,
        env: &Env,
        start: usize,
        pred: impl Fn(&K) -> bool,
    ) -> Option<E> {
        let local: Vec<usize> = (start..env.es.len())
            .filter(|&i| pred(&env.es[i].k))
            .collect();
        let unused: Vec<usize> = local
            .iter()
            .copied()
            .filter(|&i| !self.used.contains(&env.es[i].v))
            .collect();
        let from = match self.src.weighted(&[6, 3, 1]) {
            0 if !unused.is_empty() => unused,
            0 | 1 if !local.is_empty() => local,
            _ => return self.pick_e(env, pred),
        };
        let r = self.src.below(from.len().min(4));
        Some(env.es[from[from.len() - 1 - r]].clone())
    }

    pub(super) fn pick_e(&mut self, env: &Env, pred: impl Fn(&K) -> bool) -> Option<E> {
        self.pick(env, pred).map(|i| env.es[i].clone())
    }

    /// Finishes an `f64` result: pushes it (squashed with tanh when large).
    pub(super) fn fin_f(&mut self, env: &mut Env, v: Var, iv: Iv) -> (Atom, Iv) {
        if iv.m() > LIMIT || !iv.lo.is_finite() || !iv.hi.is_finite() {
            let t = self.prim(Prim::Tanh, &[v.into()]);
            let tiv = Iv::new(-1.0, 1.0);
            env.push(t, K::F(tiv));
            (t.into(), tiv)
        } else {
            env.push(v, K::F(iv));
            (v.into(), iv)
        }
    }

    /// `map tanh` over an array.
    pub(super) fn squash_arr(&mut self, env: &mut Env, v: Var, k: &K) -> (Var, K) {
        self.used.insert(v);
        let t = self.b.map(&[v.into()], |b, e| {
            vec![b.prim(Prim::Tanh, &[e[0].into()]).into()]
        })[0];
        let k2 = k.with_iv(UNIT);
        env.push(t, k2.clone());
        (t, k2)
    }

    /// Finishes an array result: pushes it (squashed when large).
    pub(super) fn fin_a(&mut self, env: &mut Env, v: Var, k: K) -> (Var, K) {
        let iv = k.iv();
        if iv.m() > LIMIT || !iv.lo.is_finite() || !iv.hi.is_finite() {
            self.squash_arr(env, v, &k)
        } else {
            env.push(v, k.clone());
            (v, k)
        }
    }

    pub(super) fn fin(&mut self, env: &mut Env, v: Var, k: K) {
        match k {
            K::F(iv) => {
                self.fin_f(env, v, iv);
            }
            K::A1(..) | K::A2(..) => {
                self.fin_a(env, v, k);
            }
            k => env.push(v, k),
        }
    }

    // ----- f64 operands -----

    pub(super) fn lit(&mut self) -> (Atom, Iv) {
        let x = F_LITS[self.src.below(F_LITS.len())];
        (Atom::F64(x), Iv::pt(x))
    }

    /// An `f64` variable (made from an array or an integer if there is none).
    pub(super) fn get_fv(&mut self, env: &mut Env) -> (Var, Iv) {
        let from_int = self.src.chance(0.05);
        if from_int {
            if let Some(e) = self.pick_e(env, |k| matches!(k, K::I(..))) {
                let K::I(lo, hi) = e.k else { unreachable!() };
                let v = self.prim(Prim::ToF64, &[e.v.into()]);
                let iv = Iv::new(lo as f64, hi as f64);
                env.push(v, K::F(iv));
                return (v, iv);
            }
        }
        if let Some(e) = self.pick_e(env, |k| matches!(k, K::F(_))) {
            self.used.insert(e.v);
            return (e.v, e.k.iv());
        }
        if let Some(e) = self.pick_e(env, |k| matches!(k, K::A1(..) | K::A2(..))) {
            let idx: Vec<Atom> = match e.k {
                K::A1(n, _) => vec![self.get_idx(env, n)],
                K::A2(r, c, _) => vec![self.get_idx(env, r), self.get_idx(env, c)],
                _ => unreachable!(),
            };
            let v = self.array(ArrayOp::Index {
                arr: e.v.into(),
                idx,
            });
            let iv = e.k.iv();
            env.push(v, K::F(iv));
            return (v, iv);
        }
        // Nothing to compute from: a constant.
        let (a, iv) = self.lit();
        let v = self.b.emit1(Expr::Atom(a));
        env.push(v, K::F(iv));
        (v, iv)
    }

    /// An `f64` operand: a variable or (sometimes) a literal.
    pub(super) fn get_f(&mut self, env: &mut Env) -> (Atom, Iv) {
        if self.src.chance(0.12) {
            return self.lit();
        }
        let (v, iv) = self.get_fv(env);
        (v.into(), iv)
    }

    /// A variable distinct from `other`.
    pub(super) fn get_fv_other(&mut self, env: &mut Env, other: Var) -> (Atom, Iv) {
        if let Some(e) = self.pick_e(env, |k| matches!(k, K::F(_))) {
            if e.v != other {
                self.used.insert(e.v);
                return (e.v.into(), e.k.iv());
            }
        }
        self.lit()
    }

    /// An operand with `|x| <= m` (squashed with tanh or sin if needed).
    pub(super) fn bounded(&mut self, env: &mut Env, m: f64) -> (Atom, Iv) {
        let (a, iv) = self.get_f(env);
        if iv.m() <= m {
            return (a, iv);
        }
        let p = if self.src.chance(0.3) && iv.m() < 4.0 {
            Prim::Sin
        } else {
            Prim::Tanh
        };
        let v = self.prim(p, &[a]);
        let iv = if p == Prim::Tanh {
            iv.mono(f64::tanh)
        } else {
            UNIT
        };
        env.push(v, K::F(iv));
        (v.into(), iv)
    }

    /// An operand bounded below by about 0.1 and above by [`LIMIT`].
    pub(super) fn positive(&mut self, env: &mut Env) -> (Atom, Iv) {
        if self.src.chance(0.3) {
            if let Some(e) = self.pick_e(env, |k| matches!(k, K::F(iv) if iv.lo >= 0.1)) {
                self.used.insert(e.v);
                return (e.v.into(), e.k.iv());
            }
        }
        match self.src.below(4) {
            0 => {
                let (x, iv) = self.bounded(env, 5.0);
                let sq = self.prim(Prim::Mul, &[x, x]);
                let c = [1.0, 0.5, 2.0][self.src.below(3)];
                let v = self.prim(Prim::Add, &[sq.into(), Atom::F64(c)]);
                let m = iv.m();
                let iv = Iv::new(c, m * m + c);
                env.push(v, K::F(iv));
                (v.into(), iv)
            }
            1 => {
                let (x, iv) = self.bounded(env, 2.0);
                let v = self.prim(Prim::Exp, &[x]);
                let iv = iv.mono(f64::exp);
                env.push(v, K::F(iv));
                (v.into(), iv)
            }
            2 => {
                let (x, iv) = self.bounded(env, 3.0);
                let v = self.prim(Prim::Cosh, &[x]);
                let lo = if iv.lo > 0.0 || iv.hi < 0.0 {
                    iv.lo.abs().min(iv.hi.abs()).cosh()
                } else {
                    1.0
                };
                let iv = Iv::new(lo, iv.m().cosh());
                env.push(v, K::F(iv));
                (v.into(), iv)
            }
            _ => {
                let (x, iv) = self.bounded(env, LIMIT);
                let c = [1.0, 0.5, 2.0][self.src.below(3)];
                let v = self.prim(Prim::Hypot, &[x, Atom::F64(c)]);
                let iv = Iv::new(c, (iv.m() * iv.m() + c * c).sqrt());
                env.push(v, K::F(iv));
                (v.into(), iv)
            }
        }
    }

    // ----- integers -----

    /// An index atom in `0..len`.
    pub(super) fn get_idx(&mut self, env: &mut Env, len: usize) -> Atom {
        let len_i = len as i64;
        match self.src.weighted(&[3, 4, 3, 1]) {
            0 => Atom::I64(self.src.below(len) as i64),
            1 => {
                if let Some(e) = self.pick_e(
                    env,
                    |k| matches!(k, K::I(lo, hi) if *lo >= 0 && *hi < len_i),
                ) {
                    self.used.insert(e.v);
                    e.v.into()
                } else {
                    Atom::I64(self.src.below(len) as i64)
                }
            }
            3 => {
                // An index in an order a stride decides, as `fold` of a
                // reversed vector visits it (`n - 1 - j` when the stride is
                // -1): the interpreter's arrays are row-major, so `j` itself.
                let Some(e) = self.pick_e(env, |k| matches!(k, K::A1(m, _) if *m == len)) else {
                    return Atom::I64(self.src.below(len) as i64);
                };
                self.used.insert(e.v);
                let st = self.array(ArrayOp::Stride {
                    arr: e.v.into(),
                    axis: 0,
                });
                let rev = self.prim(Prim::Eq, &[st.into(), Atom::I64(-1)]);
                let j = Atom::I64(self.src.below(len) as i64);
                let flipped = self.prim(Prim::Sub, &[Atom::I64(len_i - 1), j]);
                let i = self.prim(Prim::Select, &[rev.into(), flipped.into(), j]);
                env.push(i, K::I(0, len_i - 1));
                i.into()
            }
            _ => {
                if let Some(e) = self.pick_e(env, |k| matches!(k, K::I(lo, _) if *lo >= 0)) {
                    let K::I(_, hi) = e.k else { unreachable!() };
                    let base = if self.src.chance(0.4) {
                        let c = self.src.range(1, 3) as i64;
                        let s = self.prim(Prim::Add, &[e.v.into(), Atom::I64(c)]);
                        env.push(s, K::I(c, hi + c));
                        s
                    } else {
                        e.v
                    };
                    let r = self.prim(Prim::Rem, &[base.into(), Atom::I64(len_i)]);
                    env.push(r, K::I(0, len_i - 1));
                    r.into()
                } else {
                    Atom::I64(self.src.below(len) as i64)
                }
            }
        }
    }

    /// An atom whose value is exactly `n`.
    pub(super) fn get_size(&mut self, env: &mut Env, n: usize) -> Atom {
        let n_i = n as i64;
        match self.src.below(3) {
            0 => Atom::I64(n_i),
            1 => match self.pick_e(
                env,
                |k| matches!(k, K::I(lo, hi) if *lo == n_i && *hi == n_i),
            ) {
                Some(e) => {
                    self.used.insert(e.v);
                    e.v.into()
                }
                None => Atom::I64(n_i),
            },
            _ => {
                let found = self.pick_e(env, |k| match k {
                    K::A1(m, _) => *m == n,
                    K::A2(r, c, _) => *r == n || *c == n,
                    _ => false,
                });
                match found {
                    Some(e) => {
                        let axis = match e.k {
                            K::A2(r, _, _) if r != n => 1,
                            _ => 0,
                        };
                        let v = self.array(ArrayOp::Shape {
                            arr: e.v.into(),
                            axis,
                        });
                        env.push(v, K::I(n_i, n_i));
                        v.into()
                    }
                    None => Atom::I64(n_i),
                }
            }
        }
    }

    /// A length for a new array: one already around or a fresh small one.
    pub(super) fn some_len(&mut self, env: &Env) -> usize {
        if self.src.chance(0.5) {
            let lens: Vec<usize> = env
                .es
                .iter()
                .flat_map(|e| match e.k {
                    K::A1(n, _) => vec![n],
                    K::A2(r, c, _) => vec![r, c],
                    K::I(lo, hi) if lo == hi && (1..=6).contains(&lo) => vec![lo as usize],
                    _ => vec![],
                })
                .collect();
            if !lens.is_empty() {
                return lens[self.src.below(lens.len())];
            }
        }
        self.src.range(1, 5)
    }

    /// An `[i64]` of length `k` with values below `bound`: an existing one or a
    /// constant (with duplicates, by chance).
    pub(super) fn get_idx_arr(
        &mut self,
        env: &mut Env,
        k: Option<usize>,
        bound: usize,
    ) -> (Var, usize) {
        let b_i = bound as i64;
        if self.src.chance(0.4) {
            if let Some(e) = self.pick_e(env, |kk| match kk {
                K::IA(n, mx) => *mx < b_i && k.is_none_or(|k| k == *n),
                _ => false,
            }) {
                let K::IA(n, _) = e.k else { unreachable!() };
                self.used.insert(e.v);
                return (e.v, n);
            }
        }
        let k = k.unwrap_or_else(|| self.src.range(1, 6));
        let vals: Vec<i64> = (0..k).map(|_| self.src.below(bound) as i64).collect();
        let mx = *vals.iter().max().expect("k >= 1");
        let v = if self.src.chance(0.5) {
            // broadcast + updates
            let mut cur = self.b.array(ArrayOp::Broadcast {
                arr: Atom::I64(vals[0]),
                shape: vec![Atom::I64(k as i64)],
                axes: vec![],
            });
            for (j, &x) in vals.iter().enumerate().skip(1) {
                if x != vals[0] {
                    cur = self.b.array(ArrayOp::Update {
                        arr: cur.into(),
                        idx: vec![Atom::I64(j as i64)],
                        val: Atom::I64(x),
                        add: false,
                    });
                }
            }
            cur
        } else {
            // build with a chain of selects on the index
            let vals2 = vals.clone();
            self.b.build(&[Atom::I64(k as i64)], move |b, i| {
                let mut acc: Atom = Atom::I64(vals2[k - 1]);
                for j in (0..k - 1).rev() {
                    let c = b.prim(Prim::Eq, &[i[0].into(), Atom::I64(j as i64)]);
                    acc = b
                        .prim(Prim::Select, &[c.into(), Atom::I64(vals2[j]), acc])
                        .into();
                }
                vec![acc]
            })[0]
        };
        env.push(v, K::IA(k, mx));
        (v, k)
    }

    // ----- arrays of given shapes -----

    pub(super) fn get_a1(&mut self, env: &mut Env, n: usize) -> (Var, Iv) {
        if self.src.chance(0.75) {
            if let Some(e) = self.pick_e(env, |k| matches!(k, K::A1(m, _) if *m == n)) {
                self.used.insert(e.v);
                return (e.v, e.k.iv());
            }
        }
        let row = if self.src.chance(0.3) {
            self.pick_e(env, |k| matches!(k, K::A2(_, c, _) if *c == n))
        } else {
            None
        };
        if let Some(e) = row {
            let K::A2(r, _, iv) = e.k else { unreachable!() };
            let i = self.get_idx(env, r);
            let v = self.array(ArrayOp::Index {
                arr: e.v.into(),
                idx: vec![i],
            });
            env.push(v, K::A1(n, iv));
            return (v, iv);
        }
        let (x, iv) = self.get_f(env);
        let shape = vec![self.get_size(env, n)];
        let v = self.array(ArrayOp::Broadcast {
            arr: x,
            shape,
            axes: vec![],
        });
        env.push(v, K::A1(n, iv));
        (v, iv)
    }

    pub(super) fn get_a2(&mut self, env: &mut Env, r: usize, c: usize) -> (Var, Iv) {
        if self.src.chance(0.75) {
            if let Some(e) = self.pick_e(env, |k| matches!(k, K::A2(a, b, _) if *a == r && *b == c))
            {
                self.used.insert(e.v);
                return (e.v, e.k.iv());
            }
        }
        match self.src.below(3) {
            0 => {
                let (row, iv) = self.get_a1(env, c);
                let shape = vec![self.get_size(env, r), self.get_size(env, c)];
                let v = self.array(ArrayOp::Broadcast {
                    arr: row.into(),
                    shape,
                    axes: vec![1],
                });
                env.push(v, K::A2(r, c, iv));
                (v, iv)
            }
            1 => {
                let (col, iv) = self.get_a1(env, r);
                let shape = vec![self.get_size(env, r), self.get_size(env, c)];
                let v = self.array(ArrayOp::Broadcast {
                    arr: col.into(),
                    shape,
                    axes: vec![0],
                });
                env.push(v, K::A2(r, c, iv));
                (v, iv)
            }
            _ => {
                if let Some(e) =
                    self.pick_e(env, |k| matches!(k, K::A2(a, b, _) if *a == c && *b == r))
                {
                    let v = self.array(ArrayOp::Transpose { arr: e.v.into() });
                    env.push(v, K::A2(r, c, e.k.iv()));
                    return (v, e.k.iv());
                }
                let (x, iv) = self.get_f(env);
                let shape = vec![self.get_size(env, r), self.get_size(env, c)];
                let v = self.array(ArrayOp::Broadcast {
                    arr: x,
                    shape,
                    axes: vec![],
                });
                env.push(v, K::A2(r, c, iv));
                (v, iv)
            }
        }
    }

    /// Any `f64` array (rank 1 or 2), made by broadcasting if there is none.
    pub(super) fn get_arr(&mut self, env: &mut Env) -> E {
        if let Some(e) = self.pick_e(env, |k| matches!(k, K::A1(..) | K::A2(..))) {
            self.used.insert(e.v);
            return e;
        }
        let n = self.src.range(1, 5);
        let (v, iv) = self.get_a1(env, n);
        E { v, k: K::A1(n, iv) }
    }

    pub(super) fn get_bool(&mut self, env: &mut Env) -> Atom {
        if self.src.chance(0.2) {
            if let Some(e) = self.pick_e(env, |k| matches!(k, K::B)) {
                self.used.insert(e.v);
                return e.v.into();
            }
        }
        let v = self.make_bool(env);
        env.push(v, K::B);
        v.into()
    }

    pub(super) fn make_bool(&mut self, env: &mut Env) -> Var {
        const CMP: [Prim; 6] = [Prim::Lt, Prim::Le, Prim::Gt, Prim::Ge, Prim::Ne, Prim::Eq];
        match self.src.weighted(&[8, 3, 2]) {
            0 => {
                // two distinct computed f64 values (never a value with itself),
                // one shifted by a non-zero constant: values that are equal in
                // exact arithmetic (`ln(exp x)` and `x`) never tie, so finite
                // differences never straddle the branch.
                let (a, _) = self.get_fv(env);
                let (b2, _) = self.get_fv_other(env, a);
                let shift = 0.0731 * (1 + self.src.below(5)) as f64;
                let b3 = self.prim(Prim::Add, &[b2, Atom::F64(shift)]);
                let p = CMP[self.src.below(4)];
                self.prim(p, &[a.into(), b3.into()])
            }
            1 => {
                // integers: indices against literals or each other
                let a = match self.pick_e(env, |k| matches!(k, K::I(..))) {
                    Some(e) => e.v,
                    None => {
                        let n = self.src.range(1, 4);
                        let s = self.get_size(env, n);
                        match s {
                            Atom::Var(v) => v,
                            _ => return self.prim(Prim::Lt, &[s, Atom::I64(2)]),
                        }
                    }
                };
                let p = CMP[self.src.below(6)];
                let other = match self.pick_e(env, |k| matches!(k, K::I(..))) {
                    Some(e) if e.v != a && self.src.chance(0.5) => e.v.into(),
                    _ => Atom::I64(self.src.below(3) as i64),
                };
                self.prim(p, &[a.into(), other])
            }
            _ => {
                let x = self.get_bool(env);
                match self.src.below(4) {
                    0 => self.prim(Prim::Not, &[x]),
                    k => {
                        let y = self.get_bool(env);
                        let p = [Prim::And, Prim::Or, Prim::Eq][k - 1];
                        self.prim(p, &[x, y])
                    }
                }
            }
        }
    }
}
