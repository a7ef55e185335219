//! `FetchedChannelStateDrainer`'s lock (apache/flink#28662): the checkpoint trigger's
//! `snapshotAndInsertBarriers` inserts every channel's `RecoveryCheckpointBarrier` under it, and
//! the drainer delivers each recovered buffer under it, so that no delivery falls between two
//! insertions and the snapshot of what is not yet drained is exact. Taking a buffer
//! (`requestRecoveryBufferBlocking`, which may block) and filling it happen before, outside the
//! lock; `finishRecoveredBufferDelivery` runs after the drain, outside it too. Lock order: the
//! drainer's lock, then a channel's.
//!
//! The spill files themselves are not implemented here: the caller supplies the buffers.

use crate::error::Result;
use crate::ids::CheckpointId;
use crate::network_buffer::NetworkBuffer;
use crate::recoverable_input_channel::RecoverableInputChannel;
use crate::sync::Mutex;

/// The drainer's lock, shared by the IO thread that drains and the task thread that triggers.
#[derive(Debug, Default)]
pub struct FetchedChannelStateDrainer {
    lock: Mutex<()>,
}

impl FetchedChannelStateDrainer {
    /// A drainer whose lock nobody holds.
    pub fn new() -> Self {
        Self::default()
    }

    /// `drainSegment`'s delivery of one filled buffer: `onRecoveredStateBuffer` under the lock.
    pub fn deliver(&self, channel: &dyn RecoverableInputChannel, buffer: NetworkBuffer) -> Result<()> {
        let _lock = self.lock.lock();
        channel.on_recovered_state_buffer(buffer)
    }

    /// `snapshotAndInsertBarriers(checkpointId)`: `insertRecoveryCheckpointBarrierIfInRecovery`
    /// on every channel, in one critical section.
    pub fn snapshot_and_insert_barriers<'a>(
        &self,
        channels: impl IntoIterator<Item = &'a dyn RecoverableInputChannel>,
        checkpoint_id: CheckpointId,
    ) -> Result<()> {
        let _lock = self.lock.lock();
        for channel in channels {
            channel.insert_recovery_checkpoint_barrier_if_in_recovery(checkpoint_id)?;
        }
        Ok(())
    }
}
