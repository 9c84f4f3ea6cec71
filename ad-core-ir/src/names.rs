//! Names of derived functions: a base function's name plus a suffix per kind
//! of derived function ([`Derived`]). The passes build every derived name
//! through [`Derived::of`] (or [`DerivedName`]'s `Display`) and take names
//! apart with [`DerivedName::parse`], so the suffixes are spelled once, here.
//!
//! ```text
//! f                 --jvp-->        f__jvp
//! f__jvp            --unzip-->      f__fwd, f__lin
//! f__lin            --transpose-->  f__lin_t
//! extern g, #[linear]               g__linear, g__linear_t
//! extern g keeping its residuals    g__fwdres, g__linres, g__linres_t
//! extern g with wrt(..)             g__w, g__w__jvp, g__w__lin, g__w__lin_t
//! ```
//!
//! A derived name may itself be a base: `g__w__jvp` is the JVP of `g__w`,
//! and a `#[linear]` function `f` is differentiated as `f__linear`, giving
//! `f__linear__jvp`.

use std::fmt;

/// Which derived function of a base function a name denotes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Derived {
    /// `f__jvp(x ; dx) -> (y ; dy)`: primal and tangent (Linear A).
    Jvp,
    /// `f__fwd(x) -> (y, r..)`: the primal with its residuals.
    Fwd,
    /// `f__lin(r.. ; dx) -> (; dy)`: the linear (forward tangent) function.
    Lin,
    /// `f__lin_t(r.. ; ȳ) -> (; x̄)`: its transpose.
    LinT,
    /// `f__vjp(x ; ȳ) -> (y ; x̄)`: `f__fwd` and `f__lin_t` in one sweep,
    /// their loops fused ([`crate::vjp`]).
    Vjp,
    /// `g__linear(a ; x) -> (; y)`: an extern declared linear, as a linear
    /// function of its linear parameters (`g` itself).
    Linear,
    /// `g__linear_t(a ; ȳ) -> (; x̄)`: its transpose.
    LinearT,
    /// `g__fwdres(x) -> (y.., r)`: an extern's forward half keeping its
    /// residuals as one opaque value.
    FwdRes,
    /// `g__linres(r ; dx) -> (; dy)`: its linear map at those residuals.
    LinRes,
    /// `g__linres_t(r ; ȳ) -> (; x̄)`: the transpose of that.
    LinResT,
    /// `g__w`: the extern `g` (the same function) differentiated with
    /// respect to the parameters its `wrt` flags alone.
    Restricted,
}

impl Derived {
    /// Every kind.
    pub const ALL: [Derived; 11] = [
        Derived::Jvp,
        Derived::Fwd,
        Derived::Lin,
        Derived::LinT,
        Derived::Vjp,
        Derived::Linear,
        Derived::LinearT,
        Derived::FwdRes,
        Derived::LinRes,
        Derived::LinResT,
        Derived::Restricted,
    ];

    /// The suffix this kind appends to the base name. No suffix ends with
    /// another, so a name has at most one kind.
    pub fn suffix(self) -> &'static str {
        match self {
            Derived::Jvp => "__jvp",
            Derived::Fwd => "__fwd",
            Derived::Lin => "__lin",
            Derived::LinT => "__lin_t",
            Derived::Vjp => "__vjp",
            Derived::Linear => "__linear",
            Derived::LinearT => "__linear_t",
            Derived::FwdRes => "__fwdres",
            Derived::LinRes => "__linres",
            Derived::LinResT => "__linres_t",
            Derived::Restricted => "__w",
        }
    }

    /// The name of this derived function of `base`
    /// (`Derived::Jvp.of("f")` is `f__jvp`).
    pub fn of(self, base: &str) -> String {
        DerivedName::new(base, self).to_string()
    }

    /// The kind of the transpose of a linear kind: `Lin`, `Linear` and
    /// `LinRes` have one; the others are not linear functions transposition
    /// produces or reads.
    pub fn transpose(self) -> Option<Derived> {
        match self {
            Derived::Lin => Some(Derived::LinT),
            Derived::Linear => Some(Derived::LinearT),
            Derived::LinRes => Some(Derived::LinResT),
            Derived::Jvp
            | Derived::Fwd
            | Derived::LinT
            | Derived::Vjp
            | Derived::LinearT
            | Derived::FwdRes
            | Derived::LinResT
            | Derived::Restricted => None,
        }
    }
}

/// A derived function's name taken apart: `f__lin_t` is `f` and
/// [`Derived::LinT`]. `Display` gives the name back.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DerivedName {
    /// The function it is derived from (itself possibly a derived name).
    pub base: String,
    /// Which derived function.
    pub kind: Derived,
}

impl DerivedName {
    /// `kind` of `base`.
    pub fn new(base: impl Into<String>, kind: Derived) -> Self {
        DerivedName {
            base: base.into(),
            kind,
        }
    }

    /// Takes `name` apart at the suffix that ends it (only the last one:
    /// `g__w__jvp` is the JVP of `g__w`), or `None` when no kind's suffix
    /// does. Invariant: `parse(&d.to_string()) == Some(d)`.
    pub fn parse(name: &str) -> Option<DerivedName> {
        Derived::ALL.into_iter().find_map(|kind| {
            name.strip_suffix(kind.suffix())
                .map(|base| DerivedName::new(base, kind))
        })
    }
}

impl fmt::Display for DerivedName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.base, self.kind.suffix())
    }
}

/// The name of the transpose of the linear function `f`: `f__lin_t` for
/// `f__lin`, `g__linear_t` for `g__linear`, `g__linres_t` for `g__linres`
/// ([`Derived::transpose`]); a linear function that is none of these (one
/// written by hand) gets the same `_t` appended.
pub fn transpose_name(f: &str) -> String {
    match DerivedName::parse(f).and_then(|d| Some((d.base, d.kind.transpose()?))) {
        Some((base, t)) => t.of(&base),
        None => format!("{f}_t"),
    }
}

/// The extern that is `g` differentiated with respect to the parameters its
/// [`crate::ir::Program::wrt_externs`] entry flags only: `g__w`
/// ([`Derived::Restricted`]).
pub fn restricted_name(g: &str) -> String {
    Derived::Restricted.of(g)
}

/// The names of the derived functions of one function, spelled out (what
/// the macro looks calls up by).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Names {
    /// `f__jvp`.
    pub jvp: String,
    /// `f__fwd`.
    pub fwd: String,
    /// `f__lin`.
    pub lin: String,
    /// `f__lin_t`.
    pub lin_t: String,
    /// `f__vjp`.
    pub vjp: String,
    /// `f__linear`: an extern declared linear, as a linear function.
    pub linear: String,
    /// `f__linear_t`: its transpose.
    pub linear_t: String,
    /// `f__fwdres`: an extern's forward half keeping its residuals as one
    /// opaque value (see [`crate::externs::declare_extern_residuals`]).
    pub fwdres: String,
    /// `f__linres`: its linear map at those residuals.
    pub linres: String,
    /// `f__linres_t`: the transpose of that.
    pub linres_t: String,
}

impl Names {
    /// The derived names of `f`.
    pub fn of(f: &str) -> Names {
        Names {
            jvp: Derived::Jvp.of(f),
            fwd: Derived::Fwd.of(f),
            lin: Derived::Lin.of(f),
            lin_t: Derived::LinT.of(f),
            vjp: Derived::Vjp.of(f),
            linear: Derived::Linear.of(f),
            linear_t: Derived::LinearT.of(f),
            fwdres: Derived::FwdRes.of(f),
            linres: Derived::LinRes.of(f),
            linres_t: Derived::LinResT.of(f),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_print_and_parse_back() {
        for kind in Derived::ALL {
            for base in ["f", "m::g", "g__w", "f__linear", "a_", ""] {
                let d = DerivedName::new(base, kind);
                assert_eq!(DerivedName::parse(&d.to_string()), Some(d));
            }
        }
        assert_eq!(Derived::Jvp.of(&restricted_name("g")), "g__w__jvp");
        assert_eq!(DerivedName::parse("f"), None);
        assert_eq!(transpose_name("f__lin"), "f__lin_t");
        assert_eq!(transpose_name("g__linear"), "g__linear_t");
        assert_eq!(transpose_name("g__w__linres"), "g__w__linres_t");
        assert_eq!(transpose_name("l"), "l_t");
        let n = Names::of("f");
        assert_eq!(
            [n.jvp, n.fwd, n.lin, n.lin_t, n.linear, n.linear_t],
            [
                "f__jvp",
                "f__fwd",
                "f__lin",
                "f__lin_t",
                "f__linear",
                "f__linear_t"
            ]
        );
        assert_eq!(
            [n.fwdres, n.linres, n.linres_t],
            ["f__fwdres", "f__linres", "f__linres_t"]
        );
    }
}
