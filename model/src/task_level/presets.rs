//! The task-level presets: named sets of task shapes, each with the `sometimes` properties it
//! cannot reach by design.

use super::config::{CdrGate, ChannelShape, Checkpoints, GateShape, RestoreLoopEnds, Selection, TaskShape};
use super::properties::TaskPropertyId;

/// A named set of task shapes.
#[derive(Clone, Copy, Debug)]
pub struct TaskPreset {
    /// Its name on the command line.
    pub name: &'static str,
    /// One line on what it covers.
    pub summary: &'static str,
    /// Its shapes.
    pub shapes: fn() -> Vec<TaskShape>,
    /// `sometimes` properties it cannot reach by design.
    pub unreachable: &'static [TaskPropertyId],
    /// Properties it violates by design: a known issue of Flink the preset shows.
    pub violated: &'static [TaskPropertyId],
}

fn ch(recovered: u8, live: u8) -> ChannelShape {
    ChannelShape { recovered, live }
}

fn task_shapes() -> Vec<TaskShape> {
    let mut shapes = Vec::new();
    for flag in [false, true] {
        let shape = |gates: Vec<GateShape>, selection| TaskShape {
            checkpointing_during_recovery: flag,
            gates,
            selection,
            failures: true,
            checkpoints: Checkpoints::Unaligned,
            cdr_gate: CdrGate::AsMerged,
            restore_loop_ends: RestoreLoopEnds::StateConsumed,
        };
        // A source: recovery completes at once.
        shapes.push(shape(vec![], Selection::All));
        // One gate, two channels, one of them without recovered state.
        shapes.push(shape(
            vec![GateShape {
                channels: vec![ch(1, 1), ch(0, 1)],
            }],
            Selection::All,
        ));
        // A two-input operator reading input 0 exclusively until it ends.
        shapes.push(shape(
            vec![
                GateShape {
                    channels: vec![ch(1, 1)],
                },
                GateShape {
                    channels: vec![ch(1, 1)],
                },
            ],
            Selection::FirstUntilEnd,
        ));
        // The same operator without input selection.
        shapes.push(shape(
            vec![
                GateShape {
                    channels: vec![ch(1, 1)],
                },
                GateShape {
                    channels: vec![ch(0, 1)],
                },
            ],
            Selection::All,
        ));
    }
    // Aligned checkpoints only, the flag gated as the series merged it: the task recovers on
    // the flag-on chain, and its barrier handler's trigger is NO_OP.
    shapes.push(TaskShape {
        checkpoints: Checkpoints::AlignedOnly,
        ..one_gate(true, RestoreLoopEnds::StateConsumed)
    });
    shapes
}

/// A flag-on task with one gate of two channels, one of them without recovered state.
fn one_gate(flag: bool, restore_loop_ends: RestoreLoopEnds) -> TaskShape {
    TaskShape {
        checkpointing_during_recovery: flag,
        gates: vec![GateShape {
            channels: vec![ch(1, 1), ch(0, 1)],
        }],
        selection: Selection::All,
        failures: true,
        checkpoints: Checkpoints::Unaligned,
        cdr_gate: CdrGate::AsMerged,
        restore_loop_ends,
    }
}

/// The restore loop ending at the drain's end, so that checkpoints meet channels in recovery:
/// unaligned ones with the drainer as the trigger, aligned ones with the flag gated on
/// unaligned checkpoints (FLINK-40518), which recover as with the flag off.
fn running_early_shapes() -> Vec<TaskShape> {
    let early = RestoreLoopEnds::DrainEnd;
    vec![
        one_gate(true, early),
        TaskShape {
            gates: vec![
                GateShape {
                    channels: vec![ch(1, 1)],
                },
                GateShape {
                    channels: vec![ch(1, 1)],
                },
            ],
            selection: Selection::FirstUntilEnd,
            ..one_gate(true, early)
        },
        TaskShape {
            checkpoints: Checkpoints::AlignedOnly,
            cdr_gate: CdrGate::RequiresUnaligned,
            ..one_gate(true, early)
        },
    ]
}

/// Aligned checkpoints only, the flag gated as merged, the restore loop ending at the drain's
/// end: the aligned handler meets a channel in recovery with a NO_OP trigger (FLINK-40518).
fn aligned_during_recovery_shapes() -> Vec<TaskShape> {
    vec![TaskShape {
        checkpoints: Checkpoints::AlignedOnly,
        failures: false,
        ..one_gate(true, RestoreLoopEnds::DrainEnd)
    }]
}

/// The task-level presets.
pub const TASK_PRESETS: &[TaskPreset] = &[
    TaskPreset {
        name: "task",
        summary: "task level: a source, one gate, two inputs read selectively or not; flag off and on; a failure or a cancel at any step; a checkpoint once RUNNING, unaligned or aligned",
        shapes: task_shapes,
        // The task turns RUNNING only after its recovered state was consumed.
        unreachable: &[TaskPropertyId::CheckpointInsertsRecoveryBarriers],
        violated: &[],
    },
    TaskPreset {
        name: "task-running-early",
        summary: "task level, the restore loop ending at the drain's end: checkpoints meet channels in recovery; aligned ones gated off (FLINK-40518)",
        shapes: running_early_shapes,
        // Its only flag-off task (aligned, gated off) has one gate.
        unreachable: &[TaskPropertyId::GateLiveBeforeAnotherConsumed],
        violated: &[],
    },
    TaskPreset {
        name: "task-aligned-during-recovery",
        summary: "task level, FLINK-40518: aligned checkpoints with the flag gated as merged meet a channel in recovery with a NO_OP trigger",
        shapes: aligned_during_recovery_shapes,
        unreachable: &[
            TaskPropertyId::CheckpointInsertsRecoveryBarriers,
            TaskPropertyId::RecoveryFailureFailsTask,
            TaskPropertyId::FailedExternallyWhileRestoring,
            TaskPropertyId::SpillReleasedByCleanup,
            TaskPropertyId::EndOfInputDeferred,
            TaskPropertyId::GateLiveBeforeAnotherConsumed,
        ],
        violated: &[TaskPropertyId::CheckpointFindsRecoveryBarriers],
    },
];

/// The task-level preset named `name`.
pub fn find_task_preset(name: &str) -> Option<&'static TaskPreset> {
    TASK_PRESETS.iter().find(|p| p.name == name)
}
