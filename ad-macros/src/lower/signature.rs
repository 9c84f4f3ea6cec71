//! The signature of a `#[differentiable]` function: parameter kinds, the
//! `wrt` selection and the output type, with every refusal spanned on the
//! offending part of the signature. All errors of the signature are
//! reported together.

use super::ctx::span_of;
use super::types::{classify, show, Elem, TyDesc};
use crate::sig::{Out, Param, ParamKind, Passing, Signature};
use quote::ToTokens;

fn err(node: &dyn ToTokens, msg: impl std::fmt::Display) -> syn::Error {
    syn::Error::new_spanned(node, msg)
}

/// Reads the signature: parameter kinds, `wrt` selection and output type.
pub fn signature(
    item: &syn::ItemFn,
    wrt: Option<&[syn::Ident]>,
) -> Result<Signature, Vec<syn::Error>> {
    let sig = &item.sig;
    let mut errors = vec![];
    if let Some(c) = &sig.constness {
        errors.push(err(
            c,
            "`const fn` cannot be #[differentiable]: remove `const`",
        ));
    }
    if let Some(a) = &sig.asyncness {
        errors.push(err(
            a,
            "`async fn` cannot be #[differentiable]: remove `async`",
        ));
    }
    if let Some(u) = &sig.unsafety {
        errors.push(err(
            u,
            "`unsafe fn` cannot be #[differentiable]: remove `unsafe`",
        ));
    }
    if let Some(abi) = &sig.abi {
        errors.push(err(abi, "`extern` functions cannot be #[differentiable]"));
    }
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        errors.push(err(
            &sig.generics,
            "generic functions cannot be #[differentiable]: write the function for `f64` and concrete array types, without type, lifetime or const parameters",
        ));
    }
    if let Some(v) = &sig.variadic {
        errors.push(err(v, "variadic functions cannot be #[differentiable]"));
    }
    let mut params = vec![];
    for input in &sig.inputs {
        match input {
            syn::FnArg::Receiver(r) => errors.push(err(
                r,
                "a method is differentiated through its `impl` block: put `#[differentiable]` on the `impl` too (`#[differentiable] impl Model { #[differentiable] fn f(&self, ..) }`; the attribute on a method cannot see its type), or write a free function",
            )),
            syn::FnArg::Typed(pt) => match param(pt) {
                Ok(p) => params.push(p),
                Err(e) => errors.push(e),
            },
        }
    }
    let out = match &sig.output {
        syn::ReturnType::Default => {
            errors.push(err(
                &sig.ident,
                format!(
                    "a #[differentiable] function must return `f64`, an owned `f64` array or a tuple of these: add `-> f64` to `{}`",
                    sig.ident
                ),
            ));
            None
        }
        syn::ReturnType::Type(_, ty) => match output(ty) {
            Ok(o) => Some(o),
            Err(e) => {
                errors.push(e);
                None
            }
        },
    };
    if let Some(names) = wrt {
        for p in &mut params {
            p.wrt = false;
        }
        for name in names {
            match params.iter_mut().find(|p| p.ident == *name) {
                None => errors.push(err(
                    name,
                    format!("`{name}` is not a parameter of `{}`", sig.ident),
                )),
                Some(p) if !p.kind.is_differentiable() => errors.push(err(
                    name,
                    format!(
                        "`{name}` cannot be differentiated: its type `{}` has no derivative (only `f64`, tuples of `f64` and `f64` arrays have one)",
                        show(&p.ty)
                    ),
                )),
                Some(p) => p.wrt = true,
            }
        }
    }
    match out {
        Some(out) if errors.is_empty() => Ok(Signature {
            ident: sig.ident.clone(),
            vis: item.vis.clone(),
            params,
            out,
            span: span_of(sig),
        }),
        _ => Err(errors),
    }
}

fn param(pt: &syn::PatType) -> Result<Param, syn::Error> {
    let ident = match &*pt.pat {
        syn::Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => pi.ident.clone(),
        other => {
            return Err(err(
                other,
                "patterns in parameters are not supported: name the parameter (`p: (f64, f64)`) and destructure it in the body (`let (a, b) = p;`)",
            ))
        }
    };
    if let Some(kind) = enum_param(&pt.ty)? {
        return Ok(Param {
            ident,
            ty: (*pt.ty).clone(),
            kind,
            wrt: false,
        });
    }
    let desc = classify(&pt.ty)?;
    let kind = match desc {
        TyDesc::Scalar(Elem::F64) => ParamKind::F64,
        TyDesc::Scalar(Elem::Int(_)) => ParamKind::Int((*pt.ty).clone()),
        TyDesc::Scalar(Elem::Bool) => ParamKind::Bool,
        TyDesc::Tuple(parts) if parts.iter().all(|p| *p == TyDesc::Scalar(Elem::F64)) => {
            ParamKind::F64Tuple(parts.len())
        }
        TyDesc::Tuple(_) => {
            return Err(err(
                &pt.ty,
                "tuple parameters must be tuples of `f64`: pass integers and arrays as separate parameters",
            ))
        }
        TyDesc::Array {
            elem: Elem::F64,
            rank,
            passing,
        } => ParamKind::F64Array { rank, passing },
        TyDesc::Array {
            elem,
            rank,
            passing,
        } => ParamKind::IntArray {
            rank,
            passing,
            elem: syn::parse_str(elem.name()).expect("a type name"),
        },
        TyDesc::Ref(_) => {
            return Err(err(
                &pt.ty,
                "references to scalars and tuples are not supported as parameters: take the value (`x: f64`)",
            ))
        }
    };
    Ok(Param {
        ident,
        ty: (*pt.ty).clone(),
        kind,
        wrt: true,
    })
    .map(|mut p| {
        p.wrt = p.kind.is_differentiable();
        p
    })
}

/// A parameter whose type is an enum without fields of this crate (read
/// from its source): a constant, its discriminant.
fn enum_param(ty: &syn::Type) -> Result<Option<ParamKind>, syn::Error> {
    let (inner, by_ref) = match ty {
        syn::Type::Reference(r) => (&*r.elem, true),
        t => (t, false),
    };
    let syn::Type::Path(p) = inner else {
        return Ok(None);
    };
    let Some(seg) = p.path.segments.last() else {
        return Ok(None);
    };
    let name = seg.ident.to_string();
    if !seg.arguments.is_empty()
        || crate::structs::KNOWN.contains(&name.as_str())
        || crate::crate_fns::lookup_enum(&name).is_none()
    {
        return Ok(None);
    }
    if by_ref {
        return Err(err(
            ty,
            format!(
                "take the enum `{}` by value (derive `Clone, Copy` on it)",
                seg.ident
            ),
        ));
    }
    Ok(Some(ParamKind::Enum(inner.clone())))
}

fn output(ty: &syn::Type) -> Result<Out, syn::Error> {
    let bad = |found: &str| {
        err(
            ty,
            format!("a #[differentiable] function must return `f64`, an owned `f64` array (`Array1<f64>`, ...) or a tuple of these, not {found}"),
        )
    };
    match classify(ty).map_err(|_| bad(&format!("`{}`", show(ty))))? {
        TyDesc::Scalar(Elem::F64) => Ok(Out::F64),
        TyDesc::Array {
            elem: Elem::F64,
            rank,
            passing: Passing::Owned,
        } => Ok(Out::Array(rank)),
        TyDesc::Array {
            elem: Elem::F64,
            passing: Passing::Vec | Passing::Slice | Passing::VecRef,
            ..
        } => Err(bad(
            "a `Vec` or a slice (return an owned array: `Array1::from(v)`)",
        )),
        TyDesc::Array {
            elem: Elem::F64,
            passing: Passing::Fixed,
            ..
        } => Ok(Out::Fixed(strip(ty).clone())),
        TyDesc::Array {
            elem: Elem::F64, ..
        } => Err(bad("a view or a reference (return an owned array)")),
        TyDesc::Tuple(_) => {
            let syn::Type::Tuple(t) = strip(ty) else {
                return Err(bad("this tuple"));
            };
            let parts: Vec<Out> = t.elems.iter().map(output).collect::<Result<_, _>>()?;
            Ok(Out::Tuple(parts))
        }
        _ => Err(bad(&format!("`{}` (it has no derivative)", show(ty)))),
    }
}

fn strip(ty: &syn::Type) -> &syn::Type {
    match ty {
        syn::Type::Paren(p) => strip(&p.elem),
        syn::Type::Group(g) => strip(&g.elem),
        t => t,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sig(src: &str, wrt: Option<&[&str]>) -> Result<Signature, Vec<String>> {
        let f: syn::ItemFn = syn::parse_str(src).unwrap();
        let idents: Option<Vec<syn::Ident>> = wrt.map(|w| {
            w.iter()
                .map(|s| syn::Ident::new(s, proc_macro2::Span::call_site()))
                .collect()
        });
        signature(&f, idents.as_deref()).map_err(|es| es.iter().map(|e| e.to_string()).collect())
    }

    #[test]
    fn kinds_and_default_wrt() {
        let s = sig(
            "fn f(x: f64, w: &Array1<f64>, n: usize, p: (f64, f64), m: ArrayView2<f64>, idx: &Array1<usize>, b: bool, mut o: Array3<f64>) -> (f64, Array1<f64>) { x }",
            None,
        )
        .unwrap();
        let kinds: Vec<_> = s.params.iter().map(|p| p.kind.clone()).collect();
        assert_eq!(kinds[0], ParamKind::F64);
        assert_eq!(
            kinds[1],
            ParamKind::F64Array {
                rank: 1,
                passing: Passing::Ref
            }
        );
        assert!(matches!(kinds[2], ParamKind::Int(_)));
        assert_eq!(kinds[3], ParamKind::F64Tuple(2));
        assert_eq!(
            kinds[4],
            ParamKind::F64Array {
                rank: 2,
                passing: Passing::View
            }
        );
        assert!(matches!(
            kinds[5],
            ParamKind::IntArray {
                rank: 1,
                passing: Passing::Ref,
                ..
            }
        ));
        assert_eq!(kinds[6], ParamKind::Bool);
        assert_eq!(
            kinds[7],
            ParamKind::F64Array {
                rank: 3,
                passing: Passing::Owned
            }
        );
        assert_eq!(
            s.wrt_mask(),
            vec![true, true, false, true, true, false, false, true]
        );
        assert_eq!(s.out, Out::Tuple(vec![Out::F64, Out::Array(1)]));
    }

    #[test]
    fn wrt_selects() {
        let s = sig("fn f(x: f64, y: f64, n: usize) -> f64 { x }", Some(&["y"])).unwrap();
        assert_eq!(s.wrt_mask(), vec![false, true, false]);
        assert_eq!(s.all_mask(), vec![true, true, false]);
    }

    #[test]
    fn wrt_errors_are_spanned_on_the_name() {
        let e = sig("fn f(x: f64, n: usize) -> f64 { x }", Some(&["z", "n"])).unwrap_err();
        assert_eq!(e.len(), 2);
        assert_eq!(e[0], "`z` is not a parameter of `f`");
        assert!(e[1].starts_with("`n` cannot be differentiated"), "{}", e[1]);
    }

    #[test]
    fn refused_signatures_report_everything() {
        let e = sig(
            "const unsafe fn f<T>(x: T, (a, b): (f64, f64), y: &mut f64) { x }",
            None,
        )
        .unwrap_err();
        let all = e.join("\n");
        for want in [
            "`const fn` cannot be #[differentiable]",
            "`unsafe fn` cannot be #[differentiable]",
            "generic functions cannot be #[differentiable]",
            "patterns in parameters are not supported",
            "mutable references (`&mut`) are not supported",
            "must return `f64`",
        ] {
            assert!(all.contains(want), "missing {want:?} in\n{all}");
        }
        let e = sig("async fn f(&self) -> f64 { 1.0 }", None)
            .unwrap_err()
            .join("\n");
        assert!(
            e.contains("`async fn`") && e.contains("through its `impl` block"),
            "{e}"
        );
    }

    #[test]
    fn refused_outputs() {
        for (ret, want) in [
            ("usize", "not `usize` (it has no derivative)"),
            ("&Array1<f64>", "a view or a reference"),
            ("(f64, bool)", "not `bool`"),
            ("Vec<f64>", "not a `Vec` or a slice"),
        ] {
            let e = sig(&format!("fn f(x: f64) -> {ret} {{ x }}"), None).unwrap_err();
            assert!(e[0].contains(want), "{ret}: {}", e[0]);
        }
        let e = sig("fn f(p: (f64, usize)) -> f64 { 1.0 }", None).unwrap_err();
        assert!(e[0].contains("tuples of `f64`"));
        let e = sig("fn f(p: &f64) -> f64 { 1.0 }", None).unwrap_err();
        assert!(e[0].contains("take the value"));
    }
}

#[cfg(test)]
mod lowering_tests {
    use crate::lower::testutil::*;
    use ad_core_ir::driver::{differentiate, Options};

    #[test]
    fn wrt_subset_differentiates() {
        let l = try_lower_wrt(
            "fn f(x: f64, w: &Array1<f64>, n: usize) -> f64 { x * w.sum() + n as f64 }",
            Some(&["w"]),
        )
        .unwrap();
        let d = differentiate(
            &l.program,
            &l.name,
            &[false, true, false],
            &Options::default(),
        )
        .unwrap();
        let lin_t = d.program.func(&d.names.lin_t).unwrap();
        assert_eq!(lin_t.lin_params.len(), 1);
    }

    #[test]
    fn loop_lowering_shape() {
        // `for i in a..b` is a counted loop of max(b - a, 0) iterations with
        // i = k + a; the assigned variable is the loop state. (`usize`: an
        // end past i64::MAX after a small start counts as i64::MAX.)
        let l = lowered(
            "fn f(x: f64, a: i64, b: i64) -> f64 { let mut s = x; for i in a..b { s = s * x; } s }",
        );
        let text = ad_core_ir::pretty::func_to_string(l.program.func("f").unwrap());
        assert!(text.contains("sub b_2, a_1"), "{text}");
        assert!(text.contains("max sub_3, 0"), "{text}");
        assert!(
            text.contains("loop max_4 (s_6: f64 = x_0) |k_5: i64|"),
            "{text}"
        );
        assert!(text.contains("add a_1, k_5"), "{text}");
        let l = lowered("fn f(x: f64, a: usize, b: usize) -> f64 { let mut s = x; for i in a..b { s = s * x; } s }");
        let text = ad_core_ir::pretty::func_to_string(l.program.func("f").unwrap());
        assert!(text.contains("lt b_2, 0"), "{text}");
        assert!(text.contains("select and_"), "{text}");
        assert!(text.contains("9223372036854775807"), "{text}");
    }
}
