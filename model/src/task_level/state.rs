//! The task-level state: the mailbox thread's loop, the mailbox, the recovery future and its
//! callbacks, the IO executor's progress, and each gate's channels abstracted to "recovered
//! state consumed or not" plus the data still to read.

use serde::{Deserialize, Serialize};

/// One input channel, as the operator sees it through the gate.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Channel {
    /// Recovered buffers not yet read by the operator.
    pub recovered: u8,
    /// The end-of-state marker was consumed: the channel's `stateConsumedFuture` is complete.
    /// Flag off: `EndOfInputChannelStateEvent` of the `RecoveredInputChannel`; flag on: the
    /// `EndOfFetchedChannelStateEvent` sentinel, whose `onRecoveredStateConsumed` also ends the
    /// channel's recovery so live data shows.
    pub state_consumed: bool,
    /// Live records not yet read.
    pub live: u8,
    /// `EndOfPartitionEvent` was read.
    pub end_of_partition: bool,
}

/// One input gate.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Gate {
    /// `readInputData` reached this gate: its recovered buffers are in the
    /// `RecoveredInputChannel`s.
    pub read: bool,
    /// `finishReadRecoveredState()` ran: the end-of-state marker is queued behind them.
    pub finished_read: bool,
    /// Flag off: the `thenRun` of the gate's state-consumed future ran, queueing the gate's
    /// `requestPartitions` mail.
    pub consumed_callback_run: bool,
    /// `requestPartitions` ran: the channels are converted and the partitions requested.
    pub partitions_requested: bool,
    /// The input processor saw this input's END_OF_INPUT.
    pub finished: bool,
    /// The channels.
    pub channels: Vec<Channel>,
}

impl Gate {
    /// The gate's `getStateConsumedFuture()` (all its channels') is complete.
    pub fn state_consumed(&self) -> bool {
        self.channels.iter().all(|c| c.state_consumed)
    }
}

/// A mail in the task's mailbox.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Mail {
    /// Flag off: `inputGate.requestPartitions()` of one gate.
    RequestPartitions(u8),
    /// Flag on: the chain's `thenRunAsync` stage, `requestPartitions(true)` of every gate.
    RequestPartitionsWithRecovery,
    /// `mailboxProcessor.suspend()`: the running mailbox loop returns (a control mail).
    Suspend,
    /// `resume()` of a suspended default action (a control mail).
    Resume(Suspension),
}

/// Why the default action was suspended, for `Mail::Resume`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Suspension {
    /// NOTHING_AVAILABLE: waiting on the input processor's availability future.
    Input,
    /// END_OF_INPUT during recovery: waiting on the recovery future (defer-finish).
    Recovery,
}

/// The mailbox's default action, `processInput`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum DefaultAction {
    /// Invoked whenever the mailbox has no mail.
    Running,
    /// Suspended on NOTHING_AVAILABLE, its `ResumeWrapper` on the availability future.
    AwaitingInput,
    /// The availability future completed; the resume mail is queued.
    InputResumeQueued,
    /// END_OF_INPUT during recovery: suspended until the recovery future completes.
    AwaitingRecovery,
    /// END_OF_INPUT: suspended for good.
    EndOfInput,
}

/// Where the mailbox thread is in `restoreInternal` / `invoke`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum Phase {
    /// The restore loop: `runMailboxLoop()` inside `restoreInternal`.
    RestoreLoop,
    /// The main loop: `runMailboxLoop()` inside `invoke`.
    MainLoop,
    /// The main loop returned at END_OF_INPUT: the task finishes (`afterInvoke`).
    Finished,
    /// `restoreInternal` threw "Mailbox loop interrupted before recovery was finished".
    Failed,
}

/// A callback registered on the recovery future.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum Callback {
    /// Not registered.
    None,
    /// Registered, the future not complete.
    Registered,
    /// The future completed; the callback has not run yet.
    Pending,
    /// It ran.
    Done,
}

/// The whole task.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct TaskState {
    /// Which shape of the model's configuration this task has.
    pub shape: u8,

    // --- channel-IO executor ---
    /// Next step of `readInputChannelState` on the "channel-state-unspilling" thread.
    pub io_pc: u8,

    // --- gates ---
    /// The input gates.
    pub gates: Vec<Gate>,

    // --- mailbox thread ---
    /// Where the mailbox thread is.
    pub phase: Phase,
    /// The mails, head first; control mails go to the head.
    pub mailbox: Vec<Mail>,
    /// The default action.
    pub default_action: DefaultAction,
    /// `StreamMultipleInputProcessor.lastReadInputIndex` (1 at construction): the fair
    /// selection reads the next available selected input after it.
    pub last_read_input_index: u8,

    // --- recovery future (`recoveryCompletionFuture`, `allGatesRecoveredFuture`) ---
    /// Flag on: the chain reached its `thenCompose(allOf(stateConsumed))` stage.
    pub chain_composed: bool,
    /// The recovery future is complete.
    pub recovered: bool,
    /// `whenComplete(-> mailboxProcessor.suspend())`.
    pub suspend_callback: Callback,
    /// defer-finish's `thenRun(suspension::resume)`.
    pub resume_callback: Callback,

    // --- ghosts: history the properties need ---
    /// `processInput` returned NOTHING_AVAILABLE with the processor available and nothing left
    /// to change: StreamTask retries at once, forever.
    pub busy_spin: bool,
    /// END_OF_INPUT came while recovery was running and was deferred.
    pub deferred_end_of_input: bool,
}

impl TaskState {
    /// Every input saw END_OF_INPUT (vacuously, a source).
    pub fn all_inputs_finished(&self) -> bool {
        self.gates.iter().all(|g| g.finished)
    }

    /// Every gate's recovered state was consumed.
    pub fn all_state_consumed(&self) -> bool {
        self.gates.iter().all(Gate::state_consumed)
    }
}
