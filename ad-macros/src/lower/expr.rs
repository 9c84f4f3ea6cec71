//! Expressions: the dispatcher over `syn::Expr`, literals, paths (locals and
//! `f64` constants), tuples and tuple fields, references, and the refusals
//! of every construct outside the supported subset.

use super::ctx::{or_poison, Lowerer};
use super::errors;
use super::types::{Elem, IntTy};
use super::val::Val;
use ad_core_ir::ir::Atom;

impl Lowerer<'_> {
    /// Lowers an expression; a failed expression gives [`Val::Poison`].
    pub fn lower_expr(&mut self, e: &syn::Expr) -> Val {
        or_poison(self.expr(e))
    }

    /// Lowers an expression; `None` if it failed (error recorded) or an
    /// operand failed.
    pub fn expr(&mut self, e: &syn::Expr) -> Option<Val> {
        use syn::Expr as E;
        let v = match e {
            E::Lit(l) => self.lit(&l.lit),
            E::Path(p) => self.path_value(p),
            E::Paren(p) => self.expr(&p.expr),
            E::Group(g) => self.expr(&g.expr),
            E::Unary(u) => self.unary(u),
            E::Binary(b) => self.binary(b),
            E::Assign(a) => self.assign(a),
            E::Cast(c) => self.cast(c),
            E::Reference(r) => {
                if r.mutability.is_some() {
                    return self.fail(e, errors::MUT_REF);
                }
                self.expr(&r.expr)
            }
            E::Tuple(t) => {
                if t.elems.is_empty() {
                    return Some(Val::Unit);
                }
                let vs: Vec<Val> = t.elems.iter().map(|x| self.lower_expr(x)).collect();
                Some(Val::Tuple(vs))
            }
            E::Field(f) => self.field(f),
            E::Index(i) => self.index(i),
            E::MethodCall(m) => self.method_call(m),
            E::Call(c) => self.call(c, None),
            E::Block(b) => {
                if let Some(l) = &b.label {
                    return self.fail(l, errors::LABEL);
                }
                self.lower_block(&b.block)
            }
            E::Unsafe(u) => self.fail(&u.unsafe_token, errors::UNSAFE),
            E::If(i) => self.lower_if(i),
            E::ForLoop(f) => self.lower_for(f),
            E::While(w) => self.lower_while(w),
            E::Loop(l) => self.lower_loop(l),
            E::Break(b) if b.expr.is_some() => self.fail(b, errors::BREAK_VALUE),
            E::Break(b) => self.fail(b, errors::BREAK),
            E::Continue(c) => self.fail(c, errors::CONTINUE),
            E::Return(r) => self.fail(&r.return_token, errors::EARLY_RETURN),
            E::Match(m) => match super::desugar::match_to_if(m, self.spans.len()) {
                Ok(e) => self.expr(&e),
                Err(err) => {
                    self.errors.push(err);
                    None
                }
            },
            E::Macro(m) => match self.array_macro(m) {
                Some(v) => v,
                None => self.fail(&m.mac, errors::macro_refused(&m.mac, self.asserts_on_entry)),
            },
            E::Closure(c) => {
                if let Some(a) = &c.asyncness {
                    return self.fail(a, errors::ASYNC);
                }
                Some(Val::Closure(Box::new(super::val::ClosureVal {
                    syntax: c.clone(),
                    env: self.env.clone(),
                })))
            }
            E::Struct(s) => self.fail(s, errors::STRUCT_LIT),
            E::Range(r) => self.fail(r, errors::RANGE_VALUE),
            E::Let(l) => self.fail(l, errors::LET_EXPR),
            E::Try(t) => self.fail(t, errors::TRY),
            E::Array(_) | E::Repeat(_) => self.fixed_array(e),
            E::Async(a) => self.fail(a, errors::ASYNC),
            E::Await(a) => self.fail(a, errors::ASYNC),
            other => self.fail(other, errors::UNSUPPORTED_EXPR),
        };
        v.filter(|v| !matches!(v, Val::Poison))
    }

    /// A literal.
    pub fn lit(&mut self, l: &syn::Lit) -> Option<Val> {
        match l {
            syn::Lit::Float(f) => match f.suffix() {
                "" | "f64" => match f.base10_parse::<f64>() {
                    Ok(x) => Some(Val::f64(x)),
                    Err(e) => self.fail(l, e),
                },
                _ => self.fail(l, errors::F32),
            },
            syn::Lit::Int(i) => match i.suffix() {
                "f64" => match i.base10_parse::<f64>() {
                    Ok(x) => Some(Val::f64(x)),
                    Err(e) => self.fail(l, e),
                },
                "f32" => self.fail(l, errors::F32),
                s => {
                    let ty = if s.is_empty() {
                        IntTy::Lit
                    } else {
                        match IntTy::from_name(s) {
                            Some(t) => t,
                            None => return self.fail(l, format!("`{s}` is not supported: use `i64`, `usize` or another integer type of at most 64 bits")),
                        }
                    };
                    match i.base10_parse::<i64>() {
                        Ok(x) => Some(Val::Scalar(Atom::I64(x), Elem::Int(ty))),
                        Err(_) => self.fail(
                            l,
                            "integer literal out of range: the IR computes with `i64`",
                        ),
                    }
                }
            },
            syn::Lit::Bool(b) => Some(Val::Scalar(Atom::Bool(b.value), Elem::Bool)),
            other => self.fail(other, errors::OTHER_LIT),
        }
    }

    /// A path in value position: a local variable or a known constant.
    fn path_value(&mut self, p: &syn::ExprPath) -> Option<Val> {
        if p.qself.is_none() {
            if let Some(id) = p.path.get_ident() {
                if let Some(b) = self.env.lookup(&id.to_string()) {
                    return match &self.env.get(b).val {
                        Val::Poison => None,
                        v => Some(v.clone()),
                    };
                }
            }
        }
        let segs: Vec<String> = p
            .path
            .segments
            .iter()
            .map(|s| s.ident.to_string())
            .collect();
        if let Some(v) = constant(&segs) {
            return Some(v);
        }
        // `Mode::Fast`: a variant of an enum without fields of this crate.
        if let [.., e, variant] = segs.as_slice() {
            if let Some(vs) = crate::crate_fns::lookup_enum(e) {
                return match vs.iter().find(|(n, _)| n == variant) {
                    Some((_, d)) => Some(Val::Scalar(Atom::I64(*d), Elem::Int(IntTy::I64))),
                    None => self.fail(p, format!("no variant `{variant}` in the enum `{e}`")),
                };
            }
        }
        // `EPS`, `consts::N`: a `const` or `static` item of the crate.
        if let Some(ty) =
            super::calls::in_crate_name(&p.path).and_then(|n| crate::crate_fns::lookup_const(&n))
        {
            return self.const_read(p, &ty);
        }
        if segs.len() == 1 {
            let name = &segs[0];
            if name
                .chars()
                .all(|c| c.is_uppercase() || c.is_ascii_digit() || c == '_')
            {
                return self.fail(p, errors::const_refused(name));
            }
            return self.fail(p, format!("cannot find value `{name}` in this scope"));
        }
        let shown = segs.join("::");
        self.fail(p, errors::const_refused(&shown))
    }

    /// `t.0`.
    fn field(&mut self, f: &syn::ExprField) -> Option<Val> {
        let base = self.expr(&f.base)?;
        match (&f.member, &base) {
            (syn::Member::Unnamed(i), Val::Tuple(vs)) => match vs.get(i.index as usize) {
                Some(Val::Poison) => None,
                Some(v) => Some(v.clone()),
                None => self.fail(f, format!("no field `{}` on type `{}`", i.index, base.ty())),
            },
            (syn::Member::Named(n), _) => self.fail(
                &f.member,
                format!("no field `{n}` on type `{}`: structs are not supported in #[differentiable] functions, pass the fields as parameters", base.ty()),
            ),
            (syn::Member::Unnamed(i), _) => {
                self.fail(&f.member, format!("no field `{}` on type `{}`", i.index, base.ty()))
            }
        }
    }
}

/// The value of a known constant path (`f64::consts::PI`, `f64::INFINITY`,
/// `i64::MAX`, ...), with or without a `std::`/`core::` prefix.
pub fn constant(segs: &[String]) -> Option<Val> {
    use std::f64::consts as c;
    let s: Vec<&str> = segs.iter().map(String::as_str).collect();
    let s: &[&str] = match s.as_slice() {
        ["std" | "core", rest @ ..] => rest,
        rest => rest,
    };
    let f = |x: f64| Some(Val::f64(x));
    match s {
        ["f64", "consts", name] | ["consts", name] => match *name {
            "PI" => f(c::PI),
            "TAU" => f(c::TAU),
            "E" => f(c::E),
            "LN_2" => f(c::LN_2),
            "LN_10" => f(c::LN_10),
            "LOG2_E" => f(c::LOG2_E),
            "LOG10_E" => f(c::LOG10_E),
            "LOG2_10" => f(c::LOG2_10),
            "LOG10_2" => f(c::LOG10_2),
            "SQRT_2" => f(c::SQRT_2),
            "FRAC_1_SQRT_2" => f(c::FRAC_1_SQRT_2),
            "FRAC_PI_2" => f(c::FRAC_PI_2),
            "FRAC_PI_3" => f(c::FRAC_PI_3),
            "FRAC_PI_4" => f(c::FRAC_PI_4),
            "FRAC_PI_6" => f(c::FRAC_PI_6),
            "FRAC_PI_8" => f(c::FRAC_PI_8),
            "FRAC_1_PI" => f(c::FRAC_1_PI),
            "FRAC_2_PI" => f(c::FRAC_2_PI),
            "FRAC_2_SQRT_PI" => f(c::FRAC_2_SQRT_PI),
            _ => None,
        },
        ["f64", name] => match *name {
            "INFINITY" => f(f64::INFINITY),
            "NEG_INFINITY" => f(f64::NEG_INFINITY),
            "NAN" => f(f64::NAN),
            "MAX" => f(f64::MAX),
            "MIN" => f(f64::MIN),
            "MIN_POSITIVE" => f(f64::MIN_POSITIVE),
            "EPSILON" => f(f64::EPSILON),
            _ => None,
        },
        [ty, bound @ ("MAX" | "MIN")] => {
            let t = IntTy::from_name(ty)?;
            let v: i64 = match (t, *bound) {
                (IntTy::I64, "MAX") => i64::MAX,
                (IntTy::I64, _) => i64::MIN,
                (IntTy::I32, "MAX") => i32::MAX.into(),
                (IntTy::I32, _) => i32::MIN.into(),
                (IntTy::I16, "MAX") => i16::MAX.into(),
                (IntTy::I16, _) => i16::MIN.into(),
                (IntTy::I8, "MAX") => i8::MAX.into(),
                (IntTy::I8, _) => i8::MIN.into(),
                (IntTy::U32, "MAX") => u32::MAX.into(),
                (IntTy::U16, "MAX") => u16::MAX.into(),
                (IntTy::U8, "MAX") => u8::MAX.into(),
                (t, "MIN") if t.unsigned() => 0,
                _ => return None,
            };
            Some(Val::Scalar(Atom::I64(v), Elem::Int(t)))
        }
        _ => None,
    }
}

/// The expression with parentheses and invisible groups removed.
pub fn strip(e: &syn::Expr) -> &syn::Expr {
    match e {
        syn::Expr::Paren(p) => strip(&p.expr),
        syn::Expr::Group(g) => strip(&g.expr),
        e => e,
    }
}

#[cfg(test)]
mod tests {
    use crate::lower::testutil::*;

    #[test]
    fn literals_and_constants() {
        both! {
            fn f(x: f64) -> f64 {
                let a = 1e-3 + 2.5f64 + 3f64 + 0x10 as f64 + 1_000usize as f64;
                let b = std::f64::consts::PI + std::f64::consts::E + core::f64::consts::LN_2 + std::f64::consts::FRAC_PI_4;
                let c = if x > f64::NEG_INFINITY && x < f64::INFINITY { f64::EPSILON } else { f64::MAX };
                let d = (i64::MAX - i64::MAX + i16::MIN as i64 - u8::MIN as i64) as f64;
                x * (a + b + c) + d + if true { 1.0 } else { 0.0 }
            }
        }
        for x in [0.3, -2.0] {
            check(SRC, &[fv(x)], &[fv(f(x))]);
        }
    }

    #[test]
    fn references_and_derefs_are_identities() {
        both! {
            fn f(x: f64) -> f64 {
                let r = &x;
                let y = *r * 2.0;
                let t = &(y, x);
                t.0 + (*t).1
            }
        }
        check(SRC, &[fv(0.7)], &[fv(f(0.7))]);
    }

    #[test]
    fn refusals() {
        refuses(
            "fn f(x: f64) -> f64 { let y = &mut 2.0; x }",
            "mutable references (`&mut`) are not supported",
        );
        refuses(
            "fn f(x: f64) -> f64 { unsafe { x } }",
            "`unsafe` blocks are not supported",
        );
        refuses(
            "fn f(x: f64) -> f64 { let p = P { x }; x }",
            "struct literals are not supported",
        );
        refuses(
            "fn f(x: f64) -> f64 { let r = 0..3; x }",
            "ranges are only supported in `for i in a..b` loops and iterator chains",
        );
        refuses(
            "fn f(x: f64) -> f64 { let y = g(x)?; y }",
            "the `?` operator is not supported",
        );
        refuses(
            "fn f(x: f64) -> f64 { let a = [[x, x], [x, 1.0]]; x }",
            "arrays of arrays are not supported",
        );
        refuses(
            "fn f(x: f64) -> f64 { let s = \"a\"; x }",
            "only numeric and boolean literals are supported",
        );
        refuses("fn f(x: f64) -> f64 { x * SCALE }", "`SCALE` is not supported: #[differentiable] functions can only read their parameters, their local variables, std constants");
        refuses(
            "fn f(x: f64) -> f64 { x * std::f64::consts::TAUX }",
            "`std::f64::consts::TAUX` is not supported",
        );
        refuses(
            "fn f(x: f64) -> f64 { x * y }",
            "cannot find value `y` in this scope",
        );
        refuses(
            "fn f(x: f64) -> f64 { x.field }",
            "no field `field` on type `f64`: structs are not supported",
        );
        refuses(
            "fn f(p: (f64, f64)) -> f64 { p.2 }",
            "no field `2` on type `(f64, f64)`",
        );
        refuses(
            "fn f(x: f64) -> f64 { 2.5f32 as f64 }",
            "`f32` is not supported",
        );
        refuses(
            "fn f(x: f64) -> f64 { async { x }; x }",
            "`async` and `.await` are not supported",
        );
        refuses(
            "fn f(x: f64) -> f64 { x * 99999999999999999999 as f64 }",
            "integer literal out of range",
        );
    }

    #[test]
    fn every_error_of_a_function_is_reported() {
        let es = errors(
            "fn f(x: f64, n: usize) -> f64 {
            let a = x + n;
            while let 1 = n { }
            println!(\"{}\", x);
            let b = x.frobnicate();
            let c = match (n, n) { (0, _) => 1.0, _ => 2.0 };
            x
        }",
        );
        assert_eq!(es.len(), 5, "{es:#?}");
    }

    #[test]
    fn no_panic_on_odd_input() {
        // Odd but parseable input must give errors, never a panic.
        for src in [
            "fn f(x: f64) -> f64 { x.0 }",
            "fn f(x: f64) -> f64 { let (a, ..) = (x, x); a }",
            "fn f(x: f64) -> f64 { for i in 0..3 { i } x }",
            "fn f(x: f64) -> f64 { x[0] }",
            "fn f(x: f64) -> f64 { Array1::zeros(()).sum() }",
            "fn f(x: f64) -> f64 { Array1::from_shape_fn(3, x).sum() }",
            "fn f(x: f64) -> f64 { (0..3).map(|i| i).sum::<f64>() }",
            "fn f(x: f64) -> f64 { ().0 }",
            "fn f(x: f64) -> f64 { let mut t = (x, x); t.5 = 1.0; x }",
            "fn f(x: f64) -> f64 { x.sin; x }",
            "fn f(x: f64, n: usize) -> f64 { n += 1; x }",
            "fn f(x: f64) -> f64 { let a = 1 + 2u8 + 3usize; x }",
            "fn f(x: f64) -> f64 { <f64 as Foo>::bar(x) }",
            "fn f(x: f64) -> f64 { (|y| y)(x) }",
            "fn f(x: f64) -> f64 { x.iter().sum() }",
            "fn f(w: &Array1<f64>) -> f64 { w.iter().zip(3).sum::<f64>() }",
            "fn f(w: &Array1<f64>) -> f64 { w.iter().enumerate().enumerate().count() as f64 }",
            "fn f(w: &Array2<f64>) -> f64 { w.row(0.0).sum() }",
            "fn f(w: &Array1<f64>) -> f64 { w[[0, 1]] }",
            "fn f(w: &Array1<f64>) -> f64 { let mut v = w.to_owned(); v[0] = (1.0, 2.0); v.sum() }",
            "fn f(w: &Array1<f64>) -> f64 { let mut v = w.to_owned(); v[[0, 1]] += 1.0; v.sum() }",
            "fn f(x: f64) -> f64 { let a = 1u128; x }",
        ] {
            assert!(try_lower(src).is_err(), "{src}");
        }
    }
}
