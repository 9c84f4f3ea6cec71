//! The lowering context: the IR builder, the variable environment, the
//! collected errors and the source-span side table, with the small helpers
//! every lowering file uses to emit statements.
//!
//! Convention: lowering functions return `Option<Val>`; `None` means "this
//! expression failed and its error is already recorded" (callers substitute
//! [`Val::Poison`] and keep going, so that all errors of a function are
//! reported together and one mistake gives one error).

use super::env::Env;
use super::val::Val;
use ad_core_ir::build::FuncBuilder;
use ad_core_ir::ir::{ArrayOp, Atom, Expr, Lambda, Prim, SrcId, Var};
use ad_core_ir::types::Ty;
use proc_macro2::Span;
use quote::ToTokens;

/// State of the lowering of one function.
pub struct Lowerer<'p> {
    /// The IR under construction.
    pub b: FuncBuilder<'p>,
    /// Rust local variables.
    pub env: Env,
    /// Errors so far.
    pub errors: Vec<syn::Error>,
    /// `SrcId(k)` is `spans[k]`.
    pub spans: Vec<Span>,
    /// Calls of other functions, in source order.
    pub calls: Vec<CallSite>,
    /// The Rust name of the function being lowered.
    pub fn_name: String,
    /// Bindings with ids below this belong to the scope enclosing the array
    /// closure being lowered: they may be read, not assigned.
    pub closure_floor: usize,
    /// Results of calls without a `let` type annotation, taken to be `f64`:
    /// variable -> the callee as written (for a hint when it is used as
    /// something else).
    pub defaulted: ad_core_ir::fast_hash::FastMap<Var, String>,
    /// Arrays made by `insert_axis`: variable -> (the array it was made
    /// from, the inserted axis, of length 1). Elementwise arithmetic
    /// stretches that axis to the other operand's size, as ndarray's
    /// co-broadcasting does (`e / &s.insert_axis(Axis(1))`).
    pub unit_axis: ad_core_ir::fast_hash::FastMap<Var, (Atom, usize)>,
    /// Elementwise arithmetic of same-rank arrays needs equal shapes (no
    /// stretching of length-1 axes not made by `insert_axis`): in the
    /// bodies of linear functions and custom rules, whose transposes size
    /// a linear parameter's cotangent from the arrays it meets.
    pub exact_shapes: bool,
    /// The function's leading assertions were split off to be checked on
    /// entry by its derivatives (`crate::asserts`; not in linear functions
    /// and custom rules): a refused later one may move there.
    pub asserts_on_entry: bool,
    /// The iterator reductions returning an `Option` (`max_by`, `reduce`,
    /// ..) that an enclosing `.unwrap()` / `.expect(..)` takes, by the
    /// address of their syntax node (`iter_reduce.rs`).
    pub unwrapping: Vec<usize>,
}

impl<'p> Lowerer<'p> {
    /// A hint for an error about value `a` when it is the result of a call
    /// taken to return `f64` for lack of a type annotation.
    pub fn defaulted_hint(&self, a: &Atom) -> String {
        match a.var().and_then(|v| self.defaulted.get(&v)) {
            Some(callee) => format!(
                " (`{callee}(..)` is taken to return `f64`: the `let` has no type and linad did not find `{callee}`'s signature in the crate's source; if it returns an array or a tuple, annotate it: `let v: Array1<f64> = {callee}(..);`)"
            ),
            None => String::new(),
        }
    }

    /// A context for function `name`; `prog` is the (empty) program the
    /// builder types calls against (calls are pushed untyped, see `calls.rs`).
    pub fn new(prog: &'p ad_core_ir::ir::Program, name: &str) -> Self {
        Lowerer {
            b: FuncBuilder::new(prog, name),
            env: Env::new(),
            errors: vec![],
            spans: vec![],
            calls: vec![],
            fn_name: name.to_string(),
            closure_floor: 0,
            defaulted: ad_core_ir::fast_hash::FastMap::default(),
            unit_axis: ad_core_ir::fast_hash::FastMap::default(),
            exact_shapes: false,
            asserts_on_entry: false,
            unwrapping: vec![],
        }
    }

    /// Records an error spanned on `node`; returns `None` (the failed value).
    pub fn fail<T>(&mut self, node: &dyn ToTokens, msg: impl std::fmt::Display) -> Option<T> {
        self.errors.push(syn::Error::new_spanned(node, msg));
        None
    }

    /// Records an error at `span`; returns `None`.
    pub fn fail_at<T>(&mut self, span: Span, msg: impl std::fmt::Display) -> Option<T> {
        self.errors.push(syn::Error::new(span, msg));
        None
    }

    /// A new source id for `span`, attached to the statements emitted next.
    pub fn at(&mut self, span: Span) -> SrcId {
        let id = SrcId(self.spans.len() as u32);
        self.spans.push(span);
        self.b.set_src(Some(id));
        id
    }

    /// Emits `e` (located at `span`); a type error of the IR becomes an error
    /// at `span` (it means the front end's own type checks missed a case).
    pub fn emit(&mut self, e: Expr, span: Span) -> Option<Vec<Var>> {
        self.at(span);
        match self.b.try_emit(e) {
            Ok((nl, _)) => Some(nl),
            Err(msg) => self.fail_at(span, format!("type error in this expression: {msg}")),
        }
    }

    /// Emits an expression with one result.
    pub fn emit1(&mut self, e: Expr, span: Span) -> Option<Atom> {
        let vs = self.emit(e, span)?;
        match vs.as_slice() {
            [v] => Some(Atom::Var(*v)),
            _ => self.fail_at(span, "internal error: expected one result"),
        }
    }

    /// A scalar primitive.
    pub fn prim(&mut self, p: Prim, args: &[Atom], span: Span) -> Option<Atom> {
        self.emit1(Expr::Prim(p, args.to_vec()), span)
    }

    /// A non-linear array operation with one result.
    pub fn array(&mut self, op: ArrayOp, span: Span) -> Option<Atom> {
        self.emit1(Expr::Array(op), span)
    }

    /// `a + b` on i64 atoms, folding literals (and `x + 0`).
    pub fn add_i64(&mut self, a: Atom, b: Atom, span: Span) -> Option<Atom> {
        match (a, b) {
            (Atom::I64(x), Atom::I64(y)) if x.checked_add(y).is_some() => Some(Atom::I64(x + y)),
            (x, Atom::I64(0)) | (Atom::I64(0), x) => Some(x),
            _ => self.prim(Prim::Add, &[a, b], span),
        }
    }

    /// `a - b` on i64 atoms, folding literals (and `x - 0`).
    pub fn sub_i64(&mut self, a: Atom, b: Atom, span: Span) -> Option<Atom> {
        match (a, b) {
            (Atom::I64(x), Atom::I64(y)) if x.checked_sub(y).is_some() => Some(Atom::I64(x - y)),
            (x, Atom::I64(0)) => Some(x),
            _ => self.prim(Prim::Sub, &[a, b], span),
        }
    }

    /// `max(a, 0)` on an i64 atom (a trip count or a size), folding literals.
    pub fn clamp0(&mut self, a: Atom, span: Span) -> Option<Atom> {
        match a {
            Atom::I64(x) => Some(Atom::I64(x.max(0))),
            _ => self.prim(Prim::Max, &[a, Atom::I64(0)], span),
        }
    }

    /// A lambda with fresh parameters of the given types (named `names[k]`,
    /// `p` past the end); `f` lowers the body and returns its results, or
    /// `None` on error (the body is then discarded).
    pub fn lambda(
        &mut self,
        tys: &[Ty],
        names: &[&str],
        f: impl FnOnce(&mut Self, &[Var]) -> Option<Vec<Atom>>,
    ) -> Option<Lambda> {
        let params: Vec<Var> = tys
            .iter()
            .enumerate()
            .map(|(k, t)| {
                self.b
                    .fresh(names.get(k).copied().unwrap_or("p"), t.clone())
            })
            .collect();
        self.b.open();
        let results = f(self, &params);
        let body = self.b.close(results.clone().unwrap_or_default(), vec![]);
        results.map(|_| Lambda {
            params,
            lin_params: vec![],
            body,
        })
    }

    /// Lowers `f` with the bindings declared so far read-only (the body of
    /// an array closure, which must not assign captured variables).
    pub fn in_closure<T>(&mut self, f: impl FnOnce(&mut Self) -> T) -> T {
        let saved = self.closure_floor;
        self.closure_floor = self.env.len();
        self.env.push_scope();
        let r = f(self);
        self.env.pop_scope();
        self.closure_floor = saved;
        r
    }
}

/// The span of a syntax node.
pub fn span_of(node: &dyn ToTokens) -> Span {
    let ts = node.to_token_stream();
    let mut it = ts.into_iter();
    let first = it.next().map(|t| t.span()).unwrap_or_else(Span::call_site);
    match it.last() {
        Some(last) => first.join(last.span()).unwrap_or(first),
        None => first,
    }
}

/// Replaces a failed value by [`Val::Poison`].
pub fn or_poison(v: Option<Val>) -> Val {
    v.unwrap_or(Val::Poison)
}

/// A block with no statements returning `a`.
pub fn const_block(a: Atom) -> ad_core_ir::ir::Block {
    ad_core_ir::ir::Block {
        stmts: vec![],
        results: vec![a],
        lin_results: vec![],
    }
}

/// One call of another function, as lowered.
#[derive(Clone, Debug)]
pub struct CallSite {
    /// The extern's IR name (the path as written).
    pub ir_name: String,
    /// The path as written.
    pub path: syn::Path,
    /// The IR arguments.
    pub args: Vec<Atom>,
    /// Their IR types.
    pub arg_tys: Vec<Ty>,
    /// Spans of the arguments.
    pub arg_spans: Vec<Span>,
    /// IR result types.
    pub result_tys: Vec<Ty>,
    /// Rust result types (one per IR result).
    pub result_rust: Vec<syn::Type>,
    /// The span of the call.
    pub span: Span,
    /// A read of a `const` or `static` item (no arguments), emitted as its
    /// path: `EPS`, not `EPS()`.
    pub constant: bool,
}
