//! The reference interpreter: the normative semantics of the IR. Every pass is
//! tested by running its input and output here and comparing.
//!
//! [`run`] evaluates a function of a [`Program`] on non-linear and linear
//! arguments and returns its non-linear and linear results. Linear values are
//! ordinary [`Value`]s: linearity is a static discipline ([`crate::check`]),
//! invisible at run time. Errors in the program or its inputs (an index out of
//! range, mismatched shapes, `i64` overflow or division by zero, an unknown
//! function, an unbound variable, ...) are [`EvalError`]s carrying the
//! [`SrcId`] of the innermost failing statement that has one; the interpreter
//! does not panic on bad programs or inputs.
//!
//! Each function call gets an environment indexed by [`Var`] (a vector sized by
//! the function's [`crate::ir::VarTable`]); nested blocks share it since every
//! variable is bound once per function. Loop, build, map and fold bodies
//! rebind their parameters and locals on every iteration.
//!
//! Arrays are limited to [`MAX_ELEMS`] elements (so are `Build` index spaces):
//! a larger size is an error rather than an allocation failure.
//!
//! Values are checked against the declared types at function entry, and
//! linear values against their declared [`crate::ir::ShapeTree`]s where the IR
//! states them (`Func::lin_param_shapes` when non-empty, `Call::lin_shapes`,
//! `If::lin_shapes`): a mismatch is an error, as it means a pass computed a
//! wrong shape.
//!
//! # Cost model
//!
//! [`run_counted`] also returns the *work* done: an estimate of what a compiled
//! program would do, used to check that passes keep the promised complexity
//! (e.g. reverse mode within a constant factor of the primal). Every statement
//! but pure bookkeeping (copies, `Dup`, `Drop`) costs at least 1; `size(v)` is
//! the number of scalars in `v` (1 for a scalar, the number of elements of an
//! array, the sum over a tuple's parts).
//!
//! | statement | work |
//! |---|---|
//! | scalar `Prim`, `Tuple`, `Untuple`, `Shape` (linear ones too) | 1 |
//! | copy (`Atom`) or linear `Dup` of a scalar; linear `Drop` | 0 (register moves in compiled code) |
//! | copy (`Atom`) or linear `Dup` of an array | `size` (a clone); a tuple: the sum over its parts |
//! | `Index` / linear `Index` | `size(result)` (1 for an element) |
//! | `Update` / linear `Update` | `size(val)` (in place in compiled code) |
//! | linear `Take` | `size` of the element taken (in place in compiled code) |
//! | `Gather`, `ScatterAdd`, `Broadcast`, `Scan`, `Reduce`, `ArgReduce`, `Transpose` (and linear twins), linear `Add`, `Neg`, `Scale`, `Sum` | max `size` over operands and results |
//! | `MatMul` / linear `MatMul` | `m·k·n` (`k` for a dot product) |
//! | linear `Outer` | `m·n` |
//! | linear `Zero` | `size(result)` |
//! | `If` | 1 + the work of the branch taken |
//! | `Loop`, `Build`, `Map` | 1 + the work of all body evaluations + 1 per scalar stored (a build's or map's results, a loop's per-iteration outputs) |
//! | `Fold` | 1 + the work of all body evaluations |
//! | `While` | 1 + the work of all condition and body evaluations |
//! | `Call` | 1 + the work of the callee's body |
//!
//! Block results are free, except where a construct stores them. The top-level
//! function's work is that of its body.

mod array;
mod ops;
pub(crate) mod prim;
mod structured;
mod value;

pub use value::{dot, ArrayData, ArrayValue, Value, MAX_ELEMS};

use crate::ir::*;
use crate::types::Ty;
use prim::Sc;
use std::borrow::Cow;
use std::fmt;

/// An evaluation error: what went wrong, and the source id of the innermost
/// failing statement that has one.
#[derive(Clone, Debug, PartialEq)]
pub struct EvalError {
    /// The message (functions on the call path are prefixed, outermost first).
    pub msg: String,
    /// Where the failing statement came from, if known.
    pub src: Option<SrcId>,
}

impl EvalError {
    /// An error without a source location.
    pub fn new(msg: impl Into<String>) -> EvalError {
        EvalError {
            msg: msg.into(),
            src: None,
        }
    }

    /// The error located at `src` unless it already has a location.
    fn at(mut self, src: Option<SrcId>) -> EvalError {
        self.src = self.src.or(src);
        self
    }
}

impl From<String> for EvalError {
    fn from(msg: String) -> EvalError {
        EvalError::new(msg)
    }
}

impl fmt::Display for EvalError {
    /// `msg`, followed by ` (source #n)` when located.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.msg)?;
        if let Some(SrcId(n)) = self.src {
            write!(f, " (source #{n})")?;
        }
        Ok(())
    }
}

impl std::error::Error for EvalError {}

/// Non-linear and linear results of a function, block or expression.
pub type Results = (Vec<Value>, Vec<Value>);

/// Runs `func` of `prog` on non-linear arguments `args` and linear arguments
/// `lin_args`: `func(args ; lin_args) = (results ; lin_results)`.
pub fn run(
    prog: &Program,
    func: &str,
    args: &[Value],
    lin_args: &[Value],
) -> Result<Results, EvalError> {
    run_counted(prog, func, args, lin_args).map(|(r, _)| r)
}

/// As [`run`], also returning the work done (see the cost model in the
/// module documentation).
pub fn run_counted(
    prog: &Program,
    func: &str,
    args: &[Value],
    lin_args: &[Value],
) -> Result<(Results, u64), EvalError> {
    let f = prog
        .func(func)
        .ok_or_else(|| EvalError::new(format!("no function `{func}` in the program")))?;
    for v in args.iter().chain(lin_args) {
        v.validate()
            .map_err(|m| EvalError::new(format!("`{func}`: argument: {m}")))?;
    }
    let mut it = Interp {
        prog,
        cost: 0,
        depth: 0,
    };
    let out = it.call_func(f, args.to_vec(), lin_args.to_vec())?;
    Ok((out, it.cost))
}

/// Maximum nesting of calls and blocks (guards against recursive programs,
/// which the IR forbids, overflowing the stack).
const MAX_DEPTH: usize = 200;

/// The interpreter state: the program, the work counter and the nesting depth.
struct Interp<'p> {
    prog: &'p Program,
    cost: u64,
    depth: usize,
}

/// The environment of one function call.
struct Frame<'f> {
    func: &'f Func,
    env: Vec<Option<Value>>,
}

impl<'f> Frame<'f> {
    fn new(func: &'f Func) -> Frame<'f> {
        Frame {
            func,
            env: vec![None; func.vars.len()],
        }
    }

    fn name(&self, v: Var) -> String {
        match self.func.vars.vars.get(v.0 as usize) {
            Some(info) => format!("{}{v}", info.name),
            None => format!("{v}"),
        }
    }

    /// The value of a bound variable.
    fn get(&self, v: Var) -> Result<&Value, String> {
        match self.env.get(v.0 as usize) {
            Some(Some(x)) => Ok(x),
            Some(None) => Err(format!("variable {} is unbound", self.name(v))),
            None => Err(format!("variable {v} is not in the function's table")),
        }
    }

    /// The value of an atom (borrowed for variables).
    fn atom(&self, a: &Atom) -> Result<Cow<'_, Value>, String> {
        Ok(match a {
            Atom::Var(v) => Cow::Borrowed(self.get(*v)?),
            Atom::F64(x) => Cow::Owned(Value::F64(*x)),
            Atom::I64(x) => Cow::Owned(Value::I64(*x)),
            Atom::Bool(x) => Cow::Owned(Value::Bool(*x)),
        })
    }

    /// An owned copy of an atom's value.
    fn owned(&self, a: &Atom) -> Result<Value, String> {
        self.atom(a).map(Cow::into_owned)
    }

    /// The scalar value of an atom.
    fn scalar(&self, a: &Atom) -> Result<Sc, String> {
        match a {
            Atom::Var(v) => {
                let x = self.get(*v)?;
                Sc::of(x).ok_or_else(|| {
                    format!(
                        "{} must be a scalar, found {}",
                        self.name(*v),
                        value::describe(x)
                    )
                })
            }
            Atom::F64(x) => Ok(Sc::F(*x)),
            Atom::I64(x) => Ok(Sc::I(*x)),
            Atom::Bool(x) => Ok(Sc::B(*x)),
        }
    }

    /// The `i64` value of an atom.
    fn i64(&self, a: &Atom, what: &str) -> Result<i64, String> {
        match self.scalar(a)? {
            Sc::I(n) => Ok(n),
            other => Err(format!("{what} must be an i64, found {}", other.ty_name())),
        }
    }

    /// The `i64` values of atoms.
    fn i64s(&self, xs: &[Atom], what: &str) -> Result<Vec<i64>, String> {
        xs.iter().map(|a| self.i64(a, what)).collect()
    }

    /// The sizes named by atoms (`i64 >= 0`).
    fn sizes(&self, xs: &[Atom], what: &str) -> Result<Vec<usize>, String> {
        xs.iter()
            .map(|a| {
                let n = self.i64(a, what)?;
                usize::try_from(n).map_err(|_| format!("{what} {n} is negative"))
            })
            .collect()
    }

    /// The static type of an atom.
    fn ty(&self, a: &Atom) -> Result<Ty, String> {
        match a {
            Atom::Var(v) => self.var_ty(*v),
            _ => Ok(crate::typing::atom_ty(a, &self.func.vars)),
        }
    }

    /// The static type of a variable.
    fn var_ty(&self, v: Var) -> Result<Ty, String> {
        self.func
            .vars
            .vars
            .get(v.0 as usize)
            .map(|i| i.ty.clone())
            .ok_or_else(|| format!("variable {v} is not in the function's table"))
    }

    /// Binds `v` to `x`.
    fn set(&mut self, v: Var, x: Value) -> Result<(), String> {
        match self.env.get_mut(v.0 as usize) {
            Some(slot) => {
                *slot = Some(x);
                Ok(())
            }
            None => Err(format!("variable {v} is not in the function's table")),
        }
    }

    /// Binds the single variable of `vars` to `x`.
    fn bind1(&mut self, vars: &[Var], x: Value) -> Result<(), String> {
        match vars {
            [v] => self.set(*v, x),
            _ => Err(format!("1 value bound to {} variables", vars.len())),
        }
    }

    /// Binds `vars` to `vals` (same lengths).
    fn bind(&mut self, vars: &[Var], vals: Vec<Value>) -> Result<(), String> {
        if vars.len() != vals.len() {
            return Err(format!(
                "{} values bound to {} variables",
                vals.len(),
                vars.len()
            ));
        }
        vars.iter().zip(vals).try_for_each(|(v, x)| self.set(*v, x))
    }

    /// The value described by a shape tree: `Dim::Atom` an `i64 >= 0`,
    /// `Dim::Of(v, a)` the size of axis `a` of array `v`.
    fn dims(&self, dims: &[Dim]) -> Result<Vec<usize>, String> {
        dims.iter()
            .map(|d| match d {
                Dim::Atom(a) => self
                    .sizes(std::slice::from_ref(a), "a shape size")
                    .map(|s| s[0]),
                Dim::Of(v, axis) => {
                    let x = self.get(*v)?;
                    x.as_array()
                        .and_then(|a| a.shape.get(*axis).copied())
                        .ok_or_else(|| {
                            format!(
                                "shape({}, {axis}) of a {}",
                                self.name(*v),
                                value::describe(x)
                            )
                        })
                }
            })
            .collect()
    }

    /// Checks that a linear value has the shape `st` describes.
    fn check_shape(&self, x: &Value, st: &ShapeTree) -> Result<(), String> {
        let ok = match (x, st) {
            (Value::F64(_), ShapeTree::Scalar) => true,
            (Value::Array(a), ShapeTree::Array(ds)) => {
                a.data.elem() == crate::types::Scalar::F64 && a.shape == self.dims(ds)?
            }
            (Value::Tuple(xs), ShapeTree::Tuple(ts)) if xs.len() == ts.len() => {
                for (x, t) in xs.iter().zip(ts) {
                    self.check_shape(x, t)?;
                }
                true
            }
            _ => false,
        };
        if ok {
            Ok(())
        } else {
            Err(format!(
                "linear value {} does not have its declared shape {st:?}",
                value::describe(x)
            ))
        }
    }

    /// Checks linear values against their declared shapes.
    fn check_shapes(&self, xs: &[Value], shapes: &[ShapeTree], what: &str) -> Result<(), String> {
        if xs.len() != shapes.len() {
            return Err(format!(
                "{what}: {} linear values for {} declared shapes",
                xs.len(),
                shapes.len()
            ));
        }
        for (k, (x, st)) in xs.iter().zip(shapes).enumerate() {
            self.check_shape(x, st)
                .map_err(|m| format!("{what}: linear result {k}: {m}"))?;
        }
        Ok(())
    }
}

impl<'p> Interp<'p> {
    /// Calls `f` on owned arguments: binds the parameters, checks types and
    /// declared linear shapes, runs the body.
    fn call_func(
        &mut self,
        f: &'p Func,
        args: Vec<Value>,
        lin: Vec<Value>,
    ) -> Result<Results, EvalError> {
        let ctx = |e: EvalError| EvalError {
            msg: format!("`{}`: {}", f.name, e.msg),
            src: e.src,
        };
        let mut fr = Frame::new(f);
        self.bind_params(&mut fr, args, lin)
            .map_err(|m| ctx(m.into()))?;
        self.block(&mut fr, &f.body).map_err(ctx)
    }

    fn bind_params(
        &mut self,
        fr: &mut Frame<'p>,
        args: Vec<Value>,
        lin: Vec<Value>,
    ) -> Result<(), String> {
        let f = fr.func;
        if args.len() != f.params.len() || lin.len() != f.lin_params.len() {
            return Err(format!(
                "called with {} ; {} arguments but takes {} ; {}",
                args.len(),
                lin.len(),
                f.params.len(),
                f.lin_params.len()
            ));
        }
        for (k, (v, x)) in f
            .params
            .iter()
            .chain(&f.lin_params)
            .zip(args.iter().chain(&lin))
            .enumerate()
        {
            let ty = fr.var_ty(*v)?;
            if !x.has_type(&ty) {
                return Err(format!(
                    "argument {k} is a {} but parameter {} has type {ty}",
                    value::describe(x),
                    fr.name(*v)
                ));
            }
        }
        fr.bind(&f.params, args)?;
        if !f.lin_param_shapes.is_empty() {
            fr.check_shapes(&lin, &f.lin_param_shapes, "linear parameters")?;
        }
        fr.bind(&f.lin_params, lin)
    }

    /// Evaluates a block: its statements in order, then its results.
    fn block(&mut self, fr: &mut Frame<'p>, b: &'p Block) -> Result<Results, EvalError> {
        if self.depth >= MAX_DEPTH {
            return Err(EvalError::new(format!(
                "nesting deeper than {MAX_DEPTH} calls and blocks (a recursive program?)"
            )));
        }
        self.depth += 1;
        let r = self.block_inner(fr, b);
        self.depth -= 1;
        r
    }

    fn block_inner(&mut self, fr: &mut Frame<'p>, b: &'p Block) -> Result<Results, EvalError> {
        for s in &b.stmts {
            self.stmt(fr, s).map_err(|e| e.at(s.src))?;
        }
        let r = b
            .results
            .iter()
            .map(|a| fr.owned(a))
            .collect::<Result<_, _>>()?;
        let lr = b
            .lin_results
            .iter()
            .map(|v| fr.get(*v).cloned())
            .collect::<Result<_, _>>()?;
        Ok((r, lr))
    }

    /// Evaluates one statement, binds its results and counts its work.
    fn stmt(&mut self, fr: &mut Frame<'p>, s: &'p Stmt) -> Result<(), EvalError> {
        let work = match &s.expr {
            Expr::Atom(a) => {
                let x = fr.owned(a)?;
                let work = copy_work(&x);
                fr.bind1(&s.binds, x)?;
                work
            }
            Expr::Prim(p, args) => {
                let mut xs = [Sc::B(false); 3];
                if args.len() > xs.len() {
                    return Err(format!("{} applied to {} operands", p.name(), args.len()).into());
                }
                for (x, a) in xs.iter_mut().zip(args) {
                    *x = fr.scalar(a)?;
                }
                let r = prim::eval_prim(*p, &xs[..args.len()])?;
                fr.bind1(&s.binds, r.value())?;
                1
            }
            Expr::Tuple(xs) => {
                let parts = xs.iter().map(|a| fr.owned(a)).collect::<Result<_, _>>()?;
                fr.bind(&s.binds, vec![Value::Tuple(parts)])?;
                1
            }
            Expr::Untuple(x) => {
                let parts = match fr.owned(x)? {
                    Value::Tuple(parts) => parts,
                    other => return Err(format!("untuple of a {}", value::describe(&other)).into()),
                };
                fr.bind(&s.binds, parts)?;
                1
            }
            Expr::Array(op) => {
                let (vals, work) = ops::array_op(fr, op)?;
                fr.bind(&s.binds, vals)?;
                work
            }
            Expr::Lin(op) => {
                let (vals, work) = ops::lin_op(fr, op)?;
                fr.bind(&s.lin_binds, vals)?;
                work
            }
            Expr::Call(c) => self.call(fr, c, s)?,
            Expr::If(i) => self.if_(fr, i, s)?,
            Expr::Loop(lp) => self.loop_(fr, lp, s)?,
            Expr::Build(b) => self.build(fr, b, s)?,
            Expr::Map(m) => self.map(fr, m, s)?,
            Expr::Fold(fd) => self.fold(fr, fd, s)?,
            Expr::While(w) => self.while_(fr, w, s)?,
        };
        // Bookkeeping (copies, dup and drop of scalars) is free; everything
        // else costs at least 1.
        let bookkeeping = matches!(
            s.expr,
            Expr::Atom(_) | Expr::Lin(LinOp::Dup(_) | LinOp::Drop(_))
        );
        self.cost = self
            .cost
            .saturating_add(if bookkeeping { work } else { work.max(1) });
        Ok(())
    }

    /// `let (r ; lr) = f(args ; lin_args)`.
    fn call(&mut self, fr: &mut Frame<'p>, c: &'p Call, s: &Stmt) -> Result<u64, EvalError> {
        let f = self
            .prog
            .func(&c.func)
            .ok_or_else(|| EvalError::new(format!("call of unknown function `{}`", c.func)))?;
        let args = c
            .args
            .iter()
            .map(|a| fr.owned(a))
            .collect::<Result<_, _>>()?;
        let lin = c
            .lin_args
            .iter()
            .map(|v| fr.get(*v).cloned())
            .collect::<Result<_, _>>()?;
        let (r, lr) = self.call_func(f, args, lin)?;
        bind_results(fr, s, r, lr, &c.lin_shapes, "call")?;
        Ok(1)
    }

    /// `if cond { then_ } else { else_ }`.
    fn if_(&mut self, fr: &mut Frame<'p>, i: &'p If, s: &Stmt) -> Result<u64, EvalError> {
        let taken = match fr.scalar(&i.cond)? {
            Sc::B(c) => c,
            other => {
                return Err(
                    format!("if condition must be a bool, found {}", other.ty_name()).into(),
                )
            }
        };
        let (r, lr) = self.block(fr, if taken { &i.then_ } else { &i.else_ })?;
        bind_results(fr, s, r, lr, &i.lin_shapes, "if")?;
        Ok(1)
    }
}

/// The work of copying a value: 0 for a scalar (a register move), the size
/// of an array (a clone), the sum over the parts of a tuple.
fn copy_work(x: &Value) -> u64 {
    match x {
        Value::F64(_) | Value::I64(_) | Value::Bool(_) => 0,
        Value::Array(a) => a.size() as u64,
        Value::Tuple(parts) => parts.iter().map(copy_work).sum(),
    }
}

/// Binds a call's or an if's results, checking the linear ones against their
/// declared shapes (which may name the non-linear results, so those come first).
fn bind_results(
    fr: &mut Frame<'_>,
    s: &Stmt,
    r: Vec<Value>,
    lr: Vec<Value>,
    shapes: &[ShapeTree],
    what: &str,
) -> Result<(), String> {
    fr.bind(&s.binds, r)?;
    fr.check_shapes(&lr, shapes, what)?;
    fr.bind(&s.lin_binds, lr)
}
