//! Task-level actions: one per step of a thread, named after the Flink method it runs.

use super::state::Mail;
use serde::{Deserialize, Serialize};

/// The threads of the task level.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TaskThread {
    /// The task's mailbox thread.
    Mailbox,
    /// The channel-IO executor ("channel-state-unspilling").
    Io,
    /// Future completions and their dependent actions: they run on whichever thread completes
    /// the future, so the model runs each as a step of its own that may lag.
    Completion,
    /// The TaskManager's side of cancellation: `Task.cancelExecution` (the JobManager cancels
    /// the task) and the `TaskCanceler` thread that runs `invokable.cancel()`.
    Canceler,
    /// The checkpoint coordinator's side: a checkpoint reaches the task (the RPC to a source, the
    /// first barrier to a task with inputs).
    Coordinator,
}

impl std::fmt::Display for TaskThread {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(match self {
            TaskThread::Mailbox => "mailbox",
            TaskThread::Io => "io",
            TaskThread::Completion => "completion",
            TaskThread::Canceler => "canceler",
            TaskThread::Coordinator => "coordinator",
        })
    }
}

/// One step.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum TaskAction {
    /// IO: `SequentialChannelStateReader.readInputData` for one gate: its recovered buffers
    /// into the `RecoveredInputChannel`s.
    ReadInputData {
        /// The gate.
        gate: u8,
    },
    /// IO: `finishReadRecoveredState()` of one gate. After the last gate, flag on, the chain's
    /// `thenRunAsync(requestPartitions(true), mainMailboxExecutor)` queues its mail.
    FinishReadRecoveredState {
        /// The gate.
        gate: u8,
    },
    /// IO (flag on): `FetchedChannelStateDrainer.drain` of one gate: its fetched state into its
    /// channels, then the end-of-state sentinel.
    DrainGate {
        /// The gate.
        gate: u8,
    },
    /// Mailbox: the mailbox loop runs the mail at the head.
    ProcessMail {
        /// The mail (for readable traces; it is the head).
        mail: Mail,
    },
    /// Mailbox: the default action, `processInput`, reads the next element of a channel.
    ProcessInput {
        /// The gate (the input).
        gate: u8,
        /// The channel.
        channel: u8,
    },
    /// Mailbox: `processInput` finds no selectable input with anything to read.
    ProcessInputNothingToRead,
    /// Completion (flag off): a gate's state-consumed future completes; its `thenRun` queues
    /// the gate's `requestPartitions` mail.
    OnGateStateConsumed {
        /// The gate.
        gate: u8,
    },
    /// Completion (variant convert-all-gates-together): every gate's future completes; the
    /// mails for all gates are queued together.
    OnAllGatesStateConsumed,
    /// Completion: the recovery future completes. Flag on, `completeAll` of the gates'
    /// state-consumed futures completed and its `thenRun` queued the NO_OP mail first.
    CompleteRecovery,
    /// Completion (flag on, the restore loop ending at the drain's end): `completeAll` of the
    /// gates' state-consumed futures completed; its `thenRun` queues the NO_OP mail.
    CompleteAllStateConsumed,
    /// Coordinator: a checkpoint reaches the RUNNING task; its mail is queued.
    TriggerCheckpoint,
    /// Completion: `whenComplete(-> mailboxProcessor.suspend())` runs.
    RunSuspendCallback,
    /// Completion: defer-finish's `thenRun(suspension::resume)` runs.
    RunResumeCallback,
    /// Completion: the input processor's availability future completes; the default action's
    /// `ResumeWrapper` sends its resume mail.
    OnInputAvailable,
    /// IO: `readInputData` of a gate throws (the checkpoint read, the rescale filter, a push).
    /// Flag off, the read's catch hands it to `handleAsyncException`; flag on, the chain's
    /// `runAsync` stage completes exceptionally, and with it the recovery future.
    ReadInputDataThrows {
        /// The gate.
        gate: u8,
    },
    /// IO: `finishReadRecoveredState()` of a gate throws; handled as a failed read.
    FinishReadRecoveredStateThrows {
        /// The gate.
        gate: u8,
    },
    /// Mailbox: the head mail's `requestPartitions` of a gate throws. Flag off, the mail's
    /// exception leaves `runMailboxLoop` and `invoke`; flag on, the chain's `thenRunAsync` stage
    /// (gates before it converted) completes exceptionally, and with it the recovery future.
    RequestPartitionsThrows {
        /// The gate whose conversion throws.
        gate: u8,
    },
    /// Canceler: the JobManager cancels the task (`Task.cancelExecution`): CANCELING, and a
    /// `TaskCanceler` is started.
    CancelExecution,
    /// Canceler: the `TaskCanceler` runs `StreamTask.cancel()`: `canceled`, then
    /// `mailboxProcessor.allActionsCompleted()`'s poison mail (dropped by a closed mailbox).
    CancelInvokable,
    /// Mailbox: `invoke` has ended; `Task.doRun` cleans the invokable up (the mailbox closes,
    /// its mails dropped), takes its final state, and `releaseResources` closes the gates.
    ReleaseResources,
}

impl TaskAction {
    /// The thread that runs it.
    pub fn thread(&self) -> TaskThread {
        use TaskAction::*;
        match self {
            ReadInputData { .. }
            | FinishReadRecoveredState { .. }
            | DrainGate { .. }
            | ReadInputDataThrows { .. }
            | FinishReadRecoveredStateThrows { .. } => TaskThread::Io,
            ProcessMail { .. }
            | ProcessInput { .. }
            | ProcessInputNothingToRead
            | RequestPartitionsThrows { .. }
            | ReleaseResources => TaskThread::Mailbox,
            CancelExecution | CancelInvokable => TaskThread::Canceler,
            TriggerCheckpoint => TaskThread::Coordinator,
            OnGateStateConsumed { .. }
            | OnAllGatesStateConsumed
            | CompleteRecovery
            | CompleteAllStateConsumed
            | RunSuspendCallback
            | RunResumeCallback
            | OnInputAvailable => TaskThread::Completion,
        }
    }
}
