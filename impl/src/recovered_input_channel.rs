//! Mirrors Flink's `RecoveredInputChannel` (`LocalRecoveredInputChannel` /
//! `RemoteRecoveredInputChannel`): the placeholder that collects the filtered recovered state on
//! the IO thread until `SingleInputGate.requestPartitions` converts it into a physical channel
//! with `to_input_channel(needs_recovery)`.
//!
//! Locking contract: `received_buffers` (Flink's `receivedBuffers` monitor) guards the queue and
//! `isReleased`; taken by the IO thread (push), the task thread (poll, conversion) and the
//! canceler (release). Conversion drains the queue under it and pushes into the new channel
//! *after* releasing it, so this lock is never held while a physical channel's lock is taken.

use std::collections::VecDeque;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::buffer_and_availability::BufferAndAvailability;
use crate::buffer_manager::{BufferManager, BufferManagerChannel, BufferManagerSnapshot};
use crate::channel_state_persister::NO_CHECKPOINT;
use crate::error::{ChannelError, DeclineReason, Result};
use crate::ids::CheckpointId;
use crate::input_channel_info::InputChannelInfo;
use crate::local_input_channel::LocalInputChannel;
use crate::network_buffer::{BufferKind, BufferSnapshot, DataType, NetworkBuffer};
use crate::recoverable_input_channel::{ChannelContext, FutureStatus, RecoverableInputChannel, StateConsumedFuture};
use crate::remote_input_channel::RemoteInputChannel;
use crate::result_subpartition::ResultSubpartition;
use crate::sync::{Arc, AtomicBool, Mutex, Ordering};

/// Which physical channel a [`RecoveredInputChannel`] turns into.
#[derive(Debug, Clone)]
pub enum RecoveredChannelKind {
    /// `LocalRecoveredInputChannel`: becomes a `LocalInputChannel` reading `partition`.
    Local {
        /// The local producer's subpartition.
        partition: Arc<ResultSubpartition>,
    },
    /// `RemoteRecoveredInputChannel`: becomes a `RemoteInputChannel`.
    Remote,
}

/// Snapshot of a [`RecoveredInputChannel`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecoveredInputChannelSnapshot {
    /// `getChannelInfo()`.
    pub channel_info: InputChannelInfo,
    /// `receivedBuffers`, head first.
    pub received_buffers: Vec<BufferSnapshot>,
    /// The sequence number the next polled buffer gets (from `i32::MIN`).
    pub sequence_number: i32,
    /// `isReleased`.
    pub released: bool,
    /// `stateConsumedFuture`.
    pub state_consumed: FutureStatus,
    /// `lastStoppedCheckpointId`.
    pub last_stopped_checkpoint_id: CheckpointId,
    /// The channel's `BufferManager`.
    pub buffer_manager: BufferManagerSnapshot,
}

struct RecoveredShared {
    released: AtomicBool,
}

impl BufferManagerChannel for RecoveredShared {
    fn is_released(&self) -> bool {
        self.released.load(Ordering::SeqCst)
    }

    /// A recovered channel announces no credit.
    fn notify_buffer_available(&self, _number_of_buffers: usize) {}

    fn set_error(&self, _error: ChannelError) {}
}

struct ReceivedBuffers {
    buffers: VecDeque<NetworkBuffer>,
    sequence_number: i32,
    last_stopped_checkpoint_id: CheckpointId,
    /// `bufferFilteringCompleteFuture`: `finishReadRecoveredState` ran.
    finished: bool,
}

/// What `toInputChannel` makes: Flink returns the physical `InputChannel`, and the gate puts it
/// in its channel array. The gate's `InputChannelHandle` names this class, so the conversion
/// returns the physical kinds alone and the gate wraps them.
#[derive(Debug, Clone)]
pub enum PhysicalInputChannel {
    /// A `LocalInputChannel`.
    Local(Arc<LocalInputChannel>),
    /// A `RemoteInputChannel`.
    Remote(Arc<RemoteInputChannel>),
}

/// Mirrors Flink's `RecoveredInputChannel`.
pub struct RecoveredInputChannel {
    context: ChannelContext,
    kind: RecoveredChannelKind,
    shared: Arc<RecoveredShared>,
    /// Flink's `receivedBuffers` monitor.
    received_buffers: Mutex<ReceivedBuffers>,
    buffer_manager: Arc<BufferManager>,
    exclusive_buffers_assigned: AtomicBool,
    state_consumed: StateConsumedFuture,
}

impl fmt::Debug for RecoveredInputChannel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RecoveredInputChannel")
            .field("snapshot", &self.snapshot())
            .finish()
    }
}

impl RecoveredInputChannel {
    /// `new LocalRecoveredInputChannel(..)` / `new RemoteRecoveredInputChannel(..)`.
    pub fn new(context: ChannelContext, kind: RecoveredChannelKind) -> Arc<Self> {
        let shared = Arc::new(RecoveredShared {
            released: AtomicBool::new(false),
        });
        let channel: Arc<dyn BufferManagerChannel> = Arc::clone(&shared) as Arc<dyn BufferManagerChannel>;
        let buffer_manager = BufferManager::with_flink_fixes(
            Arc::clone(&context.global_pool),
            Arc::clone(&context.buffer_pool),
            channel,
            0,
            true,
            context.flink_fixes,
        );
        let received = ReceivedBuffers {
            buffers: VecDeque::new(),
            sequence_number: i32::MIN,
            last_stopped_checkpoint_id: NO_CHECKPOINT,
            finished: false,
        };
        Arc::new(Self {
            context,
            kind,
            shared,
            received_buffers: Mutex::new(received),
            buffer_manager,
            exclusive_buffers_assigned: AtomicBool::new(false),
            state_consumed: StateConsumedFuture::new(),
        })
    }

    /// `getChannelInfo()`.
    pub fn channel_info(&self) -> InputChannelInfo {
        self.context.channel_info
    }

    /// `onRecoveredStateBuffer(buffer)` (IO thread): appends; a released channel recycles.
    pub fn on_recovered_state_buffer(&self, buffer: NetworkBuffer) -> Result<()> {
        let mut state = self.received_buffers.lock();
        if self.shared.released.load(Ordering::SeqCst) {
            drop(state);
            return buffer.recycle_buffer();
        }
        let was_empty = state.buffers.is_empty();
        state.buffers.push_back(buffer);
        drop(state);
        if was_empty {
            self.context
                .gate
                .notify_channel_non_empty(self.context.channel_info.input_channel_idx as usize);
        }
        Ok(())
    }

    /// `finishReadRecoveredState()` (IO thread): appends the legacy `EndOfInputChannelStateEvent`
    /// and returns the floating buffers.
    pub fn finish_read_recovered_state(&self) -> Result<()> {
        self.on_recovered_state_buffer(NetworkBuffer::event(BufferKind::EndOfInputChannelState))?;
        self.received_buffers.lock().finished = true;
        self.buffer_manager.release_floating_buffers()
    }

    /// `requestBufferBlocking()` (IO thread): the first call requests the exclusive buffers.
    pub fn request_buffer_blocking(&self) -> Result<NetworkBuffer> {
        if !self.exclusive_buffers_assigned.swap(true, Ordering::SeqCst) {
            self.buffer_manager
                .request_exclusive_buffers(self.context.network_buffers_per_channel)?;
        }
        self.buffer_manager.request_buffer_blocking()
    }

    /// `getNextBuffer()` (task thread, flag-off path): the legacy sentinel completes the
    /// state-consumed future and is not returned.
    pub fn get_next_buffer(&self) -> Result<Option<BufferAndAvailability>> {
        let (next, next_data_type, sequence_number) = {
            let mut state = self.received_buffers.lock();
            if self.shared.released.load(Ordering::SeqCst) {
                // Flink's `checkState(!isReleased, ...)`.
                return Err(ChannelError::illegal_state(
                    "Trying to read from released RecoveredInputChannel",
                ));
            }
            let Some(next) = state.buffers.pop_front() else {
                return Ok(None);
            };
            let next_data_type = state.buffers.front().map_or(DataType::None, NetworkBuffer::data_type);
            let sequence_number = state.sequence_number;
            // The sentinel is not handed on, so it takes no number (Flink returns before
            // `sequenceNumber++`).
            if next.kind() != BufferKind::EndOfInputChannelState {
                state.sequence_number = sequence_number.wrapping_add(1);
            }
            (next, next_data_type, sequence_number)
        };
        if next.kind() == BufferKind::EndOfInputChannelState {
            self.state_consumed.complete();
            next.recycle_buffer()?;
            return Ok(None);
        }
        Ok(Some(BufferAndAvailability {
            buffer: next,
            next_data_type,
            buffers_in_backlog: 0,
            sequence_number,
        }))
    }

    /// `checkpointStarted(barrier)`: always `CHECKPOINT_DECLINED_TASK_NOT_READY`.
    pub fn checkpoint_started(&self, checkpoint_id: CheckpointId) -> Result<()> {
        Err(ChannelError::CheckpointDeclined {
            checkpoint_id,
            reason: DeclineReason::TaskNotReady,
        })
    }

    /// `checkpointStopped(checkpointId)`: remembered for the physical channel.
    pub fn checkpoint_stopped(&self, checkpoint_id: CheckpointId) {
        self.received_buffers.lock().last_stopped_checkpoint_id = checkpoint_id;
    }

    /// `getStateConsumedFuture()`.
    pub fn state_consumed_future(&self) -> StateConsumedFuture {
        self.state_consumed.clone()
    }

    /// `toInputChannel(needsRecovery)` (task thread, under the gate's `requestLock`).
    ///
    /// With recovery: create the physical channel in recovery state, `setup()` it, push every
    /// queued data buffer (the legacy `EndOfInputChannelStateEvent` is dropped) and then the
    /// `EndOfFetchedChannelStateEvent` sentinel directly through `on_recovered_state_buffer`,
    /// never through `finish_recovered_buffer_delivery`, which would wait for an upstream that
    /// only this thread can request (bug B5). Without: the queue must be empty.
    pub fn to_input_channel(&self, needs_recovery: bool) -> Result<PhysicalInputChannel> {
        let (queued, last_stopped) = {
            let mut state = self.received_buffers.lock();
            if self.shared.released.load(Ordering::SeqCst) {
                return Err(ChannelError::released(
                    "RecoveredInputChannel has already been released.",
                ));
            }
            if !needs_recovery && !state.buffers.is_empty() {
                return Err(ChannelError::illegal_state(
                    "Received buffer should be empty before converting to a physical channel.",
                ));
            }
            (
                state.buffers.drain(..).collect::<Vec<_>>(),
                state.last_stopped_checkpoint_id,
            )
        };
        let (handle, channel): (PhysicalInputChannel, Arc<dyn RecoverableInputChannel>) = match &self.kind {
            RecoveredChannelKind::Local { partition } => {
                let channel = LocalInputChannel::new(self.context.clone(), Arc::clone(partition), needs_recovery);
                (PhysicalInputChannel::Local(Arc::clone(&channel)), channel)
            }
            RecoveredChannelKind::Remote => {
                let channel = RemoteInputChannel::new(self.context.clone(), needs_recovery);
                (PhysicalInputChannel::Remote(Arc::clone(&channel)), channel)
            }
        };
        if let Err(error) = channel.setup() {
            queued.into_iter().for_each(NetworkBuffer::recycle_quietly);
            return Err(error);
        }
        let mut queued = queued.into_iter();
        for buffer in queued.by_ref() {
            if buffer.kind() == BufferKind::EndOfInputChannelState {
                buffer.recycle_buffer()?;
                continue;
            }
            if let Err(error) = channel.on_recovered_state_buffer(buffer) {
                queued.for_each(NetworkBuffer::recycle_quietly);
                return Err(error);
            }
        }
        if needs_recovery {
            channel.on_recovered_state_buffer(NetworkBuffer::event(BufferKind::EndOfFetchedChannelState))?;
        }
        if last_stopped != NO_CHECKPOINT {
            channel.checkpoint_stopped(last_stopped);
        }
        Ok(handle)
    }

    /// Flink 2.3.0, flag on: `toInputChannel()` checks that `finishReadRecoveredState` ran
    /// (`bufferFilteringCompleteFuture`), copies and clears the queue under its lock and hands
    /// the copy, the legacy sentinel included, to the physical channel's constructor
    /// (`toInputChannelInternal(ArrayDeque<Buffer>)`); a remote channel is then set up. Also
    /// returns whether the new channel has buffers in use (`getBuffersInUseCount() > 0`), for
    /// the gate to queue it.
    pub fn to_input_channel_migrating(&self) -> Result<(PhysicalInputChannel, bool)> {
        let (queued, last_stopped) = {
            let mut state = self.received_buffers.lock();
            if !state.finished {
                return Err(ChannelError::illegal_state("buffer filtering is not complete"));
            }
            (
                state.buffers.drain(..).collect::<Vec<_>>(),
                state.last_stopped_checkpoint_id,
            )
        };
        let (handle, in_use, channel): (PhysicalInputChannel, bool, Arc<dyn RecoverableInputChannel>) = match &self.kind
        {
            RecoveredChannelKind::Local { partition } => {
                let channel = LocalInputChannel::with_migrated(self.context.clone(), Arc::clone(partition), queued);
                let in_use = channel.buffers_in_use_count() > 0;
                (PhysicalInputChannel::Local(Arc::clone(&channel)), in_use, channel)
            }
            RecoveredChannelKind::Remote => {
                let channel = RemoteInputChannel::with_migrated(self.context.clone(), queued);
                channel.setup()?;
                let in_use = channel.buffers_in_use_count() > 0;
                (PhysicalInputChannel::Remote(Arc::clone(&channel)), in_use, channel)
            }
        };
        channel.checkpoint_stopped(last_stopped);
        Ok((handle, in_use))
    }

    /// `resumeConsumption()`: a recovered channel is never blocked (`UnsupportedOperationException`).
    pub fn resume_consumption(&self) -> Result<()> {
        Err(ChannelError::illegal_state(
            "RecoveredInputChannel should never be blocked.",
        ))
    }

    /// `releaseAllResources()`: drains the queue; exclusive segments go back to the global
    /// pool, also those recycled later by the physical channel's consumer.
    pub fn release_all_resources(&self) -> Result<()> {
        let drained: Vec<NetworkBuffer> = {
            let mut state = self.received_buffers.lock();
            if self.shared.released.swap(true, Ordering::SeqCst) {
                return Ok(());
            }
            state.buffers.drain(..).collect()
        };
        self.buffer_manager.release_all_buffers(drained)
    }

    /// `isReleased()`.
    pub fn is_released(&self) -> bool {
        self.shared.released.load(Ordering::SeqCst)
    }

    /// A snapshot taken under the `receivedBuffers` lock.
    pub fn snapshot(&self) -> RecoveredInputChannelSnapshot {
        let state = self.received_buffers.lock();
        RecoveredInputChannelSnapshot {
            channel_info: self.context.channel_info,
            received_buffers: state.buffers.iter().map(NetworkBuffer::snapshot).collect(),
            sequence_number: state.sequence_number,
            released: self.shared.released.load(Ordering::SeqCst),
            state_consumed: self.state_consumed.status(),
            last_stopped_checkpoint_id: state.last_stopped_checkpoint_id,
            buffer_manager: self.buffer_manager.snapshot(),
        }
    }
}
