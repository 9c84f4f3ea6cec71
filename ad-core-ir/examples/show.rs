//! Prints every derived function of a small example: `x*y + sin x` by
//! default, or `dot` (build + sum), `pow` (a loop), `sumsq` (map + sum):
//! `cargo run -p ad-core-ir --example show [dot|pow|sumsq]`.
use ad_core_ir::build::FuncBuilder;
use ad_core_ir::driver::{differentiate, Options};
use ad_core_ir::ir::*;
use ad_core_ir::pretty::func_to_string;
use ad_core_ir::types::Ty;

fn main() {
    let which = std::env::args().nth(1).unwrap_or_default();
    let p0 = Program::default();
    let mut b = FuncBuilder::new(&p0, "f");
    let f = match which.as_str() {
        "sumsq" => {
            let v = b.param("v", Ty::f64s(1));
            let m = b.map(&[v.into()], |b, x| {
                vec![b.prim(Prim::Mul, &[x[0].into(), x[0].into()]).into()]
            })[0];
            let s = b.array(ArrayOp::Reduce {
                op: ReduceOp::Sum,
                arr: m.into(),
                axis: None,
            });
            b.finish(vec![s.into()], vec![])
        }
        "dot" => {
            let u = b.param("u", Ty::f64s(1));
            let v = b.param("v", Ty::f64s(1));
            let n = b.shape(u.into(), 0);
            let prod = b.build(&[n.into()], |b, i| {
                let a = b.index(u.into(), &[i[0].into()]);
                let c = b.index(v.into(), &[i[0].into()]);
                vec![b.prim(Prim::Mul, &[a.into(), c.into()]).into()]
            })[0];
            let s = b.array(ArrayOp::Reduce {
                op: ReduceOp::Sum,
                arr: prod.into(),
                axis: None,
            });
            b.finish(vec![s.into()], vec![])
        }
        "pow" => {
            let x = b.param("x", Ty::F64);
            let n = b.param("n", Ty::I64);
            let (st, _) = b.loop_(n.into(), false, &[Atom::F64(1.0)], |b, _i, s| {
                (
                    vec![b.prim(Prim::Mul, &[s[0].into(), x.into()]).into()],
                    vec![],
                )
            });
            b.finish(vec![st[0].into()], vec![])
        }
        _ => {
            let x = b.param("x", Ty::F64);
            let y = b.param("y", Ty::F64);
            let xy = b.prim(Prim::Mul, &[x.into(), y.into()]);
            let s = b.prim(Prim::Sin, &[x.into()]);
            let r = b.prim(Prim::Add, &[xy.into(), s.into()]);
            b.finish(vec![r.into()], vec![])
        }
    };
    let mut p = Program::default();
    p.insert(f);
    let wrt = vec![true; p.funcs[0].params.len()];
    let d = differentiate(&p, "f", &wrt, &Options::default()).expect("differentiable");
    for name in [&d.names.jvp, &d.names.fwd, &d.names.lin, &d.names.lin_t] {
        println!("{}", func_to_string(d.program.func(name).unwrap()));
    }
}
