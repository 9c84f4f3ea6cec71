//! The simplifier: semantics-preserving rewrite rules applied after lowering,
//! JVP, unzip and transpose.
//!
//! [`simplify_func`] repeats a *sweep* until nothing changes (at most
//! [`Options::max_sweeps`] times), stopping as soon as every pass has run
//! in a row without a change (not at the end of a sweep that changes
//! nothing: in the macro of a user's build, unoptimised, that last sweep was
//! a fifth of the simplifier's instructions). A sweep is a straight pipeline:
//!
//! 1. the rewrite engine ([`engine`]): one forward walk applying local rules —
//!    copy propagation ([`copy_prop`]), constant folding ([`fold_const`]),
//!    algebra ([`algebra`]), symbolic zeros ([`zeros`]), shape folding
//!    ([`shape`]), build-of-index and map identity ([`fusion::build_of_index`],
//!    [`fusion::map_identity`]), linear broadcasts moved past the maps,
//!    `dup`s and products that read them ([`lin_broadcast`]) — chosen per
//!    statement by the exhaustive dispatch [`rules_for`];
//! 2. linear DCE through explicit drops ([`dce::drop_dead_linear`]), dead
//!    linear loop state ([`dead_state`]), invariant linear loop state made a
//!    capture ([`invariant_state`]: the reverse of a reducing loop becomes an
//!    accumulation loop), a zero row accumulated and then added into an
//!    outer accumulator accumulated in that row instead ([`in_place`]),
//!    nests of accumulation loops interchanged so that the outer index owns
//!    the rows they add into ([`interchange`]), the stacked scalar outputs
//!    of a loop nest written in place into one array made before it
//!    ([`stack_in_place`]);
//! 3. CSE ([`cse`]); 4. fusion ([`fusion`], [`fuse_into_loop`]) and linear
//!    sums moved through the linear maps that make their operands
//!    ([`sum_through`]: `Σ_i A(x_i) = A(Σ_i x_i)`), past factors invariant
//!    along the sum ([`sum_invariant`]: `Σ_i g(a, x_i) = g(a, Σ_i x_i)`); 5. loop-invariant code motion
//!    ([`licm`]) and tabulation of partially invariant expensive scalars
//!    ([`tabulate`]); 6. DCE ([`dce::dce`]).
//!
//! # What every rule preserves
//!
//! - *Values.* For every input on which the original function runs without
//!   error, the interpreter gives the same results, to the bit for non-linear
//!   values (the sign of a zero included: `x + 0.0` is not `x`); rules that reassociate — [`algebra::lscale_lscale`], [`algebra::ladd_lscale`],
//!   [`fusion::dot_of_map`], [`fusion::sum_to_loop`], [`interchange`],
//!   [`in_place`], [`sum_through`] — may change rounding).
//!   No rule changes NaN/infinity behaviour of non-linear values (`x * 0` is
//!   not folded). Failures may disappear (dead code, fusion), never appear:
//!   nothing that can fail is hoisted out of a body that may run zero times.
//! - *Typing and scoping.* Every statement stays well typed (binders keep
//!   their types, but for [`in_place`]'s chain of linear variables, which
//!   take the accumulator's array type), in A-normal form, and every
//!   variable is bound once in the whole function: code is moved rather
//!   than copied, and copied code gets fresh binders.
//! - *Linearity.* Every linear variable is still used exactly once; linear
//!   statements are never merged or duplicated; a rule that stops reading a
//!   linear producer's result deletes the producer (see the note in
//!   [`engine`]). Linear B input stays Linear B.
//!
//! The output passes [`crate::check::check_func`] in the mode of the input.

pub mod algebra;
pub mod copy_prop;
pub mod cse;
pub mod dce;
pub mod dead_state;
pub mod engine;
pub mod facts;
pub mod fold_const;
pub mod fuse_into_loop;
pub mod fusion;
pub mod in_place;
pub mod interchange;
pub mod invariant_state;
pub mod licm;
pub mod lin_broadcast;
pub mod shape;
pub mod stack_in_place;
pub mod sum_invariant;
pub mod sum_through;
pub mod tabulate;
pub mod zeros;

pub use engine::{apply_rules, Cx, Rule, Stats};

use crate::ir::*;
use facts::CountsMemo;

/// Which parts of the simplifier run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// Fusion of maps, builds, indexing, gathers and sums.
    pub fuse: bool,
    /// Loop-invariant code motion.
    pub licm: bool,
    /// Common subexpression elimination.
    pub cse: bool,
    /// `sum(build(n, f))` becomes a sequential loop (off by default).
    pub sum_to_loop: bool,
    /// Nests of accumulation loops interchanged ([`interchange`]).
    pub interchange: bool,
    /// Linear sums moved through linear maps ([`sum_through`]) and past
    /// invariant factors ([`sum_invariant`]); off for a linear map about
    /// to be transposed, where a sum moved towards the inputs becomes
    /// broadcasts moved towards the outputs (`Σ(p + q) = Σp + Σq`
    /// transposes to two filled arrays instead of one and a `dup`), and
    /// for the one-sweep `f__vjp` ([`crate::vjp`]), which keeps
    /// `f__lin_t`'s sums and so its bits.
    pub sum_through: bool,
    /// At most this many sweeps per function.
    pub max_sweeps: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            fuse: true,
            licm: true,
            cse: true,
            sum_to_loop: false,
            interchange: true,
            sum_through: true,
            max_sweeps: 16,
        }
    }
}

/// Simplifies every function of the program to a fixpoint (bounded number of sweeps).
pub fn simplify_program(prog: &mut Program, opts: &Options) {
    for i in 0..prog.funcs.len() {
        let mut f = prog.funcs[i].clone();
        simplify_func(&mut f, prog, opts);
        prog.funcs[i] = f;
    }
}

/// Simplifies one function; `prog` gives callee signatures (for typing new
/// statements): the sweep's passes in a cycle until every
/// one of them has run, in a row, without changing anything (at most
/// [`Options::max_sweeps`] sweeps). This applies the passes in the order
/// that repeating [`sweep`] until one changes nothing does, and stops at
/// the same function, without the rest of that last sweep: the passes after
/// the last change already ran on that function and changed nothing, and a
/// pass is a function of the program it is given (the fusion passes'
/// counts are made afresh at the start of each sweep's fusion passes, as in
/// [`sweep`]).
pub fn simplify_func(f: &mut Func, prog: &Program, opts: &Options) {
    let active: Vec<Pass> = PASSES.iter().copied().filter(|p| p.on(opts)).collect();
    let mut quiet = 0;
    let mut memo: CountsMemo = None;
    for _ in 0..opts.max_sweeps {
        for &p in &active {
            if quiet == active.len() {
                return;
            }
            if p == Pass::MapMap {
                memo = None;
            }
            if p.run(f, prog, opts, &mut memo) {
                quiet = 0;
            } else {
                quiet += 1;
            }
        }
    }
}

/// One sweep of the pipeline; returns whether anything changed.
pub fn sweep(f: &mut Func, prog: &Program, opts: &Options) -> bool {
    // One count of the body for the fusion passes, recomputed only after a
    // pass changed it.
    let mut memo: CountsMemo = None;
    let mut changed = false;
    for p in PASSES.iter().filter(|p| p.on(opts)) {
        changed |= p.run(f, prog, opts, &mut memo);
    }
    changed
}

/// The passes of a sweep, in order (see the module documentation).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Pass {
    Rewrite,
    DropDeadLinear,
    DeadLinState,
    InvariantLinState,
    InPlace,
    StackInPlace,
    Interchange,
    Cse,
    MapMap,
    LinElementwise,
    SumThrough,
    SumInvariant,
    MapOfBuild,
    IndexOfBuild,
    FuseIntoLoop,
    GatherOfBuild,
    DotOfMap,
    LdotOfMap,
    SumToLoop,
    Licm,
    Tabulate,
    Dce,
}

/// A sweep's passes in order.
const PASSES: [Pass; 22] = [
    Pass::Rewrite,
    Pass::DropDeadLinear,
    Pass::DeadLinState,
    Pass::InvariantLinState,
    Pass::InPlace,
    Pass::StackInPlace,
    Pass::Interchange,
    Pass::Cse,
    Pass::MapMap,
    Pass::LinElementwise,
    Pass::SumThrough,
    Pass::SumInvariant,
    Pass::MapOfBuild,
    Pass::IndexOfBuild,
    Pass::FuseIntoLoop,
    Pass::GatherOfBuild,
    Pass::DotOfMap,
    Pass::LdotOfMap,
    Pass::SumToLoop,
    Pass::Licm,
    Pass::Tabulate,
    Pass::Dce,
];

impl Pass {
    /// Whether `opts` runs the pass.
    fn on(self, opts: &Options) -> bool {
        match self {
            Pass::Rewrite
            | Pass::DropDeadLinear
            | Pass::DeadLinState
            | Pass::InvariantLinState
            | Pass::Dce => true,
            Pass::Interchange => opts.interchange,
            Pass::InPlace | Pass::StackInPlace => opts.fuse,
            Pass::Cse => opts.cse,
            Pass::MapMap
            | Pass::LinElementwise
            | Pass::MapOfBuild
            | Pass::IndexOfBuild
            | Pass::FuseIntoLoop
            | Pass::GatherOfBuild
            | Pass::DotOfMap
            | Pass::LdotOfMap => opts.fuse,
            Pass::SumThrough | Pass::SumInvariant => opts.fuse && opts.sum_through,
            Pass::SumToLoop => opts.fuse && opts.sum_to_loop,
            Pass::Licm | Pass::Tabulate => opts.licm,
        }
    }

    /// Runs the pass; returns whether it changed `f`. `memo` is the fusion
    /// passes' count of the body (kept valid by them; the others do not
    /// read it).
    fn run(self, f: &mut Func, prog: &Program, opts: &Options, memo: &mut CountsMemo) -> bool {
        match self {
            Pass::Rewrite => rewrite(f, prog, opts).total() > 0,
            Pass::DropDeadLinear => dce::drop_dead_linear(f),
            Pass::DeadLinState => dead_state::dead_lin_state(f),
            Pass::InvariantLinState => invariant_state::invariant_lin_state(f),
            Pass::InPlace => in_place::accumulate_in_place(f),
            Pass::StackInPlace => stack_in_place::stacks_in_place(f),
            Pass::Interchange => interchange::interchange(f),
            Pass::Cse => cse::cse(f),
            Pass::MapMap => fusion::map_map(f, memo),
            Pass::LinElementwise => fusion::lin_elementwise(f, memo),
            Pass::SumThrough => sum_through::sum_through_linear(f, memo),
            Pass::SumInvariant => {
                let changed = sum_invariant::sum_invariant_factors(f);
                if changed {
                    *memo = None;
                }
                changed
            }
            Pass::MapOfBuild => fusion::map_of_build(f, memo),
            Pass::IndexOfBuild => fusion::index_of_build(f, memo),
            Pass::FuseIntoLoop => fuse_into_loop::fuse_into_loop(f, memo),
            Pass::GatherOfBuild => fusion::gather_of_build(f, memo),
            Pass::DotOfMap => fusion::dot_of_map(f, memo),
            Pass::LdotOfMap => fusion::ldot_of_map(f, memo),
            Pass::SumToLoop => fusion::sum_to_loop(f, memo),
            Pass::Licm => licm::licm(f),
            Pass::Tabulate => tabulate::tabulate(f),
            Pass::Dce => dce::dce(f),
        }
    }
}

/// Applies `at(b, j)` to every statement `j` of `b` and of its nested
/// blocks, inner blocks first. `at` returns `Some(k)` when it rewrote the
/// block, `k` being the index after which the walk goes on (statements up
/// to `k` are not visited again), or `None`. Returns whether anything
/// changed. The walk of the passes that rewrite a loop statement in its
/// block (`dead_state`, `invariant_state`).
pub(crate) fn rewrite_stmts(
    b: &mut Block,
    at: &mut dyn FnMut(&mut Block, usize) -> Option<usize>,
) -> bool {
    let mut changed = false;
    for s in &mut b.stmts {
        for blk in crate::visit::blocks_mut(&mut s.expr) {
            changed |= rewrite_stmts(blk, at);
        }
    }
    let mut j = 0;
    while j < b.stmts.len() {
        if let Some(k) = at(b, j) {
            changed = true;
            j = k;
        }
        j += 1;
    }
    changed
}

/// The rules that keep every value bit for bit (no reassociation), run on a
/// primal before JVP so that it differentiates fused loops and tables:
/// [`fuse_into_loop`], [`tabulate`], then DCE, repeated (at most
/// `opts.max_sweeps` times) until nothing changes. Returns whether anything
/// changed.
pub fn exact(f: &mut Func, opts: &Options) -> bool {
    let mut any = false;
    for _ in 0..opts.max_sweeps {
        let mut changed = false;
        if opts.fuse {
            changed |= fuse_into_loop::fuse_into_loop(f, &mut None);
        }
        if opts.licm {
            changed |= tabulate::tabulate(f);
        }
        changed |= dce::dce(f);
        any |= changed;
        if !changed {
            break;
        }
    }
    any
}

/// One walk of the rewrite engine with the rules [`rules_for`] selects.
pub fn rewrite(f: &mut Func, prog: &Program, opts: &Options) -> Stats {
    let fuse = opts.fuse;
    engine::run(f, prog, &move |e| rules_for(e, fuse))
}

macro_rules! rules {
    ($($module:ident :: $rule:ident),* $(,)?) => {
        {
            const RULES: &[Rule] = &[$(Rule { name: stringify!($rule), apply: $module::$rule }),*];
            RULES
        }
    };
}

/// The local rules tried on a statement, by expression kind (exhaustive: a
/// new kind of expression must decide its rules here).
pub fn rules_for(e: &Expr, fuse: bool) -> &'static [Rule] {
    match e {
        Expr::Atom(_) => rules![copy_prop::copy_atom],
        Expr::Prim(..) => rules![
            fold_const::fold_prim,
            algebra::mul_one,
            algebra::div_one,
            algebra::add_zero,
            algebra::sub_zero,
            algebra::neg_neg,
            algebra::not_not,
            algebra::bool_literal,
            algebra::select_literal,
            algebra::non_negative_int,
        ],
        Expr::Array(op) => match op {
            ArrayOp::Shape { .. } => rules![shape::fold_shape],
            ArrayOp::Index { .. }
            | ArrayOp::Update { .. }
            | ArrayOp::Gather { .. }
            | ArrayOp::ScatterAdd { .. }
            | ArrayOp::Reduce { .. }
            | ArrayOp::ArgReduce { .. }
            | ArrayOp::Scan { .. }
            | ArrayOp::MatMul { .. }
            | ArrayOp::Transpose { .. }
            | ArrayOp::Stride { .. } => &[],
            ArrayOp::Broadcast { .. } => rules![shape::broadcast_same],
        },
        Expr::Tuple(_) => &[],
        Expr::Untuple(_) => rules![copy_prop::untuple_tuple],
        Expr::Lin(op) => match op {
            LinOp::Zero(_) => rules![shape::zero_dims],
            LinOp::Add(..) => rules![zeros::ladd_zero, algebra::ladd_lscale, algebra::ladd_dup],
            LinOp::Neg(_) => rules![zeros::lneg_zero, algebra::lneg_lneg],
            LinOp::Scale { .. } => rules![
                zeros::lscale_zero,
                algebra::lscale_one,
                algebra::lscale_lscale,
            ],
            LinOp::Dup(_) => rules![zeros::dup_zero, lin_broadcast::dup_lbroadcast],
            LinOp::Drop(_) => rules![zeros::drop_zero],
            LinOp::Tuple(_) => rules![zeros::ltuple_zero],
            LinOp::Untuple(_) => rules![zeros::luntuple_zero, copy_prop::untuple_tuple],
            LinOp::Index { .. } => rules![zeros::lindex_zero],
            LinOp::Update { .. } => rules![zeros::lupdate_zero],
            LinOp::Take { .. } => rules![zeros::ltake_zero],
            LinOp::Gather { .. } => rules![zeros::lgather_zero],
            LinOp::ScatterAdd { .. } => rules![zeros::lscatter_add_zero],
            LinOp::Sum { .. } => rules![zeros::lsum_zero],
            LinOp::Broadcast { .. } => {
                rules![zeros::lbroadcast_zero, lin_broadcast::lbroadcast_lbroadcast]
            }
            LinOp::SumTo { .. } => rules![zeros::lsum_to_zero],
            LinOp::Transpose(_) => rules![zeros::ltranspose_zero],
            LinOp::MatMul { .. } => rules![zeros::lmatmul_zero, lin_broadcast::lmatmul_lbroadcast],
            LinOp::Outer { .. } => rules![zeros::louter_zero],
            LinOp::Scan { .. } => rules![zeros::lscan_zero],
        },
        Expr::Call(_) => &[],
        Expr::If(_) => rules![fold_const::if_literal, zeros::zero_into_if],
        Expr::Loop(_) | Expr::Fold(_) | Expr::While(_) => &[],
        Expr::Build(_) => {
            if fuse {
                rules![fusion::build_of_index]
            } else {
                &[]
            }
        }
        Expr::Map(_) => {
            if fuse {
                rules![
                    zeros::lmap_zero_arg,
                    algebra::map_dup,
                    fusion::map_identity,
                    lin_broadcast::map_dup_halves,
                    lin_broadcast::map_lbroadcast
                ]
            } else {
                rules![
                    zeros::lmap_zero_arg,
                    algebra::map_dup,
                    lin_broadcast::map_dup_halves,
                    lin_broadcast::map_lbroadcast
                ]
            }
        }
    }
}
