//! One random statement of each construct (`Gen::stmt` draws which), and the
//! results of a generated function.

use super::bounds::{reduce_iv, Iv, HELPER, K, LIMIT, UNIT};
use super::generator::{Env, Gen, E};
use ad_core_ir::ir::*;
use ad_core_ir::types::Ty;
use std::collections::HashSet;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum St {
    Scalar,
    Int,
    Bool,
    Tuple,
    Untuple,
    If,
    Loop,
    Elementwise,
    Build,
    Map,
    Reduce,
    ArgReduce,
    Index,
    Gather,
    Scatter,
    Update,
    Scan,
    MatMul,
    Transpose,
    Broadcast,
    Fold,
    While,
    Call,
}

impl Gen<'_, '_, '_> {
    pub(super) fn stmts(&mut self, env: &mut Env, count: usize) {
        for _ in 0..count {
            if self.budget == 0 {
                return;
            }
            self.budget -= 1;
            self.stmt(env);
        }
    }

    pub(super) fn stmt(&mut self, env: &mut Env) {
        let c = self.cfg;
        // Weights depend on the configuration only (not on what is in
        // scope), so that shrinking one statement leaves the others alone;
        // constructs that are not possible here fall back to a scalar.
        let nest = self.depth < c.max_depth && self.budget >= 2;
        let has_t = env.es.iter().any(|e| matches!(e.k, K::T(_)));
        let w = |on: bool, w: u32| if on { w } else { 0 };
        let table: [(St, u32); 23] = [
            (St::Scalar, 22),
            (St::Int, 3),
            (St::Bool, 2),
            (St::Tuple, w(c.tuple, 3)),
            (St::Untuple, w(c.tuple, 4)),
            (St::If, w(c.if_, 6)),
            (St::Loop, w(c.loop_, 7)),
            (St::Elementwise, w(c.loop_ && c.index, 5)),
            (St::Build, w(c.build, 6)),
            (St::Map, w(c.map, 6)),
            (St::Reduce, w(c.reduce, 6)),
            (St::ArgReduce, w(c.argreduce, 3)),
            (St::Index, w(c.index, 6)),
            (St::Gather, w(c.gather, 4)),
            (St::Scatter, w(c.scatter, 4)),
            (St::Update, w(c.update, 4)),
            (St::Scan, w(c.scan, 4)),
            (St::MatMul, w(c.matmul, 5)),
            (St::Transpose, w(c.transpose, 3)),
            (St::Broadcast, w(c.broadcast, 3)),
            (St::Fold, w(c.fold, 4)),
            (St::While, w(c.while_, 3)),
            (St::Call, w(c.call, 5)),
        ];
        // In loop bodies with array state, updates of it are likely.
        if c.update && !self.loop_arrays.is_empty() && self.src.chance(0.35) {
            return self.st_update(env, true);
        }
        let ws: Vec<u32> = table.iter().map(|t| t.1).collect();
        let k = self.src.weighted(&ws);
        let mut st = table[k].0;
        let possible = match st {
            St::If | St::Loop | St::Elementwise | St::Build | St::Map | St::Fold | St::While => {
                nest
            }
            St::Untuple => has_t,
            St::Call => !self.helpers.is_empty(),
            _ => true,
        };
        if !possible {
            st = St::Scalar;
        }
        match st {
            St::Scalar => self.st_scalar(env),
            St::Int => self.st_int(env),
            St::Bool => {
                let v = self.make_bool(env);
                env.push(v, K::B);
            }
            St::Tuple => self.st_tuple(env),
            St::Untuple => self.st_untuple(env),
            St::If => self.st_if(env),
            St::Loop => self.st_loop(env),
            St::Elementwise => self.st_elementwise(env),
            St::Build => self.st_build(env),
            St::Map => self.st_map(env),
            St::Reduce => self.st_reduce(env),
            St::ArgReduce => self.st_argreduce(env),
            St::Index => self.st_index(env),
            St::Gather => self.st_gather(env),
            St::Scatter => self.st_scatter(env),
            St::Update => self.st_update(env, false),
            St::Scan => self.st_scan(env),
            St::MatMul => self.st_matmul(env),
            St::Transpose => {
                let (r, c) = (self.src.range(1, 4), self.src.range(1, 4));
                let (m, iv) = if let Some(e) = self.pick_e(env, |k| matches!(k, K::A2(..))) {
                    let K::A2(r, c, iv) = e.k else { unreachable!() };
                    self.used.insert(e.v);
                    (e.v, K::A2(c, r, iv))
                } else {
                    let (m, iv) = self.get_a2(env, r, c);
                    (m, K::A2(c, r, iv))
                };
                let v = self.array(ArrayOp::Transpose { arr: m.into() });
                env.push(v, iv);
            }
            St::Broadcast => self.st_broadcast(env),
            St::Fold => self.st_fold(env),
            St::While => self.st_while(env),
            St::Call => self.st_call(env),
        }
    }

    pub(super) fn st_scalar(&mut self, env: &mut Env) {
        use Prim::*;
        const PS: [Prim; 38] = [
            Add, Sub, Mul, Div, Neg, Abs, Max, Min, Sin, Cos, Tan, Exp, Ln, Log2, Log10, Sqrt,
            Tanh, Sinh, Cosh, Atan, ExpM1, Ln1p, Powi, Powf, Atan2, Hypot, Select, MulAdd, Exp2,
            Cbrt, Clamp, Asin, Acos, Asinh, Acosh, Atanh, Rem, Copysign,
        ];
        let p = PS[self.src.below(PS.len())];
        let (v, iv) = match p {
            Add | Sub | Mul => {
                let (a, ia) = self.get_f(env);
                let (b, ib) = self.get_f(env);
                let iv = match p {
                    Add => ia.add(ib),
                    Sub => ia.sub(ib),
                    _ => ia.mul(ib),
                };
                (self.prim(p, &[a, b]), iv)
            }
            Div => {
                let (a, ia) = self.get_f(env);
                let (d, id) = self.positive(env);
                let iv = ia.mul(Iv::new(1.0 / id.hi, 1.0 / id.lo));
                (self.prim(Div, &[a, d]), iv)
            }
            Neg => {
                let (a, ia) = self.get_f(env);
                (self.prim(Neg, &[a]), ia.neg())
            }
            Abs => {
                let (a, ia) = self.get_fv(env);
                (self.prim(Abs, &[a.into()]), ia.abs())
            }
            Max | Min => {
                let (a, ia) = self.get_fv(env);
                let (b, ib) = self.get_fv_other(env, a);
                let iv = if p == Max {
                    Iv::new(ia.lo.max(ib.lo), ia.hi.max(ib.hi))
                } else {
                    Iv::new(ia.lo.min(ib.lo), ia.hi.min(ib.hi))
                };
                (self.prim(p, &[a.into(), b]), iv)
            }
            Sin | Cos => {
                let (a, _) = self.get_f(env);
                (self.prim(p, &[a]), UNIT)
            }
            Tan => {
                let (a, ia) = self.bounded(env, 1.2);
                (self.prim(p, &[a]), ia.mono(f64::tan))
            }
            Exp | ExpM1 | Sinh => {
                let (a, ia) = self.bounded(env, 3.0);
                let f: fn(f64) -> f64 = match p {
                    Exp => f64::exp,
                    ExpM1 => f64::exp_m1,
                    _ => f64::sinh,
                };
                (self.prim(p, &[a]), ia.mono(f))
            }
            Cosh => {
                let (a, ia) = self.bounded(env, 3.0);
                (self.prim(p, &[a]), Iv::new(1.0, ia.m().cosh()))
            }
            Ln | Log2 | Log10 | Sqrt | Cbrt => {
                // cbrt too: away from 0, where its derivative is infinite
                let (a, ia) = self.positive(env);
                let f: fn(f64) -> f64 = match p {
                    Ln => f64::ln,
                    Log2 => f64::log2,
                    Log10 => f64::log10,
                    Cbrt => f64::cbrt,
                    _ => f64::sqrt,
                };
                (self.prim(p, &[a]), ia.mono(f))
            }
            Tanh | Atan | Asinh => {
                let (a, ia) = self.get_f(env);
                let f: fn(f64) -> f64 = match p {
                    Tanh => f64::tanh,
                    Atan => f64::atan,
                    _ => f64::asinh,
                };
                (self.prim(p, &[a]), ia.mono(f))
            }
            // Inside (-0.9, 0.9): away from the poles of their derivatives.
            Asin | Acos | Atanh => {
                let (a, ia) = self.bounded(env, 1.0);
                let b = self.prim(Mul, &[a, Atom::F64(0.9)]);
                let ib = Iv::new(0.9 * ia.lo, 0.9 * ia.hi);
                let f: fn(f64) -> f64 = match p {
                    Asin => f64::asin,
                    Acos => f64::acos,
                    _ => f64::atanh,
                };
                // acos decreases: its bounds swap.
                let iv = if p == Acos {
                    Iv::new(f(ib.hi), f(ib.lo))
                } else {
                    ib.mono(f)
                };
                (self.prim(p, &[b.into()]), iv)
            }
            // From 1.2 up: away from the pole of its derivative at 1.
            Acosh => {
                let (a, ia) = self.positive(env);
                let b = self.prim(Add, &[a, Atom::F64(1.1)]);
                (
                    self.prim(p, &[b.into()]),
                    Iv::new(ia.lo + 1.1, ia.hi + 1.1).mono(f64::acosh),
                )
            }
            Ln1p => {
                let (a, ia) = match self.pick_e(
                    env,
                    |k| matches!(k, K::F(iv) if iv.lo >= -0.5 && iv.hi <= LIMIT),
                ) {
                    Some(e) if self.src.chance(0.5) => {
                        self.used.insert(e.v);
                        (e.v.into(), e.k.iv())
                    }
                    _ => self.positive(env),
                };
                (self.prim(p, &[a]), ia.mono(f64::ln_1p))
            }
            Powi => {
                let n = [2i64, 3, -1, -2, 0, 1, 4][self.src.below(7)];
                let (a, ia) = if n < 0 {
                    self.positive(env)
                } else {
                    self.bounded(env, 3.0)
                };
                let iv = if n == 0 {
                    Iv::pt(1.0)
                } else if n < 0 {
                    Iv::new(ia.hi.powi(n as i32), ia.lo.powi(n as i32))
                } else if n % 2 == 0 {
                    Iv::new(0.0, ia.m().powi(n as i32))
                } else {
                    ia.mono(|x| x.powi(3)).hull(ia).hull(Iv::pt(0.0))
                };
                let iv = if n == 1 { ia } else { iv };
                (self.prim(p, &[a, Atom::I64(n)]), iv)
            }
            Powf => {
                let (a, ia) = self.positive(env);
                let (e, ie) = self.bounded(env, 2.0);
                let l = ia.mono(f64::ln).mul(ie);
                (self.prim(p, &[a, e]), l.mono(f64::exp))
            }
            Atan2 => {
                let (a, _) = self.get_f(env);
                let (d, _) = self.positive(env);
                (
                    self.prim(p, &[a, d]),
                    Iv::new(-std::f64::consts::FRAC_PI_2, std::f64::consts::FRAC_PI_2),
                )
            }
            Hypot => {
                let (a, ia) = self.get_f(env);
                let (d, id) = if self.src.chance(0.5) {
                    self.positive(env)
                } else {
                    let c = [1.0, 0.5, -0.75][self.src.below(3)];
                    (Atom::F64(c), Iv::pt(c))
                };
                let lo = id.abs().lo;
                let hi = (ia.m() * ia.m() + id.m() * id.m()).sqrt();
                (self.prim(p, &[a, d]), Iv::new(lo, hi))
            }
            // f64 remainder by a literal divisor: a wraps for |a| > d (the
            // jumps at multiples of d are measure-zero for finite
            // differences)
            Rem => {
                let (a, ia) = self.bounded(env, 3.0);
                let d = [0.7, 1.3, -2.5][self.src.below(3)];
                let m = f64::abs(d);
                let iv = if ia.lo >= 0.0 {
                    Iv::new(0.0, m.min(ia.hi))
                } else {
                    Iv::new(-m, m)
                };
                (self.prim(p, &[a, Atom::F64(d)]), iv)
            }
            // |a| (a positive value: no kink) with the sign of a literal or
            // of a value away from 0
            Copysign => {
                let (a, ia) = self.positive(env);
                let (s, neg) = if self.src.chance(0.5) {
                    let c = [-0.5, 1.0, -1.0][self.src.below(3)];
                    (Atom::F64(c), c < 0.0)
                } else {
                    let (b, _) = self.positive(env);
                    (b, false)
                };
                let iv = if neg { ia.neg() } else { ia };
                (self.prim(p, &[a, s]), iv)
            }
            Select => {
                let c = self.get_bool(env);
                let (a, ia) = self.get_f(env);
                let (b, ib) = self.get_f(env);
                (self.prim(p, &[c, a, b]), ia.hull(ib))
            }
            MulAdd => {
                let (a, ia) = self.get_f(env);
                let (b, ib) = self.get_f(env);
                let (c, ic) = self.get_f(env);
                (self.prim(p, &[a, b, c]), ia.mul(ib).add(ic))
            }
            Exp2 => {
                let (a, ia) = self.bounded(env, 3.0);
                (self.prim(p, &[a]), ia.mono(f64::exp2))
            }
            Clamp => {
                // literal bounds (lo <= hi, else Rust panics)
                let (a, ia) = self.get_f(env);
                let c = [0.5, 1.0, 2.0][self.src.below(3)];
                let iv = Iv::new(ia.lo.clamp(-c, c), ia.hi.clamp(-c, c));
                (self.prim(p, &[a, Atom::F64(-c), Atom::F64(c)]), iv)
            }
            _ => unreachable!(),
        };
        self.fin_f(env, v, iv);
    }

    pub(super) fn st_int(&mut self, env: &mut Env) {
        use Prim::*;
        let src = self.pick_e(
            env,
            |k| matches!(k, K::I(lo, hi) if *lo >= -100 && *hi <= 100),
        );
        let Some(e) = src else {
            // to_i64 of a float (piecewise constant: zero derivative)
            let (x, ix) = self.bounded(env, 2.0);
            let m = self.prim(Mul, &[x, Atom::F64(2.5)]);
            let v = self.prim(ToI64, &[m.into()]);
            env.push(v, K::I((ix.lo * 2.5) as i64, (ix.hi * 2.5) as i64));
            return;
        };
        let K::I(lo, hi) = e.k else { unreachable!() };
        let a: Atom = e.v.into();
        let (v, k) = match self.src.below(12) {
            0 => {
                let c = self.src.range(1, 3) as i64;
                (self.prim(Add, &[a, Atom::I64(c)]), K::I(lo + c, hi + c))
            }
            1 => (self.prim(Mul, &[a, Atom::I64(2)]), K::I(2 * lo, 2 * hi)),
            2 => (self.prim(Div, &[a, Atom::I64(2)]), K::I(lo / 2, hi / 2)),
            3 if lo >= 0 => (self.prim(Rem, &[a, Atom::I64(3)]), K::I(0, 2.min(hi))),
            4 => (self.prim(Neg, &[a]), K::I(-hi, -lo)),
            5 => (
                self.prim(Abs, &[a]),
                K::I(if lo >= 0 { lo } else { 0 }, lo.abs().max(hi.abs())),
            ),
            6 => {
                let c = self.src.below(3) as i64;
                let p = if self.src.chance(0.5) { Max } else { Min };
                let k = if p == Max {
                    K::I(lo.max(c), hi.max(c))
                } else {
                    K::I(lo.min(c), hi.min(c))
                };
                (self.prim(p, &[a, Atom::I64(c)]), k)
            }
            7 => {
                let c = self.src.range(1, 2) as i64;
                (self.prim(Sub, &[a, Atom::I64(c)]), K::I(lo - c, hi - c))
            }
            // typed integer arithmetic (in range: |values| <= 100 + 3)
            8 => {
                let c = self.src.range(1, 3) as i64;
                let p = IntArith(IntOp::Add, IntTy::I16);
                (self.prim(p, &[a, Atom::I64(c)]), K::I(lo + c, hi + c))
            }
            // a cast that keeps the value (|values| <= 100 fit in i8)
            9 => (self.prim(IntCast(IntTy::I8), &[a]), K::I(lo, hi)),
            // a saturating float-to-u8 cast (negatives go to 0)
            10 => {
                let (x, ix) = self.bounded(env, 2.0);
                let m = self.prim(Mul, &[x, Atom::F64(2.5)]);
                let v = self.prim(FloatToInt(IntTy::U8), &[m.into()]);
                let k = K::I((ix.lo * 2.5).max(0.0) as i64, (ix.hi * 2.5).max(0.0) as i64);
                (v, k)
            }
            _ => {
                let (x, ix) = self.bounded(env, 2.0);
                let m = self.prim(Mul, &[x, Atom::F64(2.5)]);
                let v = self.prim(ToI64, &[m.into()]);
                (v, K::I((ix.lo * 2.5) as i64, (ix.hi * 2.5) as i64))
            }
        };
        env.push(v, k);
    }

    pub(super) fn st_tuple(&mut self, env: &mut Env) {
        let n = self.src.range(1, 3);
        let mut atoms = vec![];
        let mut ks = vec![];
        for _ in 0..n {
            if let Some(e) = self.pick_e(env, |k| !matches!(k, K::T(_))) {
                self.used.insert(e.v);
                atoms.push(e.v.into());
                ks.push(e.k);
            }
        }
        if atoms.is_empty() {
            let (a, iv) = self.get_f(env);
            atoms.push(a);
            ks.push(K::F(iv));
        }
        let v = self.b.emit1(Expr::Tuple(atoms));
        env.push(v, K::T(ks));
    }

    pub(super) fn st_untuple(&mut self, env: &mut Env) {
        let Some(e) = self.pick_e(env, |k| matches!(k, K::T(_))) else {
            return;
        };
        self.used.insert(e.v);
        let K::T(ks) = e.k else { unreachable!() };
        let (vs, _) = self.b.emit(Expr::Untuple(e.v.into()));
        for (v, k) in vs.into_iter().zip(ks) {
            env.push(v, k);
        }
    }

    /// Picks a block result of the same shape as `template` from `env`, biased
    /// to the most recent (those computed in the block).
    pub(super) fn result_like(&mut self, env: &Env, start: usize, template: &K) -> (Atom, K) {
        let e = self
            .pick_result(env, start, |k| k.same_shape(template))
            .expect("the template itself is in scope");
        self.used.insert(e.v);
        (e.v.into(), e.k)
    }

    /// Opens a body: the caller then pushes statements and closes.
    pub(super) fn body_count(&mut self) -> usize {
        self.src.range(0, 4).min(self.budget)
    }

    pub(super) fn st_if(&mut self, env: &mut Env) {
        let cond = self.get_bool(env);
        let n = self.src.range(1, 3);
        let mut templates = vec![];
        for _ in 0..n {
            let allow_t = self.cfg.tuple;
            if let Some(e) = self.pick_e(env, |k| {
                // (A tuple result of an `if` holding arrays is a documented
                // JVP limitation: only tuples of scalars.)
                k.is_fa()
                    || matches!(k, K::I(..))
                    || (allow_t
                        && matches!(k, K::T(ks)
                            if ks.iter().all(|k| matches!(k, K::F(_) | K::I(..) | K::B))))
            }) {
                templates.push(e.k);
            }
        }
        if templates.is_empty() {
            let (_, iv) = self.get_fv(env);
            templates.push(K::F(iv));
        }
        self.depth += 1;
        let branch = |g: &mut Self| -> (Block, Vec<K>) {
            g.b.open();
            let mut benv = env.clone();
            let start = benv.es.len();
            let cnt = g.body_count();
            g.stmts(&mut benv, cnt);
            let (rs, ks): (Vec<Atom>, Vec<K>) = templates
                .iter()
                .map(|t| g.result_like(&benv, start, t))
                .unzip();
            (g.b.close(rs, vec![]), ks)
        };
        let (t, kt) = branch(self);
        let (e, ke) = branch(self);
        self.depth -= 1;
        let (vs, _) = self.b.emit(Expr::If(If {
            cond,
            then_: t,
            else_: e,
            lin_shapes: vec![],
        }));
        for ((v, a), b) in vs.into_iter().zip(kt).zip(ke) {
            env.push(v, a.merge(&b));
        }
    }

    /// Loop-like state: picks `1..=3` initial values; returns atoms, kinds
    /// (widened to contain [-1, 1]).
    pub(super) fn pick_state(&mut self, env: &mut Env, max: usize) -> (Vec<Atom>, Vec<K>) {
        let n = self.src.range(1, max);
        let mut atoms = vec![];
        let mut ks = vec![];
        for _ in 0..n {
            match self.src.below(3) {
                0 => {
                    let (a, iv) = self.get_f(env);
                    atoms.push(a);
                    ks.push(K::F(iv.hull(UNIT)));
                }
                _ => {
                    let e = self.get_arr(env);
                    atoms.push(e.v.into());
                    ks.push(e.k.with_iv(e.k.iv().hull(UNIT)));
                }
            }
        }
        (atoms, ks)
    }

    /// The new value of a piece of loop state of kind `k` from the body scope,
    /// squashed when it could leave the state's interval.
    pub(super) fn new_state(&mut self, benv: &mut Env, start: usize, k: &K) -> Atom {
        let (a, ka) = self.result_like(benv, start, k);
        if ka.iv().within(k.iv()) {
            return a;
        }
        let v = a.var().expect("state values are variables");
        match k {
            K::F(_) => self.prim(Prim::Tanh, &[a]).into(),
            _ => self.squash_arr(benv, v, &ka).0.into(),
        }
    }

    /// Per-iteration / per-element outputs: `0..=max` f64 or [f64] values of
    /// the body scope (preferring recent ones).
    pub(super) fn outputs(
        &mut self,
        benv: &Env,
        start: usize,
        min: usize,
        max: usize,
        allow_arr: bool,
    ) -> (Vec<Atom>, Vec<K>) {
        let n = self.src.range(min, max);
        let mut atoms = vec![];
        let mut ks = vec![];
        for _ in 0..n {
            let allow_arr = allow_arr && self.cfg.stack_arrays;
            let pred = |k: &K| matches!(k, K::F(_)) || (allow_arr && matches!(k, K::A1(..)));
            if let Some(e) = self.pick_result(benv, start, pred) {
                self.used.insert(e.v);
                atoms.push(e.v.into());
                ks.push(e.k);
            }
        }
        (atoms, ks)
    }

    pub(super) fn st_loop(&mut self, env: &mut Env) {
        let trip = match self.pick_e(
            env,
            |k| matches!(k, K::I(lo, hi) if lo == hi && (1..=4).contains(lo)),
        ) {
            Some(e) if self.src.chance(0.5) => e.k.clone(),
            _ => {
                let n = self.src.range(1, 4) as i64;
                K::I(n, n)
            }
        };
        let K::I(n, _) = trip else { unreachable!() };
        let n = n as usize;
        let n_atom = self.get_size(env, n);
        let rev = self.src.chance(0.5);
        let (init, ks) = self.pick_state(env, 3);
        self.depth += 1;
        let i = self.b.fresh("i", Ty::I64);
        let ps: Vec<Var> = ks.iter().map(|k| self.b.fresh("s", k.ty())).collect();
        let mut benv = env.clone();
        let start = benv.es.len();
        benv.push(i, K::I(0, n as i64 - 1));
        for (p, k) in ps.iter().zip(&ks) {
            benv.push(*p, k.clone());
        }
        let saved = std::mem::take(&mut self.loop_arrays);
        self.loop_arrays = ps
            .iter()
            .zip(&ks)
            .filter(|(_, k)| !matches!(k, K::F(_)))
            .map(|(p, _)| *p)
            .collect();
        self.b.open();
        let cnt = self.src.range(1, 5).min(self.budget);
        self.stmts(&mut benv, cnt);
        self.loop_arrays = saved;
        let mut results: Vec<Atom> = ks
            .iter()
            .map(|k| self.new_state(&mut benv, start, k))
            .collect();
        let (outs, oks) = if self.src.chance(0.4) {
            self.outputs(&benv, start, 1, 2, true)
        } else {
            (vec![], vec![])
        };
        results.extend(outs);
        let body = self.b.close(results, vec![]);
        self.depth -= 1;
        let mut params = vec![i];
        params.extend(&ps);
        let (vs, _) = self.b.emit(Expr::Loop(Loop {
            n: n_atom,
            rev,
            init: init.clone(),
            lin_init: vec![],
            body: Lambda {
                params,
                lin_params: vec![],
                body,
            },
        }));
        for a in &init {
            self.mark(a);
        }
        let kinds: Vec<K> = ks
            .into_iter()
            .chain(oks.iter().map(|k| k.stacked(n)))
            .collect();
        for (v, k) in vs.into_iter().zip(kinds) {
            self.fin(env, v, k);
        }
    }

    /// A loop over the elements `x[c·i + b]` (`c` in 1..=2, `0 <= b < c`) of
    /// an array in scope, whose body sees only its index and that element
    /// and adds a function of them (squashed by `tanh`) to a scalar state:
    /// its reverse adds into disjoint elements of `x`'s cotangent, the shape
    /// `f__vjp` fuses into the forward loop (`ad_core_ir::vjp`).
    pub(super) fn st_elementwise(&mut self, env: &mut Env) {
        let Some(e) = self.pick_e(env, |k| matches!(k, K::A1(n, _) if *n >= 1)) else {
            return self.st_scalar(env);
        };
        let K::A1(len, iv) = e.k else { unreachable!() };
        self.used.insert(e.v);
        let c = if len >= 2 { self.src.range(1, 2) } else { 1 };
        let (n, b) = (len / c, self.src.below(c));
        let n_atom = self.get_size(env, n);
        let (init, iv0) = self.get_f(env);
        self.mark(&init);
        self.depth += 1;
        let i = self.b.fresh("i", Ty::I64);
        let st = self.b.fresh("s", Ty::F64);
        self.b.open();
        let mut benv = Env { es: vec![] };
        benv.push(i, K::I(0, n as i64 - 1));
        let ci = self.prim(Prim::Mul, &[Atom::I64(c as i64), i.into()]);
        let at = self.prim(Prim::Add, &[ci.into(), Atom::I64(b as i64)]);
        let x = self.array(ArrayOp::Index {
            arr: e.v.into(),
            idx: vec![at.into()],
        });
        benv.push(x, K::F(iv));
        let cnt = self.src.range(1, 4).min(self.budget);
        self.stmts(&mut benv, cnt);
        let (t, _) = self.result_like(&benv, 1, &K::F(iv));
        let t = self.prim(Prim::Tanh, &[t]);
        let s2 = self.prim(Prim::Add, &[st.into(), t.into()]);
        let body = self.b.close(vec![s2.into()], vec![]);
        self.depth -= 1;
        let (vs, _) = self.b.emit(Expr::Loop(Loop {
            n: n_atom,
            rev: false,
            init: vec![init],
            lin_init: vec![],
            body: Lambda {
                params: vec![i, st],
                lin_params: vec![],
                body,
            },
        }));
        let spread = Iv::new(-(n as f64), n as f64);
        self.fin(env, vs[0], K::F(iv0.add(spread)));
    }

    /// A `While` counting up to a small constant `m` while updating some
    /// state; its trip count (known: `m`) joins the environment as an
    /// integer, so later loops and builds may run that many times.
    pub(super) fn st_while(&mut self, env: &mut Env) {
        let m = self.src.range(0, 4) as i64;
        let (init, ks) = self.pick_state(env, 2);
        self.depth += 1;
        let kc = self.b.fresh("k", Ty::I64);
        let pcs: Vec<Var> = ks.iter().map(|k| self.b.fresh("s", k.ty())).collect();
        self.b.open();
        let c = self.prim(Prim::Lt, &[kc.into(), Atom::I64(m)]);
        let cond_body = self.b.close(vec![c.into()], vec![]);
        let kb = self.b.fresh("k", Ty::I64);
        let pbs: Vec<Var> = ks.iter().map(|k| self.b.fresh("s", k.ty())).collect();
        let mut benv = env.clone();
        let start = benv.es.len();
        benv.push(kb, K::I(0, m.max(0)));
        for (p, k) in pbs.iter().zip(&ks) {
            benv.push(*p, k.clone());
        }
        self.b.open();
        let cnt = self.src.range(1, 4).min(self.budget);
        self.stmts(&mut benv, cnt);
        let k1 = self.prim(Prim::Add, &[kb.into(), Atom::I64(1)]);
        let mut results: Vec<Atom> = vec![k1.into()];
        for k in &ks {
            let a = self.new_state(&mut benv, start, k);
            results.push(a);
        }
        let body = self.b.close(results, vec![]);
        self.depth -= 1;
        let mut all_init = vec![Atom::I64(0)];
        all_init.extend(init.iter().copied());
        let (vs, _) = self.b.emit(Expr::While(While {
            init: all_init,
            cond: Lambda {
                params: std::iter::once(kc).chain(pcs).collect(),
                lin_params: vec![],
                body: cond_body,
            },
            body: Lambda {
                params: std::iter::once(kb).chain(pbs).collect(),
                lin_params: vec![],
                body,
            },
        }));
        for a in &init {
            self.mark(a);
        }
        env.push(vs[0], K::I(m, m));
    }

    pub(super) fn st_fold(&mut self, env: &mut Env) {
        let (init, ks) = self.pick_state(env, 2);
        let arr = self.get_arr(env);
        let xk = match arr.k {
            K::A1(_, iv) => K::F(iv),
            K::A2(_, c, iv) => K::A1(c, iv),
            _ => unreachable!(),
        };
        self.depth += 1;
        let ps: Vec<Var> = ks.iter().map(|k| self.b.fresh("acc", k.ty())).collect();
        let x = self.b.fresh("x", xk.ty());
        let mut benv = env.clone();
        let start = benv.es.len();
        for (p, k) in ps.iter().zip(&ks) {
            benv.push(*p, k.clone());
        }
        benv.push(x, xk);
        self.b.open();
        let cnt = self.src.range(1, 4).min(self.budget);
        self.stmts(&mut benv, cnt);
        let results: Vec<Atom> = ks
            .iter()
            .map(|k| self.new_state(&mut benv, start, k))
            .collect();
        let body = self.b.close(results, vec![]);
        self.depth -= 1;
        let mut params = ps.clone();
        params.push(x);
        let (vs, _) = self.b.emit(Expr::Fold(Fold {
            init: init.clone(),
            arr: arr.v.into(),
            body: Lambda {
                params,
                lin_params: vec![],
                body,
            },
        }));
        for a in &init {
            self.mark(a);
        }
        for (v, k) in vs.into_iter().zip(ks) {
            env.push(v, k);
        }
    }

    pub(super) fn st_build(&mut self, env: &mut Env) {
        let rank = if self.src.chance(0.35) { 2 } else { 1 };
        let dims: Vec<usize> = (0..rank).map(|_| self.some_len(env).min(5)).collect();
        let shape: Vec<Atom> = dims.iter().map(|&d| self.get_size(env, d)).collect();
        self.depth += 1;
        let idx: Vec<Var> = (0..rank).map(|_| self.b.fresh("j", Ty::I64)).collect();
        let mut benv = env.clone();
        let start = benv.es.len();
        for (j, &d) in idx.iter().zip(&dims) {
            benv.push(*j, K::I(0, d as i64 - 1));
        }
        self.b.open();
        let cnt = self.src.range(1, 4).min(self.budget);
        self.stmts(&mut benv, cnt);
        // Make sure the body depends on an index now and then.
        if self.src.chance(0.5) {
            let j = idx[self.src.below(rank)];
            let jf = self.prim(Prim::ToF64, &[j.into()]);
            let (x, ix) = self.get_f(&mut benv);
            let v = self.prim(Prim::Mul, &[jf.into(), x]);
            let iv = ix.mul(Iv::new(0.0, dims.iter().max().copied().unwrap_or(1) as f64));
            self.fin_f(&mut benv, v, iv);
        }
        let (mut rs, mut ks) = self.outputs(&benv, start, 1, 2, rank == 1);
        if rs.is_empty() {
            let (a, iv) = self.get_fv(&mut benv);
            rs.push(a.into());
            ks.push(K::F(iv));
        }
        let body = self.b.close(rs, vec![]);
        self.depth -= 1;
        let (vs, _) = self.b.emit(Expr::Build(Build {
            shape,
            body: Lambda {
                params: idx,
                lin_params: vec![],
                body,
            },
        }));
        for (v, k) in vs.into_iter().zip(ks) {
            let k = match (k, rank) {
                (K::F(iv), 2) => K::A2(dims[0], dims[1], iv),
                (k, _) => k.stacked(dims[0]),
            };
            env.push(v, k);
        }
    }

    pub(super) fn st_map(&mut self, env: &mut Env) {
        let first = self.get_arr(env);
        let n = self.src.range(1, 3);
        let mut arrs = vec![(first.v, first.k.iv())];
        for _ in 1..n {
            let a = match first.k {
                K::A1(m, _) => self.get_a1(env, m),
                K::A2(r, c, _) => self.get_a2(env, r, c),
                _ => unreachable!(),
            };
            arrs.push(a);
        }
        self.depth += 1;
        let ps: Vec<Var> = arrs.iter().map(|_| self.b.fresh("e", Ty::F64)).collect();
        let mut benv = env.clone();
        let start = benv.es.len();
        for (p, (_, iv)) in ps.iter().zip(&arrs) {
            benv.push(*p, K::F(*iv));
        }
        self.b.open();
        let cnt = self.src.range(1, 4).min(self.budget);
        self.stmts(&mut benv, cnt);
        let rank1 = matches!(first.k, K::A1(..));
        let (mut rs, mut ks) = self.outputs(&benv, start, 1, 2, rank1);
        if rs.is_empty() {
            rs.push(ps[0].into());
            ks.push(K::F(arrs[0].1));
        }
        let body = self.b.close(rs, vec![]);
        self.depth -= 1;
        let (vs, _) = self.b.emit(Expr::Map(Map {
            arrs: arrs.iter().map(|(v, _)| Atom::Var(*v)).collect(),
            lin_arrs: vec![],
            body: Lambda {
                params: ps,
                lin_params: vec![],
                body,
            },
        }));
        for (v, k) in vs.into_iter().zip(ks) {
            let k = match (&first.k, k) {
                (K::A2(r, c, _), K::F(iv)) => K::A2(*r, *c, iv),
                (K::A1(m, _), k) => k.stacked(*m),
                _ => unreachable!(),
            };
            env.push(v, k);
        }
    }

    pub(super) fn st_reduce(&mut self, env: &mut Env) {
        let op = [ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Max, ReduceOp::Min][self.src.below(4)];
        let mut e = self.get_arr(env);
        if op == ReduceOp::Prod && e.k.iv().m() > 1.5 {
            let (v, k) = self.squash_arr(env, e.v, &e.k);
            e = E { v, k };
        }
        let iv = e.k.iv();
        let (axis, k) = match e.k {
            K::A1(n, _) => (None, K::F(reduce_iv(op, iv, n))),
            K::A2(r, c, _) => match self.src.below(3) {
                0 => (None, K::F(reduce_iv(op, iv, r * c))),
                1 => (Some(0), K::A1(c, reduce_iv(op, iv, r))),
                _ => (Some(1), K::A1(r, reduce_iv(op, iv, c))),
            },
            _ => unreachable!(),
        };
        let v = self.array(ArrayOp::Reduce {
            op,
            arr: e.v.into(),
            axis,
        });
        self.fin(env, v, k);
    }

    pub(super) fn st_argreduce(&mut self, env: &mut Env) {
        let op = if self.src.chance(0.5) {
            ReduceOp::Min
        } else {
            ReduceOp::Max
        };
        let e = self.get_arr(env);
        match e.k {
            K::A1(n, _) => {
                let (vs, _) = self.b.emit(Expr::Array(ArrayOp::ArgReduce {
                    op,
                    arr: e.v.into(),
                    axis: None,
                }));
                env.push(vs[0], K::I(0, n as i64 - 1));
            }
            K::A2(r, c, _) => match self.src.below(3) {
                0 => {
                    let (vs, _) = self.b.emit(Expr::Array(ArrayOp::ArgReduce {
                        op,
                        arr: e.v.into(),
                        axis: None,
                    }));
                    env.push(vs[0], K::I(0, r as i64 - 1));
                    env.push(vs[1], K::I(0, c as i64 - 1));
                }
                a => {
                    let v = self.array(ArrayOp::ArgReduce {
                        op,
                        arr: e.v.into(),
                        axis: Some(a - 1),
                    });
                    let k = if a == 1 {
                        K::IA(c, r as i64 - 1)
                    } else {
                        K::IA(r, c as i64 - 1)
                    };
                    env.push(v, k);
                }
            },
            _ => unreachable!(),
        }
    }

    pub(super) fn st_index(&mut self, env: &mut Env) {
        let e = self.get_arr(env);
        match e.k {
            K::A1(n, iv) => {
                let i = self.get_idx(env, n);
                let v = self.array(ArrayOp::Index {
                    arr: e.v.into(),
                    idx: vec![i],
                });
                env.push(v, K::F(iv));
            }
            K::A2(r, c, iv) => {
                let i = self.get_idx(env, r);
                if self.src.chance(0.5) {
                    let v = self.array(ArrayOp::Index {
                        arr: e.v.into(),
                        idx: vec![i],
                    });
                    env.push(v, K::A1(c, iv));
                } else {
                    let j = self.get_idx(env, c);
                    let v = self.array(ArrayOp::Index {
                        arr: e.v.into(),
                        idx: vec![i, j],
                    });
                    env.push(v, K::F(iv));
                }
            }
            _ => unreachable!(),
        }
    }

    pub(super) fn st_gather(&mut self, env: &mut Env) {
        let e = self.get_arr(env);
        let rows = match e.k {
            K::A1(n, _) => n,
            K::A2(r, _, _) => r,
            _ => unreachable!(),
        };
        let (idx, k) = self.get_idx_arr(env, None, rows);
        let v = self.array(ArrayOp::Gather {
            arr: e.v.into(),
            idx: idx.into(),
        });
        let kk = match e.k {
            K::A1(_, iv) => K::A1(k, iv),
            K::A2(_, c, iv) => K::A2(k, c, iv),
            _ => unreachable!(),
        };
        env.push(v, kk);
    }

    pub(super) fn st_scatter(&mut self, env: &mut Env) {
        let e = self.get_arr(env);
        let rows = match e.k {
            K::A1(n, _) => n,
            K::A2(r, _, _) => r,
            _ => unreachable!(),
        };
        let len = self.src.range(1, 6);
        let (idx, _) = self.get_idx_arr(env, Some(rows), len);
        let len_a = self.get_size(env, len);
        let v = self.array(ArrayOp::ScatterAdd {
            len: len_a,
            idx: idx.into(),
            vals: e.v.into(),
        });
        let iv = e.k.iv().sums_upto(rows);
        let kk = match e.k {
            K::A1(..) => K::A1(len, iv),
            K::A2(_, c, _) => K::A2(len, c, iv),
            _ => unreachable!(),
        };
        self.fin(env, v, kk);
    }

    /// `arr with [idx] = val` or `+= val`; in a loop body, preferably on the
    /// loop's array state.
    pub(super) fn st_update(&mut self, env: &mut Env, on_state: bool) {
        let e = if on_state {
            let st = self.loop_arrays.clone();
            let k = self.src.below(st.len());
            match env.es.iter().find(|e| e.v == st[k]).cloned() {
                Some(e) => e,
                None => self.get_arr(env),
            }
        } else {
            self.get_arr(env)
        };
        self.used.insert(e.v);
        let add = self.src.chance(0.5);
        let (idx, val, vk) = match e.k {
            K::A1(n, _) => {
                let i = self.get_idx(env, n);
                let (x, iv) = self.get_f(env);
                (vec![i], x, iv)
            }
            K::A2(r, c, _) => {
                let i = self.get_idx(env, r);
                if self.src.chance(0.5) {
                    let (row, iv) = self.get_a1(env, c);
                    (vec![i], row.into(), iv)
                } else {
                    let j = self.get_idx(env, c);
                    let (x, iv) = self.get_f(env);
                    (vec![i, j], x, iv)
                }
            }
            _ => unreachable!(),
        };
        self.mark(&val);
        let v = self.array(ArrayOp::Update {
            arr: e.v.into(),
            idx,
            val,
            add,
        });
        let iv = if add {
            e.k.iv().hull(e.k.iv().add(vk))
        } else {
            e.k.iv().hull(vk)
        };
        self.fin(env, v, e.k.with_iv(iv));
    }

    pub(super) fn st_scan(&mut self, env: &mut Env) {
        let e = self.get_arr(env);
        let reverse = self.src.chance(0.5);
        let rows = match e.k {
            K::A1(n, _) => n,
            K::A2(r, _, _) => r,
            _ => unreachable!(),
        };
        let v = self.array(ArrayOp::Scan {
            arr: e.v.into(),
            reverse,
        });
        let iv = e.k.iv().partial_sums(rows);
        self.fin(env, v, e.k.with_iv(iv));
    }

    pub(super) fn st_matmul(&mut self, env: &mut Env) {
        let (a, b, k) = match self.src.below(4) {
            0 => {
                // dot
                let n = self.some_len(env);
                let (x, ix) = self.get_a1(env, n);
                let (y, iy) = self.get_a1(env, n);
                (x, y, K::F(ix.mul(iy).sum_n(n)))
            }
            1 => {
                // mat · vec
                let (r, c) = (self.some_len(env).min(4), self.some_len(env).min(4));
                let (m, im) = self.get_a2(env, r, c);
                let (x, ix) = self.get_a1(env, c);
                (m, x, K::A1(r, im.mul(ix).sum_n(c)))
            }
            2 => {
                // vec · mat
                let (r, c) = (self.some_len(env).min(4), self.some_len(env).min(4));
                let (x, ix) = self.get_a1(env, r);
                let (m, im) = self.get_a2(env, r, c);
                (x, m, K::A1(c, im.mul(ix).sum_n(r)))
            }
            _ => {
                let (r, k, c) = (
                    self.some_len(env).min(4),
                    self.some_len(env).min(4),
                    self.some_len(env).min(4),
                );
                let (m1, i1) = self.get_a2(env, r, k);
                let (m2, i2) = self.get_a2(env, k, c);
                (m1, m2, K::A2(r, c, i1.mul(i2).sum_n(k)))
            }
        };
        let v = self.array(ArrayOp::MatMul {
            a: a.into(),
            b: b.into(),
        });
        self.fin(env, v, k);
    }

    pub(super) fn st_broadcast(&mut self, env: &mut Env) {
        match self.src.below(4) {
            3 => {
                // Stretching an axis of length 1 (ndarray's broadcasting),
                // along a kept axis: `[1] -> [n]` or `[1] -> [m, n]`.
                let n = self.some_len(env);
                let (x, iv) = self.get_a1(env, 1);
                if self.src.chance(0.5) {
                    let shape = vec![self.get_size(env, n)];
                    let v = self.array(ArrayOp::Broadcast {
                        arr: x.into(),
                        shape,
                        axes: vec![0],
                    });
                    env.push(v, K::A1(n, iv));
                } else {
                    let m = self.src.range(1, 4);
                    let shape = vec![self.get_size(env, m), self.get_size(env, n)];
                    let v = self.array(ArrayOp::Broadcast {
                        arr: x.into(),
                        shape,
                        axes: vec![1],
                    });
                    env.push(v, K::A2(m, n, iv));
                }
            }
            0 => {
                let (x, iv) = self.get_f(env);
                let n = self.some_len(env);
                if self.src.chance(0.5) {
                    let shape = vec![self.get_size(env, n)];
                    let v = self.array(ArrayOp::Broadcast {
                        arr: x,
                        shape,
                        axes: vec![],
                    });
                    env.push(v, K::A1(n, iv));
                } else {
                    let m = self.src.range(1, 4);
                    let shape = vec![self.get_size(env, n), self.get_size(env, m)];
                    let v = self.array(ArrayOp::Broadcast {
                        arr: x,
                        shape,
                        axes: vec![],
                    });
                    env.push(v, K::A2(n, m, iv));
                }
            }
            _ => {
                let n = self.some_len(env);
                let m = self.src.range(1, 4);
                let (x, iv) = self.get_a1(env, n);
                let (shape, axes, k) = if self.src.chance(0.5) {
                    (
                        vec![self.get_size(env, n), self.get_size(env, m)],
                        vec![0],
                        K::A2(n, m, iv),
                    )
                } else {
                    (
                        vec![self.get_size(env, m), self.get_size(env, n)],
                        vec![1],
                        K::A2(m, n, iv),
                    )
                };
                let v = self.array(ArrayOp::Broadcast {
                    arr: x.into(),
                    shape,
                    axes,
                });
                env.push(v, k);
            }
        }
    }

    pub(super) fn st_call(&mut self, env: &mut Env) {
        let h = self.helpers[self.src.below(self.helpers.len())].clone();
        let mut args = vec![];
        for p in &h.params {
            let a = match p {
                K::F(_) => self.bounded(env, HELPER.hi).0,
                K::A1(n, _) => {
                    let (v, iv) = self.get_a1(env, *n);
                    if iv.m() > HELPER.hi {
                        self.squash_arr(env, v, &K::A1(*n, iv)).0.into()
                    } else {
                        v.into()
                    }
                }
                _ => unreachable!("helper parameters are f64 or [f64]"),
            };
            self.mark(&a);
            args.push(a);
        }
        let vs = self.b.call(&h.name, &args);
        for (v, k) in vs.into_iter().zip(h.results) {
            env.push(v, k);
        }
    }

    /// The results of a function: `1..=max` values, preferring unused ones.
    pub(super) fn func_results(
        &mut self,
        env: &Env,
        max: usize,
        allow_int: bool,
    ) -> (Vec<Atom>, Vec<K>) {
        let n = self.src.range(1, max);
        let mut rs: Vec<Atom> = vec![];
        let mut ks = vec![];
        let mut taken: HashSet<Var> = HashSet::new();
        for _ in 0..n {
            let fresh: Vec<&E> = env
                .es
                .iter()
                .filter(|e| e.k.is_fa() && !self.used.contains(&e.v) && !taken.contains(&e.v))
                .collect();
            let e = if !fresh.is_empty() && !self.src.chance(0.15) {
                let r = self.src.below(fresh.len().min(4));
                fresh[fresh.len() - 1 - r].clone()
            } else if let Some(e) = self.pick_e(env, |k| k.is_fa()) {
                e
            } else {
                continue;
            };
            taken.insert(e.v);
            rs.push(e.v.into());
            ks.push(e.k);
        }
        if allow_int && self.src.chance(0.08) {
            if let Some(e) = self.pick_e(env, |k| matches!(k, K::I(..))) {
                rs.push(e.v.into());
                ks.push(e.k);
            }
        }
        (rs, ks)
    }
}
