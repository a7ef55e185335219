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
    /// Flag on: the gate's recovered state was fetched into spill files and not yet drained
    /// into its channels or released (the spilling backend's fetched state).
    pub spilled: bool,
    /// `Task.releaseResources` closed the gate: its channels were released, their buffers
    /// recycled. The channels keep their abstract content (nothing reads it any more), so the
    /// futures that watched it stay as they were.
    pub released: bool,
    /// A read after the release queued recovered buffers into the released channels (variant
    /// push-into-released-channel-queued): nobody recycles them.
    pub queued_after_release: bool,
    /// Flag off: the `thenRun` of the gate's state-consumed future ran, queueing the gate's
    /// `requestPartitions` mail.
    pub consumed_callback_run: bool,
    /// `requestPartitions` ran: the channels are converted and the partitions requested.
    /// Flag on, they are created in recovery: they show live data only once their recovered
    /// state was consumed.
    pub partitions_requested: bool,
    /// Flag on: `FetchedChannelStateDrainer.drain` pushed the gate's fetched state into its
    /// channels, each followed by the end-of-state sentinel.
    pub drained: bool,
    /// The input processor saw this input's END_OF_INPUT.
    pub finished: bool,
    /// The channels.
    pub channels: Vec<Channel>,
}

impl Gate {
    /// Flag on: some channel was created in recovery and has not consumed its sentinel
    /// (`RecoverableInputChannel`'s `inRecovery`).
    pub fn in_recovery(&self) -> bool {
        self.partitions_requested && !self.state_consumed()
    }

    /// The gate's `getStateConsumedFuture()` (all its channels') is complete.
    pub fn state_consumed(&self) -> bool {
        self.channels.iter().all(|c| c.state_consumed)
    }

    /// Recovered buffers the gate's channels hold in memory: read into the
    /// `RecoveredInputChannel`s (flag off) or pushed into the physical channels by the drain
    /// (flag on), and not yet consumed or recycled.
    pub fn buffers_held(&self, flag: bool) -> u8 {
        let in_memory = if flag { self.drained } else { self.read };
        if !in_memory || (self.released && !self.queued_after_release) {
            return 0;
        }
        self.channels.iter().map(|c| c.recovered).sum()
    }
}

/// An exception, by where it was thrown.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Cause {
    /// `readInputData` of a gate threw: the checkpoint read, the rescale filter, or a push
    /// into a channel.
    ReadInputData(u8),
    /// `finishReadRecoveredState()` of a gate threw.
    FinishReadRecoveredState(u8),
    /// `requestPartitions` of a gate threw; flag on, inside the conversion, whose push of the
    /// recovered buffers into the physical channel can throw.
    RequestPartitions(u8),
    /// `CancelTaskException`: `ensureNotCanceled()`, or a buffer requested from a released
    /// channel.
    CancelTask,
    /// `RejectedExecutionException`: a mail for a closed mailbox.
    MailboxClosed,
    /// `IllegalStateException("Mailbox loop interrupted before recovery was finished.")`.
    LoopInterrupted,
}

impl std::fmt::Display for Cause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Cause::ReadInputData(g) => write!(f, "readInputData(gate {g}) threw"),
            Cause::FinishReadRecoveredState(g) => write!(f, "finishReadRecoveredState(gate {g}) threw"),
            Cause::RequestPartitions(g) => write!(f, "requestPartitions(gate {g}) threw"),
            Cause::CancelTask => f.write_str("CancelTaskException"),
            Cause::MailboxClosed => f.write_str("RejectedExecutionException: mailbox closed"),
            Cause::LoopInterrupted => f.write_str("Mailbox loop interrupted before recovery was finished."),
        }
    }
}

/// `Task.executionState`, from the moment the task runs its invokable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum ExecutionState {
    /// INITIALIZING or RUNNING: `invoke` runs.
    Running,
    /// `cancelExecution()`: the invokable is being canceled.
    Canceling,
    /// `failExternally(cause)` or `invoke` threw `cause`: terminal, the failure cause recorded.
    Failed(Cause),
    /// Canceled: terminal.
    Canceled,
    /// `invoke` returned: terminal.
    Finished,
}

/// `StreamTask.recoveryCheckpointTrigger`: what the barrier handler's `ChannelState` asks at
/// checkpoint start (`snapshotAndInsertBarriers`). Read and written on the mailbox thread only.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RecoveryTrigger {
    /// `RecoveryCheckpointTrigger.NOT_READY`: declines (CHECKPOINT_DECLINED_TASK_NOT_READY).
    NotReady,
    /// The `FetchedChannelStateDrainer`: inserts a `RecoveryCheckpointBarrier` into every
    /// channel still in recovery and hands over the undrained slice.
    Drainer,
    /// `RecoveryCheckpointTrigger.NO_OP`.
    NoOp,
}

impl std::fmt::Display for RecoveryTrigger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            RecoveryTrigger::NotReady => "NOT_READY",
            RecoveryTrigger::Drainer => "the drainer",
            RecoveryTrigger::NoOp => "NO_OP",
        })
    }
}

/// Flag on: the stage `recoverChannelsWithCheckpointing`'s chain waits on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum Chain {
    /// The NOT_READY mail (`setRecoveryCheckpointTrigger`) is queued.
    NotReady,
    /// The fetch runs on the IO executor (flag off: the read).
    Fetch,
    /// The `requestPartitions(true)` mail is queued.
    RequestPartitions,
    /// The drainer's install mail is queued.
    InstallDrainer,
    /// The drain runs on the IO executor.
    Drain,
    /// `completeAll` of the gates' state-consumed futures.
    StateConsumed,
    /// `completeAll` completed and queued the NO_OP mail.
    Done,
}

/// The one checkpoint that may reach the task, and what became of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum Checkpoint {
    /// None reached the task.
    None,
    /// Its mail is queued (`triggerCheckpointAsync`, or the first barrier's `processInput`).
    Queued,
    /// Taken, no channel in recovery.
    Taken,
    /// Taken: the drainer put a `RecoveryCheckpointBarrier` into every channel in recovery,
    /// and `checkpointStarted` persisted what is before it.
    TakenWithRecoveryBarriers,
    /// NOT_READY declined it.
    Declined,
    /// A channel in recovery has no `RecoveryCheckpointBarrier`: unaligned, its
    /// `checkpointStarted` declines the checkpoint; aligned, it neither is taken nor declined
    /// until it expires (FLINK-40518).
    NoRecoveryBarrier,
}

/// A mail in the task's mailbox.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Mail {
    /// Flag on: `setRecoveryCheckpointTrigger(trigger)`.
    SetRecoveryTrigger(RecoveryTrigger),
    /// The checkpoint: the barrier handler starts it (`onCheckpointStartedForAllInputs`), and
    /// `performCheckpoint` takes the snapshot.
    Checkpoint,
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
    /// `invoke` threw: out of `restoreInternal` (its checks after the restore loop, the
    /// recovery future's cause) or out of a mail.
    Failed(Cause),
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
    /// Flag on: the chain's stage.
    pub chain: Chain,
    /// `StreamTask.recoveryCheckpointTrigger`.
    pub trigger: RecoveryTrigger,
    /// `buildDrainer` took the channels `requestPartitions(true)` created: the drainer knows
    /// where to insert its barriers.
    pub drainer_has_channels: bool,
    /// The checkpoint.
    pub checkpoint: Checkpoint,
    /// The recovery future is complete (normally or not).
    pub recovered: bool,
    /// The recovery future completed exceptionally, with this cause.
    pub recovery_failure: Option<Cause>,
    /// `whenComplete(-> mailboxProcessor.suspend())`.
    pub suspend_callback: Callback,
    /// defer-finish's `thenRun(suspension::resume)`.
    pub resume_callback: Callback,

    // --- cancellation and the end of the task (`Task`, `StreamTask.cancel`) ---
    /// `StreamTask.canceled`: `cancel()` ran.
    pub canceled: bool,
    /// `Task.executionState`.
    pub execution_state: ExecutionState,
    /// The `TaskCanceler` that runs `invokable.cancel()` was started and has not run yet.
    pub cancel_invokable_pending: bool,
    /// The mailbox was closed (`MailboxProcessor.close()`): queued mails were dropped, and
    /// later ones are rejected.
    pub mailbox_closed: bool,
    /// `Task.releaseResources` ran after `invoke` ended.
    pub released: bool,

    // --- ghosts: history the properties need ---
    /// The first failure the environment injected, if any: the cause the task must report.
    pub injected: Option<Cause>,
    /// The JobManager canceled the task (`Task.cancelExecution`).
    pub cancel_requested: bool,
    /// The task's cleanup released spilled state that no drain had taken (an abort between
    /// the fetch and the drain).
    pub spill_released_by_cleanup: bool,
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

    /// `invoke` has ended (returned or thrown).
    pub fn invoke_ended(&self) -> bool {
        matches!(self.phase, Phase::Finished | Phase::Failed(_))
    }
}
