//! The checker rejects every violation of the linear discipline with a
//! message naming the offending variable.

use ad_core_ir::build::FuncBuilder;
use ad_core_ir::check::{check_func, Mode};
use ad_core_ir::ir::*;
use ad_core_ir::types::Ty;

/// A function `f(x ; dx, dy)` built by `body`, checked in `mode`; returns the messages.
fn errors(
    mode: Mode,
    body: impl FnOnce(&mut FuncBuilder, Var, Var, Var) -> (Vec<Atom>, Vec<Var>),
) -> Vec<String> {
    let p = Program::default();
    let mut b = FuncBuilder::new(&p, "f");
    let x = b.param("x", Ty::F64);
    let dx = b.lin_param("dx", Ty::F64, ShapeTree::Scalar);
    let dy = b.lin_param("dy", Ty::F64, ShapeTree::Scalar);
    let (r, lr) = body(&mut b, x, dx, dy);
    let f = b.finish(r, lr);
    match check_func(&p, &f, mode) {
        Ok(()) => vec![],
        Err(es) => es.into_iter().map(|e| e.msg).collect(),
    }
}

fn assert_rejected(errs: &[String], needles: &[&str]) {
    assert!(
        !errs.is_empty(),
        "accepted, expected an error mentioning {needles:?}"
    );
    let all = errs.join("\n");
    for n in needles {
        assert!(all.contains(n), "error does not mention `{n}`:\n{all}");
    }
}

fn push(b: &mut FuncBuilder, binds: Vec<Var>, lin_binds: Vec<Var>, expr: Expr) {
    b.push(Stmt {
        binds,
        lin_binds,
        expr,
        src: Some(SrcId(7)),
    });
}

#[test]
fn accepts_a_well_formed_linear_function() {
    let e = errors(Mode::LinearB, |b, x, dx, dy| {
        let s = b.lin(LinOp::Scale { s: x.into(), x: dx });
        let t = b.lin(LinOp::Add(s, dy));
        (vec![], vec![t])
    });
    assert!(e.is_empty(), "{e:?}");
}

#[test]
fn rejects_product_of_two_linear_values() {
    let e = errors(Mode::LinearA, |b, _x, dx, dy| {
        let p = b.prim(Prim::Mul, &[dx.into(), dy.into()]);
        (vec![p.into()], vec![])
    });
    assert_rejected(&e, &["dx_1", "dy_2", "non-linear operand of mul"]);
}

#[test]
fn rejects_nonlinear_function_of_linear_value() {
    let e = errors(Mode::LinearA, |b, _x, dx, dy| {
        let s = b.prim(Prim::Sin, &[dx.into()]);
        b.emit(Expr::Lin(LinOp::Drop(dy)));
        (vec![s.into()], vec![])
    });
    assert_rejected(&e, &["linear variable `dx_1`", "sin"]);
}

#[test]
fn rejects_affine_offset_of_linear_value() {
    let e = errors(Mode::LinearA, |b, _x, dx, dy| {
        let s = b.prim(Prim::Add, &[dx.into(), Atom::F64(1.0)]);
        b.emit(Expr::Lin(LinOp::Drop(dy)));
        (vec![s.into()], vec![])
    });
    assert_rejected(&e, &["linear variable `dx_1`", "add"]);
}

#[test]
fn rejects_linear_value_used_twice_without_dup() {
    let e = errors(Mode::LinearA, |b, _x, dx, dy| {
        let s = b.lin(LinOp::Add(dx, dx));
        b.emit(Expr::Lin(LinOp::Drop(dy)));
        (vec![], vec![s])
    });
    assert_rejected(&e, &["`dx_1` is used 2 times", "duplicate it explicitly"]);
}

#[test]
fn rejects_linear_value_dropped_silently() {
    let e = errors(Mode::LinearA, |_b, _x, dx, _dy| (vec![], vec![dx]));
    assert_rejected(&e, &["`dy_2` is never used", "drop it explicitly"]);
}

#[test]
fn rejects_branch_on_linear_value() {
    let e = errors(Mode::LinearA, |b, _x, dx, dy| {
        let r = b.fresh("r", Ty::F64);
        let then_ = Block {
            stmts: vec![],
            results: vec![Atom::F64(1.0)],
            lin_results: vec![],
        };
        let else_ = Block {
            stmts: vec![],
            results: vec![Atom::F64(2.0)],
            lin_results: vec![],
        };
        push(
            b,
            vec![r],
            vec![],
            Expr::If(If {
                cond: dx.into(),
                then_,
                else_,
                lin_shapes: vec![],
            }),
        );
        b.emit(Expr::Lin(LinOp::Drop(dy)));
        (vec![r.into()], vec![])
    });
    assert_rejected(&e, &["linear variable `dx_1`", "an if"]);
}

#[test]
fn rejects_nonlinear_result_computed_from_linear_input() {
    let e = errors(Mode::LinearA, |b, _x, dx, dy| {
        let y = b.fresh("y", Ty::F64);
        push(b, vec![y], vec![], Expr::Atom(dx.into()));
        b.emit(Expr::Lin(LinOp::Drop(dy)));
        (vec![y.into()], vec![])
    });
    assert_rejected(&e, &["linear variable `dx_1`", "copy"]);
}

#[test]
fn rejects_linear_scale_factor() {
    let e = errors(Mode::LinearA, |b, _x, dx, dy| {
        let s = b.fresh_lin("s", Ty::F64);
        push(
            b,
            vec![],
            vec![s],
            Expr::Lin(LinOp::Scale {
                s: dx.into(),
                x: dy,
            }),
        );
        (vec![], vec![s])
    });
    assert_rejected(&e, &["linear variable `dx_1`", "lscale"]);
}

#[test]
fn rejects_branch_consuming_linear_value_on_one_side_only() {
    let e = errors(Mode::LinearA, |b, x, dx, dy| {
        let c = b.prim(Prim::Lt, &[x.into(), Atom::F64(0.0)]);
        let d = b.fresh_lin("d", Ty::F64);
        let then_ = Block {
            stmts: vec![],
            results: vec![],
            lin_results: vec![dx],
        };
        let z = b.fresh_lin("z", Ty::F64);
        let else_ = Block {
            stmts: vec![Stmt {
                binds: vec![],
                lin_binds: vec![z],
                expr: Expr::Lin(LinOp::Zero(ShapeTree::Scalar)),
                src: None,
            }],
            results: vec![],
            lin_results: vec![z],
        };
        push(
            b,
            vec![],
            vec![d],
            Expr::If(If {
                cond: c.into(),
                then_,
                else_,
                lin_shapes: vec![ShapeTree::Scalar],
            }),
        );
        let r = b.lin(LinOp::Add(d, dy));
        (vec![], vec![r])
    });
    assert_rejected(&e, &["`dx_1` is consumed by only one branch"]);
}

#[test]
fn rejects_mixed_statement_in_linear_b() {
    let e = errors(Mode::LinearB, |b, x, dx, dy| {
        let c = b.prim(Prim::Lt, &[x.into(), Atom::F64(0.0)]);
        let r = b.fresh("r", Ty::F64);
        let d = b.fresh_lin("d", Ty::F64);
        let then_ = Block {
            stmts: vec![],
            results: vec![Atom::F64(1.0)],
            lin_results: vec![dx],
        };
        let else_ = Block {
            stmts: vec![],
            results: vec![Atom::F64(2.0)],
            lin_results: vec![dx],
        };
        push(
            b,
            vec![r],
            vec![d],
            Expr::If(If {
                cond: c.into(),
                then_,
                else_,
                lin_shapes: vec![ShapeTree::Scalar],
            }),
        );
        let t = b.lin(LinOp::Add(d, dy));
        (vec![r.into()], vec![t])
    });
    assert_rejected(&e, &["mixes non-linear results with linear values"]);
}

#[test]
fn errors_carry_the_source_id() {
    let p = Program::default();
    let mut b = FuncBuilder::new(&p, "f");
    let dx = b.lin_param("dx", Ty::F64, ShapeTree::Scalar);
    let y = b.fresh("y", Ty::F64);
    push(
        &mut b,
        vec![y],
        vec![],
        Expr::Prim(Prim::Cos, vec![dx.into()]),
    );
    let f = b.finish(vec![y.into()], vec![]);
    let es = check_func(&p, &f, Mode::LinearA).unwrap_err();
    assert!(
        es.iter()
            .any(|e| e.src == Some(SrcId(7)) && e.var == Some(dx)),
        "{es:?}"
    );
}

#[test]
fn rejects_a_result_bound_at_another_type() {
    // `y: i64 = x * x` with `x: f64`.
    let e = errors(Mode::LinearA, |b, x, dx, dy| {
        let y = b.fresh("y", Ty::I64);
        push(
            b,
            vec![y],
            vec![],
            Expr::Prim(Prim::Mul, vec![x.into(), x.into()]),
        );
        let t = b.lin(LinOp::Add(dx, dy));
        (vec![y.into()], vec![t])
    });
    assert_rejected(&e, &["produces (f64 ; ) but binds (i64 ; )"]);
}

#[test]
fn rejects_a_statement_binding_too_many_results() {
    // Two binders for the one result of `x * x`, and a linear one for
    // a statement that makes none.
    let e = errors(Mode::LinearA, |b, x, dx, dy| {
        let (y, z) = (b.fresh("y", Ty::F64), b.fresh("z", Ty::F64));
        let w = b.fresh_lin("w", Ty::F64);
        push(
            b,
            vec![y, z],
            vec![w],
            Expr::Prim(Prim::Mul, vec![x.into(), x.into()]),
        );
        let t = b.lin(LinOp::Add(dx, dy));
        let u = b.lin(LinOp::Add(t, w));
        (vec![y.into(), z.into()], vec![u])
    });
    assert_rejected(&e, &["produces (f64 ; ) but binds (f64, f64 ; f64)"]);
}
