//! Rust-level types of the front end: what the lowering knows about the type
//! of every expression, and the reading of written types (`syn::Type`) for
//! parameters, `let` annotations and turbofish arguments.
//!
//! The IR has one integer type (`i64`); the front end keeps the Rust integer
//! type (`usize`, `i32`, ..., or `{integer}` for an unsuffixed literal) to word
//! diagnostics as rustc would and to choose the IR's typed integer primitives
//! (`IntArith`, `IntCast`, `FloatToInt`), which give every integer type Rust's
//! semantics (wrapping casts, overflow as the build profile says).

use crate::sig::Passing;
use ad_core_ir::types::Scalar;
use std::fmt;
use syn::spanned::Spanned;

/// A Rust integer type, or `{integer}` for an unsuffixed literal (which
/// adapts to any integer type).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IntTy {
    /// An unsuffixed integer literal.
    Lit,
    /// `usize`
    Usize,
    /// `isize`
    Isize,
    /// `u8`
    U8,
    /// `u16`
    U16,
    /// `u32`
    U32,
    /// `u64`
    U64,
    /// `i8`
    I8,
    /// `i16`
    I16,
    /// `i32`
    I32,
    /// `i64`
    I64,
}

impl IntTy {
    /// Every named integer type.
    const NAMED: [IntTy; 10] = [
        IntTy::Usize,
        IntTy::Isize,
        IntTy::U8,
        IntTy::U16,
        IntTy::U32,
        IntTy::U64,
        IntTy::I8,
        IntTy::I16,
        IntTy::I32,
        IntTy::I64,
    ];

    /// The type as rustc prints it.
    pub fn name(self) -> &'static str {
        match self {
            IntTy::Lit => "{integer}",
            IntTy::Usize => "usize",
            IntTy::Isize => "isize",
            IntTy::U8 => "u8",
            IntTy::U16 => "u16",
            IntTy::U32 => "u32",
            IntTy::U64 => "u64",
            IntTy::I8 => "i8",
            IntTy::I16 => "i16",
            IntTy::I32 => "i32",
            IntTy::I64 => "i64",
        }
    }

    /// The integer type named `s` (`"usize"`, ...).
    pub fn from_name(s: &str) -> Option<IntTy> {
        IntTy::NAMED.into_iter().find(|t| t.name() == s)
    }

    /// The IR's name for this type's arithmetic and casts, `None` for the
    /// types whose values and operations are exactly the IR's `i64` ones
    /// (`i64`, `isize`, and an unsuffixed literal, which adapts).
    pub fn ir(self) -> Option<ad_core_ir::ir::IntTy> {
        use ad_core_ir::ir::IntTy as T;
        match self {
            IntTy::Lit | IntTy::I64 | IntTy::Isize => None,
            IntTy::Usize | IntTy::U64 => Some(T::U64),
            IntTy::U8 => Some(T::U8),
            IntTy::U16 => Some(T::U16),
            IntTy::U32 => Some(T::U32),
            IntTy::I8 => Some(T::I8),
            IntTy::I16 => Some(T::I16),
            IntTy::I32 => Some(T::I32),
        }
    }

    /// Whether the type is unsigned.
    pub fn unsigned(self) -> bool {
        matches!(
            self,
            IntTy::Usize | IntTy::U8 | IntTy::U16 | IntTy::U32 | IntTy::U64
        )
    }

    /// The common type of two integer types (a literal adapts).
    pub fn unify(self, o: IntTy) -> Option<IntTy> {
        match (self, o) {
            (IntTy::Lit, t) | (t, IntTy::Lit) => Some(t),
            (a, b) if a == b => Some(a),
            _ => None,
        }
    }
}

/// The element type of a scalar or of an array.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Elem {
    /// `f64`
    F64,
    /// An integer type.
    Int(IntTy),
    /// `bool`
    Bool,
}

impl Elem {
    /// The IR scalar type.
    pub fn scalar(self) -> Scalar {
        match self {
            Elem::F64 => Scalar::F64,
            Elem::Int(_) => Scalar::I64,
            Elem::Bool => Scalar::Bool,
        }
    }

    /// The type as rustc prints it.
    pub fn name(self) -> &'static str {
        match self {
            Elem::F64 => "f64",
            Elem::Int(t) => t.name(),
            Elem::Bool => "bool",
        }
    }

    /// The common type of two element types.
    pub fn unify(self, o: Elem) -> Option<Elem> {
        match (self, o) {
            (Elem::Int(a), Elem::Int(b)) => a.unify(b).map(Elem::Int),
            (a, b) if a == b => Some(a),
            _ => None,
        }
    }

    /// The element type of a named scalar type (`f64`, `usize`, `bool`, ...).
    pub fn from_name(s: &str) -> Option<Elem> {
        match s {
            "f64" => Some(Elem::F64),
            "bool" => Some(Elem::Bool),
            _ => IntTy::from_name(s).map(Elem::Int),
        }
    }
}

/// The Rust-level type of a lowered expression.
#[derive(Clone, Debug, PartialEq)]
pub enum RTy {
    /// A scalar.
    Scalar(Elem),
    /// An `ndarray` array of the given element type and rank.
    Array(Elem, usize),
    /// A tuple.
    Tuple(Vec<RTy>),
    /// `()`.
    Unit,
    /// An iterator (only as the receiver of further iterator methods).
    Iter,
    /// A closure bound to a name.
    Closure,
    /// The type of an expression that already failed to lower (compatible
    /// with everything, so that one mistake gives one error).
    Error,
}

impl RTy {
    /// `f64`.
    pub const F64: RTy = RTy::Scalar(Elem::F64);

    /// The common type of two types (integer literals adapt; `Error` matches
    /// anything), `None` if they differ.
    pub fn unify(&self, o: &RTy) -> Option<RTy> {
        match (self, o) {
            (RTy::Error, t) | (t, RTy::Error) => Some(t.clone()),
            (RTy::Scalar(a), RTy::Scalar(b)) => a.unify(*b).map(RTy::Scalar),
            (RTy::Array(a, r), RTy::Array(b, s)) if r == s => {
                a.unify(*b).map(|e| RTy::Array(e, *r))
            }
            (RTy::Tuple(a), RTy::Tuple(b)) if a.len() == b.len() => a
                .iter()
                .zip(b)
                .map(|(x, y)| x.unify(y))
                .collect::<Option<_>>()
                .map(RTy::Tuple),
            (RTy::Unit, RTy::Unit) => Some(RTy::Unit),
            _ => None,
        }
    }
}

impl fmt::Display for RTy {
    /// As rustc would print the type: `f64`, `{integer}`, `Array2<f64>`, `(f64, usize)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RTy::Scalar(e) => f.write_str(e.name()),
            RTy::Array(e, r) => write!(f, "Array{r}<{}>", e.name()),
            RTy::Tuple(ts) => {
                f.write_str("(")?;
                for (k, t) in ts.iter().enumerate() {
                    if k > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{t}")?;
                }
                if ts.len() == 1 {
                    f.write_str(",")?;
                }
                f.write_str(")")
            }
            RTy::Unit => f.write_str("()"),
            RTy::Iter => f.write_str("an iterator"),
            RTy::Closure => f.write_str("a closure"),
            RTy::Error => f.write_str("{unknown}"),
        }
    }
}

/// A written type the front end understands.
#[derive(Clone, Debug, PartialEq)]
pub enum TyDesc {
    /// A scalar (`f64`, an integer type, `bool`).
    Scalar(Elem),
    /// An array.
    Array {
        /// Element type.
        elem: Elem,
        /// Rank, 1..=3.
        rank: usize,
        /// `&ArrayN`, `ArrayViewN` or `ArrayN`.
        passing: Passing,
    },
    /// A tuple.
    Tuple(Vec<TyDesc>),
    /// A reference to a scalar or tuple (`&f64`): accepted in annotations,
    /// refused for parameters.
    Ref(Box<TyDesc>),
}

impl TyDesc {
    /// The front-end type of a value of this written type.
    pub fn rty(&self) -> RTy {
        match self {
            TyDesc::Scalar(e) => RTy::Scalar(*e),
            TyDesc::Array { elem, rank, .. } => RTy::Array(*elem, *rank),
            TyDesc::Tuple(ts) => RTy::Tuple(ts.iter().map(TyDesc::rty).collect()),
            TyDesc::Ref(t) => t.rty(),
        }
    }
}

const SUPPORTED_TYPES: &str = "#[differentiable] functions work on `f64`, integers, `bool`, tuples of these and `ndarray` arrays (`Array1<f64>`, `&Array2<f64>`, `ArrayView1<f64>`, `Array1<usize>`, ...)";

/// The last segment of a type path and its generic arguments, if the type is
/// a plain path (`ndarray::Array1<f64>` -> `("Array1", [f64])`).
fn path_parts(p: &syn::TypePath) -> Option<(String, Vec<&syn::Type>)> {
    if p.qself.is_some() {
        return None;
    }
    let last = p.path.segments.last()?;
    let args = match &last.arguments {
        syn::PathArguments::None => vec![],
        // An elided lifetime (`ArrayView1<'_, f64>`, as the
        // `elided_lifetimes_in_paths` lint asks) says nothing more.
        syn::PathArguments::AngleBracketed(a) => a
            .args
            .iter()
            .filter(|g| !matches!(g, syn::GenericArgument::Lifetime(l) if l.ident == "_"))
            .map(|g| match g {
                syn::GenericArgument::Type(t) => Some(t),
                _ => None,
            })
            .collect::<Option<_>>()?,
        syn::PathArguments::Parenthesized(_) => return None,
    };
    Some((last.ident.to_string(), args))
}

/// The first named (not elided) lifetime among the generic arguments of a
/// type path's last segment (`'a` in `ArrayView1<'a, f64>`).
fn named_lifetime(p: &syn::TypePath) -> Option<&syn::Lifetime> {
    match &p.path.segments.last()?.arguments {
        syn::PathArguments::AngleBracketed(a) => a.args.iter().find_map(|g| match g {
            syn::GenericArgument::Lifetime(l) if l.ident != "_" => Some(l),
            _ => None,
        }),
        syn::PathArguments::None | syn::PathArguments::Parenthesized(_) => None,
    }
}

/// The rank named by a dimension type `Ix1`..`Ix3`.
fn ix_rank(t: &syn::Type) -> Option<usize> {
    let syn::Type::Path(p) = t else { return None };
    match path_parts(p)?.0.as_str() {
        "Ix1" => Some(1),
        "Ix2" => Some(2),
        "Ix3" => Some(3),
        _ => None,
    }
}

/// The element type of an array type argument.
fn array_elem(t: &syn::Type) -> Result<Elem, syn::Error> {
    match classify(t)? {
        TyDesc::Scalar(e @ (Elem::F64 | Elem::Int(_))) => Ok(e),
        _ => Err(syn::Error::new(
            t.span(),
            format!(
                "arrays of `{}` are not supported: array elements must be `f64` or an integer type",
                show(t)
            ),
        )),
    }
}

/// A type (or other tokens) as a user wrote it, for messages: `&Array1<usize>`,
/// not the token spacing `& Array1 < usize >`.
pub fn show(t: &impl quote::ToTokens) -> String {
    let s = t.to_token_stream().to_string();
    let mut out = String::with_capacity(s.len());
    let chars: Vec<char> = s.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if c == ' ' {
            let prev = if i > 0 { chars[i - 1] } else { ' ' };
            let next = chars.get(i + 1).copied().unwrap_or(' ');
            // Drop spaces around `<`, `>`, `::`, before `,` `)` `]`, and after `&` `(` `[` `'`.
            if matches!(prev, '<' | '&' | '(' | '[' | ':' | '\'')
                || matches!(next, '<' | '>' | ',' | ')' | ']' | ':')
            {
                continue;
            }
        }
        out.push(c);
    }
    out
}

/// A one-dimensional array (a slice, a fixed-size array) of the element
/// type `elem`, `f64` or an integer; else the error `refused` makes.
fn one_dimensional(
    elem: &syn::Type,
    passing: Passing,
    refused: impl FnOnce() -> syn::Error,
) -> Result<TyDesc, syn::Error> {
    match classify(elem)? {
        TyDesc::Scalar(elem @ (Elem::F64 | Elem::Int(_))) => Ok(TyDesc::Array {
            elem,
            rank: 1,
            passing,
        }),
        _ => Err(refused()),
    }
}

thread_local! {
    /// Type aliases being read, one inside another ([`classify`]).
    static ALIAS_DEPTH: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// One more alias being read while alive (at most 8 at once: a cycle of
/// aliases ends there, not in a stack overflow).
struct AliasLevel;

impl AliasLevel {
    fn enter() -> Option<AliasLevel> {
        let depth = ALIAS_DEPTH.with(|d| d.get());
        (depth < 8).then(|| {
            ALIAS_DEPTH.with(|d| d.set(depth + 1));
            AliasLevel
        })
    }
}

impl Drop for AliasLevel {
    fn drop(&mut self) {
        ALIAS_DEPTH.with(|d| d.set(d.get() - 1));
    }
}

/// Reads a written type.
pub fn classify(ty: &syn::Type) -> Result<TyDesc, syn::Error> {
    let shown = show(ty);
    let unsupported = || {
        // A plain name may be a struct of parameters.
        let named = matches!(ty, syn::Type::Path(p) if p.path.segments.last().is_some_and(|s| s.arguments.is_empty()));
        let hint = if named {
            "; a struct of parameters must derive `linad::Differentiable` in this crate, and an enum parameter must be an enum of this crate whose variants have no fields"
        } else {
            ""
        };
        syn::Error::new(
            ty.span(),
            format!("unsupported type `{shown}`: {SUPPORTED_TYPES}{hint}"),
        )
    };
    match ty {
        syn::Type::Paren(p) => classify(&p.elem),
        syn::Type::Group(g) => classify(&g.elem),
        syn::Type::Reference(r) => {
            if r.mutability.is_some() {
                return Err(syn::Error::new(
                    ty.span(),
                    "mutable references (`&mut`) are not supported: take the value and return the result",
                ));
            }
            if let syn::Type::Slice(sl) = strip_ty(&r.elem) {
                return one_dimensional(&sl.elem, Passing::Slice, || {
                    syn::Error::new(
                        ty.span(),
                        format!("unsupported type `{shown}`: slices of `f64` or of integers are supported"),
                    )
                });
            }
            match classify(&r.elem)? {
                TyDesc::Array {
                    elem,
                    rank,
                    passing,
                } if passing.by_ref().is_some() => Ok(TyDesc::Array {
                    elem,
                    rank,
                    passing: passing.by_ref().expect("checked"),
                }),
                TyDesc::Array { .. } => Err(syn::Error::new(
                    ty.span(),
                    format!("unsupported type `{shown}`: pass an array view by value (`ArrayView1<f64>`) or an array by reference (`&Array1<f64>`)"),
                )),
                other => Ok(TyDesc::Ref(Box::new(other))),
            }
        }
        syn::Type::Tuple(t) => {
            if t.elems.is_empty() {
                return Err(syn::Error::new(
                    ty.span(),
                    "the unit type `()` is not supported here",
                ));
            }
            Ok(TyDesc::Tuple(
                t.elems.iter().map(classify).collect::<Result<_, _>>()?,
            ))
        }
        syn::Type::Array(a) => one_dimensional(&a.elem, Passing::Fixed, || {
            syn::Error::new(
                ty.span(),
                format!("unsupported type `{shown}`: fixed-size arrays of `f64` or of integers are supported (`[f64; 3]`); for more dimensions use `ndarray::Array2<f64>`, ..."),
            )
        }),
        syn::Type::Slice(_) => Err(syn::Error::new(
            ty.span(),
            format!("unsupported type `{shown}`: take slices by reference (`&[f64]`)"),
        )),
        syn::Type::Path(p) => {
            let Some((name, args)) = path_parts(p) else {
                if let Some(l) = named_lifetime(p) {
                    return Err(syn::Error::new(
                        l.span(),
                        format!("unsupported type `{shown}`: a named lifetime (`{l}`) is not supported here: write the elided `'_` (`ArrayView1<'_, f64>`) or leave it out"),
                    ));
                }
                return Err(unsupported());
            };
            if let Some(e) = Elem::from_name(&name) {
                if !args.is_empty() {
                    return Err(unsupported());
                }
                return Ok(TyDesc::Scalar(e));
            }
            if name == "f32" {
                return Err(syn::Error::new(
                    ty.span(),
                    "`f32` is not supported here: `#[differentiable]` functions take `f32` (differentiated in `f64`), `#[linear]` and `#[custom_jvp]` functions and struct fields do not yet",
                ));
            }
            if name == "Vec" {
                if let [t] = args.as_slice() {
                    if let Ok(TyDesc::Scalar(elem @ (Elem::F64 | Elem::Int(_)))) = classify(t) {
                        return Ok(TyDesc::Array {
                            elem,
                            rank: 1,
                            passing: Passing::Vec,
                        });
                    }
                }
                return Err(syn::Error::new(
                    ty.span(),
                    format!(
                        "unsupported type `{shown}`: `Vec` of `f64` or of integers is supported"
                    ),
                ));
            }
            let ranked = |prefix: &str| -> Option<usize> {
                name.strip_prefix(prefix)
                    .and_then(|r| r.parse::<usize>().ok())
            };
            let (rank, passing) = if let Some(r) = ranked("ArrayView") {
                (Some(r), Passing::View)
            } else if let Some(r) = ranked("Array") {
                (Some(r), Passing::Owned)
            } else if name == "ArrayView" || name == "Array" {
                let passing = if name == "Array" {
                    Passing::Owned
                } else {
                    Passing::View
                };
                if args.len() != 2 {
                    return Err(unsupported());
                }
                match ix_rank(args[1]) {
                    Some(r) => (Some(r), passing),
                    None => {
                        return Err(syn::Error::new(
                            args[1].span(),
                            "unsupported array dimension: use `Ix1`, `Ix2` or `Ix3` (dynamic dimensions are not supported)",
                        ))
                    }
                }
            } else if name.starts_with("ArrayViewMut") {
                return Err(syn::Error::new(
                    ty.span(),
                    format!("unsupported type `{shown}`: mutable array views are not supported, take the array and return the result"),
                ));
            } else if name == "ArrayD" || name == "ArrayViewD" {
                return Err(syn::Error::new(
                    ty.span(),
                    format!("unsupported type `{shown}`: arrays of dynamic rank are not supported, use `Array1`, `Array2` or `Array3`"),
                ));
            } else {
                (None, Passing::Owned)
            };
            let Some(rank) = rank else {
                // A type alias of the crate (`type V = Array1<f64>;`) is
                // the type it stands for (a chain of at most 8).
                if args.is_empty() && p.path.segments.len() == 1 {
                    if let Some(t) = crate::crate_fns::lookup_alias(&name)
                        .and_then(|t| syn::parse_str::<syn::Type>(&t).ok())
                    {
                        if let Some(_level) = AliasLevel::enter() {
                            return classify(&t).map_err(|_| unsupported());
                        }
                    }
                }
                return Err(unsupported());
            };
            if !(1..=3).contains(&rank) {
                return Err(syn::Error::new(
                    ty.span(),
                    format!("unsupported type `{shown}`: arrays of rank 1 to 3 are supported"),
                ));
            }
            let Some(elem_ty) = args.first() else {
                return Err(syn::Error::new(
                    ty.span(),
                    format!("write the element type of the array: `{name}<f64>`"),
                ));
            };
            let expected_args = if name.ends_with(char::is_numeric) {
                1
            } else {
                2
            };
            if args.len() != expected_args {
                return Err(unsupported());
            }
            Ok(TyDesc::Array {
                elem: array_elem(elem_ty)?,
                rank,
                passing,
            })
        }
        _ => Err(unsupported()),
    }
}

/// The type without parentheses and invisible groups.
fn strip_ty(ty: &syn::Type) -> &syn::Type {
    match ty {
        syn::Type::Paren(p) => strip_ty(&p.elem),
        syn::Type::Group(g) => strip_ty(&g.elem),
        t => t,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ty(s: &str) -> Result<TyDesc, String> {
        classify(&syn::parse_str::<syn::Type>(s).unwrap()).map_err(|e| e.to_string())
    }

    #[test]
    fn scalars_and_tuples() {
        assert_eq!(ty("f64"), Ok(TyDesc::Scalar(Elem::F64)));
        assert_eq!(ty("usize"), Ok(TyDesc::Scalar(Elem::Int(IntTy::Usize))));
        assert_eq!(ty("bool"), Ok(TyDesc::Scalar(Elem::Bool)));
        assert_eq!(
            ty("(f64, i32)"),
            Ok(TyDesc::Tuple(vec![
                TyDesc::Scalar(Elem::F64),
                TyDesc::Scalar(Elem::Int(IntTy::I32))
            ]))
        );
    }

    #[test]
    fn arrays_in_every_spelling() {
        let a = |rank, passing| {
            Ok(TyDesc::Array {
                elem: Elem::F64,
                rank,
                passing,
            })
        };
        assert_eq!(ty("&Array1<f64>"), a(1, Passing::Ref));
        assert_eq!(ty("&ndarray::Array2<f64>"), a(2, Passing::Ref));
        assert_eq!(ty("linad::ndarray::Array3<f64>"), a(3, Passing::Owned));
        assert_eq!(ty("ArrayView2<f64>"), a(2, Passing::View));
        assert_eq!(ty("&Array<f64, Ix2>"), a(2, Passing::Ref));
        assert_eq!(ty("ArrayView<f64, ndarray::Ix1>"), a(1, Passing::View));
        assert_eq!(
            ty("&Array1<usize>"),
            Ok(TyDesc::Array {
                elem: Elem::Int(IntTy::Usize),
                rank: 1,
                passing: Passing::Ref
            })
        );
    }

    #[test]
    fn refusals() {
        assert!(ty("f32").unwrap_err().contains("`f32` is not supported"));
        assert!(ty("Vec<String>")
            .unwrap_err()
            .contains("`Vec` of `f64` or of integers"));
        assert!(ty("&[bool]")
            .unwrap_err()
            .contains("slices of `f64` or of integers"));
        assert!(ty("[[f64; 3]; 2]")
            .unwrap_err()
            .contains("fixed-size arrays of `f64`"));
        assert!(ty("[f64]")
            .unwrap_err()
            .contains("take slices by reference"));
        assert!(ty("&mut f64").unwrap_err().contains("mutable references"));
        assert!(ty("Array4<f64>").unwrap_err().contains("rank 1 to 3"));
        assert!(ty("ArrayD<f64>").unwrap_err().contains("dynamic rank"));
        assert!(ty("Array1<f32>")
            .unwrap_err()
            .contains("`f32` is not supported"));
        assert!(ty("Array1<bool>").unwrap_err().contains("arrays of `bool`"));
        assert!(ty("String")
            .unwrap_err()
            .contains("unsupported type `String`"));
        assert!(ty("Array<f64, IxDyn>").unwrap_err().contains("`Ix1`"));
    }

    #[test]
    fn display_like_rustc() {
        assert_eq!(RTy::Scalar(Elem::Int(IntTy::Lit)).to_string(), "{integer}");
        assert_eq!(RTy::Array(Elem::F64, 2).to_string(), "Array2<f64>");
        assert_eq!(
            RTy::Tuple(vec![RTy::F64, RTy::Scalar(Elem::Int(IntTy::Usize))]).to_string(),
            "(f64, usize)"
        );
    }
}
