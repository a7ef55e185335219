//! The model's actions: one per critical section of the Java code, plus one per call Flink
//! makes after releasing a lock. Each names the Flink method and the channel it runs on; the
//! thread that runs it is [`Action::thread`].

use crate::state::{CheckpointId, NetBuf};
use serde::{Deserialize, Serialize};
use std::fmt;

/// The threads of section 1.1 of the brief.
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
        })
    }
}

/// One protocol step.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case", tag = "action")]
pub enum Action {
    /// IO: `onRecoveredStateBuffer(buffer)`: push the next recovered buffer.
    OnRecoveredStateBuffer {
        /// Channel index.
        channel: u8,
    },
    /// IO (task, during conversion, for bug B5): `finishRecoveredBufferDelivery()` after
    /// `upstreamReady.await()`: append `EndOfFetchedChannelStateEvent`. Flag off
    /// (`Delivery::Legacy`): the `RecoveredInputChannel`'s `finishReadRecoveredState()`, which
    /// appends `EndOfInputChannelStateEvent` without waiting.
    FinishRecoveredBufferDelivery {
        /// Channel index.
        channel: u8,
    },
    /// Task (mail): `requestPartitions` converting the recovered channels: `toInputChannel(true)`
    /// per channel (`Delivery::Conversion`), or flag off, once every state-consumed future is
    /// complete, `toInputChannel(false)`; then the partitions are requested.
    ConvertRecoveredInputChannels,
    /// Task (mail): `requestPartitions`: local views created, remote `PartitionRequest` sent
    /// with `needsRecovery` and the server's view reader created.
    RequestPartitions,
    /// Task: the gate polls `getNextBuffer()` of a channel and hands the result on.
    GetNextBuffer {
        /// Channel index.
        channel: u8,
    },
    /// Task: `insertRecoveryCheckpointBarrierIfInRecovery(cp)`.
    InsertRecoveryCheckpointBarrier {
        /// Channel index.
        channel: u8,
        /// Checkpoint id.
        cp: CheckpointId,
    },
    /// Task: `checkpointStarted(barrier)` with `collectPreRecoveryBarrier` in recovery.
    CheckpointStarted {
        /// Channel index.
        channel: u8,
        /// Checkpoint id.
        cp: CheckpointId,
    },
    /// Task: `onRecoveredStateConsumed()` after the gate polled the sentinel.
    OnRecoveredStateConsumed {
        /// Channel index.
        channel: u8,
    },
    /// Task: `bufferManager.enableNotify()` (remote).
    EnableNotify {
        /// Channel index.
        channel: u8,
    },
    /// Any thread, after releasing `bufferQueue`: `notifyBufferAvailable(n)`.
    NotifyBufferAvailable {
        /// The thread that computed the credit.
        thread: Thread,
        /// Channel index.
        channel: u8,
        /// Credit announced.
        n: u8,
    },
    /// Producer: takes checkpoint `cp` and writes its priority barrier.
    EmitCheckpointBarrier {
        /// Channel index.
        channel: u8,
        /// Checkpoint id.
        cp: CheckpointId,
    },
    /// Producer (`aligned_checkpoint_timeout`): takes checkpoint `cp` aligned with a timeout,
    /// `add` of a `TIMEOUTABLE_ALIGNED_CHECKPOINT_BARRIER` at the subpartition's tail.
    EmitTimeoutableCheckpointBarrier {
        /// Channel index.
        channel: u8,
        /// Checkpoint id.
        cp: CheckpointId,
    },
    /// Task (the alignment timer's mail, `aligned_checkpoint_timeout`): the barrier handler's
    /// `alignedCheckpointTimeout` → `prioritizeAllAnnouncements` → `convertToPriorityEvent` on
    /// every channel whose announcement it saw.
    AlignedCheckpointTimeout {
        /// Checkpoint id.
        cp: CheckpointId,
    },
    /// Producer, after `PipelinedSubpartition.add` released its lock (a channel with
    /// `priority_notify_step`): `notifyPriorityEvent(seq)` → `LocalInputChannel`'s listener sets
    /// `hasPendingPriorityEvent` and queues the channel at the gate's priority head.
    NotifyPriorityEvent {
        /// Channel index.
        channel: u8,
    },
    /// Task, the second half of `pullPriorityFromSubpartitionView` (a channel with
    /// `priority_notify_step`): the view was polled in the step before; the next data type it
    /// returned then had no priority, so `hasPendingPriorityEvent = false`, then the gate's turn
    /// ends (requeue, the barrier to the handler).
    ClearPendingPriorityEvent {
        /// Channel index.
        channel: u8,
    },
    /// Task, the second half of `getNextBuffer` in the variant
    /// `recovered-buffer-dropped-for-priority-event`: the re-read of `hasPendingPriorityEvent`
    /// after the poll, outside the lock; then the gate's turn ends.
    RereadPendingPriorityEvent {
        /// Channel index.
        channel: u8,
    },
    /// Netty server: the view reader sends the head of the subpartition.
    SendBuffer {
        /// Channel index.
        channel: u8,
    },
    /// Netty server: `addCredit(k)` from an `AddCredit` message.
    OnAddCredit {
        /// Channel index.
        channel: u8,
    },
    /// Netty client: `onBuffer` (with the `requestBuffer` a data buffer needs); opens
    /// `upstreamReady`.
    OnBuffer {
        /// Channel index.
        channel: u8,
    },
    /// Netty client, after `onBuffer` released the lock: `onSenderBacklog(backlog)`, which
    /// requests floating buffers (`requestFloatingBuffers(backlog + initialCredit)`).
    OnSenderBacklog {
        /// Channel index.
        channel: u8,
    },
    /// Netty client: writes `AddCredit(getAndResetUnannouncedCredit())`.
    SendAddCredit {
        /// Channel index.
        channel: u8,
    },
    /// Recycler: the consumer drops a network buffer (`recycle` or `LocalBufferPool.recycle`).
    Recycle {
        /// Channel index.
        channel: u8,
        /// The buffer.
        buffer: NetBuf,
    },
    /// Recycler: hands the floating buffer `recycle` released back to the `LocalBufferPool`.
    ReturnFloatingBuffer {
        /// Channel index.
        channel: u8,
        /// The buffer.
        buffer: NetBuf,
    },
    /// Producer: writes its next upstream element (`ResultSubpartition.add`); a local view's
    /// listener is told if the subpartition was empty.
    AddBuffer {
        /// Channel index.
        channel: u8,
    },
    /// Producer (`faults`): the upstream task fails and `release()`s the local channel's
    /// subpartition: its buffers are dropped and the view reports released.
    ReleasePartition {
        /// Channel index.
        channel: u8,
    },
    /// Netty client (`faults`): the connection failed, `onError(cause)` on the remote channel
    /// (`setError`: the cause is kept and the gate notified).
    OnError {
        /// Channel index.
        channel: u8,
    },
    /// Canceler: `releaseAllResources()`; with `release_step`, only its first part: `isReleased`
    /// (a local channel also opens `upstreamReady` and fails the state-consumed future).
    ReleaseAllResources {
        /// Channel index.
        channel: u8,
    },
    /// Canceler, the rest of `releaseAllResources()` (`release_step`): the local view released,
    /// the queue and the stash drained under the channel's lock, `releaseAllBuffers` (a remote
    /// channel then opens `upstreamReady` and fails the state-consumed future).
    ReleaseQueuedBuffers {
        /// Channel index.
        channel: u8,
    },
    /// Canceler: `SingleInputGate.close()`: `releaseAllResources()` of every channel, then
    /// `bufferPool.lazyDestroy()` (free floating segments back to the global pool).
    CloseGate,
}

impl Action {
    /// The channel the action touches, if one.
    pub fn channel(&self) -> Option<u8> {
        use Action::*;
        match *self {
            ConvertRecoveredInputChannels | RequestPartitions | CloseGate | AlignedCheckpointTimeout { .. } => None,
            OnRecoveredStateBuffer { channel }
            | FinishRecoveredBufferDelivery { channel }
            | GetNextBuffer { channel }
            | InsertRecoveryCheckpointBarrier { channel, .. }
            | CheckpointStarted { channel, .. }
            | OnRecoveredStateConsumed { channel }
            | EnableNotify { channel }
            | NotifyBufferAvailable { channel, .. }
            | EmitCheckpointBarrier { channel, .. }
            | EmitTimeoutableCheckpointBarrier { channel, .. }
            | NotifyPriorityEvent { channel }
            | ClearPendingPriorityEvent { channel }
            | RereadPendingPriorityEvent { channel }
            | SendBuffer { channel }
            | OnAddCredit { channel }
            | OnBuffer { channel }
            | OnSenderBacklog { channel }
            | SendAddCredit { channel }
            | Recycle { channel, .. }
            | ReturnFloatingBuffer { channel, .. }
            | AddBuffer { channel }
            | ReleasePartition { channel }
            | OnError { channel }
            | ReleaseAllResources { channel }
            | ReleaseQueuedBuffers { channel } => Some(channel),
        }
    }

    /// The Flink method name, for people.
    pub fn method(&self) -> &'static str {
        use Action::*;
        match self {
            OnRecoveredStateBuffer { .. } => "onRecoveredStateBuffer",
            FinishRecoveredBufferDelivery { .. } => "finishRecoveredBufferDelivery",
            ConvertRecoveredInputChannels => "convertRecoveredInputChannels",
            RequestPartitions => "requestPartitions",
            GetNextBuffer { .. } => "getNextBuffer",
            InsertRecoveryCheckpointBarrier { .. } => "insertRecoveryCheckpointBarrierIfInRecovery",
            CheckpointStarted { .. } => "checkpointStarted",
            OnRecoveredStateConsumed { .. } => "onRecoveredStateConsumed",
            EnableNotify { .. } => "enableNotify",
            NotifyBufferAvailable { .. } => "notifyBufferAvailable",
            EmitCheckpointBarrier { .. } => "emitCheckpointBarrier",
            EmitTimeoutableCheckpointBarrier { .. } => "processTimeoutableCheckpointBarrier",
            AlignedCheckpointTimeout { .. } => "alignedCheckpointTimeout",
            NotifyPriorityEvent { .. } => "notifyPriorityEvent",
            ClearPendingPriorityEvent { .. } => "pullPriorityFromSubpartitionView",
            RereadPendingPriorityEvent { .. } => "rereadPendingPriorityEvent",
            SendBuffer { .. } => "sendBuffer",
            OnAddCredit { .. } => "addCredit",
            OnBuffer { .. } => "onBuffer",
            OnSenderBacklog { .. } => "onSenderBacklog",
            SendAddCredit { .. } => "sendAddCredit",
            Recycle { .. } => "recycle",
            ReturnFloatingBuffer { .. } => "recycleFloatingBuffer",
            AddBuffer { .. } => "add",
            ReleasePartition { .. } => "releasePartition",
            OnError { .. } => "onError",
            ReleaseAllResources { .. } => "releaseAllResources",
            ReleaseQueuedBuffers { .. } => "releaseQueuedBuffers",
            CloseGate => "close",
        }
    }

    /// Kinds impl/ cannot perform, so conformance does not replay them: the two that only
    /// configurations with `priority_notify_step` reach (impl/ makes each inside one call,
    /// `ResultSubpartition::add` and `LocalInputChannel::get_next_buffer`; a loom test shows the
    /// race they expose on impl/), and the re-read of a bug variant.
    pub const MODEL_ONLY_KINDS: &'static [&'static str] = &[
        "notifyPriorityEvent",
        "pullPriorityFromSubpartitionView",
        "rereadPendingPriorityEvent",
    ];

    /// Every action kind's method name, for coverage reports.
    pub const KINDS: &'static [&'static str] = &[
        "onRecoveredStateBuffer",
        "finishRecoveredBufferDelivery",
        "convertRecoveredInputChannels",
        "requestPartitions",
        "getNextBuffer",
        "insertRecoveryCheckpointBarrierIfInRecovery",
        "checkpointStarted",
        "onRecoveredStateConsumed",
        "enableNotify",
        "notifyBufferAvailable",
        "emitCheckpointBarrier",
        "processTimeoutableCheckpointBarrier",
        "alignedCheckpointTimeout",
        "notifyPriorityEvent",
        "pullPriorityFromSubpartitionView",
        "rereadPendingPriorityEvent",
        "sendBuffer",
        "addCredit",
        "onBuffer",
        "onSenderBacklog",
        "sendAddCredit",
        "recycle",
        "recycleFloatingBuffer",
        "add",
        "releasePartition",
        "onError",
        "releaseAllResources",
        "releaseQueuedBuffers",
        "close",
    ];
}
