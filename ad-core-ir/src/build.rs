//! An ergonomic builder for IR, used by the passes, the tests and the macro
//! front end.
//!
//! The builder owns a [`VarTable`] and a stack of open blocks; [`FuncBuilder::emit`]
//! types an expression with [`crate::typing::expr_types`], creates its result
//! variables and appends the statement to the innermost open block. Nested
//! blocks are opened with [`FuncBuilder::open`] and closed with
//! [`FuncBuilder::close`], or built in one go by the closure helpers
//! ([`FuncBuilder::if_`], [`FuncBuilder::loop_`], [`FuncBuilder::build`], ...).
//!
//! Ill-typed input is a bug in the caller: [`FuncBuilder::emit`] panics with the
//! type error. Front ends that need the error as a value use
//! [`FuncBuilder::try_emit`].
//!
//! ```
//! use ad_core_ir::{build::FuncBuilder, ir::*, types::Ty};
//! let prog = Program::default();
//! let mut b = FuncBuilder::new(&prog, "f");
//! let x = b.param("x", Ty::F64);
//! let y = b.param("y", Ty::F64);
//! let xy = b.prim(Prim::Mul, &[x.into(), y.into()]);
//! let s = b.prim(Prim::Sin, &[x.into()]);
//! let r = b.prim(Prim::Add, &[xy.into(), s.into()]);
//! let f = b.finish(vec![r.into()], vec![]);
//! assert_eq!(f.params.len(), 2);
//! ```

use crate::ir::*;
use crate::types::Ty;
use crate::typing::expr_types;

/// Builds one function.
#[derive(Clone)]
pub struct FuncBuilder<'p> {
    prog: &'p Program,
    name: String,
    /// The variables of the function under construction.
    pub vars: VarTable,
    params: Vec<Var>,
    lin_params: Vec<Var>,
    lin_param_shapes: Vec<ShapeTree>,
    stack: Vec<Vec<Stmt>>,
    src: Option<SrcId>,
}

impl<'p> FuncBuilder<'p> {
    /// A builder for a function named `name`; `prog` supplies callee signatures.
    pub fn new(prog: &'p Program, name: impl Into<String>) -> Self {
        Self::with_vars(prog, name, VarTable::default())
    }

    /// A builder that continues an existing variable table (passes reuse the
    /// variables of the function they transform).
    pub fn with_vars(prog: &'p Program, name: impl Into<String>, vars: VarTable) -> Self {
        FuncBuilder {
            prog,
            name: name.into(),
            vars,
            params: vec![],
            lin_params: vec![],
            lin_param_shapes: vec![],
            stack: vec![vec![]],
            src: None,
        }
    }

    /// The program callees are looked up in.
    pub fn program(&self) -> &'p Program {
        self.prog
    }

    /// Sets the source id attached to statements emitted from now on.
    pub fn set_src(&mut self, src: Option<SrcId>) {
        self.src = src;
    }

    /// Adds a non-linear parameter.
    pub fn param(&mut self, name: &str, ty: Ty) -> Var {
        let v = self.vars.fresh(name, ty, false);
        self.params.push(v);
        v
    }

    /// Adds an existing variable as a non-linear parameter.
    pub fn add_param(&mut self, v: Var) {
        self.params.push(v);
    }

    /// Adds a linear parameter with its run-time shape.
    pub fn lin_param(&mut self, name: &str, ty: Ty, shape: ShapeTree) -> Var {
        let v = self.vars.fresh(name, ty, true);
        self.lin_params.push(v);
        self.lin_param_shapes.push(shape);
        v
    }

    /// Adds an existing variable as a linear parameter with its shape.
    pub fn add_lin_param(&mut self, v: Var, shape: ShapeTree) {
        self.lin_params.push(v);
        self.lin_param_shapes.push(shape);
    }

    /// A fresh non-linear variable (not bound yet).
    pub fn fresh(&mut self, name: &str, ty: Ty) -> Var {
        self.vars.fresh(name, ty, false)
    }

    /// A fresh linear variable (not bound yet).
    pub fn fresh_lin(&mut self, name: &str, ty: Ty) -> Var {
        self.vars.fresh(name, ty, true)
    }

    /// The type of a variable.
    pub fn ty(&self, v: Var) -> &Ty {
        self.vars.ty(v)
    }

    /// The type of an atom.
    pub fn atom_ty(&self, a: &Atom) -> Ty {
        crate::typing::atom_ty(a, &self.vars)
    }

    /// Appends a statement whose binders already exist.
    pub fn push(&mut self, stmt: Stmt) {
        self.stack.last_mut().expect("an open block").push(stmt);
    }

    /// Types `e`, creates its result variables (named `hint`) and appends it.
    pub fn try_emit_named(&mut self, e: Expr, hint: &str) -> Result<(Vec<Var>, Vec<Var>), String> {
        let (nl, lin) = expr_types(&e, &self.vars, self.prog)?;
        let binds: Vec<Var> = nl
            .into_iter()
            .map(|t| self.vars.fresh(hint, t, false))
            .collect();
        let lin_binds: Vec<Var> = lin
            .into_iter()
            .map(|t| self.vars.fresh(hint, t, true))
            .collect();
        self.push(Stmt {
            binds: binds.clone(),
            lin_binds: lin_binds.clone(),
            expr: e,
            src: self.src,
        });
        Ok((binds, lin_binds))
    }

    /// Types `e`, creates its result variables and appends it.
    pub fn try_emit(&mut self, e: Expr) -> Result<(Vec<Var>, Vec<Var>), String> {
        let hint = hint_of(&e);
        self.try_emit_named(e, hint)
    }

    /// As [`Self::try_emit`]; panics on a type error (a bug in the caller).
    pub fn emit(&mut self, e: Expr) -> (Vec<Var>, Vec<Var>) {
        let shown = format!("{e:?}");
        match self.try_emit(e) {
            Ok(r) => r,
            Err(msg) => panic!(
                "FuncBuilder `{}`: ill-typed expression: {msg}\n  in {shown}",
                self.name
            ),
        }
    }

    /// Emits an expression with exactly one result (non-linear or linear).
    pub fn emit1(&mut self, e: Expr) -> Var {
        let (nl, lin) = self.emit(e);
        match (nl.as_slice(), lin.as_slice()) {
            ([v], []) | ([], [v]) => *v,
            _ => panic!(
                "FuncBuilder::emit1: expression has {} results",
                nl.len() + lin.len()
            ),
        }
    }

    /// A scalar primitive.
    pub fn prim(&mut self, p: Prim, args: &[Atom]) -> Var {
        self.emit1(Expr::Prim(p, args.to_vec()))
    }

    /// A non-linear array operation with one result.
    pub fn array(&mut self, op: ArrayOp) -> Var {
        self.emit1(Expr::Array(op))
    }

    /// A linear operation with one result.
    pub fn lin(&mut self, op: LinOp) -> Var {
        self.emit1(Expr::Lin(op))
    }

    /// `shape(arr, axis)`.
    pub fn shape(&mut self, arr: Atom, axis: usize) -> Var {
        self.array(ArrayOp::Shape { arr, axis })
    }

    /// `arr[idx]`.
    pub fn index(&mut self, arr: Atom, idx: &[Atom]) -> Var {
        self.array(ArrayOp::Index {
            arr,
            idx: idx.to_vec(),
        })
    }

    /// Opens a nested block; statements go there until [`Self::close`].
    pub fn open(&mut self) {
        self.stack.push(vec![]);
    }

    /// Closes the innermost block with the given results.
    pub fn close(&mut self, results: Vec<Atom>, lin_results: Vec<Var>) -> Block {
        assert!(self.stack.len() > 1, "FuncBuilder::close without open");
        Block {
            stmts: self.stack.pop().expect("checked"),
            results,
            lin_results,
        }
    }

    /// Builds a block with a closure returning its results.
    pub fn block(&mut self, f: impl FnOnce(&mut Self) -> (Vec<Atom>, Vec<Var>)) -> Block {
        self.open();
        let (r, lr) = f(self);
        self.close(r, lr)
    }

    /// Builds a lambda with fresh parameters of the given types.
    pub fn lambda(
        &mut self,
        params: &[Ty],
        lin_params: &[Ty],
        f: impl FnOnce(&mut Self, &[Var], &[Var]) -> (Vec<Atom>, Vec<Var>),
    ) -> Lambda {
        self.lambda_named(params, &[], lin_params, f)
    }

    /// As [`Self::lambda`], naming the non-linear parameters (`names[k]`, or
    /// `p` past the end of `names`).
    pub fn lambda_named(
        &mut self,
        params: &[Ty],
        names: &[&str],
        lin_params: &[Ty],
        f: impl FnOnce(&mut Self, &[Var], &[Var]) -> (Vec<Atom>, Vec<Var>),
    ) -> Lambda {
        let ps: Vec<Var> = params
            .iter()
            .enumerate()
            .map(|(k, t)| {
                self.vars
                    .fresh(*names.get(k).unwrap_or(&"p"), t.clone(), false)
            })
            .collect();
        let lps: Vec<Var> = lin_params
            .iter()
            .map(|t| self.vars.fresh("dp", t.clone(), true))
            .collect();
        let body = self.block(|b| f(b, &ps, &lps));
        Lambda {
            params: ps,
            lin_params: lps,
            body,
        }
    }

    /// `if cond { then } else { else }` with non-linear results only.
    pub fn if_(
        &mut self,
        cond: Atom,
        then_: impl FnOnce(&mut Self) -> Vec<Atom>,
        else_: impl FnOnce(&mut Self) -> Vec<Atom>,
    ) -> Vec<Var> {
        let t = self.block(|b| (then_(b), vec![]));
        let e = self.block(|b| (else_(b), vec![]));
        self.emit(Expr::If(If {
            cond,
            then_: t,
            else_: e,
            lin_shapes: vec![],
        }))
        .0
    }

    /// A counted loop over `0..n` (reversed when `rev`) with non-linear state;
    /// the closure gets `(builder, i, state)` and returns `(new state, per-iteration outputs)`.
    /// Returns `(final state, stacked outputs)`.
    pub fn loop_(
        &mut self,
        n: Atom,
        rev: bool,
        init: &[Atom],
        f: impl FnOnce(&mut Self, Var, &[Var]) -> (Vec<Atom>, Vec<Atom>),
    ) -> (Vec<Var>, Vec<Var>) {
        let mut tys = vec![Ty::I64];
        tys.extend(init.iter().map(|a| self.atom_ty(a)));
        let mut names = vec!["i"];
        names.extend(std::iter::repeat_n("s", init.len()));
        let body = self.lambda_named(&tys, &names, &[], |b, ps, _| {
            let (mut st, ys) = f(b, ps[0], &ps[1..]);
            st.extend(ys);
            (st, vec![])
        });
        let (out, _) = self.emit(Expr::Loop(Loop {
            n,
            rev,
            init: init.to_vec(),
            lin_init: vec![],
            body,
        }));
        let k = init.len();
        (out[..k].to_vec(), out[k..].to_vec())
    }

    /// `build(shape, |idx| ..)`: the closure gets the indices and returns the
    /// element results. Returns the built arrays.
    pub fn build(
        &mut self,
        shape: &[Atom],
        f: impl FnOnce(&mut Self, &[Var]) -> Vec<Atom>,
    ) -> Vec<Var> {
        let tys = vec![Ty::I64; shape.len()];
        let body = self.lambda_named(&tys, &["i"; 3], &[], |b, ps, _| (f(b, ps), vec![]));
        self.emit(Expr::Build(Build {
            shape: shape.to_vec(),
            body,
        }))
        .0
    }

    /// `map(|x..| .., arrs)` over non-linear arrays. Returns the mapped arrays.
    pub fn map(
        &mut self,
        arrs: &[Atom],
        f: impl FnOnce(&mut Self, &[Var]) -> Vec<Atom>,
    ) -> Vec<Var> {
        let tys: Vec<Ty> = arrs
            .iter()
            .map(|a| {
                let t = self.atom_ty(a);
                t.unstacked(t.rank().unwrap_or(0)).unwrap_or(t)
            })
            .collect();
        let body = self.lambda_named(&tys, &["x"; 3], &[], |b, ps, _| (f(b, ps), vec![]));
        self.emit(Expr::Map(Map {
            arrs: arrs.to_vec(),
            lin_arrs: vec![],
            body,
        }))
        .0
    }

    /// `fold(init, |acc.., x| .., arr)`. Returns the final accumulators.
    pub fn fold(
        &mut self,
        init: &[Atom],
        arr: Atom,
        f: impl FnOnce(&mut Self, &[Var], Var) -> Vec<Atom>,
    ) -> Vec<Var> {
        let mut tys: Vec<Ty> = init.iter().map(|a| self.atom_ty(a)).collect();
        let at = self.atom_ty(&arr);
        tys.push(at.unstacked(1).unwrap_or(at));
        let k = init.len();
        let mut names = vec!["acc"; k];
        names.push("x");
        let body = self.lambda_named(&tys, &names, &[], |b, ps, _| {
            (f(b, &ps[..k], ps[k]), vec![])
        });
        self.emit(Expr::Fold(Fold {
            init: init.to_vec(),
            arr,
            body,
        }))
        .0
    }

    /// `while(init, cond, body)`: the trip count (an i64) of the loop
    /// `s = init; while cond(s) { s = body(s) }`. `cond` returns the
    /// condition, `body` the next state.
    pub fn while_(
        &mut self,
        init: &[Atom],
        cond: impl FnOnce(&mut Self, &[Var]) -> Atom,
        body: impl FnOnce(&mut Self, &[Var]) -> Vec<Atom>,
    ) -> Var {
        let tys: Vec<Ty> = init.iter().map(|a| self.atom_ty(a)).collect();
        let names = vec!["s"; init.len()];
        let cond = self.lambda_named(&tys, &names, &[], |b, ps, _| (vec![cond(b, ps)], vec![]));
        let body = self.lambda_named(&tys, &names, &[], |b, ps, _| (body(b, ps), vec![]));
        self.emit(Expr::While(While {
            init: init.to_vec(),
            cond,
            body,
        }))
        .0[0]
    }

    /// A call with non-linear arguments and results only.
    pub fn call(&mut self, func: &str, args: &[Atom]) -> Vec<Var> {
        self.emit(Expr::Call(Call {
            func: func.to_string(),
            args: args.to_vec(),
            lin_args: vec![],
            lin_shapes: vec![],
        }))
        .0
    }

    /// Finishes the function with the given results.
    pub fn finish(mut self, results: Vec<Atom>, lin_results: Vec<Var>) -> Func {
        assert_eq!(
            self.stack.len(),
            1,
            "FuncBuilder::finish with an open block"
        );
        let stmts = self.stack.pop().expect("checked");
        Func {
            name: self.name,
            params: self.params,
            lin_params: self.lin_params,
            lin_param_shapes: self.lin_param_shapes,
            body: Block {
                stmts,
                results,
                lin_results,
            },
            vars: self.vars,
        }
    }
}

/// A readable name hint for the results of an expression.
fn hint_of(e: &Expr) -> &'static str {
    match e {
        Expr::Atom(_) => "c",
        Expr::Prim(p, _) => p.name(),
        Expr::Array(op) => op.hint(),
        Expr::Tuple(_) => "tup",
        Expr::Untuple(_) => "el",
        Expr::Lin(_) => "d",
        Expr::Call(_) => "call",
        Expr::If(_) => "if",
        Expr::Loop(_) => "lp",
        Expr::Build(_) => "bld",
        Expr::Map(_) => "map",
        Expr::Fold(_) => "fold",
        Expr::While(_) => "trips",
    }
}
