//! `#[cfg]` and other attributes inside a `#[differentiable]` body.
//!
//! rustc hands an attribute macro its item before removing `#[cfg]`-disabled
//! statements, and a proc macro cannot evaluate a `cfg` predicate. So the
//! companions are generated once per assignment of truth values to the
//! body's distinct predicates, each from the body with exactly the statements
//! rustc keeps under that assignment, and each gated by
//! `#[cfg(all(P1, not(P2), ..))]`: rustc compiles exactly the variant that
//! matches the build, and the companions see the statements `f` sees.
//!
//! ```text
//! fn f(x: f64) -> f64 { let mut y = x; #[cfg(test)] { y = y * 2.0; } y }
//! // becomes
//! #[cfg(all(test))]      fn f_jvp(..) { /* from: let mut y = x; { y = y * 2.0; } y */ }
//! #[cfg(all(not(test)))] fn f_jvp(..) { /* from: let mut y = x; y */ }
//! ```
//!
//! `#[cfg_attr(P, cfg(Q))]` counts as `#[cfg(any(not(P), Q))]`; lint and tool
//! attributes (`allow`, `warn`, `deny`, `forbid`, `expect`, `rustfmt::skip`,
//! `clippy::..`) have no run-time meaning and are kept in `f` and dropped from
//! the companions; any other attribute inside the body is refused by name.
//! The function's own `#[cfg]`/`#[cfg_attr]` attributes gate the companions
//! too.

use proc_macro2::TokenStream;
use quote::{quote, ToTokens};
use syn::spanned::Spanned;
use syn::visit_mut::VisitMut;

/// At most this many distinct predicates in one body (2^N variants).
pub const MAX_PREDICATES: usize = 4;

/// One variant: the body as rustc sees it under `cond`.
pub struct Variant {
    /// The `cfg` predicate under which this variant is the real one (`None`:
    /// always).
    pub cond: Option<TokenStream>,
    /// The function with the statements rustc keeps under `cond`, and no
    /// attributes inside its body.
    pub func: syn::ItemFn,
}

/// A condition on a statement: kept iff the formula holds.
#[derive(Clone)]
enum Formula {
    /// The predicate with this index is true.
    Pred(usize),
    /// Negation.
    Not(Box<Formula>),
    /// At least one holds.
    Any(Vec<Formula>),
}

impl Formula {
    fn eval(&self, truth: &[bool]) -> bool {
        match self {
            Formula::Pred(k) => truth[*k],
            Formula::Not(f) => !f.eval(truth),
            Formula::Any(fs) => fs.iter().any(|f| f.eval(truth)),
        }
    }
}

/// Reads the attributes of the body: predicates (textual, `not(..)` peeled)
/// and the errors for attributes that are refused.
#[derive(Default)]
struct Collect {
    preds: Vec<TokenStream>,
    errors: Vec<syn::Error>,
}

impl Collect {
    /// The formula of `cfg(<tokens>)`.
    fn pred(&mut self, tokens: &TokenStream) -> Formula {
        if let Ok(syn::Meta::List(l)) = syn::parse2::<syn::Meta>(tokens.clone()) {
            if l.path.is_ident("not") {
                return Formula::Not(Box::new(self.pred(&l.tokens)));
            }
        }
        let key = tokens.to_string();
        let k = match self.preds.iter().position(|p| p.to_string() == key) {
            Some(k) => k,
            None => {
                self.preds.push(tokens.clone());
                self.preds.len() - 1
            }
        };
        Formula::Pred(k)
    }

    /// The conditions an attribute puts on its statement (empty: none), or
    /// an error for an attribute that is not allowed.
    fn attr(&mut self, a: &syn::Meta, out: &mut Vec<Formula>) {
        let path = a.path();
        if path.is_ident("cfg") {
            match a {
                syn::Meta::List(l) => out.push(self.pred(&l.tokens)),
                _ => self.errors.push(syn::Error::new(
                    a.span(),
                    "`#[cfg]` needs a predicate: `#[cfg(test)]`",
                )),
            }
        } else if path.is_ident("cfg_attr") {
            let parsed = match a {
                syn::Meta::List(l) => l.parse_args_with(
                    syn::punctuated::Punctuated::<syn::Meta, syn::Token![,]>::parse_terminated,
                ),
                _ => Err(syn::Error::new(
                    a.span(),
                    "expected `#[cfg_attr(predicate, attribute)]`",
                )),
            };
            match parsed {
                Ok(metas) if metas.len() >= 2 => {
                    let mut metas = metas.into_iter();
                    let p = metas.next().expect("two items");
                    let cond = self.pred(&p.to_token_stream());
                    for m in metas {
                        // cfg_attr(P, A): A's conditions apply where P holds
                        let mut inner = vec![];
                        self.attr(&m, &mut inner);
                        for f in inner {
                            out.push(Formula::Any(vec![Formula::Not(Box::new(cond.clone())), f]));
                        }
                    }
                }
                Ok(_) => self.errors.push(syn::Error::new(
                    a.span(),
                    "expected `#[cfg_attr(predicate, attribute)]`",
                )),
                Err(e) => self.errors.push(e),
            }
        } else if !inert(path) {
            let name = path.to_token_stream().to_string().replace(' ', "");
            self.errors.push(syn::Error::new(
                a.span(),
                format!("the attribute `#[{name}]` is not supported inside #[differentiable] functions (`#[cfg]`, `#[cfg_attr]` and lint attributes such as `#[allow(..)]` are)"),
            ));
        }
    }

    fn attrs(&mut self, attrs: &[syn::Attribute]) -> Vec<Formula> {
        let mut out = vec![];
        for a in attrs {
            self.attr(&a.meta, &mut out);
        }
        out
    }
}

/// Lint and tool attributes: no run-time meaning.
fn inert(path: &syn::Path) -> bool {
    let first = path.segments.first().map(|s| s.ident.to_string());
    matches!(
        first.as_deref(),
        Some("allow" | "warn" | "deny" | "forbid" | "expect" | "rustfmt" | "clippy" | "doc")
    )
}

/// The attributes of a statement (outer attributes of its expression, for an
/// expression statement).
fn stmt_attrs(s: &mut syn::Stmt) -> Option<&mut Vec<syn::Attribute>> {
    match s {
        syn::Stmt::Local(l) => Some(&mut l.attrs),
        syn::Stmt::Macro(m) => Some(&mut m.attrs),
        syn::Stmt::Expr(e, _) => expr_attrs(e),
        syn::Stmt::Item(_) => None,
    }
}

/// The outer attributes of an expression.
fn expr_attrs(e: &mut syn::Expr) -> Option<&mut Vec<syn::Attribute>> {
    use syn::Expr as E;
    Some(match e {
        E::Array(x) => &mut x.attrs,
        E::Assign(x) => &mut x.attrs,
        E::Async(x) => &mut x.attrs,
        E::Await(x) => &mut x.attrs,
        E::Binary(x) => &mut x.attrs,
        E::Block(x) => &mut x.attrs,
        E::Break(x) => &mut x.attrs,
        E::Call(x) => &mut x.attrs,
        E::Cast(x) => &mut x.attrs,
        E::Closure(x) => &mut x.attrs,
        E::Const(x) => &mut x.attrs,
        E::Continue(x) => &mut x.attrs,
        E::Field(x) => &mut x.attrs,
        E::ForLoop(x) => &mut x.attrs,
        E::Group(x) => &mut x.attrs,
        E::If(x) => &mut x.attrs,
        E::Index(x) => &mut x.attrs,
        E::Infer(x) => &mut x.attrs,
        E::Let(x) => &mut x.attrs,
        E::Lit(x) => &mut x.attrs,
        E::Loop(x) => &mut x.attrs,
        E::Macro(x) => &mut x.attrs,
        E::Match(x) => &mut x.attrs,
        E::MethodCall(x) => &mut x.attrs,
        E::Paren(x) => &mut x.attrs,
        E::Path(x) => &mut x.attrs,
        E::Range(x) => &mut x.attrs,
        E::RawAddr(x) => &mut x.attrs,
        E::Reference(x) => &mut x.attrs,
        E::Repeat(x) => &mut x.attrs,
        E::Return(x) => &mut x.attrs,
        E::Struct(x) => &mut x.attrs,
        E::Try(x) => &mut x.attrs,
        E::TryBlock(x) => &mut x.attrs,
        E::Tuple(x) => &mut x.attrs,
        E::Unary(x) => &mut x.attrs,
        E::Unsafe(x) => &mut x.attrs,
        E::While(x) => &mut x.attrs,
        E::Yield(x) => &mut x.attrs,
        _ => return None,
    })
}

/// Pass 1: collects the predicates of every statement; refuses attributes
/// elsewhere inside the body (on non-statement expressions) unless inert.
struct Scan<'a>(&'a mut Collect);

impl VisitMut for Scan<'_> {
    fn visit_stmt_mut(&mut self, s: &mut syn::Stmt) {
        if let Some(attrs) = stmt_attrs(s) {
            let attrs = std::mem::take(attrs);
            self.0.attrs(&attrs);
            // visit the rest of the statement without its own attributes
            syn::visit_mut::visit_stmt_mut(self, s);
            if let Some(a) = stmt_attrs(s) {
                *a = attrs;
            }
        } else {
            syn::visit_mut::visit_stmt_mut(self, s);
        }
    }

    fn visit_expr_mut(&mut self, e: &mut syn::Expr) {
        if let Some(attrs) = expr_attrs(e) {
            for a in attrs.iter() {
                if a.path().is_ident("cfg") || a.path().is_ident("cfg_attr") {
                    self.0.errors.push(syn::Error::new(
                        a.span(),
                        "`#[cfg]` inside a #[differentiable] function is supported on statements only",
                    ));
                } else {
                    let mut ignored = vec![];
                    self.0.attr(&a.meta, &mut ignored);
                }
            }
        }
        syn::visit_mut::visit_expr_mut(self, e);
    }

    fn visit_item_mut(&mut self, _: &mut syn::Item) {
        // items inside the body are refused by the lowering
    }
}

/// Pass 2: keeps the statements whose conditions hold under `truth` and
/// removes every attribute inside the body.
struct Strip<'a> {
    collect: &'a mut Collect,
    truth: &'a [bool],
}

impl VisitMut for Strip<'_> {
    fn visit_block_mut(&mut self, b: &mut syn::Block) {
        let stmts = std::mem::take(&mut b.stmts);
        for mut s in stmts {
            let keep = match stmt_attrs(&mut s) {
                Some(attrs) => {
                    let fs = self.collect.attrs(attrs);
                    attrs.clear();
                    fs.iter().all(|f| f.eval(self.truth))
                }
                None => true,
            };
            if keep {
                self.visit_stmt_mut(&mut s);
                b.stmts.push(s);
            }
        }
    }

    fn visit_expr_mut(&mut self, e: &mut syn::Expr) {
        if let Some(attrs) = expr_attrs(e) {
            attrs.clear();
        }
        syn::visit_mut::visit_expr_mut(self, e);
    }

    fn visit_item_mut(&mut self, _: &mut syn::Item) {}
}

/// The predicates of the function's own `#[cfg]` attributes, as one
/// condition (`None`: none).
pub(crate) fn own_cond(func: &syn::ItemFn) -> Option<TokenStream> {
    let conds: Vec<TokenStream> = func
        .attrs
        .iter()
        .filter_map(|a| match &a.meta {
            syn::Meta::List(l) if l.path.is_ident("cfg") => Some(l.tokens.clone()),
            syn::Meta::List(l) if l.path.is_ident("cfg_attr") => {
                let m = l
                    .parse_args_with(
                        syn::punctuated::Punctuated::<syn::Meta, syn::Token![,]>::parse_terminated,
                    )
                    .ok()?;
                let mut it = m.into_iter();
                let p = it.next()?;
                let cfgs: Vec<TokenStream> = it
                    .filter_map(|m| match m {
                        syn::Meta::List(l) if l.path.is_ident("cfg") => Some(l.tokens),
                        _ => None,
                    })
                    .collect();
                (!cfgs.is_empty()).then(|| quote!(any(not(#p), all(#(#cfgs),*))))
            }
            _ => None,
        })
        .collect();
    (!conds.is_empty()).then(|| quote!(all(#(#conds),*)))
}

/// The variants of `func` (one, with no condition, when its body has no
/// `#[cfg]` and the function itself none), or the errors for refused
/// attributes.
pub fn variants(func: &syn::ItemFn) -> Result<Vec<Variant>, Vec<syn::Error>> {
    let mut collect = Collect::default();
    let mut scanned = func.clone();
    Scan(&mut collect).visit_block_mut(&mut scanned.block);
    if !collect.errors.is_empty() {
        return Err(collect.errors);
    }
    let k = collect.preds.len();
    if k > MAX_PREDICATES {
        return Err(vec![syn::Error::new(
            func.sig.ident.span(),
            format!(
                "this function's body has {k} distinct `#[cfg]` predicates; #[differentiable] supports at most {MAX_PREDICATES} (it generates the derivatives once for each combination): move the configuration-dependent parts into separate #[differentiable] functions"
            ),
        )]);
    }
    let own = own_cond(func);
    let preds = collect.preds.clone();
    let mut out = vec![];
    for bits in 0..(1usize << k) {
        let truth: Vec<bool> = (0..k).map(|i| bits & (1 << i) != 0).collect();
        let mut f = func.clone();
        Strip {
            collect: &mut collect,
            truth: &truth,
        }
        .visit_block_mut(&mut f.block);
        let lits: Vec<TokenStream> = preds
            .iter()
            .zip(&truth)
            .map(|(p, t)| if *t { quote!(#p) } else { quote!(not(#p)) })
            .chain(own.clone())
            .collect();
        let cond = (!lits.is_empty()).then(|| quote!(all(#(#lits),*)));
        out.push(Variant { cond, func: f });
    }
    Ok(out)
}

/// `tokens` (items) with `#[cfg(cond)]` on each item.
pub fn gate(tokens: TokenStream, cond: &TokenStream) -> TokenStream {
    match syn::parse2::<syn::File>(tokens.clone()) {
        Ok(file) => {
            let items = file.items.iter();
            quote!(#( #[cfg(#cond)] #items )*)
        }
        // not items (cannot happen for generated code): gate nothing
        Err(_) => tokens,
    }
}

/// Evaluates a `cfg` predicate given which plain options are set (tests: a
/// proc macro cannot know the build's configuration, its tests can fix one).
#[cfg(test)]
pub(crate) fn eval(pred: &TokenStream, is_set: &dyn Fn(&str) -> bool) -> bool {
    match syn::parse2::<syn::Meta>(pred.clone()) {
        Ok(syn::Meta::Path(p)) => is_set(&p.to_token_stream().to_string()),
        Ok(syn::Meta::List(l)) => {
            let args = l
                .parse_args_with(
                    syn::punctuated::Punctuated::<syn::Meta, syn::Token![,]>::parse_terminated,
                )
                .unwrap_or_default();
            let mut vals = args.iter().map(|m| eval(&m.to_token_stream(), is_set));
            match l.path.get_ident().map(|i| i.to_string()).as_deref() {
                Some("all") => vals.all(|v| v),
                Some("any") => vals.any(|v| v),
                Some("not") => !vals.next().unwrap_or(false),
                _ => false,
            }
        }
        Ok(syn::Meta::NameValue(nv)) => is_set(&nv.to_token_stream().to_string()),
        Err(_) => false,
    }
}

/// The variant rustc compiles under the configuration `is_set`.
#[cfg(test)]
pub(crate) fn active(variants: Vec<Variant>, is_set: &dyn Fn(&str) -> bool) -> Option<Variant> {
    variants
        .into_iter()
        .find(|v| v.cond.as_ref().is_none_or(|c| eval(c, is_set)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(src: &str) -> syn::ItemFn {
        syn::parse_str(src).expect("a function")
    }

    #[test]
    fn one_variant_per_assignment_and_the_active_one_strips() {
        let f = parse(
            "fn f(x: f64) -> f64 { let y = x; #[cfg(test)] let y = 2.0 * y; #[cfg(not(debug_assertions))] let y = y + 1.0; #[allow(unused)] let z = y; z }",
        );
        let vs = variants(&f).expect("accepted");
        assert_eq!(vs.len(), 4);
        let on = |set: &'static [&'static str]| move |o: &str| set.contains(&o);
        let v = active(variants(&f).unwrap(), &on(&["debug_assertions"])).expect("one active");
        let body = v.func.block.to_token_stream().to_string();
        assert!(!body.contains("2.0"), "{body}");
        assert!(!body.contains("1.0"), "{body}");
        assert!(!body.contains("allow"), "{body}");
        let v = active(variants(&f).unwrap(), &on(&["test"])).expect("one active");
        let body = v.func.block.to_token_stream().to_string();
        assert!(body.contains("2.0") && body.contains("1.0"), "{body}");
    }

    #[test]
    fn cfg_attr_and_refusals() {
        let f = parse(
            "fn f(x: f64) -> f64 { let y = x; #[cfg_attr(test, cfg(any()))] let y = 3.0 * y; y }",
        );
        let on_test = |o: &str| o == "test";
        let v = active(variants(&f).unwrap(), &on_test).unwrap();
        assert!(!v.func.block.to_token_stream().to_string().contains("3.0"));
        let v = active(variants(&f).unwrap(), &|_: &str| false).unwrap();
        assert!(v.func.block.to_token_stream().to_string().contains("3.0"));
        let bad = parse("fn f(x: f64) -> f64 { #[inline] let y = x; y }");
        let e = variants(&bad).err().expect("refused");
        assert!(
            e[0].to_string().contains("`#[inline]` is not supported"),
            "{}",
            e[0]
        );
    }
}
