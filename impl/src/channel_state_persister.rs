//! Mirrors Flink's `ChannelStatePersister` (the per-channel checkpoint status machine) and a
//! recording `ChannelStateWriter` that keeps, per checkpoint, the buffers each channel persisted.
//!
//! Locking contract: `ChannelStatePersister` is `@NotThreadSafe` in Flink and has no lock here;
//! each channel keeps it inside its own channel lock (`recoveredBuffers` for local channels,
//! `receivedBuffers` for remote ones). `ChannelStateWriter` has one lock, a leaf of the lock
//! order: it is taken under a channel lock and calls nothing.
//!
//! Deviation: Flink hands *retained* buffers to the writer, which writes them asynchronously and
//! recycles them. Here the writer copies the buffer's plain data synchronously
//! ([`BufferSnapshot`]), which is what a retain followed by a write and a recycle amounts to; no
//! ownership moves to the writer.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::{ChannelError, Result};
use crate::ids::CheckpointId;
use crate::input_channel_info::InputChannelInfo;
use crate::network_buffer::{BufferKind, BufferSnapshot, NetworkBuffer};
use crate::sync::Mutex;

/// Flink's `ChannelStateWriter.NO_CHECKPOINT` / the persister's initial `lastSeenBarrier`.
pub const NO_CHECKPOINT: CheckpointId = -1;

/// One buffer written for a checkpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PersistedBuffer {
    /// The channel whose in-flight data it is.
    pub channel: InputChannelInfo,
    /// The buffer's data.
    pub buffer: BufferSnapshot,
}

/// Snapshot of a [`ChannelStateWriter`]: what each checkpoint persisted, in write order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChannelStateWriterSnapshot {
    /// Per checkpoint id, the buffers written by `addInputData`.
    pub persisted: BTreeMap<CheckpointId, Vec<PersistedBuffer>>,
    /// Per checkpoint id, the recovered buffers written by `addInputDataFromSpill`: the slice of
    /// the fetched state the drainer had not delivered when the checkpoint's barriers went in.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub spilled: BTreeMap<CheckpointId, Vec<PersistedBuffer>>,
}

/// A recording stand-in for Flink's `ChannelStateWriter` (shared by the channels of a task).
#[derive(Debug, Default)]
pub struct ChannelStateWriter {
    persisted: Mutex<BTreeMap<CheckpointId, Vec<PersistedBuffer>>>,
    spilled: Mutex<BTreeMap<CheckpointId, Vec<PersistedBuffer>>>,
}

impl ChannelStateWriter {
    /// A writer that has written nothing.
    pub fn new() -> Self {
        Self::default()
    }

    /// `addInputData(checkpointId, info, SEQUENCE_NUMBER_UNKNOWN, buffers)`.
    pub fn add_input_data(&self, checkpoint_id: CheckpointId, channel: InputChannelInfo, buffers: Vec<BufferSnapshot>) {
        let mut persisted = self.persisted.lock();
        let written = persisted.entry(checkpoint_id).or_default();
        written.extend(buffers.into_iter().map(|buffer| PersistedBuffer { channel, buffer }));
    }

    /// `addInputDataFromSpill(checkpointId, info, slice)`: recovered buffers of `channel` that
    /// were still in the fetched state, not in the channel, when the checkpoint's barrier went in.
    pub fn add_input_data_from_spill(
        &self,
        checkpoint_id: CheckpointId,
        channel: InputChannelInfo,
        buffers: Vec<BufferSnapshot>,
    ) {
        let mut spilled = self.spilled.lock();
        let written = spilled.entry(checkpoint_id).or_default();
        written.extend(buffers.into_iter().map(|buffer| PersistedBuffer { channel, buffer }));
    }

    /// The buffers `channel` persisted for `checkpoint_id`, in write order.
    pub fn persisted(&self, checkpoint_id: CheckpointId, channel: InputChannelInfo) -> Vec<BufferSnapshot> {
        let persisted = self.persisted.lock();
        let written = persisted.get(&checkpoint_id).map(Vec::as_slice).unwrap_or_default();
        written
            .iter()
            .filter(|p| p.channel == channel)
            .map(|p| p.buffer)
            .collect()
    }

    /// A snapshot taken under the writer lock.
    pub fn snapshot(&self) -> ChannelStateWriterSnapshot {
        ChannelStateWriterSnapshot {
            persisted: self.persisted.lock().clone(),
            spilled: self.spilled.lock().clone(),
        }
    }
}

/// Flink's `ChannelStatePersister.CheckpointStatus`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum CheckpointStatus {
    /// `COMPLETED`: no persist window is open.
    Completed,
    /// `BARRIER_PENDING`: the checkpoint started, the upstream barrier has not arrived yet;
    /// arriving data is persisted.
    BarrierPending,
    /// `BARRIER_RECEIVED`: the upstream barrier arrived.
    BarrierReceived,
}

/// Snapshot of a [`ChannelStatePersister`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChannelStatePersisterSnapshot {
    /// `checkpointStatus`.
    pub checkpoint_status: CheckpointStatus,
    /// `lastSeenBarrier`, -1 before the first.
    pub last_seen_barrier: CheckpointId,
}

/// Mirrors Flink's `ChannelStatePersister` (one per physical channel).
#[derive(Debug)]
pub struct ChannelStatePersister {
    channel: InputChannelInfo,
    writer: crate::sync::Arc<ChannelStateWriter>,
    checkpoint_status: CheckpointStatus,
    last_seen_barrier: CheckpointId,
}

impl ChannelStatePersister {
    /// `new ChannelStatePersister(channelStateWriter, channelInfo)`.
    pub fn new(writer: crate::sync::Arc<ChannelStateWriter>, channel: InputChannelInfo) -> Self {
        Self {
            channel,
            writer,
            checkpoint_status: CheckpointStatus::Completed,
            last_seen_barrier: NO_CHECKPOINT,
        }
    }

    /// `startPersisting(barrierId, knownBuffers)`: opens the persist window of `barrier_id`
    /// and writes `known_buffers`; `CheckpointSubsumed` if a newer barrier was received.
    pub fn start_persisting(&mut self, barrier_id: CheckpointId, known_buffers: Vec<BufferSnapshot>) -> Result<()> {
        if self.checkpoint_status == CheckpointStatus::BarrierReceived && self.last_seen_barrier > barrier_id {
            return Err(ChannelError::CheckpointSubsumed {
                checkpoint_id: barrier_id,
                newer_checkpoint_id: self.last_seen_barrier,
            });
        }
        if self.last_seen_barrier < barrier_id {
            // Whatever the status, a more recent checkpoint than seen so far marks its barrier
            // pending (BARRIER_RECEIVED of an older one is superseded).
            self.checkpoint_status = CheckpointStatus::BarrierPending;
            self.last_seen_barrier = barrier_id;
        }
        if !known_buffers.is_empty() {
            self.writer.add_input_data(barrier_id, self.channel, known_buffers);
        }
        Ok(())
    }

    /// `stopPersisting(id)`: closes the window if `id` is not older than the last barrier.
    pub fn stop_persisting(&mut self, id: CheckpointId) {
        if id >= self.last_seen_barrier {
            self.checkpoint_status = CheckpointStatus::Completed;
            self.last_seen_barrier = id;
        }
    }

    /// `maybePersist(buffer)`: writes a data buffer while the barrier is pending. Recovered
    /// buffers must never come here (FLINK-40016).
    pub fn maybe_persist(&mut self, buffer: &NetworkBuffer) {
        if self.checkpoint_status == CheckpointStatus::BarrierPending && buffer.is_buffer() {
            self.writer
                .add_input_data(self.last_seen_barrier, self.channel, vec![buffer.snapshot()]);
        }
    }

    /// `checkForBarrier(buffer)`: a `CheckpointBarrier` at least as new as expected moves the
    /// status to `BARRIER_RECEIVED` and returns its id.
    pub fn check_for_barrier(&mut self, buffer: &NetworkBuffer) -> Option<CheckpointId> {
        // A timeoutable aligned barrier is a `CheckpointBarrier` too (`event.getClass() ==
        // CheckpointBarrier.class`): it closes the window like an unaligned one.
        let (BufferKind::CheckpointBarrier(barrier_id) | BufferKind::TimeoutableAlignedCheckpointBarrier(barrier_id)) =
            buffer.kind()
        else {
            return None;
        };
        let expected = match self.checkpoint_status {
            CheckpointStatus::Completed => self.last_seen_barrier + 1,
            _ => self.last_seen_barrier,
        };
        if barrier_id >= expected {
            self.checkpoint_status = CheckpointStatus::BarrierReceived;
            self.last_seen_barrier = barrier_id;
            return Some(barrier_id);
        }
        None
    }

    /// `hasBarrierReceived()`.
    pub fn has_barrier_received(&self) -> bool {
        self.checkpoint_status == CheckpointStatus::BarrierReceived
    }

    /// A snapshot (the caller holds the channel lock).
    pub fn snapshot(&self) -> ChannelStatePersisterSnapshot {
        ChannelStatePersisterSnapshot {
            checkpoint_status: self.checkpoint_status,
            last_seen_barrier: self.last_seen_barrier,
        }
    }
}
