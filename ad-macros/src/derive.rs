//! `#[derive(linad::Differentiable)]`: the tangent type of a struct of
//! parameters.
//!
//! ```text
//! #[derive(Differentiable)]            pub struct MlpTangent { pub w: Array2<f64>, pub b: Array1<f64> }
//! pub struct Mlp {                     impl Differentiable for Mlp { type Tangent = MlpTangent; }
//!     pub w: Array2<f64>,              impl Tangent for MlpTangent { .. field by field .. }
//!     pub b: Array1<f64>,              impl MlpTangent { zeros_like, dot }
//!     #[linad(constant)] pub k: usize, impl Add, Sub, Mul<f64> for MlpTangent
//!                                      (Mul<f32> when the floats are all `f32`)
//! }
//! ```
//!
//! The tangent has the struct's visibility and the fields that have a
//! derivative, in order: `f64`, `f32`, their tuples, arrays and `Vec`s (with
//! their own types), and fields whose type is another struct deriving
//! `Differentiable` (with that struct's tangent). Integer, `bool` and
//! `#[linad(constant)]` fields have none. `#[differentiable]` functions find
//! the struct's fields by reading the crate's source (`crate_fns`), so they
//! agree with this derive through [`field_kind`].

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;

/// What a field of a `Differentiable` struct is, from its type as written.
#[derive(Clone, Debug, PartialEq)]
pub enum FieldKind {
    /// Has a derivative and is its own tangent (floats, their tuples,
    /// arrays and `Vec`s).
    Leaf,
    /// No derivative: integers, `bool`, integer arrays, or marked
    /// `#[linad(constant)]`.
    Constant,
    /// Another struct (its tangent is `<T as Differentiable>::Tangent`).
    Nested,
}

const INTS: [&str; 13] = [
    "usize", "isize", "u8", "u16", "u32", "u64", "u128", "i8", "i16", "i32", "i64", "i128", "bool",
];

/// The last path segment of a type and its angle-bracketed type arguments.
fn head(ty: &syn::Type) -> Option<(String, Vec<&syn::Type>)> {
    let syn::Type::Path(p) = ty else {
        return None;
    };
    let seg = p.path.segments.last()?;
    let args = match &seg.arguments {
        syn::PathArguments::AngleBracketed(a) => a
            .args
            .iter()
            .filter_map(|g| match g {
                syn::GenericArgument::Type(t) => Some(t),
                _ => None,
            })
            .collect(),
        _ => vec![],
    };
    Some((seg.ident.to_string(), args))
}

/// Whether `ty` is `f64` or `f32`.
fn is_float(ty: &syn::Type) -> bool {
    matches!(head(ty), Some((n, a)) if a.is_empty() && (n == "f64" || n == "f32"))
}

/// The kind of a field of type `ty` (`constant`: marked so).
pub fn field_kind(ty: &syn::Type, constant: bool) -> Result<FieldKind, String> {
    if constant {
        return Ok(FieldKind::Constant);
    }
    if let syn::Type::Tuple(t) = ty {
        if !t.elems.is_empty() && t.elems.iter().all(is_float) {
            return Ok(FieldKind::Leaf);
        }
        return Err("a tuple field must hold only `f64` or `f32` values".into());
    }
    if let syn::Type::Array(a) = ty {
        // `[f64; N]`: its own tangent; `[usize; N]`: a constant.
        return match head(&a.elem).map(|(n, args)| (n, args.is_empty())) {
            Some((n, true)) if n == "f64" || n == "f32" => Ok(FieldKind::Leaf),
            Some((n, true)) if INTS.contains(&n.as_str()) => Ok(FieldKind::Constant),
            _ => Err(
                "a fixed-size array field must hold `f64`, `f32` or integers (`[f64; 3]`): hold a matrix in an `Array2<f64>`".into(),
            ),
        };
    }
    let Some((name, args)) = head(ty) else {
        return Err("fields must have a named type: `f64`, an array, a `Vec`, an integer or another struct deriving `Differentiable`".into());
    };
    if args.is_empty() && INTS.contains(&name.as_str()) {
        return Ok(FieldKind::Constant);
    }
    if args.is_empty() && (name == "f64" || name == "f32") {
        return Ok(FieldKind::Leaf);
    }
    let array = matches!(
        name.as_str(),
        "Array1" | "Array2" | "Array3" | "Array4" | "Array" | "Vec"
    );
    if array {
        let elem = args.first().and_then(|t| head(t)).map(|(n, _)| n);
        return match elem.as_deref() {
            Some("f64" | "f32") => Ok(FieldKind::Leaf),
            Some(e) if INTS.contains(&e) => Ok(FieldKind::Constant),
            _ => Err(format!(
                "`{name}` fields must hold `f64`, `f32` or integers"
            )),
        };
    }
    if !args.is_empty() {
        return Err(format!(
            "`{name}<..>` fields are not supported: use `f64`, arrays, `Vec<f64>`, integers or another struct deriving `Differentiable`"
        ));
    }
    Ok(FieldKind::Nested)
}

/// Whether an attribute list marks a field `#[linad(constant)]`; an error
/// for other `linad(..)` arguments.
pub fn is_constant(attrs: &[syn::Attribute]) -> Result<bool, syn::Error> {
    let mut constant = false;
    for a in attrs.iter().filter(|a| a.path().is_ident("linad")) {
        a.parse_nested_meta(|m| {
            if m.path.is_ident("constant") {
                constant = true;
                Ok(())
            } else {
                Err(m.error("unknown `linad` field argument: the one argument is `constant`"))
            }
        })?;
    }
    Ok(constant)
}

/// The derive's output, or its errors (all of them, spanned).
pub fn expand(input: TokenStream) -> TokenStream {
    match derive(input) {
        Ok(ts) => ts,
        Err(es) => es.iter().map(syn::Error::to_compile_error).collect(),
    }
}

fn derive(input: TokenStream) -> Result<TokenStream, Vec<syn::Error>> {
    let item: syn::DeriveInput = syn::parse2(input).map_err(|e| vec![e])?;
    let name = &item.ident;
    let mut errors = vec![];
    if !item.generics.params.is_empty() {
        errors.push(syn::Error::new(
            item.generics.span(),
            "`Differentiable` structs cannot be generic: write the struct with concrete types",
        ));
    }
    let fields = match &item.data {
        syn::Data::Struct(syn::DataStruct {
            fields: syn::Fields::Named(f),
            ..
        }) => &f.named,
        _ => {
            return Err(vec![syn::Error::new(
                name.span(),
                "`Differentiable` is derived for structs with named fields",
            )])
        }
    };
    // (name, type, kind) of every field.
    let mut all = vec![];
    for f in fields {
        let ident = f.ident.clone().expect("named fields");
        let constant = match is_constant(&f.attrs) {
            Ok(c) => c,
            Err(e) => {
                errors.push(e);
                continue;
            }
        };
        match field_kind(&f.ty, constant) {
            Ok(k) => all.push((ident, f.ty.clone(), k)),
            Err(msg) => errors.push(syn::Error::new(f.ty.span(), msg)),
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let vis = &item.vis;
    let tname = format_ident!("{}Tangent", name);
    let lin: Vec<&(syn::Ident, syn::Type, FieldKind)> = all
        .iter()
        .filter(|(_, _, k)| *k != FieldKind::Constant)
        .collect();
    let fnames: Vec<&syn::Ident> = lin.iter().map(|(n, _, _)| n).collect();
    let tys: Vec<TokenStream> = lin
        .iter()
        .map(|(_, t, k)| match k {
            FieldKind::Nested => {
                quote_spanned!(t.span()=> <#t as ::linad::Differentiable>::Tangent)
            }
            _ => quote!(#t),
        })
        .collect();
    let doc = format!(
        " The tangent (and cotangent) type of [`{name}`]: one field per field of `{name}` \
         that has a derivative, with its type. Made by `#[derive(linad::Differentiable)]`."
    );
    let fdocs: Vec<String> = fnames
        .iter()
        .map(|f| format!(" The component along `{name}::{f}`."))
        .collect();
    let tr = quote!(::linad::Tangent);
    // Scaled by `f32` when every float of the fields is `f32` (an `f32`
    // model's learning rate is an `f32`), by `f64` otherwise.
    let scale = if scale_is_f32(&lin) {
        quote!(f32)
    } else {
        quote!(f64)
    };
    let all_names: Vec<&syn::Ident> = all.iter().map(|(n, _, _)| n).collect();
    let all_tys: Vec<&syn::Type> = all.iter().map(|(_, t, _)| t).collect();
    // `Field<k>` for the fields that are structs (see `structs.rs`).
    let field_impls: Vec<TokenStream> = all
        .iter()
        .enumerate()
        .filter(|(_, (_, _, k))| *k == FieldKind::Nested)
        .map(|(k, (_, t, _))| {
            quote!(impl ::linad::__private::Field<#k> for #name { type Primal = #t; })
        })
        .collect();
    Ok(quote! {
        #[doc = #doc]
        #[derive(Clone, Debug, PartialEq)]
        #vis struct #tname {
            #( #[doc = #fdocs] pub #fnames: #tys, )*
        }

        impl ::linad::Differentiable for #name {
            type Tangent = #tname;
        }

        #(#field_impls)*

        impl #tr for #tname {
            type Primal = #name;
            fn zero_at(p: &#name) -> Self {
                #tname { #( #fnames: #tr::zero_at(&p.#fnames), )* }
            }
            fn plus(&self, o: &Self) -> Self {
                #tname { #( #fnames: #tr::plus(&self.#fnames, &o.#fnames), )* }
            }
            fn times(&self, s: f64) -> Self {
                #tname { #( #fnames: #tr::times(&self.#fnames, s), )* }
            }
            fn inner(&self, o: &Self) -> f64 {
                0.0 #( + #tr::inner(&self.#fnames, &o.#fnames) )*
            }
            fn write_flat(&self, out: &mut ::std::vec::Vec<f64>) {
                #( #tr::write_flat(&self.#fnames, out); )*
            }
            fn read_flat(p: &#name, xs: &mut &[f64]) -> Self {
                #tname { #( #fnames: #tr::read_flat(&p.#fnames, xs), )* }
            }
        }

        impl #name {
            /// The struct with these fields, in order (what the companions
            /// of a `#[differentiable]` function returning it build it with).
            #[doc(hidden)]
            pub fn __linad_primal_from_fields(#(#all_names: #all_tys),*) -> Self {
                #name { #(#all_names),* }
            }
        }

        impl #tname {
            /// The tangent with these fields, in order (what the companions
            /// of `#[differentiable]` functions build their results with).
            #[doc(hidden)]
            pub fn __linad_from_fields(#(#fnames: #tys),*) -> Self {
                #tname { #(#fnames),* }
            }

            /// The zero tangent at `p` (arrays shaped like `p`'s).
            pub fn zeros_like(p: &#name) -> Self {
                #tr::zero_at(p)
            }

            /// The inner product: the sum over the fields of the sums of
            /// products of corresponding components.
            pub fn dot(&self, other: &Self) -> f64 {
                #tr::inner(self, other)
            }
        }

        impl ::std::ops::Add for #tname {
            type Output = #tname;
            fn add(self, o: #tname) -> #tname {
                #tr::plus(&self, &o)
            }
        }

        impl ::std::ops::Sub for #tname {
            type Output = #tname;
            fn sub(self, o: #tname) -> #tname {
                #tr::plus(&self, &#tr::times(&o, -1.0))
            }
        }

        impl ::std::ops::Mul<#scale> for #tname {
            type Output = #tname;
            fn mul(self, s: #scale) -> #tname {
                #tr::times(&self, s as f64)
            }
        }
    })
}

/// Whether the tangent of a struct with these differentiable fields is
/// scaled by `f32`: some field mentions `f32`, none mentions `f64`, and no
/// field is a nested struct (whose floats the derive cannot see).
fn scale_is_f32(fields: &[&(syn::Ident, syn::Type, FieldKind)]) -> bool {
    let text: Vec<String> = fields
        .iter()
        .map(|(_, t, _)| t.to_token_stream().to_string())
        .collect();
    let mentions = |w: &str| {
        text.iter()
            .any(|t| t.split(|c: char| !c.is_alphanumeric()).any(|x| x == w))
    };
    mentions("f32") && !mentions("f64") && fields.iter().all(|(_, _, k)| *k != FieldKind::Nested)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(src: &str) -> Result<FieldKind, String> {
        field_kind(&syn::parse_str(src).unwrap(), false)
    }

    #[test]
    fn field_kinds() {
        assert_eq!(kind("f64"), Ok(FieldKind::Leaf));
        assert_eq!(kind("(f64, f64)"), Ok(FieldKind::Leaf));
        assert_eq!(kind("Array2<f64>"), Ok(FieldKind::Leaf));
        assert_eq!(kind("ndarray::Array1<f64>"), Ok(FieldKind::Leaf));
        assert_eq!(kind("Vec<f64>"), Ok(FieldKind::Leaf));
        assert_eq!(kind("usize"), Ok(FieldKind::Constant));
        assert_eq!(kind("Vec<usize>"), Ok(FieldKind::Constant));
        assert_eq!(kind("Layer"), Ok(FieldKind::Nested));
        assert_eq!(kind("[f64; 3]"), Ok(FieldKind::Leaf));
        assert_eq!(kind("[usize; 2]"), Ok(FieldKind::Constant));
        assert!(kind("[[f64; 2]; 2]").is_err());
        assert!(kind("Option<f64>").is_err());
        assert!(kind("(f64, usize)").is_err());
        assert_eq!(
            field_kind(&syn::parse_str("f64").unwrap(), true),
            Ok(FieldKind::Constant)
        );
    }

    #[test]
    fn errors_for_enums_generics_and_bad_fields() {
        let out = expand(quote!(
            enum E {
                A,
            }
        ));
        assert!(out.to_string().contains("structs with named fields"));
        let out = expand(quote!(
            struct S<T> {
                x: T,
            }
        ));
        assert!(out.to_string().contains("cannot be generic"));
        let out = expand(quote!(
            struct S {
                x: Option<f64>,
                #[linad(frozen)]
                y: f64,
            }
        ));
        let s = out.to_string();
        assert!(s.contains("`Option<..>` fields are not supported"), "{s}");
        assert!(s.contains("the one argument is `constant`"), "{s}");
    }
}
