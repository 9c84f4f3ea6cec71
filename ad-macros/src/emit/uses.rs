//! Use analysis of one IR function: which use of a variable may move it.
//!
//! Every statement and every block's result list is a *site*, numbered in
//! evaluation order (a statement's own operands, then its nested blocks).
//! Lambda bodies (loop, build, map, fold) are one level deeper than the
//! statement that holds them: a value bound outside a lambda is read on every
//! iteration, so a use inside the lambda never moves it.
//!
//! - A non-linear variable may be moved at its last use if that use is at
//!   the depth of its binder and the site reads it only once. The last use
//!   is taken on each path: an `if`'s branches are alternatives, so the
//!   last use of `v` in the `then` branch is a last use when the `else`
//!   branch holds one (`let y = if c { upd(v) } else { v }` moves `v` in
//!   both, where counting sites in program order would clone it in the
//!   first: an array updated in a branch of a loop body was copied on
//!   every iteration).
//! - A linear variable is used exactly once (the checker's rule); it may be
//!   moved unless the use is inside a lambda its binder is outside of.
//!
//! Copies (`let y = x`, `Expr::Atom` of a variable, and both results of a
//! linear scalar's `dup`) are not emitted: `y` is an alias of `x` (both are
//! immutable `Copy` values), and uses of `y` count as uses of `x`.
//!
//! The analysis also finds the arrays that are only *read element by
//! element* (every use is an element `Index` or a `Shape`): such an array
//! never escapes its scope, so a loop may write it into a reused buffer;
//! and the linear variables that are only *read* (their one use is a linear
//! `Index` or a `Drop`, an operand a statement only borrows — a matrix
//! product's, a reduction's, a map's — or a `Dup` or `SumTo` whose results
//! are only read): a `dup` of such an array hands out two views instead of
//! a clone. An `lsum_to` whose result is borrowed for one statement at a
//! time, and a `dup` whose copies reach one ([`lent_views`]), are views of
//! their operand, which then lives until the last use of its views
//! ([`Uses::lenders`]).
//!
//! Last, it finds where each variable dies: the statement of its own block
//! that holds its last use ([`Uses::dying_in`]), after which the emitter
//! hands a dead temporary array's buffer back to the per-thread pool.

use ad_core_ir::dense::{VarMap, VarSet};
use ad_core_ir::fast_hash::{FastMap, FastSet};
use ad_core_ir::ir::*;
use ad_core_ir::types::Ty;
use ad_core_ir::visit::for_each_operand;

/// The result of the analysis.
#[derive(Default, Debug)]
pub struct Uses {
    alias: VarMap<Var>,
    bind_depth: VarMap<u32>,
    last: VarMap<usize>,
    /// How many times each variable (with its copies) is read, over all sites.
    total: VarMap<u32>,
    /// Per site, how many times each variable is used there.
    count: Vec<Vec<(Var, u32)>>,
    stmt_site: FastMap<*const Stmt, usize>,
    result_site: FastMap<*const Block, usize>,
    site_depth: Vec<u32>,
    /// Roots used other than by an element read or a shape.
    escaping: VarSet,
    /// Linear variables that are only read.
    lin_read: VarSet,
    /// Results of `dup` and `lsum_to` emitted as views of the operand
    /// ([`lent_views`]).
    lent: VarSet,
    /// Linear arrays whose one use reads one element (or drops them).
    lin_elem_read: VarSet,
    /// Linear variables whose one use is an operand that its statement only
    /// borrows ([`borrowed_lin_operands`]).
    lin_borrowed: VarSet,
    /// `(v, s) -> s2`: `s` is the last use of `v` in an `if`'s `then`
    /// branch and `s2` its last use in the `else` branch (which never runs
    /// after the `then` branch): `s` is a last use on its path when `s2` is.
    branch_last: FastMap<(Var, usize), usize>,
    /// Every variable whose last use was set, in order (with repeats): an
    /// `if` reads the part its `then` branch appended, so finding that
    /// branch's last uses costs its own uses, not all variables.
    touched: Vec<Var>,
    /// For a statement's site, the variables bound in its block whose last
    /// use lies in the statement (its operands or its nested blocks).
    dies_in: FastMap<usize, Vec<Var>>,
    /// A view and the array it borrows (the root of the operand): the
    /// results of the `lsum_to`s and `dup`s [`lent_views`] picks. A use of
    /// the view is a use of the array for its lifetime: the array dies
    /// with its last view.
    lender: VarMap<Var>,
    /// Non-linear `broadcast` and `transpose` results and slices
    /// (`slice_view.rs`) emitted as views of their operand, with that
    /// operand ([`nl_lent_views`]).
    nl_lent: VarMap<Var>,
}

impl Uses {
    /// Analyses a function.
    pub fn of(f: &Func) -> Uses {
        let mut u = Uses::default();
        for p in f.params.iter().chain(&f.lin_params) {
            u.bind_depth.insert(*p, 0);
        }
        let mut stmts = vec![];
        pre_order(&f.body, &mut stmts);
        u.lin_read = lin_read_only(&stmts).into_iter().collect();
        u.lent = lent_views(&stmts, &f.vars).into_iter().collect();
        u.nl_lent = nl_lent_views(&f.body, &stmts, &f.vars)
            .into_iter()
            .collect();
        u.block(&f.body, 0, &f.vars);
        u.lin_elem_read = lin_element_reads(&stmts, &f.vars).into_iter().collect();
        u.lin_borrowed = stmts
            .iter()
            .filter_map(|s| borrowed_lin_operands(s))
            .flatten()
            .collect();
        u
    }

    /// Whether the one use of the linear variable `v` reads one element of
    /// it (a full-rank `Index`, a scalar), drops it, or borrows it for one
    /// statement whose results borrow nothing (a matrix product, a
    /// reduction, a map): nothing borrows `v` after that statement.
    pub fn lin_element_read(&self, v: Var) -> bool {
        self.lin_elem_read.contains(&v)
    }

    /// Whether the one use of the linear variable `v` is an operand that
    /// its statement only borrows for the statement's duration (a map's
    /// linear array, a matrix or outer product's, a reduction's input):
    /// any array, a view of any layout included, serves there.
    pub fn lin_borrowed(&self, v: Var) -> bool {
        self.lin_borrowed.contains(&v)
    }

    /// Whether the linear variable `v` is only read (see the module doc).
    pub fn lin_read_only(&self, v: Var) -> bool {
        self.lin_read.contains(&v)
    }

    /// Whether every use of `v` (and of its copies) reads one element
    /// (`Index` with a scalar result) or a shape.
    pub fn only_element_reads(&self, v: Var) -> bool {
        !self.escaping.contains(&self.root(v))
    }

    /// The variable `v` stands for (itself unless it is a copy).
    pub fn root(&self, v: Var) -> Var {
        let mut v = v;
        while let Some(w) = self.alias.get(&v) {
            v = *w;
        }
        v
    }

    /// Whether `v` (or what it stands for) is read anywhere.
    pub fn used(&self, v: Var) -> bool {
        self.last.contains_key(&self.root(v))
    }

    /// Whether a statement only binds aliases (a copy, a scalar `dup`): it
    /// emits no code.
    pub fn aliases_only(&self, s: &Stmt) -> bool {
        let binds = || s.binds.iter().chain(&s.lin_binds);
        binds().next().is_some() && binds().all(|v| self.alias.contains_key(v))
    }

    /// The variables bound in the block of the statement at `site` (not
    /// aliases: they are no names of their own) whose last use lies in that
    /// statement: dead once it has run.
    pub fn dying_in(&self, site: usize) -> &[Var] {
        self.dies_in.get(&site).map_or(&[], Vec::as_slice)
    }

    /// The site of a statement.
    pub fn stmt(&self, s: &Stmt) -> usize {
        self.stmt_site[&(s as *const Stmt)]
    }

    /// The site of a block's results.
    pub fn results(&self, b: &Block) -> usize {
        self.result_site[&(b as *const Block)]
    }

    /// Whether the use of `v` at `site` is in the lambda that binds it.
    pub fn local(&self, v: Var, site: usize) -> bool {
        let v = self.root(v);
        self.bind_depth.get(&v).copied() == self.site_depth.get(site).copied()
    }

    /// How many lambdas (loop, build, map, fold bodies) enclose `site`.
    pub fn depth(&self, site: usize) -> u32 {
        self.site_depth.get(site).copied().unwrap_or(0)
    }

    /// The site of the last use of `v` (sites are numbered in program
    /// order), if it is used.
    pub fn last_use(&self, v: Var) -> Option<usize> {
        self.last.get(&self.root(v)).copied()
    }

    /// The site of the one read of `v` (with its copies), when it is read
    /// exactly once in the whole function.
    pub fn single_use(&self, v: Var) -> Option<usize> {
        let v = self.root(v);
        (self.total.get(&v).copied() == Some(1))
            .then(|| self.last.get(&v).copied())
            .flatten()
    }

    /// Whether the linear array `v`, a result of a `dup` or an `lsum_to`,
    /// is emitted as a view of that statement's operand ([`lent_views`]):
    /// the operand then lives until the last use of its views.
    pub fn borrows_operand(&self, v: Var) -> bool {
        self.lender.contains_key(&v)
    }

    /// The arrays `v` borrows, directly or through other views
    /// ([`Uses::borrows_operand`]), nearest first.
    pub fn lenders(&self, v: Var) -> Vec<Var> {
        let mut out = vec![];
        let mut b = self.root(v);
        while let Some(&r) = self.lender.get(&b) {
            out.push(r);
            b = r;
        }
        out
    }

    /// Whether the non-linear use of `v` at `site` may move it.
    pub fn movable(&self, v: Var, site: usize) -> bool {
        let v = self.root(v);
        self.local(v, site)
            && self.last_on_its_path(v, site)
            && self.count[site].iter().any(|&(u, n)| u == v && n == 1)
    }

    /// Whether no use of `v` can follow the one at `site`: it is the last
    /// use, or the last of an `if`'s `then` branch whose `else` branch
    /// holds such a use ([`Uses::branch_last`]).
    fn last_on_its_path(&self, v: Var, site: usize) -> bool {
        if self.last.get(&v) == Some(&site) {
            return true;
        }
        match self.branch_last.get(&(v, site)) {
            Some(&other) => self.last_on_its_path(v, other),
            None => false,
        }
    }

    fn new_site(&mut self, depth: u32) -> usize {
        self.site_depth.push(depth);
        self.count.push(Vec::new());
        self.site_depth.len() - 1
    }

    fn use_var(&mut self, v: Var, site: usize) {
        let v = self.root(v);
        self.last.insert(v, site);
        let n = self.total.get(&v).copied().unwrap_or(0);
        self.total.insert(v, n + 1);
        self.touched.push(v);
        let here = &mut self.count[site];
        match here.iter_mut().find(|(u, _)| *u == v) {
            Some((_, n)) => *n += 1,
            None => here.push((v, 1)),
        }
        for r in self.lenders(v) {
            self.last.insert(r, site);
            self.touched.push(r);
        }
    }

    fn block(&mut self, b: &Block, depth: u32, vars: &VarTable) {
        self.block_results(b, depth, vars, false);
    }

    /// [`Self::block`]; with `copied`, the block is a build's body, whose
    /// array results the emitter copies into rows of the build's outputs
    /// (`Emitter::build_rows`): they are borrowed there, not moved out, so
    /// they do not escape (a nested loop's stack of them may be a reused
    /// buffer).
    fn block_results(&mut self, b: &Block, depth: u32, vars: &VarTable, copied: bool) {
        // Each statement's sites: its own, then its nested blocks'.
        let mut ranges = Vec::with_capacity(b.stmts.len());
        for s in &b.stmts {
            let first = self.site_depth.len();
            self.stmt_(s, depth, vars);
            ranges.push(first..self.site_depth.len());
        }
        let site = self.new_site(depth);
        self.result_site.insert(b as *const Block, site);
        for a in &b.results {
            if let Atom::Var(v) = a {
                self.use_var(*v, site);
                if !(copied && matches!(vars.ty(*v), Ty::Array { .. })) {
                    self.escaping.insert(self.root(*v));
                }
            }
        }
        for v in &b.lin_results {
            self.use_var(*v, site);
            self.escaping.insert(self.root(*v));
        }
        self.record_deaths(b, &ranges);
    }

    /// Files each variable bound in `b` under the statement of `b` whose
    /// sites (`ranges`, one per statement) hold its last use. A variable
    /// last used by the block's results, or never, dies in none.
    fn record_deaths(&mut self, b: &Block, ranges: &[std::ops::Range<usize>]) {
        for s in &b.stmts {
            for v in s.binds.iter().chain(&s.lin_binds) {
                if self.alias.contains_key(v) {
                    continue;
                }
                let Some(&last) = self.last.get(v) else {
                    continue;
                };
                // The ranges are consecutive and in order: a binary search.
                let k = ranges.partition_point(|r| r.end <= last);
                if let Some(r) = ranges.get(k).filter(|r| r.contains(&last)) {
                    self.dies_in.entry(r.start).or_default().push(*v);
                }
            }
        }
    }

    fn stmt_(&mut self, s: &Stmt, depth: u32, vars: &VarTable) {
        let site = self.new_site(depth);
        self.stmt_site.insert(s as *const Stmt, site);
        if let (Expr::Atom(Atom::Var(x)), [y]) = (&s.expr, &s.binds[..]) {
            let r = self.root(*x);
            self.alias.insert(*y, r);
            return;
        }
        // A `dup` of a linear scalar: both results are the one `Copy` value.
        if let Expr::Lin(LinOp::Dup(x)) = &s.expr {
            if matches!(vars.ty(*x), Ty::Scalar(_)) {
                let r = self.root(*x);
                for y in &s.lin_binds {
                    self.alias.insert(*y, r);
                }
                return;
            }
        }
        // Results of an `lsum_to` or `dup` emitted as views of the operand
        // (`lent_views`, `Emitter::lin_op`); a `dup` of such a view, or of
        // a view of one (a `dup` of a `dup`'s copy), copies the view, so
        // its results borrow what the view borrows, to any depth.
        if let Expr::Lin(LinOp::Dup(x) | LinOp::SumTo { x, .. }) = &s.expr {
            let dup_of_view = matches!(s.expr, Expr::Lin(LinOp::Dup(_)))
                && self.lender.contains_key(&self.root(*x));
            if dup_of_view || s.lin_binds.iter().all(|v| self.lent.contains(v)) {
                let r = self.root(*x);
                for y in &s.lin_binds {
                    self.lender.insert(*y, r);
                }
            }
        }
        // A non-linear broadcast, transpose or slice emitted as a view
        // (`nl_lent_views`) borrows its operand.
        if let [y] = s.binds[..] {
            if let Some(&x) = self.nl_lent.get(&y) {
                let r = self.root(x);
                self.lender.insert(y, r);
            }
        }
        let mut nl: Vec<Var> = vec![];
        let mut lin: Vec<Var> = vec![];
        match &s.expr {
            // The declared shapes of linear results are not read by emitted code.
            Expr::Call(c) => {
                nl.extend(c.args.iter().filter_map(Atom::var));
                lin.extend(&c.lin_args);
            }
            Expr::If(i) => nl.extend(i.cond.var()),
            e => for_each_operand(e, &mut |a| nl.extend(a.var()), &mut |v| lin.push(v)),
        }
        // The array an element read or a shape reads does not escape.
        let read = match &s.expr {
            Expr::Array(ArrayOp::Index {
                arr: Atom::Var(a), ..
            }) if matches!(s.binds[..], [b] if matches!(vars.ty(b), Ty::Scalar(_))) => Some(*a),
            Expr::Array(
                ArrayOp::Shape {
                    arr: Atom::Var(a), ..
                }
                | ArrayOp::Stride {
                    arr: Atom::Var(a), ..
                },
            ) => Some(*a),
            _ => None,
        };
        for (k, v) in nl.into_iter().chain(lin).enumerate() {
            self.use_var(v, site);
            // The array operand of an element read is its first operand.
            if !(k == 0 && read == Some(v)) {
                self.escaping.insert(self.root(v));
            }
        }
        match &s.expr {
            Expr::If(i) => {
                let t0 = self.site_depth.len();
                let touched0 = self.touched.len();
                self.block(&i.then_, depth, vars);
                let e0 = self.site_depth.len();
                // A variable last used in the `then` branch was touched there.
                let mut in_then: Vec<(Var, usize)> = self.touched[touched0..]
                    .iter()
                    .filter_map(|v| Some((*v, *self.last.get(v)?)))
                    .filter(|(_, s)| (t0..e0).contains(s))
                    .collect();
                in_then.sort_unstable();
                in_then.dedup();
                self.block(&i.else_, depth, vars);
                let e1 = self.site_depth.len();
                for (v, s) in in_then {
                    if let Some(&other) = self.last.get(&v) {
                        if (e0..e1).contains(&other) {
                            self.branch_last.insert((v, s), other);
                        }
                    }
                }
            }
            e => {
                for l in ad_core_ir::visit::lambdas(e) {
                    for p in l.params.iter().chain(&l.lin_params) {
                        self.bind_depth.insert(*p, depth + 1);
                    }
                    let copied = matches!(e, Expr::Build(_));
                    self.block_results(&l.body, depth + 1, vars, copied);
                }
            }
        }
        for v in s.binds.iter().chain(&s.lin_binds) {
            self.bind_depth.insert(*v, depth);
        }
    }
}

/// The linear variables of a function's statements (all of them, in
/// pre-order) that are only read. A use comes after its binder in
/// pre-order, so one walk in reverse decides each `dup`'s results before
/// the `dup` itself.
fn lin_read_only(stmts: &[&Stmt]) -> FastSet<Var> {
    let mut read = FastSet::default();
    for s in stmts.iter().rev() {
        if let Some(xs) = borrowed_lin_operands(s) {
            read.extend(xs);
            continue;
        }
        match &s.expr {
            Expr::Lin(LinOp::Index { x, .. } | LinOp::Drop(x)) => {
                read.insert(*x);
            }
            Expr::Lin(LinOp::Dup(x) | LinOp::SumTo { x, .. })
                if s.lin_binds.iter().all(|v| read.contains(v)) =>
            {
                read.insert(*x);
            }
            _ => {}
        }
    }
    read
}

/// The linear operands that statement `s` reads by reference for the
/// statement's duration only, its results borrowing none of them: the
/// linear side of a matrix product or an outer product, a reduction's
/// input, a map's linear arrays (`None` for other statements). Compiled, a
/// view serves as such an operand as well as the array.
fn borrowed_lin_operands(s: &Stmt) -> Option<Vec<Var>> {
    match &s.expr {
        Expr::Lin(LinOp::MatMul { x, .. } | LinOp::Outer { x, .. } | LinOp::Sum { x, .. }) => {
            Some(vec![*x])
        }
        Expr::Map(m) => Some(m.lin_arrs.clone()),
        _ => None,
    }
}

/// The results of array `lsum_to`s, and of array `dup`s on the way to one,
/// that are emitted as views of the statement's operand (the views
/// [`Uses::lenders`] tracks): every use of such a result borrows it for one
/// statement only (an element read, a full-rank `Index`; a `Drop`; an
/// operand a statement only borrows, [`borrowed_lin_operands`]; or an
/// `lsum_to` or `dup` of such results), so the operand may be given back
/// once the last of them has run. (A sub-array `Index` is a read whose
/// result is a view that may live on.) A `dup` whose copies reach no
/// `lsum_to` keeps its own rules (`Emitter::lin_op`, `dup_view_then_move`).
fn lent_views(stmts: &[&Stmt], vars: &VarTable) -> FastSet<Var> {
    // Borrowed for one statement only; of those, on the way to an `lsum_to`.
    let (mut borrowed, mut to_sum) = (FastSet::default(), FastSet::default());
    let mut lent = FastSet::default();
    for s in stmts.iter().rev() {
        if let Some(xs) = borrowed_lin_operands(s) {
            borrowed.extend(xs);
            continue;
        }
        let all_borrowed = s.lin_binds.iter().all(|v| borrowed.contains(v));
        match &s.expr {
            Expr::Lin(LinOp::Index { x, idx }) if vars.ty(*x).rank() == Some(idx.len()) => {
                borrowed.insert(*x);
            }
            Expr::Lin(LinOp::Drop(x)) => {
                borrowed.insert(*x);
            }
            Expr::Lin(LinOp::SumTo { x, .. }) if all_borrowed => {
                borrowed.insert(*x);
                to_sum.insert(*x);
                lent.extend(s.lin_binds.iter().copied());
            }
            Expr::Lin(LinOp::Dup(x)) if all_borrowed && matches!(vars.ty(*x), Ty::Array { .. }) => {
                borrowed.insert(*x);
                if s.lin_binds.iter().any(|v| to_sum.contains(v)) {
                    to_sum.insert(*x);
                    lent.extend(s.lin_binds.iter().copied());
                }
            }
            _ => {}
        }
    }
    lent
}

/// The results of non-linear `broadcast`s (to a rank-1+ source),
/// `transpose`s and slices (builds that read an array at affine
/// positions, `slice_view::slice_of`) that are emitted as views of their
/// operand, each with that operand, tracked as its borrowers
/// ([`Uses::lenders`]): every use of such a result reads it
/// by reference for one statement ([`nl_borrowed_operands`], or a
/// broadcast or transpose that is such a view itself), never as a block's
/// result. The operand then lives until the view's last use instead of
/// being copied (a broadcast of an array used again later) or moved.
fn nl_lent_views(body: &Block, stmts: &[&Stmt], vars: &VarTable) -> FastMap<Var, Var> {
    // Variables read other than by reference: block results first (a
    // block's results come after its statements in pre-order).
    let mut other: FastSet<Var> = body.results.iter().filter_map(Atom::var).collect();
    for s in stmts {
        for b in ad_core_ir::visit::blocks(&s.expr) {
            other.extend(b.results.iter().filter_map(Atom::var));
        }
    }
    let mut lent = FastMap::default();
    for s in stmts.iter().rev() {
        let view_of = match (&s.expr, &s.binds[..]) {
            (
                Expr::Array(ArrayOp::Broadcast {
                    arr: Atom::Var(x),
                    axes,
                    ..
                }),
                [y],
            ) if !axes.is_empty() => Some((*x, *y)),
            (Expr::Array(ArrayOp::Transpose { arr: Atom::Var(x) }), [y]) => Some((*x, *y)),
            (Expr::Build(b), [y]) => super::slice_view::slice_of(b, vars).map(|sl| (sl.arr, *y)),
            _ => None,
        };
        if let Some((x, y)) = view_of {
            if !other.contains(&y) && matches!(vars.ty(x), Ty::Array { .. }) {
                lent.insert(y, x);
            } else {
                other.insert(x);
            }
            continue;
        }
        let by_ref = nl_borrowed_operands(s, vars);
        ad_core_ir::visit::for_each_operand(
            &s.expr,
            &mut |a| {
                if let Atom::Var(v) = a {
                    if !by_ref.contains(v) {
                        other.insert(*v);
                    }
                }
            },
            &mut |_| {},
        );
    }
    lent
}

/// The non-linear array operands that statement `s` reads by reference
/// for the statement's duration only, its results borrowing none of them:
/// a map's arrays, a reduction's or shape's input, an element read's
/// array, the operands of a matrix product, the non-linear side of a
/// linear matrix or outer product.
fn nl_borrowed_operands(s: &Stmt, vars: &VarTable) -> Vec<Var> {
    let atoms: Vec<&Atom> = match &s.expr {
        Expr::Map(m) => m.arrs.iter().collect(),
        Expr::Array(
            ArrayOp::Reduce { arr, .. }
            | ArrayOp::ArgReduce { arr, .. }
            | ArrayOp::Shape { arr, .. }
            | ArrayOp::Stride { arr, .. },
        ) => vec![arr],
        Expr::Array(ArrayOp::Index { arr, idx })
            if arr
                .var()
                .is_some_and(|a| vars.ty(a).rank() == Some(idx.len())) =>
        {
            vec![arr]
        }
        Expr::Array(ArrayOp::MatMul { a, b }) => vec![a, b],
        Expr::Lin(LinOp::MatMul { a, .. }) => vec![a],
        Expr::Lin(LinOp::Outer { b, .. }) => vec![b],
        _ => vec![],
    };
    atoms.into_iter().filter_map(Atom::var).collect()
}

/// The linear variables of `stmts` whose one use is an element read (a
/// full-rank `Index`), a `Drop`, or an operand that the statement only
/// borrows ([`borrowed_lin_operands`]): nothing borrows the variable after
/// that statement.
fn lin_element_reads(stmts: &[&Stmt], vars: &VarTable) -> FastSet<Var> {
    let mut out = FastSet::default();
    for s in stmts {
        if let Some(xs) = borrowed_lin_operands(s) {
            out.extend(xs);
            continue;
        }
        match &s.expr {
            Expr::Lin(LinOp::Index { x, idx }) if vars.ty(*x).rank() == Some(idx.len()) => {
                out.insert(*x);
            }
            Expr::Lin(LinOp::Drop(x)) => {
                out.insert(*x);
            }
            _ => {}
        }
    }
    out
}

/// The statements of `b` at any depth, in pre-order (a statement before the
/// statements of its nested blocks).
fn pre_order<'a>(b: &'a Block, out: &mut Vec<&'a Stmt>) {
    for s in &b.stmts {
        out.push(s);
        for nb in ad_core_ir::visit::blocks(&s.expr) {
            pre_order(nb, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Uses;
    use ad_core_ir::ir::{Stmt, Var};
    use ad_core_ir::parse::parse_program;

    /// A `dup` of a `dup`'s copy of a view an `lsum_to` lends: the array
    /// the `lsum_to` reads lives until the last use of the innermost
    /// copies (else it went back to the pool, moved, while they borrowed
    /// it: E0505 in the generated code).
    #[test]
    fn views_of_views_of_a_lent_sum_keep_the_array_alive() {
        let p = parse_program(
            "
def f(n_0: i64, n_1: i64 ; ct_2: [[f64]]) -> (; [[f64]], f64, [f64]) {
  let ; a_3: [[f64]], b_4: [[f64]] = map(; ct_2) |; e_5: f64| {
    let ; e_6: f64, e_7: f64 = dup e_5
    yield ; e_6, e_7
  }
  let ; d_8: [[f64]] = lsum_to a_3, [n_0, n_1]
  let ; c_9: [[f64]], c_10: [[f64]] = dup d_8
  let ; c_11: [[f64]], c_12: [[f64]] = dup c_9
  let ; m_13: [[f64]] = map(; c_11) |; e_14: f64| {
    let ; e_15: f64 = lscale 2.0, e_14
    yield ; e_15
  }
  let ; s_16: f64 = lsum c_10
  let ; t_17: [f64] = lsum c_12, axis=0
  let ; u_18: [[f64]] = ladd m_13, b_4
  return ; u_18, s_16, t_17
}",
        )
        .unwrap();
        let f = &p.funcs[0];
        let u = Uses::of(f);
        // Variables are numbered as printed: `a_3` is `Var(3)`.
        let (a, c12, t) = (Var(3), Var(12), Var(17));
        assert!(u.lenders(c12).contains(&a), "{:?}", u.lenders(c12));
        let sum: &Stmt = f.body.stmts.iter().find(|s| s.lin_binds == [t]).unwrap();
        assert!(u.last_use(a).unwrap() >= u.stmt(sum));
    }
}
