//! The task-level presets: named sets of task shapes, each with the `sometimes` properties it
//! cannot reach by design.

use super::config::{ChannelShape, GateShape, Selection, TaskShape};
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
    shapes
}

/// The task-level presets.
pub const TASK_PRESETS: &[TaskPreset] = &[TaskPreset {
    name: "task",
    summary: "task level: a source, one gate, two inputs read selectively or not; flag off and on; a failure or a cancel at any step",
    shapes: task_shapes,
    unreachable: &[],
}];

/// The task-level preset named `name`.
pub fn find_task_preset(name: &str) -> Option<&'static TaskPreset> {
    TASK_PRESETS.iter().find(|p| p.name == name)
}
