//! Mirrors Flink's `RemoteInputChannel` as changed by FLINK-38544 (PR #28652): created in
//! recovery state, recovered buffers appended straight into `receivedBuffers` with recovery
//! sequence numbers assigned at *append* time (from `i32::MIN`), upstream events arriving during
//! recovery stashed and replayed when the sentinel is consumed, live data during recovery a
//! protocol violation, and credit withheld (`BufferManager` notification disabled) until then.
//!
//! Locking contract:
//! - `received_buffers` (Flink's `receivedBuffers` monitor) guards the prioritized queue, the
//!   `recoveryEventStash`, `inRecovery`, `recoverySequenceNumber`, `expectedSequenceNumber`,
//!   `lastBarrierId`/`lastBarrierSequenceNumber` and the `ChannelStatePersister` (the netty
//!   thread persists in `onBuffer`). Taken by the netty client thread (`on_buffer`), the IO
//!   thread (push, finish), the task thread (poll, checkpoint, consumed) and the canceler.
//!   Under it only the `ChannelStateWriter` lock is taken; in particular never `bufferQueue`:
//!   `on_recovered_state_consumed` calls `enable_notify` after releasing it, so the order
//!   `receivedBuffers` → `bufferQueue` never arises and the recycle path
//!   (`bufferQueue` → channel credit atomics) cannot invert it.
//! - `unannounced_credit` and `is_released` are atomics, as in Flink.
//! - Gate notifications, `onSenderBacklog` and credit announcements run after unlocking.

use std::collections::VecDeque;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::buffer_and_availability::BufferAndAvailability;
use crate::buffer_manager::{BufferManager, BufferManagerChannel, BufferManagerSnapshot};
use crate::channel_state_persister::{ChannelStatePersister, ChannelStatePersisterSnapshot, NO_CHECKPOINT};
use crate::credit_based_sequence_numbering_view_reader::PartitionRequest;
use crate::error::{ChannelError, Result};
use crate::event_log::{self, Event};
use crate::ids::CheckpointId;
use crate::input_channel_info::InputChannelInfo;
use crate::input_channels_with_data::InputChannelsWithData;
use crate::netty_message::ResumeConsumption;
use crate::network_buffer::{BufferKind, BufferSnapshot, DataType, NetworkBuffer};
use crate::pause_point::{self, PausePoint};
use crate::prioritized_deque::PrioritizedDeque;
use crate::recoverable_input_channel::{
    Cause, ChannelContext, FutureStatus, RecoverableInputChannel, RecoveryQueue, StateConsumedFuture,
    collect_pre_recovery_barrier,
};
use crate::sync::{Arc, AtomicBool, AtomicI32, AtomicU32, AtomicU64, Latch, Mutex, Ordering};

/// Flink's `NONE` subpartition id of recovered elements.
pub const NONE_SUBPARTITION_ID: i32 = -1;

/// Flink's `SequenceBuffer`: an element of `receivedBuffers`.
#[derive(Debug)]
pub struct SequenceBuffer {
    /// The buffer.
    pub buffer: NetworkBuffer,
    /// Its sequence number (negative for recovered elements).
    pub sequence_number: i32,
    /// `subpartitionId` (`NONE_SUBPARTITION_ID` for recovered elements).
    pub subpartition_id: i32,
}

/// A queue element as it appears in a snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SequenceBufferSnapshot {
    /// The buffer's data.
    pub buffer: BufferSnapshot,
    /// Its sequence number.
    pub sequence_number: i32,
}

impl SequenceBuffer {
    fn snapshot(&self) -> SequenceBufferSnapshot {
        SequenceBufferSnapshot {
            buffer: self.buffer.snapshot(),
            sequence_number: self.sequence_number,
        }
    }
}

/// Snapshot of a [`RemoteInputChannel`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemoteInputChannelSnapshot {
    /// `getChannelInfo()`.
    pub channel_info: InputChannelInfo,
    /// `needsRecovery`.
    pub needs_recovery: bool,
    /// `inRecovery`.
    pub in_recovery: bool,
    /// `receivedBuffers`, head first.
    pub received_buffers: Vec<SequenceBufferSnapshot>,
    /// `receivedBuffers.getNumPriorityElements()`.
    pub num_priority_elements: usize,
    /// `recoveryEventStash`, oldest first.
    pub recovery_event_stash: Vec<SequenceBufferSnapshot>,
    /// `recoverySequenceNumber`: the number the next appended recovered element gets.
    pub recovery_sequence_number: i32,
    /// `expectedSequenceNumber` of the next upstream buffer.
    pub expected_sequence_number: i32,
    /// `lastBarrierId` (-1 for none).
    pub last_barrier_id: CheckpointId,
    /// `lastBarrierSequenceNumber`.
    pub last_barrier_sequence_number: Option<i32>,
    /// `initialCredit`.
    pub initial_credit: i32,
    /// `unannouncedCredit`.
    pub unannounced_credit: i32,
    /// How often `notifyCreditAvailable()` fired (an `AddCredit` was scheduled).
    pub credit_notifications: u64,
    /// `ResumeConsumption` messages `resumeConsumption()` queued on the Netty client that it has
    /// not written yet.
    pub resume_consumption_queued: u32,
    /// Whether the partition request was sent.
    pub partition_requested: bool,
    /// `upstreamReady.getCount() == 0`.
    pub upstream_ready: bool,
    /// `isReleased`.
    pub released: bool,
    /// `cause`: the error `setError` kept, if any.
    pub error: Option<ChannelError>,
    /// `stateConsumedFuture`.
    pub state_consumed: FutureStatus,
    /// The checkpoint status machine.
    pub persister: ChannelStatePersisterSnapshot,
    /// The channel's `BufferManager`.
    pub buffer_manager: BufferManagerSnapshot,
}

/// State shared with the buffer manager: the credit side of the channel.
struct RemoteChannelShared {
    channel_info: InputChannelInfo,
    gate: Arc<InputChannelsWithData>,
    released: AtomicBool,
    unannounced_credit: AtomicI32,
    credit_notifications: AtomicU64,
    /// The Netty client's queued `ResumeConsumption` writes of this channel
    /// (`partitionRequestClient.resumeConsumption(this)`).
    resume_consumption_queued: AtomicU32,
    error: Cause,
}

impl BufferManagerChannel for RemoteChannelShared {
    fn is_released(&self) -> bool {
        self.released.load(Ordering::SeqCst)
    }

    fn channel_info(&self) -> Option<InputChannelInfo> {
        Some(self.channel_info)
    }

    /// `notifyBufferAvailable(n)`: the first credit since the last `AddCredit` schedules one
    /// (`notifyCreditAvailable()`).
    fn notify_buffer_available(&self, number_of_buffers: usize) {
        if number_of_buffers == 0 {
            return;
        }
        let before = event_log::record_atomic(
            || {
                self.unannounced_credit
                    .fetch_add(number_of_buffers as i32, Ordering::SeqCst)
            },
            |_| {
                Some(Event::NotifyBufferAvailable {
                    channel: self.channel_info,
                    number_of_buffers,
                })
            },
        );
        if before == 0 {
            self.credit_notifications.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// `setError(cause)`.
    fn set_error(&self, error: ChannelError) {
        self.error
            .set(error, &self.gate, self.channel_info.input_channel_idx as usize);
    }
}

/// `shouldBeSpilled(sequenceNumber)` with a barrier seen at `barrier`: before it, with Flink's
/// overflow ranges: a barrier near the top of the range keeps only positive numbers below it, one
/// near the bottom also takes the negative (recovered or migrated) numbers; otherwise a plain
/// comparison, so numbers from `i32::MIN` (migrated buffers) precede any live barrier.
fn should_be_spilled(sequence_number: i32, barrier: i32) -> bool {
    const QUARTER: i32 = 1_073_741_823;
    if barrier > QUARTER {
        sequence_number < barrier && sequence_number > 0
    } else if barrier < -QUARTER {
        sequence_number < barrier || sequence_number > 0
    } else {
        sequence_number < barrier
    }
}

/// What `receivedBuffers` guards.
struct ReceivedBuffers {
    buffers: PrioritizedDeque<SequenceBuffer>,
    recovery_event_stash: VecDeque<SequenceBuffer>,
    in_recovery: bool,
    recovery_sequence_number: i32,
    expected_sequence_number: i32,
    last_barrier_id: CheckpointId,
    last_barrier_sequence_number: Option<i32>,
    end_of_fetched_appended: bool,
    persister: ChannelStatePersister,
}

impl ReceivedBuffers {
    /// `appendRecoveredBuffer(buffer)`: at the tail with the next recovery sequence number;
    /// returns whether the queue was empty.
    fn append_recovered_buffer(
        &mut self,
        buffer: NetworkBuffer,
    ) -> std::result::Result<bool, (NetworkBuffer, ChannelError)> {
        if !self.in_recovery {
            return Err((
                buffer,
                ChannelError::illegal_state("Push into recovered buffers after recovery finished."),
            ));
        }
        if buffer.kind() == BufferKind::EndOfFetchedChannelState {
            if self.end_of_fetched_appended {
                return Err((
                    buffer,
                    ChannelError::illegal_state("EndOfFetchedChannelStateEvent already appended."),
                ));
            }
            self.end_of_fetched_appended = true;
        }
        let was_empty = self.buffers.is_empty();
        let sequence_number = self.recovery_sequence_number;
        self.recovery_sequence_number = sequence_number.wrapping_add(1);
        self.buffers.add(SequenceBuffer {
            buffer,
            sequence_number,
            subpartition_id: NONE_SUBPARTITION_ID,
        });
        Ok(was_empty)
    }

    /// `addPriorityBuffer(sequenceBuffer)`: true if it is the first priority element.
    fn add_priority_buffer(&mut self, element: SequenceBuffer) -> bool {
        self.buffers.add_priority_element(element);
        self.buffers.num_priority_elements() == 1
    }

    fn reset_last_barrier(&mut self) {
        self.last_barrier_id = NO_CHECKPOINT;
        self.last_barrier_sequence_number = None;
    }

    /// `getInflightBuffersUnsafe(checkpointId)`: non-priority data before the barrier.
    fn get_inflight_buffers(&self, checkpoint_id: CheckpointId) -> Vec<BufferSnapshot> {
        assert!(checkpoint_id == self.last_barrier_id || self.last_barrier_id == NO_CHECKPOINT);
        let mut inflight = Vec::new();
        for element in self.buffers.iter().skip(self.buffers.num_priority_elements()) {
            if !element.buffer.is_buffer() {
                continue;
            }
            let should_be_spilled = match self.last_barrier_sequence_number {
                None => true,
                Some(barrier) => should_be_spilled(element.sequence_number, barrier),
            };
            if !should_be_spilled {
                break;
            }
            inflight.push(element.buffer.snapshot());
        }
        inflight
    }
}

impl RecoveryQueue for PrioritizedDeque<SequenceBuffer> {
    type Item = SequenceBuffer;
    fn len(&self) -> usize {
        PrioritizedDeque::len(self)
    }
    fn buffer_at(&self, index: usize) -> &NetworkBuffer {
        &self.get(index).expect("index is in range").buffer
    }
    fn remove_at(&mut self, index: usize) -> SequenceBuffer {
        PrioritizedDeque::remove_at(self, index).expect("index is in range")
    }
}

/// Mirrors Flink's `RemoteInputChannel` (consumer side of a network shuffle).
pub struct RemoteInputChannel {
    context: ChannelContext,
    needs_recovery: bool,
    initial_credit: i32,
    shared: Arc<RemoteChannelShared>,
    /// Flink's `receivedBuffers` monitor.
    received_buffers: Mutex<ReceivedBuffers>,
    buffer_manager: Arc<BufferManager>,
    upstream_ready: Latch,
    state_consumed: StateConsumedFuture,
    /// Flink's `partitionRequestClient`: the request the netty client sent.
    partition_request: Mutex<Option<PartitionRequest>>,
    partition_requested: AtomicBool,
}

impl fmt::Debug for RemoteInputChannel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RemoteInputChannel")
            .field("snapshot", &self.snapshot())
            .finish()
    }
}

impl RemoteInputChannel {
    /// Flink 2.3.0's constructor with the `ArrayDeque<Buffer>` a `RecoveredInputChannel`
    /// migrates (flag on): created without recovery, the buffers queued first, numbered from
    /// `i32::MIN`, none with priority (`checkState`: "Buffer migration failed").
    pub fn with_migrated(context: ChannelContext, migrated: Vec<NetworkBuffer>) -> Arc<Self> {
        let channel = Self::new(context, false);
        {
            let mut state = channel.received_buffers.lock();
            for (k, buffer) in migrated.into_iter().enumerate() {
                state.buffers.add(SequenceBuffer {
                    buffer,
                    sequence_number: i32::MIN.wrapping_add(k as i32),
                    subpartition_id: NONE_SUBPARTITION_ID,
                });
            }
        }
        channel
    }

    /// `getBuffersInUseCount()`: queued buffers plus floating ones required beyond the
    /// initial credit.
    pub fn buffers_in_use_count(&self) -> usize {
        let queued = self.received_buffers.lock().buffers.len();
        let required = self.buffer_manager.snapshot().num_required_buffers;
        queued + (required - self.initial_credit).max(0) as usize
    }

    /// `new RemoteInputChannel(..., needsRecovery)`: in recovery iff `needs_recovery`, with
    /// credit notification disabled (`notifyInitiallyEnabled = !needsRecovery`).
    pub fn new(context: ChannelContext, needs_recovery: bool) -> Arc<Self> {
        let shared = Arc::new(RemoteChannelShared {
            channel_info: context.channel_info,
            gate: Arc::clone(&context.gate),
            released: AtomicBool::new(false),
            unannounced_credit: AtomicI32::new(0),
            credit_notifications: AtomicU64::new(0),
            resume_consumption_queued: AtomicU32::new(0),
            error: Cause::new(),
        });
        let channel: Arc<dyn BufferManagerChannel> = Arc::clone(&shared) as Arc<dyn BufferManagerChannel>;
        let buffer_manager = BufferManager::with_flink_fixes(
            Arc::clone(&context.global_pool),
            Arc::clone(&context.buffer_pool),
            channel,
            0,
            !needs_recovery,
            context.flink_fixes,
        );
        let received = ReceivedBuffers {
            buffers: PrioritizedDeque::new(),
            recovery_event_stash: VecDeque::new(),
            in_recovery: needs_recovery,
            recovery_sequence_number: i32::MIN,
            expected_sequence_number: 0,
            last_barrier_id: NO_CHECKPOINT,
            last_barrier_sequence_number: None,
            end_of_fetched_appended: false,
            persister: ChannelStatePersister::new(Arc::clone(&context.writer), context.channel_info),
        };
        let state_consumed = if needs_recovery {
            StateConsumedFuture::new()
        } else {
            StateConsumedFuture::completed()
        };
        Arc::new(Self {
            initial_credit: context.network_buffers_per_channel as i32,
            context,
            needs_recovery,
            shared,
            received_buffers: Mutex::new(received),
            buffer_manager,
            upstream_ready: Latch::new(),
            state_consumed,
            partition_request: Mutex::new(None),
            partition_requested: AtomicBool::new(false),
        })
    }

    fn channel_index(&self) -> usize {
        self.context.channel_info.input_channel_idx as usize
    }

    fn check_error(&self) -> Result<()> {
        self.shared.error.check()
    }

    /// `needsRecovery()`: sent in the `PartitionRequest`.
    pub fn needs_recovery(&self) -> bool {
        self.needs_recovery
    }

    /// `getInitialCredit()`.
    pub fn initial_credit(&self) -> i32 {
        self.initial_credit
    }

    /// The `PartitionRequest` sent by `requestSubpartitions`, for the netty side to serve.
    pub fn partition_request(&self) -> Option<PartitionRequest> {
        *self.partition_request.lock()
    }

    /// The channel's `BufferManager`.
    pub fn buffer_manager(&self) -> &Arc<BufferManager> {
        &self.buffer_manager
    }

    // ------------------------------------------------------------------------
    // Credit-based flow control
    // ------------------------------------------------------------------------

    /// `requestBuffer()` (netty client thread): a buffer for an arriving data response.
    pub fn request_buffer(&self) -> Option<NetworkBuffer> {
        self.buffer_manager.request_buffer()
    }

    /// `getAndResetUnannouncedCredit()` (netty client thread): the credit of the next
    /// `AddCredit` message (skipped if 0).
    pub fn get_and_reset_unannounced_credit(&self) -> i32 {
        event_log::record_atomic(
            || self.shared.unannounced_credit.swap(0, Ordering::SeqCst),
            |credit| {
                Some(Event::GetAndResetUnannouncedCredit {
                    channel: self.context.channel_info,
                    credit: *credit,
                    released: self.shared.released.load(Ordering::SeqCst),
                })
            },
        )
    }

    /// `getUnannouncedCredit()`.
    pub fn unannounced_credit(&self) -> i32 {
        self.shared.unannounced_credit.load(Ordering::SeqCst)
    }

    /// `onSenderBacklog(backlog)`: requests floating buffers for the backlog and announces them
    /// (nothing while notification is disabled). The Netty client calls it after `onBuffer`
    /// released `receivedBuffers`, or for a `BacklogAnnouncement`.
    pub fn on_sender_backlog(&self, backlog: i32) {
        pause_point::reached(PausePoint::OnSenderBacklog);
        let requested = self
            .buffer_manager
            .request_floating_buffers(backlog + self.initial_credit);
        if requested > 0 {
            pause_point::reached(self.buffer_manager.announce_point(requested));
        }
        self.shared.notify_buffer_available(requested);
    }

    // ------------------------------------------------------------------------
    // Network I/O notifications (netty client thread)
    // ------------------------------------------------------------------------

    /// `onError(cause)` (Netty client thread): the connection failed; the cause is kept and
    /// thrown by the next `getNextBuffer`.
    pub fn on_error(&self, cause: ChannelError) {
        self.shared.set_error(cause);
    }

    /// `onBlockingUpstream()`: the upstream blocked behind the event this channel is receiving
    /// and announces no backlog until `resumeConsumption`; a channel without exclusive buffers
    /// gives its floating buffers back meanwhile.
    fn on_blocking_upstream(&self) -> Result<()> {
        if self.initial_credit == 0 {
            self.buffer_manager.release_floating_buffers()?;
        }
        Ok(())
    }

    /// `onBuffer(buffer, sequenceNumber, backlog, subpartitionId)`: enqueues an upstream
    /// element. During recovery priority events go to the head, ordinary events (the blocking
    /// `EndOfOutputChannelStateEvent` among them) to the stash, and data is a protocol
    /// violation. Opens `upstreamReady`. A blocking event first calls `onBlockingUpstream`,
    /// before `receivedBuffers` (Flink: after the sequence check, which this channel makes under
    /// the lock; a reordered blocking event fails the channel either way).
    pub fn on_buffer(&self, buffer: NetworkBuffer, sequence_number: i32, backlog: i32) -> Result<()> {
        let kind = buffer.kind();
        let snapshot = buffer.snapshot();
        if kind.is_blocking_upstream() {
            if let Err(error) = self.on_blocking_upstream() {
                buffer.recycle_buffer()?;
                return Err(error);
            }
            if backlog != 0 {
                buffer.recycle_buffer()?;
                return Err(ChannelError::illegal_state(&format!(
                    "Illegal number of backlog: {backlog}, should be 0."
                )));
            }
        }
        let record = |outcome: std::result::Result<bool, &ChannelError>| {
            event_log::record(|| Event::OnBuffer {
                channel: self.context.channel_info,
                buffer: snapshot,
                sequence_number,
                backlog,
                outcome: outcome.map_err(Clone::clone),
            })
        };
        let (notify_priority, notify_non_empty, rejected) = {
            let mut state = self.received_buffers.lock();
            if state.expected_sequence_number != sequence_number {
                let error = ChannelError::BufferReordering {
                    expected: state.expected_sequence_number,
                    actual: sequence_number,
                };
                record(Err(&error));
                drop(state);
                buffer.recycle_buffer()?;
                self.shared.set_error(error.clone());
                return Err(error);
            }
            // Never add a buffer after releaseAllResources() drained the queue.
            if self.shared.released.load(Ordering::SeqCst) {
                record(Ok(false));
                (false, false, Some((buffer, None)))
            } else if state.in_recovery && kind.is_buffer() {
                let error = ChannelError::ProtocolViolation(format!(
                    "Data buffer {sequence_number} received while channel {:?} is in recovery (credit must be withheld).",
                    self.context.channel_info
                ));
                record(Err(&error));
                (false, false, Some((buffer, Some(error))))
            } else {
                record(Ok(true));
                let barrier_id = state.persister.check_for_barrier(&buffer);
                if let Some(barrier_id) = barrier_id
                    && barrier_id > state.last_barrier_id
                {
                    // The task has not started this checkpoint yet: remember which buffers to
                    // spill when it does.
                    state.last_barrier_id = barrier_id;
                    state.last_barrier_sequence_number = Some(sequence_number);
                }
                state.persister.maybe_persist(&buffer);
                state.expected_sequence_number = state.expected_sequence_number.wrapping_add(1);
                let was_empty = state.buffers.is_empty();
                let element = SequenceBuffer {
                    buffer,
                    sequence_number,
                    subpartition_id: 0,
                };
                if kind.has_priority() {
                    let first = state.add_priority_buffer(element);
                    (first, was_empty, None)
                } else if let BufferKind::TimeoutableAlignedCheckpointBarrier(checkpoint_id) = kind {
                    // `requiresAnnouncement`: the barrier is an ordinary event (stashed in
                    // recovery, like any other), and its `EventAnnouncement`, with the barrier's
                    // sequence number, goes to the priority head so that the task learns of it.
                    if state.in_recovery {
                        state.recovery_event_stash.push_back(element);
                    } else {
                        state.buffers.add(element);
                    }
                    let first = state.add_priority_buffer(SequenceBuffer {
                        buffer: NetworkBuffer::event(BufferKind::EventAnnouncement(checkpoint_id)),
                        sequence_number,
                        subpartition_id: 0,
                    });
                    (first, was_empty, None)
                } else if state.in_recovery {
                    // Replayed after the sentinel is consumed (`on_recovered_state_consumed`).
                    state.recovery_event_stash.push_back(element);
                    (false, false, None)
                } else {
                    state.buffers.add(element);
                    (false, was_empty, None)
                }
            }
        };
        if let Some((buffer, error)) = rejected {
            buffer.recycle_buffer()?;
            if let Some(error) = error {
                self.shared.set_error(error.clone());
                return Err(error);
            }
            return Ok(());
        }
        if notify_priority {
            self.context
                .gate
                .notify_priority_event(self.channel_index(), sequence_number);
        }
        if notify_non_empty {
            self.context.gate.notify_channel_non_empty(self.channel_index());
        }
        self.upstream_ready.count_down();
        if backlog >= 0 {
            self.on_sender_backlog(backlog);
        }
        Ok(())
    }

    /// `resumeConsumption()` (task thread, the gate's `UpstreamRecoveryTracker` once every
    /// channel's `EndOfOutputChannelStateEvent` was handled): `checkState(!isReleased)`, the
    /// partition request sent, then in one atomic step the unannounced credit dropped if the
    /// initial credit is 0 (the server's reader drops its credit too) and a `ResumeConsumption`
    /// queued on the Netty client (`partitionRequestClient.resumeConsumption(this)`).
    pub fn resume_consumption(&self) -> Result<()> {
        // The checks are inside the recorded step: a release recorded before it was seen by it.
        event_log::record_atomic(
            || {
                if self.shared.released.load(Ordering::SeqCst) {
                    return Err(ChannelError::illegal_state("Channel released."));
                }
                if !self.partition_requested.load(Ordering::SeqCst) {
                    return Err(ChannelError::illegal_state(
                        "Bug: partitionRequestClient is not initialized before processing data.",
                    ));
                }
                if self.initial_credit == 0 {
                    self.shared.unannounced_credit.store(0, Ordering::SeqCst);
                }
                self.shared.resume_consumption_queued.fetch_add(1, Ordering::SeqCst);
                Ok(())
            },
            |outcome| {
                outcome.is_ok().then_some(Event::ResumeConsumption {
                    channel: self.context.channel_info,
                })
            },
        )
    }

    /// The Netty client takes this channel's oldest queued `ResumeConsumption` to write it
    /// (`ResumeConsumptionMessage.buildMessage()` in the client handler's
    /// `writeAndFlushNextMessageIfPossible`): `None` if none is queued, or if the channel is
    /// released (the handler drops a released channel's messages).
    pub fn take_resume_consumption(&self) -> Option<ResumeConsumption> {
        event_log::record_atomic(
            || {
                let taken = self
                    .shared
                    .resume_consumption_queued
                    .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                    .is_ok();
                (taken, taken && !self.shared.released.load(Ordering::SeqCst))
            },
            |&(taken, sent)| {
                taken.then_some(Event::SendResumeConsumption {
                    channel: self.context.channel_info,
                    sent,
                })
            },
        )
        .1
        .then_some(ResumeConsumption {
            receiver: self.context.channel_info,
        })
    }

    /// Whether a `ResumeConsumption` is queued on the Netty client.
    pub fn resume_consumption_queued(&self) -> bool {
        self.shared.resume_consumption_queued.load(Ordering::SeqCst) > 0
    }

    /// `convertToPriorityEvent(sequenceNumber)` (task thread, the alignment timer's mail): moves
    /// the announced barrier to the priority head so that the checkpoint goes on unaligned.
    /// Under `receivedBuffers`, as Flink's master does: `getAndRemove` by sequence number, which
    /// fails with [`ChannelError::NoSuchElement`] when the barrier is not in the deque (during
    /// recovery it is in the stash, which is not searched), then the barrier re-added as a
    /// priority event. After unlocking, `notifyPriorityEventForce()` if it is the first one.
    pub fn convert_to_priority_event(&self, sequence_number: i32) -> Result<()> {
        let (first_priority_event, dropped) = {
            let mut state = self.received_buffers.lock();
            if !state.persister.has_barrier_received() {
                return Err(ChannelError::illegal_state("No barrier received to prioritize."));
            }
            let num_priority_elements_before_removal = state.buffers.num_priority_elements();
            let to_prioritize = state
                .buffers
                .get_and_remove(|element| element.sequence_number == sequence_number)?;
            // Flink's `checkState`s after the removal: the task fails on any of them, so the
            // removed element is only recycled.
            let kind = to_prioritize.buffer.kind();
            let barrier = match kind {
                BufferKind::TimeoutableAlignedCheckpointBarrier(checkpoint_id)
                    if state.last_barrier_sequence_number == Some(sequence_number)
                        && num_priority_elements_before_removal == state.buffers.num_priority_elements() =>
                {
                    Ok(checkpoint_id)
                }
                _ => Err(ChannelError::IllegalState(format!(
                    "Attempted to convertToPriorityEvent {kind:?} #{sequence_number}, not an announced barrier."
                ))),
            };
            let subpartition_id = to_prioritize.subpartition_id;
            match barrier {
                // `EventSerializer.toBuffer(barrier, true)`: the same barrier as a priority
                // event with the same sequence number; only its position changes.
                Ok(checkpoint_id) => {
                    let first = state.add_priority_buffer(SequenceBuffer {
                        buffer: NetworkBuffer::event(BufferKind::CheckpointBarrier(checkpoint_id)),
                        sequence_number,
                        subpartition_id,
                    });
                    (Ok(first), to_prioritize.buffer)
                }
                Err(error) => (Err(error), to_prioritize.buffer),
            }
        };
        dropped.recycle_quietly();
        let first_priority_event = first_priority_event?;
        if first_priority_event {
            // `notifyPriorityEventForce()`: the gate may have seen this sequence number with the
            // announcement already, so the outdated check must not drop the notification.
            self.context.gate.queue_channel(self.channel_index(), true);
        }
        Ok(())
    }

    /// A snapshot taken under the `receivedBuffers` lock (atomics and the buffer manager are
    /// read right after it).
    pub fn snapshot(&self) -> RemoteInputChannelSnapshot {
        let (received_buffers, num_priority_elements, recovery_event_stash, in_recovery, recovery_sequence_number);
        let (expected_sequence_number, last_barrier_id, last_barrier_sequence_number, persister);
        {
            let state = self.received_buffers.lock();
            received_buffers = state.buffers.iter().map(SequenceBuffer::snapshot).collect();
            num_priority_elements = state.buffers.num_priority_elements();
            recovery_event_stash = state
                .recovery_event_stash
                .iter()
                .map(SequenceBuffer::snapshot)
                .collect();
            in_recovery = state.in_recovery;
            recovery_sequence_number = state.recovery_sequence_number;
            expected_sequence_number = state.expected_sequence_number;
            last_barrier_id = state.last_barrier_id;
            last_barrier_sequence_number = state.last_barrier_sequence_number;
            persister = state.persister.snapshot();
        }
        RemoteInputChannelSnapshot {
            channel_info: self.context.channel_info,
            needs_recovery: self.needs_recovery,
            in_recovery,
            received_buffers,
            num_priority_elements,
            recovery_event_stash,
            recovery_sequence_number,
            expected_sequence_number,
            last_barrier_id,
            last_barrier_sequence_number,
            initial_credit: self.initial_credit,
            unannounced_credit: self.shared.unannounced_credit.load(Ordering::SeqCst),
            credit_notifications: self.shared.credit_notifications.load(Ordering::SeqCst),
            resume_consumption_queued: self.shared.resume_consumption_queued.load(Ordering::SeqCst),
            partition_requested: self.partition_requested.load(Ordering::SeqCst),
            upstream_ready: self.upstream_ready.is_open(),
            released: self.shared.released.load(Ordering::SeqCst),
            error: self.shared.error.get(),
            state_consumed: self.state_consumed.status(),
            persister,
            buffer_manager: self.buffer_manager.snapshot(),
        }
    }
}

impl RecoverableInputChannel for RemoteInputChannel {
    fn channel_info(&self) -> InputChannelInfo {
        self.context.channel_info
    }

    /// `onRecoveredStateBuffer(buffer)` → `appendRecoveredBuffer` (IO or task thread).
    fn on_recovered_state_buffer(&self, buffer: NetworkBuffer) -> Result<()> {
        let appended = {
            let mut state = self.received_buffers.lock();
            event_log::on_recovered_state_buffer(self.context.channel_info, &self.shared.released, buffer, |buffer| {
                state.append_recovered_buffer(buffer)
            })
        };
        match appended {
            Ok(was_empty) => {
                if was_empty {
                    self.context.gate.notify_channel_non_empty(self.channel_index());
                }
                Ok(())
            }
            Err((buffer, error)) => {
                buffer.recycle_buffer()?;
                error.map_or(Ok(()), Err)
            }
        }
    }

    /// `finishRecoveredBufferDelivery()` (IO thread): waits for the first upstream message
    /// outside any lock, then appends the sentinel. Neither unstashes nor enables credit.
    fn finish_recovered_buffer_delivery(&self) -> Result<()> {
        self.upstream_ready.wait();
        let was_empty = {
            let mut state = self.received_buffers.lock();
            let in_recovery = state.in_recovery;
            event_log::finish_recovered_buffer_delivery(
                self.context.channel_info,
                &self.shared.released,
                in_recovery,
                |sentinel| state.append_recovered_buffer(sentinel),
            )?
        };
        if was_empty {
            self.context.gate.notify_channel_non_empty(self.channel_index());
        }
        Ok(())
    }

    fn insert_recovery_checkpoint_barrier_if_in_recovery(&self, checkpoint_id: CheckpointId) -> Result<()> {
        let was_empty = {
            let mut state = self.received_buffers.lock();
            let in_recovery = state.in_recovery;
            event_log::insert_recovery_checkpoint_barrier_if_in_recovery(
                self.context.channel_info,
                &self.shared.released,
                in_recovery,
                checkpoint_id,
                |barrier| state.append_recovered_buffer(barrier),
            )?
        };
        if was_empty {
            self.context.gate.notify_channel_non_empty(self.channel_index());
        }
        Ok(())
    }

    fn request_recovery_buffer_blocking(&self) -> Result<NetworkBuffer> {
        self.upstream_ready.wait();
        self.buffer_manager.request_buffer_blocking()
    }

    /// `onRecoveredStateConsumed()` (task thread): under `receivedBuffers`, leave recovery and
    /// move the stash to the tail in FIFO order; after unlocking, `enableNotify()` (credit
    /// reopens) and complete the future.
    fn on_recovered_state_consumed(&self) -> Result<()> {
        let notify_non_empty = {
            let mut state = self.received_buffers.lock();
            let outcome = if state.in_recovery {
                Ok(())
            } else {
                Err(ChannelError::illegal_state("Recovery already finished."))
            };
            event_log::record(|| Event::OnRecoveredStateConsumed {
                channel: self.context.channel_info,
                outcome: outcome.clone(),
            });
            outcome?;
            // Flip and unstash in ONE critical section: an event arriving concurrently either
            // was stashed before (and is moved now) or sees `in_recovery == false` and lands
            // after the moved ones, so upstream order is kept.
            state.in_recovery = false;
            let was_empty = state.buffers.is_empty();
            let stash = std::mem::take(&mut state.recovery_event_stash);
            let moved = !stash.is_empty();
            for element in stash {
                state.buffers.add(element);
            }
            was_empty && moved
        };
        if notify_non_empty {
            self.context.gate.notify_channel_non_empty(self.channel_index());
        }
        // Outside `receivedBuffers`: no data can arrive before this announces credit, and
        // keeping `bufferQueue` out of `receivedBuffers` keeps the lock order flat.
        pause_point::reached(PausePoint::EnableNotify);
        self.buffer_manager.enable_notify()?;
        self.state_consumed.complete();
        Ok(())
    }

    fn state_consumed_future(&self) -> StateConsumedFuture {
        self.state_consumed.clone()
    }

    /// `getNextBuffer()` (task thread): the head of `receivedBuffers` (priority first), the
    /// same path for recovered, sentinel and live elements.
    fn get_next_buffer(&self) -> Result<Option<BufferAndAvailability>> {
        self.check_error()?;
        let (next, next_data_type) = {
            let mut state = self.received_buffers.lock();
            // checkReadability(): in recovery reads are allowed before the partition request.
            if !state.in_recovery && !self.partition_requested.load(Ordering::SeqCst) && state.buffers.is_empty() {
                return Err(ChannelError::illegal_state(
                    "Queried for a buffer before requesting a queue.",
                ));
            }
            let next = state.buffers.poll();
            if let Some(next) = &next {
                event_log::record(|| Event::GetNextBuffer {
                    channel: self.context.channel_info,
                    buffer: next.buffer.snapshot(),
                    sequence_number: next.sequence_number,
                });
            }
            let next_data_type = state
                .buffers
                .peek()
                .map_or(DataType::None, |head| head.buffer.data_type());
            (next, next_data_type)
        };
        match next {
            Some(next) => Ok(Some(BufferAndAvailability {
                buffer: next.buffer,
                next_data_type,
                buffers_in_backlog: 0,
                sequence_number: next.sequence_number,
            })),
            None if self.shared.released.load(Ordering::SeqCst) => Err(ChannelError::released(
                "Queried for a buffer after channel has been released.",
            )),
            None => Ok(None),
        }
    }

    /// `checkpointStarted(barrier)`: in recovery `collectPreRecoveryBarrier` past the priority
    /// head then `startPersisting`; otherwise the master branch.
    fn checkpoint_started(&self, checkpoint_id: CheckpointId) -> Result<()> {
        let (removed, outcome) = {
            let mut state = self.received_buffers.lock();
            let (removed, collected) = if state.in_recovery {
                let start = state.buffers.num_priority_elements();
                collect_pre_recovery_barrier(&mut state.buffers, start, checkpoint_id)
            } else if checkpoint_id < state.last_barrier_id {
                let error = ChannelError::CheckpointSubsumed {
                    checkpoint_id,
                    newer_checkpoint_id: state.last_barrier_id,
                };
                (Vec::new(), Err(error))
            } else {
                if checkpoint_id > state.last_barrier_id {
                    // An obsolete barrier was received earlier: ignore its sequence number.
                    state.reset_last_barrier();
                }
                (Vec::new(), Ok(state.get_inflight_buffers(checkpoint_id)))
            };
            let outcome = collected.and_then(|to_persist| {
                let persisted = to_persist.clone();
                state
                    .persister
                    .start_persisting(checkpoint_id, to_persist)
                    .map(|()| persisted)
            });
            event_log::record(|| Event::CheckpointStarted {
                channel: self.context.channel_info,
                checkpoint_id,
                outcome: outcome.clone(),
            });
            (removed, outcome.map(drop))
        };
        removed.into_iter().for_each(|element| element.buffer.recycle_quietly());
        outcome
    }

    fn checkpoint_stopped(&self, checkpoint_id: CheckpointId) {
        let mut state = self.received_buffers.lock();
        state.persister.stop_persisting(checkpoint_id);
        if state.last_barrier_id == checkpoint_id {
            state.reset_last_barrier();
        }
    }

    /// `setup()`: requests `initialCredit` exclusive buffers (not announced while disabled).
    fn setup(&self) -> Result<()> {
        self.buffer_manager
            .request_exclusive_buffers(self.initial_credit as usize)
    }

    /// `requestSubpartitions()`: sends the `PartitionRequest` with the initial credit and
    /// `needsRecovery`.
    fn request_subpartitions(&self) -> Result<()> {
        if self.shared.released.load(Ordering::SeqCst) {
            return Err(ChannelError::released("RemoteInputChannel has already been released."));
        }
        let mut request = self.partition_request.lock();
        if request.is_none() {
            // NettyPartitionRequestClient.requestSubpartition reads both through the getters.
            *request = Some(PartitionRequest {
                receiver: self.context.channel_info,
                credit: self.initial_credit(),
                needs_recovery: self.needs_recovery(),
            });
            self.partition_requested.store(true, Ordering::SeqCst);
        }
        Ok(())
    }

    /// `releaseAllResources()`: drains the queue and the stash, releases all buffers, opens
    /// `upstreamReady` and fails the future.
    fn release_all_resources(&self) -> Result<()> {
        let channel = self.context.channel_info;
        // Flink's compareAndSet takes no lock. Here it takes `receivedBuffers` and `bufferQueue`
        // so that it falls between the steps that read the flag under them and record before
        // unlocking (`onBuffer`, the buffer manager's), as the model orders them: the steps
        // are atomic in the model, so no interleaving is lost.
        let was_released = {
            let _received = self.received_buffers.lock();
            self.buffer_manager.with_queue_locked(|| {
                event_log::record_atomic(
                    || self.shared.released.swap(true, Ordering::SeqCst),
                    |was_released| (!was_released).then_some(Event::ReleaseAllResources { channel }),
                )
            })
        };
        if was_released {
            return Ok(());
        }
        pause_point::reached(PausePoint::ReleaseQueuedBuffers);
        let drained: Vec<NetworkBuffer> = {
            let mut state = self.received_buffers.lock();
            event_log::record(|| Event::ReleaseQueuedBuffers { channel });
            let mut drained: Vec<NetworkBuffer> = state.buffers.drain().map(|element| element.buffer).collect();
            drained.extend(state.recovery_event_stash.drain(..).map(|element| element.buffer));
            drained
        };
        let outcome = self.buffer_manager.release_all_buffers(drained);
        self.upstream_ready.count_down();
        self.state_consumed
            .complete_exceptionally(ChannelError::released("Input channel has already been released."));
        outcome
    }

    fn resume_consumption(&self) -> Result<()> {
        RemoteInputChannel::resume_consumption(self)
    }

    fn is_released(&self) -> bool {
        self.shared.released.load(Ordering::SeqCst)
    }
}
