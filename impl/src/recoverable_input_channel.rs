//! Mirrors Flink's `RecoverableInputChannel` interface (FLINK-38544), merged with the abstract
//! `InputChannel` methods the gate and the task call, plus the types they share: the channel
//! context, the state-consumed future, and `collectPreRecoveryBarrier`.
//!
//! Locking contract: implementations guard their queue and `inRecovery` with one channel lock;
//! blocking waits (`finish_recovered_buffer_delivery`, `request_recovery_buffer_blocking`) happen
//! outside it, and gate notifications and credit announcements happen after it is released.

use crate::buffer_and_availability::BufferAndAvailability;
use crate::buffer_pool::{LocalBufferPool, NetworkBufferPool};
use crate::channel_state_persister::ChannelStateWriter;
use crate::error::{ChannelError, DeclineReason, Result};
use crate::flink_fixes::FlinkFixes;
use crate::ids::CheckpointId;
use crate::input_channel_info::InputChannelInfo;
use crate::input_channels_with_data::InputChannelsWithData;
use crate::network_buffer::{BufferKind, BufferSnapshot, NetworkBuffer};
use crate::sync::{Arc, Mutex};

pub use crate::completable_future::FutureStatus;

/// Flink's `stateConsumedFuture` (`CompletableFuture<Void>`): completes once the channel has
/// consumed all of its recovered state, exceptionally if it was released first.
pub type StateConsumedFuture = crate::completable_future::CompletableFuture;

/// What every channel of a gate is built with (Flink passes these through the constructors).
#[derive(Debug, Clone)]
pub struct ChannelContext {
    /// The channel's identity.
    pub channel_info: InputChannelInfo,
    /// The gate's `inputChannelsWithData`, notified when the channel becomes non-empty.
    pub gate: Arc<InputChannelsWithData>,
    /// The task manager's `NetworkBufferPool` (exclusive segments).
    pub global_pool: Arc<NetworkBufferPool>,
    /// The gate's `LocalBufferPool` (floating buffers).
    pub buffer_pool: Arc<LocalBufferPool>,
    /// The task's `ChannelStateWriter`.
    pub writer: Arc<ChannelStateWriter>,
    /// `networkBuffersPerChannel`: exclusive buffers (remote initial credit).
    pub network_buffers_per_channel: usize,
    /// The findings' changes to Flink's code the channel (and its `BufferManager`) makes;
    /// none: Flink as it is.
    pub flink_fixes: FlinkFixes,
}

impl ChannelContext {
    /// This context with `flink_fixes` made by the channels built with it.
    pub fn with_flink_fixes(mut self, flink_fixes: FlinkFixes) -> Self {
        self.flink_fixes = flink_fixes;
        self
    }
}

/// Mirrors Flink's `RecoverableInputChannel` (push-based recovery, FLINK-38544) together with
/// the `InputChannel` methods the gate, the task and the recovery drainer call.
pub trait RecoverableInputChannel: Send + Sync {
    /// `getChannelInfo()`.
    fn channel_info(&self) -> InputChannelInfo;

    /// `onRecoveredStateBuffer(buffer)`: appends a recovered buffer (or sentinel) while in
    /// recovery; a released channel recycles it.
    fn on_recovered_state_buffer(&self, buffer: NetworkBuffer) -> Result<()>;

    /// `finishRecoveredBufferDelivery()`: waits (outside any lock) until the upstream is ready,
    /// then appends the `EndOfFetchedChannelStateEvent` sentinel.
    fn finish_recovered_buffer_delivery(&self) -> Result<()>;

    /// `insertRecoveryCheckpointBarrierIfInRecovery(checkpointId)`: appends a
    /// `RecoveryCheckpointBarrier` if in recovery and not released.
    fn insert_recovery_checkpoint_barrier_if_in_recovery(&self, checkpoint_id: CheckpointId) -> Result<()>;

    /// `requestRecoveryBufferBlocking()`: lends an exclusive buffer to the recovery reader.
    fn request_recovery_buffer_blocking(&self) -> Result<NetworkBuffer>;

    /// `onRecoveredStateConsumed()`: the gate polled the sentinel; leave recovery.
    fn on_recovered_state_consumed(&self) -> Result<()>;

    /// `InputChannel.getStateConsumedFuture()`.
    fn state_consumed_future(&self) -> StateConsumedFuture;

    /// `InputChannel.getNextBuffer()` (task thread).
    fn get_next_buffer(&self) -> Result<Option<BufferAndAvailability>>;

    /// `InputChannel.checkpointStarted(barrier)` (task thread).
    fn checkpoint_started(&self, checkpoint_id: CheckpointId) -> Result<()>;

    /// `InputChannel.checkpointStopped(checkpointId)` (task thread).
    fn checkpoint_stopped(&self, checkpoint_id: CheckpointId);

    /// `InputChannel.setup()`: requests the exclusive buffers.
    fn setup(&self) -> Result<()>;

    /// `InputChannel.requestSubpartitions()`: creates the view or sends the partition request.
    fn request_subpartitions(&self) -> Result<()>;

    /// `InputChannel.resumeConsumption()` (task thread): the upstream blocked after handing out
    /// an `EndOfOutputChannelStateEvent` goes on.
    fn resume_consumption(&self) -> Result<()>;

    /// `InputChannel.releaseAllResources()`: idempotent.
    fn release_all_resources(&self) -> Result<()>;

    /// `InputChannel.isReleased()`.
    fn is_released(&self) -> bool;
}

/// A queue that `collect_pre_recovery_barrier` can walk by index.
/// `InputChannel.cause`: the first error `setError` kept, which `checkError()` rethrows.
#[derive(Debug)]
pub(crate) struct Cause(Mutex<Option<ChannelError>>);

impl Cause {
    pub(crate) fn new() -> Self {
        Cause(Mutex::new(None))
    }

    /// `setError(cause)`: the first cause wins and notifies the gate (after the lock), so that
    /// the task polls the channel and `checkError()` throws it.
    pub(crate) fn set(&self, error: ChannelError, gate: &InputChannelsWithData, channel_index: usize) {
        let first = {
            let mut cause = self.0.lock();
            let first = cause.is_none();
            cause.get_or_insert(error);
            first
        };
        if first {
            gate.notify_channel_non_empty(channel_index);
        }
    }

    /// `checkError()`.
    pub(crate) fn check(&self) -> Result<()> {
        match self.get() {
            Some(error) => Err(error),
            None => Ok(()),
        }
    }

    /// The kept cause, for snapshots.
    pub(crate) fn get(&self) -> Option<ChannelError> {
        self.0.lock().clone()
    }
}

pub(crate) trait RecoveryQueue {
    type Item;
    fn len(&self) -> usize;
    fn buffer_at(&self, index: usize) -> &NetworkBuffer;
    fn remove_at(&mut self, index: usize) -> Self::Item;
}

/// `collectPreRecoveryBarrier(checkpointId)`: walks `queue` from `start`, retains the data
/// buffers before `RecoveryCheckpointBarrier(checkpoint_id)` (they stay queued), removes that
/// barrier and any older one, and declines on a later or missing barrier. Returns the removed
/// barriers (to recycle outside the lock) and the outcome.
pub(crate) fn collect_pre_recovery_barrier<Q: RecoveryQueue>(
    queue: &mut Q,
    start: usize,
    checkpoint_id: CheckpointId,
) -> (Vec<Q::Item>, Result<Vec<BufferSnapshot>>) {
    let mut retained = Vec::new();
    let mut removed = Vec::new();
    let mut index = start;
    while index < queue.len() {
        let buffer = queue.buffer_at(index);
        match buffer.kind() {
            BufferKind::RecoveryCheckpointBarrier(id) if id == checkpoint_id => {
                removed.push(queue.remove_at(index));
                return (removed, Ok(retained));
            }
            BufferKind::RecoveryCheckpointBarrier(id) if id > checkpoint_id => {
                let reason = DeclineReason::LaterRecoveryCheckpointBarrier { found: id };
                return (removed, Err(ChannelError::CheckpointDeclined { checkpoint_id, reason }));
            }
            // A barrier of a subsumed checkpoint: discard it and keep walking.
            BufferKind::RecoveryCheckpointBarrier(_) => removed.push(queue.remove_at(index)),
            BufferKind::Data => {
                retained.push(buffer.snapshot());
                index += 1;
            }
            // Other events, including a sentinel before the barrier, are skipped.
            _ => index += 1,
        }
    }
    let reason = DeclineReason::MissingRecoveryCheckpointBarrier;
    (removed, Err(ChannelError::CheckpointDeclined { checkpoint_id, reason }))
}

impl RecoveryQueue for std::collections::VecDeque<NetworkBuffer> {
    type Item = NetworkBuffer;
    fn len(&self) -> usize {
        std::collections::VecDeque::len(self)
    }
    fn buffer_at(&self, index: usize) -> &NetworkBuffer {
        &self[index]
    }
    fn remove_at(&mut self, index: usize) -> NetworkBuffer {
        self.remove(index).expect("index is in range")
    }
}
