//! The model's actions: one per critical section of the Java code, plus one per call Flink
//! makes after releasing a lock. Each names the Flink method and the channel it runs on; the
//! thread that runs it is [`Action::thread`].

use crate::model::RecoveryModel;
use crate::state::{CheckpointId, NetBuf, State};
use serde::{Deserialize, Serialize};
use std::fmt;

/// The threads that run the protocol's steps.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Thread {
    /// Task / mailbox thread.
    Task,
    /// `channel-state-unspilling` executor: the drainer.
    Io,
    /// Netty client IO thread (consumer side).
    NettyClient,
    /// Netty server IO thread (producer side).
    NettyServer,
    /// Producer task thread of the upstream.
    Producer,
    /// Whatever thread drops the last reference to a network buffer.
    Recycler,
    /// Canceler: `releaseAllResources` through gate close or cancel.
    Canceler,
    /// The JobManager's `CheckpointCoordinator`.
    Coordinator,
}

impl fmt::Display for Thread {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(match self {
            Thread::Task => "task",
            Thread::Io => "io",
            Thread::NettyClient => "netty-client",
            Thread::NettyServer => "netty-server",
            Thread::Producer => "producer",
            Thread::Recycler => "recycler",
            Thread::Canceler => "canceler",
            Thread::Coordinator => "coordinator",
        })
    }
}

/// The `channel` field of an action, for [`Action::channel`]: `Some` for the field named
/// `channel`, `None` for any other.
macro_rules! channel_field {
    (channel, $value:expr) => {
        Some($value)
    };
    ($other:ident, $value:expr) => {
        None
    };
}

/// Defines [`Action`] from one line per action: its fields, the Flink method it stands for, the
/// thread that runs it (an expression that may read the fields) and the `RecoveryModel` method
/// that is its effect (called with the state and the fields, in order). Everything that lists
/// actions (the enum, [`Action::method`], [`Action::thread`], [`Action::channel`],
/// [`Action::KINDS`], [`Action::apply`]) comes from that line.
macro_rules! actions {
    ($(
        $(#[$meta:meta])*
        $name:ident $({ $($(#[$field_meta:meta])* $field:ident : $ty:ty),* $(,)? })? => $method:literal, $thread:expr, $effect:ident;
    )*) => {
        /// One protocol step.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
        #[serde(rename_all = "kebab-case", tag = "action")]
        pub enum Action {
            $(
                $(#[$meta])*
                $name $({ $($(#[$field_meta])* $field: $ty),* })?,
            )*
        }

        impl Action {
            /// Every action kind's method name, in declaration order, for coverage reports.
            pub const KINDS: &'static [&'static str] = &[$($method),*];

            /// The Flink method name, for people.
            pub fn method(&self) -> &'static str {
                match self {
                    $(Action::$name { .. } => $method,)*
                }
            }

            /// The thread that runs the action, as declared; `RecoveryModel::thread` knows the
            /// one exception that depends on the configuration.
            #[allow(unused_variables)]
            pub fn thread(&self) -> Thread {
                match self {
                    $(Action::$name $({ $($field),* })? => $thread,)*
                }
            }

            /// Runs the action on `s`: the effect method its entry names. The thread's program
            /// in the model decides whether it is enabled.
            pub(crate) fn apply(self, model: &RecoveryModel, s: &mut State) {
                match self {
                    $(Action::$name $({ $($field),* })? => model.$effect(s $($(, $field)*)?),)*
                }
            }

            /// The channel the action touches, if one (its `channel` field).
            #[allow(unused_variables)]
            pub fn channel(&self) -> Option<u8> {
                match *self {
                    $(Action::$name $({ $($field),* })? => None $($(.or(channel_field!($field, $field)))*)?,)*
                }
            }
        }
    };
}

actions! {
    /// IO: `onRecoveredStateBuffer(buffer)`: append the next recovered buffer under
    /// `receivedBuffers`, in the network buffer `requestBufferBlocking` took (heap memory where
    /// the channel lends none; a released channel recycles it). On a released channel whose
    /// manager has nothing left, `requestBufferBlocking` throws `CancelTaskException` instead,
    /// which the drainer of that channel takes quietly: this step too.
    OnRecoveredStateBuffer {
        /// Channel index.
        channel: u8,
    } => "onRecoveredStateBuffer", Thread::Io, on_recovered_state_buffer;
    /// IO: `requestBufferBlocking()` for the next recovered buffer of a channel, under
    /// `bufferQueue`: it takes a queued buffer (or one from the pool), which the drainer fills
    /// outside every lock and appends in its next step; or, finding nothing, the manager
    /// registers as the pool's listener and the drainer parks until a buffer is queued to the
    /// manager, to take it in this step again once woken.
    RequestBufferBlocking {
        /// Channel index.
        channel: u8,
    } => "requestBufferBlocking", Thread::Io, request_buffer_blocking;
    /// IO (task, during conversion, for bug B5): `finishRecoveredBufferDelivery()` after
    /// `upstreamReady.await()`: append `EndOfFetchedChannelStateEvent`. Flag off
    /// (`Delivery::Legacy`): the `RecoveredInputChannel`'s `finishReadRecoveredState()`, which
    /// appends `EndOfInputChannelStateEvent` without waiting.
    FinishRecoveredBufferDelivery {
        /// Channel index.
        channel: u8,
    } => "finishRecoveredBufferDelivery", Thread::Io, finish_recovered_buffer_delivery;
    /// Task (mail): `requestPartitions` converting the recovered channels: `toInputChannel(true)`
    /// per channel (`Delivery::Conversion`), or flag off, once every state-consumed future is
    /// complete, `toInputChannel(false)`; then the partitions are requested.
    ConvertRecoveredInputChannels => "convertRecoveredInputChannels", Thread::Task, convert_recovered_input_channels;
    /// Task (mail): `requestPartitions`: local views created, remote `PartitionRequest` sent
    /// with `needsRecovery` and the server's view reader created.
    RequestPartitions => "requestPartitions", Thread::Task, request_partitions;
    /// Task: the gate polls `getNextBuffer()` of a channel and hands the result on.
    GetNextBuffer {
        /// Channel index.
        channel: u8,
    } => "getNextBuffer", Thread::Task, get_next_buffer;
    /// Task: `insertRecoveryCheckpointBarrierIfInRecovery(cp)`.
    InsertRecoveryCheckpointBarrier {
        /// Channel index.
        channel: u8,
        /// Checkpoint id.
        cp: CheckpointId,
    } => "insertRecoveryCheckpointBarrierIfInRecovery", Thread::Task, insert_recovery_checkpoint_barrier;
    /// Task: `checkpointStarted(barrier)` with `collectPreRecoveryBarrier` in recovery.
    CheckpointStarted {
        /// Channel index.
        channel: u8,
        /// Checkpoint id.
        cp: CheckpointId,
    } => "checkpointStarted", Thread::Task, checkpoint_started;
    /// Task: `onRecoveredStateConsumed()` after the gate polled the sentinel.
    OnRecoveredStateConsumed {
        /// Channel index.
        channel: u8,
    } => "onRecoveredStateConsumed", Thread::Task, on_recovered_state_consumed;
    /// Task: `bufferManager.enableNotify()` (remote).
    EnableNotify {
        /// Channel index.
        channel: u8,
    } => "enableNotify", Thread::Task, enable_notify;
    /// Any thread, after releasing `bufferQueue`: `notifyBufferAvailable(n)`.
    NotifyBufferAvailable {
        /// The thread that computed the credit.
        thread: Thread,
        /// Channel index.
        channel: u8,
        /// Credit announced.
        n: u8,
    } => "notifyBufferAvailable", *thread, notify_buffer_available;
    /// Producer: takes checkpoint `cp` and writes its priority barrier.
    EmitCheckpointBarrier {
        /// Channel index.
        channel: u8,
        /// Checkpoint id.
        cp: CheckpointId,
    } => "emitCheckpointBarrier", Thread::Producer, emit_checkpoint_barrier;
    /// Producer (`aligned_checkpoint_timeout`): takes checkpoint `cp` aligned with a timeout,
    /// `add` of a `TIMEOUTABLE_ALIGNED_CHECKPOINT_BARRIER` at the subpartition's tail.
    EmitTimeoutableCheckpointBarrier {
        /// Channel index.
        channel: u8,
        /// Checkpoint id.
        cp: CheckpointId,
    } => "processTimeoutableCheckpointBarrier", Thread::Producer, emit_timeoutable_checkpoint_barrier;
    /// Producer (`aligned_checkpoint_timeout`): the upstream's own alignment timer,
    /// `PipelinedSubpartition.alignedBarrierTimeout(cp)`: the timeoutable barrier still queued
    /// becomes an unaligned one and moves to the priority head.
    AlignedBarrierTimeout {
        /// Channel index.
        channel: u8,
        /// Checkpoint id.
        cp: CheckpointId,
    } => "alignedBarrierTimeout", Thread::Producer, aligned_barrier_timeout;
    /// Task (the alignment timer's mail, `aligned_checkpoint_timeout`): the barrier handler's
    /// `alignedCheckpointTimeout` → `prioritizeAllAnnouncements` → `convertToPriorityEvent` on
    /// every channel whose announcement it saw.
    AlignedCheckpointTimeout {
        /// Checkpoint id.
        cp: CheckpointId,
    } => "alignedCheckpointTimeout", Thread::Task, aligned_checkpoint_timeout;
    /// Producer, after `PipelinedSubpartition.add` released its lock (a channel with
    /// `priority_notify_step`): `notifyPriorityEvent(seq)` → `LocalInputChannel`'s listener sets
    /// `hasPendingPriorityEvent` and queues the channel at the gate's priority head.
    NotifyPriorityEvent {
        /// Channel index.
        channel: u8,
    } => "notifyPriorityEvent", Thread::Producer, notify_priority_event;
    /// Task, the second half of `pullPriorityFromSubpartitionView` (a channel with
    /// `priority_notify_step`): the view was polled in the step before; the next data type it
    /// returned then had no priority, so `hasPendingPriorityEvent = false`, then the gate's turn
    /// ends (requeue, the barrier to the handler).
    ClearPendingPriorityEvent {
        /// Channel index.
        channel: u8,
    } => "pullPriorityFromSubpartitionView", Thread::Task, clear_pending_priority_event;
    /// Task, the second half of `getNextBuffer` in the variant
    /// `recovered-buffer-dropped-for-priority-event`: the re-read of `hasPendingPriorityEvent`
    /// after the poll, outside the lock; then the gate's turn ends.
    RereadPendingPriorityEvent {
        /// Channel index.
        channel: u8,
    } => "rereadPendingPriorityEvent", Thread::Task, reread_pending_priority_event;
    /// Netty server: the view reader sends the head of the subpartition.
    SendBuffer {
        /// Channel index.
        channel: u8,
    } => "sendBuffer", Thread::NettyServer, send_buffer;
    /// Netty server: `addCredit(k)` from an `AddCredit` message.
    OnAddCredit {
        /// Channel index.
        channel: u8,
    } => "addCredit", Thread::NettyServer, on_add_credit;
    /// Netty server: `PartitionRequestQueue.resumeConsumption` from a `ResumeConsumption`
    /// message: the view reader drops its credit if its initial credit is 0, the subpartition
    /// unblocks.
    OnResumeConsumption {
        /// Channel index.
        channel: u8,
    } => "resumeConsumption", Thread::NettyServer, on_resume_consumption;
    /// Netty server: `PartitionRequestQueue.announceBacklog`. A reader with initial credit 0
    /// and no credit left (`needAnnounceBacklog`) whose head is a data buffer writes a
    /// `BacklogAnnouncement`.
    AnnounceBacklog {
        /// Channel index.
        channel: u8,
    } => "announceBacklog", Thread::NettyServer, announce_backlog;
    /// Netty client: `onBuffer` (with the `requestBuffer` a data buffer needs); opens
    /// `upstreamReady`.
    OnBuffer {
        /// Channel index.
        channel: u8,
    } => "onBuffer", Thread::NettyClient, on_buffer;
    /// Netty client, after `onBuffer` released the lock: `onSenderBacklog(backlog)`, which
    /// requests floating buffers (`requestFloatingBuffers(backlog + initialCredit)`).
    OnSenderBacklog {
        /// Channel index.
        channel: u8,
    } => "onSenderBacklog", Thread::NettyClient, on_sender_backlog;
    /// Netty client: writes `AddCredit(getAndResetUnannouncedCredit())`.
    SendAddCredit {
        /// Channel index.
        channel: u8,
    } => "sendAddCredit", Thread::NettyClient, send_add_credit;
    /// Netty client: writes the `ResumeConsumption` message the task's `resumeConsumption`
    /// queued.
    SendResumeConsumption {
        /// Channel index.
        channel: u8,
    } => "sendResumeConsumption", Thread::NettyClient, send_resume_consumption;
    /// Recycler: the consumer drops a network buffer (`recycle` or `LocalBufferPool.recycle`).
    Recycle {
        /// Channel index.
        channel: u8,
        /// The buffer.
        buffer: NetBuf,
    } => "recycle", Thread::Recycler, recycle;
    /// Recycler: hands the floating buffer `recycle` released back to the `LocalBufferPool`.
    ReturnFloatingBuffer {
        /// Channel index.
        channel: u8,
        /// The buffer.
        buffer: NetBuf,
    } => "recycleFloatingBuffer", Thread::Recycler, return_floating_buffer;
    /// Producer: writes its next upstream element (`ResultSubpartition.add`); a local view's
    /// listener is told if the subpartition was empty.
    AddBuffer {
        /// Channel index.
        channel: u8,
    } => "add", Thread::Producer, add_buffer;
    /// Producer (`faults`): the upstream task fails and `release()`s the local channel's
    /// subpartition: its buffers are dropped and the view reports released.
    ReleasePartition {
        /// Channel index.
        channel: u8,
    } => "releasePartition", Thread::Producer, release_partition;
    /// Netty client (`faults`): the connection failed, `onError(cause)` on the remote channel
    /// (`setError`: the cause is kept and the gate notified).
    OnError {
        /// Channel index.
        channel: u8,
    } => "onError", Thread::NettyClient, on_error;
    /// Canceler: `releaseAllResources()`; with `release_step`, only its first part: `isReleased`
    /// (a local channel also opens `upstreamReady` and fails the state-consumed future).
    ReleaseAllResources {
        /// Channel index.
        channel: u8,
    } => "releaseAllResources", Thread::Canceler, release_all_resources;
    /// Canceler, the rest of `releaseAllResources()` (`release_step`): the local view released,
    /// the queue and the stash drained under the channel's lock, `releaseAllBuffers` (a remote
    /// channel then opens `upstreamReady` and fails the state-consumed future).
    ReleaseQueuedBuffers {
        /// Channel index.
        channel: u8,
    } => "releaseQueuedBuffers", Thread::Canceler, release_queued_buffers;
    /// Canceler: `SingleInputGate.close()`: `releaseAllResources()` of every channel, then
    /// `bufferPool.lazyDestroy()` (free floating segments back to the global pool).
    CloseGate => "close", Thread::Canceler, close_gate;
    /// Coordinator: `abortPendingCheckpoint(cp)` (another task declined it, or it expired), so
    /// that the next checkpoint may be triggered.
    AbortPendingCheckpoint {
        /// Checkpoint id.
        cp: CheckpointId,
    } => "abortPendingCheckpoint", Thread::Coordinator, abort_pending_checkpoint;
}

impl Action {
    /// Kinds no preset's conformance run replays: the re-read that only the bug variant
    /// recovered-buffer-dropped-for-priority-event takes as a step of its own (impl/ stops there
    /// for that variant's replay, `ImplDriver::for_model`).
    pub const MODEL_ONLY_KINDS: &'static [&'static str] = &["rereadPendingPriorityEvent"];
}
