//! Calls: of externs (other `#[differentiable]` functions through their
//! hidden building blocks, plain functions as written) and of the program's
//! own functions (emitted as nested functions, see `wrappers.rs`).
//!
//! The canonical calling convention (hidden building blocks and nested
//! functions): scalars by value, arrays as views, tuples by value;
//! non-linear arguments, then linear ones; the results flat (non-linear then
//! linear): one value, or a tuple.

use super::func::{Emitter, Out, R};
use super::names;
use super::types::{flat, owned_repr, Repr};
use crate::names::{hidden, hidden_wrt, Block as Hidden};
use crate::sig::Callee;
use crate::text::{text, Code};
use ad_core_ir::driver::{restricted_name, Names};
use ad_core_ir::ir::{Atom, Call, Stmt, Var};
use ad_core_ir::types::{Scalar, Ty};

/// Which function of an extern a call name denotes, and whether it is one
/// of its derivatives with respect to its `wrt` parameters alone (`g__w__jvp`
/// is `__linadw_g_jvp`; `g__w` is `g` itself).
pub fn resolve<'c>(callees: &'c [Callee], func: &str) -> Option<(&'c Callee, Hidden, bool)> {
    callees.iter().find_map(|c| {
        if func == c.ir_name {
            return Some((c, Hidden::Primal, false));
        }
        if let Some(b) = derived_block(&Names::of(&c.ir_name), func) {
            return Some((c, b, false));
        }
        let w = restricted_name(&c.ir_name);
        match c.wrt {
            Some(_) if func == w => Some((c, Hidden::Primal, false)),
            Some(_) => derived_block(&Names::of(&w), func).map(|b| (c, b, true)),
            None => None,
        }
    })
}

/// The building block that the derived IR name `func` of an extern with
/// the derived names `n` denotes.
fn derived_block(n: &Names, func: &str) -> Option<Hidden> {
    [
        (&n.jvp, Hidden::Jvp),
        (&n.lin, Hidden::Lin),
        (&n.lin_t, Hidden::LinT),
        (&n.linear, Hidden::Linear),
        (&n.linear_t, Hidden::LinearT),
        (&n.fwdres, Hidden::FwdRes),
        (&n.linres, Hidden::LinRes),
        (&n.linres_t, Hidden::LinResT),
    ]
    .into_iter()
    .find(|(name, _)| *name == func)
    .map(|(_, b)| b)
}

/// `path::to::__linad_g_<block>` (`__linadw_g_<block>` when `restricted`:
/// the derivatives with respect to `g`'s `wrt` parameters alone).
pub fn hidden_path(path: &syn::Path, b: Hidden, restricted: bool) -> syn::Path {
    let mut p = path.clone();
    if let Some(last) = p.segments.last_mut() {
        last.ident = if restricted {
            hidden_wrt(&last.ident, b)
        } else {
            hidden(&last.ident, b)
        };
        last.arguments = syn::PathArguments::None;
    }
    p
}

/// Whether a Rust type is a primitive integer type.
pub fn is_int_type(t: &syn::Type) -> bool {
    const INTS: [&str; 12] = [
        "usize", "isize", "u8", "u16", "u32", "u64", "u128", "i8", "i16", "i32", "i64", "i128",
    ];
    match t {
        syn::Type::Path(p) if p.qself.is_none() => p
            .path
            .segments
            .last()
            .is_some_and(|s| INTS.iter().any(|i| s.ident == i)),
        syn::Type::Paren(p) => is_int_type(&p.elem),
        syn::Type::Group(g) => is_int_type(&g.elem),
        _ => false,
    }
}

impl Emitter<'_> {
    /// A non-linear argument with the canonical convention.
    fn canon_arg(&self, a: &Atom, site: usize) -> Code {
        match a {
            Atom::Var(v) if matches!(self.ty(*v), Ty::Array { .. }) => self.var_view(*v),
            // A callee's kept residuals, by reference.
            Atom::Var(v) if matches!(self.ty(*v), Ty::Opaque(_)) => {
                let n = self.name(*v);
                match self.repr(*v) {
                    Repr::View => text!(#n),
                    Repr::Owned | Repr::Val => text!(&#n),
                }
            }
            _ => self.own(a, site),
        }
    }

    /// A linear argument with the canonical convention.
    fn canon_lin_arg(&self, v: Var, site: usize) -> Code {
        match self.ty(v) {
            Ty::Array { .. } => self.var_view(v),
            _ => self.own_lin(v, site),
        }
    }

    /// `let (r.. ; lr..) = f(args ; lin_args)`.
    pub fn call(&mut self, c: &Call, s: &Stmt, site: usize) -> R<Out> {
        let reprs: Vec<Repr> = s
            .binds
            .iter()
            .chain(&s.lin_binds)
            .map(|v| owned_repr(self.ty(*v)))
            .collect();
        if !self.cx.prog.is_extern(&c.func) {
            if self.cx.prog.func(&c.func).is_none() {
                return Err(format!("call of unknown function `{}`", c.func));
            }
            {
                let mut internal = self.cx.internal.borrow_mut();
                if !internal.contains(&c.func) {
                    internal.push(c.func.clone());
                }
            }
            let f = names::internal_fn(&c.func);
            let args = self.canonical_args(c, site);
            return Ok(Out {
                expr: text!(#f(#(#args),*)),
                reprs,
            });
        }
        let Some((callee, block, restricted)) = resolve(self.cx.callees, &c.func) else {
            return Err(format!("call of the undeclared extern `{}`", c.func));
        };
        if callee.differentiable {
            let p = hidden_path(&callee.path, block, restricted);
            let args = self.canonical_args(c, site);
            return Ok(Out {
                expr: text!(#p(#(#args),*)),
                reprs,
            });
        }
        if block != Hidden::Primal || !c.lin_args.is_empty() {
            return Err(format!(
                "`{}` is not differentiable but its derivative is called",
                c.func
            ));
        }
        // A plain function: arguments as the Rust function takes them.
        let args: Vec<Code> = c
            .args
            .iter()
            .map(|a| match self.atom_ty(a) {
                Ty::Scalar(Scalar::I64) => {
                    let x = self.scalar(a);
                    text!(::core::convert::TryInto::try_into(#x).expect("linad: integer argument out of range"))
                }
                // As the function takes it (`&Array`, a view, a slice, a
                // `Vec`, `[f64; N]`: `ad_runtime::plain_arg`), from an owned
                // array in standard layout.
                Ty::Array { .. } => {
                    let v = a.var().expect("an array is a variable");
                    let n = self.name(v);
                    let rt = super::types::rt();
                    match self.repr(v) {
                        Repr::View => text!(#rt::plain_arg(&#n.as_standard_layout().into_owned())),
                        _ => text!(#rt::plain_arg(&*#rt::in_standard_layout(&#n))),
                    }
                }
                _ => self.own(a, site),
            })
            .collect();
        let p = &callee.path;
        let call = if callee.constant {
            text!(#p)
        } else {
            text!(#p(#(#args),*))
        };
        let n = s.binds.len();
        let conv = |k: usize, x: Code| -> Code {
            let int = callee.result_tys.get(k).is_some_and(is_int_type);
            if int {
                text!(#x as i64)
            } else {
                x
            }
        };
        let expr = if n == 1 {
            conv(0, call)
        } else {
            let ts: Vec<_> = (0..n).map(|_| self.fresh("c")).collect();
            let tp: Vec<Code> = ts.iter().map(|t| text!(#t)).collect();
            let conv_parts: Vec<Code> = tp
                .iter()
                .enumerate()
                .map(|(k, t)| conv(k, t.clone()))
                .collect();
            let (pat, r) = (flat(&tp), flat(&conv_parts));
            text!({ let #pat = #call; #r })
        };
        Ok(Out { expr, reprs })
    }

    fn canonical_args(&self, c: &Call, site: usize) -> Vec<Code> {
        c.args
            .iter()
            .map(|a| self.canon_arg(a, site))
            .chain(c.lin_args.iter().map(|v| self.canon_lin_arg(*v, site)))
            .collect()
    }
}
