//! The task level's tooling: its check, and its actions and paths in words.

pub mod check;
pub mod format;
pub mod model;
