//! The identities Flink passes as plain values: a checkpoint's `long` id and a memory segment's
//! identity. They sit below every module, errors included, so that naming an id never imports
//! the classes that hand them out.

use serde::{Deserialize, Serialize};

/// A checkpoint id, Flink's `long checkpointId`; `-1` is Flink's `NONE`.
pub type CheckpointId = i64;

/// The identity of a memory segment (or of an unpooled event buffer), so that a test can
/// recycle one specific buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct BufferId(pub u32);

impl BufferId {
    /// The id of the sentinels and events a channel creates itself (`EventSerializer.toBuffer`).
    pub const UNPOOLED: BufferId = BufferId(u32::MAX);
}
