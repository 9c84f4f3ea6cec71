//! The errors of the passes (JVP, unzip, transposition) and whose they are.
//!
//! A pass sets the [`ErrorKind`] where it raises the error:
//! [`ErrorKind::Unsupported`] for a construct of the user's program it
//! cannot differentiate (reported at the statement's source),
//! [`ErrorKind::Internal`] for an input its contract rules out, which only a
//! compiler bug produces. The driver reports an error by its kind alone
//! (`DriverError::Unsupported` or `DriverError::Internal`), with the
//! message as raised.
//!
//! ```text
//! raised:  PassError { kind: Unsupported, msg: "reverse mode of a loop, ..", src: None }
//! driver:  DriverError::Unsupported { msg: "reverse mode of a loop, ..", src: None }
//! macro:   error: cannot differentiate this: reverse mode of a loop, ..
//! ```

use crate::ir::SrcId;
use std::fmt;

/// Whose failure an error is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// A construct that cannot be differentiated: a limitation the user
    /// meets, reported at the statement's source.
    Unsupported,
    /// A compiler bug: an input the pass's contract rules out.
    Internal,
}

/// A failure of JVP, unzip or transposition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PassError {
    /// Whose failure it is.
    pub kind: ErrorKind,
    /// What went wrong (the text the user sees for an unsupported construct).
    pub msg: String,
    /// The statement's source id, where known.
    pub src: Option<SrcId>,
}

impl PassError {
    /// An unsupported construct of the user's program.
    pub fn unsupported(msg: impl Into<String>, src: Option<SrcId>) -> Self {
        PassError {
            kind: ErrorKind::Unsupported,
            msg: msg.into(),
            src,
        }
    }

    /// A compiler bug.
    pub fn internal(msg: impl Into<String>, src: Option<SrcId>) -> Self {
        PassError {
            kind: ErrorKind::Internal,
            msg: msg.into(),
            src,
        }
    }
}

impl fmt::Display for PassError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.msg)
    }
}

impl std::error::Error for PassError {}
