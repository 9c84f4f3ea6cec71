//! The type of a value as its syntax shows it, before it is lowered: what
//! a variable needs when it is declared before its first value (a `loop`'s
//! `break` value, a deferred `let x;`), and the zero it starts from.
//!
//! ```text
//! y1 (let y1 = y - g / dg)  ->  f64      (y, 1usize)  ->  (f64, usize)
//! x.len() as f64            ->  f64      xs[i]        ->  the element type
//! ```
//!
//! Where the syntax does not show the type (a call, a method of an array)
//! the answer is `None` and the caller asks for an annotation; a wrong guess
//! (a body `let` falling back to an outer name) is a type error where the
//! value is assigned, never a value.

use super::ctx::Lowerer;
use super::expr::strip;
use super::types::{classify, Elem, IntTy, RTy};
use proc_macro2::Span;

impl Lowerer<'_> {
    /// The type of `e` as its syntax shows it, `None` where it does not
    /// (`lets`: the body's `let`s, for the names bound in the loop).
    pub(super) fn syntax_ty(
        &self,
        e: &syn::Expr,
        lets: &[(String, Local)],
        depth: usize,
    ) -> Option<RTy> {
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
pub(super) enum Local {
    /// `let x: T = ..`
    Typed(syn::Type),
    /// `let x = init`
    Init(syn::Expr),
}

/// The `let`s binding a name in `stmts` (their blocks and `if`s, not
/// closures), in order.
pub(super) fn body_lets(stmts: &[syn::Stmt]) -> Vec<(String, Local)> {
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
    for s in stmts {
        syn::visit::Visit::visit_stmt(&mut v, s);
    }
    v.0
}

/// A zero of `ty` as an expression (`None` for arrays).
pub(super) fn zero_of(ty: &RTy, span: Span) -> Option<syn::Expr> {
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
