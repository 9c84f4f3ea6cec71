//! Checking derivatives against the interpreter: the properties every pass is
//! tested on, as one reusable function.
//!
//! For a function `f`, arguments `x`, a random tangent `ẋ` and cotangent `ȳ`:
//! - *jvp vs finite differences*: `f__jvp(x ; ẋ).1 ≈ (f(x + hẋ) - f(x - hẋ)) / 2h`;
//! - *jvp primal*: `f__jvp(x ; ẋ).0` is bit-identical to `f(x)`;
//! - *unzip*: `f__fwd(x)` returns `f(x)` bit for bit, and
//!   `f__lin(r ; ẋ) = f__jvp(x ; ẋ).1`;
//! - *transpose*: `<ȳ, f__lin(r ; ẋ)> = <f__lin_t(r ; ȳ), ẋ>`;
//! - *work*: interpreter operation counts of `f`, `f__fwd`, `f__lin` and
//!   `f__lin_t`, and statement counts of `f` and `f__lin_t`.

use crate::driver::{differentiate, Derivatives, Options};
use crate::interp::{dot, run, run_counted, Value};
use crate::ir::*;
use crate::types::Ty;
use crate::visit::size_func;

/// Measurements of one derivative check.
#[derive(Clone, Debug)]
pub struct Report {
    /// Largest `|jvp - fd| / max(1, |jvp|)` over the tangent outputs.
    pub fd_rel_err: f64,
    /// As `fd_rel_err`, over the output components that finite differences
    /// resolve at this step: those whose second difference
    /// `|f(x+hẋ) - 2f(x) + f(x-hẋ)|` is at most a tenth of the first
    /// `|f(x+hẋ) - f(x-hẋ)|` (the function is close to linear over the
    /// step). A chaotic component (`sin` of a value of 1e26) or one with a
    /// jump inside the step is not resolved: its finite difference says
    /// nothing about the derivative. A wrong derivative of a smooth function
    /// still counts (its second difference is small).
    pub fd_rel_err_resolved: f64,
    /// Output components left out of `fd_rel_err_resolved`.
    pub fd_unresolved: usize,
    /// `f__jvp`'s primal results equal `f`'s bit for bit.
    pub jvp_primal_exact: bool,
    /// `f__fwd`'s primal results equal `f`'s bit for bit.
    pub fwd_primal_exact: bool,
    /// Largest `|lin - jvp|` over the tangent outputs.
    pub lin_vs_jvp: f64,
    /// `<ȳ, L ẋ>`.
    pub lhs: f64,
    /// `<Lᵀ ȳ, ẋ>`.
    pub rhs: f64,
    /// `|lhs - rhs| / max(1, |lhs|, |rhs|)`.
    pub dot_rel_err: f64,
    /// `f__vjp` ([`crate::vjp`]), where it was built: whether its primal
    /// results equal `f`'s and its cotangents `f__lin_t`'s (at the same `ȳ`)
    /// bit for bit. `None` without one.
    pub vjp_exact: Option<bool>,
    /// Operation counts: primal `f`, `f__fwd`, `f__lin`, `f__lin_t`.
    pub ops: [u64; 4],
    /// Statement counts of `f` and of `f__lin_t`.
    pub sizes: [usize; 2],
}

impl Report {
    /// `ops(f__lin_t) / ops(f)`.
    pub fn transpose_work_ratio(&self) -> f64 {
        self.ops[3] as f64 / self.ops[0].max(1) as f64
    }

    /// `(ops(f__fwd) + ops(f__lin_t)) / ops(f)`: the work of reverse mode
    /// (the primal with residuals, then the transpose) against the primal's.
    pub fn vjp_work_ratio(&self) -> f64 {
        (self.ops[1] + self.ops[3]) as f64 / self.ops[0].max(1) as f64
    }

    /// `size(f__lin_t) / size(f)`.
    pub fn transpose_size_ratio(&self) -> f64 {
        self.sizes[1] as f64 / self.sizes[0].max(1) as f64
    }
}

/// A small deterministic generator (SplitMix64) for test vectors.
#[derive(Clone, Debug)]
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[-1, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    }

    /// A random value shaped like `v` (linear-space parts random, others copied).
    pub fn like(&mut self, v: &Value) -> Value {
        match v {
            Value::F64(_) => Value::F64(self.unit()),
            Value::Tuple(vs) => Value::Tuple(vs.iter().map(|x| self.like(x)).collect()),
            Value::Array(a) => match v.as_f64s() {
                Some(xs) => {
                    Value::f64s(&a.shape, xs.iter().map(|_| self.unit()).collect::<Vec<_>>())
                }
                None => v.clone(),
            },
            other => other.clone(),
        }
    }
}

/// The tangent part of a value of type `ty` (dropping integer components).
fn tangent_part(v: &Value, ty: &Ty) -> Option<Value> {
    match (v, ty) {
        (_, t) if !t.is_differentiable() => None,
        (Value::Tuple(vs), Ty::Tuple(ts)) => Some(Value::Tuple(
            vs.iter()
                .zip(ts)
                .filter_map(|(x, t)| tangent_part(x, t))
                .collect(),
        )),
        _ => Some(v.clone()),
    }
}

/// Whether `a` and `b` hold the same values bit for bit, one by one.
pub fn same_bits(a: &[Value], b: &[Value]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(a, b)| a.bits_eq(b))
}

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// Differentiates `name` and checks all properties at `args` with random
/// directions drawn from `seed`. Tuple parameters are not perturbed for the
/// finite-difference check (they must not be in `wrt`).
pub fn check_derivatives(
    prog: &Program,
    name: &str,
    args: &[Value],
    wrt: &[bool],
    seed: u64,
    h: f64,
) -> Result<Report, String> {
    let d = differentiate(prog, name, wrt, &Options::default()).map_err(err)?;
    check_derived(prog, &d, name, args, wrt, seed, h)
}

/// The f64 components of a value in order (f64 scalars, f64 arrays,
/// tuples of these; other values have none).
fn floats(v: &Value) -> Vec<f64> {
    fn go(v: &Value, out: &mut Vec<f64>) {
        if let Some(x) = v.as_f64() {
            out.push(x);
        } else if let Some(xs) = v.as_f64s() {
            out.extend_from_slice(xs);
        } else if let Some(vs) = v.as_tuple() {
            vs.iter().for_each(|v| go(v, out));
        }
    }
    let mut out = vec![];
    go(v, &mut out);
    out
}

/// As [`check_derivatives`] with already derived functions.
pub fn check_derived(
    prog: &Program,
    d: &Derivatives,
    name: &str,
    args: &[Value],
    wrt: &[bool],
    seed: u64,
    h: f64,
) -> Result<Report, String> {
    let p = &d.program;
    let f = prog.func(name).ok_or("unknown function")?;
    let mut rng = Rng(seed);
    // Tangent directions of the differentiated parameters.
    let mut dx = vec![];
    let mut dirs: Vec<Option<Value>> = vec![];
    for (k, (a, &v)) in args.iter().zip(&f.params).enumerate() {
        let ty = f.vars.ty(v);
        if wrt.get(k).copied().unwrap_or(false) && ty.is_differentiable() {
            let t = rng.like(&tangent_part(a, ty).ok_or("no tangent")?);
            dx.push(t.clone());
            dirs.push(Some(t));
        } else {
            dirs.push(None);
        }
    }
    let ((y, _), ops_f) = run_counted(prog, name, args, &[]).map_err(err)?;
    let (yj, dyj) = run(p, &d.names.jvp, args, &dx).map_err(err)?;
    let jvp_primal_exact = same_bits(&y, &yj);
    // Central finite differences.
    let shifted = |s: f64| -> Result<Vec<Value>, String> {
        let xs: Vec<Value> = args
            .iter()
            .zip(&dirs)
            .map(|(a, dir)| match dir {
                Some(t) => a.add(&t.scale(s)),
                None => a.clone(),
            })
            .collect();
        Ok(run(prog, name, &xs, &[]).map_err(err)?.0)
    };
    let (yp, ym) = (shifted(h)?, shifted(-h)?);
    let mut fd_rel_err: f64 = 0.0;
    let (mut fd_rel_err_resolved, mut fd_unresolved) = (0.0f64, 0);
    let mut k = 0;
    for (((a, b), y0), r) in yp.iter().zip(&ym).zip(&y).zip(&f.body.results) {
        let ty = crate::typing::atom_ty(r, &f.vars);
        if !ty.is_differentiable() {
            continue;
        }
        let fd = a.add(&b.scale(-1.0)).scale(1.0 / (2.0 * h));
        let t = &dyj[k];
        let scale = 1.0f64.max(t.max_abs_diff(&t.zeros_like()));
        fd_rel_err = fd_rel_err.max(fd.max_abs_diff(t) / scale);
        let (fa, fb, f0, fdv, tv) = (floats(a), floats(b), floats(y0), floats(&fd), floats(t));
        for j in 0..tv.len().min(fdv.len()) {
            let first = (fa[j] - fb[j]).abs();
            let second = (fa[j] - 2.0 * f0[j] + fb[j]).abs();
            if second <= 0.1 * first || (second == 0.0 && first == 0.0) {
                fd_rel_err_resolved = fd_rel_err_resolved.max((fdv[j] - tv[j]).abs() / scale);
            } else {
                fd_unresolved += 1;
            }
        }
        k += 1;
    }
    // Unzip.
    let ((yr, _), ops_fwd) = run_counted(p, &d.names.fwd, args, &[]).map_err(err)?;
    let (ys, res) = yr.split_at(d.n_results);
    let fwd_primal_exact = same_bits(ys, &y);
    let ((_, dyl), ops_lin) = run_counted(p, &d.names.lin, res, &dx).map_err(err)?;
    let lin_vs_jvp = dyl
        .iter()
        .zip(&dyj)
        .map(|(a, b)| a.max_abs_diff(b))
        .fold(0.0, f64::max);
    // Transpose.
    let ybar: Vec<Value> = dyl.iter().map(|v| rng.like(v)).collect();
    let ((_, xbar), ops_t) = run_counted(p, &d.names.lin_t, res, &ybar).map_err(err)?;
    let lhs: f64 = ybar.iter().zip(&dyl).map(|(a, b)| dot(a, b)).sum();
    let rhs: f64 = xbar.iter().zip(&dx).map(|(a, b)| dot(a, b)).sum();
    let dot_rel_err = (lhs - rhs).abs() / 1.0f64.max(lhs.abs()).max(rhs.abs());
    let ft = p.func(&d.names.lin_t).ok_or("no transpose")?;
    let vjp_exact = match &d.vjp {
        Some(v) => {
            let (yv, xv) = run(p, v, args, &ybar).map_err(err)?;
            Some(same_bits(&yv, &y) && same_bits(&xv, &xbar))
        }
        None => None,
    };
    Ok(Report {
        fd_rel_err,
        fd_rel_err_resolved,
        fd_unresolved,
        jvp_primal_exact,
        fwd_primal_exact,
        lin_vs_jvp,
        lhs,
        rhs,
        dot_rel_err,
        vjp_exact,
        ops: [ops_f, ops_fwd, ops_lin, ops_t],
        sizes: [size_func(f), size_func(ft)],
    })
}
