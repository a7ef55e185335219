//! Typed errors for everything a caller or a peer can cause; Flink throws these as
//! `IOException`, `CheckpointException`, `CancelTaskException` or `IllegalStateException`.

use serde::{Deserialize, Serialize};

use crate::ids::{BufferId, CheckpointId};

/// Why a checkpoint was declined: Flink's `CheckpointFailureReason` values used by the channels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum DeclineReason {
    /// `collectPreRecoveryBarrier` reached the end of the queue: "Missing RecoveryCheckpointBarrier".
    MissingRecoveryCheckpointBarrier,
    /// `collectPreRecoveryBarrier` met a `RecoveryCheckpointBarrier` of a later checkpoint first.
    LaterRecoveryCheckpointBarrier {
        /// The id of the later barrier that was found.
        found: CheckpointId,
    },
    /// `RecoveredInputChannel.checkpointStarted`: `CHECKPOINT_DECLINED_TASK_NOT_READY`.
    TaskNotReady,
}

/// The error type of every fallible operation of this crate.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
pub enum ChannelError {
    /// A peer broke the protocol, e.g. live data reached `RemoteInputChannel.onBuffer` during
    /// recovery (Flink asserts this with a `checkState`).
    #[error("protocol violation: {0}")]
    ProtocolViolation(String),
    /// A Flink `checkState` precondition that a caller can break, with Flink's message.
    #[error("illegal state: {0}")]
    IllegalState(String),
    /// `CheckpointException(CHECKPOINT_DECLINED)` (or `..._TASK_NOT_READY`).
    #[error("checkpoint {checkpoint_id} declined: {reason:?}")]
    CheckpointDeclined {
        /// The checkpoint that was declined.
        checkpoint_id: CheckpointId,
        /// Why.
        reason: DeclineReason,
    },
    /// `CheckpointException(CHECKPOINT_SUBSUMED)` from `ChannelStatePersister.startPersisting` or
    /// `RemoteInputChannel.checkpointStarted`.
    #[error("checkpoint {checkpoint_id} subsumed by checkpoint {newer_checkpoint_id}")]
    CheckpointSubsumed {
        /// The checkpoint that was requested.
        checkpoint_id: CheckpointId,
        /// The newer checkpoint already seen.
        newer_checkpoint_id: CheckpointId,
    },
    /// `CancelTaskException`: the channel, pool or gate was released.
    #[error("use after release: {0}")]
    Released(String),
    /// A buffer was recycled although its segment is not lent out (Flink's
    /// `IllegalReferenceCountException`).
    #[error("double recycle of buffer {0:?}")]
    DoubleRecycle(BufferId),
    /// `RemoteTransportException`: the connection to the producer failed; `onError` keeps it as
    /// the channel's cause and `getNextBuffer` rethrows it.
    #[error("remote transport failure: {0}")]
    RemoteTransport(String),
    /// `NoSuchElementException` from `PrioritizedDeque.getAndRemove`: nothing in the deque
    /// matched, e.g. `RemoteInputChannel.convertToPriorityEvent` looking for an announced
    /// barrier that is in the recovery event stash.
    #[error("no such element: {0}")]
    NoSuchElement(String),
    /// `BufferReorderingException` from `RemoteInputChannel.onBuffer`.
    #[error("buffer re-ordering: expected sequence number {expected}, got {actual}")]
    BufferReordering {
        /// `expectedSequenceNumber`.
        expected: i32,
        /// The sequence number of the arriving buffer.
        actual: i32,
    },
    /// `IOException`, e.g. reading the checkpointed channel state failed.
    #[error("I/O error: {0}")]
    Io(String),
    /// `AsynchronousException`: `StreamTask.handleAsyncException(message, cause)` wraps an
    /// exception thrown off the mailbox thread before it fails the task.
    #[error("{message}: {cause}")]
    Asynchronous {
        /// What failed, e.g. "Unable to set up recovered channel state".
        message: String,
        /// The exception thrown.
        cause: Box<ChannelError>,
    },
    /// `RejectedExecutionException` (`MailboxClosedException`): a mail for a closed mailbox.
    #[error("mailbox closed: {0}")]
    MailboxClosed(String),
}

impl ChannelError {
    pub(crate) fn illegal_state(message: &str) -> Self {
        ChannelError::IllegalState(message.to_owned())
    }

    pub(crate) fn released(what: &str) -> Self {
        ChannelError::Released(what.to_owned())
    }

    /// Whether Flink throws this as `CancelTaskException`, which `Task.doRun` takes for a
    /// cancellation rather than a failure.
    pub fn is_cancel_task(&self) -> bool {
        matches!(self, ChannelError::Released(_))
    }

    /// The exception an [`ChannelError::Asynchronous`] wraps (recursively); itself otherwise.
    pub fn root_cause(&self) -> &ChannelError {
        match self {
            ChannelError::Asynchronous { cause, .. } => cause.root_cause(),
            other => other,
        }
    }
}

/// Shorthand for `Result<T, ChannelError>`.
pub type Result<T> = std::result::Result<T, ChannelError>;
