//! Calls by path: `f64::sin(x)` and the other `f64` associated functions,
//! `usize::max(a, b)` / `std::cmp::max(a, b)`, array constructors
//! (`Array1::zeros(n)`, ...), and calls of other functions.
//!
//! A call of another function `g` (or `m::g`) becomes an IR `Call` of an
//! extern named by the path as written. Its parameter types are the
//! argument types (tuples of `f64` are packed into IR tuples); its result
//! types come from the `let` annotation at the call site (the leaves of a
//! tuple), else from `g`'s signature in the crate's source
//! (`crate::crate_fns`, which also checks the argument count), `f64` by
//! default. After lowering, [`finish`] decides with a taint
//! analysis (`taint.rs`) whether each callee receives values that depend on
//! differentiable parameters: such a callee must be `#[differentiable]` and
//! is called through its derivative building blocks; otherwise it is a
//! constant call of a plain function, which may take scalars and `f64`
//! arrays (passed by reference to an owned array).

use super::ctx::{span_of, CallSite, Lowerer};
use super::expr::strip;
use super::methods::is_f64_method;
use super::types::{classify, Elem, IntTy, TyDesc};
use super::val::Val;
use super::Callee;
use crate::crate_fns;
use ad_core_ir::ir::{Atom, Call, Expr, Func, Stmt, Var};
use ad_core_ir::types::Ty;

/// Crates whose functions are never `#[differentiable]` (the standard library
/// and the common special-function crates).
const NON_DIFFERENTIABLE_CRATES: [&str; 7] = [
    "std",
    "core",
    "alloc",
    "libm",
    "statrs",
    "special",
    "num_traits",
];

/// Why the function at `path` can never be `#[differentiable]` (so calling
/// it with values that depend on differentiable parameters is refused at
/// the call), or `None` when it may be.
fn never_differentiable(path: &syn::Path) -> Option<String> {
    let segs: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
    let name = segs.join("::");
    if segs.len() >= 2 && NON_DIFFERENTIABLE_CRATES.contains(&segs[0].as_str()) {
        return Some(format!(
            "`{name}` has no derivative known to linad: only operations of the supported-syntax list and other #[differentiable] functions can be differentiated; write it with those in a #[differentiable] function of your own, or compute it outside and pass the value in"
        ));
    }
    // `Zip::from(..)`, `Vec::from(..)`: a type's associated function (methods
    // cannot be #[differentiable])
    if segs.len() >= 2 && segs[segs.len() - 2] == "Zip" {
        return Some(format!(
            "`{name}` is not supported here: `Zip` is supported as `Zip::from(a).and(b).map_collect(|x, y| ..)`, `.for_each(|x, y| ..)` or `.fold(init, |acc, x, y| ..)`, consumed where it is built"
        ));
    }
    if segs.len() >= 2 && segs[segs.len() - 2].starts_with(|c: char| c.is_ascii_uppercase()) {
        return Some(format!(
            "`{name}` is not supported in #[differentiable] functions: only the array constructors (`Array1::zeros`, `from_shape_fn`, ...) and calls of other #[differentiable] functions are; write the computation with index loops (`for i in 0..n`)"
        ));
    }
    None
}

/// The name of the function a path names when the path stays in this crate
/// (`g`, `self::g`, `super::g`, `crate::m::g`, `m::g` for a module `m` of
/// the crate), for [`crate_fns::lookup`].
pub(super) fn in_crate_name(path: &syn::Path) -> Option<String> {
    let segs: Vec<String> = path
        .segments
        .iter()
        .map(|s| syn::ext::IdentExt::unraw(&s.ident).to_string())
        .collect();
    match segs.as_slice() {
        [one] => Some(one.clone()),
        [first, .., last]
            if matches!(first.as_str(), "self" | "super" | "crate")
                || crate_fns::is_module(first) =>
        {
            Some(last.clone())
        }
        _ => None,
    }
}

/// For a bare name that the module of the function `caller` imports with a
/// `use` from a module of this crate (`crate_fns::import_path`), the
/// import's path and what the crate's source says about the function it
/// names.
fn imported_callee(
    path: &syn::Path,
    caller: &str,
) -> Option<(String, syn::Path, crate_fns::FnInfo)> {
    let [seg] = path.segments.iter().collect::<Vec<_>>()[..] else {
        return None;
    };
    let name = syn::ext::IdentExt::unraw(&seg.ident).to_string();
    let imported = crate_fns::import_path(&name, caller)?;
    let mut full: syn::Path = syn::parse_str(&imported).ok()?;
    if full.segments.len() < 2 {
        return None;
    }
    let info = crate_fns::lookup(&in_crate_name(&full)?)?;
    // Errors in what names the callee point at the call.
    for s in &mut full.segments {
        s.ident.set_span(seg.ident.span());
    }
    Some((imported, full, info))
}

/// A path as written, `m::g` (the IR name of an extern).
fn written_name(path: &syn::Path) -> String {
    path.segments
        .iter()
        .map(|s| s.ident.to_string())
        .collect::<Vec<_>>()
        .join("::")
}

/// Whether a path segment names an `ndarray` array type.
fn is_array_type(s: &str) -> bool {
    s == "Array"
        || s.strip_prefix("Array")
            .is_some_and(|r| r.parse::<usize>().is_ok())
}

impl Lowerer<'_> {
    /// `path(args)`; `annot` is the type annotation of the `let` the call
    /// initialises, if any (the result types of a function call).
    pub fn call(&mut self, c: &syn::ExprCall, annot: Option<&syn::Type>) -> Option<Val> {
        let syn::Expr::Path(p) = strip(&c.func) else {
            return self.fail(
                &c.func,
                "only calls of functions by name are supported (`g(x)`, `module::g(x)`)",
            );
        };
        if p.qself.is_some() {
            return self.fail(p, "qualified paths (`<T as Trait>::f`) are not supported");
        }
        let segs: Vec<String> = p
            .path
            .segments
            .iter()
            .map(|s| s.ident.to_string())
            .collect();
        let segs_ref: Vec<&str> = segs.iter().map(String::as_str).collect();
        let span = span_of(c);
        // `f(x)` of a closure bound to a local name
        if let [name] = segs_ref.as_slice() {
            if let Some(id) = self.env.lookup(name) {
                if let Val::Closure(cv) = self.env.get(id).val.clone() {
                    let mut args = vec![];
                    for a in &c.args {
                        args.push(self.expr(a)?);
                    }
                    return self.apply_closure_val(&cv, args);
                }
            }
        }
        // `f64::sin(x)`
        if let [.., "f64", m] = segs_ref.as_slice() {
            if segs.len() == 2
                || segs_ref[..segs.len() - 2] == ["std", "primitive"]
                || segs_ref[..segs.len() - 2] == ["core", "primitive"]
            {
                if !is_f64_method(m) {
                    let name = &p.path.segments.last()?.ident;
                    let _ = self.f64_method(name, Val::f64(0.0), vec![], span);
                    return None;
                }
                let Some((first, rest)) = c
                    .args
                    .iter()
                    .collect::<Vec<_>>()
                    .split_first()
                    .map(|(a, b)| (*a, b.to_vec()))
                else {
                    return self.fail(
                        c,
                        format!("`f64::{m}` takes the value as its first argument"),
                    );
                };
                let x = self.expr(first)?;
                if !matches!(x, Val::Scalar(_, Elem::F64)) {
                    return self.fail(
                        first,
                        format!("mismatched types: expected `f64`, found `{}`", x.ty()),
                    );
                }
                let mut args = vec![];
                for e in rest {
                    args.push((self.expr(e)?, e));
                }
                let name = p.path.segments.last()?.ident.clone();
                return self.f64_method(&name, x, args, span);
            }
        }
        // `usize::max(a, b)`, `std::cmp::max(a, b)`
        let int_fn = match segs_ref.as_slice() {
            [t, m @ ("max" | "min" | "abs" | "pow")] if IntTy::from_name(t).is_some() => Some(*m),
            ["std" | "core", "cmp", m @ ("max" | "min")] | ["cmp", m @ ("max" | "min")] => Some(*m),
            _ => None,
        };
        if let Some(m) = int_fn {
            let args: Vec<&syn::Expr> = c.args.iter().collect();
            let Some((first, rest)) = args.split_first() else {
                return self.fail(c, format!("`{m}` takes arguments"));
            };
            let x = self.expr(first)?;
            let Val::Scalar(xa, e @ Elem::Int(_)) = x else {
                return self.fail(
                    *first,
                    format!("`{}` needs integers, found `{}`", segs.join("::"), x.ty()),
                );
            };
            let mut vals = vec![];
            for a in rest {
                vals.push((self.expr(a)?, *a));
            }
            let name = syn::Ident::new(m, p.path.segments.last()?.ident.span());
            return self.int_method(&name, xa, e, vals, span);
        }
        // An empty `Vec` that `vec_push.rs` did not rewrite.
        if let [.., "Vec", "new" | "with_capacity"] = segs_ref.as_slice() {
            return self.fail(c, super::errors::VEC_PUSH);
        }
        // Array constructors.
        if segs.len() >= 2 && is_array_type(&segs[segs.len() - 2]) {
            let n = p.path.segments.len();
            let ty_seg = &p.path.segments[n - 2];
            let func = &p.path.segments[n - 1].ident;
            return self.array_ctor(c, ty_seg, func);
        }
        // `concatenate(Axis(0), &[..])`, `stack(..)` (also as `ndarray::..`)
        if let Some(&last @ ("concatenate" | "stack")) = segs_ref.last() {
            if segs.len() == 1 || segs_ref[0] == "ndarray" || segs_ref.contains(&"ndarray") {
                return self.join_call(last, c);
            }
        }
        if segs.len() == 1 && matches!(segs_ref[0], "Some" | "Ok" | "Err" | "Box" | "Axis") {
            return self.fail(c, format!("`{}` is not supported here", segs[0]));
        }
        self.user_call(c, p, annot)
    }

    /// A call of another function: an extern `Call`.
    fn user_call(
        &mut self,
        c: &syn::ExprCall,
        p: &syn::ExprPath,
        annot: Option<&syn::Type>,
    ) -> Option<Val> {
        for s in &p.path.segments {
            if !matches!(s.arguments, syn::PathArguments::None) {
                return self.fail(
                    &s.arguments,
                    "generic arguments on function calls are not supported",
                );
            }
        }
        let mut ir_name = written_name(&p.path);
        if ir_name == self.fn_name {
            return self.fail(c, "recursive calls are not supported by #[differentiable]");
        }
        // What the crate's source says about the callee (`crate_fns`).
        let mut known = in_crate_name(&p.path).and_then(|n| crate_fns::lookup(&n));
        // A bare name this file imports from a module of the crate (`use
        // inner::sq;`, `use crate::m::g as h;`): the callee is named by
        // that path, so the derivatives reach its building blocks
        // (`inner::__linad_sq_jvp`), which the `use` does not import.
        let mut callee_path = p.path.clone();
        if let Some((name, path, info)) = imported_callee(&p.path, &self.fn_name) {
            known = Some(info);
            ir_name = name;
            callee_path = path;
        }
        // A bare name nothing defines or imports: say so here, not through
        // rustc's "cannot find `__linad_g_jvp`" in the derivatives.
        // (A function's name: not a type's or a variant's, which would be
        // capitalised, nor the prelude's `drop`.)
        if known.is_none()
            && p.path.segments.len() == 1
            && ir_name.starts_with(|c: char| c.is_lowercase() || c == '_')
            && ir_name != "drop"
            && crate_fns::unresolvable(&ir_name) == Some(true)
        {
            return self.fail(
                &p.path,
                format!("cannot find function `{ir_name}`: no file of this crate defines it and this file does not import it (a #[differentiable] function calls other #[differentiable] functions, functions with a custom rule, and constants-only plain functions, by name or path)"),
            );
        }
        if let Some(info) = &known {
            if info.arity != c.args.len() {
                let plural = |n: usize| if n == 1 { "" } else { "s" };
                return self.fail(
                    c,
                    format!(
                        "`{ir_name}` takes {} argument{} but {} {} supplied",
                        info.arity,
                        plural(info.arity),
                        c.args.len(),
                        if c.args.len() == 1 { "was" } else { "were" }
                    ),
                );
            }
        }
        // A small leaf function: its body in place of the call (`crate::inline`).
        if let Some(f) = known
            .as_ref()
            .and_then(|i| i.inline.as_deref())
            .and_then(|t| syn::parse_str::<syn::ItemFn>(t).ok())
        {
            let mut args = vec![];
            for a in &c.args {
                args.push(self.expr(a)?);
            }
            let cv = super::val::ClosureVal {
                syntax: crate::inline::closure(&f),
                env: super::env::Env::new(),
            };
            let v = self.apply_closure_val(&cv, args)?;
            return Some(match annot {
                Some(t) => self.annotate(t, v, c),
                None => v,
            });
        }
        // Without a `let` annotation, the result type is the callee's own.
        let declared: Option<syn::Type> = match (annot, &known) {
            (None, Some(crate_fns::FnInfo { ret: Some(r), .. })) => syn::parse_str(r)
                .ok()
                .filter(|t: &syn::Type| classify(t).is_ok()),
            _ => None,
        };
        let annot = annot.or(declared.as_ref());
        let mut args = vec![];
        let mut arg_tys = vec![];
        let mut arg_spans = vec![];
        let mut failed = false;
        for a in &c.args {
            match self.expr(a) {
                Some(Val::Scalar(x, e)) => {
                    args.push(x);
                    arg_tys.push(Ty::Scalar(e.scalar()));
                }
                Some(Val::Array(x, e, r)) => {
                    args.push(x);
                    arg_tys.push(Ty::array(e.scalar(), r));
                }
                Some(Val::Tuple(vs))
                    if vs.iter().all(|v| matches!(v, Val::Scalar(_, Elem::F64))) =>
                {
                    let leaves = Val::Tuple(vs).leaves()?;
                    let ty = Ty::Tuple(vec![Ty::F64; leaves.len()]);
                    let t = self.emit1(Expr::Tuple(leaves), span_of(a))?;
                    args.push(t);
                    arg_tys.push(ty);
                }
                Some(other) => {
                    let _: Option<()> = self.fail(
                        a,
                        format!("arguments of function calls must be `f64`, integers, `bool`, tuples of `f64` or arrays, found `{}`", other.ty()),
                    );
                    failed = true;
                }
                None => failed = true,
            }
            arg_spans.push(span_of(a));
        }
        if failed {
            return None;
        }
        // an array argument: a call of a plain function cannot take it, so it
        // must be #[differentiable]
        if arg_tys.iter().any(|t| !matches!(t, Ty::Scalar(_))) {
            if let Some(msg) = never_differentiable(&p.path) {
                return self.fail(c, msg);
            }
        }
        // Result types: from the annotation (leaves of a tuple), f64 by default.
        let (template, result_rust) = match annot {
            Some(t) => {
                let desc = match classify(t) {
                    Ok(d) => d,
                    Err(e) => {
                        self.errors.push(e);
                        return None;
                    }
                };
                let template = template_of(&desc);
                (template, leaf_types(t))
            }
            None => (Val::f64(0.0), vec![syn::parse_quote!(f64)]),
        };
        let result_tys: Vec<Ty> = leaf_rtys(&template);
        if result_tys.len() != result_rust.len() {
            return self.fail(annot?, "unsupported result type for a function call");
        }
        let binds: Vec<Var> = result_tys
            .iter()
            .map(|t| self.b.fresh("call", t.clone()))
            .collect();
        let span = span_of(c);
        let src = self.at(span);
        self.b.push(Stmt {
            binds: binds.clone(),
            lin_binds: vec![],
            expr: Expr::Call(Call {
                func: ir_name.clone(),
                args: args.clone(),
                lin_args: vec![],
                lin_shapes: vec![],
            }),
            src: Some(src),
        });
        if annot.is_none() {
            if let Some(v) = binds.first() {
                self.defaulted.insert(*v, ir_name.clone());
            }
        }
        self.calls.push(CallSite {
            ir_name,
            path: callee_path,
            args,
            arg_tys,
            arg_spans,
            result_tys,
            result_rust,
            span,
            constant: false,
        });
        Some(template.rebuild(&mut binds.into_iter().map(Atom::Var)))
    }

    /// A read of the `const` or `static` item `p` of the crate, whose
    /// written type is `ty` (`crate_fns::lookup_const`): a plain extern of
    /// no arguments, emitted as the path itself, so `f` and its
    /// derivatives read the one value Rust gives it (no derivative: a
    /// constant). Scalars only (`f64`, integer types, `bool`).
    pub(super) fn const_read(&mut self, p: &syn::ExprPath, ty: &str) -> Option<Val> {
        let name = written_name(&p.path);
        let written: Option<syn::Type> = syn::parse_str(ty).ok();
        let elem = match written.as_ref().map(classify) {
            Some(Ok(TyDesc::Scalar(e))) => e,
            _ => {
                let shown = written.as_ref().map_or(ty.to_string(), super::types::show);
                return self.fail(
                    p,
                    format!("`{name}` is a constant of type `{shown}`: #[differentiable] functions read constants of type `f64`, of an integer type or `bool`; pass `{name}` as a parameter"),
                );
            }
        };
        let rty = Ty::Scalar(elem.scalar());
        let v = self.b.fresh("const", rty.clone());
        let span = span_of(p);
        let src = self.at(span);
        self.b.push(Stmt {
            binds: vec![v],
            lin_binds: vec![],
            expr: Expr::Call(Call {
                func: name.clone(),
                args: vec![],
                lin_args: vec![],
                lin_shapes: vec![],
            }),
            src: Some(src),
        });
        self.calls.push(CallSite {
            ir_name: name,
            path: p.path.clone(),
            args: vec![],
            arg_tys: vec![],
            arg_spans: vec![],
            result_tys: vec![rty],
            result_rust: written.into_iter().collect(),
            span,
            constant: true,
        });
        Some(Val::Scalar(Atom::Var(v), elem))
    }
}

/// A value of the written type with placeholder atoms (for `rebuild`).
fn template_of(d: &TyDesc) -> Val {
    match d {
        TyDesc::Scalar(e) => Val::Scalar(Atom::I64(0), *e),
        TyDesc::Array { elem, rank, .. } => Val::Array(Atom::I64(0), *elem, *rank),
        TyDesc::Tuple(ts) => Val::Tuple(ts.iter().map(template_of).collect()),
        TyDesc::Ref(t) => template_of(t),
    }
}

fn leaf_rtys(v: &Val) -> Vec<Ty> {
    match v {
        Val::Scalar(_, e) => vec![Ty::Scalar(e.scalar())],
        Val::Array(_, e, r) => vec![Ty::array(e.scalar(), *r)],
        Val::Tuple(vs) => vs.iter().flat_map(leaf_rtys).collect(),
        _ => vec![],
    }
}

/// The written leaf types of a (tuple) type.
fn leaf_types(t: &syn::Type) -> Vec<syn::Type> {
    match t {
        syn::Type::Paren(p) => leaf_types(&p.elem),
        syn::Type::Group(g) => leaf_types(&g.elem),
        syn::Type::Tuple(tt) => tt.elems.iter().flat_map(leaf_types).collect(),
        syn::Type::Reference(r) => leaf_types(&r.elem),
        t => vec![t.clone()],
    }
}

/// Extern declarations `(name, parameter types, result types)`.
pub type Decls = Vec<(String, Vec<Ty>, Vec<Ty>)>;

/// What [`finish`] returns: declarations, callees and errors.
pub type Finished = (Decls, Vec<Callee>, Vec<syn::Error>);

/// After lowering: the extern declarations `(name, params, results)`, the
/// callees, and the errors of calls (inconsistent types, constant calls
/// with array arguments, differentiable callees with integer results).
pub fn finish(func: &Func, seeds: &[Var], sites: &[CallSite]) -> Finished {
    let tainted = ad_core_ir::taint::tainted(func, seeds);
    let is_tainted = |a: &Atom| matches!(a, Atom::Var(v) if tainted.contains(v));
    let mut decls: Decls = vec![];
    let mut callees: Vec<Callee> = vec![];
    let mut errors = vec![];
    let mut firsts: Vec<&CallSite> = vec![];
    for s in sites {
        let site_diff = s.args.iter().any(is_tainted);
        match firsts.iter().position(|f| f.ir_name == s.ir_name) {
            Some(k) => {
                let f = firsts[k];
                if f.arg_tys != s.arg_tys || f.result_tys != s.result_tys {
                    errors.push(syn::Error::new(
                        s.span,
                        format!(
                            "`{}` is called here with types {} but with {} at an earlier call: every call of a function must use the same argument and result types",
                            s.ir_name,
                            show_sig(&s.arg_tys, &s.result_tys),
                            show_sig(&f.arg_tys, &f.result_tys)
                        ),
                    ));
                }
                callees[k].differentiable |= site_diff;
            }
            None => {
                firsts.push(s);
                decls.push((s.ir_name.clone(), s.arg_tys.clone(), s.result_tys.clone()));
                callees.push(Callee {
                    ir_name: s.ir_name.clone(),
                    path: s.path.clone(),
                    differentiable: site_diff,
                    result_tys: s.result_rust.clone(),
                    linear: None,
                    wrt: None,
                    residuals: false,
                    constant: s.constant,
                });
            }
        }
    }
    for (k, callee) in callees.iter_mut().enumerate() {
        let f = firsts[k];
        if callee.differentiable {
            let known = in_crate_name(&f.path).and_then(|n| crate_fns::lookup(&n));
            // What the callee's own expansion emits, when its source is
            // found and its arity matches the call.
            let info = known.as_ref().filter(|i| i.arity == f.args.len());
            callee.linear = info.and_then(linear_flags);
            callee.wrt = info.and_then(|i| wrt_flags(i, f));
            callee.residuals = info.is_some_and(|i| i.residuals);
            if let Some(msg) = never_differentiable(&f.path) {
                errors.push(syn::Error::new(f.span, msg));
                continue;
            }
            if known.is_some_and(|k| !k.differentiable) {
                errors.push(syn::Error::new(
                    f.span,
                    format!(
                        "`{name}` is not #[differentiable], but it is called here with values that depend on differentiable parameters: put #[differentiable] on `{name}`, give it a forward rule with `#[custom_jvp({name})]` (any Rust body, e.g. a function of another crate), or pass it only constants",
                        name = callee.ir_name
                    ),
                ));
                continue;
            }
            if let Some(t) = f.result_tys.iter().find(|t| !t.is_differentiable()) {
                let _ = t;
                errors.push(syn::Error::new(
                    f.span,
                    format!(
                        "`{}` receives values that depend on differentiable parameters, so it must be a #[differentiable] function, whose results are `f64`, `f64` arrays or tuples of these: annotate the result (`let y: f64 = {}(..);`)",
                        callee.ir_name, callee.ir_name
                    ),
                ));
            }
        } else {
            for s in sites.iter().filter(|s| s.ir_name == callee.ir_name) {
                for (t, sp) in s.arg_tys.iter().zip(&s.arg_spans) {
                    let f64_array = matches!(
                        t,
                        Ty::Array {
                            elem: ad_core_ir::types::Scalar::F64,
                            ..
                        }
                    );
                    if !matches!(t, Ty::Scalar(_)) && !f64_array {
                        errors.push(syn::Error::new(
                            *sp,
                            format!(
                                "calls of functions that are not #[differentiable] may only take scalars (`f64`, integers, `bool`) and `f64` arrays (passed as `&Array`): no argument of `{}` depends on a differentiable parameter, so it is called as a plain function, but this argument is `{t}`",
                                callee.ir_name
                            ),
                        ));
                    }
                }
            }
        }
    }
    (decls, callees, errors)
}

/// The linear-parameter flags of a `#[linear(..)]` callee of the crate
/// (an `f32` callee goes through its `f64` shadow, which is not linear:
/// `None`).
fn linear_flags(info: &crate_fns::FnInfo) -> Option<Vec<bool>> {
    if info.linear.is_empty() || info.uses_f32 {
        return None;
    }
    Some((0..info.arity).map(|k| info.linear.contains(&k)).collect())
}

/// The `wrt(..)` flags of a callee of the crate declared
/// `#[differentiable(wrt(..))]` called at `site`, when `wrt` leaves out a
/// parameter with a derivative (only then does its expansion emit the
/// derivatives with respect to the `wrt` parameters alone, `__linadw_g_*`;
/// an `f32` callee goes through its `f64` shadow, which has none: `None`).
fn wrt_flags(info: &crate_fns::FnInfo, site: &CallSite) -> Option<Vec<bool>> {
    if info.wrt.is_empty() || info.uses_f32 {
        return None;
    }
    let flags: Vec<bool> = (0..info.arity).map(|k| info.wrt.contains(&k)).collect();
    let fewer = site
        .arg_tys
        .iter()
        .zip(&flags)
        .any(|(t, w)| !w && t.is_differentiable());
    fewer.then_some(flags)
}

fn show_sig(args: &[Ty], results: &[Ty]) -> String {
    let a: Vec<String> = args.iter().map(|t| t.to_string()).collect();
    let r: Vec<String> = results.iter().map(|t| t.to_string()).collect();
    format!("`({}) -> ({})`", a.join(", "), r.join(", "))
}

#[cfg(test)]
mod tests {
    use crate::lower::testutil::*;
    use ad_core_ir::types::Ty;

    fn callee<'l>(l: &'l crate::lower::Lowered, name: &str) -> &'l crate::lower::Callee {
        l.callees
            .iter()
            .find(|c| c.ir_name == name)
            .expect("callee")
    }

    #[test]
    fn differentiable_and_constant_callees() {
        let l = differentiates(
            "fn f(x: f64, w: &Array1<f64>, n: usize) -> f64 {
                let a = g(x, w);
                let (b, c): (f64, Array1<f64>) = m::h((x, 2.0), n);
                let k: usize = count(n, 3);
                let s = scale(n as f64);
                a + b + c.sum() + k as f64 * s + g(a, w)
            }",
        );
        assert_eq!(l.callees.len(), 4);
        assert!(callee(&l, "g").differentiable);
        assert!(callee(&l, "m::h").differentiable);
        assert!(!callee(&l, "count").differentiable);
        assert!(!callee(&l, "scale").differentiable);
        let h = l.program.func("m::h").unwrap();
        assert_eq!(h.param_tys(), [Ty::Tuple(vec![Ty::F64, Ty::F64]), Ty::I64]);
        assert_eq!(ad_core_ir::typing::func_sig(h).2, [Ty::F64, Ty::f64s(1)]);
        let rust: Vec<String> = callee(&l, "m::h")
            .result_tys
            .iter()
            .map(|t| quote::ToTokens::to_token_stream(t).to_string())
            .collect();
        assert_eq!(rust, ["f64", "Array1 < f64 >"]);
        let count = callee(&l, "count");
        assert_eq!(
            quote::ToTokens::to_token_stream(&count.result_tys[0]).to_string(),
            "usize"
        );
        assert_eq!(
            quote::ToTokens::to_token_stream(&callee(&l, "scale").result_tys[0]).to_string(),
            "f64"
        );
        assert!(l.program.func("g__lin_t").is_some());
    }

    #[test]
    fn taint_flows_through_loops_branches_and_closures() {
        // `s` starts constant and becomes dependent in the loop; `t` only
        // through a branch; `u` through a map closure capturing `x`.
        let l = differentiates(
            "fn f(x: f64, n: usize, w: &Array1<f64>) -> f64 {
                let mut s = 0.0;
                for i in 0..n { s = s + x; }
                let mut t = 1.0;
                if n > 2 { t = x; }
                let u = Array1::from_shape_fn(n, |i| x * i as f64).sum();
                let c = 2.0 * n as f64;
                a(s) + b(t) + cc(u) + d(c) + e(w.len() as f64)
            }",
        );
        for (name, diff) in [
            ("a", true),
            ("b", true),
            ("cc", true),
            ("d", false),
            ("e", false),
        ] {
            assert_eq!(callee(&l, name).differentiable, diff, "{name}");
        }
    }

    #[test]
    fn calls_run_in_the_interpreter() {
        // With the callee's lowered body inserted, the caller computes the
        // same as Rust.
        both! {
            fn f(x: f64, y: f64) -> f64 {
                let a = g(x, y);
                a * g(y, x)
            }
        }
        fn g(x: f64, y: f64) -> f64 {
            x.sin() * y
        }
        let mut l = lowered(SRC);
        let g_ir = lowered("fn g(x: f64, y: f64) -> f64 { x.sin() * y }");
        l.program.externs.retain(|e| e.name != "g");
        l.program
            .funcs
            .insert(0, g_ir.program.func("g").unwrap().clone());
        assert_eq!(run_lowered(&l, &[fv(0.3), fv(1.7)]), [fv(f(0.3, 1.7))]);
    }

    #[test]
    fn refusals() {
        refuses(
            "fn f(x: f64, idx: &Array1<usize>) -> f64 { let s = g(idx.len(), idx); x * s }",
            "calls of functions that are not #[differentiable] may only take scalars (`f64`, integers, `bool`) and `f64` arrays (passed as `&Array`): no argument of `g` depends on a differentiable parameter",
        );
        refuses(
            "fn f(x: f64) -> f64 { let a = g(x); let b: f64 = g(x, x); a + b }",
            "`g` is called here with types `(f64, f64) -> (f64)` but with `(f64) -> (f64)` at an earlier call",
        );
        refuses(
            "fn f(x: f64) -> f64 { let k: usize = g(x); x }",
            "`g` receives values that depend on differentiable parameters, so it must be a #[differentiable] function",
        );
        refuses(
            "fn f(x: f64) -> f64 { f(x) }",
            "recursive calls are not supported",
        );
        refuses(
            "fn f(x: f64) -> f64 { g::<f64>(x) }",
            "generic arguments on function calls are not supported",
        );
        refuses(
            "fn f(x: f64) -> f64 { (x.sin)(x) }",
            "only calls of functions by name are supported",
        );
        refuses(
            "fn f(x: f64) -> f64 { g(|y| y) }",
            "arguments of function calls must be `f64`, integers, `bool`, tuples of `f64` or arrays, found `a closure`",
        );
        refuses("fn f(x: f64, n: usize) -> f64 { g((x, n)) }", "arguments of function calls must be `f64`, integers, `bool`, tuples of `f64` or arrays, found `(f64, usize)`");
        refuses(
            "fn f(x: f64) -> f64 { Some(x).unwrap() }",
            "`Some` is not supported here",
        );
    }

    #[test]
    fn one_clear_error_each() {
        // an empty statement is accepted
        lowered("fn f(x: f64) -> f64 { let y = x;; ; y }");
        let e = try_lower_wrt(
            "fn f(x: f64) -> f64 { let t = (x, 1.0); if let (a, b) = t { a * b } else { x } }",
            None,
        )
        .err()
        .expect("refused");
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(e[0].contains("`if let`"), "{e:?}");
        let e = try_lower_wrt(
            "fn f(x: &Array1<f64>, y: &Array1<f64>) -> f64 { let z = Zip::from(x).and(y); 1.0 }",
            None,
        )
        .err()
        .expect("refused");
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(e[0].starts_with("`Zip::from` is not supported"), "{e:?}");
    }
}
