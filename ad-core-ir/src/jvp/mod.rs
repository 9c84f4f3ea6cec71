//! Forward differentiation: from a non-linear function to a Linear A function
//! computing primal results and their tangents.
//!
//! `jvp(f) : (x ; dx) -> (f(x) ; ∂f(x)·dx)`. Every primal statement is kept (same
//! binders); after it come the statements of its tangent: non-linear partials
//! (`cos x`) as non-linear statements, the tangent itself as linear statements
//! (`lscale(cos x, dx)`). Compound statements (`if`, loops, builds, maps, calls)
//! become one mixed statement binding primal and tangent results.
//!
//! ```text
//! def f(x: f64, y: f64) -> f64 {        def f__jvp(x, y ; dx, dy) -> (f64 ; f64) {
//!   let a = mul x, y                      let a = mul x, y
//!   let s = sin x                         let ; da = ladd(lscale(y, dx1), lscale(x, dy))
//!   let r = add a, s                      let s = sin x ; let c = cos x
//!   return r                              let ; ds = lscale(c, dx2)
//! }                                       let r = add a, s ; let ; dr = ladd(da, ds)
//!                                         return (r ; dr) }
//! ```
//!
//! *Symbolic zeros.* A variable whose tangent is identically zero has no
//! tangent variable, and `lzero` is materialised only where a value is
//! required (the note in [`crate::simplify::zeros`]).
//!
//! Tangents are used freely while generating; [`crate::dupdrop`] then makes
//! sharing explicit. Folds are first lowered to loops ([`crate::normalize`]).
//! Loop state comes from an activity analysis (`activity.rs`): a state component
//! gets a tangent if its initial value or its update in the body has one, a
//! fixpoint over the body's def-use that differentiates nothing; the body is
//! then differentiated once.

mod activity;
mod array;
mod scalar;

use crate::build::FuncBuilder;
use crate::dupdrop::insert_dup_drop;
use crate::error::PassError;
use crate::fast_hash::FastMap;
use crate::ir::*;
use crate::names::Derived;
use crate::normalize::lower_folds;
use crate::types::Ty;

/// A JVP failure: a construct it cannot differentiate, or an input its
/// contract rules out (a non-linear function without folds).
pub type JvpError = PassError;

/// Differentiates every function of `prog` with respect to all its
/// differentiable parameters, callees first; returns `prog` plus the
/// `f__jvp` functions.
pub fn jvp_program(prog: &Program) -> Result<Program, JvpError> {
    let mut out = prog.clone();
    for f in &prog.funcs {
        let wrt = vec![true; f.params.len()];
        let d = jvp_func(&out, f, &wrt)?;
        out.insert(d);
    }
    Ok(out)
}

/// Differentiates `f` with respect to the parameters flagged in `wrt`
/// (parameters without a tangent type are never differentiated). The result
/// `f__jvp(params ; tangents of the wrt params) -> (results ; tangents of the
/// differentiable results)` is Linear A. Callees must already have their
/// `__jvp` versions (differentiated with respect to all parameters) in `prog`.
///
/// This is three steps, which the driver runs (and checks) one by one:
/// folds lowered to loops ([`lower_folds`]), the JVP rules
/// ([`jvp_func_raw`]) and sharing made explicit ([`insert_dup_drop`]).
pub fn jvp_func(prog: &Program, f: &Func, wrt: &[bool]) -> Result<Func, JvpError> {
    let mut out = jvp_func_raw(prog, &lower_folds(f), wrt)?;
    insert_dup_drop(&mut out);
    Ok(out)
}

/// The JVP rules of [`jvp_func`] on a function without folds
/// ([`crate::normalize`]; a fold is an internal error). The output reads
/// tangents freely: a linear variable may be read several times or never,
/// so it is Linear A only after [`crate::dupdrop`] has made sharing
/// explicit.
pub fn jvp_func_raw(prog: &Program, f: &Func, wrt: &[bool]) -> Result<Func, JvpError> {
    let mut j = Jvp {
        b: FuncBuilder::with_vars(prog, Derived::Jvp.of(&f.name), f.vars.clone()),
        tan: FastMap::default(),
    };
    for (k, &p) in f.params.iter().enumerate() {
        j.b.add_param(p);
        let ty = f.vars.ty(p).clone();
        if !wrt.get(k).copied().unwrap_or(false) {
            continue;
        }
        if let Some(tt) = ty.tangent() {
            let shape = param_shape(&f.vars, p)?;
            let name = format!("d{}", f.vars.info(p).name);
            let dp = j.b.fresh_lin(&name, tt);
            j.b.add_lin_param(dp, shape);
            j.tan.insert(p, dp);
        }
    }
    for s in &f.body.stmts {
        j.stmt(s)?;
    }
    let mut lin_results = vec![];
    for a in &f.body.results {
        if j.b.atom_ty(a).is_differentiable() {
            lin_results.push(j.tan_or_zero(a)?);
        }
    }
    Ok(j.b.finish(f.body.results.clone(), lin_results))
}

/// The shape of a parameter's tangent, in terms of the parameter.
fn param_shape(vars: &VarTable, p: Var) -> Result<ShapeTree, JvpError> {
    match vars.ty(p) {
        Ty::Scalar(_) => Ok(ShapeTree::Scalar),
        Ty::Opaque(_) => Err(JvpError::internal(
            "internal: the tangent of an opaque parameter",
            None,
        )),
        Ty::Array { rank, .. } => Ok(ShapeTree::Array(
            (0..*rank).map(|k| Dim::Of(p, k)).collect(),
        )),
        Ty::Tuple(ts) => {
            let mut parts = vec![];
            for t in ts.iter().filter(|t| t.is_differentiable()) {
                match t {
                    Ty::Scalar(_) => parts.push(ShapeTree::Scalar),
                    _ => {
                        return Err(JvpError::unsupported(
                            format!("a tuple parameter containing {t} cannot be differentiated yet: pass the array as its own parameter"),
                            None,
                        ))
                    }
                }
            }
            Ok(ShapeTree::Tuple(parts))
        }
    }
}

/// The JVP state: the builder of the output function and the tangent of each
/// primal variable that has a non-zero one.
#[derive(Clone)]
pub(crate) struct Jvp<'p> {
    pub(crate) b: FuncBuilder<'p>,
    pub(crate) tan: FastMap<Var, Var>,
}

impl<'p> Jvp<'p> {
    /// The tangent of an atom, `None` when it is zero.
    pub(crate) fn tan_of(&self, a: &Atom) -> Option<Var> {
        a.var().and_then(|v| self.tan.get(&v).copied())
    }

    /// The shape tree of a differentiable atom's tangent (emits untuples for
    /// tuples).
    pub(crate) fn shape_of(&mut self, a: &Atom) -> Result<ShapeTree, JvpError> {
        let ty = self.b.atom_ty(a);
        match (&ty, a) {
            (Ty::Scalar(_), _) => Ok(ShapeTree::Scalar),
            (Ty::Array { rank, .. }, Atom::Var(v)) => Ok(ShapeTree::Array(
                (0..*rank).map(|k| Dim::Of(*v, k)).collect(),
            )),
            (Ty::Tuple(ts), Atom::Var(_)) => {
                let (parts, _) = self.b.emit(Expr::Untuple(*a));
                let mut shapes = vec![];
                for (p, t) in parts.iter().zip(ts) {
                    if t.is_differentiable() {
                        shapes.push(self.shape_of(&Atom::Var(*p))?);
                    }
                }
                Ok(ShapeTree::Tuple(shapes))
            }
            _ => Err(JvpError::internal(format!("no shape for {a:?}"), None)),
        }
    }

    /// The tangent of an atom, materialising a zero when it has none.
    pub(crate) fn tan_or_zero(&mut self, a: &Atom) -> Result<Var, JvpError> {
        if let Some(t) = self.tan_of(a) {
            return Ok(t);
        }
        let s = self.shape_of(a)?;
        Ok(self.b.lin(LinOp::Zero(s)))
    }

    /// Emits a linear op with one result.
    pub(crate) fn lin(&mut self, op: LinOp) -> Var {
        self.b.lin(op)
    }

    /// `x + y` over optional (symbolically zero) tangents.
    pub(crate) fn ladd(&mut self, x: Option<Var>, y: Option<Var>) -> Option<Var> {
        match (x, y) {
            (Some(x), Some(y)) => Some(self.lin(LinOp::Add(x, y))),
            (x, None) => x,
            (None, y) => y,
        }
    }

    /// `s * x` over an optional tangent.
    pub(crate) fn lscale(&mut self, s: Atom, x: Option<Var>) -> Option<Var> {
        x.map(|x| self.lin(LinOp::Scale { s, x }))
    }

    /// A non-linear primitive, as an atom.
    pub(crate) fn nl(&mut self, p: Prim, args: &[Atom]) -> Atom {
        Atom::Var(self.b.prim(p, args))
    }

    /// Differentiates one statement, emitting the primal and its tangent.
    fn stmt(&mut self, s: &Stmt) -> Result<(), JvpError> {
        self.b.set_src(s.src);
        match &s.expr {
            Expr::Atom(a) => {
                self.b.push(s.clone());
                if let Some(t) = self.tan_of(a) {
                    self.tan.insert(s.binds[0], t);
                }
            }
            Expr::Prim(p, args) => {
                self.b.push(s.clone());
                let y = s.binds[0];
                if self.b.ty(y).is_differentiable() {
                    let dargs: Vec<Option<Var>> = args.iter().map(|a| self.tan_of(a)).collect();
                    if dargs.iter().any(Option::is_some) {
                        if let Some(t) = self.prim_jvp(*p, args, y, &dargs) {
                            self.tan.insert(y, t);
                        }
                    }
                }
            }
            Expr::Array(op) => {
                self.b.push(s.clone());
                if let Some(t) = self.array_jvp(op, &s.binds)? {
                    self.tan.insert(s.binds[0], t);
                }
            }
            Expr::Tuple(xs) => {
                self.b.push(s.clone());
                let diff: Vec<&Atom> = xs
                    .iter()
                    .filter(|a| self.b.atom_ty(a).is_differentiable())
                    .collect();
                if diff.iter().any(|a| self.tan_of(a).is_some()) {
                    let mut parts = vec![];
                    for a in diff {
                        parts.push(self.tan_or_zero(a)?);
                    }
                    let t = self.lin(LinOp::Tuple(parts));
                    self.tan.insert(s.binds[0], t);
                }
            }
            Expr::Untuple(x) => {
                self.b.push(s.clone());
                if let Some(t) = self.tan_of(x) {
                    let (_, parts) = self.b.emit(Expr::Lin(LinOp::Untuple(t)));
                    let diff: Vec<Var> = s
                        .binds
                        .iter()
                        .copied()
                        .filter(|v| self.b.ty(*v).is_differentiable())
                        .collect();
                    for (v, d) in diff.into_iter().zip(parts) {
                        self.tan.insert(v, d);
                    }
                }
            }
            Expr::Lin(_) => {
                return Err(JvpError::internal(
                    "jvp of a linear statement: the input must be non-linear",
                    s.src,
                ))
            }
            Expr::Fold(_) => {
                return Err(JvpError::internal(
                    "internal: fold not lowered before jvp",
                    s.src,
                ))
            }
            // A trip count (an i64, no tangent): the primal statement as is.
            Expr::While(_) => self.b.push(s.clone()),
            Expr::Call(c) => self.call(s, c)?,
            Expr::If(i) => self.if_(s, i)?,
            Expr::Loop(l) => self.loop_(s, l)?,
            Expr::Build(bd) => self.build(s, bd)?,
            Expr::Map(m) => self.map(s, m)?,
        }
        Ok(())
    }

    /// `call f(x)` becomes `call f__jvp(x ; dx)` when any argument has a tangent.
    fn call(&mut self, s: &Stmt, c: &Call) -> Result<(), JvpError> {
        if !c.lin_args.is_empty() {
            return Err(JvpError::internal(
                "jvp of a call with linear arguments",
                s.src,
            ));
        }
        let diff_args: Vec<Atom> = c
            .args
            .iter()
            .copied()
            .filter(|a| self.b.atom_ty(a).is_differentiable())
            .collect();
        if diff_args.iter().all(|a| self.tan_of(a).is_none()) {
            self.b.push(s.clone());
            return Ok(());
        }
        if self.linear_call(s, c)? {
            return Ok(());
        }
        if self.restricted_call(s, c)? {
            return Ok(());
        }
        let mut lin_args = vec![];
        for a in &diff_args {
            lin_args.push(self.tan_or_zero(a)?);
        }
        self.derivative_call(s, c, Derived::Jvp.of(&c.func), lin_args)
    }

    /// `y ; dy = name(x ; lin_args)` in place of the call `s` of `c`: the
    /// derivative `name` (which must be declared) of the callee, with fresh
    /// tangents of the differentiable results.
    fn derivative_call(
        &mut self,
        s: &Stmt,
        c: &Call,
        name: String,
        lin_args: Vec<Var>,
    ) -> Result<(), JvpError> {
        if self.b.program().func(&name).is_none() {
            return Err(JvpError::internal(
                format!("internal: `{name}` is not in the program (differentiate callees first)"),
                s.src,
            ));
        }
        let (lin_binds, lin_shapes) = self.result_tangents(s)?;
        self.b.push(Stmt {
            binds: s.binds.clone(),
            lin_binds,
            expr: Expr::Call(Call {
                func: name,
                args: c.args.clone(),
                lin_args,
                lin_shapes,
            }),
            src: s.src,
        });
        Ok(())
    }

    /// A call `y = g(a, x)` of an extern declared linear in `x` where no
    /// argument outside `x` has a tangent: `dy = g(a, dx)` (the equation of
    /// linearity), so the primal call stays and the tangent is
    /// `(; dy) = g__linear(a ; dx)`, `g` itself, whose transpose is the
    /// user's `g_transpose`: no linearisation of `g`. Returns whether it
    /// applied (otherwise the general `g__jvp` rule follows).
    fn linear_call(&mut self, s: &Stmt, c: &Call) -> Result<bool, JvpError> {
        let Some(linear) = self.b.program().linear_in(&c.func).map(<[bool]>::to_vec) else {
            return Ok(false);
        };
        if linear.len() != c.args.len()
            || c.args
                .iter()
                .zip(&linear)
                .any(|(a, l)| !l && self.tan_of(a).is_some())
        {
            return Ok(false);
        }
        let name = Derived::Linear.of(&c.func);
        if self.b.program().func(&name).is_none() {
            return Err(JvpError::internal(
                format!("internal: `{name}` is not declared with the linear extern"),
                s.src,
            ));
        }
        let mut args = vec![];
        let mut lin_args = vec![];
        for (a, l) in c.args.iter().zip(&linear) {
            if *l {
                lin_args.push(self.tan_or_zero(a)?);
            } else {
                args.push(*a);
            }
        }
        let (lin_binds, lin_shapes) = self.result_tangents(s)?;
        self.b.push(s.clone());
        self.b.push(Stmt {
            binds: vec![],
            lin_binds,
            expr: Expr::Call(Call {
                func: name,
                args,
                lin_args,
                lin_shapes,
            }),
            src: s.src,
        });
        Ok(true)
    }

    /// A call `y = g(x)` of an extern that also has derivatives with
    /// respect to some parameters alone (`Program::wrt_externs`), where no
    /// other argument has a tangent: `y ; dy = g__w__jvp(x ; dx_w)`, the
    /// tangents of the flagged arguments only, so `g`'s derivative does no
    /// work for its constant arguments (and no zero tangents of them are
    /// made). The same tangent as the general rule, whose contributions of
    /// the other arguments are zero. Returns whether it applied.
    fn restricted_call(&mut self, s: &Stmt, c: &Call) -> Result<bool, JvpError> {
        let Some(wrt) = self.b.program().wrt_in(&c.func).map(<[bool]>::to_vec) else {
            return Ok(false);
        };
        if wrt.len() != c.args.len()
            || c.args
                .iter()
                .zip(&wrt)
                .any(|(a, w)| !w && self.tan_of(a).is_some())
        {
            return Ok(false);
        }
        let mut lin_args = vec![];
        for (a, w) in c.args.iter().zip(&wrt) {
            if *w && self.b.atom_ty(a).is_differentiable() {
                lin_args.push(self.tan_or_zero(a)?);
            }
        }
        let name = Derived::Jvp.of(&Derived::Restricted.of(&c.func));
        self.derivative_call(s, c, name, lin_args)?;
        Ok(true)
    }

    /// Fresh tangents (and their shapes) for the differentiable results of
    /// the call `s`, recorded as those results' tangents: the linear
    /// results of the derivative call that replaces it.
    fn result_tangents(&mut self, s: &Stmt) -> Result<(Vec<Var>, Vec<ShapeTree>), JvpError> {
        let mut lin_binds = vec![];
        let mut lin_shapes = vec![];
        for &y in &s.binds {
            let t = self.b.ty(y).clone();
            if let Some(tt) = t.tangent() {
                lin_shapes.push(self.result_shape(y, s.src)?);
                let d = self.b.fresh_lin("dcall", tt);
                self.tan.insert(y, d);
                lin_binds.push(d);
            }
        }
        Ok((lin_binds, lin_shapes))
    }

    /// The shape of the tangent of a result `y` bound by the statement being
    /// differentiated (a `Dim::Of(y, _)` tree; tuples of arrays unsupported).
    fn result_shape(&self, y: Var, src: Option<SrcId>) -> Result<ShapeTree, JvpError> {
        match self.b.ty(y) {
            Ty::Scalar(_) => Ok(ShapeTree::Scalar),
            Ty::Opaque(_) => Err(JvpError::internal(
                "internal: the tangent of an opaque result",
                src,
            )),
            Ty::Array { rank, .. } => Ok(ShapeTree::Array(
                (0..*rank).map(|k| Dim::Of(y, k)).collect(),
            )),
            Ty::Tuple(ts) => {
                let mut parts = vec![];
                for t in ts.iter().filter(|t| t.is_differentiable()) {
                    if t.rank() != Some(0) {
                        return Err(JvpError::unsupported("a tuple result containing arrays cannot be differentiated yet: return the arrays separately", src));
                    }
                    parts.push(ShapeTree::Scalar);
                }
                Ok(ShapeTree::Tuple(parts))
            }
        }
    }

    /// Differentiates the statements of a block into the builder's open block
    /// and returns the tangents (symbolic) of its non-linear results.
    fn block_stmts(&mut self, b: &Block) -> Result<Vec<Option<Var>>, JvpError> {
        for s in &b.stmts {
            self.stmt(s)?;
        }
        Ok(b.results.iter().map(|a| self.tan_of(a)).collect())
    }

    /// Materialises a zero tangent for result atom `a` (which has none) at the
    /// end of an already closed block.
    fn append_zero(&mut self, blk: &mut Block, a: &Atom) -> Result<Var, JvpError> {
        self.b.open();
        for st in blk.stmts.drain(..) {
            self.b.push(st);
        }
        let zv = self.tan_or_zero(a)?;
        blk.stmts = self.b.close(vec![], vec![]).stmts;
        Ok(zv)
    }

    /// `if c {A} else {B}`: both branches differentiated; a result has a tangent
    /// when either branch gives it one (the other then returns a zero).
    fn if_(&mut self, s: &Stmt, i: &If) -> Result<(), JvpError> {
        self.b.open();
        let tt = self.block_stmts(&i.then_)?;
        let mut then_ = self.b.close(i.then_.results.clone(), vec![]);
        self.b.open();
        let te = self.block_stmts(&i.else_)?;
        let mut else_ = self.b.close(i.else_.results.clone(), vec![]);
        let mut lin_binds = vec![];
        let mut lin_shapes = vec![];
        for (k, &y) in s.binds.iter().enumerate() {
            if tt[k].is_none() && te[k].is_none() {
                continue;
            }
            let t1 = match tt[k] {
                Some(t) => t,
                None => self.append_zero(&mut then_, &i.then_.results[k])?,
            };
            let t2 = match te[k] {
                Some(t) => t,
                None => self.append_zero(&mut else_, &i.else_.results[k])?,
            };
            then_.lin_results.push(t1);
            else_.lin_results.push(t2);
            lin_shapes.push(self.result_shape(y, s.src)?);
            let d = self
                .b
                .fresh_lin("dif", self.b.ty(y).tangent().expect("has a tangent"));
            self.tan.insert(y, d);
            lin_binds.push(d);
        }
        self.b.push(Stmt {
            binds: s.binds.clone(),
            lin_binds,
            expr: Expr::If(If {
                cond: i.cond,
                then_,
                else_,
                lin_shapes,
            }),
            src: s.src,
        });
        Ok(())
    }

    /// Counted loops carry `(state ; dstate)`. The active state (with a
    /// tangent) is found by the activity analysis: start from the state whose
    /// initial value has a tangent, add state whose update in the body gets
    /// one, repeat; then the body is differentiated once.
    fn loop_(&mut self, s: &Stmt, l: &Loop) -> Result<(), JvpError> {
        if !l.lin_init.is_empty() || !l.body.lin_params.is_empty() {
            return Err(JvpError::internal("jvp of a loop with linear state", s.src));
        }
        let k = l.init.len();
        let state = &l.body.params[1..];
        let active = activity::Activity::new(&self.b, &self.tan).loop_state(l);
        let mut lin_init = vec![];
        for (a, _) in l.init.iter().zip(&active).filter(|(_, on)| **on) {
            lin_init.push(self.tan_or_zero(a)?);
        }
        let (res, body) = self.loop_body(l, state, &active)?;
        let mut lin_binds = vec![];
        for (j, _) in active.iter().enumerate().filter(|(_, on)| **on) {
            {
                let tt = self
                    .b
                    .ty(s.binds[j])
                    .tangent()
                    .expect("active state is differentiable");
                let d = self.b.fresh_lin("dstate", tt);
                self.tan.insert(s.binds[j], d);
                lin_binds.push(d);
            }
        }
        // Stacked linear outputs: the per-iteration outputs with a tangent.
        let ys = self.stacked_tangents(&s.binds[k..], &res[k..]);
        lin_binds.extend(ys);
        self.b.push(Stmt {
            binds: s.binds.clone(),
            lin_binds,
            expr: Expr::Loop(Loop {
                n: l.n,
                rev: l.rev,
                init: l.init.clone(),
                lin_init,
                body,
            }),
            src: s.src,
        });
        Ok(())
    }

    /// Differentiates a loop body for a given active state; returns the
    /// tangents of the state updates (before materialising zeros) and the lambda.
    fn loop_body(
        &mut self,
        l: &Loop,
        state: &[Var],
        active: &[bool],
    ) -> Result<(Vec<Option<Var>>, Lambda), JvpError> {
        let k = state.len();
        let mut lin_params = vec![];
        for j in 0..k {
            if active[j] {
                let tt = self
                    .b
                    .ty(state[j])
                    .tangent()
                    .expect("active state is differentiable");
                let d = self.b.fresh_lin("dstate", tt);
                self.tan.insert(state[j], d);
                lin_params.push(d);
            } else {
                self.tan.remove(&state[j]);
            }
        }
        self.b.open();
        let res = self.block_stmts(&l.body.body)?;
        let mut lin_results = vec![];
        for (r, _) in l
            .body
            .body
            .results
            .iter()
            .zip(active)
            .filter(|(_, on)| **on)
        {
            lin_results.push(self.tan_or_zero(r)?);
        }
        lin_results.extend(res[k..].iter().flatten());
        let body = self.b.close(l.body.body.results.clone(), lin_results);
        Ok((
            res,
            Lambda {
                params: l.body.params.clone(),
                lin_params,
                body,
            },
        ))
    }

    /// `build(shape, |i| body)`: the body is differentiated; element results
    /// with tangents become stacked linear results.
    fn build(&mut self, s: &Stmt, bd: &Build) -> Result<(), JvpError> {
        self.b.open();
        let res = self.block_stmts(&bd.body.body)?;
        let lin_results: Vec<Var> = res.iter().flatten().copied().collect();
        let body = self.b.close(bd.body.body.results.clone(), lin_results);
        let lin_binds = self.stacked_tangents(&s.binds, &res);
        self.b.push(Stmt {
            binds: s.binds.clone(),
            lin_binds,
            expr: Expr::Build(Build {
                shape: bd.shape.clone(),
                body: Lambda {
                    params: bd.body.params.clone(),
                    lin_params: vec![],
                    body,
                },
            }),
            src: s.src,
        });
        Ok(())
    }

    /// Fresh tangents for the stacked results whose elements have tangents.
    fn stacked_tangents(&mut self, binds: &[Var], res: &[Option<Var>]) -> Vec<Var> {
        let mut lin_binds = vec![];
        for (y, r) in binds.iter().zip(res) {
            if r.is_some() {
                let tt = self.b.ty(*y).tangent().expect("differentiable");
                let d = self.b.fresh_lin("dmap", tt);
                self.tan.insert(*y, d);
                lin_binds.push(d);
            }
        }
        lin_binds
    }

    /// `map(f, xs)` becomes `map(f', xs ; dxs)` over the arrays with tangents.
    fn map(&mut self, s: &Stmt, m: &Map) -> Result<(), JvpError> {
        if !m.lin_arrs.is_empty() {
            return Err(JvpError::internal("jvp of a map over linear arrays", s.src));
        }
        let mut lin_arrs = vec![];
        let mut lin_params = vec![];
        for (a, p) in m.arrs.iter().zip(&m.body.params) {
            match self.tan_of(a) {
                Some(t) if self.b.ty(*p).is_differentiable() => {
                    lin_arrs.push(t);
                    let d = self.b.fresh_lin("dx", Ty::F64);
                    self.tan.insert(*p, d);
                    lin_params.push(d);
                }
                _ => {
                    self.tan.remove(p);
                }
            }
        }
        self.b.open();
        let res = self.block_stmts(&m.body.body)?;
        let lin_results: Vec<Var> = res.iter().flatten().copied().collect();
        let body = self.b.close(m.body.body.results.clone(), lin_results);
        let lin_binds = self.stacked_tangents(&s.binds, &res);
        self.b.push(Stmt {
            binds: s.binds.clone(),
            lin_binds,
            expr: Expr::Map(Map {
                arrs: m.arrs.clone(),
                lin_arrs,
                body: Lambda {
                    params: m.body.params.clone(),
                    lin_params,
                    body,
                },
            }),
            src: s.src,
        });
        Ok(())
    }
}
