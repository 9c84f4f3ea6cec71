//! The value of an iterator chain not consumed yet (`IterVal`: its source,
//! `enumerate` / `rev` flags and `map` closures), held in a [`super::val::Val`]
//! until `iter.rs` lowers the method that consumes it. Data only: `val.rs`
//! and `iter.rs` both depend on it, not on each other.

use super::types::{Elem, IntTy};
use super::visit_order::Plan;
use ad_core_ir::ir::Atom;

/// How the items of a zipped iterator nest: `a.zip(b).zip(c)` gives `((a, b), c)`.
#[derive(Clone, Debug, PartialEq)]
pub enum Item {
    /// The element of source `k`.
    Leaf(usize),
    /// A pair from `zip`.
    Pair(Box<Item>, Box<Item>),
}

/// Where the items come from.
#[derive(Clone, Debug, PartialEq)]
pub enum Source {
    /// Elements of arrays of one shape (zipped).
    Arrays {
        /// The arrays and their element types.
        arrs: Vec<(Atom, Elem)>,
        /// Their rank.
        rank: usize,
        /// The item structure.
        item: Item,
    },
    /// The sub-arrays `arr[i]` along axis 0 (`outer_iter`, `rows`, and
    /// `columns` of the transpose).
    Lanes {
        /// The array.
        arr: Atom,
        /// Its element type.
        elem: Elem,
        /// Its rank (items have one less).
        rank: usize,
    },
    /// The windows `arr[p..p + size]` of a vector, `p` in
    /// `0..len - size + 1` (`a.windows(size)`; none when `size > len`), or
    /// its chunks (`cut`).
    Windows {
        /// The vector.
        arr: Atom,
        /// Its element type.
        elem: Elem,
        /// The window length (positive: checked where made).
        size: Atom,
        /// Windows or chunks.
        cut: Cut,
    },
    /// The integers `start + k * step` for `k` in `0..n`: a range
    /// `start..start + n` (`step` 1), or one `.step_by(..)`.
    Range {
        /// First value.
        start: Atom,
        /// Number of values (non-negative).
        n: Atom,
        /// Their type.
        ty: IntTy,
        /// The distance between values (positive).
        step: Atom,
    },
}

/// How [`Source::Windows`] cuts its vector.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cut {
    /// Every window of `size` elements, one element apart.
    Windows,
    /// Chunks of `size` elements, `len / size` of them (`exact_chunks`,
    /// `chunks_exact`: a shorter rest is left out).
    Exact,
    /// Chunks of `size` elements and a shorter last one for the rest
    /// (`chunks`: `ceil(len / size)` of them).
    Partial,
}

/// An iterator chain not consumed yet.
#[derive(Clone, Debug, PartialEq)]
pub struct IterVal {
    /// The source.
    pub src: Source,
    /// `.enumerate()` was called (items are `(index, item)`).
    pub enumerate: bool,
    /// `.rev()` was called.
    pub rev: bool,
    /// `.enumerate()` came after an odd number of `.rev()`: the index counts
    /// iterations, not source positions.
    pub enum_after_rev: bool,
    /// `a.indexed_iter()`: with `enumerate`, the index is the element's
    /// multi-index (a `usize` for rank 1, a tuple of them otherwise), as
    /// ndarray's `indexed_iter` gives it.
    pub multi_index: bool,
    /// The closures of `.map(..)`, in order.
    pub maps: Vec<syn::Expr>,
    /// The closures of `.filter(..)`, each with the number of `map`s
    /// applied before it (it sees their result).
    pub filters: Vec<(usize, syn::Expr)>,
    /// Arrays visited in ndarray's memory order (`a.fold(..)`), not in
    /// the logical order of `iter()`.
    pub order: Option<Plan>,
}

impl IterVal {
    /// `a.iter()`.
    pub fn of_array(arr: Atom, elem: Elem, rank: usize) -> IterVal {
        IterVal {
            src: Source::Arrays {
                arrs: vec![(arr, elem)],
                rank,
                item: Item::Leaf(0),
            },
            enumerate: false,
            rev: false,
            enum_after_rev: false,
            multi_index: false,
            maps: vec![],
            filters: vec![],
            order: None,
        }
    }

    /// `a.indexed_iter()`: `(index, element)` in logical order.
    pub fn of_indexed_array(arr: Atom, elem: Elem, rank: usize) -> IterVal {
        IterVal {
            enumerate: true,
            multi_index: true,
            ..IterVal::of_array(arr, elem, rank)
        }
    }

    /// The windows (or chunks: `cut`) of length `size` of the vector `arr`.
    pub fn of_windows(arr: Atom, elem: Elem, size: Atom, cut: Cut) -> IterVal {
        IterVal {
            src: Source::Windows {
                arr,
                elem,
                size,
                cut,
            },
            ..IterVal::of_lanes(arr, elem, 1)
        }
    }

    /// The sub-arrays of `arr` along axis 0.
    pub fn of_lanes(arr: Atom, elem: Elem, rank: usize) -> IterVal {
        IterVal {
            src: Source::Lanes { arr, elem, rank },
            enumerate: false,
            rev: false,
            enum_after_rev: false,
            multi_index: false,
            maps: vec![],
            filters: vec![],
            order: None,
        }
    }

    /// Whether the chain has `map`s or `filter`s (so items are not the
    /// source's elements as they are).
    pub fn staged(&self) -> bool {
        !self.maps.is_empty() || !self.filters.is_empty()
    }

    /// Whether the lowering needs the item's index (a `Build` or a `Loop`).
    pub fn indexed(&self) -> bool {
        self.enumerate
            || self.rev
            || self.order.is_some()
            || matches!(
                self.src,
                Source::Range { .. } | Source::Lanes { .. } | Source::Windows { .. }
            )
    }
}
