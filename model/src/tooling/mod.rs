//! The checker's tooling, above the protocol: the search and its reports, progress ranks,
//! simulation, configuration growth, and the pictures and words a person reads. Nothing in the
//! protocol (the files outside this folder) imports anything here.

pub mod check;
pub mod fingerprint;
pub mod format;
pub mod growth;
pub mod model;
pub mod por;
pub mod progress;
pub mod search;
pub mod simulate;
pub mod svg;
pub mod task_level;
