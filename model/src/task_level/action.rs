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
}

impl std::fmt::Display for TaskThread {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(match self {
            TaskThread::Mailbox => "mailbox",
            TaskThread::Io => "io",
            TaskThread::Completion => "completion",
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
    /// Completion: the recovery future completes.
    CompleteRecovery,
    /// Completion: `whenComplete(-> mailboxProcessor.suspend())` runs.
    RunSuspendCallback,
    /// Completion: defer-finish's `thenRun(suspension::resume)` runs.
    RunResumeCallback,
    /// Completion: the input processor's availability future completes; the default action's
    /// `ResumeWrapper` sends its resume mail.
    OnInputAvailable,
}

impl TaskAction {
    /// The thread that runs it.
    pub fn thread(&self) -> TaskThread {
        use TaskAction::*;
        match self {
            ReadInputData { .. } | FinishReadRecoveredState { .. } => TaskThread::Io,
            ProcessMail { .. } | ProcessInput { .. } | ProcessInputNothingToRead => TaskThread::Mailbox,
            OnGateStateConsumed { .. }
            | OnAllGatesStateConsumed
            | CompleteRecovery
            | RunSuspendCallback
            | RunResumeCallback
            | OnInputAvailable => TaskThread::Completion,
        }
    }
}
