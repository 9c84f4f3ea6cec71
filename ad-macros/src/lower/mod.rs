//! The front end: restricted Rust (a `syn::ItemFn`) to IR.
//!
//! Every "unsupported" diagnostic of the macro lives here, as a `syn::Error`
//! spanned on the offending tokens; all errors of a function are returned
//! together. Statements carry `SrcId`s indexing [`Lowered::spans`].
//!
//! Files, one job each:
//! - `signature.rs` — parameter kinds, `wrt`, output type;
//! - `types.rs` — Rust-level types and the reading of written types;
//! - `val.rs` — lowered values (atoms, tuples of values, iterators);
//! - `env.rs` — scopes of local variables (SSA by rebinding);
//! - `ctx.rs` — the lowering context and its emit helpers;
//! - `expr.rs` — the expression dispatcher, literals, paths, fields;
//! - `ops.rs` — operators and casts; `stmt.rs` — `let`, assignments, body;
//! - `desugar.rs` — `match` to `if` chains, early returns to `else` branches;
//! - `loop_value.rs` — `loop` as an expression; `deferred_let.rs` — `let y;`
//!   assigned later; `syntax_ty.rs` — the type a value's syntax shows, and
//!   its zero, for both; `vec_push.rs` — a `Vec` grown by `push` in a
//!   `for` loop;
//! - `control.rs` — `if`, `for`, `&&`/`||`, loop-state discovery;
//! - `arrays.rs` — the `ndarray` API; `views.rs` — slices, reshapes and axis
//!   work as builds; `construct.rs` — `array!`, `from(vec![..])`,
//!   `concatenate`, `stack`; `iter.rs` — iterator chains; `visit_order.rs`
//!   — the memory order ndarray's `fold` and `Zip` visit elements in;
//! - `methods.rs` — `f64` and integer methods; `calls.rs` — calls by path
//!   (with `ad_core_ir::taint`: which callees are differentiated);
//! - `errors.rs` — the texts of the refusals.

mod arrays;
mod calls;
mod construct;
mod control;
mod ctx;
mod deferred_let;
mod desugar;
mod element_places;
mod env;
mod errors;
mod expr;
mod inplace;
mod iter;
mod iter_reduce;
mod iter_val;
mod labels;
mod loop_value;
mod methods;
mod ops;
mod signature;
mod stmt;
mod syntax_ty;
mod types;
mod val;
mod vec_push;
mod views;
mod visit_order;

pub use methods::is_f64_method;

#[cfg(test)]
pub(crate) mod testutil;

use crate::sig::{ParamKind, Signature};
use ad_core_ir::check::{check_program, Mode};
use ad_core_ir::ir::{Atom, Expr, Program};
use ctx::{span_of, Lowerer};
use types::{classify, Elem, TyDesc};
use val::Val;

pub use crate::sig::{Callee, Lowered};

/// Declares the blocks keeping the residuals of the callee `c` (and of its
/// derivatives with respect to its `wrt` parameters alone, if it has them):
/// `g__fwdres` / `g__linres` / `g__linres_t`, whose residuals are the Rust
/// type `path::__linad_g_res` (`__linadw_g_res`).
fn declare_kept_residuals(
    program: &mut Program,
    c: &Callee,
    params: &[ad_core_ir::types::Ty],
    results: &[ad_core_ir::types::Ty],
) {
    use crate::names::Block;
    let res = |restricted: bool| {
        let p = crate::emit::hidden_path(&c.path, Block::Res, restricted);
        quote::ToTokens::to_token_stream(&p).to_string()
    };
    let all = vec![true; params.len()];
    ad_core_ir::driver::declare_extern_residuals(
        program,
        &c.ir_name,
        params,
        results,
        &all,
        &res(false),
    );
    if let Some(wrt) = &c.wrt {
        let w = ad_core_ir::driver::restricted_name(&c.ir_name);
        ad_core_ir::driver::declare_extern_residuals(program, &w, params, results, wrt, &res(true));
    }
}

/// Reads the signature: parameter kinds, `wrt` selection and output type.
pub fn signature(
    item: &syn::ItemFn,
    wrt: Option<&[syn::Ident]>,
) -> Result<Signature, Vec<syn::Error>> {
    signature::signature(item, wrt)
}

/// Lowers the body to IR.
pub fn lower(item: &syn::ItemFn, sig: &Signature) -> Result<Lowered, Vec<syn::Error>> {
    lower_with(item, sig, &sig.all_mask(), false, true)
}

/// As [`lower`], where only the parameters flagged in `seeds` carry
/// derivatives: a call whose arguments depend on no seed is a constant call
/// of a plain function. A forward rule (`#[custom_jvp]`) seeds its tangent
/// parameters only, so its primal part may call any function.
pub fn lower_seeded(
    item: &syn::ItemFn,
    sig: &Signature,
    seed_mask: &[bool],
    exact_shapes: bool,
) -> Result<Lowered, Vec<syn::Error>> {
    lower_with(item, sig, seed_mask, exact_shapes, false)
}

/// [`lower_seeded`]; `asserts_on_entry`: the caller split off the body's
/// leading assertions (`crate::asserts`), for the refusal of later ones.
fn lower_with(
    item: &syn::ItemFn,
    sig: &Signature,
    seed_mask: &[bool],
    exact_shapes: bool,
    asserts_on_entry: bool,
) -> Result<Lowered, Vec<syn::Error>> {
    let name = sig.ident.to_string();
    let empty = Program::default();
    let mut lw = Lowerer::new(&empty, &name);
    lw.exact_shapes = exact_shapes;
    lw.asserts_on_entry = asserts_on_entry;
    let mut seeds = vec![];
    let inputs: Vec<&syn::PatType> = item
        .sig
        .inputs
        .iter()
        .filter_map(|a| match a {
            syn::FnArg::Typed(pt) => Some(pt),
            syn::FnArg::Receiver(_) => None,
        })
        .collect();
    for (k, p) in sig.params.iter().enumerate() {
        let v = lw.b.param(&p.ident.to_string(), p.kind.ir_ty());
        if seed_mask.get(k).copied().unwrap_or(false) {
            seeds.push(v);
        }
        let pat = inputs.get(k).copied();
        let span = pat.map_or(p.ident.span(), |pt| span_of(pt));
        let mutable =
            matches!(pat.map(|pt| &*pt.pat), Some(syn::Pat::Ident(pi)) if pi.mutability.is_some());
        let val = match &p.kind {
            ParamKind::F64 => Val::f64(v),
            ParamKind::F64Tuple(n) => match lw.emit(Expr::Untuple(Atom::Var(v)), span) {
                Some(parts) if parts.len() == *n => {
                    Val::Tuple(parts.into_iter().map(Val::f64).collect())
                }
                _ => Val::Poison,
            },
            ParamKind::Int(ty) => match classify(ty) {
                Ok(TyDesc::Scalar(e @ Elem::Int(_))) => Val::Scalar(Atom::Var(v), e),
                _ => Val::Poison,
            },
            ParamKind::Bool => Val::Scalar(Atom::Var(v), Elem::Bool),
            ParamKind::Enum(_) => Val::Scalar(Atom::Var(v), Elem::Int(types::IntTy::I64)),
            ParamKind::F64Array { rank, .. } => Val::Array(Atom::Var(v), Elem::F64, *rank),
            ParamKind::IntArray { rank, elem, .. } => match classify(elem) {
                Ok(TyDesc::Scalar(e)) => Val::Array(Atom::Var(v), e, *rank),
                _ => Val::Poison,
            },
        };
        lw.env.declare(&p.ident.to_string(), val, mutable);
    }
    let (value, span) = lw.lower_fn_body(&item.block, &sig.out);
    let results = lw.output(&value, &sig.out, span);
    let Lowerer {
        b,
        mut errors,
        spans,
        calls,
        ..
    } = lw;
    if results.is_none() && errors.is_empty() {
        errors.push(syn::Error::new(
            span,
            "linad internal compiler error (please report it): this expression failed to lower without a diagnostic",
        ));
    }
    let results = results.unwrap_or_default();
    let func = b.finish(results, vec![]);
    let (decls, callees, call_errors) = calls::finish(&func, &seeds, &calls);
    errors.extend(call_errors);
    if !errors.is_empty() {
        return Err(errors);
    }
    let mut program = Program::default();
    for (n, params, results) in &decls {
        let callee = callees.iter().find(|c| c.ir_name == *n);
        match callee.map(|c| (&c.linear, &c.wrt)) {
            Some((Some(linear), _)) => {
                ad_core_ir::driver::declare_linear_extern(&mut program, n, params, results, linear)
            }
            Some((None, Some(wrt))) => {
                ad_core_ir::driver::declare_wrt_extern(&mut program, n, params, results, wrt)
            }
            _ => ad_core_ir::driver::declare_extern(&mut program, n, params, results),
        }
        if let Some(c) = callee.filter(|c| c.residuals) {
            declare_kept_residuals(&mut program, c, params, results);
        }
    }
    program.funcs.push(func);
    if let Err(es) = check_program(&program, Mode::LinearA) {
        let msgs: Vec<String> = es.iter().take(5).map(|e| e.to_string()).collect();
        return Err(vec![syn::Error::new(
            sig.ident.span(),
            format!(
                "linad internal compiler error (please report it): the lowered IR does not check: {}",
                msgs.join("; ")
            ),
        )]);
    }
    Ok(Lowered {
        program,
        name,
        spans,
        callees,
    })
}
