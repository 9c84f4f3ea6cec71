//! Case assembly: a program from choice streams (helpers, then the entry),
//! the parameters to differentiate and the argument values.

use super::bounds::{HELPER, K, PARAM};
use super::choices::{ChoiceStrategy, Choices, Src};
use super::config::GenConfig;
use super::generator::{Env, Gen, HelperSig};
use ad_core_ir::build::FuncBuilder;
use ad_core_ir::interp::Value;
use ad_core_ir::ir::*;
use ad_core_ir::pretty::program_to_string;
use ad_core_ir::testing::Rng;
use ad_core_ir::types::Ty;
use proptest::strategy::Strategy;
use std::collections::HashSet;
use std::fmt;

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
