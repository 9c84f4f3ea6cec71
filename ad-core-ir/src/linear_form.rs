//! Declared linearity: a non-linear function (what the front end lowers)
//! in which some parameters are declared linear becomes the Linear A
//! function in which they are, or the list of places where linearity
//! breaks. This is how a user's forward rule (`#[custom_jvp]`: tangents
//! linear) enters the pipeline: its result is a JVP-form function, which
//! unzip and transpose then treat like one the JVP pass produced.
//!
//! A value is linear when it depends on a linear parameter ([`crate::taint`]).
//! Every statement reading a linear value must be one of the linear forms,
//! and is rewritten to its [`LinOp`]:
//!
//! ```text
//! def r(x: f64, dx: f64) -> (f64, f64) {      def r(x: f64 ; dx: f64) -> (f64 ; f64) {
//!   let y = sin x                                let y = sin x
//!   let c = cos x                                let c = cos x
//!   let dy = mul c, dx                 ==>       let ; dy = lscale c, dx
//!   return y, dy                                 return y ; dy
//! }                                            }
//! ```
//!
//! - `a + b`, `a - b` with both linear, `-a`: `ladd`, `lneg`; `a * s`, `s * a`
//!   with `s` non-linear: `lscale`; `a / s`: `lscale` by `1 / s`;
//!   `select(c, a, b)` on a non-linear condition: an `if`;
//! - element reads, gathers, scatters, sums, broadcasts, transposes, scans
//!   and matrix products with one non-linear side: their linear versions;
//! - tuples, `if` on non-linear conditions, counted loops, builds and maps:
//!   linear where their values are (loop state and outputs, branch and body
//!   results split into non-linear and linear parts);
//! - the literal `0.0`, or an array of zeros, where a linear value is needed
//!   (a loop's initial state, a branch, an output) is the linear zero.
//!
//! Anything else that reads a linear value is an error naming the linear
//! parameters the value depends on: a product of two linear values, a
//! non-linear function of one, an affine constant (`a + 1.0`), division by
//! one, a comparison, a cast or an index computed from one, a linear value
//! passed to a call. Non-linear results must not depend on linear
//! parameters, and linear results must (or be zero).
//!
//! The output has `dup`/`drop` inserted ([`crate::dupdrop`]) and passes the
//! checker in Linear A mode (the caller checks).

use crate::dupdrop::insert_dup_drop;
use crate::fast_hash::{FastMap, FastSet};
use crate::ir::*;
use crate::taint::tainted;
use crate::transpose::shapes::Binders;
use crate::types::Ty;
use crate::visit::binders;

/// Where and why linearity breaks.
#[derive(Clone, Debug, PartialEq)]
pub struct LinearityError {
    /// The offending statement's source, if known.
    pub src: Option<SrcId>,
    /// The message (names the linear parameters involved).
    pub msg: String,
}

/// How the shape of a linear parameter is known.
#[derive(Clone, Debug, PartialEq)]
pub enum SeedShape {
    /// That of a non-linear array parameter (a rule's tangent: its primal).
    Like(Var),
    /// From new `i64` parameters, one per axis, appended to the function's
    /// parameters (a `#[linear]` function: the caller supplies them).
    Params,
}

/// The result of [`linear_form`].
#[derive(Clone, Debug)]
pub struct LinearForm {
    /// The Linear A function.
    pub func: Func,
    /// The `i64` parameters added for [`SeedShape::Params`]: (index of the
    /// linear parameter, axis, variable), in parameter order.
    pub shape_params: Vec<(usize, usize, Var)>,
    /// Every call that passes linear values: the callee, the argument
    /// positions holding them, the call's source. The callee must be linear
    /// in those parameters (the caller of this pass checks that): it is
    /// called through its forward derivative at zero there.
    pub linear_calls: Vec<(String, Vec<usize>, Option<SrcId>)>,
}

/// What the function's results are called in messages, and where they are.
#[derive(Clone, Debug)]
pub struct Outputs {
    /// The source of the returned expression, for errors about results.
    pub src: Option<SrcId>,
    /// The non-linear results (e.g. "the primal output").
    pub primal: String,
    /// The linear results (e.g. "the tangent output").
    pub linear: String,
}

impl Default for Outputs {
    fn default() -> Self {
        Outputs {
            src: None,
            primal: "a non-linear result".into(),
            linear: "a linear result".into(),
        }
    }
}

/// `f` with the parameters flagged in `lin` made linear parameters (each
/// array's shape as `shapes` says, in order; scalars and tuples need none)
/// and its last `n_lin_results` results made linear results. Reading the
/// shape of a linear parameter (`x.len()`) reads the shape it is given.
///
/// `linear_callees` names the callees known to be linear (with a flag per
/// parameter, as [`Program::linear_externs`]): a call passing linear values
/// to one of them must pass a linear value or a zero in each of its linear
/// parameters (anything else makes the result affine: an error), and is
/// then the callee itself, `g__linear(a ; x)`, whose transpose is the
/// callee's own. Other callees are called through their forward derivative
/// at zero.
pub fn linear_form(
    f: &Func,
    lin: &[bool],
    n_lin_results: usize,
    shapes: &[SeedShape],
    outputs: &Outputs,
    linear_callees: &[(String, Vec<bool>)],
) -> Result<LinearForm, Vec<LinearityError>> {
    let f = crate::normalize::lower_folds(f);
    let seeds: Vec<Var> = f
        .params
        .iter()
        .zip(lin)
        .filter(|(_, l)| **l)
        .map(|(p, _)| *p)
        .collect();
    let per_seed: Vec<(String, FastSet<Var>)> = seeds
        .iter()
        .map(|s| (f.vars.info(*s).name.clone(), tainted(&f, &[*s])))
        .collect();
    let mut cv = Conv {
        vars: f.vars.clone(),
        taint: tainted(&f, &seeds),
        per_seed,
        alias: FastMap::default(),
        zeros: FastMap::default(),
        seed_shapes: FastMap::default(),
        lin_shapes: FastMap::default(),
        linear_calls: vec![],
        linear_callees: linear_callees.to_vec(),
        errors: vec![],
    };
    for v in cv.taint.clone() {
        cv.vars.vars[v.0 as usize].linear = true;
    }
    // The shapes of the linear parameters.
    let mut lin_param_shapes = vec![];
    let mut shape_params = vec![];
    for (j, x) in seeds.iter().enumerate() {
        let ty = f.vars.ty(*x).clone();
        let shape = match (&ty, shapes.get(j)) {
            (Ty::Array { rank, .. }, Some(SeedShape::Like(v))) => {
                let dims: Vec<Dim> = (0..*rank).map(|k| Dim::Of(*v, k)).collect();
                cv.seed_shapes.insert(*x, dims.clone());
                ShapeTree::Array(dims)
            }
            (Ty::Array { rank, .. }, _) => {
                let name = f.vars.info(*x).name.clone();
                let dims: Vec<Dim> = (0..*rank)
                    .map(|k| {
                        let v = cv.vars.fresh(
                            format!("len_{name}_{k}"),
                            Ty::Scalar(crate::types::Scalar::I64),
                            false,
                        );
                        shape_params.push((j, k, v));
                        Dim::Atom(Atom::Var(v))
                    })
                    .collect();
                cv.seed_shapes.insert(*x, dims.clone());
                ShapeTree::Array(dims)
            }
            (t, _) => scalar_shape(t).unwrap_or(ShapeTree::Scalar),
        };
        lin_param_shapes.push(shape);
    }
    let n = f.body.results.len();
    let mask: Vec<bool> = (0..n).map(|k| k + n_lin_results >= n).collect();
    let body = cv.block(&f.body, &mask, outputs.src, Some(outputs));
    let linear_calls = std::mem::take(&mut cv.linear_calls);
    if !cv.errors.is_empty() {
        return Err(cv.errors);
    }
    let (lin_params, mut params): (Vec<Var>, Vec<Var>) =
        f.params.iter().partition(|p| seeds.contains(p));
    params.extend(shape_params.iter().map(|(_, _, v)| *v));
    let mut out = Func {
        name: f.name.clone(),
        params,
        lin_params,
        lin_param_shapes,
        body,
        vars: cv.vars,
    };
    fix_if_shapes(&mut out).map_err(|msg| vec![LinearityError { src: None, msg }])?;
    insert_dup_drop(&mut out);
    Ok(LinearForm {
        func: out,
        shape_params,
        linear_calls,
    })
}

/// Marks an `if`'s linear array result whose shape is computed after
/// conversion (see [`fix_if_shapes`]).
fn pending() -> ShapeTree {
    ShapeTree::Tuple(vec![ShapeTree::Tuple(vec![])])
}

struct Conv {
    vars: VarTable,
    /// The linear values (before conversion: dependence on a linear parameter).
    taint: FastSet<Var>,
    /// Each linear parameter's name and the values that depend on it.
    per_seed: Vec<(String, FastSet<Var>)>,
    /// A copy of a linear value stands for it.
    alias: FastMap<Var, Var>,
    /// Non-linear values known to be zero, with their shapes.
    zeros: FastMap<Var, ShapeTree>,
    /// The shape of each linear array parameter.
    seed_shapes: FastMap<Var, Vec<Dim>>,
    /// Known shapes of other linear arrays (what a call's zero argument needs).
    lin_shapes: FastMap<Var, Vec<Dim>>,
    /// Calls with linear arguments: callee, argument positions, source.
    linear_calls: Vec<(String, Vec<usize>, Option<SrcId>)>,
    /// Callees known to be linear, with their linear parameters.
    linear_callees: Vec<(String, Vec<bool>)>,
    errors: Vec<LinearityError>,
}

impl Conv {
    /// The linear variable `a` is, if it is linear.
    fn lin(&self, a: &Atom) -> Option<Var> {
        let mut v = a.var().filter(|v| self.taint.contains(v))?;
        while let Some(w) = self.alias.get(&v) {
            v = *w;
        }
        Some(v)
    }

    /// `` `dx` `` or `` `dx` and `dy` ``: the linear parameters `a` depends on.
    fn names(&self, a: &Atom) -> String {
        let Some(v) = a.var() else {
            return "a linear value".into();
        };
        let ns: Vec<String> = self
            .per_seed
            .iter()
            .filter(|(_, set)| set.contains(&v))
            .map(|(n, _)| format!("`{n}`"))
            .collect();
        match ns.as_slice() {
            [] => "a linear value".into(),
            [one] => format!("linear in {one}"),
            [init @ .., last] => format!("linear in {} and {last}", init.join(", ")),
        }
    }

    fn error(&mut self, src: Option<SrcId>, msg: String) {
        self.errors.push(LinearityError { src, msg });
    }

    /// The shape of a zero of `a`'s type, if `a` is a known zero.
    fn zero(&self, a: &Atom) -> Option<ShapeTree> {
        match a {
            Atom::F64(x) if *x == 0.0 => Some(ShapeTree::Scalar),
            Atom::Var(v) => self.zeros.get(v).cloned(),
            _ => None,
        }
    }

    fn fresh_lin(&mut self, like: &str, ty: Ty) -> Var {
        self.vars.fresh(like, ty, true)
    }

    /// `a` as a linear variable: itself, or a materialised zero; otherwise
    /// an error saying that `what` must be linear.
    fn as_linear(
        &mut self,
        a: &Atom,
        ty: &Ty,
        src: Option<SrcId>,
        out: &mut Vec<Stmt>,
        what: &str,
    ) -> Option<Var> {
        if let Some(v) = self.lin(a) {
            return Some(v);
        }
        if let Some(shape) = self.zero(a) {
            let z = self.fresh_lin("zero", ty.clone());
            out.push(lin_stmt(vec![z], LinOp::Zero(shape), src));
            return Some(z);
        }
        self.error(
            src,
            format!("{what} must be linear, but this value does not depend on the linear parameters and is not zero (a constant there makes the function affine, not linear); use `0.0` or a zeros array for a linear zero"),
        );
        None
    }

    /// Converts a block whose results flagged in `mask` are linear.
    /// `outputs` names the results of the function's own body.
    fn block(
        &mut self,
        b: &Block,
        mask: &[bool],
        src: Option<SrcId>,
        outputs: Option<&Outputs>,
    ) -> Block {
        let mut out = vec![];
        for s in &b.stmts {
            self.stmt(s, &mut out);
        }
        let mut results = vec![];
        let mut lin_results = vec![];
        for (a, m) in b.results.iter().zip(mask) {
            let ty = crate::typing::atom_ty(a, &self.vars);
            if *m {
                let what = outputs.map_or("this result", |o| o.linear.as_str());
                if let Some(v) = self.as_linear(a, &ty, src, &mut out, what) {
                    lin_results.push(v);
                }
            } else if self.lin(a).is_some() {
                let n = self.names(a);
                let what = outputs.map_or("this result", |o| o.primal.as_str());
                self.error(
                    src,
                    format!("{what} must not depend on the linear values, but it is {n}"),
                );
            } else {
                results.push(*a);
            }
        }
        Block {
            stmts: out,
            results,
            lin_results,
        }
    }

    fn stmt(&mut self, s: &Stmt, out: &mut Vec<Stmt>) {
        let src = s.src;
        match &s.expr {
            Expr::Atom(a) => {
                if let Some(v) = self.lin(a) {
                    self.alias.insert(s.binds[0], v);
                    return;
                }
                if let Some(z) = self.zero(a) {
                    self.zeros.insert(s.binds[0], z);
                }
                out.push(s.clone());
            }
            Expr::Prim(p, args) => self.prim(s, *p, args, out),
            Expr::Array(op) => self.array(s, op, out),
            Expr::Tuple(parts) => {
                if parts.iter().all(|a| self.lin(a).is_none()) {
                    out.push(s.clone());
                    return;
                }
                let mut vs = vec![];
                for a in parts {
                    let ty = crate::typing::atom_ty(a, &self.vars);
                    vs.extend(self.as_linear(a, &ty, src, out, "every part of a tuple with a linear part"));
                }
                if vs.len() == parts.len() {
                    out.push(lin_stmt(s.binds.clone(), LinOp::Tuple(vs), src));
                }
            }
            Expr::Untuple(a) => match self.lin(a) {
                None => out.push(s.clone()),
                Some(v) => {
                    if s.binds.iter().all(|b| self.taint.contains(b)) {
                        out.push(lin_stmt(s.binds.clone(), LinOp::Untuple(v), src));
                    } else {
                        self.error(src, "a tuple mixing linear and integer parts is not supported".into());
                    }
                }
            },
            Expr::Call(c) => {
                if c.args.iter().all(|a| self.lin(a).is_none()) {
                    out.push(s.clone());
                } else {
                    self.linear_call(s, c, out);
                }
            }
            Expr::If(i) => self.if_(s, i, out),
            Expr::Loop(l) => self.loop_(s, l, out),
            Expr::Build(b) => {
                let mask: Vec<bool> = s.binds.iter().map(|v| self.taint.contains(v)).collect();
                let body = self.block(&b.body.body, &mask, src, None);
                let (binds, lin_binds) = split(&s.binds, &mask);
                // A build of zeros is a zero.
                for (v, r) in s.binds.iter().zip(&b.body.body.results) {
                    if !self.taint.contains(v) && self.zero(r) == Some(ShapeTree::Scalar) {
                        let dims = b.shape.iter().map(|a| Dim::Atom(*a)).collect();
                        self.zeros.insert(*v, ShapeTree::Array(dims));
                    }
                }
                for v in &lin_binds {
                    if matches!(self.vars.ty(*v), Ty::Array { rank, .. } if *rank == b.shape.len()) {
                        let dims = b.shape.iter().map(|a| Dim::Atom(*a)).collect();
                        self.lin_shapes.insert(*v, dims);
                    }
                }
                out.push(Stmt {
                    binds,
                    lin_binds,
                    expr: Expr::Build(Build {
                        shape: b.shape.clone(),
                        body: Lambda {
                            params: b.body.params.clone(),
                            lin_params: vec![],
                            body,
                        },
                    }),
                    src,
                });
            }
            Expr::Map(m) => {
                let (mut arrs, mut params, mut lin_arrs, mut lin_params) = (vec![], vec![], vec![], vec![]);
                for (a, p) in m.arrs.iter().zip(&m.body.params) {
                    match self.lin(a) {
                        Some(v) => {
                            self.taint.insert(*p);
                            self.vars.vars[p.0 as usize].linear = true;
                            lin_arrs.push(v);
                            lin_params.push(*p);
                        }
                        None => {
                            if self.zero(a).is_some() {
                                self.zeros.insert(*p, ShapeTree::Scalar);
                            }
                            arrs.push(*a);
                            params.push(*p);
                        }
                    }
                }
                let mask: Vec<bool> = s.binds.iter().map(|v| self.taint.contains(v)).collect();
                let body = self.block(&m.body.body, &mask, src, None);
                let (binds, lin_binds) = split(&s.binds, &mask);
                let like = match arrs.first() {
                    Some(Atom::Var(a)) => {
                        Some((0..self.vars.ty(*a).rank().unwrap_or(0)).map(|k| Dim::Of(*a, k)).collect())
                    }
                    _ => lin_arrs.first().and_then(|x| self.shape_of(*x)),
                };
                if let Some(dims) = &like {
                    // A map to zeros is a zero.
                    for (v, r) in s.binds.iter().zip(&m.body.body.results) {
                        if !self.taint.contains(v) && self.zero(r) == Some(ShapeTree::Scalar) {
                            self.zeros.insert(*v, ShapeTree::Array(dims.clone()));
                        }
                    }
                }
                if let Some(dims) = like {
                    for v in &lin_binds {
                        if matches!(self.vars.ty(*v), Ty::Array { .. }) {
                            self.lin_shapes.insert(*v, dims.clone());
                        }
                    }
                }
                out.push(Stmt {
                    binds,
                    lin_binds,
                    expr: Expr::Map(Map::new(arrs, lin_arrs, params, lin_params, body)),
                    src,
                });
            }
            Expr::While(w) => {
                let mut reads: Vec<Var> = w.init.iter().filter_map(Atom::var).collect();
                for lam in [&w.cond, &w.body] {
                    reads.extend(crate::visit::free_vars_lambda(lam).nl);
                    reads.extend(lam.params.iter().copied());
                }
                match reads.iter().find(|v| self.taint.contains(v)) {
                    None => out.push(s.clone()),
                    Some(v) => {
                        let names = self.names(&Atom::Var(*v));
                        self.error(
                            src,
                            format!("a `while` loop reads a linear value ({names}): the state, condition and body of a `while` loop in a linear function must be non-linear (use a `for` loop over a known count to accumulate linear values)"),
                        )
                    }
                }
            }
            Expr::Fold(_) | Expr::Lin(_) => self.error(
                src,
                "linad internal compiler error: a fold or linear statement before linear conversion".into(),
            ),
        }
    }

    /// The shape of linear array `x`, when known.
    fn shape_of(&self, x: Var) -> Option<Vec<Dim>> {
        self.seed_shapes
            .get(&x)
            .or_else(|| self.lin_shapes.get(&x))
            .cloned()
    }

    /// Records the shape of the result of a linear operation, when it
    /// follows from its operands.
    fn note_shape(&mut self, bind: Var, op: &LinOp) {
        let of = |a: &Atom| -> Vec<Dim> {
            match a {
                Atom::Var(v) => (0..self.vars.ty(*v).rank().unwrap_or(0))
                    .map(|k| Dim::Of(*v, k))
                    .collect(),
                _ => vec![],
            }
        };
        let shape = match op {
            LinOp::Add(x, _) | LinOp::Neg(x) => self.shape_of(*x),
            LinOp::Scale { s, x } => {
                let sd = of(s);
                if sd.is_empty() {
                    self.shape_of(*x)
                } else {
                    Some(sd)
                }
            }
            LinOp::Index { x, idx } => self
                .shape_of(*x)
                .map(|d| d[idx.len().min(d.len())..].to_vec()),
            LinOp::Transpose(x) => self.shape_of(*x).map(|mut d| {
                d.reverse();
                d
            }),
            LinOp::Broadcast { shape, .. } | LinOp::SumTo { shape, .. } => {
                Some(shape.iter().map(|a| Dim::Atom(*a)).collect())
            }
            LinOp::MatMul { a, x, lin_left } => {
                let (ad, xd) = (of(a), self.shape_of(*x));
                match (*lin_left, ad.len(), xd) {
                    (false, 2, Some(xd)) => Some([vec![ad[0]], xd[1..].to_vec()].concat()),
                    (false, 1, Some(xd)) => Some(xd[1..].to_vec()),
                    (true, 2, Some(xd)) => {
                        Some([xd[..xd.len() - 1].to_vec(), vec![ad[1]]].concat())
                    }
                    (true, 1, Some(xd)) => Some(xd[..xd.len() - 1].to_vec()),
                    _ => None,
                }
            }
            _ => None,
        };
        if let Some(d) = shape.filter(|d| !d.is_empty()) {
            self.lin_shapes.insert(bind, d);
        }
    }

    /// `y = g(.., x, ..)` with `x` linear: `g` is linear in those slots, so
    /// `y = jvp(g)(.., 0, .. ; 0.., x, ..)`: its forward derivative at zero
    /// along `x` (zero tangents for the other differentiable arguments).
    /// For a callee known to be linear (`linear_callees`): `y = g__linear(a ;
    /// x..)`, `g` itself in its linear parameters (see
    /// [`Conv::known_linear_call`]).
    fn linear_call(&mut self, s: &Stmt, c: &Call, out: &mut Vec<Stmt>) {
        let src = s.src;
        let flags = self
            .linear_callees
            .iter()
            .find(|(n, _)| *n == c.func)
            .map(|(_, l)| l.clone())
            .filter(|l| l.len() == c.args.len());
        if let Some(flags) = flags {
            return self.known_linear_call(s, c, &flags, out);
        }
        let (mut args, mut lin_args, mut slots) = (vec![], vec![], vec![]);
        for (k, a) in c.args.iter().enumerate() {
            let ty = crate::typing::atom_ty(a, &self.vars);
            if let Some(x) = self.lin(a) {
                slots.push(k);
                let Some(shape) = self.shape_tree(x, &ty) else {
                    let n = self.names(a);
                    return self.error(src, format!("the size of this value {n} passed to `{}` is not known here; pass a linear parameter, a call's result or an elementwise product with a non-linear array", c.func));
                };
                let zero = self.zero_value(&ty, &shape, src, out);
                args.push(zero);
                lin_args.push(x);
            } else {
                args.push(*a);
                if ty.is_differentiable() {
                    let shape = match (&ty, a) {
                        (Ty::Array { rank, .. }, Atom::Var(v)) => {
                            ShapeTree::Array((0..*rank).map(|k| Dim::Of(*v, k)).collect())
                        }
                        _ => scalar_shape(&ty).unwrap_or(ShapeTree::Scalar),
                    };
                    let z = self.fresh_lin("dzero", ty.clone());
                    out.push(lin_stmt(vec![z], LinOp::Zero(shape), src));
                    lin_args.push(z);
                }
            }
        }
        // The primal results (zero) give the tangents' shapes.
        let (primal, lin_shapes) = self.shapes_at_zero(&s.binds);
        out.push(Stmt {
            binds: primal,
            lin_binds: s.binds.clone(),
            expr: Expr::Call(Call {
                func: crate::names::Derived::Jvp.of(&c.func),
                args,
                lin_args,
                lin_shapes,
            }),
            src,
        });
        self.linear_calls.push((c.func.clone(), slots, src));
    }

    /// The shape tree of the linear value `x` of type `ty`, if known.
    fn shape_tree(&self, x: Var, ty: &Ty) -> Option<ShapeTree> {
        match ty {
            Ty::Array { .. } => self.shape_of(x).map(ShapeTree::Array),
            t => scalar_shape(t),
        }
    }

    /// A non-linear zero of type `ty` and shape `shape` (statements that
    /// build it go to `out`).
    fn zero_value(
        &mut self,
        ty: &Ty,
        shape: &ShapeTree,
        src: Option<SrcId>,
        out: &mut Vec<Stmt>,
    ) -> Atom {
        match (ty, shape) {
            (Ty::Array { elem, rank }, ShapeTree::Array(dims)) => {
                let shape: Vec<Atom> = dims
                    .iter()
                    .map(|d| match *d {
                        Dim::Atom(a) => a,
                        Dim::Of(v, axis) => {
                            let n =
                                self.vars
                                    .fresh("n", Ty::Scalar(crate::types::Scalar::I64), false);
                            out.push(nl_stmt(
                                n,
                                Expr::Array(ArrayOp::Shape {
                                    arr: Atom::Var(v),
                                    axis,
                                }),
                                src,
                            ));
                            Atom::Var(n)
                        }
                    })
                    .collect();
                let z = self.vars.fresh(
                    "zero",
                    Ty::Array {
                        elem: *elem,
                        rank: *rank,
                    },
                    false,
                );
                out.push(nl_stmt(
                    z,
                    Expr::Array(ArrayOp::Broadcast {
                        arr: Atom::F64(0.0),
                        shape,
                        axes: vec![],
                    }),
                    src,
                ));
                Atom::Var(z)
            }
            (Ty::Tuple(ts), _) => {
                let z = self.vars.fresh("zero", ty.clone(), false);
                out.push(nl_stmt(z, Expr::Tuple(vec![Atom::F64(0.0); ts.len()]), src));
                Atom::Var(z)
            }
            _ => Atom::F64(0.0),
        }
    }

    /// How a message names a non-linear argument.
    fn arg_name(&self, a: &Atom) -> String {
        match a {
            Atom::Var(v) => {
                let n = &self.vars.info(*v).name;
                let user = n.chars().next().is_some_and(|c| c.is_alphabetic())
                    && !n.contains("__")
                    && n.chars().all(|c| c.is_alphanumeric() || c == '_');
                if user {
                    format!("`{n}`")
                } else {
                    "this value".into()
                }
            }
            Atom::F64(x) => format!("the constant `{x:?}`"),
            _ => "this value".into(),
        }
    }

    /// `y = g(a, x, z)` for `g` declared linear in its last two parameters,
    /// `x` linear and `z` a zero: `(; y) = g__linear(a ; x, 0)`. A
    /// non-linear, non-zero value `c` in a linear parameter of `g` is an
    /// error: `g(a, x, c) = g(a, x, 0) + g(a, 0, c)` is affine in `x`. The
    /// call `g(a, 0, 0)` (pure; removed when unused) gives array results
    /// their shapes.
    fn known_linear_call(&mut self, s: &Stmt, c: &Call, flags: &[bool], out: &mut Vec<Stmt>) {
        let src = s.src;
        let (mut consts, mut lin_args, mut at_zero, mut slots) = (vec![], vec![], vec![], vec![]);
        for (k, (a, linear)) in c.args.iter().zip(flags).enumerate() {
            let ty = crate::typing::atom_ty(a, &self.vars);
            let x = self.lin(a);
            if !linear {
                if x.is_some() {
                    let lin: Vec<String> = flags
                        .iter()
                        .enumerate()
                        .filter(|(_, l)| **l)
                        .map(|(j, _)| (j + 1).to_string())
                        .collect();
                    return self.error(
                        src,
                        format!(
                            "a linear value is passed here as argument {k1} of `{f}`, which is not linear in it (it is declared linear in argument{s} {list}): a linear value may only be passed to the parameters a #[linear] function names",
                            f = c.func,
                            k1 = k + 1,
                            s = if lin.len() == 1 { "" } else { "s" },
                            list = lin.join(", ")
                        ),
                    );
                }
                consts.push(*a);
                at_zero.push(*a);
                continue;
            }
            let (lx, zero) = match x {
                Some(x) => {
                    slots.push(k);
                    let Some(shape) = self.shape_tree(x, &ty) else {
                        let n = self.names(a);
                        return self.error(src, format!("the size of this value {n} passed to `{}` is not known here; pass a linear parameter, a call's result or an elementwise product with a non-linear array", c.func));
                    };
                    (x, shape)
                }
                None => {
                    let Some(shape) = self.zero(a) else {
                        let which = self.arg_name(a);
                        return self.error(
                            src,
                            format!(
                                "{which} is not linear, and `{f}` is linear in this argument (argument {n}): passing it makes this call affine, not linear (`{f}(.., x, c) = {f}(.., x, 0) + {f}(.., 0, c)`); pass a linear value or a zero there, and add what depends on it outside the #[linear] function",
                                f = c.func,
                                n = k + 1
                            ),
                        );
                    };
                    let z = self.fresh_lin("dzero", ty.clone());
                    out.push(lin_stmt(vec![z], LinOp::Zero(shape.clone()), src));
                    (z, shape)
                }
            };
            lin_args.push(lx);
            at_zero.push(self.zero_value(&ty, &zero, src, out));
        }
        let (primal, lin_shapes) = self.shapes_at_zero(&s.binds);
        if s.binds
            .iter()
            .any(|b| self.vars.ty(*b).rank().is_some_and(|r| r > 0))
        {
            out.push(Stmt {
                binds: primal,
                lin_binds: vec![],
                expr: Expr::Call(Call {
                    func: c.func.clone(),
                    args: at_zero,
                    lin_args: vec![],
                    lin_shapes: vec![],
                }),
                src,
            });
        }
        out.push(Stmt {
            binds: vec![],
            lin_binds: s.binds.clone(),
            expr: Expr::Call(Call {
                func: crate::names::Derived::Linear.of(&c.func),
                args: consts,
                lin_args,
                lin_shapes,
            }),
            src,
        });
        self.linear_calls.push((c.func.clone(), slots, src));
    }

    /// For the results `binds` of a call passing linear values: fresh
    /// variables for the call's results at zero (`y0`, bound by the caller)
    /// and the linear results' shapes, read off them for arrays (which
    /// also records the results' shapes for later statements).
    fn shapes_at_zero(&mut self, binds: &[Var]) -> (Vec<Var>, Vec<ShapeTree>) {
        let mut primal = vec![];
        let mut shapes = vec![];
        for b in binds {
            let ty = self.vars.ty(*b).clone();
            let y0 = self.vars.fresh("y0", ty.clone(), false);
            primal.push(y0);
            shapes.push(match ty {
                Ty::Array { rank, .. } => {
                    let dims: Vec<Dim> = (0..rank).map(|k| Dim::Of(y0, k)).collect();
                    self.lin_shapes.insert(*b, dims.clone());
                    ShapeTree::Array(dims)
                }
                t => scalar_shape(&t).unwrap_or(ShapeTree::Scalar),
            });
        }
        (primal, shapes)
    }

    fn prim(&mut self, s: &Stmt, p: Prim, args: &[Atom], out: &mut Vec<Stmt>) {
        let src = s.src;
        let l: Vec<Option<Var>> = args.iter().map(|a| self.lin(a)).collect();
        let Some(k) = l.iter().position(Option::is_some) else {
            out.push(s.clone());
            return;
        };
        let bind = s.binds[0];
        let names = self.names(&args[k]);
        let ty = self.vars.ty(bind).clone();
        let op = match (p, l.as_slice()) {
            (Prim::Add, [Some(x), Some(y)]) => LinOp::Add(*x, *y),
            (Prim::Add | Prim::Sub, [Some(x), None]) if self.zero(&args[1]).is_some() => {
                self.alias.insert(bind, *x);
                return;
            }
            (Prim::Add, [None, Some(y)]) if self.zero(&args[0]).is_some() => {
                self.alias.insert(bind, *y);
                return;
            }
            (Prim::Sub, [None, Some(y)]) if self.zero(&args[0]).is_some() => LinOp::Neg(*y),
            (Prim::Sub, [Some(x), Some(y)]) => {
                let n = self.fresh_lin("neg", ty.clone());
                out.push(lin_stmt(vec![n], LinOp::Neg(*y), src));
                LinOp::Add(*x, n)
            }
            (Prim::Add | Prim::Sub, _) => {
                let sym = if p == Prim::Add { "+" } else { "-" };
                return self.error(
                    src,
                    format!("`{sym}` of a value {names} and a non-linear value is affine, not linear (f(0) is not 0): only linear values may be added to linear values; add the constant outside the linear part"),
                );
            }
            (Prim::Neg, [Some(x)]) => LinOp::Neg(*x),
            (Prim::Mul, [Some(_), Some(_)]) => {
                let other = self.names(&args[1]);
                return self.error(
                    src,
                    format!("product of two linear values ({names}; {other}) is quadratic, not linear: a linear value may only be scaled by non-linear values"),
                );
            }
            (Prim::Mul, [Some(x), None]) => LinOp::Scale { s: args[1], x: *x },
            (Prim::Mul, [None, Some(y)]) => LinOp::Scale { s: args[0], x: *y },
            (Prim::Div, [Some(x), None]) => {
                let r = self
                    .vars
                    .fresh("recip", Ty::Scalar(crate::types::Scalar::F64), false);
                out.push(Stmt {
                    binds: vec![r],
                    lin_binds: vec![],
                    expr: Expr::Prim(Prim::Div, vec![Atom::F64(1.0), args[1]]),
                    src,
                });
                LinOp::Scale {
                    s: Atom::Var(r),
                    x: *x,
                }
            }
            (Prim::Div, _) => {
                let n = self.names(&args[1]);
                return self.error(
                    src,
                    format!("division by a value {n} is not linear: divide linear values by non-linear values only"),
                );
            }
            (Prim::Select, [None, a, b]) if a.is_some() || b.is_some() => {
                let branch = |cv: &mut Conv, at: &Atom| -> Option<Block> {
                    let mut stmts = vec![];
                    let v = cv.as_linear(
                        at,
                        &ty,
                        src,
                        &mut stmts,
                        "both values of a select with a linear value",
                    )?;
                    Some(Block {
                        stmts,
                        results: vec![],
                        lin_results: vec![v],
                    })
                };
                let (Some(then_), Some(else_)) = (branch(self, &args[1]), branch(self, &args[2]))
                else {
                    return;
                };
                out.push(Stmt {
                    binds: vec![],
                    lin_binds: vec![bind],
                    expr: Expr::If(If {
                        cond: args[0],
                        then_,
                        else_,
                        lin_shapes: vec![ShapeTree::Scalar],
                    }),
                    src,
                });
                return;
            }
            (Prim::Lt | Prim::Le | Prim::Gt | Prim::Ge | Prim::Eq | Prim::Ne | Prim::Select, _) => {
                return self.error(
                    src,
                    format!("a comparison or branch on a value {names} is not linear (the result would jump where the value changes sign); compare non-linear values only"),
                );
            }
            (Prim::ToI64 | Prim::FloatToInt(_) | Prim::IntCast(_), _) => {
                return self.error(
                    src,
                    format!("a cast of a value {names} to an integer is not linear (an index, a loop bound or a count cannot depend on a linear value)"),
                );
            }
            _ => {
                return self.error(
                    src,
                    format!("`{}` of a value {names} is not linear: only `+`, `-`, negation, scaling by and division by non-linear values are; apply `{}` to non-linear values (e.g. the primal) and scale the linear value by the result", p.name(), p.name()),
                );
            }
        };
        self.note_shape(bind, &op);
        out.push(lin_stmt(s.binds.clone(), op, src));
    }

    fn array(&mut self, s: &Stmt, op: &ArrayOp, out: &mut Vec<Stmt>) {
        let src = s.src;
        let mut operands = vec![];
        crate::visit::for_each_operand(&s.expr, &mut |a| operands.push(*a), &mut |_| {});
        let Some(first) = operands.iter().find(|a| self.lin(a).is_some()).copied() else {
            match op {
                ArrayOp::Broadcast { arr, shape, axes }
                    if axes.is_empty() && self.zero(arr).is_some() =>
                {
                    let dims = shape.iter().map(|a| Dim::Atom(*a)).collect();
                    self.zeros.insert(s.binds[0], ShapeTree::Array(dims));
                }
                // An element of a zero array.
                ArrayOp::Index { arr, idx } if self.zero(arr).is_some() => {
                    if let (Some(Atom::Var(a)), Ty::Scalar(_)) =
                        (Some(*arr), self.vars.ty(s.binds[0]))
                    {
                        let _ = a;
                        self.zeros.insert(s.binds[0], ShapeTree::Scalar);
                    } else if let Some(ShapeTree::Array(dims)) = self.zero(arr) {
                        let rest = dims[idx.len().min(dims.len())..].to_vec();
                        self.zeros.insert(s.binds[0], ShapeTree::Array(rest));
                    }
                }
                _ => {}
            }
            out.push(s.clone());
            return;
        };
        let names = self.names(&first);
        let lin_op = match op {
            ArrayOp::Index { arr, idx } => self.lin(arr).map(|x| LinOp::Index { x, idx: idx.clone() }),
            ArrayOp::Gather { arr, idx } => self.lin(arr).map(|x| LinOp::Gather { x, idx: *idx }),
            ArrayOp::ScatterAdd { len, idx, vals } => self.lin(vals).map(|x| LinOp::ScatterAdd {
                len: *len,
                idx: *idx,
                x,
            }),
            ArrayOp::Reduce {
                op: ReduceOp::Sum,
                arr,
                axis,
            } => self.lin(arr).map(|x| LinOp::Sum { x, axis: *axis }),
            ArrayOp::Scan { arr, reverse } => self.lin(arr).map(|x| LinOp::Scan {
                x,
                reverse: *reverse,
            }),
            ArrayOp::Transpose { arr } => self.lin(arr).map(LinOp::Transpose),
            ArrayOp::Broadcast { arr, shape, axes } => self.lin(arr).map(|x| LinOp::Broadcast {
                x,
                shape: shape.clone(),
                axes: axes.clone(),
            }),
            ArrayOp::MatMul { a, b } => match (self.lin(a), self.lin(b)) {
                (Some(_), Some(_)) => {
                    return self.error(
                        src,
                        format!("a matrix product of two linear values ({names}) is quadratic, not linear: one side must be non-linear"),
                    )
                }
                (Some(x), None) => Some(LinOp::MatMul {
                    a: *b,
                    x,
                    lin_left: true,
                }),
                (None, Some(x)) => Some(LinOp::MatMul {
                    a: *a,
                    x,
                    lin_left: false,
                }),
                (None, None) => None,
            },
            ArrayOp::Update { arr, idx, val, add } => {
                let ty = self.vars.ty(s.binds[0]).clone();
                let vty = crate::typing::atom_ty(val, &self.vars);
                let x = self.as_linear(arr, &ty, src, out, "the array updated with a linear value");
                let v = self.as_linear(val, &vty, src, out, "the value written into a linear array");
                match (x, v) {
                    (Some(x), Some(val)) => Some(LinOp::Update {
                        x,
                        idx: idx.clone(),
                        val,
                        add: *add,
                    }),
                    _ => return,
                }
            }
            ArrayOp::Reduce { .. } | ArrayOp::ArgReduce { .. } => {
                return self.error(
                    src,
                    format!("a maximum, minimum, product or arg-max/arg-min of a value {names} is not linear: only sums are"),
                )
            }
            ArrayOp::Shape { arr, axis } => {
                if let Some(d) = arr.var().and_then(|x| self.seed_shapes.get(&x)).and_then(|ds| ds.get(*axis)) {
                    let expr = match *d {
                        Dim::Atom(a) => Expr::Atom(a),
                        Dim::Of(v, k) => Expr::Array(ArrayOp::Shape { arr: Atom::Var(v), axis: k }),
                    };
                    out.push(Stmt {
                        binds: s.binds.clone(),
                        lin_binds: vec![],
                        expr,
                        src,
                    });
                    return;
                }
                return self.error(
                    src,
                    format!("take shapes from non-linear values (e.g. the primal parameter), not from a value {names}"),
                )
            }
            // A linear array's memory layout is not known here: its
            // row-major stride (the interpreter's), so `fold` and `Zip`
            // visit it in logical order.
            ArrayOp::Stride { arr, axis } => {
                let dims = arr.var().and_then(|x| self.seed_shapes.get(&x)).cloned();
                if let Some(later) = dims.as_ref().and_then(|ds| ds.get(*axis + 1..)) {
                    let mut stride = Atom::I64(1);
                    for d in later {
                        let expr = match *d {
                            Dim::Atom(a) => Expr::Atom(a),
                            Dim::Of(v, k) => Expr::Array(ArrayOp::Shape { arr: Atom::Var(v), axis: k }),
                        };
                        let n = self.vars.fresh("n", Ty::I64, false);
                        let m = self.vars.fresh("st", Ty::I64, false);
                        out.push(Stmt { binds: vec![n], lin_binds: vec![], expr, src });
                        out.push(Stmt {
                            binds: vec![m],
                            lin_binds: vec![],
                            expr: Expr::Prim(Prim::Mul, vec![stride, Atom::Var(n)]),
                            src,
                        });
                        stride = Atom::Var(m);
                    }
                    out.push(Stmt {
                        binds: s.binds.clone(),
                        lin_binds: vec![],
                        expr: Expr::Atom(stride),
                        src,
                    });
                    return;
                }
                return self.error(
                    src,
                    format!("`fold` and `Zip` visit an array in its memory order, which is not known of a value {names}: iterate it with `.iter()` (logical order)"),
                );
            }
        };
        match lin_op {
            Some(op) => {
                if let Some(b) = s.binds.first() {
                    self.note_shape(*b, &op);
                }
                out.push(lin_stmt(s.binds.clone(), op, src))
            }
            None => self.error(
                src,
                format!("a value {names} is used as an index, a length or a shape here, which is not linear"),
            ),
        }
    }

    fn if_(&mut self, s: &Stmt, i: &If, out: &mut Vec<Stmt>) {
        let src = s.src;
        let mask: Vec<bool> = s.binds.iter().map(|v| self.taint.contains(v)).collect();
        let then_ = self.block(&i.then_, &mask, src, None);
        let else_ = self.block(&i.else_, &mask, src, None);
        let (binds, lin_binds) = split(&s.binds, &mask);
        let lin_shapes = lin_binds
            .iter()
            .map(|v| scalar_shape(self.vars.ty(*v)).unwrap_or_else(pending))
            .collect();
        out.push(Stmt {
            binds,
            lin_binds,
            expr: Expr::If(If {
                cond: i.cond,
                then_,
                else_,
                lin_shapes,
            }),
            src,
        });
    }

    fn loop_(&mut self, s: &Stmt, l: &Loop, out: &mut Vec<Stmt>) {
        let src = s.src;
        let k = l.init.len();
        let state = &l.body.params[1..];
        let results = &l.body.body.results;
        let state_lin: Vec<bool> = (0..k)
            .map(|j| {
                self.taint.contains(&state[j])
                    || self.taint.contains(&s.binds[j])
                    || self.lin(&l.init[j]).is_some()
                    || self.lin(&results[j]).is_some()
            })
            .collect();
        let (mut init, mut lin_init, mut params, mut lin_params) =
            (vec![], vec![], vec![l.body.params[0]], vec![]);
        for j in 0..k {
            if state_lin[j] {
                let ty = self.vars.ty(state[j]).clone();
                self.taint.insert(state[j]);
                self.vars.vars[state[j].0 as usize].linear = true;
                lin_init.extend(self.as_linear(
                    &l.init[j],
                    &ty,
                    src,
                    out,
                    "the initial value of loop state that becomes linear",
                ));
                lin_params.push(state[j]);
            } else {
                init.push(l.init[j]);
                params.push(state[j]);
            }
        }
        let mask: Vec<bool> = (0..results.len())
            .map(|j| {
                if j < k {
                    state_lin[j]
                } else {
                    self.taint.contains(&s.binds[j])
                }
            })
            .collect();
        let body = self.block(&l.body.body, &mask, src, None);
        let (binds, lin_binds) = split(&s.binds, &mask);
        for v in &lin_binds {
            self.taint.insert(*v);
            self.vars.vars[v.0 as usize].linear = true;
        }
        out.push(Stmt {
            binds,
            lin_binds,
            expr: Expr::Loop(Loop {
                n: l.n,
                rev: l.rev,
                init,
                lin_init,
                body: Lambda {
                    params,
                    lin_params,
                    body,
                },
            }),
            src,
        });
    }
}

fn nl_stmt(bind: Var, expr: Expr, src: Option<SrcId>) -> Stmt {
    Stmt {
        binds: vec![bind],
        lin_binds: vec![],
        expr,
        src,
    }
}

fn lin_stmt(lin_binds: Vec<Var>, op: LinOp, src: Option<SrcId>) -> Stmt {
    Stmt {
        binds: vec![],
        lin_binds,
        expr: Expr::Lin(op),
        src,
    }
}

/// `(vs where !mask, vs where mask)`.
fn split(vs: &[Var], mask: &[bool]) -> (Vec<Var>, Vec<Var>) {
    let (mut a, mut b) = (vec![], vec![]);
    for (v, m) in vs.iter().zip(mask) {
        if *m {
            b.push(*v)
        } else {
            a.push(*v)
        }
    }
    (a, b)
}

/// The shape of a scalar or a tuple of scalars.
fn scalar_shape(ty: &Ty) -> Option<ShapeTree> {
    match ty {
        Ty::Scalar(_) => Some(ShapeTree::Scalar),
        Ty::Array { .. } | Ty::Opaque(_) => None,
        Ty::Tuple(ts) => ts
            .iter()
            .map(scalar_shape)
            .collect::<Option<Vec<_>>>()
            .map(ShapeTree::Tuple),
    }
}

/// Gives every `if`'s linear array result the shape of a branch's value,
/// when that shape is known outside the `if` (inner `if`s first: a round
/// fixes what the previous rounds make known).
fn fix_if_shapes(f: &mut Func) -> Result<(), String> {
    loop {
        let bs = Binders::of(f);
        let vars = f.vars.clone();
        let (mut fixed, mut open) = (0, 0);
        fix_block(&mut f.body, &bs, &vars, &mut fixed, &mut open);
        if open == 0 {
            return Ok(());
        }
        if fixed == 0 {
            return Err("not yet supported: an `if` whose branches return linear arrays of a shape known only inside the branch; compute the array before the `if` and select with it".into());
        }
    }
}

fn fix_block(b: &mut Block, bs: &Binders, vars: &VarTable, fixed: &mut usize, open: &mut usize) {
    for s in &mut b.stmts {
        if let Expr::If(i) = &mut s.expr {
            let inner: FastSet<Var> = binders(&i.then_.stmts)
                .into_iter()
                .chain(binders(&i.else_.stmts))
                .collect();
            for k in 0..i.lin_shapes.len() {
                if i.lin_shapes[k] != pending() {
                    continue;
                }
                let from = |blk: &Block| -> Option<ShapeTree> {
                    let t = bs.shape_of(vars, blk.lin_results[k]).ok()?;
                    if t == pending() {
                        return None;
                    }
                    outer_shape(t, &blk.stmts, &inner)
                };
                match from(&i.then_).or_else(|| from(&i.else_)) {
                    Some(t) => {
                        i.lin_shapes[k] = t;
                        *fixed += 1;
                    }
                    None => *open += 1,
                }
            }
        }
        for blk in crate::visit::blocks_mut(&mut s.expr) {
            fix_block(blk, bs, vars, fixed, open);
        }
    }
}

/// `t` with sizes bound inside the branch (`n = shape a, k` or copies, with
/// `a` from outside) replaced by their outside equivalents; `None` if a size
/// stays inside.
fn outer_shape(t: ShapeTree, stmts: &[Stmt], inner: &FastSet<Var>) -> Option<ShapeTree> {
    let def = |v: Var| -> Option<&Expr> {
        fn find(stmts: &[Stmt], v: Var) -> Option<&Expr> {
            for s in stmts {
                if s.binds.contains(&v) {
                    return Some(&s.expr);
                }
                for blk in crate::visit::blocks(&s.expr) {
                    if let Some(e) = find(&blk.stmts, v) {
                        return Some(e);
                    }
                }
            }
            None
        }
        find(stmts, v)
    };
    let dim = |d: Dim| -> Option<Dim> {
        let mut d = d;
        for _ in 0..16 {
            match d {
                Dim::Atom(Atom::Var(v)) | Dim::Of(v, _) if !inner.contains(&v) => return Some(d),
                Dim::Atom(Atom::Var(v)) => match def(v)? {
                    Expr::Atom(a) => d = Dim::Atom(*a),
                    Expr::Array(ArrayOp::Shape {
                        arr: Atom::Var(a),
                        axis,
                    }) => d = Dim::Of(*a, *axis),
                    _ => return None,
                },
                Dim::Atom(_) => return Some(d),
                Dim::Of(..) => return None,
            }
        }
        None
    };
    match t {
        ShapeTree::Array(ds) => ds
            .into_iter()
            .map(dim)
            .collect::<Option<Vec<_>>>()
            .map(ShapeTree::Array),
        other => Some(other),
    }
}
