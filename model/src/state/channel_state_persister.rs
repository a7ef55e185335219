//! `ChannelStatePersister`: the per-channel checkpoint status machine that decides which
//! buffers go to the `ChannelStateWriter` for a checkpoint. Task thread only (remote: under
//! `receivedBuffers`, because the Netty thread persists in `onBuffer`).

use crate::state::{CheckpointId, Payload, Written};

/// `CheckpointStatus` of the persister.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize)]
pub enum PersistStatus {
    /// No persisting in progress.
    #[default]
    Completed,
    /// Started, barrier not yet seen on this channel: `maybePersist` writes data.
    BarrierPending,
    /// The channel's barrier was seen: nothing more to write.
    BarrierReceived,
}

/// Status and the last barrier seen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct ChannelStatePersister {
    /// `checkpointStatus`.
    pub status: PersistStatus,
    /// `lastSeenBarrier` (-1 = none).
    pub last_seen_barrier: i8,
}

impl Default for ChannelStatePersister {
    fn default() -> Self {
        ChannelStatePersister {
            status: PersistStatus::Completed,
            last_seen_barrier: -1,
        }
    }
}

/// `CHECKPOINT_SUBSUMED`.
pub struct Subsumed;

impl ChannelStatePersister {
    /// `startPersisting(id, knownBuffers)`: opens the window and writes the known buffers.
    pub fn start_persisting(
        &mut self,
        cp: CheckpointId,
        known: &[Payload],
        persisted: &mut Written,
    ) -> Result<(), Subsumed> {
        let id = cp as i8;
        if self.status == PersistStatus::BarrierReceived && self.last_seen_barrier > id {
            return Err(Subsumed);
        }
        if self.last_seen_barrier < id {
            self.status = PersistStatus::BarrierPending;
            self.last_seen_barrier = id;
        }
        persisted.extend(known.iter().map(|p| (cp, *p)));
        Ok(())
    }

    /// `stopPersisting(id)`.
    pub fn stop_persisting(&mut self, cp: CheckpointId) {
        let id = cp as i8;
        if id >= self.last_seen_barrier {
            self.status = PersistStatus::Completed;
            self.last_seen_barrier = id;
        }
    }

    /// `maybePersist(buffer)`: data seen while the window is open belongs to the checkpoint.
    pub fn maybe_persist(&self, payload: Payload, persisted: &mut Written) {
        if self.status == PersistStatus::BarrierPending && payload.is_data() {
            persisted.push((self.last_seen_barrier as CheckpointId, payload));
        }
    }

    /// `checkForBarrier(buffer)`: a barrier closes the window; returns its id if it counts.
    pub fn check_for_barrier(&mut self, payload: Payload) -> Option<CheckpointId> {
        let (Payload::Barrier(cp) | Payload::AlignedBarrier(cp)) = payload else {
            return None;
        };
        let expected = if self.status == PersistStatus::Completed {
            self.last_seen_barrier + 1
        } else {
            self.last_seen_barrier
        };
        if cp as i8 >= expected {
            self.status = PersistStatus::BarrierReceived;
            self.last_seen_barrier = cp as i8;
            Some(cp)
        } else {
            None
        }
    }
}
