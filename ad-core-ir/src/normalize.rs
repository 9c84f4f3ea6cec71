//! Normalisations run before differentiation.
//!
//! [`lower_folds`]: `fold(init, |acc.., x| body, arr)` =
//! `loop shape(arr, 0) (acc = init) |i| { let x = arr[i]; body }`. JVP, unzip and
//! transpose then only know counted loops.

use crate::ir::*;
use crate::types::Ty;
use crate::visit::blocks_mut;

/// Returns `f` with every fold (at any depth) lowered to a counted loop.
pub fn lower_folds(f: &Func) -> Func {
    let mut f = f.clone();
    let mut body = std::mem::take(&mut f.body);
    lower_block(&mut f.vars, &mut body);
    f.body = body;
    f
}

fn lower_block(vars: &mut VarTable, b: &mut Block) {
    let stmts = std::mem::take(&mut b.stmts);
    for mut s in stmts {
        for blk in blocks_mut(&mut s.expr) {
            lower_block(vars, blk);
        }
        if let Expr::Fold(fd) = &s.expr {
            let n = vars.fresh("n", Ty::I64, false);
            b.stmts.push(Stmt {
                binds: vec![n],
                lin_binds: vec![],
                expr: Expr::Array(ArrayOp::Shape {
                    arr: fd.arr,
                    axis: 0,
                }),
                src: s.src,
            });
            let k = fd.init.len();
            let i = vars.fresh("i", Ty::I64, false);
            let x = fd.body.params[k];
            let mut body = fd.body.body.clone();
            body.stmts.insert(
                0,
                Stmt {
                    binds: vec![x],
                    lin_binds: vec![],
                    expr: Expr::Array(ArrayOp::Index {
                        arr: fd.arr,
                        idx: vec![Atom::Var(i)],
                    }),
                    src: s.src,
                },
            );
            let mut params = vec![i];
            params.extend_from_slice(&fd.body.params[..k]);
            s.expr = Expr::Loop(Loop {
                n: Atom::Var(n),
                rev: false,
                init: fd.init.clone(),
                lin_init: vec![],
                body: Lambda {
                    params,
                    lin_params: vec![],
                    body,
                },
            });
        }
        b.stmts.push(s);
    }
}
