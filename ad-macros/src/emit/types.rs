//! IR types to Rust types, and how a value is held in generated code.
//!
//! | IR type | held as (`Repr`) | Rust type |
//! |---|---|---|
//! | `f64`, `i64`, `bool` | `Val` | `f64`, `i64`, `bool` |
//! | tuple of scalars | `Val` | a tuple (`Copy`) |
//! | array | `Owned` | `ArrayR<E>` (`Array<E, IxR>`) |
//! | array | `View` | `ArrayViewR<'_, E>` (parameters, slices of them) |
//! | tuple with arrays | `Owned` | a tuple of owned parts |
//! | opaque (a callee's kept residuals) | `Owned` | the type the IR names (`m::__linad_g_res`) |
//! | opaque | `View` | a reference to it (parameters of linear halves) |
//!
//! Generated code names ndarray and the runtime only through the facade:
//! `::linad::ndarray` and `::linad::__private::ad_runtime`.

use ad_core_ir::types::{Scalar, Ty};
use proc_macro2::TokenStream;
use quote::quote;

/// How a value is held.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Repr {
    /// A `Copy` value: a scalar or a tuple of scalars.
    Val,
    /// An owned array (or a tuple containing arrays).
    Owned,
    /// An array view.
    View,
}

/// Largest array rank the emitter supports (ndarray's static dimensions).
pub const MAX_RANK: usize = 6;

/// `::linad::ndarray`.
pub fn nd() -> TokenStream {
    cached(&ND, || quote!(::linad::ndarray))
}

/// `::linad::__private::ad_runtime`.
pub fn rt() -> TokenStream {
    cached(&RT, || quote!(::linad::__private::ad_runtime))
}

type Cached = std::thread::LocalKey<std::cell::RefCell<Option<TokenStream>>>;

thread_local! {
    static ND: std::cell::RefCell<Option<TokenStream>> = const { std::cell::RefCell::new(None) };
    static RT: std::cell::RefCell<Option<TokenStream>> = const { std::cell::RefCell::new(None) };
}

/// The tokens `make` gives, made once per macro invocation: the emitter
/// names the runtime path at nearly every statement, and making its nine
/// tokens again each time was 4% of an expansion (a copy is one handle).
fn cached(slot: &'static Cached, make: fn() -> TokenStream) -> TokenStream {
    slot.with(|c| c.borrow_mut().get_or_insert_with(make).clone())
}

/// Forgets the cached paths of [`nd`] and [`rt`]: the compiler's tokens
/// live as long as one macro invocation, so each invocation starts and
/// ends with this (`crate_fns::Scope`).
pub fn forget_cached_paths() {
    for slot in [&ND, &RT] {
        slot.with(|c| c.borrow_mut().take());
    }
}

/// Whether values of the type are `Copy` in generated code.
pub fn is_copy(ty: &Ty) -> bool {
    match ty {
        Ty::Scalar(_) => true,
        Ty::Array { .. } | Ty::Opaque(_) => false,
        Ty::Tuple(ts) => ts.iter().all(is_copy),
    }
}

/// The representation of an owned value of the type.
pub fn owned_repr(ty: &Ty) -> Repr {
    if is_copy(ty) {
        Repr::Val
    } else {
        Repr::Owned
    }
}

/// The representation of a value of the type passed with the canonical
/// convention (arrays as views, opaque values by reference, everything else
/// owned).
pub fn canonical_repr(ty: &Ty) -> Repr {
    match ty {
        Ty::Array { .. } | Ty::Opaque(_) => Repr::View,
        _ => owned_repr(ty),
    }
}

/// `f64`, `i64` or `bool`.
pub fn elem_ty(s: Scalar) -> TokenStream {
    match s {
        Scalar::F64 => quote!(f64),
        Scalar::I64 => quote!(i64),
        Scalar::Bool => quote!(bool),
    }
}

/// `::linad::ndarray::IxR` (`Ix0` for rank 0).
pub fn dim_ty(rank: usize) -> TokenStream {
    let nd = nd();
    match rank {
        0 => quote!(#nd::Ix0),
        1 => quote!(#nd::Ix1),
        2 => quote!(#nd::Ix2),
        3 => quote!(#nd::Ix3),
        4 => quote!(#nd::Ix4),
        5 => quote!(#nd::Ix5),
        6 => quote!(#nd::Ix6),
        _ => quote!(#nd::IxDyn),
    }
}

/// `ArrayR<E>` (ndarray's alias of `Array<E, IxR>`: the short spelling
/// keeps the emitted tokens few, issue 12).
pub fn array_ty(elem: Scalar, rank: usize) -> TokenStream {
    let (nd, e) = (nd(), elem_ty(elem));
    match rank {
        0 => quote!(#nd::Array0<#e>),
        1 => quote!(#nd::Array1<#e>),
        2 => quote!(#nd::Array2<#e>),
        3 => quote!(#nd::Array3<#e>),
        4 => quote!(#nd::Array4<#e>),
        5 => quote!(#nd::Array5<#e>),
        6 => quote!(#nd::Array6<#e>),
        _ => quote!(#nd::ArrayD<#e>),
    }
}

/// `ArrayViewR<'a, E>` (`ArrayView<'a, E, IxR>`) for the lifetime `lt`.
pub fn view_ty_in(elem: Scalar, rank: usize, lt: &TokenStream) -> TokenStream {
    let (nd, e) = (nd(), elem_ty(elem));
    match rank {
        0 => quote!(#nd::ArrayView0<#lt, #e>),
        1 => quote!(#nd::ArrayView1<#lt, #e>),
        2 => quote!(#nd::ArrayView2<#lt, #e>),
        3 => quote!(#nd::ArrayView3<#lt, #e>),
        4 => quote!(#nd::ArrayView4<#lt, #e>),
        5 => quote!(#nd::ArrayView5<#lt, #e>),
        6 => quote!(#nd::ArrayView6<#lt, #e>),
        _ => quote!(#nd::ArrayViewD<#lt, #e>),
    }
}

/// The Rust type of an owned value of the IR type.
pub fn owned_ty(ty: &Ty) -> TokenStream {
    match ty {
        Ty::Scalar(s) => elem_ty(*s),
        Ty::Array { elem, rank } => array_ty(*elem, *rank),
        Ty::Tuple(ts) => tuple_ty(ts.iter().map(owned_ty).collect()),
        Ty::Opaque(path) => opaque_ty(path),
    }
}

/// The Rust type an opaque IR type names (a path, as text).
fn opaque_ty(path: &str) -> TokenStream {
    match syn::parse_str::<syn::Type>(path) {
        Ok(t) => quote!(#t),
        Err(_) => quote!(::core::compile_error!(
            "linad: an opaque type is not a Rust type"
        )),
    }
}

/// The Rust type of a value of the IR type held as `repr`.
pub fn repr_ty(ty: &Ty, repr: Repr) -> TokenStream {
    repr_ty_in(ty, repr, &quote!('_))
}

/// [`repr_ty`] with views borrowing for the lifetime `lt`.
pub fn repr_ty_in(ty: &Ty, repr: Repr, lt: &TokenStream) -> TokenStream {
    match (ty, repr) {
        (Ty::Array { elem, rank }, Repr::View) => view_ty_in(*elem, *rank, lt),
        (Ty::Opaque(path), Repr::View) => {
            let t = opaque_ty(path);
            quote!(&#lt #t)
        }
        _ => owned_ty(ty),
    }
}

/// A tuple type (`(T,)` for one part).
pub fn tuple_ty(parts: Vec<TokenStream>) -> TokenStream {
    if parts.len() == 1 {
        let p = &parts[0];
        quote!((#p,))
    } else {
        quote!((#(#parts),*))
    }
}

/// A tuple expression or pattern (`(x,)` for one part).
pub fn tuple<T: quote::ToTokens>(parts: &[T]) -> TokenStream {
    if parts.len() == 1 {
        let p = &parts[0];
        quote!((#p,))
    } else {
        quote!((#(#parts),*))
    }
}

/// A flat list of values as one Rust value: the value itself for one, a
/// tuple otherwise (`()` for none). Functions return their results so.
pub fn flat(parts: &[TokenStream]) -> TokenStream {
    if parts.len() == 1 {
        parts[0].clone()
    } else {
        quote!((#(#parts),*))
    }
}

/// Whether a type is an array of rank above [`MAX_RANK`] anywhere inside.
pub fn too_deep(ty: &Ty) -> bool {
    match ty {
        Ty::Scalar(_) | Ty::Opaque(_) => false,
        Ty::Array { rank, .. } => *rank > MAX_RANK,
        Ty::Tuple(ts) => ts.iter().any(too_deep),
    }
}
