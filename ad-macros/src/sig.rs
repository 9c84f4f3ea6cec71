//! The model shared by the front end (`lower`) and the emitter (`emit`):
//! what each parameter and the output of a `#[differentiable]` function are,
//! in terms of both Rust and the IR, and what lowering hands the emitter
//! (the [`Lowered`] program and the [`Callee`]s it calls). The emitter
//! imports nothing else from the front end.
//!
//! IR mapping: `f64` -> `F64`; tuple of `f64` -> `Tuple([F64; n])`; any Rust
//! integer type -> `I64`; `bool` -> `Bool`; `f64` arrays of rank r ->
//! `[f64]^r`; integer arrays -> `[i64]^r`. A tuple output is flattened into
//! several IR results (leaves in order) and re-nested by the wrappers.

use ad_core_ir::ir::Program;
use ad_core_ir::types::{Scalar, Ty};
use proc_macro2::Span;

/// How an array parameter is passed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Passing {
    /// `&ArrayN<T>`.
    Ref,
    /// `ArrayViewN<T>`.
    View,
    /// `ArrayN<T>` (owned).
    Owned,
    /// `&[T]` (rank 1).
    Slice,
    /// `&Vec<T>` (rank 1).
    VecRef,
    /// `Vec<T>` (rank 1, owned).
    Vec,
    /// `[T; N]` (rank 1, by value).
    Fixed,
    /// `&[T; N]` (rank 1).
    FixedRef,
}

impl Passing {
    /// A slice, a `Vec` or a fixed-size array: read through
    /// `ArrayView1::from(&x[..])`; a cotangent of it is a `Vec` (an array
    /// `[f64; N]` for a fixed-size array).
    pub fn is_slice_like(self) -> bool {
        matches!(
            self,
            Passing::Slice | Passing::VecRef | Passing::Vec | Passing::Fixed | Passing::FixedRef
        )
    }

    /// The passing of a reference to a value passed so: `&ArrayN`,
    /// `&Vec<T>`, `&[T; N]`; `None` for what is already a view or a
    /// reference.
    pub fn by_ref(self) -> Option<Passing> {
        match self {
            Passing::Owned => Some(Passing::Ref),
            Passing::Vec => Some(Passing::VecRef),
            Passing::Fixed => Some(Passing::FixedRef),
            Passing::Ref | Passing::View | Passing::Slice | Passing::VecRef | Passing::FixedRef => {
                None
            }
        }
    }

    /// A fixed-size array `[T; N]` or `&[T; N]`: its tangent and cotangent
    /// are `[f64; N]`.
    pub fn is_fixed(self) -> bool {
        matches!(self, Passing::Fixed | Passing::FixedRef)
    }
}

/// What a parameter is.
#[derive(Clone, Debug, PartialEq)]
pub enum ParamKind {
    /// `f64` (differentiable).
    F64,
    /// A tuple of `n` `f64`s (differentiable).
    F64Tuple(usize),
    /// An `f64` array of rank 1..=3 (differentiable).
    F64Array {
        /// Rank.
        rank: usize,
        /// How it is passed.
        passing: Passing,
    },
    /// A Rust integer type (`usize`, `i64`, `i32`, `u32`, ...): a constant.
    Int(syn::Type),
    /// `bool`: a constant.
    Bool,
    /// An enum without fields, by value (its discriminant, `x as i64`): a
    /// constant.
    Enum(syn::Type),
    /// An integer array (index array): a constant.
    IntArray {
        /// Rank.
        rank: usize,
        /// How it is passed.
        passing: Passing,
        /// The element type as written (`usize`, `i64`, ...).
        elem: syn::Type,
    },
}

impl ParamKind {
    /// Whether the kind carries a derivative.
    pub fn is_differentiable(&self) -> bool {
        matches!(
            self,
            ParamKind::F64 | ParamKind::F64Tuple(_) | ParamKind::F64Array { .. }
        )
    }

    /// The IR type of the parameter.
    pub fn ir_ty(&self) -> Ty {
        match self {
            ParamKind::F64 => Ty::F64,
            ParamKind::F64Tuple(n) => Ty::Tuple(vec![Ty::F64; *n]),
            ParamKind::F64Array { rank, .. } => Ty::f64s(*rank),
            ParamKind::Int(_) => Ty::I64,
            ParamKind::Bool => Ty::BOOL,
            ParamKind::Enum(_) => Ty::I64,
            ParamKind::IntArray { rank, .. } => Ty::array(Scalar::I64, *rank),
        }
    }
}

/// One parameter.
#[derive(Clone, Debug)]
pub struct Param {
    /// Its name.
    pub ident: syn::Ident,
    /// Its type as written.
    pub ty: syn::Type,
    /// What it is.
    pub kind: ParamKind,
    /// Differentiated (differentiable and selected by `wrt`, or all when no `wrt`).
    pub wrt: bool,
}

/// The output type.
#[derive(Clone, Debug, PartialEq)]
pub enum Out {
    /// `f64`.
    F64,
    /// An owned `f64` array of the given rank.
    Array(usize),
    /// A fixed-size array `[f64; N]` (the type as written): a
    /// one-dimensional array to the IR.
    Fixed(syn::Type),
    /// A tuple of outputs.
    Tuple(Vec<Out>),
}

impl Out {
    /// The IR result types: the leaves, in order.
    pub fn ir_tys(&self) -> Vec<Ty> {
        match self {
            Out::F64 => vec![Ty::F64],
            Out::Array(r) => vec![Ty::f64s(*r)],
            Out::Fixed(_) => vec![Ty::f64s(1)],
            Out::Tuple(parts) => parts.iter().flat_map(Out::ir_tys).collect(),
        }
    }
}

/// The signature of a `#[differentiable]` function.
#[derive(Clone, Debug)]
pub struct Signature {
    /// The function's name.
    pub ident: syn::Ident,
    /// Its visibility (companions get the same).
    pub vis: syn::Visibility,
    /// Its parameters, in order.
    pub params: Vec<Param>,
    /// Its output.
    pub out: Out,
    /// The span of the signature, for errors about it.
    pub span: Span,
}

impl Signature {
    /// The differentiated parameters, in order.
    pub fn wrt_params(&self) -> impl Iterator<Item = &Param> {
        self.params.iter().filter(|p| p.wrt)
    }

    /// The IR `wrt` mask over the parameters.
    pub fn wrt_mask(&self) -> Vec<bool> {
        self.params.iter().map(|p| p.wrt).collect()
    }

    /// The IR mask selecting every differentiable parameter (hidden building blocks).
    pub fn all_mask(&self) -> Vec<bool> {
        self.params
            .iter()
            .map(|p| p.kind.is_differentiable())
            .collect()
    }
}

/// The lowered function.
pub struct Lowered {
    /// The function (named as the Rust function) plus extern declarations of
    /// the `#[differentiable]` functions it calls (see `crate::names`).
    pub program: Program,
    /// The IR name of the function.
    pub name: String,
    /// `SrcId(k)` of a statement is the span `spans[k]`.
    pub spans: Vec<Span>,
    /// The functions called, one per extern declared in `program` (except the
    /// derived `__jvp/__lin/__lin_t` declarations).
    pub callees: Vec<Callee>,
}

/// A function called by the lowered function.
pub struct Callee {
    /// The IR name of the extern (the path as written, e.g. `"m::g"`).
    pub ir_name: String,
    /// The path as written, for emission.
    pub path: syn::Path,
    /// `true`: another `#[differentiable]` function, called through its
    /// hidden building blocks with the canonical signature. `false`: a plain
    /// function whose arguments are all constants, called as written.
    pub differentiable: bool,
    /// Rust types of the results (from the `let` annotation at the call site,
    /// `f64` by default); an integer result is converted to `i64` by the emitter.
    pub result_tys: Vec<syn::Type>,
    /// For a `#[linear(..)]` callee (as the crate's source says), a flag per
    /// parameter: linear or not. Derivatives through its linear parameters
    /// only then call the callee itself and its transpose
    /// (`ad_core_ir::driver::declare_linear_extern`).
    pub linear: Option<Vec<bool>>,
    /// For a callee of the crate declared `#[differentiable(wrt(..))]` with
    /// fewer parameters than it could be differentiated in, a flag per
    /// parameter: named by `wrt`. Derivatives where only those arguments
    /// carry tangents then call its derivatives with respect to them alone
    /// (`ad_core_ir::driver::declare_wrt_extern`, `__linadw_g_*`).
    pub wrt: Option<Vec<bool>>,
    /// The callee keeps its residuals for callers (`crate_fns::FnInfo::
    /// residuals`): a top-level call of it stores them
    /// (`ad_core_ir::driver::declare_extern_residuals`, `__linad_g_fwdres`).
    pub residuals: bool,
    /// Not a function: a `const` or `static` item of the crate, read (a
    /// plain extern of no arguments, emitted as its path, `EPS`).
    pub constant: bool,
}
