//! Task-level bug variants: each switches one fix of the series off. Their names, bugs and
//! the properties that catch them are in `bug_zoo.rs`.

use serde::{Deserialize, Serialize};

/// Which fix is switched off. `Fixed` is the protocol as merged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum TaskVariant {
    /// Every fix in place.
    #[default]
    Fixed,
    /// B1: `StreamMultipleInputProcessor.processInput` returns NOTHING_AVAILABLE when no input
    /// is selectable, even once every input has finished.
    MultiInputNothingAvailableWhenFinished,
    /// B4: END_OF_INPUT always suspends the mailbox loop, as without defer-finish.
    SuspendOnEndOfInputDuringRecovery,
    /// B7: flag off, the partitions of every gate are requested only once all gates' recovered
    /// state is consumed.
    ConvertAllGatesTogether,
    /// `restoreInternal` checks only `isDone()` of the recovery future and never `get()`s it:
    /// a failed recovery enters the main loop.
    ExceptionalRecoveryTakenAsDone,
    /// Flag off, the read's exception is logged on the IO thread and not handed to
    /// `handleAsyncException`: nothing fails the task.
    ReadFailureNotHandled,
    /// `Task.doRun` takes the exception `invoke` threw over the failure cause already recorded:
    /// a task failed externally ends CANCELED by its own `CancelTaskException`.
    InvokeExceptionOverridesFailureCause,
    /// Spilled state is released only by the drain: an abort between the fetch and the drain
    /// leaves it behind (FLINK-40520).
    SpillReleasedOnlyByDrain,
    /// A buffer pushed into a released `RecoveredInputChannel` is queued there, after
    /// `releaseAllResources` recycled the others.
    PushIntoReleasedChannelQueued,
    /// Flag on, NO_OP is installed, and the recovery future completes, when the drain ends,
    /// before the channels consumed their sentinels (apache/flink#28554 as reviewed).
    NoOpAtDrainEnd,
    /// Flag on, the drainer is built and installed as the trigger before `requestPartitions`
    /// created the channels it should insert its barriers into.
    DrainerInstalledBeforeRequestPartitions,
}
