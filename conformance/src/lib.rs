//! Conformance suite: a versioned trace format, drivers that replay model traces against the
//! implementation in `recovery-impl`, trace generators, and validation of implementation logs
//! against the model. The `cdr` crate is its command-line front end: argument parsing, progress
//! lines, reports and exit codes live there, so this library prints nothing.
//!
//! The data takes one way: preset/config -> model -> path -> [`trace::Trace`] ->
//! [`driver::Driver`] -> implementation -> [`observation::Observation`] / [`observation::Snapshot`]
//! -> [`replay`] compares. [`projection`] is where the model and the implementation meet.
#![deny(missing_docs)]

pub mod bounded;
pub mod conform;
pub mod driver;
pub mod generate;
pub mod impl_driver;
pub mod itf;
pub mod observation;
pub mod projection;
pub mod protocol;
pub mod replay;
pub mod task_conform;
pub mod task_driver;
pub mod trace;
pub mod validate;
