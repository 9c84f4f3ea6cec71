//! Transposition: runs a Linear B function backwards.
//!
//! For `L(r ; dx) -> dy` linear in `dx`, `Lᵀ(r ; ȳ) -> x̄` satisfies
//! `<ȳ, L(r ; dx)> = <Lᵀ(r ; ȳ), dx>` for all `dx`, `ȳ`.
//!
//! ```text
//! def f__lin(c ; dx) {            def f__lin_t(c ; ct) {
//!   let ; ds = lscale c, dx         let ; cx = lscale c, ct
//!   return (; ds)                   return (; cx)
//! }                               }
//! ```
//!
//! Each block is transposed as: its non-linear statements first, in order
//! (they compute partials and read residuals); then its linear statements in
//! reverse, each turning the cotangents of its results into contributions to
//! the cotangents of its linear operands.
//!
//! *Cotangent environment.* A linear variable's cotangent is a list of
//! contributions, materialised once, when the statement binding the variable
//! is transposed: dense values are added (`ladd`), and `lindex` contributes a
//! *sparse* `(index, value)` pair applied as an in-place `lupdate +=` onto the
//! dense sum (or onto a zero), so reading one element of an array costs one
//! element in reverse, never a one-hot array. A variable with no contribution
//! has a symbolic zero cotangent (the note in [`crate::simplify::zeros`]).
//!
//! *Rules.* `ladd ↔ dup`, `drop ↔ zero`, `lneg`, `lscale(s) ↔ lscale(s)`,
//! `lindex/lgather ↔ lupdate+=/lscatter_add`, `lupdate ↔ ltake` (an element
//! write reads and clears the element's cotangent in place, O(1)), `lsum ↔ lbroadcast`,
//! `ltranspose`, `lmatmul(A; ·) ↔ lmatmul(Aᵀ; ·)` / outer products, `lscan ↔
//! reverse lscan`, calls of `g__lin` ↔ calls of `g__lin_t`, `if` branch-wise
//! (each branch returns the cotangents of the captured variables), loops run
//! in the opposite direction carrying the state cotangents and accumulators
//! of the captured variables, maps elementwise, builds as loop nests
//! accumulating into captured arrays (or, when they capture only scalars, as
//! builds whose per-element contributions are summed).
//!
//! The output uses cotangents freely; [`crate::dupdrop`] makes sharing explicit.

mod branch;
mod build;
mod captures;
mod loops;
mod map;
pub(crate) mod shapes;

use crate::build::FuncBuilder;
use crate::dupdrop::insert_dup_drop;
use crate::fast_hash::FastMap;
use crate::ir::*;
use crate::names::transpose_name;
use shapes::Binders;

/// A transposition failure: an unsupported linear construct (from the
/// shapes of linear values, `shapes.rs`) or an input its contract rules out.
pub type TransposeError = crate::error::PassError;

/// One contribution to a cotangent.
#[derive(Clone, Debug)]
pub(crate) enum Contrib {
    /// A whole value.
    Dense(Var),
    /// `value` added at `idx` (an element or leading-axes sub-array).
    At(Vec<Atom>, Var),
}

/// Transposes a Linear B function `L(r ; dx) -> (; dy)` into
/// `L_t(r ; ct_dy) -> (; ct_dx)`. `L` must have `lin_param_shapes`; callees'
/// transposes must be in `prog`.
///
/// This is two steps, which the driver runs (and checks) one by one: the
/// transposition rules ([`transpose_func_raw`]) and sharing made explicit
/// ([`insert_dup_drop`]).
pub fn transpose_func(prog: &Program, f: &Func) -> Result<Func, TransposeError> {
    let mut out = transpose_func_raw(prog, f)?;
    insert_dup_drop(&mut out);
    Ok(out)
}

/// The transposition rules of [`transpose_func`]. The output uses
/// cotangents freely: a linear variable may be read several times or
/// never, so it is Linear B only after [`crate::dupdrop`] has made sharing
/// explicit.
pub fn transpose_func_raw(prog: &Program, f: &Func) -> Result<Func, TransposeError> {
    if f.lin_param_shapes.len() != f.lin_params.len() {
        return Err(TransposeError::internal(
            format!("`{}` has no shapes for its linear parameters", f.name),
            None,
        ));
    }
    let binders = Binders::of(f);
    let mut t = Transposer {
        b: FuncBuilder::with_vars(prog, transpose_name(&f.name), f.vars.clone()),
        ct: FastMap::default(),
        alias: FastMap::default(),
        binders,
    };
    for &p in &f.params {
        t.b.add_param(p);
    }
    let mut seeds = vec![];
    for &y in &f.body.lin_results {
        let ty = f.vars.ty(y).clone();
        let shape = t.shape_of(y)?;
        let c = t.b.fresh_lin("ct", ty);
        t.b.add_lin_param(c, shape);
        seeds.push(Some(c));
    }
    t.block(&f.body, &seeds)?;
    let mut results = vec![];
    for &x in &f.lin_params {
        results.push(t.materialize_or_zero(x)?);
    }
    let mut out = t.b.finish(vec![], results);
    // A transposed function is never transposed again; its parameters'
    // shapes may name variables of the original body, so it declares none.
    out.lin_param_shapes.clear();
    Ok(out)
}

/// The transposition state.
pub(crate) struct Transposer<'p> {
    pub(crate) b: FuncBuilder<'p>,
    /// Contributions to the cotangent of each forward linear variable.
    pub(crate) ct: FastMap<Var, Vec<Contrib>>,
    /// `dup(x) -> (a, b)`: `ct(x) = ct(a) + ct(b)`, so contributions to `a`
    /// and `b` go straight into `x`'s list (`a -> x`, `b -> x`). A construct
    /// capturing only the copy `a` then threads `x`'s accumulated cotangent
    /// instead of starting from a zero, and `dup` transposes to nothing.
    pub(crate) alias: FastMap<Var, Var>,
    pub(crate) binders: Binders,
}

impl<'p> Transposer<'p> {
    /// The variable whose cotangent list holds `v`'s contributions.
    pub(crate) fn root(&self, mut v: Var) -> Var {
        while let Some(x) = self.alias.get(&v) {
            v = *x;
        }
        v
    }

    pub(crate) fn add(&mut self, v: Var, c: Contrib) {
        let r = self.root(v);
        self.ct.entry(r).or_default().push(c);
    }

    /// Removes and returns the contributions to `v`'s cotangent list.
    pub(crate) fn take(&mut self, v: Var) -> Option<Vec<Contrib>> {
        let r = self.root(v);
        self.ct.remove(&r)
    }

    /// The contributions to `v`'s cotangent list, if any.
    pub(crate) fn peek(&self, v: Var) -> Option<&Vec<Contrib>> {
        self.ct.get(&self.root(v))
    }

    /// Puts contributions back on `v`'s list.
    pub(crate) fn put(&mut self, v: Var, cs: Vec<Contrib>) {
        let r = self.root(v);
        self.ct.entry(r).or_default().extend(cs);
    }

    pub(crate) fn add_dense(&mut self, v: Var, c: Option<Var>) {
        if let Some(c) = c {
            self.add(v, Contrib::Dense(c));
        }
    }

    /// Sums the contributions to `v`'s cotangent (removing them); `None` when
    /// there are none (a symbolic zero).
    pub(crate) fn materialize(&mut self, v: Var) -> Result<Option<Var>, TransposeError> {
        let cs = self.take(v).unwrap_or_default();
        if cs.is_empty() {
            return Ok(None);
        }
        let mut acc: Option<Var> = None;
        let mut sparse = vec![];
        for c in cs {
            match c {
                Contrib::Dense(d) => {
                    acc = Some(match acc {
                        None => d,
                        Some(a) => self.b.lin(LinOp::Add(a, d)),
                    })
                }
                Contrib::At(idx, val) => sparse.push((idx, val)),
            }
        }
        let mut acc = match acc {
            Some(a) => a,
            None => {
                let s = self.shape_of(v)?;
                self.b.lin(LinOp::Zero(s))
            }
        };
        for (idx, val) in sparse {
            acc = self.b.lin(LinOp::Update {
                x: acc,
                idx,
                val,
                add: true,
            });
        }
        Ok(Some(acc))
    }

    /// As [`Self::materialize`], with a materialised zero for no contribution.
    pub(crate) fn materialize_or_zero(&mut self, v: Var) -> Result<Var, TransposeError> {
        match self.materialize(v)? {
            Some(c) => Ok(c),
            None => {
                let s = self.shape_of(v)?;
                Ok(self.b.lin(LinOp::Zero(s)))
            }
        }
    }

    /// Transposes a block into the builder's open block: non-linear statements
    /// first, then linear statements in reverse. `seeds` are the cotangents of
    /// the block's linear results. Contributions to variables bound outside the
    /// block (parameters, captured variables) are left in the environment.
    pub(crate) fn block(&mut self, b: &Block, seeds: &[Option<Var>]) -> Result<(), TransposeError> {
        for s in &b.stmts {
            if is_nonlinear(s) {
                self.b.push(s.clone());
            }
        }
        for s in &b.stmts {
            if let (Expr::Lin(LinOp::Dup(x)), [a, c]) = (&s.expr, s.lin_binds.as_slice()) {
                // Point the copies at the root, so a chain of dups costs one
                // lookup per use, not one per link.
                let r = self.root(*x);
                self.alias.insert(*a, r);
                self.alias.insert(*c, r);
            }
        }
        for (y, c) in b.lin_results.iter().zip(seeds) {
            self.add_dense(*y, *c);
        }
        for s in b.stmts.iter().rev() {
            if !is_nonlinear(s) {
                self.b.set_src(s.src);
                self.stmt(s)?;
            }
        }
        Ok(())
    }

    /// A size as an atom (emitting `shape(v, k)` for a symbolic size).
    pub(crate) fn dim_atom(&mut self, d: &Dim) -> Atom {
        match d {
            Dim::Atom(a) => *a,
            Dim::Of(v, k) => Atom::Var(self.b.shape(Atom::Var(*v), *k)),
        }
    }

    /// The shape of forward linear variable `v` (see [`shapes`]).
    pub(crate) fn shape_of(&self, v: Var) -> Result<ShapeTree, TransposeError> {
        self.binders.shape_of(&self.b.vars, v)
    }

    /// The sizes of an array-shaped forward linear variable.
    pub(crate) fn dims_of(&self, v: Var) -> Result<Vec<Dim>, TransposeError> {
        match self.shape_of(v)? {
            ShapeTree::Array(ds) => Ok(ds),
            other => Err(TransposeError::internal(
                format!("internal: expected an array shape, found {other:?}"),
                None,
            )),
        }
    }

    /// Transposes one linear statement.
    fn stmt(&mut self, s: &Stmt) -> Result<(), TransposeError> {
        match &s.expr {
            Expr::Lin(op) => self.lin_op(s, op),
            Expr::Call(c) => self.call(s, c),
            Expr::If(i) => self.if_(s, i),
            Expr::Loop(l) => self.loop_(s, l),
            Expr::Build(bd) => self.build(s, bd),
            Expr::Map(m) => self.map(s, m),
            Expr::Atom(_)
            | Expr::Prim(..)
            | Expr::Array(_)
            | Expr::Tuple(_)
            | Expr::Untuple(_)
            | Expr::Fold(_)
            | Expr::While(_) => Err(TransposeError::internal(
                "internal: a non-linear statement among linear ones",
                s.src,
            )),
        }
    }

    fn lin_op(&mut self, s: &Stmt, op: &LinOp) -> Result<(), TransposeError> {
        if let LinOp::Dup(_) = op {
            // Its copies' contributions already went to the source (aliases).
            return Ok(());
        }
        // Cotangents of the results.
        let mut cts = vec![];
        for &y in &s.lin_binds {
            cts.push(self.materialize(y)?);
        }
        if matches!(op, LinOp::Drop(_) | LinOp::Zero(_)) || cts.iter().all(Option::is_none) {
            return Ok(());
        }
        let ct = cts[0];
        match op {
            LinOp::Zero(_) | LinOp::Drop(_) => {}
            LinOp::Add(x, y) => {
                self.add_dense(*x, ct);
                self.add_dense(*y, ct);
            }
            LinOp::Neg(x) => {
                let c = self.b.lin(LinOp::Neg(ct.expect("non-zero")));
                self.add_dense(*x, Some(c));
            }
            LinOp::Scale { s: f, x } => {
                let c = ct.expect("non-zero");
                let x_scalar = self.b.ty(*x).rank() == Some(0);
                let f_array = self.b.atom_ty(f).rank().unwrap_or(0) > 0;
                let scaled = self.b.lin(LinOp::Scale { s: *f, x: c });
                let r = if x_scalar && f_array {
                    self.b.lin(LinOp::Sum {
                        x: scaled,
                        axis: None,
                    })
                } else {
                    scaled
                };
                self.add_dense(*x, Some(r));
            }
            LinOp::Dup(_) => unreachable!("handled above"),
            LinOp::Tuple(xs) => {
                let (_, parts) = self
                    .b
                    .emit(Expr::Lin(LinOp::Untuple(ct.expect("non-zero"))));
                for (x, p) in xs.iter().zip(parts) {
                    self.add_dense(*x, Some(p));
                }
            }
            LinOp::Untuple(x) => {
                let mut parts = vec![];
                for (k, c) in cts.iter().enumerate() {
                    parts.push(match c {
                        Some(c) => *c,
                        None => {
                            let sh = self.shape_of(s.lin_binds[k])?;
                            self.b.lin(LinOp::Zero(sh))
                        }
                    });
                }
                let t = self.b.lin(LinOp::Tuple(parts));
                self.add_dense(*x, Some(t));
            }
            LinOp::Index { x, idx } => {
                self.add(*x, Contrib::At(idx.clone(), ct.expect("non-zero")))
            }
            LinOp::Update { x, idx, val, add } => {
                // `x with [idx] = val`: x̄ = ȳ with [idx] = 0, v̄ = ȳ[idx]
                // (`+=`: x̄ = ȳ): one `ltake`, in place on ȳ, never a copy
                // of the whole array.
                let (_, parts) = self.b.emit(Expr::Lin(LinOp::Take {
                    x: ct.expect("non-zero"),
                    idx: idx.clone(),
                    zero: !add,
                }));
                self.add_dense(*val, Some(parts[0]));
                self.add_dense(*x, Some(parts[1]));
            }
            LinOp::Take { x, idx, zero } => {
                // (e, a) -> a with [idx] = e (`zero`) or += e: `lupdate`.
                let ca = match cts[1] {
                    Some(c) => c,
                    None => {
                        let sh = self.shape_of(s.lin_binds[1])?;
                        self.b.lin(LinOp::Zero(sh))
                    }
                };
                let cx = match cts[0] {
                    Some(ce) => self.b.lin(LinOp::Update {
                        x: ca,
                        idx: idx.clone(),
                        val: ce,
                        add: !zero,
                    }),
                    None if *zero => {
                        let sh = self.shape_of(s.lin_binds[0])?;
                        let z = self.b.lin(LinOp::Zero(sh));
                        self.b.lin(LinOp::Update {
                            x: ca,
                            idx: idx.clone(),
                            val: z,
                            add: false,
                        })
                    }
                    None => ca,
                };
                self.add_dense(*x, Some(cx));
            }
            LinOp::Gather { x, idx } => {
                let d0 = self.dims_of(*x)?[0];
                let len = self.dim_atom(&d0);
                let c = self.b.lin(LinOp::ScatterAdd {
                    len,
                    idx: *idx,
                    x: ct.expect("non-zero"),
                });
                self.add_dense(*x, Some(c));
            }
            LinOp::ScatterAdd { idx, x, .. } => {
                let c = self.b.lin(LinOp::Gather {
                    x: ct.expect("non-zero"),
                    idx: *idx,
                });
                self.add_dense(*x, Some(c));
            }
            LinOp::Sum { x, axis } => {
                let dims = self.dims_of(*x)?;
                let shape: Vec<Atom> = dims.iter().map(|d| self.dim_atom(d)).collect();
                let axes: Vec<usize> = match axis {
                    None => vec![],
                    Some(a) => (0..dims.len()).filter(|k| k != a).collect(),
                };
                let c = self.b.lin(LinOp::Broadcast {
                    x: ct.expect("non-zero"),
                    shape,
                    axes,
                });
                self.add_dense(*x, Some(c));
            }
            LinOp::Broadcast { x, shape, axes } => {
                let mut c = ct.expect("non-zero");
                if axes.is_empty() {
                    c = self.b.lin(LinOp::Sum { x: c, axis: None });
                } else {
                    for ax in (0..shape.len()).rev() {
                        if !axes.contains(&ax) {
                            c = self.b.lin(LinOp::Sum {
                                x: c,
                                axis: Some(ax),
                            });
                        }
                    }
                    // Axes of `x` of length 1 may have been stretched: sum
                    // them back, unless the sizes are the same atoms.
                    let dims = self.dims_of(*x)?;
                    let to: Vec<Atom> = dims.iter().map(|d| self.dim_atom(d)).collect();
                    if to.iter().zip(axes).any(|(d, ax)| *d != shape[*ax]) {
                        c = self.b.lin(LinOp::SumTo { x: c, shape: to });
                    }
                }
                self.add_dense(*x, Some(c));
            }
            LinOp::SumTo { x, .. } => {
                let dims = self.dims_of(*x)?;
                let shape: Vec<Atom> = dims.iter().map(|d| self.dim_atom(d)).collect();
                let axes = (0..shape.len()).collect();
                let c = self.b.lin(LinOp::Broadcast {
                    x: ct.expect("non-zero"),
                    shape,
                    axes,
                });
                self.add_dense(*x, Some(c));
            }
            LinOp::Transpose(x) => {
                let c = self.b.lin(LinOp::Transpose(ct.expect("non-zero")));
                self.add_dense(*x, Some(c));
            }
            LinOp::MatMul { a, x, lin_left } => {
                let c = ct.expect("non-zero");
                let ra = self.b.atom_ty(a).rank().unwrap_or(0);
                let rx = self.b.ty(*x).rank().unwrap_or(0);
                let r = self.matmul_t(*a, ra, rx, *lin_left, c);
                self.add_dense(*x, Some(r));
            }
            LinOp::Outer { x, b, lin_left } => {
                // x ⊗ b: x̄ = C·b;  b ⊗ x: x̄ = b·C.
                let c = self.b.lin(LinOp::MatMul {
                    a: *b,
                    x: ct.expect("non-zero"),
                    lin_left: *lin_left,
                });
                self.add_dense(*x, Some(c));
            }
            LinOp::Scan { x, reverse } => {
                let c = self.b.lin(LinOp::Scan {
                    x: ct.expect("non-zero"),
                    reverse: !reverse,
                });
                self.add_dense(*x, Some(c));
            }
        }
        Ok(())
    }

    /// The cotangent of the linear operand of a matrix product.
    ///
    /// `y = a·x`: (1,1) x̄ = a ȳ; (2,1) x̄ = ȳ·A; (1,2) X̄ = a ⊗ ȳ; (2,2) X̄ = Aᵀ·Ȳ.
    /// `y = x·a`: (1,1) x̄ = a ȳ; (2,1) X̄ = ȳ ⊗ a; (1,2) x̄ = A·ȳ; (2,2) X̄ = Ȳ·Aᵀ.
    fn matmul_t(&mut self, a: Atom, ra: usize, rx: usize, lin_left: bool, c: Var) -> Var {
        match (lin_left, rx, ra) {
            (_, 1, 1) => self.b.lin(LinOp::Scale { s: a, x: c }),
            (false, 1, 2) => self.b.lin(LinOp::MatMul {
                a,
                x: c,
                lin_left: true,
            }),
            (false, 2, 1) => self.b.lin(LinOp::Outer {
                x: c,
                b: a,
                lin_left: false,
            }),
            (true, 2, 1) => self.b.lin(LinOp::Outer {
                x: c,
                b: a,
                lin_left: true,
            }),
            (true, 1, 2) => self.b.lin(LinOp::MatMul {
                a,
                x: c,
                lin_left: false,
            }),
            (lin_left, _, _) => {
                let at = Atom::Var(self.b.array(ArrayOp::Transpose { arr: a }));
                self.b.lin(LinOp::MatMul {
                    a: at,
                    x: c,
                    lin_left,
                })
            }
        }
    }

    fn call(&mut self, s: &Stmt, c: &Call) -> Result<(), TransposeError> {
        let mut cts = vec![];
        for &y in &s.lin_binds {
            cts.push(self.materialize(y)?);
        }
        if cts.iter().all(Option::is_none) && !c.lin_args.is_empty() {
            return Ok(());
        }
        let name = transpose_name(&c.func);
        if self.b.program().func(&name).is_none() {
            return Err(TransposeError::internal(
                format!("internal: `{name}` is not in the program (transpose callees first)"),
                s.src,
            ));
        }
        let mut args = vec![];
        for (k, ct) in cts.into_iter().enumerate() {
            args.push(match ct {
                Some(v) => v,
                None => self.b.lin(LinOp::Zero(c.lin_shapes[k].clone())),
            });
        }
        let mut shapes = vec![];
        for &x in &c.lin_args {
            shapes.push(self.shape_of(x)?);
        }
        let (_, outs) = self.b.emit(Expr::Call(Call {
            func: name,
            args: c.args.clone(),
            lin_args: args,
            lin_shapes: shapes,
        }));
        for (x, o) in c.lin_args.iter().zip(outs) {
            self.add_dense(*x, Some(o));
        }
        Ok(())
    }
}

/// Whether a statement of a Linear B block is non-linear (copied forward).
pub(crate) fn is_nonlinear(s: &Stmt) -> bool {
    s.lin_binds.is_empty()
        && crate::visit::free_vars_stmt(s).lin.is_empty()
        && !matches!(s.expr, Expr::Lin(_))
}
