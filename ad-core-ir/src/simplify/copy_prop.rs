//! Copy propagation: copies and tuple round trips disappear.

use super::engine::{Cx, Rule};
use crate::ir::*;

/// `let y = a; e[y] = e[a]` (a copy of a variable or literal is replaced by it).
pub fn copy_atom(s: &Stmt, cx: &mut Cx<'_>) -> Option<Vec<Stmt>> {
    let Expr::Atom(a) = &s.expr else {
        return None;
    };
    let [y] = s.binds.as_slice() else {
        return None;
    };
    cx.replace_nl(*y, *a);
    Some(vec![])
}

/// `let t = (a, b); let (c, d) = untuple t` gives `c = a`, `d = b`; the
/// linear version `luntuple(ltuple(x, y)) = (x, y)` (the tuple is killed).
pub fn untuple_tuple(s: &Stmt, cx: &mut Cx<'_>) -> Option<Vec<Stmt>> {
    match &s.expr {
        Expr::Untuple(t) => {
            let Some((Expr::Tuple(parts), 0)) = cx.def_atom(t) else {
                return None;
            };
            if parts.len() != s.binds.len() {
                return None;
            }
            let parts = parts.clone();
            for (y, a) in s.binds.iter().zip(parts) {
                cx.replace_nl(*y, a);
            }
            Some(vec![])
        }
        Expr::Lin(LinOp::Untuple(t)) => {
            let LinOp::Tuple(parts) = cx.lin_producer(*t)? else {
                return None;
            };
            if parts.len() != s.lin_binds.len() {
                return None;
            }
            cx.kill(*t);
            for (y, x) in s.lin_binds.iter().zip(parts) {
                cx.replace_lin(*y, x);
            }
            Some(vec![])
        }
        _ => None,
    }
}

/// All rules of this family, in the order the simplifier tries them.
pub const RULES: &[Rule] = &[
    Rule {
        name: "copy_atom",
        apply: copy_atom,
    },
    Rule {
        name: "untuple_tuple",
        apply: untuple_tuple,
    },
];
