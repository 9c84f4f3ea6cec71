//! The iterator reductions that return `Option<Item>` — `reduce`, `max_by`,
//! `min_by` (and `max`/`min` of integers) — where `.unwrap()` or
//! `.expect(..)` takes their value, as std computes them:
//!
//! ```text
//! x.iter().max_by(|a, b| a.partial_cmp(b).unwrap()).unwrap()
//!   ==>  n = len (a panic when 0); acc = item(0);
//!        loop k in 0..n-1 { x = item(k + 1);
//!                           acc = if key(acc) > key(x) { acc } else { x } }
//! ```
//!
//! `Iterator::max_by` is `reduce(|v1, v2| cmp::max_by(v1, v2, compare))`,
//! which keeps `v1` only when `compare(&v1, &v2)` is `Greater` (so the last
//! of equal maxima wins); `min_by` keeps `v2` only then (the first of equal
//! minima). The comparator is read as two keys and an order:
//! `|a, b| KA.partial_cmp(KB).unwrap()` (NaN keys panic, as `unwrap` does),
//! `|a, b| KA.total_cmp(KB)` (IEEE's total order: `-NaN < -inf < .. < -0 <
//! +0 < .. < +inf < +NaN`), `|a, b| KA.cmp(KB)` for integers, or
//! `f64::total_cmp` itself. Each accumulator leaf is then a `select` on the
//! comparison, so a derivative flows to the item chosen, as in `f`.

use super::ctx::{span_of, Lowerer};
use super::expr::strip;
use super::iter_val::IterVal;
use super::types::Elem;
use super::val::Val;
use ad_core_ir::ir::{Atom, Expr, Loop, Prim};
use ad_core_ir::types::Ty;
use quote::ToTokens;

/// The iterator methods returning `Option<Item>` that linad lowers where
/// `.unwrap()` / `.expect(..)` takes their value.
pub(super) const UNWRAPPED_REDUCTIONS: &[&str] = &["reduce", "max_by", "min_by", "max", "min"];

/// How a comparator orders its two keys.
#[derive(Clone, Copy, PartialEq)]
enum Order {
    /// `partial_cmp(..).unwrap()`: `>`, a panic on a NaN key.
    Partial,
    /// `f64::total_cmp`.
    Total,
    /// `Ord::cmp` of integers.
    Ord,
}

/// A comparator: the closure giving its two keys from `(acc, item)`
/// (`None`: the items themselves) and their order.
struct Comparator {
    keys: Option<syn::Expr>,
    order: Order,
}

const COMPARATORS: &str = "`|a, b| a.partial_cmp(b).unwrap()`, `|a, b| a.total_cmp(b)`, `|a, b| a.cmp(b)` (integers) or `f64::total_cmp`; the keys may be expressions of `a` and `b` (`|a, b| a.1.total_cmp(&b.1)`, `|a, b| a.abs().partial_cmp(&b.abs()).unwrap()`)";

impl Lowerer<'_> {
    /// `it.reduce(f)`, `it.max_by(cmp)`, `it.min_by(cmp)`, `it.max()`,
    /// `it.min()` whose `Option` an enclosing `.unwrap()` / `.expect(..)`
    /// takes (`unwrapped`): the first item, folded with the rest in order.
    pub(super) fn reduce_iter(
        &mut self,
        it: IterVal,
        m: &syn::ExprMethodCall,
        unwrapped: bool,
    ) -> Option<Val> {
        let name = m.method.to_string();
        if !unwrapped {
            return self.fail(
                &m.method,
                format!("`{name}` returns an `Option`: linad supports `.{name}(..).unwrap()` (or `.expect(..)`), which panics on an empty iterator as in `f`; to handle that case, test the length first"),
            );
        }
        if !it.filters.is_empty() {
            return self.fail(&m.method, format!("`filter` before `{name}` is not supported: `filter` is supported before `sum`, `product` and `count`; elsewhere use `if` inside a loop"));
        }
        let span = span_of(m);
        let combine = match name.as_str() {
            "reduce" => None,
            "max" | "min" => {
                self.nargs(m, 0)?;
                Some(Comparator {
                    keys: None,
                    order: Order::Ord,
                })
            }
            _ => {
                let args = self.nargs(m, 1)?;
                Some(self.comparator(args[0], &name)?)
            }
        };
        let keep_acc_when_greater = matches!(name.as_str(), "max_by" | "max");
        // `None` on an empty iterator: the panic of `unwrap`.
        let n = self.iter_len(&it, m)?;
        let n = self.nonzero_or_panic(n, span)?;
        let rest = self.sub_i64(n, Atom::I64(1), span)?;
        // The first item is at position 0, or n - 1 after `rev`; the loop
        // then walks positions 1..n (k + 1), or n-2..=0 (k, reversed).
        let first_pos = if it.rev { rest } else { Atom::I64(0) };
        let first = self.item_at(&it, first_pos, m)?;
        let first = self.apply_maps(&it, first, m)?;
        let Some(leaves) = first.leaves() else {
            return self.fail(
                m,
                format!(
                    "`{name}` is supported over numbers and tuples of numbers, found items of type `{}`",
                    first.ty()
                ),
            );
        };
        let tys: Vec<Ty> = leaves.iter().map(|a| self.b.atom_ty(a)).collect();
        if combine.is_some() && tys.iter().any(|t| !matches!(t, Ty::Scalar(_))) {
            return self.fail(m, format!("`{name}` is supported over numbers and tuples of numbers, found items of type `{}`", first.ty()));
        }
        let nacc = leaves.len();
        let mut ptys = vec![Ty::I64];
        ptys.extend(tys.iter().cloned());
        let rev = it.rev;
        let lam = self.lambda(&ptys, &["k", "acc"], |lw, ps| {
            let pos = if rev {
                Atom::Var(ps[0])
            } else {
                lw.add_i64(Atom::Var(ps[0]), Atom::I64(1), span)?
            };
            let item = lw.item_at(&it, pos, m)?;
            let item = lw.apply_maps(&it, item, m)?;
            let acc = first.rebuild(&mut ps[1..=nacc].iter().map(|v| Atom::Var(*v)));
            let next = match &combine {
                None => {
                    let r = lw.apply_closure(&m.args[0], vec![acc.clone(), item])?;
                    if r.is_poison() {
                        return None;
                    }
                    if acc.ty().unify(&r.ty()).is_none() {
                        return lw.fail(&m.args[0], format!("mismatched types: the closure of `reduce` returns `{}` for items of type `{}`", r.ty(), acc.ty()));
                    }
                    r
                }
                Some(cmp) => {
                    let gt = lw.compare_greater(cmp, acc.clone(), item.clone(), &m.args, m)?;
                    let (on_gt, otherwise) = if keep_acc_when_greater {
                        (&acc, &item)
                    } else {
                        (&item, &acc)
                    };
                    let (a, b) = (on_gt.leaves()?, otherwise.leaves()?);
                    let mut picked = vec![];
                    for (x, y) in a.into_iter().zip(b) {
                        picked.push(lw.prim(Prim::Select, &[gt, x, y], span)?);
                    }
                    acc.rebuild(&mut picked.into_iter())
                }
            };
            next.leaves()
        })?;
        let outs = self.emit(
            Expr::Loop(Loop {
                n: rest,
                rev,
                init: leaves,
                lin_init: vec![],
                body: lam,
            }),
            span,
        )?;
        Some(first.rebuild(&mut outs.into_iter().map(Atom::Var)))
    }

    /// Reads the comparator of `max_by` / `min_by` (see [`COMPARATORS`]).
    fn comparator(&mut self, c: &syn::Expr, name: &str) -> Option<Comparator> {
        let refuse = |lw: &mut Self| {
            lw.fail(
                c,
                format!("the comparator of `{name}` must be {COMPARATORS}"),
            )
        };
        match strip(c) {
            // `f64::total_cmp` (or a longer path ending so).
            syn::Expr::Path(p)
                if p.path
                    .segments
                    .iter()
                    .rev()
                    .map(|s| s.ident.to_string())
                    .take(2)
                    .eq(["total_cmp", "f64"]) =>
            {
                Some(Comparator {
                    keys: None,
                    order: Order::Total,
                })
            }
            syn::Expr::Closure(cl) if cl.inputs.len() == 2 => {
                let mut body = strip(&cl.body);
                if let syn::Expr::Block(b) = body {
                    if let [syn::Stmt::Expr(e, None)] = b.block.stmts.as_slice() {
                        body = strip(e);
                    }
                }
                let syn::Expr::MethodCall(call) = body else {
                    return refuse(self);
                };
                let (cmp, order) = match call.method.to_string().as_str() {
                    "unwrap" | "expect" => match strip(&call.receiver) {
                        syn::Expr::MethodCall(inner) if inner.method == "partial_cmp" => {
                            (inner, Order::Partial)
                        }
                        _ => return refuse(self),
                    },
                    "total_cmp" => (call, Order::Total),
                    "cmp" => (call, Order::Ord),
                    _ => return refuse(self),
                };
                let [kb] = cmp.args.iter().collect::<Vec<_>>()[..] else {
                    return refuse(self);
                };
                let ka = &cmp.receiver;
                let mut keys = cl.clone();
                keys.output = syn::ReturnType::Default;
                keys.body = Box::new(syn::parse_quote_spanned!(span_of(body)=> (#ka, #kb)));
                Some(Comparator {
                    keys: Some(syn::Expr::Closure(keys)),
                    order,
                })
            }
            _ => refuse(self),
        }
    }

    /// `compare(&acc, &item) == Greater`, a `bool` atom.
    fn compare_greater(
        &mut self,
        cmp: &Comparator,
        acc: Val,
        item: Val,
        args: &dyn ToTokens,
        m: &syn::ExprMethodCall,
    ) -> Option<Atom> {
        let span = span_of(m);
        let (ka, kb) = match &cmp.keys {
            None => (acc, item),
            Some(keys) => match self.apply_closure(keys, vec![acc, item])? {
                Val::Tuple(mut kv) if kv.len() == 2 => {
                    let kb = kv.pop()?;
                    (kv.pop()?, kb)
                }
                _ => return None,
            },
        };
        let (Val::Scalar(a, ea), Val::Scalar(b, eb)) = (&ka, &kb) else {
            return self.fail(
                args,
                format!(
                    "the keys of the comparator must be numbers, found `{}` and `{}`",
                    ka.ty(),
                    kb.ty()
                ),
            );
        };
        let (a, b) = (*a, *b);
        match (cmp.order, *ea, *eb) {
            (Order::Partial | Order::Total, Elem::F64, Elem::F64) => {}
            (Order::Partial | Order::Ord, Elem::Int(_), Elem::Int(_)) => {}
            (Order::Ord, ..) if cmp.keys.is_none() => {
                // `max()` / `min()`: rustc refuses them on `f64`, which is
                // not `Ord`.
                let (name, t) = (&m.method, ea.name());
                let fold = if name == "max" {
                    format!("{t}::NEG_INFINITY, {t}::max")
                } else {
                    format!("{t}::INFINITY, {t}::min")
                };
                return self.fail(
                    name,
                    format!("`{name}()` needs items that are `Ord`, and `{t}` is not: use `.fold({fold})` or `.{name}_by(|a, b| a.total_cmp(b))`"),
                );
            }
            (order, ..) => {
                let what = match order {
                    Order::Partial => "`partial_cmp` compares two `f64` or two integers",
                    Order::Total => "`total_cmp` compares two `f64`",
                    Order::Ord => {
                        "`cmp` compares two integers here (`f64` has no `cmp`: use `total_cmp`)"
                    }
                };
                return self.fail(
                    args,
                    format!("{what}, found `{}` and `{}`", ea.name(), eb.name()),
                );
            }
        }
        let gt = self.binop(&syn::parse_quote!(>), ka.clone(), kb.clone(), args)?;
        let Val::Scalar(gt, Elem::Bool) = gt else {
            return None;
        };
        match (cmp.order, *ea) {
            (Order::Ord, _) | (Order::Partial, Elem::Int(_)) => Some(gt),
            (Order::Partial, _) => {
                // `partial_cmp` is `None` for a NaN key: `unwrap` panics.
                let nan_a = self.prim(Prim::Ne, &[a, a], span)?;
                let nan_b = self.prim(Prim::Ne, &[b, b], span)?;
                let nan = self.prim(Prim::Or, &[nan_a, nan_b], span)?;
                let ok = self.prim(Prim::Not, &[nan], span)?;
                let one = self.panic_unless(ok, Atom::I64(1), span)?;
                let live = self.prim(Prim::Eq, &[one, Atom::I64(1)], span)?;
                self.prim(Prim::And, &[gt, live], span)
            }
            (Order::Total, _) => self.total_greater(a, b, gt, span),
        }
    }

    /// `a.total_cmp(&b) == Greater` from `gt = a > b`: besides `>`, `+0 >
    /// -0`, a positive NaN is above all but positive NaNs, a negative one
    /// below everything (two NaNs of one sign count as equal: their
    /// payloads, which order them in IEEE's total order, are not compared).
    fn total_greater(
        &mut self,
        a: Atom,
        b: Atom,
        gt: Atom,
        span: proc_macro2::Span,
    ) -> Option<Atom> {
        let neg = |lw: &mut Self, x: Atom| {
            let s = lw.prim(Prim::Copysign, &[Atom::F64(1.0), x], span)?;
            lw.prim(Prim::Lt, &[s, Atom::F64(0.0)], span)
        };
        let (neg_a, neg_b) = (neg(self, a)?, neg(self, b)?);
        let pos_a = self.prim(Prim::Not, &[neg_a], span)?;
        let nan_a = self.prim(Prim::Ne, &[a, a], span)?;
        let nan_b = self.prim(Prim::Ne, &[b, b], span)?;
        let not_nan_a = self.prim(Prim::Not, &[nan_a], span)?;
        // +0 against -0 (equal under `==`, ordered by the sign).
        let eq = self.prim(Prim::Eq, &[a, b], span)?;
        let zeros = self.prim(Prim::And, &[pos_a, neg_b], span)?;
        let zeros = self.prim(Prim::And, &[eq, zeros], span)?;
        // a = +NaN, b not +NaN.
        let pos_b = self.prim(Prim::Not, &[neg_b], span)?;
        let b_pos_nan = self.prim(Prim::And, &[nan_b, pos_b], span)?;
        let not_b_pos_nan = self.prim(Prim::Not, &[b_pos_nan], span)?;
        let a_pos_nan = self.prim(Prim::And, &[nan_a, pos_a], span)?;
        let a_top = self.prim(Prim::And, &[a_pos_nan, not_b_pos_nan], span)?;
        // b = -NaN, a a number.
        let b_neg_nan = self.prim(Prim::And, &[nan_b, neg_b], span)?;
        let b_bottom = self.prim(Prim::And, &[not_nan_a, b_neg_nan], span)?;
        let r = self.prim(Prim::Or, &[gt, zeros], span)?;
        let r = self.prim(Prim::Or, &[r, a_top], span)?;
        self.prim(Prim::Or, &[r, b_bottom], span)
    }
}
