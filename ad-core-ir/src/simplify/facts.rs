//! Facts gathered by a forward walk and small helpers shared by the rules:
//! the defining expression of each variable, the known sizes of arrays
//! (for shape folding and fusion), occurrence counts, substitutions.

use crate::dense::{VarMap, VarSet};
use crate::fast_hash::FastMap;
use crate::ir::*;
use crate::types::Ty;
use crate::visit::{blocks, blocks_mut, for_each_operand, substitute_block};

/// What a forward walk knows about the variables bound so far.
///
/// `defs` holds the expression of every variable bound by a *simple* statement
/// (atom, primitive, array operation, tuple, untuple, linear operation) with
/// the position of the variable among the statement's results; compound
/// statements (calls, ifs, loops, builds, maps, folds) are not recorded there.
/// `dims` holds, for non-linear arrays, the sizes known from their definition,
/// in canonical form (see [`Facts::canon_dim`]).
/// `non_negative` holds the `i64` variables bound as indices (a counted
/// loop's counter, a build's indices) and trip counts (a `while`'s): never
/// negative.
#[derive(Clone, Debug, Default)]
pub struct Facts {
    defs: VarMap<(Expr, usize)>,
    dims: VarMap<Vec<Option<Dim>>>,
    non_negative: VarSet,
}

impl Facts {
    /// The simple expression binding `v` and the index of `v` among its results.
    pub fn def(&self, v: Var) -> Option<(&Expr, usize)> {
        self.defs.get(&v).map(|(e, i)| (e, *i))
    }

    /// The shape of `v` if it is bound by `LinOp::Zero`.
    pub fn zero_shape(&self, v: Var) -> Option<&ShapeTree> {
        match self.def(v) {
            Some((Expr::Lin(LinOp::Zero(s)), 0)) => Some(s),
            _ => None,
        }
    }

    /// The canonical size of axis `k` of the non-linear array `v`: a known
    /// size (an `i64` atom, or an axis of an array `v` was computed from with
    /// the same size), else `Dim::Of(v, k)` itself.
    pub fn dim_of(&self, v: Var, k: usize) -> Dim {
        self.dims
            .get(&v)
            .and_then(|ds| ds.get(k).copied().flatten())
            .unwrap_or(Dim::Of(v, k))
    }

    /// The canonical form of an `i64` atom used as a size: `n` bound by
    /// `shape(x, k)` becomes `dim_of(x, k)`.
    pub fn canon_atom(&self, a: Atom) -> Dim {
        if let Atom::Var(n) = a {
            if let Some((
                Expr::Array(ArrayOp::Shape {
                    arr: Atom::Var(x),
                    axis,
                }),
                0,
            )) = self.def(n)
            {
                return self.dim_of(*x, *axis);
            }
        }
        Dim::Atom(a)
    }

    /// The canonical form of a size. Two sizes with equal canonical forms are
    /// equal at run time (whenever the program runs without error).
    pub fn canon_dim(&self, d: Dim) -> Dim {
        match d {
            Dim::Atom(a) => self.canon_atom(a),
            Dim::Of(v, k) => self.dim_of(v, k),
        }
    }

    /// Whether two sizes are known to be equal.
    pub fn same_dim(&self, a: Dim, b: Dim) -> bool {
        self.canon_dim(a) == self.canon_dim(b)
    }

    /// Whether `v` is an index or a trip count: an `i64` never negative.
    pub fn is_index(&self, v: Var) -> bool {
        self.non_negative.contains(&v)
    }

    /// Records the indices the nested blocks of `e` bind (before they are
    /// walked): a counted loop's counter `i` (its body's first parameter,
    /// running over `0..n`) and a build's indices.
    pub fn enter(&mut self, e: &Expr) {
        match e {
            Expr::Loop(l) => self.non_negative.extend(l.body.params.first().copied()),
            Expr::Build(b) => self.non_negative.extend(b.body.params.iter().copied()),
            Expr::Atom(_)
            | Expr::Prim(..)
            | Expr::Array(_)
            | Expr::Tuple(_)
            | Expr::Untuple(_)
            | Expr::Lin(_)
            | Expr::Call(_)
            | Expr::If(_)
            | Expr::Map(_)
            | Expr::Fold(_)
            | Expr::While(_) => {}
        }
    }

    /// Records the statement `s` (already rewritten: its operands are final).
    pub fn record(&mut self, s: &Stmt, vars: &VarTable) {
        if let Expr::While(_) = s.expr {
            self.non_negative.extend(s.binds.first().copied());
        }
        let simple = match &s.expr {
            Expr::Atom(_)
            | Expr::Prim(..)
            | Expr::Array(_)
            | Expr::Tuple(_)
            | Expr::Untuple(_)
            | Expr::Lin(_) => true,
            Expr::Call(_)
            | Expr::If(_)
            | Expr::Loop(_)
            | Expr::Build(_)
            | Expr::Map(_)
            | Expr::Fold(_)
            | Expr::While(_) => false,
        };
        if simple {
            for (i, v) in s.binds.iter().enumerate() {
                self.defs.insert(*v, (s.expr.clone(), i));
            }
            for (i, v) in s.lin_binds.iter().enumerate() {
                self.defs.insert(*v, (s.expr.clone(), i));
            }
        }
        for v in &s.binds {
            let rank = match vars.ty(*v) {
                Ty::Array { rank, .. } => *rank,
                _ => continue,
            };
            let ds: Vec<Option<Dim>> = (0..rank).map(|k| self.known_dim(s, vars, k)).collect();
            if ds.iter().any(Option::is_some) {
                self.dims.insert(*v, ds);
            }
        }
    }

    /// The size of axis `k` of the (first, or only array) result of `s`.
    fn known_dim(&self, s: &Stmt, vars: &VarTable, k: usize) -> Option<Dim> {
        let of = |a: &Atom, k: usize| a.var().map(|v| self.dim_of(v, k));
        let rank = |a: &Atom| crate::typing::atom_ty(a, vars).rank().unwrap_or(0);
        match &s.expr {
            Expr::Atom(a) => of(a, k),
            Expr::Array(op) => match op {
                ArrayOp::Index { arr, idx } => of(arr, idx.len() + k),
                ArrayOp::Update { arr, .. } | ArrayOp::Scan { arr, .. } => of(arr, k),
                ArrayOp::Gather { arr, idx } => {
                    if k == 0 {
                        of(idx, 0)
                    } else {
                        of(arr, k)
                    }
                }
                ArrayOp::ScatterAdd { len, vals, .. } => {
                    if k == 0 {
                        Some(self.canon_atom(*len))
                    } else {
                        of(vals, k)
                    }
                }
                ArrayOp::Reduce { arr, axis, .. } | ArrayOp::ArgReduce { arr, axis, .. } => {
                    let ax = (*axis)?;
                    of(arr, if k < ax { k } else { k + 1 })
                }
                ArrayOp::MatMul { a, b } => match (rank(a), rank(b), k) {
                    (2, _, 0) => of(a, 0),
                    (1, 2, 0) | (2, 2, 1) => of(b, 1),
                    _ => None,
                },
                ArrayOp::Transpose { arr } => of(arr, 1 - k.min(1)),
                ArrayOp::Broadcast { shape, .. } => shape.get(k).map(|a| self.canon_atom(*a)),
                ArrayOp::Shape { .. } | ArrayOp::Stride { .. } => None,
            },
            Expr::Build(b) => b.shape.get(k).map(|a| self.canon_atom(*a)),
            Expr::Map(m) => {
                let a0 = m.arrs.first()?;
                if k < rank(a0) {
                    of(a0, k)
                } else {
                    None
                }
            }
            Expr::Prim(..)
            | Expr::Tuple(_)
            | Expr::Untuple(_)
            | Expr::Lin(_)
            | Expr::Call(_)
            | Expr::If(_)
            | Expr::Loop(_)
            | Expr::Fold(_)
            | Expr::While(_) => None,
        }
    }
}

/// Occurrence counts of variables: every operand position, block result and
/// `Dim::Of` reference, nested blocks included (lambda parameters and binders
/// are not occurrences). Dense, indexed by variable number (variables are
/// numbered from 0 in their function's table); an absent variable counts 0.
#[derive(Clone, Debug, Default)]
pub struct Counts(Vec<u32>);

impl Counts {
    /// The count of `v`.
    pub fn get(&self, v: Var) -> usize {
        self.0.get(v.0 as usize).map_or(0, |c| *c as usize)
    }

    /// Sets the count of `v`.
    pub fn set(&mut self, v: Var, n: usize) {
        let k = v.0 as usize;
        if k >= self.0.len() {
            self.0.resize(k + 1, 0);
        }
        self.0[k] = u32::try_from(n).unwrap_or(u32::MAX);
    }

    /// Adds one occurrence of `v` (`add`) or removes one (never below 0).
    pub fn bump(&mut self, v: Var, add: bool) {
        let n = self.get(v);
        self.set(v, if add { n + 1 } else { n.saturating_sub(1) });
    }
}

/// Adds (`add = true`) or removes the occurrences in one statement.
pub fn count_stmt(s: &Stmt, counts: &mut Counts, add: bool) {
    let counts = std::cell::RefCell::new(counts);
    for_each_operand(
        &s.expr,
        &mut |a| {
            if let Atom::Var(v) = a {
                counts.borrow_mut().bump(*v, add);
            }
        },
        &mut |v| counts.borrow_mut().bump(v, add),
    );
    let counts = counts.into_inner();
    for b in blocks(&s.expr) {
        count_block(b, counts, add);
    }
}

/// Adds or removes the occurrences in a block (statements and results).
pub fn count_block(b: &Block, counts: &mut Counts, add: bool) {
    for s in &b.stmts {
        count_stmt(s, counts, add);
    }
    let vs = b
        .results
        .iter()
        .filter_map(Atom::var)
        .chain(b.lin_results.iter().copied());
    for v in vs {
        counts.bump(v, add);
    }
}

/// The occurrence counts of a function's body, kept by a sequence of passes
/// while none of them changes the body (a pass takes them, or computes them,
/// and puts them back only if it changed nothing): the fusion passes of a
/// sweep share one count instead of each counting the whole body. Each
/// fusion pass takes one (`&mut None` counts afresh).
pub type CountsMemo = Option<Counts>;

/// Occurrence counts of a whole block.
pub fn counts_of(b: &Block) -> Counts {
    let mut c = Counts::default();
    count_block(b, &mut c, true);
    c
}

/// The count of `v` (0 when absent).
pub fn count(counts: &Counts, v: Var) -> usize {
    counts.get(v)
}

/// A pending substitution: non-linear variables to atoms, linear to variables.
#[derive(Clone, Debug, Default)]
pub struct Subst {
    /// Non-linear replacements.
    pub nl: FastMap<Var, Atom>,
    /// Linear replacements.
    pub lin: FastMap<Var, Var>,
}

impl Subst {
    /// Whether nothing is substituted.
    pub fn is_empty(&self) -> bool {
        self.nl.is_empty() && self.lin.is_empty()
    }

    /// The current replacement of a non-linear atom (chains followed).
    pub fn atom(&self, a: Atom) -> Atom {
        let mut a = a;
        for _ in 0..64 {
            match a {
                Atom::Var(v) => match self.nl.get(&v) {
                    Some(r) => a = *r,
                    None => return a,
                },
                _ => return a,
            }
        }
        a
    }

    /// The current replacement of a linear variable (chains followed).
    pub fn lin_var(&self, v: Var) -> Var {
        let mut v = v;
        for _ in 0..64 {
            match self.lin.get(&v) {
                Some(r) => v = *r,
                None => return v,
            }
        }
        v
    }

    /// Records `y := a` (non-linear).
    pub fn set_nl(&mut self, y: Var, a: Atom) {
        let a = self.atom(a);
        if a != Atom::Var(y) {
            self.nl.insert(y, a);
        }
    }

    /// Records `y := x` (linear).
    pub fn set_lin(&mut self, y: Var, x: Var) {
        let x = self.lin_var(x);
        if x != y {
            self.lin.insert(y, x);
        }
    }

    /// The substitution with every chain resolved.
    pub fn resolved(&self) -> (FastMap<Var, Atom>, FastMap<Var, Var>) {
        let nl = self
            .nl
            .keys()
            .map(|v| (*v, self.atom(Atom::Var(*v))))
            .collect();
        let lin = self.lin.keys().map(|v| (*v, self.lin_var(*v))).collect();
        (nl, lin)
    }

    /// Applies the substitution to the direct operands of an expression.
    pub fn apply_operands(&self, e: &mut Expr) {
        if self.is_empty() {
            return;
        }
        crate::visit::map_operands(e, &mut |a| *a = self.atom(*a), &mut |v| {
            *v = self.lin_var(*v)
        });
    }

    /// Applies the substitution to a block's results.
    pub fn apply_results(&self, b: &mut Block) {
        if self.is_empty() {
            return;
        }
        for a in &mut b.results {
            *a = self.atom(*a);
        }
        for v in &mut b.lin_results {
            *v = self.lin_var(*v);
        }
    }

    /// Applies the substitution everywhere in a block.
    pub fn apply_block(&self, b: &mut Block) {
        if self.is_empty() {
            return;
        }
        let (nl, lin) = self.resolved();
        substitute_block(b, &nl, &lin);
    }
}

/// Calls `f` on every block of `b` (nested ones first, then `b` itself).
pub fn for_each_block_mut(b: &mut Block, f: &mut dyn FnMut(&mut Block)) {
    for s in &mut b.stmts {
        for nb in blocks_mut(&mut s.expr) {
            for_each_block_mut(nb, f);
        }
    }
    f(b);
}

/// A statement with the given binders.
pub fn stmt(binds: Vec<Var>, lin_binds: Vec<Var>, expr: Expr, src: Option<SrcId>) -> Stmt {
    Stmt {
        binds,
        lin_binds,
        expr,
        src,
    }
}

/// `drop(v)`.
pub fn drop_stmt(v: Var, src: Option<SrcId>) -> Stmt {
    stmt(vec![], vec![], Expr::Lin(LinOp::Drop(v)), src)
}

/// Whether the statement is `drop(_)`.
pub fn is_drop(s: &Stmt) -> bool {
    matches!(s.expr, Expr::Lin(LinOp::Drop(_)))
}

/// Whether the expression reads or binds linear values (directly or inside).
pub fn touches_linear(s: &Stmt) -> bool {
    if !s.lin_binds.is_empty() {
        return true;
    }
    let fv = crate::visit::free_vars_stmt(s);
    !fv.lin.is_empty()
}
