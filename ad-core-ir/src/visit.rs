//! Generic traversals: operands of a statement, nested blocks, free variables,
//! substitution. Every pass uses these instead of matching on every construct.
//!
//! Terminology: the *direct operands* of an expression are the atoms and linear
//! variables it reads itself (not those read inside its lambdas or branches);
//! the *free variables* of a block are the variables it reads that it does not
//! bind (lambda parameters count as bound).

use crate::fast_hash::FastMap;
use crate::ir::*;
use std::collections::BTreeSet;

fn dims_atoms<'a>(s: &'a ShapeTree, out: &mut Vec<&'a Atom>, of: &mut Vec<Var>) {
    match s {
        ShapeTree::Scalar => {}
        ShapeTree::Array(ds) => {
            for d in ds {
                match d {
                    Dim::Atom(a) => out.push(a),
                    Dim::Of(v, _) => of.push(*v),
                }
            }
        }
        ShapeTree::Tuple(ts) => ts.iter().for_each(|t| dims_atoms(t, out, of)),
    }
}

/// Calls `nl` on every non-linear operand atom and `lin` on every linear operand
/// variable that the expression reads directly (not inside nested blocks).
/// Variables named by `Dim::Of` in shape trees are passed to `nl` as atoms.
pub fn for_each_operand(e: &Expr, nl: &mut dyn FnMut(&Atom), lin: &mut dyn FnMut(Var)) {
    let mut atoms: Vec<&Atom> = vec![];
    let mut of: Vec<Var> = vec![];
    match e {
        Expr::Atom(a) | Expr::Untuple(a) => atoms.push(a),
        Expr::Prim(_, xs) | Expr::Tuple(xs) => atoms.extend(xs),
        Expr::Array(op) => op.for_each_atom(&mut |a| atoms.push(a)),
        Expr::Lin(op) => {
            let mut zero = None;
            op.for_each_operand(&mut |a| atoms.push(a), lin, &mut |s| zero = Some(s));
            if let Some(s) = zero {
                dims_atoms(s, &mut atoms, &mut of);
            }
        }
        Expr::Call(c) => {
            atoms.extend(&c.args);
            c.lin_args.iter().for_each(|x| lin(*x));
            c.lin_shapes
                .iter()
                .for_each(|s| dims_atoms(s, &mut atoms, &mut of));
        }
        Expr::If(i) => {
            atoms.push(&i.cond);
            i.lin_shapes
                .iter()
                .for_each(|s| dims_atoms(s, &mut atoms, &mut of));
        }
        Expr::Loop(l) => {
            atoms.push(&l.n);
            atoms.extend(&l.init);
            l.lin_init.iter().for_each(|x| lin(*x));
        }
        Expr::Build(b) => atoms.extend(&b.shape),
        Expr::Map(m) => {
            atoms.extend(&m.arrs);
            m.lin_arrs.iter().for_each(|x| lin(*x));
        }
        Expr::Fold(fd) => {
            atoms.extend(&fd.init);
            atoms.push(&fd.arr);
        }
        Expr::While(w) => atoms.extend(&w.init),
    }
    for a in atoms {
        nl(a);
    }
    for v in of {
        nl(&Atom::Var(v));
    }
}

/// Mutable version of [`for_each_operand`]: rewrites operands in place.
pub fn map_operands(e: &mut Expr, nl: &mut dyn FnMut(&mut Atom), lin: &mut dyn FnMut(&mut Var)) {
    // `Dim::Of` variables are non-linear: rewrite them through `nl` when it maps
    // them to another variable (a literal cannot stand in a `Dim::Of`, so the dim
    // becomes that atom instead).
    fn dims(s: &mut ShapeTree, nl: &mut dyn FnMut(&mut Atom)) {
        match s {
            ShapeTree::Scalar => {}
            ShapeTree::Array(ds) => {
                for d in ds {
                    match d {
                        Dim::Atom(a) => nl(a),
                        Dim::Of(v, _) => {
                            let mut a = Atom::Var(*v);
                            nl(&mut a);
                            match a {
                                Atom::Var(w) => *v = w,
                                other => panic!("map_operands: array variable {v} replaced by literal {other:?}"),
                            }
                        }
                    }
                }
            }
            ShapeTree::Tuple(ts) => ts.iter_mut().for_each(|t| dims(t, nl)),
        }
    }
    match e {
        Expr::Atom(a) | Expr::Untuple(a) => nl(a),
        Expr::Prim(_, xs) | Expr::Tuple(xs) => xs.iter_mut().for_each(nl),
        Expr::Array(op) => op.for_each_atom_mut(nl),
        Expr::Lin(op) => {
            let mut zero = None;
            op.for_each_operand_mut(nl, lin, &mut |s| zero = Some(s));
            if let Some(s) = zero {
                dims(s, nl);
            }
        }
        Expr::Call(c) => {
            c.args.iter_mut().for_each(&mut *nl);
            c.lin_args.iter_mut().for_each(lin);
            c.lin_shapes.iter_mut().for_each(|s| dims(s, nl));
        }
        Expr::If(i) => {
            nl(&mut i.cond);
            i.lin_shapes.iter_mut().for_each(|s| dims(s, nl));
        }
        Expr::Loop(l) => {
            nl(&mut l.n);
            l.init.iter_mut().for_each(nl);
            l.lin_init.iter_mut().for_each(lin);
        }
        Expr::Build(b) => b.shape.iter_mut().for_each(nl),
        Expr::Map(m) => {
            m.arrs.iter_mut().for_each(nl);
            m.lin_arrs.iter_mut().for_each(lin);
        }
        Expr::Fold(fd) => {
            fd.init.iter_mut().for_each(&mut *nl);
            nl(&mut fd.arr);
        }
        Expr::While(w) => w.init.iter_mut().for_each(nl),
    }
}

/// The lambdas of an expression (bodies of loops, builds, maps, folds; a
/// while's condition and body).
pub fn lambdas(e: &Expr) -> Nested<&Lambda> {
    match e {
        Expr::Loop(l) => Nested::one(&l.body),
        Expr::Build(b) => Nested::one(&b.body),
        Expr::Map(m) => Nested::one(&m.body),
        Expr::Fold(f) => Nested::one(&f.body),
        Expr::While(w) => Nested::two(&w.cond, &w.body),
        Expr::Atom(_)
        | Expr::Prim(..)
        | Expr::Array(_)
        | Expr::Tuple(_)
        | Expr::Untuple(_)
        | Expr::Lin(_)
        | Expr::Call(_)
        | Expr::If(_) => Nested::none(),
    }
}

/// The nested blocks of an expression: lambda bodies and `If` branches.
pub fn blocks(e: &Expr) -> Nested<&Block> {
    match e {
        Expr::If(i) => Nested::two(&i.then_, &i.else_),
        _ => {
            let Nested([a, b]) = lambdas(e);
            Nested([a.map(|l| &l.body), b.map(|l| &l.body)])
        }
    }
}

/// Mutable nested blocks of an expression.
pub fn blocks_mut(e: &mut Expr) -> Nested<&mut Block> {
    match e {
        Expr::If(i) => Nested::two(&mut i.then_, &mut i.else_),
        Expr::Loop(l) => Nested::one(&mut l.body.body),
        Expr::Build(b) => Nested::one(&mut b.body.body),
        Expr::Map(m) => Nested::one(&mut m.body.body),
        Expr::Fold(f) => Nested::one(&mut f.body.body),
        Expr::While(w) => Nested::two(&mut w.cond.body, &mut w.body.body),
        Expr::Atom(_)
        | Expr::Prim(..)
        | Expr::Array(_)
        | Expr::Tuple(_)
        | Expr::Untuple(_)
        | Expr::Lin(_)
        | Expr::Call(_) => Nested::none(),
    }
}

/// The at most two things nested in an expression (a `while`'s condition
/// and body, an `if`'s branches, a loop's body), in order, without
/// allocating: the simplifier and the emitter ask for them at every
/// statement of every pass.
#[derive(Clone, Debug)]
pub struct Nested<T>([Option<T>; 2]);

impl<T> Nested<T> {
    fn none() -> Self {
        Nested([None, None])
    }

    fn one(a: T) -> Self {
        Nested([Some(a), None])
    }

    fn two(a: T, b: T) -> Self {
        Nested([Some(a), Some(b)])
    }
}

impl<T> Iterator for Nested<T> {
    type Item = T;

    fn next(&mut self) -> Option<T> {
        match self.0[0].take() {
            Some(a) => Some(a),
            None => self.0[1].take(),
        }
    }
}

/// Free variables of a block: `(non-linear, linear)` variables read and not bound in it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FreeVars {
    /// Non-linear free variables.
    pub nl: BTreeSet<Var>,
    /// Linear free variables.
    pub lin: BTreeSet<Var>,
}

impl FreeVars {
    /// Adds another set.
    pub fn extend(&mut self, o: FreeVars) {
        self.nl.extend(o.nl);
        self.lin.extend(o.lin);
    }
}

/// Free variables of a block.
pub fn free_vars_block(b: &Block) -> FreeVars {
    let mut w = FreeWalk::default();
    w.block(b);
    w.fv
}

/// Free variables of a lambda (its parameters are bound).
pub fn free_vars_lambda(l: &Lambda) -> FreeVars {
    let mut w = FreeWalk::default();
    w.lambda(l);
    w.fv
}

/// Free variables of a statement: its direct operands plus the free variables
/// of its nested blocks (not its own non-linear results, which `lin_shapes`
/// of calls and ifs may name).
pub fn free_vars_stmt(s: &Stmt) -> FreeVars {
    stmt_free(s, None)
}

/// Whether the non-linear variable `v` is a free variable of `s`
/// (`free_vars_stmt(s).nl.contains(&v)`, without the sets of the others).
pub fn reads_free_nl(s: &Stmt, v: Var) -> bool {
    stmt_free(s, Some(v)).nl.contains(&v)
}

/// Whether the linear variable `v` is a free variable of `s`
/// (`free_vars_stmt(s).lin.contains(&v)`, without the sets of the others).
pub fn reads_free_lin(s: &Stmt, v: Var) -> bool {
    stmt_free(s, Some(v)).lin.contains(&v)
}

/// [`free_vars_stmt`], of `only` alone when given.
fn stmt_free(s: &Stmt, only: Option<Var>) -> FreeVars {
    let mut w = FreeWalk {
        only,
        ..FreeWalk::default()
    };
    w.stmt(s);
    for b in &s.binds {
        w.unbind(*b);
    }
    w.fv
}

/// One walk computing free variables: the variables in scope at the current
/// point (counted, so a name bound twice on a path stays bound until both
/// scopes end) and the free ones found so far (with `only`, of that one
/// variable alone). Equal to the recursive definition — a block's free
/// variables are each statement's, less those bound by earlier statements
/// of the block; a lambda's, its body's less its parameters; a
/// statement's, its operands' and nested blocks', less its own non-linear
/// results — in one pass over the tree instead of a set per level merged
/// into its parent's (`tests/properties.rs` compares the two on random
/// programs).
#[derive(Default)]
struct FreeWalk {
    bound: std::collections::BTreeMap<Var, u32>,
    fv: FreeVars,
    only: Option<Var>,
}

impl FreeWalk {
    fn tracked(&self, v: Var) -> bool {
        self.only.is_none_or(|o| o == v)
    }

    fn bind(&mut self, v: Var) {
        if self.tracked(v) {
            *self.bound.entry(v).or_insert(0) += 1;
        }
    }

    fn unbind(&mut self, v: Var) {
        if let Some(c) = self.bound.get_mut(&v) {
            *c -= 1;
            if *c == 0 {
                self.bound.remove(&v);
            }
        }
    }

    fn read_nl(&mut self, v: Var) {
        if self.tracked(v) && !self.bound.contains_key(&v) {
            self.fv.nl.insert(v);
        }
    }

    fn read_lin(&mut self, v: Var) {
        if self.tracked(v) && !self.bound.contains_key(&v) {
            self.fv.lin.insert(v);
        }
    }

    /// A block: each statement's binders are in scope after it, until the
    /// block ends.
    fn block(&mut self, b: &Block) {
        for s in &b.stmts {
            self.stmt(s);
            for v in &s.lin_binds {
                self.bind(*v);
            }
        }
        for a in &b.results {
            if let Atom::Var(v) = a {
                self.read_nl(*v);
            }
        }
        for v in &b.lin_results {
            self.read_lin(*v);
        }
        for s in &b.stmts {
            for v in s.binds.iter().chain(&s.lin_binds) {
                self.unbind(*v);
            }
        }
    }

    fn lambda(&mut self, l: &Lambda) {
        for p in l.params.iter().chain(&l.lin_params) {
            self.bind(*p);
        }
        self.block(&l.body);
        for p in l.params.iter().chain(&l.lin_params) {
            self.unbind(*p);
        }
    }

    /// A statement, leaving its non-linear results bound (they are in scope
    /// for its own operands: `lin_shapes`).
    fn stmt(&mut self, s: &Stmt) {
        for b in &s.binds {
            self.bind(*b);
        }
        let (bound, fv, only) = (&self.bound, &mut self.fv, self.only);
        let free = |v: Var| only.is_none_or(|o| o == v) && !bound.contains_key(&v);
        for_each_operand(
            &s.expr,
            &mut |a| {
                if let Atom::Var(v) = a {
                    if free(*v) {
                        fv.nl.insert(*v);
                    }
                }
            },
            &mut |v| {
                if free(v) {
                    fv.lin.insert(v);
                }
            },
        );
        match &s.expr {
            Expr::If(i) => {
                self.block(&i.then_);
                self.block(&i.else_);
            }
            e => {
                for l in lambdas(e) {
                    self.lambda(l);
                }
            }
        }
    }
}

/// Substitutes variables everywhere in a block (operands, results, nested
/// blocks): non-linear uses through `nl`, linear uses through `lin`. Binders
/// are not renamed.
pub fn substitute_block(b: &mut Block, nl: &FastMap<Var, Atom>, lin: &FastMap<Var, Var>) {
    for s in &mut b.stmts {
        substitute_stmt(s, nl, lin);
    }
    for a in &mut b.results {
        if let Atom::Var(v) = a {
            if let Some(r) = nl.get(v) {
                *a = *r;
            }
        }
    }
    for v in &mut b.lin_results {
        if let Some(r) = lin.get(v) {
            *v = *r;
        }
    }
}

/// Substitutes variables in one statement (operands and nested blocks).
pub fn substitute_stmt(s: &mut Stmt, nl: &FastMap<Var, Atom>, lin: &FastMap<Var, Var>) {
    if nl.is_empty() && lin.is_empty() {
        return;
    }
    map_operands(
        &mut s.expr,
        &mut |a| {
            if let Atom::Var(v) = a {
                if let Some(r) = nl.get(v) {
                    *a = *r;
                }
            }
        },
        &mut |v| {
            if let Some(r) = lin.get(v) {
                *v = *r;
            }
        },
    );
    for blk in blocks_mut(&mut s.expr) {
        substitute_block(blk, nl, lin);
    }
}

/// Number of statements in a block, nested blocks included (program size).
pub fn size_block(b: &Block) -> usize {
    b.stmts
        .iter()
        .map(|s| 1 + blocks(&s.expr).map(size_block).sum::<usize>())
        .sum()
}

/// Number of statements in a function, nested blocks included.
pub fn size_func(f: &Func) -> usize {
    size_block(&f.body)
}

/// Every variable bound anywhere in the statements (binders, lambda parameters,
/// nested blocks), in order of appearance.
pub fn binders(stmts: &[Stmt]) -> Vec<Var> {
    let mut out = vec![];
    for s in stmts {
        out.extend(&s.binds);
        out.extend(&s.lin_binds);
        for l in lambdas(&s.expr) {
            out.extend(&l.params);
            out.extend(&l.lin_params);
        }
        for b in blocks(&s.expr) {
            out.extend(binders(&b.stmts));
        }
    }
    out
}

/// Renames variables everywhere in a statement — binders, lambda parameters,
/// uses, shapes, nested blocks — through `map` (variables not in `map` stay).
pub fn rename_stmt(s: &mut Stmt, map: &FastMap<Var, Var>) {
    let r = |v: &mut Var| {
        if let Some(w) = map.get(v) {
            *v = *w;
        }
    };
    s.binds.iter_mut().for_each(r);
    s.lin_binds.iter_mut().for_each(r);
    map_operands(
        &mut s.expr,
        &mut |a| {
            if let Atom::Var(v) = a {
                r(v);
            }
        },
        &mut |v| r(v),
    );
    match &mut s.expr {
        Expr::Loop(Loop { body, .. })
        | Expr::Build(Build { body, .. })
        | Expr::Map(Map { body, .. })
        | Expr::Fold(Fold { body, .. }) => {
            body.params.iter_mut().for_each(r);
            body.lin_params.iter_mut().for_each(r);
        }
        Expr::While(w) => {
            for l in [&mut w.cond, &mut w.body] {
                l.params.iter_mut().for_each(r);
                l.lin_params.iter_mut().for_each(r);
            }
        }
        Expr::Atom(_)
        | Expr::Prim(..)
        | Expr::Array(_)
        | Expr::Tuple(_)
        | Expr::Untuple(_)
        | Expr::Lin(_)
        | Expr::Call(_)
        | Expr::If(_) => {}
    }
    for b in blocks_mut(&mut s.expr) {
        for st in &mut b.stmts {
            rename_stmt(st, map);
        }
        for a in &mut b.results {
            if let Atom::Var(v) = a {
                r(v);
            }
        }
        b.lin_results.iter_mut().for_each(r);
    }
}

/// Adds the variables a shape reads to `out` (sizes that are variables and
/// the arrays of `Dim::Of`).
pub fn shape_vars(s: &ShapeTree, out: &mut BTreeSet<Var>) {
    match s {
        ShapeTree::Scalar => {}
        ShapeTree::Array(ds) => {
            for d in ds {
                match d {
                    Dim::Atom(Atom::Var(v)) | Dim::Of(v, _) => {
                        out.insert(*v);
                    }
                    Dim::Atom(_) => {}
                }
            }
        }
        ShapeTree::Tuple(ts) => ts.iter().for_each(|t| shape_vars(t, out)),
    }
}
