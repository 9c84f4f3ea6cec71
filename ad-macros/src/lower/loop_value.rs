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
use super::expr::strip;
use super::types::{classify, Elem, IntTy, RTy};
use super::val::Val;
use proc_macro2::Span;
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
                let lets = body_lets(&l.body);
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

    /// The type of `e` as its syntax shows it, `None` where it does not
    /// (`lets`: the body's `let`s, for the names bound in the loop).
    fn syntax_ty(&self, e: &syn::Expr, lets: &[(String, Local)], depth: usize) -> Option<RTy> {
        if depth > 16 {
            return None;
        }
        let rec = |e: &syn::Expr| self.syntax_ty(e, lets, depth + 1);
        match strip(e) {
            syn::Expr::Lit(l) => match &l.lit {
                syn::Lit::Float(_) => Some(RTy::Scalar(Elem::F64)),
                syn::Lit::Int(i) => Some(RTy::Scalar(Elem::Int(
                    IntTy::from_name(i.suffix()).unwrap_or(IntTy::Lit),
                ))),
                syn::Lit::Bool(_) => Some(RTy::Scalar(Elem::Bool)),
                _ => None,
            },
            syn::Expr::Path(p) => {
                let id = p.path.get_ident()?.to_string();
                // A `let` of the body first; where its initialiser does not
                // show a type, the name bound before the loop (a wrong
                // guess is a type error at the `break`, never a value).
                let local = lets.iter().rev().find(|(n, _)| *n == id);
                if let Some(t) = local.and_then(|(_, local)| match local {
                    Local::Typed(t) => classify(t).ok().map(|d| d.rty()),
                    Local::Init(init) => rec(init),
                }) {
                    return Some(t);
                }
                let ty = self.env.get(self.env.lookup(&id)?).val.ty();
                (ty != RTy::Error).then_some(ty)
            }
            syn::Expr::Unary(u) => rec(&u.expr),
            syn::Expr::Binary(b) => {
                use syn::BinOp as B;
                match b.op {
                    B::Add(_) | B::Sub(_) | B::Mul(_) | B::Div(_) | B::Rem(_) => {
                        let (l, r) = (rec(&b.left), rec(&b.right));
                        let f = RTy::Scalar(Elem::F64);
                        if l.as_ref() == Some(&f) || r.as_ref() == Some(&f) {
                            Some(f)
                        } else {
                            l.or(r)
                        }
                    }
                    B::Eq(_) | B::Ne(_) | B::Lt(_) | B::Le(_) | B::Gt(_) | B::Ge(_) => {
                        Some(RTy::Scalar(Elem::Bool))
                    }
                    B::And(_) | B::Or(_) => Some(RTy::Scalar(Elem::Bool)),
                    _ => None,
                }
            }
            syn::Expr::Cast(c) => match &*c.ty {
                syn::Type::Path(p) => {
                    Elem::from_name(&p.path.get_ident()?.to_string()).map(RTy::Scalar)
                }
                _ => None,
            },
            syn::Expr::Tuple(t) => t
                .elems
                .iter()
                .map(rec)
                .collect::<Option<Vec<_>>>()
                .map(RTy::Tuple),
            syn::Expr::Field(f) => match (rec(&f.base)?, &f.member) {
                (RTy::Tuple(ts), syn::Member::Unnamed(i)) => ts.get(i.index as usize).cloned(),
                _ => None,
            },
            syn::Expr::Index(i) => match rec(&i.expr)? {
                RTy::Array(elem, _) => Some(RTy::Scalar(elem)),
                _ => None,
            },
            syn::Expr::MethodCall(m) if F64_METHODS.contains(&m.method.to_string().as_str()) => {
                (rec(&m.receiver)? == RTy::Scalar(Elem::F64)).then_some(RTy::Scalar(Elem::F64))
            }
            syn::Expr::If(i) => match i.then_branch.stmts.last() {
                Some(syn::Stmt::Expr(e, None)) => rec(e),
                _ => None,
            },
            syn::Expr::Block(b) => match b.block.stmts.last() {
                Some(syn::Stmt::Expr(e, None)) => rec(e),
                _ => None,
            },
            _ => None,
        }
    }
}

/// `f64` methods returning `f64`.
const F64_METHODS: &[&str] = &[
    "abs", "sqrt", "exp", "ln", "sin", "cos", "tan", "tanh", "sinh", "cosh", "atan", "asin",
    "acos", "powi", "powf", "max", "min", "mul_add", "signum", "floor", "ceil", "round", "trunc",
    "fract", "recip", "hypot", "atan2", "exp_m1", "ln_1p", "log10", "log2", "log", "cbrt", "clamp",
    "exp2", "copysign",
];

/// How a `let` in the loop body gives its name a type.
enum Local {
    /// `let x: T = ..`
    Typed(syn::Type),
    /// `let x = init`
    Init(syn::Expr),
}

/// The `let`s binding a name in `b` (its blocks and `if`s, not closures),
/// in order.
fn body_lets(b: &syn::Block) -> Vec<(String, Local)> {
    struct V(Vec<(String, Local)>);
    impl<'a> syn::visit::Visit<'a> for V {
        fn visit_local(&mut self, l: &'a syn::Local) {
            let (pat, ty) = match &l.pat {
                syn::Pat::Type(pt) => (&*pt.pat, Some(&*pt.ty)),
                p => (p, None),
            };
            if let syn::Pat::Ident(pi) = pat {
                let local = match (ty, &l.init) {
                    (Some(t), _) => Some(Local::Typed(t.clone())),
                    (None, Some(init)) => Some(Local::Init((*init.expr).clone())),
                    (None, None) => None,
                };
                if let Some(local) = local {
                    self.0.push((pi.ident.to_string(), local));
                }
            }
            syn::visit::visit_local(self, l);
        }
        fn visit_expr_closure(&mut self, _: &'a syn::ExprClosure) {}
    }
    let mut v = V(vec![]);
    syn::visit::Visit::visit_block(&mut v, b);
    v.0
}

/// A zero of `ty` as an expression (`None` for arrays).
fn zero_of(ty: &RTy, span: Span) -> Option<syn::Expr> {
    Some(match ty {
        RTy::Scalar(Elem::F64) => syn::parse_quote_spanned!(span=> 0.0f64),
        RTy::Scalar(Elem::Bool) => syn::parse_quote_spanned!(span=> false),
        RTy::Scalar(Elem::Int(IntTy::Lit)) => syn::parse_quote_spanned!(span=> 0),
        RTy::Scalar(Elem::Int(t)) => {
            let t = syn::Ident::new(t.name(), span);
            syn::parse_quote_spanned!(span=> (0 as #t))
        }
        RTy::Tuple(ts) => {
            let zs = ts
                .iter()
                .map(|t| zero_of(t, span))
                .collect::<Option<Vec<_>>>()?;
            syn::parse_quote_spanned!(span=> (#(#zs,)*))
        }
        _ => return None,
    })
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
