//! `loop` as an expression: the value of `break v` held in a variable the
//! loop assigns, then read after it.
//!
//! ```text
//! let r = loop {                       let r = {
//!     let y1 = y - g(y) / dg(y);           let mut brv: f64 = 0.0;
//!     if (y1 - y).abs() < tol {            loop {
//!         break y1;            ==>             let y1 = y - g(y) / dg(y);
//!     }                                        if (y1 - y).abs() < tol { { brv = y1; break; } }
//!     y = y1;                                  y = y1;
//! };                                       }
//!                                          brv
//!                                      };
//! ```
//!
//! The breaks are those of the loop's own body (not of nested loops or
//! closures) and `break 'a v` to its label `'a` from any depth. Rust makes
//! every `break` of such a loop carry a value, and a `loop` ends only by a
//! `break`, so the initial value (a zero of the value's type) is never
//! read: the result, and its derivatives, are those of the value at the
//! `break` that ran. The variable needs a type before the loop is lowered:
//! the `let`'s annotation, or the type of a break's value seen from its
//! syntax (a variable bound before the loop or by a `let` in the body, a
//! literal, arithmetic, a cast, an `f64` method, a tuple of these).
//! Arrays are refused (a zero array would need the value's shape).

use super::ctx::Lowerer;
use super::errors;
use super::syntax_ty::{body_lets, zero_of};
use super::types::classify;
use super::val::Val;
use syn::visit_mut::VisitMut;

impl Lowerer<'_> {
    /// `l` lowered as the block of the module's rewrite when it has a
    /// `break` with a value; `None` when it has none (an ordinary loop).
    /// `annot` is the type written on the `let` it initialises.
    pub(super) fn loop_with_value(
        &mut self,
        l: &syn::ExprLoop,
        annot: Option<&syn::Type>,
    ) -> Option<Option<Val>> {
        let label = l.label.as_ref().map(|lb| lb.name.ident.to_string());
        let mut body = l.body.clone();
        let name = format!("__linad_brv_{}", self.env.len());
        let span = l.loop_token.span;
        let brv = syn::Ident::new(&name, span);
        let mut w = Valued {
            label,
            depth: 0,
            brv: brv.clone(),
            values: vec![],
        };
        w.visit_block_mut(&mut body);
        if w.values.is_empty() {
            return None;
        }
        let ty = match annot {
            Some(t) => match classify(t) {
                Ok(d) => Some(d.rty()),
                Err(e) => {
                    self.errors.push(e);
                    return Some(None);
                }
            },
            None => {
                let lets = body_lets(&l.body.stmts);
                w.values.iter().find_map(|v| self.syntax_ty(v, &lets, 0))
            }
        };
        let Some(ty) = ty else {
            return Some(self.fail(&w.values[0], errors::BREAK_VALUE_TYPE));
        };
        let Some(zero) = zero_of(&ty, span) else {
            return Some(self.fail(&w.values[0], errors::BREAK_VALUE_ARRAY));
        };
        let mut rebuilt = l.clone();
        rebuilt.body = body;
        let e: syn::Expr = syn::parse_quote_spanned!(span=> {
            let mut #brv = #zero;
            #rebuilt
            #brv
        });
        Some(self.expr(&e))
    }
}

/// Rewrites the valued breaks of a loop (its own, and those to its label
/// from any depth) as `{ brv = v; break; }`, collecting the values.
struct Valued {
    label: Option<String>,
    depth: usize,
    brv: syn::Ident,
    values: Vec<syn::Expr>,
}

impl VisitMut for Valued {
    fn visit_expr_mut(&mut self, e: &mut syn::Expr) {
        match e {
            syn::Expr::ForLoop(_) | syn::Expr::While(_) | syn::Expr::Loop(_) => {
                if let Some(b) = super::labels::loop_body(self, e) {
                    self.depth += 1;
                    self.visit_block_mut(b);
                    self.depth -= 1;
                }
            }
            syn::Expr::Closure(_) => {}
            syn::Expr::Break(k) if k.expr.is_some() => {
                let ours = match &k.label {
                    None => self.depth == 0,
                    Some(l) => self.label.as_deref() == Some(&l.ident.to_string()),
                };
                if !ours {
                    return;
                }
                let v = *k.expr.take().expect("checked");
                let (brv, span) = (&self.brv, k.break_token.span);
                let label = &k.label;
                *e = syn::parse_quote_spanned!(span=> { #brv = #v; break #label; });
                self.values.push(v);
            }
            _ => syn::visit_mut::visit_expr_mut(self, e),
        }
    }
}
