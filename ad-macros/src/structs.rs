//! Struct parameters: `fn loss(p: &Mlp, x: &Array2<f64>) -> f64` where
//! `Mlp` derives `linad::Differentiable`.
//!
//! The macro cannot see `Mlp`'s definition in its input, so it reads it
//! from the crate's source (`crate_fns::lookup_struct`, the same files it
//! reads callees' signatures from; `derive::field_kind` decides, as the
//! derive does, which fields have a derivative). The function is then
//! differentiated as a *flat* function with one parameter per field (nested
//! structs flattened too) and field reads replaced by those parameters,
//! and the public companions are thin wrappers that take and return the
//! struct's tangent type:
//!
//! ```text
//! #[differentiable]                       fn __linad_flat_loss(p__w: &Array2<f64>, p__b: &Array1<f64>,
//! fn loss(p: &Mlp, x: &Array1<f64>)           p__act: usize, x: &Array1<f64>) -> f64 { (p__w.dot(x) + p__b).sum() }
//!     -> f64 {                            // + its companions (wrt p__w, p__b, x)
//!     (p.w.dot(x) + &p.b).sum()           pub fn loss_vjp(p: &Mlp, x: &Array1<f64>, ct: f64) -> (f64, (MlpTangent, Array1<f64>)) {
//! }                                           let (y, (g0, g1, g2)) = __linad_flat_loss_vjp(&p.w, &p.b, p.act, x, ct);
//!                                             (y, (<<Mlp as Differentiable>::Tangent>::__linad_from_fields(g0, g1), g2))
//!                                         }
//! ```
//!
//! The struct is read only through its fields (`p.w`, `&p.w`,
//! `p.w.dot(..)`, `p.inner.b`) or destructured by `let` (`let Mlp { w, b,
//! .. } = p;` is `let w = &p.w; let b = &p.b;`, nested struct and tuple
//! patterns too) or through another name (`let l = &p.inner;` makes `l` stand
//! for `p.inner`); a struct parameter used whole otherwise (passed to a
//! plain function, mutated) or shadowed is refused. Struct outputs are struct
//! literals (see `OutputRewrite`).

use crate::attr::Args;
use crate::crate_fns;
use crate::derive::{field_kind, FieldKind};
use crate::emit::{allows, ct_ty, tangent_ty};
use crate::lower;
use crate::sig::{Param, Signature};
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;
use syn::visit::Visit;
use syn::visit_mut::VisitMut;

/// How deep structs may nest in one another.
const MAX_NESTING: usize = 8;

/// The name of the flat function of `f` is this prefix then `f`.
pub const FLAT_PREFIX: &str = "__linad_flat_";

/// The flat parameter types a parameter of type `ty` (as written, tokens as
/// text) becomes: itself, or the leaf types of a struct of this crate
/// (`None` if a struct's fields cannot be read).
pub fn flat_param_types(ty: &str) -> Option<Vec<String>> {
    let Some(leaves) = struct_leaves(ty, true) else {
        let t: syn::Type = syn::parse_str(ty).ok()?;
        let known = struct_name(&t).is_some_and(|(n, _, _)| crate_fns::lookup_struct(&n).is_some());
        // A struct of this crate whose fields cannot be read: unknown.
        return (!known).then(|| vec![ty.to_string()]);
    };
    Some(
        leaves
            .iter()
            .map(|l| l.flat_ty.to_token_stream().to_string())
            .collect(),
    )
}

/// The leaves of the struct type `ty` (as written, tokens as text; `&S`
/// too when `by_ref`), if it is a struct of this crate whose fields can be
/// read.
fn struct_leaves(ty: &str, by_ref: bool) -> Option<Vec<Leaf>> {
    let t: syn::Type = syn::parse_str(ty).ok()?;
    let (name, is_ref, st) = struct_name(&t)?;
    if is_ref && !by_ref {
        return None;
    }
    crate_fns::lookup_struct(&name)?;
    let mut leaves = vec![];
    let p = format_ident!("p");
    flatten(&p, st, quote!(#st), &[], &mut leaves, Span::call_site()).ok()?;
    Some(leaves)
}

/// One leaf of a struct output: its field chain, its owned type, and
/// whether it has a derivative (only those are returned by the flat
/// function).
pub struct OutputLeaf {
    /// The field names from the struct down.
    pub chain: Vec<String>,
    /// The leaf's owned type.
    pub ty: syn::Type,
    /// Has a derivative.
    pub diff: bool,
}

/// The leaves of a struct output of type `ty` (as written, tokens as
/// text), in field order; `None` if `ty` is not a struct of this crate or
/// its fields cannot be read.
pub fn output_leaves(ty: &str) -> Option<Vec<OutputLeaf>> {
    Some(
        struct_leaves(ty, false)?
            .into_iter()
            .map(|l| OutputLeaf {
                chain: l.chain.iter().map(|c| c.to_string()).collect(),
                ty: l.out_ty(),
                diff: l.diff,
            })
            .collect(),
    )
}

/// The return type of the flat function of a function returning `ty` (as
/// written): the tuple of a struct's leaves with a derivative (the one leaf
/// alone), or `ty`.
pub fn flat_output_type(ty: &str) -> String {
    let Some(leaves) = output_leaves(ty) else {
        return ty.to_string();
    };
    let tys: Vec<&syn::Type> = leaves.iter().filter(|l| l.diff).map(|l| &l.ty).collect();
    match tys.as_slice() {
        [one] => one.to_token_stream().to_string(),
        _ => quote!((#(#tys),*)).to_string(),
    }
}

/// A struct's fields as a tree down to the leaves the flat function takes.
enum Node {
    /// The flat parameter with this index among the struct's leaves.
    Leaf(usize),
    /// A (nested) struct: its type as the function can name it (the
    /// parameter's type, or `<Parent as Field<k>>::Primal` for a field, so
    /// that the field's type need not be in scope), and its fields.
    Struct(TokenStream, Vec<(syn::Ident, Node)>),
}

/// One leaf field of a struct parameter.
struct Leaf {
    /// The field names from the parameter down (`[inner, w]` for `p.inner.w`).
    chain: Vec<syn::Ident>,
    /// The flat parameter (`p__inner__w`).
    flat: syn::Ident,
    /// Its type (arrays and `Vec`s by reference).
    flat_ty: syn::Type,
    /// Its type, owned.
    ty: syn::Type,
    /// Has a derivative (not an integer or `#[linad(constant)]`).
    diff: bool,
    /// Passed by reference (an array or a `Vec`).
    by_ref: bool,
    /// A `Vec` (its shape is its length).
    is_vec: bool,
}

impl Leaf {
    /// The leaf's type in a flat function's *output*: its owned type, but
    /// a `Vec<T>` as `Array1<T>` (the IR's one-dimensional array; outputs
    /// are arrays), turned back into a `Vec` by the companions.
    fn out_ty(&self) -> syn::Type {
        if !self.is_vec {
            return self.ty.clone();
        }
        let syn::Type::Path(p) = &self.ty else {
            return self.ty.clone();
        };
        match p.path.segments.last().map(|s| &s.arguments) {
            Some(syn::PathArguments::AngleBracketed(a)) => {
                let args = &a.args;
                syn::parse_quote!(::linad::ndarray::Array1<#args>)
            }
            _ => self.ty.clone(),
        }
    }
}

/// A parameter of the user's function.
enum UserParam {
    /// An ordinary parameter (the flat function has it unchanged).
    Plain(syn::PatType, syn::Ident),
    /// A struct parameter.
    Struct {
        ident: syn::Ident,
        /// The parameter's type as written (`&Mlp` or `Mlp`).
        ty: Box<syn::Type>,
        /// The struct type (`Mlp`).
        st: Box<syn::Type>,
        tree: Node,
        leaves: Vec<Leaf>,
    },
}

/// Type names that are never structs or enums of the crate.
pub(crate) const KNOWN: [&str; 24] = [
    "f64",
    "f32",
    "usize",
    "isize",
    "u8",
    "u16",
    "u32",
    "u64",
    "u128",
    "i8",
    "i16",
    "i32",
    "i64",
    "i128",
    "bool",
    "Array1",
    "Array2",
    "Array3",
    "Array",
    "ArrayView1",
    "ArrayView2",
    "ArrayView3",
    "ArrayView",
    "Vec",
];

/// The struct name of a parameter type `S` or `&S` (a path without
/// arguments that is not a type linad knows), and whether it is a reference.
fn struct_name(ty: &syn::Type) -> Option<(String, bool, &syn::Type)> {
    let (inner, by_ref) = match ty {
        syn::Type::Reference(r) if r.mutability.is_none() => (&*r.elem, true),
        t => (t, false),
    };
    let syn::Type::Path(p) = inner else {
        return None;
    };
    let seg = p.path.segments.last()?;
    let name = seg.ident.to_string();
    (p.qself.is_none() && seg.arguments.is_empty() && !KNOWN.contains(&name.as_str()))
        .then_some((name, by_ref, inner))
}

/// The fields of struct `st` (its type as written) flattened into `leaves`
/// under `chain`; errors at `span`.
fn flatten(
    param: &syn::Ident,
    st: &syn::Type,
    path: TokenStream,
    chain: &[syn::Ident],
    leaves: &mut Vec<Leaf>,
    span: Span,
) -> Result<Node, syn::Error> {
    let name = struct_name(st).map(|(n, _, _)| n).unwrap_or_default();
    if chain.len() > MAX_NESTING {
        return Err(syn::Error::new(
            span,
            format!("structs nest more than {MAX_NESTING} deep here"),
        ));
    }
    let Some(fields) = crate_fns::lookup_struct(&name) else {
        return Err(syn::Error::new(
            span,
            format!("linad does not find `{name}` among this crate's structs deriving `linad::Differentiable` (a struct field or parameter must have such a type, defined in this crate)"),
        ));
    };
    let mut out = vec![];
    for (k, f) in fields.into_iter().enumerate() {
        let fname = format_ident!("{}", f.name, span = span);
        let ty: syn::Type = syn::parse_str(&f.ty).map_err(|_| {
            syn::Error::new(
                span,
                format!("the type of `{name}::{}` cannot be read", f.name),
            )
        })?;
        let mut sub = chain.to_vec();
        sub.push(fname.clone());
        let kind = field_kind(&ty, f.constant)
            .map_err(|m| syn::Error::new(span, format!("field `{name}::{}`: {m}", f.name)))?;
        let node = match kind {
            FieldKind::Nested => {
                let field_path = quote!(<#path as ::linad::__private::Field<#k>>::Primal);
                flatten(param, &ty, field_path, &sub, leaves, span)?
            }
            FieldKind::Leaf | FieldKind::Constant => {
                let h = struct_name_or_head(&ty);
                let is_vec = h.as_deref() == Some("Vec");
                let by_ref = is_vec || h.as_deref().is_some_and(|h| h.starts_with("Array"));
                // The function's module may not import what the struct's
                // does: ndarray's array types are named through linad.
                let ty = qualify_arrays(ty);
                let flat_ty = if by_ref {
                    syn::parse_quote!(&#ty)
                } else {
                    ty.clone()
                };
                let flat = format_ident!(
                    "{}__{}",
                    syn::ext::IdentExt::unraw(param),
                    sub.iter()
                        .map(|i| syn::ext::IdentExt::unraw(i).to_string())
                        .collect::<Vec<_>>()
                        .join("__"),
                    span = span
                );
                leaves.push(Leaf {
                    chain: sub,
                    flat,
                    flat_ty,
                    ty: ty.clone(),
                    diff: kind == FieldKind::Leaf,
                    by_ref,
                    is_vec,
                });
                Node::Leaf(leaves.len() - 1)
            }
        };
        out.push((fname, node));
    }
    Ok(Node::Struct(path, out))
}

/// `Array2<f64>` as `::linad::ndarray::Array2<f64>` (an unqualified
/// ndarray array type; other types as they are).
fn qualify_arrays(ty: syn::Type) -> syn::Type {
    if let syn::Type::Path(p) = &ty {
        if p.qself.is_none() && p.path.segments.len() == 1 {
            let seg = &p.path.segments[0];
            let n = seg.ident.to_string();
            if n.starts_with("Array") {
                return syn::parse_quote!(::linad::ndarray::#seg);
            }
        }
    }
    ty
}

/// The last path segment's name of a type.
fn struct_name_or_head(ty: &syn::Type) -> Option<String> {
    match ty {
        syn::Type::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
        _ => None,
    }
}

/// If `func` takes struct parameters, its expansion through a flat function
/// (see the module doc); `None` when it takes none.
pub fn expand(args: &Args, func: &syn::ItemFn) -> Option<Result<TokenStream, Vec<syn::Error>>> {
    let is_struct = |t: &syn::Type| {
        struct_name(t).is_some_and(|(n, _, _)| crate_fns::lookup_struct(&n).is_some())
    };
    let has = func.sig.inputs.iter().any(|a| match a {
        syn::FnArg::Typed(pt) => is_struct(&pt.ty),
        syn::FnArg::Receiver(_) => false,
    }) || matches!(&func.sig.output, syn::ReturnType::Type(_, t) if is_struct(t));
    has.then(|| expand_flat(args, func))
}

fn expand_flat(args: &Args, func: &syn::ItemFn) -> Result<TokenStream, Vec<syn::Error>> {
    let mut errors = vec![];
    let mut params = vec![];
    for a in &func.sig.inputs {
        let syn::FnArg::Typed(pt) = a else {
            continue; // refused by the signature check of the flat function
        };
        let ident = match &*pt.pat {
            syn::Pat::Ident(pi) => pi.ident.clone(),
            _ => format_ident!("__linad_unnamed"),
        };
        let found = struct_name(&pt.ty)
            .and_then(|(n, _, st)| crate_fns::lookup_struct(&n).map(|_| st.clone()));
        match found {
            None => params.push(UserParam::Plain(pt.clone(), ident)),
            Some(st) => {
                let mut leaves = vec![];
                match flatten(&ident, &st, quote!(#st), &[], &mut leaves, pt.ty.span()) {
                    Ok(tree) => params.push(UserParam::Struct {
                        ident,
                        ty: pt.ty.clone(),
                        st: Box::new(st),
                        tree,
                        leaves,
                    }),
                    Err(e) => errors.push(e),
                }
            }
        }
    }
    // A struct output: the flat function returns its leaves.
    let out = match &func.sig.output {
        syn::ReturnType::Type(_, t) => match struct_name(t) {
            Some((n, false, st)) if crate_fns::lookup_struct(&n).is_some() => {
                let mut leaves = vec![];
                let out_ident = format_ident!("__linad_out");
                match flatten(&out_ident, st, quote!(#st), &[], &mut leaves, t.span()) {
                    Ok(tree) => Some(OutStruct {
                        st: Box::new(st.clone()),
                        tree,
                        leaves,
                    }),
                    Err(e) => {
                        errors.push(e);
                        None
                    }
                }
            }
            _ => None,
        },
        syn::ReturnType::Default => None,
    };
    if !errors.is_empty() {
        return Err(errors);
    }
    // The flat function: leaves as parameters, field reads replaced.
    let mut flat = func.clone();
    // Lints, and the function's own `#[cfg]` (which gates its companions).
    flat.attrs.retain(|a| {
        let p = a.path();
        p.is_ident("allow") || p.is_ident("cfg") || p.is_ident("cfg_attr")
    });
    // Callers elsewhere (struct-taking differentiable functions) call it.
    flat.attrs.push(syn::parse_quote!(#[doc(hidden)]));
    flat.sig.ident = format_ident!(
        "__linad_flat_{}",
        syn::ext::IdentExt::unraw(&func.sig.ident)
    );
    flat.sig.inputs = params
        .iter()
        .flat_map(|p| -> Vec<syn::FnArg> {
            match p {
                UserParam::Plain(pt, _) => vec![syn::FnArg::Typed(pt.clone())],
                UserParam::Struct { leaves, .. } => leaves
                    .iter()
                    .map(|l| {
                        let (n, t) = (&l.flat, &l.flat_ty);
                        syn::parse_quote!(#n: #t)
                    })
                    .collect(),
            }
        })
        .collect();
    let mut rw = Rewrite {
        params: &params,
        errors: vec![],
    };
    rw.visit_block_mut(&mut flat.block);
    if let Some(o) = &out {
        let tys: Vec<syn::Type> = o
            .leaves
            .iter()
            .filter(|l| l.diff)
            .map(Leaf::out_ty)
            .collect();
        flat.sig.output = match tys.as_slice() {
            [one] => syn::parse_quote!(-> #one),
            _ => syn::parse_quote!(-> (#(#tys),*)),
        };
        let mut ow = OutputRewrite {
            out: o,
            errors: vec![],
        };
        ow.tail(&mut flat.block);
        ow.visit_block_mut(&mut flat.block);
        errors.extend(ow.errors);
    }
    // Struct results of calls are read as the tuples the flat callees
    // return (the flat function is compiled too).
    if let Err(es) = crate::struct_results::rewrite(&mut flat) {
        errors.extend(es);
    }
    let mut shadow = Shadow {
        names: params
            .iter()
            .filter_map(|p| match p {
                UserParam::Struct { ident, .. } => Some(ident.to_string()),
                UserParam::Plain(..) => None,
            })
            .collect(),
        errors: vec![],
    };
    shadow.visit_block(&func.block);
    // A shadowed name explains the rewrite's errors about it.
    errors.extend(if shadow.errors.is_empty() {
        rw.errors
    } else {
        shadow.errors
    });
    // The flat wrt list: the user's, struct parameters expanded to their
    // differentiable fields.
    let wrt_user = args.wrt_idents().map_err(|e| vec![e])?;
    let selected = |id: &syn::Ident| wrt_user.as_ref().is_none_or(|w| w.contains(id));
    let mut flat_wrt: Vec<syn::Ident> = vec![];
    let plain_sig = lower::signature(&flat, None);
    let plain_diff = |id: &syn::Ident| match &plain_sig {
        Ok(s) => s
            .params
            .iter()
            .any(|p| p.ident == *id && p.kind.is_differentiable()),
        Err(_) => true,
    };
    if let Some(w) = &wrt_user {
        for id in w {
            if !params.iter().any(|p| match p {
                UserParam::Plain(_, i) | UserParam::Struct { ident: i, .. } => i == id,
            }) {
                errors.push(syn::Error::new(
                    id.span(),
                    format!("`{id}` is not a parameter of `{}`", func.sig.ident),
                ));
            }
        }
    }
    for p in &params {
        match p {
            UserParam::Plain(_, id) if selected(id) && plain_diff(id) => flat_wrt.push(id.clone()),
            UserParam::Plain(..) => {}
            UserParam::Struct { ident, leaves, .. } if selected(ident) => {
                flat_wrt.extend(leaves.iter().filter(|l| l.diff).map(|l| l.flat.clone()))
            }
            UserParam::Struct { .. } => {}
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let dump = args.dump.is_present().then(|| quote!(, dump));
    let attr = quote!(wrt(#(#flat_wrt),*) #dump);
    let user_name = func.sig.ident.to_string();
    let flat_name = flat.sig.ident.to_string();
    let rename = |es: Vec<syn::Error>| {
        es.into_iter()
            .map(|e| rename_error(e, &flat_name, &user_name, &params))
            .collect::<Vec<_>>()
    };
    // With `f32` fields or parameters the flat function is an `f32`
    // function: differentiated through its `f64` shadow, whose signature
    // gives the parameter kinds (the wrappers write `f32` types).
    let f32 = crate::f32s::mentions_f32(flat.to_token_stream());
    let (generated, kinds_of) = if f32 {
        let flat_args = Args::parse(attr.clone()).map_err(rename)?;
        let generated = crate::f32s::companions(&flat_args, &attr, &flat).map_err(rename)?;
        let shadow: syn::ItemFn = syn::parse2(crate::f32s::to_f64(flat.to_token_stream()))
            .map_err(|e| rename(vec![e]))?;
        (generated, shadow)
    } else {
        let generated = crate::expand::generate_checked(attr, &flat).map_err(rename)?;
        (generated, flat.clone())
    };
    let flat_sig = lower::signature(&kinds_of, Some(&flat_wrt)).map_err(|es| {
        es.into_iter()
            .map(|e| rename_error(e, &flat_name, &user_name, &params))
            .collect::<Vec<_>>()
    })?;
    let wrappers = Wrappers {
        func,
        params: &params,
        flat: &flat_sig,
        f32,
        selected: &selected,
        out: out.as_ref(),
    }
    .all(args.dump.is_present(), args.modes().map_err(|e| vec![e])?);
    let wrappers = match crate::cfg::own_cond(func) {
        Some(c) => crate::cfg::gate(wrappers, &c),
        None => wrappers,
    };
    let allow = allows();
    Ok(quote! {
        #func
        #allow
        #flat
        #generated
        #wrappers
    })
}

/// An error of the flat function in the user's terms: `p.inner.w` for
/// `p__inner__w`, `f` for the flat function's name.
fn rename_error(e: syn::Error, flat: &str, user: &str, params: &[UserParam]) -> syn::Error {
    let mut out: Option<syn::Error> = None;
    for one in e {
        let mut msg = one.to_string().replace(flat, user);
        for p in params {
            if let UserParam::Struct { ident, leaves, .. } = p {
                for l in leaves {
                    let path = std::iter::once(ident.to_string())
                        .chain(l.chain.iter().map(|c| c.to_string()))
                        .collect::<Vec<_>>()
                        .join(".");
                    msg = msg.replace(&l.flat.to_string(), &path);
                }
            }
        }
        let e = syn::Error::new(one.span(), msg);
        match &mut out {
            None => out = Some(e),
            Some(o) => o.combine(e),
        }
    }
    out.unwrap_or_else(|| syn::Error::new(Span::call_site(), "an error"))
}

/// Replaces `p.a.b` (a leaf of struct parameter `p`) by its flat parameter.
struct Rewrite<'a> {
    params: &'a [UserParam],
    errors: Vec<syn::Error>,
}

impl Rewrite<'_> {
    /// The struct parameter named `id`.
    fn param(&self, id: &syn::Ident) -> Option<(&syn::Ident, &[Leaf])> {
        self.params.iter().find_map(|p| match p {
            UserParam::Struct { ident, leaves, .. } if ident == id => Some((ident, &leaves[..])),
            _ => None,
        })
    }
}

/// The pattern (without a type annotation) and the initialiser of `let pat
/// = init;` (no `else`), or `None` for any other statement.
fn plain_let(s: &syn::Stmt) -> Option<(&syn::Pat, &syn::Expr)> {
    let syn::Stmt::Local(l) = s else {
        return None;
    };
    let init = l.init.as_ref().filter(|i| i.diverge.is_none())?;
    let pat = match &l.pat {
        syn::Pat::Type(pt) => &*pt.pat,
        p => p,
    };
    Some((pat, &init.expr))
}

/// Replaces the name `q` by `place` in `stmts`, up to a `let` that binds `q`
/// again (closures with a parameter `q` are left alone).
fn substitute(stmts: &mut [syn::Stmt], q: &syn::Ident, place: &syn::Expr) {
    struct Sub<'a> {
        q: &'a syn::Ident,
        place: &'a syn::Expr,
    }
    impl VisitMut for Sub<'_> {
        fn visit_expr_mut(&mut self, e: &mut syn::Expr) {
            match e {
                syn::Expr::Path(p) if p.qself.is_none() && p.path.is_ident(self.q) => {
                    *e = self.place.clone();
                }
                syn::Expr::Closure(c) if c.inputs.iter().any(|p| binds(p, self.q)) => {}
                _ => syn::visit_mut::visit_expr_mut(self, e),
            }
        }
        fn visit_block_mut(&mut self, b: &mut syn::Block) {
            substitute(&mut b.stmts, self.q, self.place);
        }
        fn visit_item_mut(&mut self, _: &mut syn::Item) {}
        /// `array![q.a, q.b]`: the place, in the macro's tokens.
        fn visit_macro_mut(&mut self, m: &mut syn::Macro) {
            crate::substitute::in_macro(m, &self.q.to_string(), self.place);
        }
    }
    fn binds(p: &syn::Pat, q: &syn::Ident) -> bool {
        match p {
            syn::Pat::Ident(pi) => pi.ident == *q,
            syn::Pat::Type(pt) => binds(&pt.pat, q),
            syn::Pat::Tuple(t) => t.elems.iter().any(|e| binds(e, q)),
            syn::Pat::Reference(r) => binds(&r.pat, q),
            _ => false,
        }
    }
    let mut sub = Sub { q, place };
    for s in stmts.iter_mut() {
        let rebinds = matches!(s, syn::Stmt::Local(l) if binds(&l.pat, q));
        // The initialiser still sees the alias.
        match s {
            syn::Stmt::Local(l) => {
                if let Some(init) = &mut l.init {
                    sub.visit_expr_mut(&mut init.expr);
                    if let Some((_, d)) = &mut init.diverge {
                        sub.visit_expr_mut(d);
                    }
                }
            }
            s => sub.visit_stmt_mut(s),
        }
        if rebinds {
            return;
        }
    }
}

/// The `let`s of a struct pattern `ps` matched against the struct at
/// `root.chain` (a prefix of some leaf's chain): `let x = &root.chain.f;`
/// (or without `&` when `by_ref` is false) for each named field, nested
/// struct patterns recursively, tuple patterns by value. `None` for any
/// other pattern.
fn bind_fields(
    ps: &syn::PatStruct,
    root: &syn::Ident,
    chain: &[syn::Ident],
    by_ref: bool,
    leaves: &[Leaf],
    out: &mut Vec<syn::Stmt>,
) -> Option<()> {
    if ps.qself.is_some() || !leaves.iter().any(|l| l.chain.starts_with(chain)) {
        return None;
    }
    for f in &ps.fields {
        let syn::Member::Named(name) = &f.member else {
            return None;
        };
        let mut sub = chain.to_vec();
        sub.push(name.clone());
        match &*f.pat {
            syn::Pat::Ident(pi) if pi.subpat.is_none() => {
                let (id, mutability) = (&pi.ident, &pi.mutability);
                let span = pi.ident.span();
                let path = sub.iter();
                let place: syn::Expr = syn::parse_quote_spanned!(span=> #root #(. #path)*);
                // A leaf the flat function takes by reference (an array),
                // bound by value: an owned copy, as in `f` (the derivatives'
                // IR reads it in place).
                let referenced = leaves.iter().any(|l| l.chain == sub && l.by_ref);
                out.push(if by_ref || pi.by_ref.is_some() {
                    syn::parse_quote_spanned!(span=> let #mutability #id = &#place;)
                } else if referenced {
                    syn::parse_quote_spanned!(span=> let #mutability #id = (&#place).to_owned();)
                } else {
                    syn::parse_quote_spanned!(span=> let #mutability #id = #place;)
                });
            }
            syn::Pat::Wild(_) => {}
            syn::Pat::Struct(inner) => bind_fields(inner, root, &sub, by_ref, leaves, out)?,
            // A tuple field (of `f64`s, which are `Copy`): matched by value.
            pat @ syn::Pat::Tuple(_) => {
                let span = name.span();
                let path = sub.iter();
                out.push(syn::parse_quote_spanned!(span=> let #pat = #root #(. #path)*;));
            }
            _ => return None,
        }
    }
    Some(())
}

/// `p.a.b`: the root identifier and the named members, outermost last.
pub(crate) fn field_chain(e: &syn::Expr) -> Option<(syn::Ident, Vec<syn::Ident>)> {
    match e {
        syn::Expr::Field(f) => {
            let (root, mut chain) = field_chain(&f.base)?;
            match &f.member {
                syn::Member::Named(n) => chain.push(n.clone()),
                syn::Member::Unnamed(_) => return None,
            }
            Some((root, chain))
        }
        syn::Expr::Path(p) if p.qself.is_none() => p.path.get_ident().map(|i| (i.clone(), vec![])),
        syn::Expr::Paren(p) => field_chain(&p.expr),
        _ => None,
    }
}

impl Rewrite<'_> {
    /// `p.f(x)` (or `p.inner.f(x)`) where `f` is a `#[differentiable]`
    /// method of the struct's type (`crate::impls`): the call of its free
    /// function, `linad_m_t_f(&p, x)`, which [`Self::struct_call`] then
    /// flattens. `None` for any other expression (an error when the method's
    /// `impl` is in another file).
    fn method_call(&mut self, e: &syn::Expr) -> Option<syn::Expr> {
        let syn::Expr::MethodCall(m) = e else {
            return None;
        };
        let (root, chain) = field_chain(&m.receiver)?;
        let mut ty = self.params.iter().find_map(|p| match p {
            UserParam::Struct { ident, st, .. } if *ident == root => {
                struct_name(st).map(|(n, _, _)| n)
            }
            _ => None,
        })?;
        for field in &chain {
            let fields = crate_fns::lookup_struct(&ty)?;
            let f = fields.iter().find(|f| *field == f.name)?;
            let t: syn::Type = syn::parse_str(&f.ty).ok()?;
            ty = struct_name(&t)?.0;
        }
        let free = crate::impls::mangled(&syn::Ident::new(&ty, m.method.span()), &m.method);
        if !crate_fns::lookup(&free.to_string()).is_some_and(|i| i.differentiable) {
            return None;
        }
        // The free function is private to the module of the `impl`.
        if crate_fns::defined_here(&free.to_string()) == Some(false) {
            self.errors.push(syn::Error::new(
                m.method.span(),
                format!("`{}` is a #[differentiable] method of `{ty}` whose `impl` block is in another file: a #[differentiable] function calls it from the module of that `impl` (linad reaches its derivatives by name there)", m.method),
            ));
            // Nothing more to say about the call (its receiver is not "used
            // whole").
            return Some(syn::parse_quote_spanned!(m.method.span()=> 0.0));
        }
        let (recv, args) = (&m.receiver, &m.args);
        let sep = (!args.is_empty()).then(|| quote::quote!(,));
        Some(syn::parse_quote_spanned!(m.method.span()=> #free(&#recv #sep #args)))
    }

    /// `g(&p.inner, x)` where `g` is a `#[differentiable]` function of the
    /// crate taking a struct there: `__linad_flat_g(p__inner__w, .., x)`.
    /// `false` when the call passes no struct (left to the caller).
    fn struct_call(&mut self, c: &mut syn::ExprCall) -> bool {
        let syn::Expr::Path(fp) = &mut *c.func else {
            return false;
        };
        let Some(last) = fp.path.segments.last() else {
            return false;
        };
        let Some(info) = crate_fns::lookup(&last.ident.to_string()) else {
            return false;
        };
        let is_struct = |t: &str| {
            syn::parse_str::<syn::Type>(t)
                .ok()
                .and_then(|t| struct_name(&t).map(|(n, _, _)| n))
                .is_some_and(|n| crate_fns::lookup_struct(&n).is_some())
        };
        if !info.differentiable
            || info.params.len() != c.args.len()
            || !info.params.iter().any(|t| is_struct(t))
        {
            return false;
        }
        let mut args = syn::punctuated::Punctuated::<syn::Expr, syn::Token![,]>::new();
        for (a, t) in c.args.iter().zip(&info.params) {
            if !is_struct(t) {
                let mut a = a.clone();
                self.visit_expr_mut(&mut a);
                args.push(a);
                continue;
            }
            let inner = match a {
                syn::Expr::Reference(r) => &*r.expr,
                a => a,
            };
            let found = field_chain(inner).and_then(|(root, chain)| {
                let (_, leaves) = self.param(&root)?;
                let sub: Vec<&Leaf> = leaves
                    .iter()
                    .filter(|l| l.chain.starts_with(&chain))
                    .collect();
                (!sub.is_empty() && !sub.iter().any(|l| l.chain == chain)).then_some(sub)
            });
            match found {
                Some(sub) => {
                    let span = a.span();
                    for l in sub {
                        let flat = syn::Ident::new(&l.flat.to_string(), span);
                        args.push(syn::parse_quote_spanned!(span=> #flat));
                    }
                }
                None => self.errors.push(syn::Error::new(
                    a.span(),
                    format!("`{}` takes a struct here: pass a struct parameter or one of its struct fields (`&p` or `&p.layer`)", last.ident),
                )),
            }
        }
        let flat = format_ident!(
            "{FLAT_PREFIX}{}",
            syn::ext::IdentExt::unraw(&last.ident),
            span = last.ident.span()
        );
        if let Some(seg) = fp.path.segments.last_mut() {
            seg.ident = flat;
        }
        c.args = args;
        true
    }
}

impl VisitMut for Rewrite<'_> {
    /// `let Mlp { w1, b1: b, .. } = p;` first becomes `let w1 = &p.w1;
    /// let b = &p.b1;` (`p.w1` for a struct taken by value or `*p`), nested
    /// struct patterns field by field; the field reads are then rewritten.
    ///
    /// `let q = &p.inner;` (or `p`, `&p`, `p.clone()`: a struct, not a
    /// leaf, bound without `mut`) makes `q` another name of that place: the
    /// statement goes and `q` is replaced by `p.inner` in the rest of the
    /// block, up to a `let` that binds `q` again.
    fn visit_block_mut(&mut self, b: &mut syn::Block) {
        let mut stmts: std::collections::VecDeque<syn::Stmt> = std::mem::take(&mut b.stmts).into();
        while let Some(s) = stmts.pop_front() {
            if let Some((q, place)) = self.alias(&s) {
                let mut rest: Vec<syn::Stmt> = stmts.drain(..).collect();
                substitute(&mut rest, &q, &place);
                stmts.extend(rest);
                continue;
            }
            match self.destructure(&s) {
                Some(lets) => b.stmts.extend(lets),
                None => b.stmts.push(s),
            }
        }
        syn::visit_mut::visit_block_mut(self, b);
    }

    fn visit_expr_mut(&mut self, e: &mut syn::Expr) {
        if let Some(call) = self.method_call(e) {
            *e = call;
        }
        if let syn::Expr::Call(c) = e {
            if self.struct_call(c) {
                return;
            }
        }
        // `&p.w` of a leaf passed by reference is that reference.
        if let syn::Expr::Reference(r) = e {
            if r.mutability.is_none() {
                if let Some((root, chain)) = field_chain(&r.expr) {
                    if let Some((_, leaves)) = self.param(&root) {
                        if let Some(l) = leaves.iter().find(|l| l.chain == chain && l.by_ref) {
                            let span = e.span();
                            let flat = syn::Ident::new(&l.flat.to_string(), span);
                            *e = syn::parse_quote_spanned!(span=> #flat);
                            return;
                        }
                    }
                }
            }
        }
        if let Some((root, chain)) = field_chain(e) {
            if let Some((ident, leaves)) = self.param(&root) {
                let span = e.span();
                match leaves.iter().find(|l| l.chain == chain) {
                    Some(l) => {
                        let flat = syn::Ident::new(&l.flat.to_string(), span);
                        *e = syn::parse_quote_spanned!(span=> #flat);
                    }
                    None if leaves.iter().any(|l| l.chain.starts_with(&chain)) => {
                        let what = if chain.is_empty() {
                            format!("the struct parameter `{ident}` is used whole")
                        } else {
                            let path: Vec<String> = chain.iter().map(|c| c.to_string()).collect();
                            format!("`{ident}.{}` is a struct used whole", path.join("."))
                        };
                        self.errors.push(syn::Error::new(
                            span,
                            format!("{what}: #[differentiable] functions read struct parameters through their fields (`{ident}.field`); passing, copying or returning a struct is not supported yet"),
                        ));
                    }
                    None => self.errors.push(syn::Error::new(
                        span,
                        format!(
                            "no field `{}` in the struct parameter `{ident}`",
                            chain.last().map(|c| c.to_string()).unwrap_or_default()
                        ),
                    )),
                }
                return;
            }
        }
        syn::visit_mut::visit_expr_mut(self, e);
    }

    fn visit_item_mut(&mut self, _: &mut syn::Item) {}

    /// Inside macros (`array![p.a, p.b]`) the same, on the tokens.
    fn visit_macro_mut(&mut self, m: &mut syn::Macro) {
        m.tokens = self.rewrite_tokens(std::mem::take(&mut m.tokens));
    }
}

impl Rewrite<'_> {
    /// `(q, place)` of `let q = &p.inner;` binding a struct (not a leaf) of
    /// a struct parameter to a name (see `visit_block_mut`).
    fn alias(&self, s: &syn::Stmt) -> Option<(syn::Ident, syn::Expr)> {
        let (pat, init) = plain_let(s)?;
        let syn::Pat::Ident(pi) = pat else {
            return None;
        };
        if pi.mutability.is_some() || pi.by_ref.is_some() || pi.subpat.is_some() {
            return None;
        }
        let mut e = init;
        loop {
            e = match e {
                syn::Expr::Reference(r) if r.mutability.is_none() => &r.expr,
                syn::Expr::Paren(p) => &p.expr,
                syn::Expr::MethodCall(m) if m.method == "clone" && m.args.is_empty() => &m.receiver,
                _ => break,
            };
        }
        let (root, chain) = field_chain(e)?;
        let (_, leaves) = self.param(&root)?;
        let is_struct = leaves
            .iter()
            .any(|l| l.chain.starts_with(&chain) && l.chain.len() > chain.len());
        let is_leaf = leaves.iter().any(|l| l.chain == chain);
        (is_struct && !is_leaf).then(|| (pi.ident.clone(), syn::parse_quote!((#e))))
    }

    /// The `let`s a destructuring `let S { .. } = p;` of a struct parameter
    /// (or of a struct field of one) stands for, or `None` when `s` is not
    /// one (or uses a pattern other than names, `_`, `..` and nested struct
    /// patterns: it is then left as written, and refused as a struct used
    /// whole).
    fn destructure(&self, s: &syn::Stmt) -> Option<Vec<syn::Stmt>> {
        let (pat, init) = plain_let(s)?;
        let syn::Pat::Struct(ps) = pat else {
            return None;
        };
        // `p`, `&p`, `*p`, `p.inner`: the place and whether names bind
        // references to its fields.
        let (place, by_ref) = match init {
            syn::Expr::Reference(r) if r.mutability.is_none() => (&*r.expr, Some(true)),
            syn::Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => (&*u.expr, Some(false)),
            e => (e, None),
        };
        let (root, chain) = field_chain(place)?;
        let by_ref = match by_ref {
            Some(r) => r,
            None => self.params.iter().any(|p| {
                matches!(p, UserParam::Struct { ident, ty, .. }
                    if *ident == root && matches!(**ty, syn::Type::Reference(_)))
            }),
        };
        let (_, leaves) = self.param(&root)?;
        let mut out = vec![];
        bind_fields(ps, &root, &chain, by_ref, leaves, &mut out)?;
        Some(out)
    }

    /// `p . a . b` (a leaf chain of a struct parameter) as its flat
    /// parameter, and `& p . a` of a leaf passed by reference as that
    /// reference, in a token stream.
    fn rewrite_tokens(&self, ts: TokenStream) -> TokenStream {
        use proc_macro2::TokenTree as T;
        let toks: Vec<T> = ts.into_iter().collect();
        let mut out: Vec<T> = vec![];
        let mut k = 0;
        while k < toks.len() {
            if let T::Group(g) = &toks[k] {
                let mut n = proc_macro2::Group::new(g.delimiter(), self.rewrite_tokens(g.stream()));
                n.set_span(g.span());
                out.push(T::Group(n));
                k += 1;
                continue;
            }
            let amp = matches!(&toks[k], T::Punct(p) if p.as_char() == '&');
            let at = if amp { k + 1 } else { k };
            let matched = match toks.get(at) {
                Some(T::Ident(root)) => self.param(root).and_then(|(_, leaves)| {
                    // the longest `. field` chain that is a leaf
                    let mut chain = vec![];
                    let mut j = at + 1;
                    let mut best = None;
                    while let (Some(T::Punct(dot)), Some(T::Ident(f))) =
                        (toks.get(j), toks.get(j + 1))
                    {
                        if dot.as_char() != '.' {
                            break;
                        }
                        chain.push(f.clone());
                        j += 2;
                        if let Some(l) = leaves.iter().find(|l| l.chain == chain) {
                            best = Some((l, j));
                        }
                    }
                    best
                }),
                _ => None,
            };
            match matched {
                Some((l, end)) => {
                    if amp && !l.by_ref {
                        out.push(toks[k].clone());
                    }
                    out.push(T::Ident(syn::Ident::new(
                        &l.flat.to_string(),
                        toks[at].span(),
                    )));
                    k = end;
                }
                None => {
                    out.push(toks[k].clone());
                    k += 1;
                }
            }
        }
        out.into_iter().collect()
    }
}

/// Finds bindings that shadow a struct parameter.
struct Shadow {
    names: Vec<String>,
    errors: Vec<syn::Error>,
}

impl<'a> Visit<'a> for Shadow {
    fn visit_pat_ident(&mut self, p: &'a syn::PatIdent) {
        if self.names.contains(&p.ident.to_string()) {
            self.errors.push(syn::Error::new(
                p.ident.span(),
                format!("`{}` is a struct parameter: binding the name again is not supported here; choose another name", p.ident),
            ));
        }
        syn::visit::visit_pat_ident(self, p);
    }

    fn visit_item(&mut self, _: &'a syn::Item) {}
}

/// The pieces of the reverse-mode companions (see `Wrappers::reverse`).
struct Reverse {
    ct: syn::Ident,
    ct_ty: TokenStream,
    flat_ct: TokenStream,
    pat: TokenStream,
    cotangents: TokenStream,
    cotangents_ty: TokenStream,
    y: TokenStream,
}

/// A struct output: its type as written, and its fields.
struct OutStruct {
    st: Box<syn::Type>,
    tree: Node,
    leaves: Vec<Leaf>,
}

impl OutStruct {
    /// Whether some field has no derivative: the flat function does not
    /// return it, and the companions return the user's own `f(..)` as the
    /// primal.
    fn has_constants(&self) -> bool {
        self.leaves.iter().any(|l| !l.diff)
    }

    /// Temporaries for the leaves the flat function returns (those with a
    /// derivative), and a pattern binding a flat result.
    fn temps(&self, what: &str) -> (Vec<syn::Ident>, TokenStream) {
        let n = self.leaves.iter().filter(|l| l.diff).count();
        let ts: Vec<syn::Ident> = (0..n).map(|k| format_ident!("__linad_{what}{k}")).collect();
        let pat = match ts.as_slice() {
            [one] => quote!(#one),
            _ => quote!((#(#ts),*)),
        };
        (ts, pat)
    }

    /// The struct from a flat result `v`.
    fn primal(&self, v: TokenStream) -> TokenStream {
        let (ts, pat) = self.temps("o");
        let b = build_primal(&self.tree, &ts);
        let vecs = self.vecs_back(&ts);
        quote!({ let #pat = #v; #vecs #b })
    }

    /// The struct's tangent from a flat tangent `v`.
    fn tangent(&self, v: TokenStream) -> TokenStream {
        let (ts, pat) = self.temps("t");
        let b = build_tangent(&self.tree, &self.leaves, &mut ts.iter());
        let vecs = self.vecs_back(&ts);
        quote!({ let #pat = #v; #vecs #b })
    }

    /// Rebinds the temporaries `ts` (one per leaf with a derivative) of
    /// `Vec` leaves, which the flat function returns as `Array1`s, as
    /// `Vec`s.
    fn vecs_back(&self, ts: &[syn::Ident]) -> TokenStream {
        let diff = self.leaves.iter().filter(|l| l.diff);
        let back = diff
            .zip(ts)
            .filter(|(l, _)| l.is_vec)
            .map(|(_, t)| quote!(let #t = #t.to_vec();));
        quote!(#(#back)*)
    }

    /// The flat cotangent from the struct's tangent `ct` (a reference).
    fn flat_ct(&self, ct: &syn::Ident) -> TokenStream {
        let parts: Vec<TokenStream> = self
            .leaves
            .iter()
            .filter(|l| l.diff)
            .map(|l| {
                let chain = &l.chain;
                if l.is_vec {
                    // The flat function's output is an `Array1`.
                    quote!(&::linad::ndarray::Array1::from(#ct #(.#chain)*.clone()))
                } else if l.by_ref {
                    quote!(&#ct #(.#chain)*)
                } else {
                    quote!(#ct #(.#chain)*)
                }
            })
            .collect();
        match parts.as_slice() {
            [one] => one.clone(),
            _ => quote!((#(#parts),*)),
        }
    }
}

/// The struct of a struct output from its leaves `ts`, through the
/// derive's `__linad_primal_from_fields`.
fn build_primal(node: &Node, ts: &[syn::Ident]) -> TokenStream {
    match node {
        Node::Leaf(k) => {
            let t = &ts[*k];
            quote!(#t)
        }
        Node::Struct(path, fields) => {
            let parts = fields.iter().map(|(_, n)| build_primal(n, ts));
            quote!(<#path>::__linad_primal_from_fields(#(#parts),*))
        }
    }
}

/// Turns the struct literals a function returns into tuples of their
/// leaves (in the flat function).
struct OutputRewrite<'a> {
    out: &'a OutStruct,
    errors: Vec<syn::Error>,
}

impl OutputRewrite<'_> {
    /// Binds the leaves of the struct literal `e` for `node` to temporaries,
    /// in the order the literal writes its fields (Rust evaluates them so:
    /// `S { r: y.dot(&y), y }` borrows `y` before moving it), recording which
    /// temporary holds which leaf. Constant leaves are not computed (the
    /// companions take them from the user's own function).
    fn bind(
        &mut self,
        node: &Node,
        e: &syn::Expr,
        lets: &mut Vec<syn::Stmt>,
        held: &mut Vec<(usize, syn::Ident)>,
    ) -> bool {
        match node {
            Node::Leaf(k) => {
                let leaf = &self.out.leaves[*k];
                if leaf.diff {
                    let t = format_ident!("__linad_field{}", held.len(), span = e.span());
                    lets.push(if leaf.is_vec {
                        // The flat function returns a `Vec` field as an `Array1`.
                        syn::parse_quote_spanned!(e.span()=> let #t = ::linad::ndarray::Array1::from(#e);)
                    } else {
                        syn::parse_quote_spanned!(e.span()=> let #t = #e;)
                    });
                    held.push((*k, t));
                }
                true
            }
            Node::Struct(_, fields) => {
                let lit = match e {
                    syn::Expr::Struct(l) if l.rest.is_none() => l,
                    syn::Expr::Paren(p) => return self.bind(node, &p.expr, lets, held),
                    _ => {
                        self.errors.push(syn::Error::new(
                            e.span(),
                            "a struct output is built with a struct literal here (`Mlp { w: .., b: .. }`, every field given)",
                        ));
                        return false;
                    }
                };
                for (name, _) in fields {
                    let given = lit
                        .fields
                        .iter()
                        .any(|fv| matches!(&fv.member, syn::Member::Named(n) if n == name));
                    if !given {
                        self.errors.push(syn::Error::new(
                            lit.span(),
                            format!("missing field `{name}` in the struct output"),
                        ));
                        return false;
                    }
                }
                for fv in &lit.fields {
                    let sub = fields
                        .iter()
                        .find(|(name, _)| matches!(&fv.member, syn::Member::Named(n) if n == name));
                    // A field the struct does not have: rustc reports it on
                    // the user's function.
                    if let Some((_, sub)) = sub {
                        if !self.bind(sub, &fv.expr, lets, held) {
                            return false;
                        }
                    }
                }
                true
            }
        }
    }

    /// Rewrites a value the function returns.
    fn value(&mut self, e: &mut syn::Expr) {
        match e {
            syn::Expr::If(i) => {
                self.tail(&mut i.then_branch);
                if let Some((_, el)) = &mut i.else_branch {
                    self.value(el);
                }
            }
            syn::Expr::Block(b) => self.tail(&mut b.block),
            syn::Expr::Paren(p) => self.value(&mut p.expr),
            _ => {
                let (mut lets, mut held) = (vec![], vec![]);
                if self.bind(&self.out.tree, e, &mut lets, &mut held) {
                    // The leaves in declaration order (the flat function's).
                    held.sort_by_key(|(k, _)| *k);
                    let parts: Vec<&syn::Ident> = held.iter().map(|(_, t)| t).collect();
                    let tuple: syn::Expr = match parts.as_slice() {
                        [one] => syn::parse_quote!(#one),
                        _ => syn::parse_quote!((#(#parts),*)),
                    };
                    *e = syn::parse_quote!({ #(#lets)* #tuple });
                }
            }
        }
    }

    /// Rewrites the tail expression of a block.
    fn tail(&mut self, b: &mut syn::Block) {
        if let Some(syn::Stmt::Expr(e, None)) = b.stmts.last_mut() {
            self.value(e);
        }
    }
}

impl VisitMut for OutputRewrite<'_> {
    fn visit_expr_return_mut(&mut self, r: &mut syn::ExprReturn) {
        if let Some(e) = &mut r.expr {
            self.value(e);
        }
    }

    fn visit_expr_closure_mut(&mut self, _: &mut syn::ExprClosure) {}

    fn visit_item_mut(&mut self, _: &mut syn::Item) {}
}

/// The user-facing companions, calling the flat function's.
struct Wrappers<'a> {
    func: &'a syn::ItemFn,
    params: &'a [UserParam],
    flat: &'a Signature,
    /// The flat function is an `f32` function (its signature `flat` is its
    /// `f64` shadow's: cotangent types come from the written types).
    f32: bool,
    selected: &'a dyn Fn(&syn::Ident) -> bool,
    /// The struct output, if any.
    out: Option<&'a OutStruct>,
}

impl Wrappers<'_> {
    fn all(&self, dump: bool, modes: crate::attr::Modes) -> TokenStream {
        let mut out = modes.select(
            || [self.jvp(), self.linearize()].into_iter().collect(),
            || [self.vjp(), self.pullback()].into_iter().collect(),
        );
        if dump {
            out.extend(crate::names::dump_forwarder(
                self.func,
                &self.flat.ident,
                "the function with its struct parameters flattened",
            ));
        }
        out
    }

    fn user_names(&self) -> Vec<String> {
        self.params
            .iter()
            .map(|p| match p {
                UserParam::Plain(_, i) | UserParam::Struct { ident: i, .. } => {
                    syn::ext::IdentExt::unraw(i).to_string()
                }
            })
            .collect()
    }

    /// The flat parameter of an ordinary parameter.
    fn flat_param(&self, id: &syn::Ident) -> Option<&Param> {
        self.flat.params.iter().find(|p| p.ident == *id)
    }

    /// Whether user parameter `p` is differentiated.
    fn is_wrt(&self, p: &UserParam) -> bool {
        match p {
            UserParam::Plain(_, id) => self.flat_param(id).is_some_and(|fp| fp.wrt),
            UserParam::Struct { ident, leaves, .. } => {
                (self.selected)(ident) && leaves.iter().any(|l| l.diff)
            }
        }
    }

    /// `x: T` for every user parameter.
    fn decls(&self) -> Vec<TokenStream> {
        self.params
            .iter()
            .map(|p| match p {
                UserParam::Plain(pt, _) => quote!(#pt),
                UserParam::Struct { ident, ty, .. } => quote!(#ident: #ty),
            })
            .collect()
    }

    /// The flat function's arguments from the user's parameters.
    fn flat_args(&self) -> Vec<TokenStream> {
        let mut out = vec![];
        for p in self.params {
            match p {
                UserParam::Plain(_, id) => out.push(quote!(#id)),
                UserParam::Struct { ident, leaves, .. } => {
                    for l in leaves {
                        let chain = &l.chain;
                        out.push(if l.by_ref {
                            quote!(&#ident #(.#chain)*)
                        } else {
                            quote!(#ident #(.#chain)*)
                        });
                    }
                }
            }
        }
        out
    }

    /// The tangent names, types (as parameters) and the flat tangent
    /// arguments they give, for the differentiated user parameters.
    fn tangents(&self) -> (Vec<syn::Ident>, Vec<TokenStream>, Vec<TokenStream>) {
        let taken = self.user_names();
        let (mut names, mut tys, mut args) = (vec![], vec![], vec![]);
        for p in self.params.iter().filter(|p| self.is_wrt(p)) {
            match p {
                UserParam::Plain(pt, id) => {
                    let d = crate::names::tangent(id, &taken);
                    let t = &pt.ty;
                    tys.push(quote!(#t));
                    args.push(quote!(#d));
                    names.push(d);
                }
                UserParam::Struct {
                    ident, st, leaves, ..
                } => {
                    let d = crate::names::tangent(ident, &taken);
                    tys.push(quote!(&<#st as ::linad::Differentiable>::Tangent));
                    for l in leaves.iter().filter(|l| l.diff) {
                        let chain = &l.chain;
                        args.push(if l.by_ref {
                            quote!(&#d #(.#chain)*)
                        } else {
                            quote!(#d #(.#chain)*)
                        });
                    }
                    names.push(d);
                }
            }
        }
        (names, tys, args)
    }

    /// Shape checks of the struct tangents' array fields against the
    /// parameters' (`fname`: the companion reporting).
    fn shape_checks(&self, fname: &str, names: &[syn::Ident]) -> TokenStream {
        let mut out = TokenStream::new();
        let rt = quote!(::linad::__private::ad_runtime);
        let wrt = self.params.iter().filter(|p| self.is_wrt(p));
        for (p, d) in wrt.zip(names) {
            let (ident, leaves) = match p {
                UserParam::Struct { ident, leaves, .. } => (ident, leaves),
                UserParam::Plain(pt, x) => {
                    out.extend(tangent_shape_check(fname, x, d, &pt.ty));
                    continue;
                }
            };
            for l in leaves.iter().filter(|l| l.diff && l.by_ref) {
                let chain = &l.chain;
                let path: Vec<String> = l.chain.iter().map(|c| c.to_string()).collect();
                let (dn, of) = (
                    format!("{d}.{}", path.join(".")),
                    format!("the shape of `{ident}.{}`", path.join(".")),
                );
                let shape = |root: &syn::Ident| {
                    if l.is_vec {
                        quote!(&[#root #(.#chain)*.len()][..])
                    } else {
                        quote!(#root #(.#chain)*.shape())
                    }
                };
                let (given, expected) = (shape(d), shape(ident));
                out.extend(
                    quote!(#rt::check_arg_shape(#fname, "tangent", #dn, #given, #expected, #of);),
                );
            }
        }
        out
    }

    /// The user's cotangents from the flat ones bound to `cs` (in flat
    /// `wrt` order): a bare value for one differentiated parameter.
    fn regroup(&self, cs: &[syn::Ident]) -> TokenStream {
        let mut it = cs.iter();
        let mut parts = vec![];
        for p in self.params.iter().filter(|p| self.is_wrt(p)) {
            match p {
                UserParam::Plain(..) => {
                    let c = it.next();
                    parts.push(quote!(#c));
                }
                UserParam::Struct { tree, leaves, .. } => {
                    parts.push(build_tangent(tree, leaves, &mut it));
                }
            }
        }
        match parts.as_slice() {
            [one] => one.clone(),
            _ => quote!((#(#parts),*)),
        }
    }

    /// The type of what [`Self::regroup`] builds.
    fn cotangent_ty(&self) -> TokenStream {
        let tys: Vec<TokenStream> = self
            .params
            .iter()
            .filter(|p| self.is_wrt(p))
            .map(|p| match p {
                UserParam::Plain(pt, _) if self.f32 => crate::f32s::cotangent_ty(&pt.ty),
                UserParam::Plain(_, id) => self
                    .flat_param(id)
                    .map(tangent_ty)
                    .unwrap_or_else(|| quote!(())),
                UserParam::Struct { st, .. } => quote!(<#st as ::linad::Differentiable>::Tangent),
            })
            .collect();
        match tys.as_slice() {
            [one] => one.clone(),
            _ => quote!((#(#tys),*)),
        }
    }

    /// A pattern binding the flat cotangents to fresh names.
    fn flat_cts(&self) -> (Vec<syn::Ident>, TokenStream) {
        let n = self.flat.wrt_params().count();
        let cs: Vec<syn::Ident> = (0..n).map(|k| format_ident!("__linad_g{k}")).collect();
        let pat = match cs.as_slice() {
            [one] => quote!(#one),
            _ => quote!((#(#cs),*)),
        };
        (cs, pat)
    }

    fn out_ty(&self) -> TokenStream {
        match &self.func.sig.output {
            syn::ReturnType::Type(_, t) => quote!(#t),
            syn::ReturnType::Default => quote!(()),
        }
    }

    /// The output's tangent type.
    fn out_tangent_ty(&self) -> TokenStream {
        match self.out {
            Some(o) => {
                let st = &o.st;
                quote!(<#st as ::linad::Differentiable>::Tangent)
            }
            None => self.out_ty(),
        }
    }

    /// The type of the output's cotangent parameter.
    fn ct_param_ty(&self) -> TokenStream {
        match self.out {
            Some(_) => {
                let t = self.out_tangent_ty();
                quote!(&#t)
            }
            None => match &self.func.sig.output {
                syn::ReturnType::Type(_, t) if self.f32 => crate::f32s::ct_ty(t),
                _ => ct_ty(&self.flat.out),
            },
        }
    }

    /// The flat cotangent argument from `ct`.
    fn flat_ct(&self, ct: &syn::Ident) -> TokenStream {
        match self.out {
            Some(o) => o.flat_ct(ct),
            None => quote!(#ct),
        }
    }

    /// The user's output from a flat primal result (the user's own result,
    /// bound by [`Self::user_primal`], when the output struct has constant
    /// fields).
    fn primal_out(&self, v: TokenStream) -> TokenStream {
        match self.out {
            Some(o) if o.has_constants() => quote!(__linad_user_y),
            Some(o) => o.primal(v),
            None => v,
        }
    }

    /// `let __linad_user_y = f(..);` when the output struct has constant
    /// fields (the flat function returns only the fields with a
    /// derivative); `let _ = f;` otherwise (a private `f` called only
    /// through its derivatives is used, as in `emit::wrappers`). Owned
    /// arguments are cloned: the flat function takes them next.
    fn user_primal(&self) -> TokenStream {
        let f = &self.func.sig.ident;
        if !self.out.is_some_and(|o| o.has_constants()) {
            return quote!(let _ = #f;);
        }
        let args = self.params.iter().map(|p| {
            let (id, ty) = match p {
                UserParam::Plain(pt, id) => (id, &*pt.ty),
                UserParam::Struct { ident, ty, .. } => (ident, &**ty),
            };
            match ty {
                syn::Type::Reference(_) => quote!(#id),
                _ => quote!(::core::clone::Clone::clone(&#id)),
            }
        });
        quote!(let __linad_user_y = #f(#(#args),*);)
    }

    /// The user's output tangent from a flat one.
    fn tangent_out(&self, v: TokenStream) -> TokenStream {
        match self.out {
            Some(o) => o.tangent(v),
            None => v,
        }
    }

    fn ct_name(&self) -> syn::Ident {
        crate::names::ct_param(&self.user_names())
    }

    /// What `f_vjp` and `f_pullback` share: the cotangent parameter, its
    /// flat form, the flat cotangents' pattern and the user's cotangents
    /// built from them, and the primal output from `__linad_y`.
    fn reverse(&self) -> Reverse {
        let ct = self.ct_name();
        let (cs, pat) = self.flat_cts();
        Reverse {
            ct_ty: self.ct_param_ty(),
            flat_ct: self.flat_ct(&ct),
            ct,
            pat,
            cotangents: self.regroup(&cs),
            cotangents_ty: self.cotangent_ty(),
            y: self.primal_out(quote!(__linad_y)),
        }
    }

    fn jvp(&self) -> TokenStream {
        let user = self.user_primal();
        let (vis, f) = (&self.func.vis, &self.func.sig.ident);
        let name = crate::names::jvp(f);
        let inner = crate::names::jvp(&self.flat.ident);
        let (dnames, dtys, dargs) = self.tangents();
        let checks = self.shape_checks(&name.to_string(), &dnames);
        let (decls, args, o) = (self.decls(), self.flat_args(), self.out_ty());
        let ot = self.out_tangent_ty();
        let (y, dy) = (
            self.primal_out(quote!(__linad_r.0)),
            self.tangent_out(quote!(__linad_r.1)),
        );
        let doc = format!(" Forward-mode derivative of [`{f}`]: returns `({f}(..), tangent)`, the primal result and its directional derivative along the tangents `d_*` of the differentiated parameters (a struct's tangent is its `Differentiable::Tangent`).");
        let allows = allows();
        quote! {
            #[doc = #doc]
            #allows
            #vis fn #name(#(#decls,)* #(#dnames: #dtys),*) -> (#o, #ot) {
                #checks
                #user
                let __linad_r = #inner(#(#args,)* #(#dargs),*);
                (#y, #dy)
            }
        }
    }

    fn vjp(&self) -> TokenStream {
        let user = self.user_primal();
        let (vis, f) = (&self.func.vis, &self.func.sig.ident);
        let name = crate::names::vjp(f);
        let inner = crate::names::vjp(&self.flat.ident);
        let (decls, args, o) = (self.decls(), self.flat_args(), self.out_ty());
        let Reverse {
            ct,
            ct_ty: ctt,
            flat_ct: fct,
            pat,
            cotangents: r,
            cotangents_ty: rt,
            y,
        } = self.reverse();
        let doc = format!(" Reverse-mode derivative of [`{f}`]: returns `({f}(..), cotangents)`, the primal result and the cotangents of the differentiated parameters for the output cotangent `{ct}` (a struct's cotangent is its `Differentiable::Tangent`).");
        let allows = allows();
        quote! {
            #[doc = #doc]
            #allows
            #vis fn #name(#(#decls,)* #ct: #ctt) -> (#o, #rt) {
                #user
                let (__linad_y, #pat) = #inner(#(#args,)* #fct);
                (#y, #r)
            }
        }
    }

    fn linearize(&self) -> TokenStream {
        let user = self.user_primal();
        let (vis, f) = (&self.func.vis, &self.func.sig.ident);
        let name = crate::names::linearize(f);
        let inner = crate::names::linearize(&self.flat.ident);
        let (dnames, dtys, dargs) = self.tangents();
        let (decls, args, o) = (self.decls(), self.flat_args(), self.out_ty());
        let ot = self.out_tangent_ty();
        let y = self.primal_out(quote!(__linad_y));
        let dy = self.tangent_out(quote!(__linad_l(#(#dargs),*)));
        let doc = format!(" Linearisation of [`{f}`]: returns `({f}(..), jvp)`, the primal result and its linear map as a closure over the residuals; `jvp(d_*..)` equals the tangent part of `{f}_jvp`.");
        let allows = allows();
        quote! {
            #[doc = #doc]
            #allows
            #[inline]
            #vis fn #name(#(#decls),*)
                -> (#o, impl Fn(#(#dtys),*) -> #ot + ::core::marker::Send + ::core::marker::Sync + use<>)
            {
                #user
                let (__linad_y, __linad_l) = #inner(#(#args),*);
                (#y, move |#(#dnames: #dtys),*| -> #ot { #dy })
            }
        }
    }

    fn pullback(&self) -> TokenStream {
        let user = self.user_primal();
        let (vis, f) = (&self.func.vis, &self.func.sig.ident);
        let name = crate::names::pullback(f);
        let inner = crate::names::pullback(&self.flat.ident);
        let (decls, args, o) = (self.decls(), self.flat_args(), self.out_ty());
        let Reverse {
            ct,
            ct_ty: ctt,
            flat_ct: fct,
            pat,
            cotangents: r,
            cotangents_ty: rt,
            y,
        } = self.reverse();
        let doc = format!(" Pullback of [`{f}`]: returns `({f}(..), vjp)`, the primal result and the transposed linear map as a closure over the residuals; each `vjp({ct})` returns what `{f}_vjp` does.");
        let allows = allows();
        quote! {
            #[doc = #doc]
            #allows
            #[inline]
            #vis fn #name(#(#decls),*)
                -> (#o, impl Fn(#ctt) -> #rt + ::core::marker::Send + ::core::marker::Sync + use<>)
            {
                #user
                let (__linad_y, __linad_pb) = #inner(#(#args),*);
                (#y, move |#ct: #ctt| -> #rt {
                    let #pat = __linad_pb(#fct);
                    #r
                })
            }
        }
    }
}

/// The shape of `x`, a value of the written type `ty`, when it is an
/// array (`x.shape()`) or a slice or `Vec` (`[x.len()]`).
fn written_shape(x: &syn::Ident, ty: &syn::Type) -> Option<TokenStream> {
    let t = match ty {
        syn::Type::Reference(r) => &*r.elem,
        t => t,
    };
    match t {
        syn::Type::Slice(_) => Some(quote!(&[#x.len()][..])),
        syn::Type::Path(p) => {
            let n = p.path.segments.last()?.ident.to_string();
            if n == "Vec" {
                Some(quote!(&[#x.len()][..]))
            } else if n.starts_with("Array") {
                Some(quote!(#x.shape()))
            } else {
                None
            }
        }
        _ => None,
    }
}

/// The check that the tangent `d` of the array parameter `x` (written type
/// `ty`) has `x`'s shape, reported as `fname`'s (nothing for other types).
pub(crate) fn tangent_shape_check(
    fname: &str,
    x: &syn::Ident,
    d: &syn::Ident,
    ty: &syn::Type,
) -> TokenStream {
    let (Some(given), Some(expected)) = (written_shape(d, ty), written_shape(x, ty)) else {
        return TokenStream::new();
    };
    let (dn, of) = (d.to_string(), format!("the shape of `{x}`"));
    quote!(::linad::__private::ad_runtime::check_arg_shape(#fname, "tangent", #dn, #given, #expected, #of);)
}

/// The tangent of a struct from the flat cotangents of its differentiable
/// leaves, taken in order from `cs`.
fn build_tangent<'c>(
    node: &Node,
    leaves: &[Leaf],
    cs: &mut impl Iterator<Item = &'c syn::Ident>,
) -> TokenStream {
    match node {
        Node::Leaf(k) => {
            if leaves[*k].diff {
                let c = cs.next();
                quote!(#c)
            } else {
                TokenStream::new()
            }
        }
        Node::Struct(ty, fields) => {
            let parts: Vec<TokenStream> = fields
                .iter()
                .map(|(_, n)| build_tangent(n, leaves, cs))
                .filter(|t| !t.is_empty())
                .collect();
            quote_spanned!(Span::call_site()=> <<#ty as ::linad::Differentiable>::Tangent>::__linad_from_fields(#(#parts),*))
        }
    }
}
