//! The task-level bug zoo: each variant's bug, the property that catches it and its preset,
//! and the variants' names.

use super::properties::TaskPropertyId;
use super::variant::TaskVariant;
use serde::Serialize;

/// One row of the task-level bug zoo.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct TaskVariantInfo {
    /// The variant.
    #[serde(skip)]
    pub variant: TaskVariant,
    /// Kebab-case name, as on the command line.
    pub name: &'static str,
    /// The bug, in a few words.
    pub bug: &'static str,
    /// The property whose counterexample shows it.
    pub property: TaskPropertyId,
    /// The preset that exposes it.
    pub preset: &'static str,
}

/// The task-level bug zoo.
pub const TASK_VARIANTS: &[TaskVariantInfo] = &[
    TaskVariantInfo {
        variant: TaskVariant::MultiInputNothingAvailableWhenFinished,
        name: "multi-input-nothing-available-when-finished",
        bug: "B1: a finished multi-input processor reports NOTHING_AVAILABLE while its availability future is done",
        property: TaskPropertyId::NoBusySpin,
        preset: "task",
    },
    TaskVariantInfo {
        variant: TaskVariant::SuspendOnEndOfInputDuringRecovery,
        name: "suspend-on-end-of-input-during-recovery",
        bug: "B4: END_OF_INPUT during recovery suspends the mailbox loop, which exits before recovery finished",
        property: TaskPropertyId::RestoreLoopNeverExitsEarly,
        preset: "task",
    },
    TaskVariantInfo {
        variant: TaskVariant::ConvertAllGatesTogether,
        name: "convert-all-gates-together",
        bug: "B7: flag off, gates request partitions only after all gates' recovered state is consumed",
        property: TaskPropertyId::NoDeadlock,
        preset: "task",
    },
    TaskVariantInfo {
        variant: TaskVariant::ExceptionalRecoveryTakenAsDone,
        name: "exceptional-recovery-taken-as-done",
        bug: "restoreInternal checks only isDone() of the recovery future: a failed recovery enters the main loop",
        property: TaskPropertyId::FailedRecoveryNeverEntersMainLoop,
        preset: "task",
    },
    TaskVariantInfo {
        variant: TaskVariant::ReadFailureNotHandled,
        name: "read-failure-not-handled",
        bug: "flag off, a failed state read is not handed to handleAsyncException: the restore loop waits for ever",
        property: TaskPropertyId::NoDeadlock,
        preset: "task",
    },
    TaskVariantInfo {
        variant: TaskVariant::InvokeExceptionOverridesFailureCause,
        name: "invoke-exception-overrides-failure-cause",
        bug: "Task.doRun takes invoke's CancelTaskException over the recorded failure: a failed read ends CANCELED",
        property: TaskPropertyId::TheFailureIsReported,
        preset: "task",
    },
    TaskVariantInfo {
        variant: TaskVariant::SpillReleasedOnlyByDrain,
        name: "spill-released-only-by-drain",
        bug: "FLINK-40520: spilled state is released only by the drain; an abort before it leaves the files",
        property: TaskPropertyId::NothingLeaks,
        preset: "task",
    },
    TaskVariantInfo {
        variant: TaskVariant::PushIntoReleasedChannelQueued,
        name: "push-into-released-channel-queued",
        bug: "a recovered buffer pushed into a released RecoveredInputChannel is queued, not recycled",
        property: TaskPropertyId::NothingLeaks,
        preset: "task",
    },
    TaskVariantInfo {
        variant: TaskVariant::NoOpAtDrainEnd,
        name: "no-op-at-drain-end",
        bug: "#28554: NO_OP installed and the restore loop ended when the drain ends, while channels are still in recovery",
        property: TaskPropertyId::CheckpointFindsRecoveryBarriers,
        preset: "task",
    },
    TaskVariantInfo {
        variant: TaskVariant::DrainerInstalledBeforeRequestPartitions,
        name: "drainer-installed-before-request-partitions",
        bug: "the drainer installed as the trigger before requestPartitions: it knows no channel to put its barrier into",
        property: TaskPropertyId::CheckpointFindsRecoveryBarriers,
        preset: "task-running-early",
    },
];

impl TaskVariant {
    /// Kebab-case name.
    pub fn name(self) -> &'static str {
        self.info().map_or("fixed", |v| v.name)
    }

    /// Parses a kebab-case name.
    pub fn from_name(name: &str) -> Option<TaskVariant> {
        if name == "fixed" {
            return Some(TaskVariant::Fixed);
        }
        TASK_VARIANTS.iter().find(|v| v.name == name).map(|v| v.variant)
    }

    /// This variant's row (None for `Fixed`).
    pub fn info(self) -> Option<&'static TaskVariantInfo> {
        TASK_VARIANTS.iter().find(|v| v.variant == self)
    }
}
