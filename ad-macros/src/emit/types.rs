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
//! Generated code names ndarray and the runtime only through the facade,
//! by the short names of [`super::paths`].

use crate::text::{text, Code};
use ad_core_ir::types::{Scalar, Ty};

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

pub use super::paths::{nd, rt};

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
pub fn elem_ty(s: Scalar) -> Code {
    match s {
        Scalar::F64 => text!(f64),
        Scalar::I64 => text!(i64),
        Scalar::Bool => text!(bool),
    }
}

/// `::linad::ndarray::IxR` (`Ix0` for rank 0).
pub fn dim_ty(rank: usize) -> Code {
    let nd = nd();
    match rank {
        0 => text!(#nd::Ix0),
        1 => text!(#nd::Ix1),
        2 => text!(#nd::Ix2),
        3 => text!(#nd::Ix3),
        4 => text!(#nd::Ix4),
        5 => text!(#nd::Ix5),
        6 => text!(#nd::Ix6),
        _ => text!(#nd::IxDyn),
    }
}

/// `ArrayR<E>` (ndarray's alias of `Array<E, IxR>`: the short spelling
/// keeps the emitted tokens few, issue 12).
pub fn array_ty(elem: Scalar, rank: usize) -> Code {
    let (nd, e) = (nd(), elem_ty(elem));
    match rank {
        0 => text!(#nd::Array0<#e>),
        1 => text!(#nd::Array1<#e>),
        2 => text!(#nd::Array2<#e>),
        3 => text!(#nd::Array3<#e>),
        4 => text!(#nd::Array4<#e>),
        5 => text!(#nd::Array5<#e>),
        6 => text!(#nd::Array6<#e>),
        _ => text!(#nd::ArrayD<#e>),
    }
}

/// `ArrayViewR<'a, E>` (`ArrayView<'a, E, IxR>`) for the lifetime `lt`.
pub fn view_ty_in(elem: Scalar, rank: usize, lt: &Code) -> Code {
    let (nd, e) = (nd(), elem_ty(elem));
    match rank {
        0 => text!(#nd::ArrayView0<#lt, #e>),
        1 => text!(#nd::ArrayView1<#lt, #e>),
        2 => text!(#nd::ArrayView2<#lt, #e>),
        3 => text!(#nd::ArrayView3<#lt, #e>),
        4 => text!(#nd::ArrayView4<#lt, #e>),
        5 => text!(#nd::ArrayView5<#lt, #e>),
        6 => text!(#nd::ArrayView6<#lt, #e>),
        _ => text!(#nd::ArrayViewD<#lt, #e>),
    }
}

/// The Rust type of an owned value of the IR type.
pub fn owned_ty(ty: &Ty) -> Code {
    match ty {
        Ty::Scalar(s) => elem_ty(*s),
        Ty::Array { elem, rank } => array_ty(*elem, *rank),
        Ty::Tuple(ts) => tuple_ty(ts.iter().map(owned_ty).collect()),
        Ty::Opaque(path) => opaque_ty(path),
    }
}

/// The Rust type an opaque IR type names (a path, as text).
fn opaque_ty(path: &str) -> Code {
    // Its text (a type written in the body is not the user's token).
    match syn::parse_str::<syn::Type>(path) {
        Ok(_) => {
            let mut c = Code::new();
            c.push_token(path);
            c
        }
        Err(_) => text!(::core::compile_error!(
            "linad: an opaque type is not a Rust type"
        )),
    }
}

/// The Rust type of a value of the IR type held as `repr`.
pub fn repr_ty(ty: &Ty, repr: Repr) -> Code {
    repr_ty_in(ty, repr, &text!('_))
}

/// [`repr_ty`] with views borrowing for the lifetime `lt`.
pub fn repr_ty_in(ty: &Ty, repr: Repr, lt: &Code) -> Code {
    match (ty, repr) {
        (Ty::Array { elem, rank }, Repr::View) => view_ty_in(*elem, *rank, lt),
        (Ty::Opaque(path), Repr::View) => {
            let t = opaque_ty(path);
            text!(&#lt #t)
        }
        _ => owned_ty(ty),
    }
}

/// A tuple type (`(T,)` for one part).
pub fn tuple_ty<T: crate::text::ToText>(parts: Vec<T>) -> Code {
    if parts.len() == 1 {
        let p = &parts[0];
        text!((#p,))
    } else {
        text!((#(#parts),*))
    }
}

/// A tuple expression or pattern (`(x,)` for one part).
pub fn tuple<T: crate::text::ToText>(parts: &[T]) -> Code {
    if parts.len() == 1 {
        let p = &parts[0];
        text!((#p,))
    } else {
        text!((#(#parts),*))
    }
}

/// A flat list of values as one Rust value: the value itself for one, a
/// tuple otherwise (`()` for none). Functions return their results so.
pub fn flat<T: crate::text::ToText>(parts: &[T]) -> Code {
    if parts.len() == 1 {
        let p = &parts[0];
        text!(#p)
    } else {
        text!((#(#parts),*))
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
