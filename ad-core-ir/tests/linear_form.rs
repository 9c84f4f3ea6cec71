//! `linear_form` on random programs: the JVP pass's Linear A output, with
//! its linearity forgotten (every linear operation written as the
//! non-linear operation it computes), must come back as a Linear A function
//! that passes the checker and computes the same results bit for bit. Then
//! hand-written refusals: each kind of linearity error is found.
//!
//! `PROPTEST_CASES` sets the number of cases (default 256).

mod common;

use ad_core_ir::check::{check_func, Mode};
use ad_core_ir::driver::{differentiate, Options};
use ad_core_ir::interp::{run, Value};
use ad_core_ir::ir::*;
use ad_core_ir::linear_form::{linear_form, Outputs, SeedShape};
use ad_core_ir::parse::parse_program;
use ad_core_ir::pretty::func_to_string;
use ad_core_ir::types::{Scalar, Ty};
use common::gen::{cases, GenConfig};
use proptest::prelude::*;
use proptest::test_runner::TestRunner;

// ------------------------------------------------------------ forgetting

/// `f` with every variable non-linear: linear parameters appended to the
/// parameters, linear results to the results, linear operations written
/// with non-linear ones. `None` when `f` calls a function with linear
/// arguments (out of scope here).
fn forget(f: &Func) -> Option<Func> {
    let mut vars = f.vars.clone();
    for v in &mut vars.vars {
        v.linear = false;
    }
    let mut fg = Forget {
        vars,
        ok: true,
        tzero: None,
    };
    // A zero that depends on the first linear parameter (`0.0 * sum(dx)`),
    // so that the linear zeros of `f` stay linear values: `linear_form`
    // only knows literal zeros to be linear.
    let mut pre = vec![];
    if let Some(p) = f.lin_params.first() {
        let f64t = Ty::Scalar(Scalar::F64);
        let s = match f.vars.ty(*p) {
            Ty::Scalar(_) => Some(Atom::Var(*p)),
            Ty::Array { .. } => {
                let s = fg.vars.fresh("s", f64t.clone(), false);
                pre.push(stmt(
                    vec![s],
                    Expr::Array(ArrayOp::Reduce {
                        op: ReduceOp::Sum,
                        arr: Atom::Var(*p),
                        axis: None,
                    }),
                ));
                Some(Atom::Var(s))
            }
            Ty::Tuple(_) | Ty::Opaque(_) => None,
        };
        if let Some(s) = s {
            let t = fg.vars.fresh("tzero", f64t, false);
            pre.push(stmt(
                vec![t],
                Expr::Prim(Prim::Mul, vec![s, Atom::F64(0.0)]),
            ));
            fg.tzero = Some(Atom::Var(t));
        }
    }
    let mut body = fg.block(&f.body);
    pre.append(&mut body.stmts);
    body.stmts = pre;
    if !fg.ok {
        return None;
    }
    let mut params = f.params.clone();
    params.extend(&f.lin_params);
    Some(Func {
        name: f.name.clone(),
        params,
        lin_params: vec![],
        lin_param_shapes: vec![],
        body,
        vars: fg.vars,
    })
}

struct Forget {
    vars: VarTable,
    ok: bool,
    /// A zero computed from a linear parameter, when there is one.
    tzero: Option<Atom>,
}

fn stmt(binds: Vec<Var>, expr: Expr) -> Stmt {
    Stmt {
        binds,
        lin_binds: vec![],
        expr,
        src: None,
    }
}

impl Forget {
    fn block(&mut self, b: &Block) -> Block {
        let mut out = vec![];
        for s in &b.stmts {
            self.stmt(s, &mut out);
        }
        let mut results = b.results.clone();
        results.extend(b.lin_results.iter().map(|v| Atom::Var(*v)));
        Block {
            stmts: out,
            results,
            lin_results: vec![],
        }
    }

    fn lambda(&mut self, l: &Lambda) -> Lambda {
        let mut params = l.params.clone();
        params.extend(&l.lin_params);
        Lambda {
            params,
            lin_params: vec![],
            body: self.block(&l.body),
        }
    }

    /// `bind = map(|a, b| a op b, xs)`, scalars or arrays (one side may be
    /// a scalar, captured).
    fn elementwise(&mut self, bind: Var, p: Prim, a: Atom, b: Atom, out: &mut Vec<Stmt>) {
        let ty = |fg: &Forget, x: &Atom| ad_core_ir::typing::atom_ty(x, &fg.vars);
        let (ta, tb) = (ty(self, &a), ty(self, &b));
        if matches!(ta, Ty::Scalar(_)) && matches!(tb, Ty::Scalar(_)) {
            out.push(stmt(vec![bind], Expr::Prim(p, vec![a, b])));
            return;
        }
        let f64v = Ty::Scalar(Scalar::F64);
        let mut arrs = vec![];
        let mut params = vec![];
        let mut elem = |fg: &mut Forget, x: Atom, t: &Ty| -> Atom {
            if matches!(t, Ty::Array { .. }) {
                let e = fg.vars.fresh("e", f64v.clone(), false);
                arrs.push(x);
                params.push(e);
                Atom::Var(e)
            } else {
                x
            }
        };
        let ea = elem(self, a, &ta);
        let eb = elem(self, b, &tb);
        let r = self.vars.fresh("r", f64v.clone(), false);
        out.push(stmt(
            vec![bind],
            Expr::Map(Map {
                arrs,
                lin_arrs: vec![],
                body: Lambda {
                    params,
                    lin_params: vec![],
                    body: Block {
                        stmts: vec![stmt(vec![r], Expr::Prim(p, vec![ea, eb]))],
                        results: vec![Atom::Var(r)],
                        lin_results: vec![],
                    },
                },
            }),
        ));
    }

    fn zero(&mut self, bind: Var, shape: &ShapeTree, out: &mut Vec<Stmt>) {
        let z = self.tzero.unwrap_or(Atom::F64(0.0));
        match shape {
            ShapeTree::Scalar => out.push(stmt(vec![bind], Expr::Atom(z))),
            ShapeTree::Array(dims) => {
                let mut atoms = vec![];
                for d in dims {
                    atoms.push(match *d {
                        Dim::Atom(a) => a,
                        Dim::Of(v, k) => {
                            let n = self.vars.fresh("n", Ty::Scalar(Scalar::I64), false);
                            out.push(stmt(
                                vec![n],
                                Expr::Array(ArrayOp::Shape {
                                    arr: Atom::Var(v),
                                    axis: k,
                                }),
                            ));
                            Atom::Var(n)
                        }
                    });
                }
                out.push(stmt(
                    vec![bind],
                    Expr::Array(ArrayOp::Broadcast {
                        arr: z,
                        shape: atoms,
                        axes: vec![],
                    }),
                ));
            }
            ShapeTree::Tuple(ts) => {
                if ts.iter().all(|t| *t == ShapeTree::Scalar) {
                    out.push(stmt(
                        vec![bind],
                        Expr::Tuple(vec![Atom::F64(0.0); ts.len()]),
                    ));
                } else {
                    self.ok = false;
                }
            }
        }
    }

    fn stmt(&mut self, s: &Stmt, out: &mut Vec<Stmt>) {
        let mut binds = s.binds.clone();
        binds.extend(&s.lin_binds);
        let v = |x: &Var| Atom::Var(*x);
        let expr = match &s.expr {
            Expr::Lin(op) => {
                let b = s.lin_binds.first().copied();
                match op {
                    LinOp::Zero(shape) => return self.zero(b.unwrap(), shape, out),
                    LinOp::Add(x, y) => {
                        return self.elementwise(b.unwrap(), Prim::Add, v(x), v(y), out)
                    }
                    LinOp::Neg(x) => {
                        return self.elementwise(b.unwrap(), Prim::Sub, Atom::F64(0.0), v(x), out)
                    }
                    LinOp::Scale { s: sc, x } => {
                        return self.elementwise(b.unwrap(), Prim::Mul, *sc, v(x), out)
                    }
                    LinOp::Dup(x) => {
                        for c in &s.lin_binds {
                            out.push(stmt(vec![*c], Expr::Atom(v(x))));
                        }
                        return;
                    }
                    LinOp::Drop(_) => return,
                    LinOp::Tuple(xs) => Expr::Tuple(xs.iter().map(v).collect()),
                    LinOp::Untuple(x) => Expr::Untuple(v(x)),
                    LinOp::Index { x, idx } => Expr::Array(ArrayOp::Index {
                        arr: v(x),
                        idx: idx.clone(),
                    }),
                    LinOp::Update { x, idx, val, add } => Expr::Array(ArrayOp::Update {
                        arr: v(x),
                        idx: idx.clone(),
                        val: v(val),
                        add: *add,
                    }),
                    LinOp::Gather { x, idx } => Expr::Array(ArrayOp::Gather {
                        arr: v(x),
                        idx: *idx,
                    }),
                    LinOp::ScatterAdd { len, idx, x } => Expr::Array(ArrayOp::ScatterAdd {
                        len: *len,
                        idx: *idx,
                        vals: v(x),
                    }),
                    LinOp::Sum { x, axis } => Expr::Array(ArrayOp::Reduce {
                        op: ReduceOp::Sum,
                        arr: v(x),
                        axis: *axis,
                    }),
                    LinOp::Broadcast { x, shape, axes } => Expr::Array(ArrayOp::Broadcast {
                        arr: v(x),
                        shape: shape.clone(),
                        axes: axes.clone(),
                    }),
                    LinOp::Transpose(x) => Expr::Array(ArrayOp::Transpose { arr: v(x) }),
                    LinOp::MatMul { a, x, lin_left } => {
                        let (l, r) = if *lin_left { (v(x), *a) } else { (*a, v(x)) };
                        Expr::Array(ArrayOp::MatMul { a: l, b: r })
                    }
                    LinOp::Scan { x, reverse } => Expr::Array(ArrayOp::Scan {
                        arr: v(x),
                        reverse: *reverse,
                    }),
                    LinOp::Take { .. } | LinOp::Outer { .. } | LinOp::SumTo { .. } => {
                        self.ok = false;
                        return;
                    }
                }
            }
            Expr::Call(c) => {
                if !c.lin_args.is_empty() || !s.lin_binds.is_empty() {
                    self.ok = false;
                    return;
                }
                s.expr.clone()
            }
            Expr::If(i) => Expr::If(If {
                cond: i.cond,
                then_: self.block(&i.then_),
                else_: self.block(&i.else_),
                lin_shapes: vec![],
            }),
            Expr::Loop(l) => {
                // State first (non-linear, then linear), then the outputs.
                let k = l.init.len();
                let m = l.lin_init.len();
                let body = self.lambda(&l.body);
                let nb = l.body.body.results.len();
                let r = &body.body.results;
                let mut results = r[..k].to_vec();
                results.extend_from_slice(&r[nb..nb + m]);
                results.extend_from_slice(&r[k..nb]);
                results.extend_from_slice(&r[nb + m..]);
                let mut init = l.init.clone();
                init.extend(l.lin_init.iter().map(v));
                let np = s.binds.len();
                let mut b2 = s.binds[..k].to_vec();
                b2.extend_from_slice(&s.lin_binds[..m]);
                b2.extend_from_slice(&s.binds[k..np]);
                b2.extend_from_slice(&s.lin_binds[m..]);
                binds = b2;
                Expr::Loop(Loop {
                    n: l.n,
                    rev: l.rev,
                    init,
                    lin_init: vec![],
                    body: Lambda {
                        params: body.params,
                        lin_params: vec![],
                        body: Block {
                            stmts: body.body.stmts,
                            results,
                            lin_results: vec![],
                        },
                    },
                })
            }
            Expr::Build(bd) => Expr::Build(Build {
                shape: bd.shape.clone(),
                body: self.lambda(&bd.body),
            }),
            Expr::Map(m) => {
                let mut arrs = m.arrs.clone();
                arrs.extend(m.lin_arrs.iter().map(v));
                Expr::Map(Map {
                    arrs,
                    lin_arrs: vec![],
                    body: self.lambda(&m.body),
                })
            }
            _ => s.expr.clone(),
        };
        out.push(Stmt {
            binds,
            lin_binds: vec![],
            expr,
            src: s.src,
        });
    }
}

// ------------------------------------------------------------ property

fn fail(msg: impl Into<String>) -> TestCaseError {
    TestCaseError::fail(msg.into())
}

/// The sizes of every axis of the array values, in order (the shape
/// parameters `SeedShape::Params` appends).
fn sizes(vals: &[Value]) -> Vec<Value> {
    vals.iter()
        .flat_map(|v| match v {
            Value::Array(a) => a.shape.iter().map(|n| Value::I64(*n as i64)).collect(),
            _ => vec![],
        })
        .collect()
}

/// Equal values, reading `-0.0` as `0.0` (a zero of the linear form may be
/// `0.0 * dx`) and NaN as equal to NaN.
fn same_values(a: &(Vec<Value>, Vec<Value>), b: &(Vec<Value>, Vec<Value>)) -> bool {
    fn flat(v: &Value, out: &mut Vec<f64>) {
        match v {
            Value::F64(x) => out.push(*x),
            Value::I64(x) => out.push(*x as f64),
            Value::Bool(x) => out.push(f64::from(u8::from(*x))),
            Value::Tuple(vs) => vs.iter().for_each(|v| flat(v, out)),
            Value::Array(a) => {
                out.extend(a.shape.iter().map(|n| *n as f64));
                out.push(f64::NAN);
                match &a.data {
                    ad_core_ir::interp::ArrayData::F64(d) => out.extend(d),
                    ad_core_ir::interp::ArrayData::I64(d) => {
                        out.extend(d.iter().map(|x| *x as f64))
                    }
                    ad_core_ir::interp::ArrayData::Bool(d) => {
                        out.extend(d.iter().map(|x| f64::from(u8::from(*x))))
                    }
                }
            }
        }
    }
    let (mut x, mut y) = (vec![], vec![]);
    a.0.iter().chain(&a.1).for_each(|v| flat(v, &mut x));
    b.0.iter().chain(&b.1).for_each(|v| flat(v, &mut y));
    x.len() == y.len()
        && x.iter()
            .zip(&y)
            .all(|(p, q)| p == q || (p.is_nan() && q.is_nan()))
}

#[test]
fn prop_linear_form_recovers_jvp() {
    let mut runner = TestRunner::new(common::config());
    let (tried, skipped) = (std::cell::Cell::new(0usize), std::cell::Cell::new(0usize));
    let limited = std::cell::Cell::new(0usize);
    let res = runner.run(&cases(GenConfig::from_env()), |c| {
        tried.set(tried.get() + 1);
        let d = differentiate(&c.prog, &c.entry, &c.wrt, &Options::default())
            .map_err(|e| fail(format!("differentiate: {e}")))?;
        let j = d.program.func(&d.names.jvp).expect("jvp").clone();
        let Some(n) = forget(&j) else {
            skipped.set(skipped.get() + 1);
            return Ok(());
        };
        let k = j.params.len();
        let mask: Vec<bool> = (0..n.params.len()).map(|i| i >= k).collect();
        let shapes = vec![SeedShape::Params; j.lin_params.len()];
        let lf = match linear_form(
            &n,
            &mask,
            j.body.lin_results.len(),
            &shapes,
            &Outputs::default(),
            &[],
        ) {
            Ok(lf) => lf,
            // A documented limitation (an `if` returning a linear array
            // whose shape only the branch knows: one generated program in
            // tens of thousands, which made this test fail at random): not
            // a wrong result; counted, and bounded below.
            Err(es) if es.iter().all(|e| e.msg.starts_with("not yet supported")) => {
                limited.set(limited.get() + 1);
                return Ok(());
            }
            Err(e) => {
                return Err(fail(format!(
                    "refused: {e:?}\njvp:\n{}\nforgotten:\n{}",
                    func_to_string(&j),
                    func_to_string(&n)
                )))
            }
        };
        let mut l = lf.func;
        l.name = "linear_form_of_jvp".into();
        let mut prog = d.program.clone();
        prog.insert(l.clone());
        check_func(&prog, &l, Mode::LinearA)
            .map_err(|e| fail(format!("checker: {e:?}\n{}", func_to_string(&l))))?;
        let dx = common::props::directions(&c);
        let Ok(want) = run(&d.program, &j.name, &c.args, &dx) else {
            return Ok(());
        };
        let mut args = c.args.clone();
        args.extend(sizes(&dx));
        let got = run(&prog, &l.name, &args, &dx).map_err(|e| {
            fail(format!(
                "running the linear form: {e}\n{}",
                func_to_string(&l)
            ))
        })?;
        if !same_values(&got, &want) {
            return Err(fail(format!(
                "results differ: {got:?} vs {want:?}\njvp:\n{}\nlinear form:\n{}",
                func_to_string(&j),
                func_to_string(&l)
            )));
        }
        Ok(())
    });
    let (tried, skipped, limited) = (tried.get(), skipped.get(), limited.get());
    eprintln!("linear_form: {tried} cases, {skipped} skipped (calls with linear arguments, take, outer, tuple zeros), {limited} refused as not yet supported");
    if let Err(e) = res {
        panic!("{e}");
    }
    assert!(
        skipped * 2 < tried.max(2),
        "most cases skipped: {skipped} of {tried}"
    );
    assert!(
        limited * 100 < tried.max(100),
        "{limited} of {tried} cases refused as not yet supported"
    );
}

// ------------------------------------------------------------ refusals

/// The messages of `linear_form` on `src`'s function `f`, linear in its
/// parameters named `d*`, its last result linear.
fn refusals(src: &str) -> Vec<String> {
    let p = parse_program(src).expect("parses");
    let f = p.func("f").expect("f");
    let mask: Vec<bool> = f
        .params
        .iter()
        .map(|v| f.vars.info(*v).name.starts_with('d'))
        .collect();
    let n = mask.iter().filter(|m| **m).count();
    match linear_form(
        f,
        &mask,
        1,
        &vec![SeedShape::Params; n],
        &Outputs::default(),
        &[],
    ) {
        Ok(l) => panic!("accepted:\n{}", func_to_string(&l.func)),
        Err(es) => es.into_iter().map(|e| e.msg).collect(),
    }
}

#[test]
fn each_kind_of_linearity_error_is_found() {
    let cases = [
        ("def f(x_0: f64, dx_1: f64) -> (f64) {\n  let y_2: f64 = mul dx_1, dx_1\n  return y_2\n}", "product of two linear values"),
        ("def f(x_0: f64, dx_1: f64) -> (f64) {\n  let y_2: f64 = sin dx_1\n  return y_2\n}", "`sin` of a value linear in `dx`"),
        ("def f(x_0: f64, dx_1: f64) -> (f64) {\n  let y_2: f64 = add dx_1, 1.0\n  return y_2\n}", "affine"),
        ("def f(x_0: f64, dx_1: f64) -> (f64) {\n  let y_2: f64 = div x_0, dx_1\n  return y_2\n}", "division by a value linear in `dx`"),
        ("def f(x_0: f64, dx_1: f64) -> (f64) {\n  let c_2: bool = lt dx_1, 0.0\n  let y_4: f64 = select c_2, x_0, x_0\n  return y_4\n}", "comparison"),
        ("def f(x_0: f64, dx_1: f64) -> (f64) {\n  let y_2: f64 = mul x_0, 2.0\n  return y_2\n}", "must be linear"),
        ("def f(x_0: f64, dx_1: f64) -> (f64) {\n  let n_2: i64 = to_i64 dx_1\n  return dx_1\n}", "cast"),
    ];
    for (src, want) in cases {
        let got = refusals(src);
        assert!(
            got.iter().any(|m| m.contains(want)),
            "{src}\nwant `{want}` in {got:?}"
        );
    }
}

#[test]
fn a_rule_becomes_jvp_form() {
    let src = "def f(x_0: f64, dx_1: f64) -> (f64, f64) {\n  let y_2: f64 = sin x_0\n  let c_3: f64 = cos x_0\n  let dy_4: f64 = mul c_3, dx_1\n  return y_2, dy_4\n}";
    let p = parse_program(src).unwrap();
    let f = p.func("f").unwrap();
    let mut l = linear_form(f, &[false, true], 1, &[], &Outputs::default(), &[])
        .unwrap()
        .func;
    assert_eq!((l.params.len(), l.lin_params.len()), (1, 1));
    assert_eq!((l.body.results.len(), l.body.lin_results.len()), (1, 1));
    l.name = "g".into();
    let mut p = p.clone();
    p.insert(l.clone());
    check_func(&p, &l, Mode::LinearA).unwrap();
    let (y, dy) = run(&p, "g", &[Value::F64(0.5)], &[Value::F64(2.0)]).unwrap();
    assert_eq!(
        format!("{y:?}"),
        format!("{:?}", vec![Value::F64(0.5f64.sin())])
    );
    assert_eq!(
        format!("{dy:?}"),
        format!("{:?}", vec![Value::F64(0.5f64.cos() * 2.0)])
    );
}
