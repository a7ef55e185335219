//! Task-level bug variants: each switches one fix of the series off.

use super::properties::TaskPropertyId;
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
    /// B4: END_OF_INPUT always suspends the mailbox loop, as before defer-finish.
    SuspendOnEndOfInputDuringRecovery,
    /// B7: flag off, the partitions of every gate are requested only once all gates' recovered
    /// state is consumed.
    ConvertAllGatesTogether,
}

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
