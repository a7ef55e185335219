//! Mirrors Flink's `NetworkBuffer` / `Buffer`: a memory segment with an id, a data type and the
//! recycler that owns the segment.
//!
//! The bytes are abstracted to a `payload` number (the record a test wrote), so that a remote
//! copy into a consumer segment keeps the data recognisable. Events and the recovery sentinels
//! are unpooled (Flink's `FreeingBufferRecycler`); pooled segments come from the
//! `NetworkBufferPool` (exclusive, via a
//! [`BufferManager`](crate::buffer_manager::BufferManager)) or from a
//! [`LocalBufferPool`](crate::buffer_pool::LocalBufferPool) (floating), each the buffer's
//! `BufferRecycler` (a crate-private interface).
//!
//! Locking contract: a `NetworkBuffer` is owned by one thread at a time (it is `Send`, not
//! `Clone`); [`NetworkBuffer::recycle_buffer`] takes the lock of its recycler only.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::buffer_recycler::BufferRecycler;
use crate::error::Result;
use crate::ids::{BufferId, CheckpointId};
use crate::sync::Arc;

/// What a buffer carries: Flink's `Buffer.DataType` together with the event class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum BufferKind {
    /// A data buffer (`DataType.DATA_BUFFER`, `isBuffer() == true`).
    Data,
    /// An ordinary event (`DataType.EVENT_BUFFER`).
    Event,
    /// `EndOfOutputChannelStateEvent`, which the upstream task writes first into every
    /// subpartition when it starts (`DataType.RECOVERY_COMPLETION`): an event without priority
    /// that blocks the subpartition handing it out until the consumer's `resumeConsumption`.
    EndOfOutputChannelState,
    /// An unaligned `CheckpointBarrier`: the priority event (`PRIORITIZED_EVENT_BUFFER`).
    CheckpointBarrier(CheckpointId),
    /// `RecoveryCheckpointBarrier(checkpointId)`: a non-priority sentinel in the recovery queue.
    RecoveryCheckpointBarrier(CheckpointId),
    /// `EndOfFetchedChannelStateEvent`: the non-priority tail sentinel of the pushed recovered
    /// stream.
    EndOfFetchedChannelState,
    /// `EndOfInputChannelStateEvent`: the legacy tail of a `RecoveredInputChannel`'s queue.
    EndOfInputChannelState,
    /// `EndOfPartitionEvent`: the upstream's last element.
    EndOfPartition,
    /// A `CheckpointBarrier` of an aligned checkpoint with an alignment timeout
    /// (`DataType.TIMEOUTABLE_ALIGNED_CHECKPOINT_BARRIER`): an ordinary event that
    /// `requiresAnnouncement`, so that the consumer can prioritise it if the alignment times out.
    TimeoutableAlignedCheckpointBarrier(CheckpointId),
    /// `EventAnnouncement` of a timeoutable aligned barrier of this checkpoint: a priority event
    /// carrying the barrier's sequence number (the `SequenceBuffer`'s).
    EventAnnouncement(CheckpointId),
}

impl BufferKind {
    /// `Buffer.isBuffer()`: true only for data.
    pub fn is_buffer(self) -> bool {
        matches!(self, BufferKind::Data)
    }

    /// `Buffer.DataType.hasPriority()`.
    pub fn has_priority(self) -> bool {
        matches!(
            self,
            BufferKind::CheckpointBarrier(_) | BufferKind::EventAnnouncement(_)
        )
    }

    /// `Buffer.DataType.isBlockingUpstream()`: `RECOVERY_COMPLETION` and the aligned barriers.
    pub fn is_blocking_upstream(self) -> bool {
        matches!(
            self,
            BufferKind::EndOfOutputChannelState | BufferKind::TimeoutableAlignedCheckpointBarrier(_)
        )
    }

    /// `Buffer.DataType.requiresAnnouncement()`.
    pub fn requires_announcement(self) -> bool {
        matches!(self, BufferKind::TimeoutableAlignedCheckpointBarrier(_))
    }

    /// `Buffer.getDataType()`.
    pub fn data_type(self) -> DataType {
        match self {
            BufferKind::Data => DataType::DataBuffer,
            BufferKind::CheckpointBarrier(_) | BufferKind::EventAnnouncement(_) => DataType::PriorityEventBuffer,
            BufferKind::EndOfOutputChannelState => DataType::RecoveryCompletion,
            // `TIMEOUTABLE_ALIGNED_CHECKPOINT_BARRIER` is an event without priority: the same
            // `nextDataType` as `EVENT_BUFFER` for every caller here.
            _ => DataType::EventBuffer,
        }
    }
}

/// Flink's `Buffer.DataType`, as reported for the *next* element (`nextDataType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum DataType {
    /// `NONE`: nothing (visible) follows.
    None,
    /// `DATA_BUFFER`.
    DataBuffer,
    /// `EVENT_BUFFER`.
    EventBuffer,
    /// `PRIORITIZED_EVENT_BUFFER`.
    PriorityEventBuffer,
    /// `RECOVERY_COMPLETION`: an event that blocks the upstream once handed out.
    RecoveryCompletion,
}

impl DataType {
    /// `DataType.hasPriority()`.
    pub fn has_priority(self) -> bool {
        self == DataType::PriorityEventBuffer
    }

    /// `DataType.isEvent()`.
    pub fn is_event(self) -> bool {
        !matches!(self, DataType::None | DataType::DataBuffer)
    }

    /// `DataType.isBlockingUpstream()`.
    pub fn is_blocking_upstream(self) -> bool {
        self == DataType::RecoveryCompletion
    }

    /// `nextDataType != NONE`, i.e. `BufferAndAvailability.moreAvailable()`.
    pub fn is_available(self) -> bool {
        self != DataType::None
    }
}

/// A plain-data view of a buffer, as it appears in snapshots.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct BufferSnapshot {
    /// The segment id.
    pub id: BufferId,
    /// What it carries.
    pub kind: BufferKind,
    /// The abstracted bytes.
    pub payload: u64,
}

/// Who gets the segment back on recycle: Flink's `BufferRecycler` of the buffer, with the kind
/// of segment it lends (for `Debug` and for [`is_pooled`](NetworkBuffer::is_pooled)).
#[derive(Clone)]
pub(crate) enum Recycler {
    /// An exclusive segment of a channel: `BufferManager.recycle(segment)`.
    Exclusive(Arc<dyn BufferRecycler>),
    /// A floating buffer: `LocalBufferPool.recycle(segment)`.
    Floating(Arc<dyn BufferRecycler>),
    /// `FreeingBufferRecycler`: heap memory, nothing to return.
    Unpooled,
}

/// Mirrors `org.apache.flink.runtime.io.network.buffer.NetworkBuffer`.
pub struct NetworkBuffer {
    id: BufferId,
    kind: BufferKind,
    payload: u64,
    recycler: Recycler,
}

impl NetworkBuffer {
    pub(crate) fn pooled(id: BufferId, recycler: Recycler) -> Self {
        Self {
            id,
            kind: BufferKind::Data,
            payload: 0,
            recycler,
        }
    }

    /// An unpooled (heap) buffer, Flink's `new NetworkBuffer(segment, FreeingBufferRecycler)`:
    /// events, and producer-side buffers in tests.
    pub fn unpooled(id: BufferId, kind: BufferKind, payload: u64) -> Self {
        Self {
            id,
            kind,
            payload,
            recycler: Recycler::Unpooled,
        }
    }

    /// `EventSerializer.toBuffer(event, false)`: an unpooled event buffer with
    /// [`BufferId::UNPOOLED`].
    pub fn event(kind: BufferKind) -> Self {
        debug_assert!(!kind.is_buffer(), "an event buffer cannot carry data");
        Self::unpooled(BufferId::UNPOOLED, kind, 0)
    }

    /// Writes into a requested buffer (the serializer filling a segment): sets kind and payload.
    pub fn fill(mut self, kind: BufferKind, payload: u64) -> Self {
        self.kind = kind;
        self.payload = payload;
        self
    }

    /// The segment id.
    pub fn id(&self) -> BufferId {
        self.id
    }

    /// What the buffer carries.
    pub fn kind(&self) -> BufferKind {
        self.kind
    }

    /// The abstracted bytes.
    pub fn payload(&self) -> u64 {
        self.payload
    }

    /// `Buffer.isBuffer()`.
    pub fn is_buffer(&self) -> bool {
        self.kind.is_buffer()
    }

    /// `Buffer.getDataType()`.
    pub fn data_type(&self) -> DataType {
        self.kind.data_type()
    }

    /// Whether the segment belongs to a pool (not `FreeingBufferRecycler`).
    pub fn is_pooled(&self) -> bool {
        !matches!(self.recycler, Recycler::Unpooled)
    }

    /// The plain-data view used by snapshots.
    pub fn snapshot(&self) -> BufferSnapshot {
        BufferSnapshot {
            id: self.id,
            kind: self.kind,
            payload: self.payload,
        }
    }

    /// `Buffer.recycleBuffer()`: returns the segment to its recycler exactly once. Recycling a
    /// segment that is not lent out is [`ChannelError::DoubleRecycle`](crate::ChannelError).
    pub fn recycle_buffer(self) -> Result<()> {
        match self.recycler {
            Recycler::Exclusive(recycler) | Recycler::Floating(recycler) => recycler.recycle(self.id),
            Recycler::Unpooled => Ok(()),
        }
    }

    pub(crate) fn recycler_ref(&self) -> &Recycler {
        &self.recycler
    }

    /// Recycles a buffer on a path where Flink ignores (logs) the outcome, e.g. release.
    pub(crate) fn recycle_quietly(self) {
        // Flink logs and ignores failures while releasing; the segment ledger stays consistent.
        let _ = self.recycle_buffer();
    }
}

impl fmt::Debug for NetworkBuffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let owner = match self.recycler {
            Recycler::Exclusive(_) => "exclusive",
            Recycler::Floating(_) => "floating",
            Recycler::Unpooled => "unpooled",
        };
        write!(f, "{:?}#{}({:?}, {owner})", self.kind, self.id.0, self.payload)
    }
}
