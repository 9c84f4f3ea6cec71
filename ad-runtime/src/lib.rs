//! placeholder, replaced by the runtime issue
