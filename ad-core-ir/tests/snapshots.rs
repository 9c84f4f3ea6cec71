//! Snapshots of the pretty-printed primal, linear and transposed programs of
//! canonical functions, so a reviewer can read what every pass produces; each
//! is also checked numerically and for work preservation.

use ad_core_ir::build::FuncBuilder;
use ad_core_ir::driver::{differentiate, Derivatives, Options};
use ad_core_ir::interp::Value;
use ad_core_ir::ir::*;
use ad_core_ir::pretty::func_to_string;
use ad_core_ir::testing::check_derived;
use ad_core_ir::types::Ty;

fn sum(b: &mut FuncBuilder, a: Var) -> Var {
    b.array(ArrayOp::Reduce {
        op: ReduceOp::Sum,
        arr: a.into(),
        axis: None,
    })
}

/// Differentiates, checks numerically, and renders the four derived functions.
fn derive(f: Func, args: &[Value]) -> String {
    let mut p = Program::default();
    let name = f.name.clone();
    p.insert(f);
    let f = p.func(&name).unwrap();
    let wrt: Vec<bool> = f
        .params
        .iter()
        .map(|v| f.vars.ty(*v).is_differentiable())
        .collect();
    let d: Derivatives = differentiate(&p, &name, &wrt, &Options::default()).unwrap();
    let r = check_derived(&p, &d, &name, args, &wrt, 11, 1e-6).unwrap();
    assert!(
        r.fd_rel_err < 1e-6 && r.dot_rel_err < 1e-10 && r.fwd_primal_exact,
        "{r:?}"
    );
    assert!(
        r.transpose_work_ratio() <= 4.0,
        "transposed work ratio {} > 4: {r:?}",
        r.transpose_work_ratio()
    );
    eprintln!(
        "{name}: work f={} fwd={} lin={} lin_t={} (lin_t/f = {:.2}, (fwd+lin_t)/f = {:.2}); size f={} lin_t={} ({:.2})",
        r.ops[0],
        r.ops[1],
        r.ops[2],
        r.ops[3],
        r.transpose_work_ratio(),
        r.vjp_work_ratio(),
        r.sizes[0],
        r.sizes[1],
        r.transpose_size_ratio()
    );
    let mut out = String::new();
    for n in [&d.names.fwd, &d.names.lin, &d.names.lin_t] {
        out.push_str(&func_to_string(d.program.func(n).unwrap()));
        out.push('\n');
    }
    out
}

fn vec_val(xs: &[f64]) -> Value {
    Value::f64s(&[xs.len()], xs.to_vec())
}

#[test]
fn snap_x_times_y_plus_sin_x() {
    let p0 = Program::default();
    let mut b = FuncBuilder::new(&p0, "f");
    let x = b.param("x", Ty::F64);
    let y = b.param("y", Ty::F64);
    let xy = b.prim(Prim::Mul, &[x.into(), y.into()]);
    let s = b.prim(Prim::Sin, &[x.into()]);
    let r = b.prim(Prim::Add, &[xy.into(), s.into()]);
    let out = derive(
        b.finish(vec![r.into()], vec![]),
        &[Value::F64(0.4), Value::F64(1.7)],
    );
    insta::assert_snapshot!(out);
}

#[test]
fn snap_power_by_loop() {
    let p0 = Program::default();
    let mut b = FuncBuilder::new(&p0, "pow");
    let x = b.param("x", Ty::F64);
    let n = b.param("n", Ty::I64);
    let (st, _) = b.loop_(n.into(), false, &[Atom::F64(1.0)], |b, _i, s| {
        (
            vec![b.prim(Prim::Mul, &[s[0].into(), x.into()]).into()],
            vec![],
        )
    });
    let out = derive(
        b.finish(vec![st[0].into()], vec![]),
        &[Value::F64(1.3), Value::I64(4)],
    );
    insta::assert_snapshot!(out);
}

#[test]
fn snap_dot_by_build_and_sum() {
    let p0 = Program::default();
    let mut b = FuncBuilder::new(&p0, "dot");
    let u = b.param("u", Ty::f64s(1));
    let v = b.param("v", Ty::f64s(1));
    let n = b.shape(u.into(), 0);
    let prod = b.build(&[n.into()], |b, i| {
        let a = b.index(u.into(), &[i[0].into()]);
        let c = b.index(v.into(), &[i[0].into()]);
        vec![b.prim(Prim::Mul, &[a.into(), c.into()]).into()]
    })[0];
    let s = sum(&mut b, prod);
    let out = derive(
        b.finish(vec![s.into()], vec![]),
        &[vec_val(&[0.5, -1.0, 2.0]), vec_val(&[1.5, 0.5, -0.75])],
    );
    insta::assert_snapshot!(out);
}

#[test]
fn snap_matvec_by_matmul() {
    let p0 = Program::default();
    let mut b = FuncBuilder::new(&p0, "matvec");
    let a = b.param("a", Ty::f64s(2));
    let x = b.param("x", Ty::f64s(1));
    let y = b.array(ArrayOp::MatMul {
        a: a.into(),
        b: x.into(),
    });
    let a0 = Value::f64s(&[2, 3], vec![0.1, 0.2, -0.3, 0.4, -0.5, 0.6]);
    let out = derive(
        b.finish(vec![y.into()], vec![]),
        &[a0, vec_val(&[1.0, -2.0, 0.5])],
    );
    insta::assert_snapshot!(out);
}

#[test]
fn snap_logsumexp_with_max() {
    let p0 = Program::default();
    let mut b = FuncBuilder::new(&p0, "logsumexp");
    let v = b.param("v", Ty::f64s(1));
    let m = b.array(ArrayOp::Reduce {
        op: ReduceOp::Max,
        arr: v.into(),
        axis: None,
    });
    let e = b.map(&[v.into()], |b, x| {
        let d = b.prim(Prim::Sub, &[x[0].into(), m.into()]);
        vec![b.prim(Prim::Exp, &[d.into()]).into()]
    })[0];
    let s = sum(&mut b, e);
    let l = b.prim(Prim::Ln, &[s.into()]);
    let r = b.prim(Prim::Add, &[m.into(), l.into()]);
    let out = derive(
        b.finish(vec![r.into()], vec![]),
        &[vec_val(&[0.3, 2.1, -0.7, 1.2])],
    );
    insta::assert_snapshot!(out);
}

#[test]
fn snap_softmax_cross_entropy() {
    // loss(z, t) = -sum(t * log_softmax(z)), log_softmax(z) = z - logsumexp(z)
    let p0 = Program::default();
    let mut b = FuncBuilder::new(&p0, "xent");
    let z = b.param("z", Ty::f64s(1));
    let t = b.param("t", Ty::f64s(1));
    let m = b.array(ArrayOp::Reduce {
        op: ReduceOp::Max,
        arr: z.into(),
        axis: None,
    });
    let e = b.map(&[z.into()], |b, x| {
        let d = b.prim(Prim::Sub, &[x[0].into(), m.into()]);
        vec![b.prim(Prim::Exp, &[d.into()]).into()]
    })[0];
    let s = sum(&mut b, e);
    let l = b.prim(Prim::Ln, &[s.into()]);
    let lse = b.prim(Prim::Add, &[m.into(), l.into()]);
    let tl = b.map(&[z.into(), t.into()], |b, x| {
        let ls = b.prim(Prim::Sub, &[x[0].into(), lse.into()]);
        vec![b.prim(Prim::Mul, &[x[1].into(), ls.into()]).into()]
    })[0];
    let st = sum(&mut b, tl);
    let loss = b.prim(Prim::Neg, &[st.into()]);
    let out = derive(
        b.finish(vec![loss.into()], vec![]),
        &[
            vec_val(&[0.3, 2.1, -0.7, 1.2]),
            vec_val(&[0.1, 0.6, 0.1, 0.2]),
        ],
    );
    insta::assert_snapshot!(out);
}

#[test]
fn snap_sum_of_squares_reverse_allocates_no_zeros_or_one_hots() {
    let p0 = Program::default();
    let mut b = FuncBuilder::new(&p0, "sumsq");
    let v = b.param("v", Ty::f64s(1));
    let sq = b.map(&[v.into()], |b, x| {
        vec![b.prim(Prim::Mul, &[x[0].into(), x[0].into()]).into()]
    })[0];
    let s = sum(&mut b, sq);
    let out = derive(
        b.finish(vec![s.into()], vec![]),
        &[vec_val(&[0.5, -1.5, 2.0])],
    );
    let lin_t = out
        .split("def sumsq__lin_t")
        .nth(1)
        .expect("transpose printed");
    assert!(
        !lin_t.contains("lzero"),
        "reverse program materialises a zero:\n{lin_t}"
    );
    assert!(
        !lin_t.contains("lupdate") && !lin_t.contains("lscatter"),
        "reverse program builds a one-hot:\n{lin_t}"
    );
    insta::assert_snapshot!(out);
}
