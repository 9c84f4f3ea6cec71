//! A generator of random well-typed, non-linear, *safe and smooth* programs for
//! the property tests of the passes.
//!
//! # Design
//!
//! The generator is a typed expression generator driven by a *choice sequence*
//! (a `Vec<u8>`, Hypothesis style): every decision reads the next byte, and a
//! byte `0` (also what an exhausted sequence reads) always means the simplest
//! option (fewest statements, the simplest construct, the first candidate).
//! [`ChoiceStrategy`] shrinks the sequence (truncating, deleting chunks,
//! zeroing and halving bytes), which shrinks the program; the argument values
//! come from a separate seed.
//!
//! It keeps, per scope, a pool of available variables with their [`K`]ind:
//! `f64` with an interval bound on its value, `i64` with a range (sizes,
//! indices), `bool`, `[f64]`/`[[f64]]` of known sizes with an element interval,
//! `[i64]` index arrays of known length and maximum, and tuples of these. The
//! intervals make the programs safe: indices are literals below the length,
//! indices of loops/builds over at most that length, or `rem` of a
//! non-negative integer by the length; `ln`, `sqrt`, `powf`, ... get arguments
//! with a positive lower bound (`x*x + c`, `cosh x`, `exp x`, `hypot(x, c)`),
//! `div`/`atan2` positive denominators, `tan` arguments in `[-1.2, 1.2]`; any
//! value whose bound exceeds [`LIMIT`] is squashed with `tanh`, and loop state
//! is squashed whenever its update could leave the (widened) interval of its
//! initial value, so values stay bounded whatever the trip count.
//!
//! Programs are smooth at the generated arguments with probability one: `max`,
//! `min`, `abs`, comparisons, `select` and arg-reductions only see distinct
//! variables and random continuous inputs (ties between exact copies are
//! harmless: copies have equal tangents).
//!
//! A program has 0..=2 helper functions (`h0`, `h1`; `f64` and `[f64]`
//! parameters bounded by 2 and results) followed by the entry `f`, whose
//! parameters are 1..=4 of `f64`, `[f64]` (length 1..=6), `[[f64]]` (2..=4 ×
//! 2..=4), plus sometimes an `i64` trip count (1..=4, not differentiated).

#![allow(dead_code)]

use ad_core_ir::build::FuncBuilder;
use ad_core_ir::interp::Value;
use ad_core_ir::ir::*;
use ad_core_ir::pretty::program_to_string;
use ad_core_ir::testing::Rng;
use ad_core_ir::types::{Scalar, Ty};
use proptest::prelude::Rng as _;
use proptest::strategy::{NewTree, Strategy, ValueTree};
use proptest::test_runner::TestRunner;
use std::collections::HashSet;
use std::fmt;

/// Values whose bound exceeds this are squashed with `tanh`.
pub const LIMIT: f64 = 30.0;

// ---------------------------------------------------------------------------
// Configuration
// ---------------------------------------------------------------------------

/// Which constructs the generator may use (all by default). A construct can
/// be switched off for a run with `LINAD_GEN_DISABLE=loop,fold,...` (names as
/// the fields), to keep testing the others while a bug in one is open.
#[derive(Clone, Debug)]
pub struct GenConfig {
    /// `Expr::Tuple` / `Expr::Untuple`.
    pub tuple: bool,
    /// `If`.
    pub if_: bool,
    /// `Loop`.
    pub loop_: bool,
    /// `Build`.
    pub build: bool,
    /// `Map`.
    pub map: bool,
    /// `Reduce`.
    pub reduce: bool,
    /// `ArgReduce`.
    pub argreduce: bool,
    /// `Index`.
    pub index: bool,
    /// `Gather`.
    pub gather: bool,
    /// `ScatterAdd`.
    pub scatter: bool,
    /// `Update`.
    pub update: bool,
    /// `Scan`.
    pub scan: bool,
    /// `MatMul`.
    pub matmul: bool,
    /// `Transpose`.
    pub transpose: bool,
    /// `Broadcast` (also used to make operands of the right shape).
    pub broadcast: bool,
    /// `Fold`.
    pub fold: bool,
    /// `While` (its trip count then sizes other constructs).
    pub while_: bool,
    /// `Call` of helper functions.
    pub call: bool,
    /// Loop outputs and build/map results that are arrays (stacked to a
    /// higher rank). Off by default: reverse mode refuses differentiable
    /// stacked results with array elements (a documented limitation);
    /// `LINAD_GEN_STACK_ARRAYS=1` turns them on.
    pub stack_arrays: bool,
    /// Maximum number of statements of the entry function (about).
    pub max_stmts: usize,
    /// Maximum nesting depth of bodies.
    pub max_depth: usize,
}

impl Default for GenConfig {
    fn default() -> Self {
        GenConfig {
            tuple: true,
            if_: true,
            loop_: true,
            build: true,
            map: true,
            reduce: true,
            argreduce: true,
            index: true,
            gather: true,
            scatter: true,
            update: true,
            scan: true,
            matmul: true,
            transpose: true,
            broadcast: true,
            fold: true,
            while_: true,
            call: true,
            stack_arrays: false,
            max_stmts: 40,
            max_depth: 3,
        }
    }
}

impl GenConfig {
    /// The default configuration minus the constructs named in
    /// `LINAD_GEN_DISABLE` (comma-separated field names, `if`/`loop` accepted).
    pub fn from_env() -> Self {
        let mut c = GenConfig {
            stack_arrays: std::env::var("LINAD_GEN_STACK_ARRAYS").is_ok(),
            ..GenConfig::default()
        };
        if let Ok(s) = std::env::var("LINAD_GEN_DISABLE") {
            for name in s.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                c.disable(name);
            }
        }
        c
    }

    /// Switches one construct off by name.
    pub fn disable(&mut self, name: &str) {
        let f = match name.trim_end_matches('_') {
            "tuple" => &mut self.tuple,
            "if" => &mut self.if_,
            "loop" => &mut self.loop_,
            "build" => &mut self.build,
            "map" => &mut self.map,
            "reduce" => &mut self.reduce,
            "argreduce" => &mut self.argreduce,
            "index" => &mut self.index,
            "gather" => &mut self.gather,
            "scatter" => &mut self.scatter,
            "update" => &mut self.update,
            "scan" => &mut self.scan,
            "matmul" => &mut self.matmul,
            "transpose" => &mut self.transpose,
            "broadcast" => &mut self.broadcast,
            "fold" => &mut self.fold,
            "while" => &mut self.while_,
            "call" => &mut self.call,
            other => panic!("LINAD_GEN_DISABLE: unknown construct `{other}`"),
        };
        *f = false;
    }
}

// ---------------------------------------------------------------------------
// The choice sequence and its shrinking
// ---------------------------------------------------------------------------

/// Reads decisions from a byte sequence; past its end every byte is 0.
pub struct Src<'a> {
    data: &'a [u8],
    /// Bytes read so far.
    pub pos: usize,
}

impl<'a> Src<'a> {
    /// A source over `data`.
    pub fn new(data: &'a [u8]) -> Self {
        Src { data, pos: 0 }
    }

    fn byte(&mut self) -> u8 {
        let b = self.data.get(self.pos).copied().unwrap_or(0);
        self.pos += 1;
        b
    }

    /// Uniform in `0..n` (0 for `n <= 1`).
    pub fn below(&mut self, n: usize) -> usize {
        if n <= 1 {
            return 0;
        }
        if n <= 64 {
            self.byte() as usize % n
        } else {
            ((self.byte() as usize) << 8 | self.byte() as usize) % n
        }
    }

    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi + 1 - lo)
    }

    /// True with probability about `p` (a 0 byte gives false).
    pub fn chance(&mut self, p: f64) -> bool {
        let b = self.byte();
        (255 - b) as f64 + 0.5 < p * 256.0
    }

    /// An index drawn with the given weights (a 0 byte gives the first
    /// non-zero weight). All weights zero: 0.
    pub fn weighted(&mut self, ws: &[u32]) -> usize {
        let total: u32 = ws.iter().sum();
        if total == 0 {
            return 0;
        }
        let r = ((((self.byte() as u32) << 8) | self.byte() as u32) * total) >> 16;
        let mut acc = 0;
        for (k, w) in ws.iter().enumerate() {
            acc += w;
            if r < acc {
                return k;
            }
        }
        ws.len() - 1
    }
}

/// The raw input of one case: independent choice streams (entry function,
/// helper count, each helper) and a seed for argument values. Separate
/// streams keep the entry's decisions in place when a helper shrinks away.
#[derive(Clone, Debug)]
pub struct Choices {
    /// The decision streams: `[entry, helper count, h0, h1]`.
    pub streams: Vec<Vec<u8>>,
    /// Seed of the argument values.
    pub seed: u64,
}

/// Number of streams of [`Choices`].
pub const STREAMS: usize = 4;

/// A strategy of choice streams of `len` random bytes each, shrinking
/// towards short, zero-filled streams.
#[derive(Clone, Debug)]
pub struct ChoiceStrategy {
    /// Length of fresh streams (more than any function reads).
    pub len: usize,
}

impl Strategy for ChoiceStrategy {
    type Tree = ChoiceTree;
    type Value = Choices;
    fn new_tree(&self, runner: &mut TestRunner) -> NewTree<Self> {
        let rng = runner.rng();
        let streams = (0..STREAMS)
            .map(|_| {
                let mut bytes = vec![0u8; self.len];
                rng.fill_bytes(&mut bytes);
                bytes
            })
            .collect();
        let seed = rng.next_u64();
        Ok(ChoiceTree::new(Choices { streams, seed }))
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Step {
    /// Binary search of the shortest failing prefix: `lo..hi` unknown, `hi` fails.
    Truncate { lo: usize },
    /// Delete `SIZES[size]` bytes at `pos`.
    Delete { size: usize, pos: usize },
    /// Zero the byte at `pos`.
    Zero { pos: usize },
    /// Halve, then decrement, the byte at `pos`.
    Halve { pos: usize, dec: bool },
}

/// Chunk sizes tried by deletion (statements read a few bytes to a few dozen).
const SIZES: [usize; 11] = [32, 24, 16, 12, 8, 6, 5, 4, 3, 2, 1];

/// The value tree of [`ChoiceStrategy`]: a small Hypothesis-like shrinker
/// working on one stream at a time.
pub struct ChoiceTree {
    base: Choices,
    cur: Choices,
    stream: usize,
    step: Option<Step>,
    /// Whether any candidate was accepted in this round.
    progress: bool,
    rounds: usize,
}

impl ChoiceTree {
    /// A tree whose initial value is `c`.
    pub fn new(c: Choices) -> Self {
        ChoiceTree {
            base: c.clone(),
            cur: c,
            stream: 0,
            step: Some(Step::Truncate { lo: 0 }),
            progress: false,
            rounds: 0,
        }
    }

    /// Moves to the next candidate from the current step on; sets `cur`.
    fn next_candidate(&mut self) -> bool {
        loop {
            let Some(step) = self.step else {
                // Next stream, or next round, or done.
                if self.stream + 1 < self.base.streams.len() {
                    self.stream += 1;
                    self.step = Some(Step::Truncate { lo: 0 });
                    continue;
                }
                if self.progress && self.rounds < 3 {
                    self.rounds += 1;
                    self.progress = false;
                    self.stream = 0;
                    self.step = Some(Step::Truncate { lo: 0 });
                    continue;
                }
                self.cur = self.base.clone();
                return false;
            };
            let bytes = &self.base.streams[self.stream];
            let n = bytes.len();
            let mut cand = bytes.clone();
            match step {
                Step::Truncate { lo } => {
                    if lo >= n {
                        self.step = Some(Step::Delete { size: 0, pos: 0 });
                        continue;
                    }
                    cand.truncate((lo + n) / 2);
                }
                Step::Delete { size, pos } => {
                    if size >= SIZES.len() {
                        self.step = Some(Step::Zero { pos: 0 });
                        continue;
                    }
                    if pos + SIZES[size] > n {
                        self.step = Some(Step::Delete {
                            size: size + 1,
                            pos: 0,
                        });
                        continue;
                    }
                    cand.drain(pos..pos + SIZES[size]);
                }
                Step::Zero { pos } => {
                    if pos >= n {
                        self.step = Some(Step::Halve { pos: 0, dec: false });
                        continue;
                    }
                    if cand[pos] == 0 {
                        self.step = Some(Step::Zero { pos: pos + 1 });
                        continue;
                    }
                    cand[pos] = 0;
                }
                Step::Halve { pos, dec } => {
                    if pos >= n {
                        self.step = None;
                        continue;
                    }
                    if cand[pos] <= 1 {
                        self.step = Some(Step::Halve {
                            pos: pos + 1,
                            dec: false,
                        });
                        continue;
                    }
                    cand[pos] = if dec { cand[pos] - 1 } else { cand[pos] / 2 };
                }
            }
            let mut c = self.base.clone();
            c.streams[self.stream] = cand;
            self.cur = c;
            return true;
        }
    }

    /// The current candidate passed: step forward from `base`.
    fn rejected(&mut self) {
        let len = self.cur.streams[self.stream].len();
        self.step = self.step.map(|s| match s {
            // `cur` (length (lo+n)/2) passed: the answer is above it.
            Step::Truncate { .. } => Step::Truncate { lo: len + 1 },
            Step::Delete { size, pos } => Step::Delete { size, pos: pos + 1 },
            Step::Zero { pos } => Step::Zero { pos: pos + 1 },
            Step::Halve { pos, dec: false } => Step::Halve { pos, dec: true },
            Step::Halve { pos, dec: true } => Step::Halve {
                pos: pos + 1,
                dec: false,
            },
        });
    }
}

impl ValueTree for ChoiceTree {
    type Value = Choices;
    fn current(&self) -> Choices {
        self.cur.clone()
    }
    fn simplify(&mut self) -> bool {
        // `cur` failed (or this is the first call, `cur == base`): accept it.
        if self.cur.streams != self.base.streams {
            self.base = self.cur.clone();
            self.progress = true;
            if let Some(Step::Truncate { .. }) = self.step {
                self.step = Some(Step::Truncate { lo: 0 });
            }
        }
        self.next_candidate()
    }
    fn complicate(&mut self) -> bool {
        self.cur = self.base.clone();
        self.rejected();
        self.next_candidate()
    }
}

// ---------------------------------------------------------------------------
// Intervals and kinds
// ---------------------------------------------------------------------------

/// A closed interval bounding a value (or every element of an array).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Iv {
    /// Lower bound.
    pub lo: f64,
    /// Upper bound.
    pub hi: f64,
}

impl Iv {
    fn new(lo: f64, hi: f64) -> Iv {
        Iv { lo, hi }
    }
    fn pt(x: f64) -> Iv {
        Iv { lo: x, hi: x }
    }
    /// `max |x|`.
    fn m(self) -> f64 {
        self.lo.abs().max(self.hi.abs())
    }
    fn add(self, o: Iv) -> Iv {
        Iv::new(self.lo + o.lo, self.hi + o.hi)
    }
    fn neg(self) -> Iv {
        Iv::new(-self.hi, -self.lo)
    }
    fn sub(self, o: Iv) -> Iv {
        self.add(o.neg())
    }
    fn mul(self, o: Iv) -> Iv {
        let ps = [
            self.lo * o.lo,
            self.lo * o.hi,
            self.hi * o.lo,
            self.hi * o.hi,
        ];
        Iv::new(
            ps.iter().copied().fold(f64::INFINITY, f64::min),
            ps.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        )
    }
    fn hull(self, o: Iv) -> Iv {
        Iv::new(self.lo.min(o.lo), self.hi.max(o.hi))
    }
    fn within(self, o: Iv) -> bool {
        self.lo >= o.lo && self.hi <= o.hi
    }
    fn mono(self, f: fn(f64) -> f64) -> Iv {
        Iv::new(f(self.lo), f(self.hi))
    }
    fn abs(self) -> Iv {
        if self.lo >= 0.0 {
            self
        } else if self.hi <= 0.0 {
            self.neg()
        } else {
            Iv::new(0.0, self.m())
        }
    }
    /// Bound of a sum of `n` values each in `self`.
    fn sum_n(self, n: usize) -> Iv {
        Iv::new(self.lo * n as f64, self.hi * n as f64)
    }
    /// Bound of a partial sum of at most `n` values each in `self` (at least one).
    fn partial_sums(self, n: usize) -> Iv {
        Iv::new(
            self.lo.min(self.lo * n as f64),
            self.hi.max(self.hi * n as f64),
        )
    }
    /// Bound of a sum of between 0 and `n` values each in `self`.
    fn sums_upto(self, n: usize) -> Iv {
        Iv::new((self.lo * n as f64).min(0.0), (self.hi * n as f64).max(0.0))
    }
}

const UNIT: Iv = Iv { lo: -1.0, hi: 1.0 };
/// Bound of parameter values (random in [-1, 1], perturbed by finite differences).
const PARAM: Iv = Iv {
    lo: -1.01,
    hi: 1.01,
};
/// Bound of helper parameters: call sites squash larger arguments.
const HELPER: Iv = Iv { lo: -2.0, hi: 2.0 };

/// The kind of a variable of the pool: its type and what is known of its value.
#[derive(Clone, Debug, PartialEq)]
pub enum K {
    /// `f64` in the interval.
    F(Iv),
    /// `i64` in `lo..=hi`.
    I(i64, i64),
    /// `bool`.
    B,
    /// `[f64]` of the length, elements in the interval.
    A1(usize, Iv),
    /// `[[f64]]` of the shape, elements in the interval.
    A2(usize, usize, Iv),
    /// `[i64]` of the length with elements in `0..=max`.
    IA(usize, i64),
    /// A tuple.
    T(Vec<K>),
}

impl K {
    fn ty(&self) -> Ty {
        match self {
            K::F(_) => Ty::F64,
            K::I(..) => Ty::I64,
            K::B => Ty::BOOL,
            K::A1(..) => Ty::f64s(1),
            K::A2(..) => Ty::f64s(2),
            K::IA(..) => Ty::array(Scalar::I64, 1),
            K::T(ks) => Ty::Tuple(ks.iter().map(K::ty).collect()),
        }
    }
    fn iv(&self) -> Iv {
        match self {
            K::F(iv) | K::A1(_, iv) | K::A2(_, _, iv) => *iv,
            _ => UNIT,
        }
    }
    fn with_iv(&self, iv: Iv) -> K {
        match self {
            K::F(_) => K::F(iv),
            K::A1(n, _) => K::A1(*n, iv),
            K::A2(r, c, _) => K::A2(*r, *c, iv),
            k => k.clone(),
        }
    }
    /// Same type and sizes (intervals may differ).
    fn same_shape(&self, o: &K) -> bool {
        match (self, o) {
            (K::F(_), K::F(_)) | (K::I(..), K::I(..)) | (K::B, K::B) => true,
            (K::A1(a, _), K::A1(b, _)) => a == b,
            (K::A2(a, b, _), K::A2(c, d, _)) => a == c && b == d,
            (K::IA(a, _), K::IA(b, _)) => a == b,
            (K::T(xs), K::T(ys)) => {
                xs.len() == ys.len() && xs.iter().zip(ys).all(|(x, y)| x.same_shape(y))
            }
            _ => false,
        }
    }
    /// The kind bounding both (same shape assumed).
    fn merge(&self, o: &K) -> K {
        match (self, o) {
            (K::I(a, b), K::I(c, d)) => K::I(*a.min(c), *b.max(d)),
            (K::IA(n, a), K::IA(_, b)) => K::IA(*n, *a.max(b)),
            (K::T(xs), K::T(ys)) => K::T(xs.iter().zip(ys).map(|(x, y)| x.merge(y)).collect()),
            (K::B, K::B) => K::B,
            _ => self.with_iv(self.iv().hull(o.iv())),
        }
    }
    fn is_fa(&self) -> bool {
        matches!(self, K::F(_) | K::A1(..) | K::A2(..))
    }
    /// A value of this kind stacked `n` times (loop/build/map outputs).
    fn stacked(&self, n: usize) -> K {
        match self {
            K::F(iv) => K::A1(n, *iv),
            K::A1(m, iv) => K::A2(n, *m, *iv),
            _ => unreachable!("only f64 and [f64] are stacked"),
        }
    }
}

/// A variable of the pool.
#[derive(Clone, Debug)]
struct E {
    v: Var,
    k: K,
}

/// The variables in scope.
#[derive(Clone, Debug, Default)]
struct Env {
    es: Vec<E>,
}

impl Env {
    fn push(&mut self, v: Var, k: K) {
        self.es.push(E { v, k });
    }
}

/// Signature of a generated helper function.
#[derive(Clone, Debug)]
struct HelperSig {
    name: String,
    params: Vec<K>,
    results: Vec<K>,
}

// ---------------------------------------------------------------------------
// The generator
// ---------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum St {
    Scalar,
    Int,
    Bool,
    Tuple,
    Untuple,
    If,
    Loop,
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

struct Gen<'s, 'd, 'p> {
    src: &'s mut Src<'d>,
    cfg: &'s GenConfig,
    b: FuncBuilder<'p>,
    helpers: &'s [HelperSig],
    budget: usize,
    depth: usize,
    used: HashSet<Var>,
    /// Inside a loop or fold body whose state includes arrays: bias towards updates.
    loop_arrays: Vec<Var>,
}

const F_LITS: [f64; 8] = [1.0, 0.5, -0.75, 2.0, 0.3, -1.25, 1.5, -0.2];

impl<'s, 'd, 'p> Gen<'s, 'd, 'p> {
    // ----- basics -----

    fn mark(&mut self, a: &Atom) {
        if let Atom::Var(v) = a {
            self.used.insert(*v);
        }
    }

    fn prim(&mut self, p: Prim, args: &[Atom]) -> Var {
        for a in args {
            self.mark(a);
        }
        self.b.prim(p, args)
    }

    fn array(&mut self, op: ArrayOp) -> Var {
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
    fn pick(&mut self, env: &Env, pred: impl Fn(&K) -> bool) -> Option<usize> {
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
    fn pick_result(&mut self, env: &Env, start: usize, pred: impl Fn(&K) -> bool) -> Option<E> {
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

    fn pick_e(&mut self, env: &Env, pred: impl Fn(&K) -> bool) -> Option<E> {
        self.pick(env, pred).map(|i| env.es[i].clone())
    }

    /// Finishes an `f64` result: pushes it (squashed with tanh when large).
    fn fin_f(&mut self, env: &mut Env, v: Var, iv: Iv) -> (Atom, Iv) {
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
    fn squash_arr(&mut self, env: &mut Env, v: Var, k: &K) -> (Var, K) {
        self.used.insert(v);
        let t = self.b.map(&[v.into()], |b, e| {
            vec![b.prim(Prim::Tanh, &[e[0].into()]).into()]
        })[0];
        let k2 = k.with_iv(UNIT);
        env.push(t, k2.clone());
        (t, k2)
    }

    /// Finishes an array result: pushes it (squashed when large).
    fn fin_a(&mut self, env: &mut Env, v: Var, k: K) -> (Var, K) {
        let iv = k.iv();
        if iv.m() > LIMIT || !iv.lo.is_finite() || !iv.hi.is_finite() {
            self.squash_arr(env, v, &k)
        } else {
            env.push(v, k.clone());
            (v, k)
        }
    }

    fn fin(&mut self, env: &mut Env, v: Var, k: K) {
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

    fn lit(&mut self) -> (Atom, Iv) {
        let x = F_LITS[self.src.below(F_LITS.len())];
        (Atom::F64(x), Iv::pt(x))
    }

    /// An `f64` variable (made from an array or an integer if there is none).
    fn get_fv(&mut self, env: &mut Env) -> (Var, Iv) {
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
    fn get_f(&mut self, env: &mut Env) -> (Atom, Iv) {
        if self.src.chance(0.12) {
            return self.lit();
        }
        let (v, iv) = self.get_fv(env);
        (v.into(), iv)
    }

    /// A variable distinct from `other`.
    fn get_fv_other(&mut self, env: &mut Env, other: Var) -> (Atom, Iv) {
        if let Some(e) = self.pick_e(env, |k| matches!(k, K::F(_))) {
            if e.v != other {
                self.used.insert(e.v);
                return (e.v.into(), e.k.iv());
            }
        }
        self.lit()
    }

    /// An operand with `|x| <= m` (squashed with tanh or sin if needed).
    fn bounded(&mut self, env: &mut Env, m: f64) -> (Atom, Iv) {
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
    fn positive(&mut self, env: &mut Env) -> (Atom, Iv) {
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
    fn get_idx(&mut self, env: &mut Env, len: usize) -> Atom {
        let len_i = len as i64;
        match self.src.weighted(&[3, 4, 3]) {
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
    fn get_size(&mut self, env: &mut Env, n: usize) -> Atom {
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
    fn some_len(&mut self, env: &Env) -> usize {
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
    fn get_idx_arr(&mut self, env: &mut Env, k: Option<usize>, bound: usize) -> (Var, usize) {
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

    fn get_a1(&mut self, env: &mut Env, n: usize) -> (Var, Iv) {
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

    fn get_a2(&mut self, env: &mut Env, r: usize, c: usize) -> (Var, Iv) {
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
    fn get_arr(&mut self, env: &mut Env) -> E {
        if let Some(e) = self.pick_e(env, |k| matches!(k, K::A1(..) | K::A2(..))) {
            self.used.insert(e.v);
            return e;
        }
        let n = self.src.range(1, 5);
        let (v, iv) = self.get_a1(env, n);
        E { v, k: K::A1(n, iv) }
    }

    fn get_bool(&mut self, env: &mut Env) -> Atom {
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

    fn make_bool(&mut self, env: &mut Env) -> Var {
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

    // ----- statements -----

    fn stmts(&mut self, env: &mut Env, count: usize) {
        for _ in 0..count {
            if self.budget == 0 {
                return;
            }
            self.budget -= 1;
            self.stmt(env);
        }
    }

    fn stmt(&mut self, env: &mut Env) {
        let c = self.cfg;
        // Weights depend on the configuration only (not on what is in
        // scope), so that shrinking one statement leaves the others alone;
        // constructs that are not possible here fall back to a scalar.
        let nest = self.depth < c.max_depth && self.budget >= 2;
        let has_t = env.es.iter().any(|e| matches!(e.k, K::T(_)));
        let w = |on: bool, w: u32| if on { w } else { 0 };
        let table: [(St, u32); 22] = [
            (St::Scalar, 22),
            (St::Int, 3),
            (St::Bool, 2),
            (St::Tuple, w(c.tuple, 3)),
            (St::Untuple, w(c.tuple, 4)),
            (St::If, w(c.if_, 6)),
            (St::Loop, w(c.loop_, 7)),
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
            St::If | St::Loop | St::Build | St::Map | St::Fold | St::While => nest,
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

    fn st_scalar(&mut self, env: &mut Env) {
        use Prim::*;
        const PS: [Prim; 31] = [
            Add, Sub, Mul, Div, Neg, Abs, Max, Min, Sin, Cos, Tan, Exp, Ln, Log2, Log10, Sqrt,
            Tanh, Sinh, Cosh, Atan, ExpM1, Ln1p, Powi, Powf, Atan2, Hypot, Select, MulAdd, Exp2,
            Cbrt, Clamp,
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
            Tanh | Atan => {
                let (a, ia) = self.get_f(env);
                let f: fn(f64) -> f64 = if p == Tanh { f64::tanh } else { f64::atan };
                (self.prim(p, &[a]), ia.mono(f))
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

    fn st_int(&mut self, env: &mut Env) {
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

    fn st_tuple(&mut self, env: &mut Env) {
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

    fn st_untuple(&mut self, env: &mut Env) {
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
    fn result_like(&mut self, env: &Env, start: usize, template: &K) -> (Atom, K) {
        let e = self
            .pick_result(env, start, |k| k.same_shape(template))
            .expect("the template itself is in scope");
        self.used.insert(e.v);
        (e.v.into(), e.k)
    }

    /// Opens a body: the caller then pushes statements and closes.
    fn body_count(&mut self) -> usize {
        self.src.range(0, 4).min(self.budget)
    }

    fn st_if(&mut self, env: &mut Env) {
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
    fn pick_state(&mut self, env: &mut Env, max: usize) -> (Vec<Atom>, Vec<K>) {
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
    fn new_state(&mut self, benv: &mut Env, start: usize, k: &K) -> Atom {
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
    fn outputs(
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

    fn st_loop(&mut self, env: &mut Env) {
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

    /// A `While` counting up to a small constant `m` while updating some
    /// state; its trip count (known: `m`) joins the environment as an
    /// integer, so later loops and builds may run that many times.
    fn st_while(&mut self, env: &mut Env) {
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

    fn st_fold(&mut self, env: &mut Env) {
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

    fn st_build(&mut self, env: &mut Env) {
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

    fn st_map(&mut self, env: &mut Env) {
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

    fn st_reduce(&mut self, env: &mut Env) {
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

    fn st_argreduce(&mut self, env: &mut Env) {
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

    fn st_index(&mut self, env: &mut Env) {
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

    fn st_gather(&mut self, env: &mut Env) {
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

    fn st_scatter(&mut self, env: &mut Env) {
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
    fn st_update(&mut self, env: &mut Env, on_state: bool) {
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

    fn st_scan(&mut self, env: &mut Env) {
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

    fn st_matmul(&mut self, env: &mut Env) {
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

    fn st_broadcast(&mut self, env: &mut Env) {
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

    fn st_call(&mut self, env: &mut Env) {
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
    fn func_results(&mut self, env: &Env, max: usize, allow_int: bool) -> (Vec<Atom>, Vec<K>) {
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

fn reduce_iv(op: ReduceOp, iv: Iv, n: usize) -> Iv {
    match op {
        ReduceOp::Sum => iv.sum_n(n),
        ReduceOp::Prod => {
            let m = iv.m().powi(n as i32);
            if iv.lo >= 0.0 {
                Iv::new(0.0, m)
            } else {
                Iv::new(-m, m)
            }
        }
        ReduceOp::Max | ReduceOp::Min => iv,
    }
}

// ---------------------------------------------------------------------------
// Programs
// ---------------------------------------------------------------------------

/// One generated test case.
#[derive(Clone)]
pub struct Case {
    /// The program: helpers, then the entry.
    pub prog: Program,
    /// The entry function's name.
    pub entry: String,
    /// Arguments of the entry.
    pub args: Vec<Value>,
    /// Which parameters to differentiate.
    pub wrt: Vec<bool>,
    /// Seed for the directions of the derivative checks.
    pub seed: u64,
    /// How many choice bytes the generator read.
    pub used_choices: usize,
}

impl Case {
    /// As the tuple the brief asks for.
    pub fn parts(&self) -> (&Program, &str, &[Value], &[bool]) {
        (&self.prog, &self.entry, &self.args, &self.wrt)
    }
}

impl fmt::Debug for Case {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "Case (entry `{}`, {} choices used)",
            self.entry, self.used_choices
        )?;
        writeln!(f, "{}", program_to_string(&self.prog))?;
        writeln!(f, "args = {:?}", self.args)?;
        writeln!(f, "wrt  = {:?}", self.wrt)?;
        write!(f, "seed = {}", self.seed)
    }
}

fn gen_helper(
    src: &mut Src,
    cfg: &GenConfig,
    prog: &Program,
    helpers: &[HelperSig],
    name: &str,
) -> (Func, HelperSig) {
    let mut b = FuncBuilder::new(prog, name);
    let mut env = Env::default();
    let np = src.range(1, 3);
    let mut params = vec![];
    for k in 0..np {
        let kind = if src.chance(0.5) {
            K::A1(src.range(1, 6), HELPER)
        } else {
            K::F(HELPER)
        };
        let v = b.param(&format!("a{k}"), kind.ty());
        env.push(v, kind.clone());
        params.push(kind);
    }
    let mut g = Gen {
        src,
        cfg,
        b,
        helpers,
        budget: 0,
        depth: 0,
        used: HashSet::new(),
        loop_arrays: vec![],
    };
    g.budget = g.src.range(1, 12);
    let n = g.budget;
    g.stmts(&mut env, n);
    let (rs, ks) = g.func_results(&env, 2, false);
    let f = g.b.finish(rs, vec![]);
    (
        f,
        HelperSig {
            name: name.to_string(),
            params,
            results: ks,
        },
    )
}

/// Generates a case from choice streams.
pub fn generate(ch: &Choices, cfg: &GenConfig) -> Case {
    let stream = |k: usize| ch.streams.get(k).map_or(&[][..], |s| &s[..]);
    let mut src = Src::new(stream(0));
    let mut prog = Program::default();
    let mut helpers: Vec<HelperSig> = vec![];
    let nh = if cfg.call {
        Src::new(stream(1)).range(0, 2)
    } else {
        0
    };
    for k in 0..nh {
        let name = format!("h{k}");
        let mut hsrc = Src::new(stream(2 + k));
        let (f, sig) = gen_helper(&mut hsrc, cfg, &prog, &helpers, &name);
        prog.insert(f);
        helpers.push(sig);
    }
    // The entry.
    let mut b = FuncBuilder::new(&prog, "f");
    let mut env = Env::default();
    let mut arg_kinds = vec![];
    let np = src.range(1, 4);
    for k in 0..np {
        let kind = match src.below(3) {
            0 => K::F(PARAM),
            1 => K::A1(src.range(1, 6), PARAM),
            _ => K::A2(src.range(2, 4), src.range(2, 4), PARAM),
        };
        let v = b.param(&format!("x{k}"), kind.ty());
        env.push(v, kind.clone());
        arg_kinds.push(kind);
    }
    if src.chance(0.3) {
        let n = src.range(1, 4) as i64;
        let v = b.param("n", Ty::I64);
        env.push(v, K::I(n, n));
        arg_kinds.push(K::I(n, n));
    }
    let mut g = Gen {
        src: &mut src,
        cfg,
        b,
        helpers: &helpers,
        budget: 0,
        depth: 0,
        used: HashSet::new(),
        loop_arrays: vec![],
    };
    g.budget = 1 + g.src.below(cfg.max_stmts);
    while g.budget > 0 {
        g.budget -= 1;
        g.stmt(&mut env);
    }
    let (rs, _) = g.func_results(&env, 3, true);
    let f = g.b.finish(rs, vec![]);
    prog.insert(f);
    // wrt: a random non-empty subset of the differentiable parameters.
    let diff: Vec<usize> = (0..arg_kinds.len())
        .filter(|&k| arg_kinds[k].is_fa())
        .collect();
    let mut wrt: Vec<bool> = arg_kinds
        .iter()
        .map(|k| k.is_fa() && src.chance(0.6))
        .collect();
    if !wrt.iter().any(|w| *w) {
        wrt[diff[src.below(diff.len())]] = true;
    }
    // Arguments.
    let mut rng = Rng(ch.seed);
    let args = arg_kinds
        .iter()
        .map(|k| match k {
            K::F(_) => Value::F64(rng.unit()),
            K::A1(n, _) => Value::f64s(&[*n], (0..*n).map(|_| rng.unit()).collect::<Vec<_>>()),
            K::A2(r, c, _) => Value::f64s(
                &[*r, *c],
                (0..r * c).map(|_| rng.unit()).collect::<Vec<_>>(),
            ),
            K::I(n, _) => Value::I64(*n),
            _ => unreachable!(),
        })
        .collect();
    Case {
        prog,
        entry: "f".to_string(),
        args,
        wrt,
        seed: ch.seed ^ 0x5eed,
        used_choices: src.pos,
    }
}

/// The strategy of generated cases.
pub fn cases(cfg: GenConfig) -> impl Strategy<Value = Case> {
    ChoiceStrategy { len: 2048 }.prop_map(move |ch| generate(&ch, &cfg))
}
