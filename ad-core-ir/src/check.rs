//! The checker: types, scoping and the linear discipline of Linear A / Linear B.
//!
//! Rules (each violation is a [`CheckError`] naming the variable and carrying the
//! source id of the offending statement):
//! 1. *Scoping.* Every variable is bound exactly once in the function and read
//!    only where its binder is in scope (earlier in the same block or in an
//!    enclosing block; lambda parameters inside the lambda).
//! 2. *Kinds.* Binders in non-linear positions are non-linear variables, binders
//!    in linear positions are linear variables; every non-linear operand (an
//!    [`Atom`] position: primitive operands, indices, conditions, trip counts,
//!    scale factors, sizes) is a non-linear variable or literal. So `sin(dx)`,
//!    `dx * dy`, `dx + 1.0`, branching on a linear value, and any non-linear
//!    result computed from a linear value are rejected.
//! 3. *Types.* Every statement's binders have the types [`crate::typing`] gives.
//! 4. *Linearity.* Every linear variable is consumed exactly once: by one
//!    operand position, one block result, or by being captured by one compound
//!    statement. A nested block that reads a linear variable of an enclosing
//!    scope consumes it exactly once per execution; both branches of an `If`
//!    must consume the same captured linear variables. Sharing is explicit
//!    ([`LinOp::Dup`]), so is discarding ([`LinOp::Drop`]).
//! 5. *Linear B* (mode [`Mode::LinearB`], after unzip): no statement both binds
//!    non-linear results and binds or consumes linear values.

use crate::fast_hash::FastSet;
use crate::ir::*;
use crate::types::Ty;
use crate::typing::{atom_ty, expr_types};
use crate::visit::for_each_operand;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// Which discipline to check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Statements may mix non-linear and linear results (JVP output).
    LinearA,
    /// Every statement is all non-linear or all linear (unzip and transpose output).
    LinearB,
}

/// A checker error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckError {
    /// The function.
    pub func: String,
    /// What is wrong, naming the variable.
    pub msg: String,
    /// The variable concerned, if one.
    pub var: Option<Var>,
    /// The statement's source id, if known.
    pub src: Option<SrcId>,
}

impl fmt::Display for CheckError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "in `{}`: {}", self.func, self.msg)?;
        if let Some(s) = self.src {
            write!(f, " (source #{})", s.0)?;
        }
        Ok(())
    }
}

impl std::error::Error for CheckError {}

/// Checks every function of a program.
pub fn check_program(prog: &Program, mode: Mode) -> Result<(), Vec<CheckError>> {
    let mut errs = vec![];
    let mut seen = FastSet::default();
    for f in &prog.funcs {
        if !seen.insert(f.name.as_str()) {
            errs.push(CheckError {
                func: f.name.clone(),
                msg: format!("function `{}` is defined twice", f.name),
                var: None,
                src: None,
            });
        }
        if let Err(e) = check_func(prog, f, mode) {
            errs.extend(e);
        }
    }
    if errs.is_empty() {
        Ok(())
    } else {
        Err(errs)
    }
}

/// Checks one function; `prog` supplies callee signatures.
pub fn check_func(prog: &Program, f: &Func, mode: Mode) -> Result<(), Vec<CheckError>> {
    let mut c = Checker {
        prog,
        f,
        mode,
        errs: vec![],
        bound: vec![false; f.vars.len()],
        depth: vec![0; f.vars.len()],
        scope: vec![],
        src: None,
    };
    c.check_func();
    if c.errs.is_empty() {
        Ok(())
    } else {
        Err(c.errs)
    }
}

/// The printed name of a variable: `name_index`.
pub fn var_name(vars: &VarTable, v: Var) -> String {
    match vars.vars.get(v.0 as usize) {
        Some(i) => format!("{}_{}", i.name, v.0),
        None => format!("?{}", v.0),
    }
}

struct Checker<'a> {
    prog: &'a Program,
    f: &'a Func,
    mode: Mode,
    errs: Vec<CheckError>,
    /// Whether each variable has been bound somewhere already (single binding).
    bound: Vec<bool>,
    /// The depth of the scope binding each variable in scope (1 for the
    /// function's), 0 for one out of scope: a vector indexed by the
    /// variable, asked at every operand.
    depth: Vec<u32>,
    /// The variables each open scope binds, innermost scope last.
    scope: Vec<Vec<Var>>,
    src: Option<SrcId>,
}

/// Linear variables consumed by a block or statement, with counts.
type Uses = BTreeMap<Var, usize>;

impl<'a> Checker<'a> {
    fn name(&self, v: Var) -> String {
        var_name(&self.f.vars, v)
    }

    fn err(&mut self, var: Option<Var>, msg: String) {
        self.errs.push(CheckError {
            func: self.f.name.clone(),
            msg,
            var,
            src: self.src,
        });
    }

    fn exists(&mut self, v: Var) -> bool {
        if (v.0 as usize) < self.f.vars.len() {
            true
        } else {
            self.err(
                Some(v),
                format!("variable %{} is not in the variable table", v.0),
            );
            false
        }
    }

    fn in_scope(&self, v: Var) -> bool {
        self.depth[v.0 as usize] != 0
    }

    /// Opens a scope.
    fn open(&mut self) {
        self.scope.push(vec![]);
    }

    /// Closes the innermost scope: its variables go out of scope.
    fn close(&mut self) {
        for v in self.scope.pop().expect("a scope") {
            self.depth[v.0 as usize] = 0;
        }
    }

    fn bind(&mut self, v: Var, linear: bool) {
        if !self.exists(v) {
            return;
        }
        if self.bound[v.0 as usize] {
            let n = self.name(v);
            self.err(Some(v), format!("variable `{n}` is bound more than once"));
        }
        self.bound[v.0 as usize] = true;
        if self.f.vars.is_linear(v) != linear {
            let n = self.name(v);
            let msg = if linear {
                format!("`{n}` is bound in a linear position but is a non-linear variable")
            } else {
                format!("`{n}` is bound in a non-linear position but is a linear variable")
            };
            self.err(Some(v), msg);
        }
        // A variable bound twice stays with its first scope.
        if self.depth[v.0 as usize] == 0 {
            self.depth[v.0 as usize] = self.scope.len() as u32;
            self.scope.last_mut().expect("a scope").push(v);
        }
    }

    /// Checks a non-linear operand.
    fn use_nl(&mut self, a: &Atom, what: &str) {
        if let Atom::Var(v) = a {
            if !self.exists(*v) {
                return;
            }
            if !self.in_scope(*v) {
                let n = self.name(*v);
                self.err(Some(*v), format!("`{n}` is used out of scope ({what})"));
            } else if self.f.vars.is_linear(*v) {
                let n = self.name(*v);
                self.err(
                    Some(*v),
                    format!("linear variable `{n}` is used as a non-linear operand of {what}: a non-linear operation cannot be applied to a linear value"),
                );
            }
        }
    }

    /// Records a linear use.
    fn use_lin(&mut self, v: Var, uses: &mut Uses, what: &str) {
        if !self.exists(v) {
            return;
        }
        if !self.in_scope(v) {
            let n = self.name(v);
            self.err(Some(v), format!("`{n}` is used out of scope ({what})"));
            return;
        }
        if !self.f.vars.is_linear(v) {
            let n = self.name(v);
            self.err(
                Some(v),
                format!("non-linear variable `{n}` is used in a linear position of {what}"),
            );
            return;
        }
        *uses.entry(v).or_insert(0) += 1;
    }

    fn check_func(&mut self) {
        let f = self.f;
        self.open();
        for &p in &f.params {
            self.bind(p, false);
        }
        for &p in &f.lin_params {
            self.bind(p, true);
        }
        if !f.lin_param_shapes.is_empty() && f.lin_param_shapes.len() != f.lin_params.len() {
            self.err(
                None,
                format!(
                    "{} linear parameter shapes for {} linear parameters",
                    f.lin_param_shapes.len(),
                    f.lin_params.len()
                ),
            );
        }
        for s in &f.lin_param_shapes {
            self.check_shape(s, "a linear parameter's shape");
        }
        let mut own: Vec<Var> = f.lin_params.clone();
        own.sort_unstable();
        own.dedup();
        let uses = self.check_block_inner(&f.body);
        self.settle(&own, &uses, "the function body");
        self.close();
    }

    fn check_shape(&mut self, s: &ShapeTree, what: &str) {
        match s {
            ShapeTree::Scalar => {}
            ShapeTree::Array(ds) => {
                for d in ds {
                    match d {
                        Dim::Atom(a) => {
                            self.use_nl(a, what);
                            if atom_ty(a, &self.f.vars) != Ty::I64 {
                                self.err(a.var(), format!("a size in {what} must be i64"));
                            }
                        }
                        Dim::Of(v, axis) => {
                            self.use_nl(&Atom::Var(*v), what);
                            match self.f.vars.vars.get(v.0 as usize).map(|i| i.ty.rank()) {
                                Some(Some(r)) if *axis < r => {}
                                _ => {
                                    let n = self.name(*v);
                                    self.err(Some(*v), format!("shape({n}, {axis}) in {what} is not a size of an array"));
                                }
                            }
                        }
                    }
                }
            }
            ShapeTree::Tuple(ts) => ts.iter().for_each(|t| self.check_shape(t, what)),
        }
    }

    /// Verifies that each of `own` (linear variables bound in a scope) is used
    /// exactly once according to `uses`.
    fn settle(&mut self, own: &[Var], uses: &Uses, where_: &str) {
        for &v in own {
            match uses.get(&v).copied().unwrap_or(0) {
                1 => {}
                0 => {
                    let n = self.name(v);
                    self.err(
                        Some(v),
                        format!(
                            "linear variable `{n}` is never used in {where_} (drop it explicitly)"
                        ),
                    );
                }
                k => {
                    let n = self.name(v);
                    self.err(Some(v), format!("linear variable `{n}` is used {k} times in {where_} (duplicate it explicitly)"));
                }
            }
        }
    }

    /// Checks a block in a fresh scope; returns the enclosing-scope linear
    /// variables it consumes (each once, else an error is reported).
    fn check_block(
        &mut self,
        b: &Block,
        params: &[Var],
        lin_params: &[Var],
        where_: &str,
    ) -> BTreeSet<Var> {
        self.open();
        for &p in params {
            self.bind(p, false);
        }
        for &p in lin_params {
            self.bind(p, true);
        }
        let uses = self.check_block_inner(b);
        let level = self.scope.len() as u32;
        let mut own: Vec<Var> = self
            .scope
            .last()
            .expect("scope")
            .iter()
            .copied()
            .filter(|v| self.f.vars.is_linear(*v))
            .collect();
        own.sort_unstable();
        self.settle(&own, &uses, where_);
        // Before the scope closes: its own variables are those at its depth.
        let local = |c: &Self, v: Var| c.depth.get(v.0 as usize) == Some(&level);
        let mut outer = BTreeSet::new();
        for (v, k) in uses {
            if local(self, v) {
                continue;
            }
            if k > 1 {
                let n = self.name(v);
                self.err(Some(v), format!("linear variable `{n}` is used {k} times in {where_} (duplicate it explicitly)"));
            }
            outer.insert(v);
        }
        self.close();
        outer
    }

    /// Checks the statements and results of a block in the current scope;
    /// returns all linear uses (own and captured), with counts.
    fn check_block_inner(&mut self, b: &Block) -> Uses {
        let mut uses = Uses::new();
        for s in &b.stmts {
            self.src = s.src;
            self.check_stmt(s, &mut uses);
        }
        self.src = None;
        for a in &b.results {
            self.use_nl(a, "a block result");
        }
        for &v in &b.lin_results {
            self.use_lin(v, &mut uses, "a block result");
        }
        uses
    }

    fn check_stmt(&mut self, s: &Stmt, uses: &mut Uses) {
        let what = stmt_what(&s.expr);
        // Direct operands.
        let mut nl_ops: Vec<Atom> = vec![];
        let mut lin_ops: Vec<Var> = vec![];
        for_each_operand(&s.expr, &mut |a| nl_ops.push(*a), &mut |v| lin_ops.push(v));
        // `lin_shapes` of calls and ifs may name the statement's own results:
        // those are checked after the binders are in scope.
        let (own_ops, nl_ops): (Vec<Atom>, Vec<Atom>) = nl_ops
            .into_iter()
            .partition(|a| a.var().is_some_and(|v| s.binds.contains(&v)));
        for a in &nl_ops {
            self.use_nl(a, what);
        }
        let mut stmt_uses = Uses::new();
        for v in lin_ops {
            self.use_lin(v, &mut stmt_uses, what);
        }
        // Nested blocks: captured linear variables.
        let captured = self.check_nested(&s.expr);
        for v in captured {
            *stmt_uses.entry(v).or_insert(0) += 1;
        }
        // Types.
        match expr_types(&s.expr, &self.f.vars, self.prog) {
            Ok((nl, lin)) => {
                // Compared in place; the lists are made only for a message.
                let vars = &self.f.vars.vars;
                let agree = |binds: &[Var], want: &[Ty]| {
                    binds.len() == want.len()
                        && binds
                            .iter()
                            .zip(want)
                            .all(|(v, t)| vars.get(v.0 as usize).is_some_and(|i| i.ty == *t))
                };
                if !agree(&s.binds, &nl) || !agree(&s.lin_binds, &lin) {
                    let got = |binds: &[Var]| -> Vec<Option<Ty>> {
                        binds
                            .iter()
                            .map(|v| vars.get(v.0 as usize).map(|i| i.ty.clone()))
                            .collect()
                    };
                    let (got_nl, got_lin) = (got(&s.binds), got(&s.lin_binds));
                    let want_nl: Vec<Option<Ty>> = nl.into_iter().map(Some).collect();
                    let want_lin: Vec<Option<Ty>> = lin.into_iter().map(Some).collect();
                    let show = |ts: &[Option<Ty>]| {
                        ts.iter()
                            .map(|t| t.as_ref().map_or("?".into(), |t| t.to_string()))
                            .collect::<Vec<_>>()
                            .join(", ")
                    };
                    let first = s.binds.first().or(s.lin_binds.first()).copied();
                    self.err(
                        first,
                        format!(
                            "{what} produces ({} ; {}) but binds ({} ; {})",
                            show(&want_nl),
                            show(&want_lin),
                            show(&got_nl),
                            show(&got_lin)
                        ),
                    );
                }
            }
            Err(msg) => self.err(
                s.binds.first().or(s.lin_binds.first()).copied(),
                format!("{what}: {msg}"),
            ),
        }
        // Linear B: no statement mixes kinds.
        if self.mode == Mode::LinearB
            && !s.binds.is_empty()
            && (!s.lin_binds.is_empty() || !stmt_uses.is_empty())
        {
            let first = s.binds[0];
            self.err(
                Some(first),
                format!("{what} mixes non-linear results with linear values (not Linear B)"),
            );
        }
        for (v, k) in stmt_uses {
            *uses.entry(v).or_insert(0) += k;
        }
        for &v in &s.binds {
            self.bind(v, false);
        }
        for &v in &s.lin_binds {
            self.bind(v, true);
        }
        for a in &own_ops {
            self.use_nl(a, what);
        }
    }

    /// Checks the nested blocks of an expression; returns the captured linear
    /// variables of the enclosing scopes.
    fn check_nested(&mut self, e: &Expr) -> BTreeSet<Var> {
        match e {
            Expr::If(i) => {
                let a = self.check_block(&i.then_, &[], &[], "the then branch");
                let b = self.check_block(&i.else_, &[], &[], "the else branch");
                if a != b {
                    for v in a.symmetric_difference(&b) {
                        let n = self.name(*v);
                        self.err(Some(*v), format!("linear variable `{n}` is consumed by only one branch of an if (drop it in the other)"));
                    }
                }
                a.union(&b).copied().collect()
            }
            Expr::Loop(l) => self.check_block(
                &l.body.body,
                &l.body.params,
                &l.body.lin_params,
                "a loop body",
            ),
            Expr::Build(b) => self.check_block(
                &b.body.body,
                &b.body.params,
                &b.body.lin_params,
                "a build body",
            ),
            Expr::Map(m) => self.check_block(
                &m.body.body,
                &m.body.params,
                &m.body.lin_params,
                "a map body",
            ),
            Expr::Fold(fd) => self.check_block(
                &fd.body.body,
                &fd.body.params,
                &fd.body.lin_params,
                "a fold body",
            ),
            Expr::While(w) => {
                // Non-linear only: nothing linear is read or made inside.
                let mut captured = self.check_block(
                    &w.cond.body,
                    &w.cond.params,
                    &w.cond.lin_params,
                    "a while condition",
                );
                captured.extend(self.check_block(
                    &w.body.body,
                    &w.body.params,
                    &w.body.lin_params,
                    "a while body",
                ));
                for v in &captured {
                    let n = self.name(*v);
                    self.err(Some(*v), format!("linear variable `{n}` is read inside a while loop (while loops are non-linear)"));
                }
                captured
            }
            Expr::Atom(_)
            | Expr::Prim(..)
            | Expr::Array(_)
            | Expr::Tuple(_)
            | Expr::Untuple(_)
            | Expr::Lin(_)
            | Expr::Call(_) => BTreeSet::new(),
        }
    }
}

/// A short description of an expression for messages.
fn stmt_what(e: &Expr) -> &'static str {
    match e {
        Expr::Atom(_) => "a copy",
        Expr::Prim(p, _) => p.name(),
        Expr::Array(op) => op.name(),
        Expr::Tuple(_) => "a tuple",
        Expr::Untuple(_) => "a tuple destructuring",
        Expr::Lin(op) => op.name(),
        Expr::Call(_) => "a call",
        Expr::If(_) => "an if",
        Expr::Loop(_) => "a loop",
        Expr::Build(_) => "a build",
        Expr::Map(_) => "a map",
        Expr::Fold(_) => "a fold",
        Expr::While(_) => "a while loop",
    }
}
