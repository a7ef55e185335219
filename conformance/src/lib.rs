//! Conformance suite: a versioned trace format, drivers that replay model traces against the
//! implementation in `recovery-impl`, trace generators, and validation of implementation logs
//! against the model. The `cdr` binary is its command-line front end.

pub mod cli;
pub mod explore;
