//! The emitter of one IR function body: variables, operands, statements and
//! blocks. The statement forms live in `scalar.rs`, `array.rs`, `linear.rs`,
//! `control.rs` and `calls.rs` (further `impl Emitter` blocks).
//!
//! Operands are read in one of three ways:
//! - [`Emitter::scalar`]: a scalar (or `Copy` tuple) by value;
//! - [`Emitter::by_ref`]: `&x` for arrays (an owned array or a view: the
//!   runtime kernels take any `&ArrayBase`);
//! - [`Emitter::own`] / [`Emitter::own_lin`]: an owned value, moving the
//!   variable when this is its last use (see `uses.rs`), cloning otherwise;
//!   a view becomes `.to_owned()`.

use super::names;
use super::types::{self, owned_repr, repr_ty, Repr};
use super::uses::Uses;
use crate::sig::Callee;
use crate::text::{text, Code};
use ad_core_ir::fast_hash::FastMap;
use ad_core_ir::ir::*;
use ad_core_ir::types::{Scalar, Ty};
use proc_macro2::{Ident, Literal};
use std::cell::RefCell;

/// Emission result: generated tokens or an internal error message.
pub type R<T> = Result<T, String>;

/// What is shared by every function emitted for one `#[differentiable]` item.
pub struct Ctx<'a> {
    /// The program the functions come from (for calls).
    pub prog: &'a Program,
    /// The externs the lowered function calls.
    pub callees: &'a [Callee],
    /// Non-extern functions of the program called so far (emitted as nested
    /// functions by the wrapper).
    pub internal: RefCell<Vec<String>>,
}

impl<'a> Ctx<'a> {
    /// A context for functions of `prog`.
    pub fn new(prog: &'a Program, callees: &'a [Callee]) -> Ctx<'a> {
        Ctx {
            prog,
            callees,
            internal: RefCell::new(vec![]),
        }
    }
}

/// An emitted statement right-hand side and the representation of each of
/// its binders (non-linear, then linear).
pub struct Out {
    /// The expression.
    pub expr: Code,
    /// One per binder.
    pub reprs: Vec<Repr>,
}

impl Out {
    /// One result.
    pub fn one(expr: Code, repr: Repr) -> Out {
        Out {
            expr,
            reprs: vec![repr],
        }
    }
}

/// The emitter of one function.
pub struct Emitter<'a> {
    /// Shared context.
    pub cx: &'a Ctx<'a>,
    /// The function.
    pub f: &'a Func,
    /// The Rust names of the variables, made on first use (a derived
    /// function's table holds many more variables than its body binds).
    names: Vec<std::cell::OnceCell<Ident>>,
    /// Use analysis.
    pub uses: Uses,
    repr: ad_core_ir::dense::VarMap<Repr>,
    tmp: u32,
    /// Statements the statement being emitted needs before its `let`
    /// (declarations of buffers that its value borrows).
    pub before: Code,
    /// Lanes taken before the loops being emitted (see `lanes.rs`).
    pub lanes: FastMap<super::lanes::LaneKey, Ident>,
    /// Lanes with one row per strip-mined index (see `strip.rs`).
    pub strip_lanes: FastMap<super::lanes::LaneKey, Ident>,
    /// The arrays whose rows strip-mined code reads as `LaneRows` (one row
    /// per lane), in the order met: a strip-mined build takes those met
    /// while its lane closure is emitted and runs its scalar code when one
    /// of them, free in the build, has rows too long to tile
    /// (`Emitter::lane_rows_fit`). Those a reverse pass meets outside any
    /// build are never read.
    pub lane_row_arrays: Vec<Var>,
    /// Where the declarations of per-thread scratch buffers go: one entry
    /// per enclosing body being emitted, `Some` for a sequential loop's
    /// (they move before the outermost such loop), `None` for a closure's
    /// (a build, map, accumulation, fold or while body: they stay inside).
    pub hoist: Vec<Option<Code>>,
    /// The plan an accumulation loop made for the inner loop of its
    /// interchanged nest (`nest.rs`), until that loop is emitted.
    pub nested: Option<super::nest::Nested>,
    /// The linear arrays held as a chunk's rows of an accumulator (an
    /// interchanged nest whose iterations own rows, `nest.rs`): the axis
    /// and the name of the offset their element indices are taken from.
    pub row_shifts: FastMap<Var, (usize, Ident)>,
    /// In the strip-mined blocks of an interchanged nest: differences
    /// `x[i, k] - m[k]` read from a table made once per block (`nest.rs`),
    /// by the difference's binder: the table and `k`.
    pub col_diffs: FastMap<Var, (Ident, Atom)>,
    /// The element reads those differences replace (not emitted there).
    pub col_skip: ad_core_ir::fast_hash::FastSet<Var>,
    /// Arrays filled with one value (a broadcast scalar), by binder: the
    /// expression that makes one, which an owned copy repeats instead of
    /// copying the array (a pooled buffer filled, where `clone` would
    /// allocate: in a loop, once per iteration).
    pub fills: FastMap<Var, Code>,
    /// Views that borrow a binding of this body (a broadcast's, and views
    /// taken of those): never returned as views.
    local_views: ad_core_ir::fast_hash::FastSet<Var>,
    /// Variables some view may borrow (read by a statement with a view
    /// result): never released early (see [`Emitter::release_dead`]).
    viewed: ad_core_ir::fast_hash::FastSet<Var>,
    /// Scalar statements written into their one use instead of a `let`
    /// (`inline_exprs.rs`), by binder, until the block holding them is emitted:
    /// the expression and how tightly it binds.
    pub inlined: FastMap<Var, (Code, super::inline_exprs::Prec)>,
}

/// A function body as a block expression evaluating to its results (flat:
/// non-linear then linear; one value, or a tuple), with the parameters bound
/// from the given expressions. With `view_results`, results that are views
/// stay views (their representations are returned); otherwise every result
/// is owned.
pub fn body(
    cx: &Ctx,
    f: &Func,
    params: Vec<(Code, Repr)>,
    lin_params: Vec<(Code, Repr)>,
    view_results: bool,
) -> R<(Code, Vec<Repr>)> {
    if params.len() != f.params.len() || lin_params.len() != f.lin_params.len() {
        return Err(format!(
            "`{}` takes {} ; {} parameters, bound to {} ; {}",
            f.name,
            f.params.len(),
            f.lin_params.len(),
            params.len(),
            lin_params.len()
        ));
    }
    if let Some(v) = f.vars.vars.iter().find(|v| types::too_deep(&v.ty)) {
        return Err(format!(
            "arrays of rank above {} are not supported (`{}: {}`)",
            types::MAX_RANK,
            v.name,
            v.ty
        ));
    }
    let mut e = Emitter {
        cx,
        f,
        names: std::iter::repeat_with(std::cell::OnceCell::new)
            .take(f.vars.vars.len())
            .collect(),
        uses: Uses::of(f),
        repr: Default::default(),
        tmp: 0,
        before: Code::new(),
        lanes: FastMap::default(),
        strip_lanes: FastMap::default(),
        lane_row_arrays: vec![],
        hoist: vec![],
        nested: None,
        row_shifts: FastMap::default(),
        col_diffs: FastMap::default(),
        col_skip: Default::default(),
        fills: Default::default(),
        local_views: Default::default(),
        viewed: Default::default(),
        inlined: Default::default(),
    };
    let mut pats = vec![];
    let mut tys = vec![];
    let mut vals = vec![];
    for (v, (x, r)) in f
        .params
        .iter()
        .zip(params)
        .chain(f.lin_params.iter().zip(lin_params))
    {
        e.repr.insert(*v, r);
        // A parameter of the emitted function with the variable's own name
        // (`halves::ir_params`) needs no binding.
        if *e.var_name(*v) == x.to_string() {
            continue;
        }
        pats.push(e.binder(*v));
        tys.push(repr_ty(f.vars.ty(*v), r));
        vals.push(x);
    }
    let bind = if pats.is_empty() {
        text!()
    } else {
        let (p, t, x) = (
            types::tuple(&pats),
            types::tuple_ty(tys),
            types::tuple(&vals),
        );
        text!(let #p: #t = #x;)
    };
    let (stmts, results, reprs) = e.block_parts(&f.body, view_results)?;
    let results = types::flat(&results);
    Ok((text!({ #bind #stmts #results }), reprs))
}

impl<'a> Emitter<'a> {
    /// The Rust name of a variable (of what it stands for, for copies).
    pub fn name(&self, v: Var) -> Ident {
        self.var_name(self.uses.root(v)).clone()
    }

    /// The Rust name of `v` itself (not of the variable a copy stands for).
    fn var_name(&self, v: Var) -> &Ident {
        self.names[v.0 as usize].get_or_init(|| names::var_name(self.f, v))
    }

    /// The name to bind `v` with: `_` when it is never read.
    pub fn binder(&self, v: Var) -> Ident {
        if self.uses.used(v) {
            self.var_name(v).clone()
        } else {
            Ident::new("_", proc_macro2::Span::call_site())
        }
    }

    /// The type of a variable.
    pub fn ty(&self, v: Var) -> &'a Ty {
        self.f.vars.ty(v)
    }

    /// The type of an atom.
    pub fn atom_ty(&self, a: &Atom) -> Ty {
        ad_core_ir::typing::atom_ty(a, &self.f.vars)
    }

    /// The element type and rank of an array atom.
    pub fn array_of(&self, a: &Atom) -> R<(Scalar, usize)> {
        match self.atom_ty(a) {
            Ty::Array { elem, rank } => Ok((elem, rank)),
            t => Err(format!("expected an array operand, found {t}")),
        }
    }

    /// The rank of a linear array variable.
    pub fn lin_rank(&self, v: Var) -> R<usize> {
        match self.ty(v) {
            Ty::Array { rank, .. } => Ok(*rank),
            t => Err(format!("expected a linear array, found {t}")),
        }
    }

    /// How a variable is held.
    pub fn repr(&self, v: Var) -> Repr {
        let r = self.uses.root(v);
        self.repr
            .get(&r)
            .copied()
            .unwrap_or_else(|| owned_repr(self.ty(r)))
    }

    /// Records how a variable is held.
    pub fn set_repr(&mut self, v: Var, r: Repr) {
        self.repr.insert(v, r);
    }

    /// A fresh temporary name.
    pub fn fresh(&mut self, what: &str) -> Ident {
        self.tmp += 1;
        names::temp(what, self.tmp)
    }

    /// A literal.
    pub fn lit(a: &Atom) -> Code {
        match *a {
            Atom::F64(x) => f64_lit(x),
            Atom::I64(x) => i64_lit(x),
            Atom::Bool(b) => text!(#b),
            Atom::Var(_) => unreachable!("not a literal"),
        }
    }

    /// A scalar (or `Copy` tuple) operand by value: its name, or the
    /// expression of an inlined statement (`inline_exprs.rs`), in
    /// parentheses unless it is a call.
    pub fn scalar(&self, a: &Atom) -> Code {
        self.scalar_at(a, super::inline_exprs::Pos::Other)
    }

    /// [`Emitter::scalar`] written at `pos`: an inlined expression in
    /// parentheses only where Rust's precedence needs them.
    pub fn scalar_at(&self, a: &Atom, pos: super::inline_exprs::Pos) -> Code {
        match a {
            Atom::Var(v) => match self.inlined.get(&self.uses.root(*v)) {
                Some((e, prec)) if prec.bare_in(pos) => e.clone(),
                Some((e, _)) => text!((#e)),
                None => {
                    let n = self.name(*v);
                    text!(#n)
                }
            },
            _ => Self::lit(a),
        }
    }

    /// An `i64` operand as a `usize` (for indices and sizes; no parentheses:
    /// only used in comma-separated positions).
    pub fn usize_of(&self, a: &Atom) -> Code {
        match a {
            Atom::I64(k) if *k >= 0 => {
                let l = Literal::usize_suffixed(*k as usize);
                text!(#l)
            }
            _ => {
                let x = self.scalar(a);
                text!(#x as usize)
            }
        }
    }

    /// An operand by reference: `&x` for arrays, the value for scalars.
    pub fn by_ref(&self, a: &Atom) -> Code {
        match a {
            Atom::Var(v) => self.var_ref(*v),
            _ => Self::lit(a),
        }
    }

    /// A variable by reference: `&x` for arrays and tuples holding arrays.
    pub fn var_ref(&self, v: Var) -> Code {
        let n = self.name(v);
        match self.repr(v) {
            Repr::Val => text!(#n),
            Repr::Owned | Repr::View => text!(&#n),
        }
    }

    /// An array variable as a view (`x.view()`).
    pub fn var_view(&self, v: Var) -> Code {
        let n = self.name(v);
        match self.repr(v) {
            Repr::Val => text!(#n),
            Repr::Owned | Repr::View => text!(#n.view()),
        }
    }

    /// A non-linear operand as an owned value, moved at its last use.
    pub fn own(&self, a: &Atom, site: usize) -> Code {
        match a {
            Atom::Var(v) => self.own_var(*v, self.uses.movable(*v, site)),
            _ => Self::lit(a),
        }
    }

    /// A linear variable as an owned value (moved unless captured).
    pub fn own_lin(&self, v: Var, site: usize) -> Code {
        self.own_var(v, self.uses.local(v, site))
    }

    /// An owned copy of a variable, moving it when `movable`.
    pub fn own_var(&self, v: Var, movable: bool) -> Code {
        let n = self.name(v);
        match self.repr(v) {
            Repr::Val => text!(#n),
            Repr::Owned if movable => text!(#n),
            Repr::Owned => match self.fills.get(&v) {
                Some(fill) => fill.clone(),
                None => text!(#n.clone()),
            },
            Repr::View => text!(#n.to_owned()),
        }
    }

    /// Whether a non-linear operand is an owned array that may be moved here
    /// (so it can be updated in place).
    pub fn nl_movable(&self, a: &Atom, site: usize) -> bool {
        match a {
            Atom::Var(v) => self.repr(*v) == Repr::Owned && self.uses.movable(*v, site),
            _ => false,
        }
    }

    /// Whether a linear variable is an owned array that may be moved here.
    pub fn lin_movable(&self, v: Var, site: usize) -> bool {
        self.repr(v) == Repr::Owned && self.uses.local(v, site)
    }

    /// A block's statements, and its results (owned unless `view_results`
    /// allows views) with their representations.
    /// [`Emitter::block_parts`] of a body that runs in a closure or a
    /// condition-driven loop: scratch declarations made in it stay in it.
    pub fn closed_block_parts(
        &mut self,
        b: &Block,
        view_results: bool,
    ) -> R<(Code, Vec<Code>, Vec<Repr>)> {
        self.hoist.push(None);
        let r = self.block_parts(b, view_results);
        self.hoist.pop();
        r
    }

    /// The statements of `b` alone (its results left to the caller), as
    /// in [`Emitter::closed_block_parts`]: scratch declarations stay in it.
    pub fn closed_stmts(&mut self, b: &Block) -> R<Code> {
        self.hoist.push(None);
        let r = self.stmts(b);
        self.hoist.pop();
        r
    }

    fn stmts(&mut self, b: &Block) -> R<Code> {
        let inline = self.inlinable(b);
        let out = self.stmts_inlining(b, &inline);
        // An inlined expression is written at its one use, in this block.
        for (s, _) in b.stmts.iter().zip(inline).filter(|(_, f)| *f) {
            for v in s.binds.iter().chain(&s.lin_binds) {
                self.inlined.remove(v);
            }
        }
        out
    }

    /// The statements of `b`, those marked in `inline` kept for their one
    /// use instead of emitted (`inline_exprs.rs`).
    fn stmts_inlining(&mut self, b: &Block, inline: &[bool]) -> R<Code> {
        let mut stmts = Code::new();
        let mut k = 0;
        while let Some(s) = b.stmts.get(k) {
            if inline[k] {
                self.inline_expr(s)?;
                k += 1;
            } else if let Some(t) = self.map_then_row_sum(s, b.stmts.get(k + 1))? {
                stmts.extend(t);
                k += 2;
            } else {
                stmts.extend(self.stmt(s)?);
                k += 1;
            }
        }
        Ok(stmts)
    }

    /// A map of matrices whose one (linear) result the next statement sums
    /// over the rows, `let ; y = lsum v, axis=0`, emitted with that sum as
    /// one pass (`Emitter::map_sum_rows`): a reverse pass summing a per-row
    /// cotangent product over the points writes no `n x d` array for it.
    /// `None` for any other pair.
    fn map_then_row_sum(&mut self, s: &Stmt, next: Option<&Stmt>) -> R<Option<Code>> {
        let (Expr::Map(m), Some(t)) = (&s.expr, next) else {
            return Ok(None);
        };
        let (Expr::Lin(LinOp::Sum { x, axis: Some(0) }), [y]) = (&t.expr, &t.lin_binds[..]) else {
            return Ok(None);
        };
        let one_result = s.binds.is_empty()
            && s.lin_binds.as_slice() == [*x]
            && m.body.body.results.is_empty()
            && m.body.body.lin_results.len() == 1;
        if !one_result || self.ty(*x).rank() != Some(2) {
            return Ok(None);
        }
        let (site, sum_site) = (self.uses.stmt(s), self.uses.stmt(t));
        let Some(e) = self.map_sum_rows(m)? else {
            return Ok(None);
        };
        let before = std::mem::take(&mut self.before);
        let bind = self.let_(&[*y], &[Repr::Owned], e, true);
        // The map's result is never made: nothing of it to hand back.
        self.set_repr(*x, Repr::Val);
        let release = self.release_dead(s, site);
        let release_sum = self.release_dead(t, sum_site);
        Ok(Some(text!(#before #bind #release #release_sum)))
    }

    /// Places scratch declarations: with the enclosing sequential loop's
    /// (to go before it), or before the current statement.
    pub fn declare_scratch(&mut self, decls: Code) {
        match self.hoist.last_mut() {
            Some(Some(t)) => t.extend(decls),
            _ => self.before.extend(decls),
        }
    }

    pub fn block_parts(
        &mut self,
        b: &Block,
        view_results: bool,
    ) -> R<(Code, Vec<Code>, Vec<Repr>)> {
        let stmts = self.stmts(b)?;
        let site = self.uses.results(b);
        let mut results = vec![];
        let mut reprs = vec![];
        for a in &b.results {
            match a {
                Atom::Var(v) if view_results && self.returnable_view(*v) => {
                    let n = self.name(*v);
                    results.push(text!(#n));
                    reprs.push(Repr::View);
                }
                _ => {
                    results.push(self.own(a, site));
                    reprs.push(owned_repr(&self.atom_ty(a)));
                }
            }
        }
        for v in &b.lin_results {
            if view_results && self.returnable_view(*v) {
                let n = self.name(*v);
                results.push(text!(#n));
                reprs.push(Repr::View);
            } else {
                results.push(self.own_lin(*v, site));
                reprs.push(owned_repr(self.ty(*v)));
            }
        }
        Ok((stmts, results, reprs))
    }

    /// Whether `v` is a view that may be returned from the function body
    /// (it borrows nothing bound in the body).
    fn returnable_view(&self, v: Var) -> bool {
        self.repr(v) == Repr::View && !self.local_views.contains(&self.uses.root(v))
    }

    /// Whether the results of `s` (with representations `reprs`) include a
    /// view borrowing a binding of this body: a broadcast view (see
    /// [`Emitter::broadcast`]) or a view of such a view.
    fn borrows_local(&self, s: &Stmt, reprs: &[Repr]) -> bool {
        if !reprs.contains(&Repr::View) {
            return false;
        }
        if matches!(
            s.expr,
            Expr::Array(ArrayOp::Broadcast { .. }) | Expr::Lin(LinOp::Broadcast { .. })
        ) {
            return true;
        }
        let (mut nl, mut lin) = (vec![], vec![]);
        ad_core_ir::visit::for_each_operand(&s.expr, &mut |a| nl.extend(a.var()), &mut |v| {
            lin.push(v)
        });
        nl.iter()
            .chain(&lin)
            .any(|v| self.local_views.contains(&self.uses.root(*v)))
    }

    /// A block as an expression `{ stmts; results }` with owned results (a
    /// value, a tuple, or `()`).
    pub fn block_expr(&mut self, b: &Block) -> R<Code> {
        let (stmts, results, _) = self.block_parts(b, false)?;
        let r = types::flat(&results);
        Ok(text!({ #stmts #r }))
    }

    /// Binds variables to a value: `let (a, b): (A, B) = expr;`, or
    /// `let (a, b) = expr;` when every value is a `Copy` scalar (or tuple
    /// of scalars) and `self_typed`: the expression has one type of its own
    /// (every one the emitter writes does, suffixed literals and typed
    /// operands, except a call, which may be the user's generic
    /// `Default::default()`), and the type would only add tokens for rustc
    /// to read (issue 12).
    pub fn let_(&mut self, vars: &[Var], reprs: &[Repr], expr: Code, self_typed: bool) -> Code {
        for (v, r) in vars.iter().zip(reprs) {
            self.repr.insert(*v, *r);
        }
        let scalars = self_typed
            && vars
                .iter()
                .zip(reprs)
                .all(|(v, r)| *r == Repr::Val && types::is_copy(self.ty(*v)));
        match vars {
            [] => text!(let _ = #expr;),
            [v] if scalars => {
                let p = self.binder(*v);
                text!(let #p = #expr;)
            }
            _ if scalars => {
                let pats: Vec<_> = vars.iter().map(|v| self.binder(*v)).collect();
                let p = types::tuple(&pats);
                text!(let #p = #expr;)
            }
            [v] => {
                let (p, t) = (self.binder(*v), repr_ty(self.ty(*v), reprs[0]));
                text!(let #p: #t = #expr;)
            }
            _ => {
                let pats: Vec<_> = vars.iter().map(|v| self.binder(*v)).collect();
                let tys = vars
                    .iter()
                    .zip(reprs)
                    .map(|(v, r)| repr_ty(self.ty(*v), *r))
                    .collect();
                let (p, t) = (types::tuple(&pats), types::tuple_ty(tys));
                text!(let #p: #t = #expr;)
            }
        }
    }

    /// One statement.
    pub fn stmt(&mut self, s: &Stmt) -> R<Code> {
        let site = self.uses.stmt(s);
        if let Expr::Lin(LinOp::Dup(x)) = &s.expr {
            if let Some(t) = self.dup_view_then_move(*x, &s.lin_binds, site) {
                return Ok(t);
            }
        }
        let out = match &s.expr {
            _ if self.uses.aliases_only(s) => return Ok(Code::new()),
            Expr::Atom(a) => Out::one(Self::lit(a), Repr::Val),
            Expr::Prim(p, args) => self.prim(*p, args)?,
            Expr::Tuple(xs) => self.tuple_expr(xs, site),
            Expr::Untuple(a) => self.untuple_expr(a, site)?,
            Expr::Array(op) => self.array_op(op, &s.binds, site)?,
            Expr::Lin(LinOp::Drop(v)) => {
                let n = self.name(*v);
                // A dropped temporary array's buffer goes back to the pool.
                if self.releasable(*v, site) {
                    let rt = types::rt();
                    return Ok(text!(#rt::recycle(#n);));
                }
                return Ok(text!(let _ = #n;));
            }
            Expr::Lin(op) => self.lin_op(op, &s.lin_binds, site)?,
            Expr::Call(c) => self.call(c, s, site)?,
            Expr::If(i) => self.if_(i, s)?,
            Expr::Loop(l) => self.loop_(l, s, site)?,
            Expr::Build(b) => match self.slice_view(b, s) {
                Some(view) => view,
                None => self.build(b, s)?,
            },
            Expr::Map(m) => self.map(m, s)?,
            Expr::Fold(fd) => self.fold(fd, s, site)?,
            Expr::While(w) => self.while_(w, s, site)?,
        };
        let vars: Vec<Var> = s.binds.iter().chain(&s.lin_binds).copied().collect();
        if out.reprs.len() != vars.len() {
            return Err(format!(
                "a statement binds {} variables but its expression gives {}",
                vars.len(),
                out.reprs.len()
            ));
        }
        if self.borrows_local(s, &out.reprs) {
            self.local_views.extend(vars.iter().copied());
        }
        // Views whose lender lives until their last use (`Uses::lenders`)
        // leave it releasable there; any other view pins what it reads.
        let tracked = vars.iter().all(|v| self.uses.borrows_operand(*v));
        if out.reprs.contains(&Repr::View) && !tracked {
            let mut read = vec![];
            reads_deep(&s.expr, &mut read);
            let roots: Vec<Var> = read.iter().map(|v| self.uses.root(*v)).collect();
            self.viewed.extend(roots);
        }
        let before = std::mem::take(&mut self.before);
        let self_typed = !matches!(s.expr, Expr::Call(_));
        let bind = self.let_(&vars, &out.reprs, out.expr, self_typed);
        let release = self.release_dead(s, site);
        Ok(text!(#before #bind #release))
    }

    /// Whether `v`, used at `site`, is an owned array of the current body
    /// that no view may borrow (a statement with a view result marks what it
    /// reads as viewed): once dead, its
    /// buffer may go back to the pool (`ad_runtime::recycle`).
    pub fn releasable(&self, v: Var, site: usize) -> bool {
        matches!(self.ty(v), Ty::Array { .. })
            && self.repr(v) == Repr::Owned
            && self.uses.local(v, site)
            && !self.viewed.contains(&self.uses.root(v))
    }

    /// `ad_runtime::recycle(v);` for each temporary array that dies in the
    /// statement `s` (at `site`) and that the statement's code only
    /// borrowed: its buffer goes back to the per-thread pool instead of to
    /// the allocator, so the next large result reuses it (whole-array code
    /// allocates one array per operation; returned to the system, each
    /// would be page-faulted in again on the next call).
    ///
    /// Released: owned arrays bound in `s`'s block, not borrowed by any view
    /// (`viewed`), whose last use is an operand of a
    /// statement that reads its operands by reference (a map, a reduction,
    /// an element read, a matrix product) or lies inside a lambda of `s`
    /// (a closure or loop body borrows what it captures). An operand of any
    /// other statement may have been moved, and either branch of an `if`
    /// may move (or consume) what it uses, so those are left to Rust's drop.
    fn release_dead(&self, s: &Stmt, site: usize) -> Code {
        let dying = self.uses.dying_in(site);
        // Each branch of an `if` may consume a linear variable (or move the
        // non-linear one it uses last): what dies there is left to them.
        if dying.is_empty() || matches!(s.expr, Expr::If(_)) {
            return Code::new();
        }
        let (mut nl, mut lin) = (vec![], vec![]);
        ad_core_ir::visit::for_each_operand(&s.expr, &mut |a| nl.extend(a.var()), &mut |v| {
            lin.push(v)
        });
        // An operand that is a view of another array (`Uses::lenders`)
        // reads that array too.
        let direct: Vec<Var> = nl
            .iter()
            .chain(&lin)
            .flat_map(|v| std::iter::once(self.uses.root(*v)).chain(self.uses.lenders(*v)))
            .collect();
        let rt = types::rt();
        let mut out = Code::new();
        for &v in dying {
            if !self.releasable(v, site) {
                continue;
            }
            let released = if direct.contains(&v) {
                reads_operands_by_ref(s, self.f)
            } else {
                let last = self.uses.last_use(v);
                last.is_some_and(|l| self.uses.depth(l) > self.uses.depth(site))
            };
            if released {
                let n = self.name(v);
                out.extend(text!(#rt::recycle(#n);));
            }
        }
        out
    }
}

/// Whether the emitted code of `s` only borrows its direct array operands
/// (never moves one): a map, a reduction, an element read or a shape, a
/// matrix product, a linear sum or outer product.
fn reads_operands_by_ref(s: &Stmt, f: &Func) -> bool {
    match &s.expr {
        Expr::Map(_) => true,
        Expr::Array(
            ArrayOp::Reduce { .. }
            | ArrayOp::ArgReduce { .. }
            | ArrayOp::Shape { .. }
            | ArrayOp::Stride { .. }
            | ArrayOp::MatMul { .. },
        ) => true,
        Expr::Array(ArrayOp::Index {
            arr: Atom::Var(a),
            idx,
        }) => f.vars.ty(*a).rank() == Some(idx.len()),
        Expr::Lin(LinOp::Index { x, idx }) => f.vars.ty(*x).rank() == Some(idx.len()),
        Expr::Lin(LinOp::Sum { .. } | LinOp::MatMul { .. } | LinOp::Outer { .. }) => true,
        _ => false,
    }
}

/// Every variable `e` reads, in its operands and in its nested blocks.
fn reads_deep(e: &Expr, out: &mut Vec<Var>) {
    let mut lin = vec![];
    ad_core_ir::visit::for_each_operand(e, &mut |a| out.extend(a.var()), &mut |v| lin.push(v));
    out.extend(lin);
    for b in ad_core_ir::visit::blocks(e) {
        for s in &b.stmts {
            reads_deep(&s.expr, out);
        }
        out.extend(b.results.iter().filter_map(Atom::var));
        out.extend(&b.lin_results);
    }
}

/// An `f64` literal (`f64::NAN`, `f64::INFINITY` for non-finite values; a
/// leading `-` token for negative ones, including `-0.0`).
pub fn f64_lit(x: f64) -> Code {
    if x.is_nan() {
        text!(f64::NAN)
    } else if x == f64::INFINITY {
        text!(f64::INFINITY)
    } else if x == f64::NEG_INFINITY {
        text!(f64::NEG_INFINITY)
    } else {
        let l = f64_literal(x.abs());
        if x.is_sign_negative() {
            text!(-#l)
        } else {
            text!(#l)
        }
    }
}

/// A finite non-negative `f64` literal, in exponent form where the decimal
/// one is long (`2.2250738585072014e-308f64`, not 300 zeros and the digits):
/// both are the shortest form that reads back as `x`.
fn f64_literal(x: f64) -> Literal {
    if x != 0.0 && !(1e-5..1e16).contains(&x) {
        if let Ok(l) = format!("{x:e}f64").parse::<Literal>() {
            return l;
        }
    }
    Literal::f64_suffixed(x)
}

/// An `i64` literal.
pub fn i64_lit(x: i64) -> Code {
    if x == i64::MIN {
        text!(i64::MIN)
    } else {
        let l = Literal::i64_suffixed(x.abs());
        if x < 0 {
            text!(-#l)
        } else {
            text!(#l)
        }
    }
}
