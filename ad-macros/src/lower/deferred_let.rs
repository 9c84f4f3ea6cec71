//! `let x;` declared before its value, which later statements assign (once
//! on every path, as Rust's definite-initialisation check demands of `f`):
//! a mutable variable starting from a zero of its type.
//!
//! ```text
//! let y;                              let mut y: f64 = 0.0f64;
//! if x > 0.0 {                        if x > 0.0 {
//!     y = x * 2.0;           ==>          y = x * 2.0;
//! } else {                            } else {
//!     y = -x;                             y = -x;
//! }                                   }
//! y * y                               y * y
//! ```
//!
//! rustc compiles `f` as written, so no path reads `y` before a statement
//! assigns it: the zero is never read, and the value and derivatives of
//! `y` are those of the assignment that ran. The type comes from the
//! `let`'s annotation (`let y: f64;`) or from the syntax of the values
//! assigned to it (`syntax_ty.rs`: a variable, a literal, arithmetic, a
//! cast, an `f64` method, a tuple of these). A tuple of names (`let (p,
//! q);`) is a deferred `let` of each. Arrays are refused (a zero array
//! would need the value's shape), as are other patterns.

use super::ctx::Lowerer;
use super::errors;
use super::syntax_ty::{body_lets, zero_of};
use super::types::classify;
use super::val::Val;
use syn::visit::Visit;

impl Lowerer<'_> {
    /// `l`, a `let` without a value, followed in its block by `rest`: one
    /// name, or a tuple of names (`let (p, q);`, each assigned on its own).
    pub(super) fn deferred_let(&mut self, l: &syn::Local, rest: &[syn::Stmt]) {
        let (pat, annot) = match &l.pat {
            syn::Pat::Type(pt) => (&*pt.pat, Some(&*pt.ty)),
            p => (p, None),
        };
        let plain = |p: &syn::Pat| match p {
            syn::Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => Some(pi.clone()),
            _ => None,
        };
        let names: Option<Vec<(syn::PatIdent, Option<&syn::Type>)>> = match (pat, annot) {
            (syn::Pat::Tuple(t), None) => t.elems.iter().map(|p| Some((plain(p)?, None))).collect(),
            (syn::Pat::Tuple(t), Some(syn::Type::Tuple(tt))) if tt.elems.len() == t.elems.len() => {
                t.elems
                    .iter()
                    .zip(&tt.elems)
                    .map(|(p, ty)| Some((plain(p)?, Some(ty))))
                    .collect()
            }
            (p, a) => plain(p).map(|pi| vec![(pi, a)]),
        };
        let Some(names) = names else {
            let _: Option<()> = self.fail(l, errors::LET_NO_INIT);
            // Mutable, so that the assignments to come add no errors.
            for name in crate::struct_results::pattern_idents(pat) {
                self.env.declare(&name, Val::Poison, true);
            }
            return;
        };
        for (pi, annot) in names {
            self.deferred_name(&pi, annot, l, rest);
        }
    }

    /// One name `pi` (typed `annot`) of the `let` `l` without a value.
    fn deferred_name(
        &mut self,
        pi: &syn::PatIdent,
        annot: Option<&syn::Type>,
        l: &syn::Local,
        rest: &[syn::Stmt],
    ) {
        let name = pi.ident.to_string();
        let values = assigned_values(&name, rest);
        let ty = match annot {
            Some(t) => match classify(t) {
                Ok(d) => Some(d.rty()),
                Err(e) => {
                    self.errors.push(e);
                    self.env.declare(&name, Val::Poison, true);
                    return;
                }
            },
            None => {
                let lets = body_lets(rest);
                values.iter().find_map(|v| self.syntax_ty(v, &lets, 0))
            }
        };
        let val = match ty {
            // Never assigned: rustc refuses every read of it in `f`.
            None if values.is_empty() => Val::Poison,
            None => self
                .fail::<Val>(&values[0], errors::LET_DEFERRED_TYPE)
                .unwrap_or(Val::Poison),
            Some(ty) => match zero_of(&ty, pi.ident.span()) {
                Some(zero) => {
                    let v = self.expr(&zero).unwrap_or(Val::Poison);
                    match annot {
                        Some(t) => self.annotate(t, v, l),
                        None => v,
                    }
                }
                None => self
                    .fail::<Val>(l, errors::LET_DEFERRED_ARRAY)
                    .unwrap_or(Val::Poison),
            },
        };
        self.env.declare(&name, val, true);
    }
}

/// The values assigned to the variable `name` (`name = e`) in `stmts`, in
/// order, outside closures.
fn assigned_values(name: &str, stmts: &[syn::Stmt]) -> Vec<syn::Expr> {
    struct V<'n> {
        name: &'n str,
        values: Vec<syn::Expr>,
    }
    impl<'a> Visit<'a> for V<'_> {
        fn visit_expr_assign(&mut self, a: &'a syn::ExprAssign) {
            if let syn::Expr::Path(p) = super::expr::strip(&a.left) {
                if p.path.is_ident(self.name) {
                    self.values.push((*a.right).clone());
                }
            }
            syn::visit::visit_expr_assign(self, a);
        }
        fn visit_expr_closure(&mut self, _: &'a syn::ExprClosure) {}
    }
    let mut v = V {
        name,
        values: vec![],
    };
    for s in stmts {
        v.visit_stmt(s);
    }
    v.values
}
