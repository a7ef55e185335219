//! Shapes of the task the task-level model checks, and its presets. A preset holds several
//! shapes; each is one initial state, so one check covers a source, a one-gate task and a
//! two-input task, with the flag off and on.

use super::properties::TaskPropertyId;
use serde::{Deserialize, Serialize};

/// One input channel: what its recovered state and its upstream hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ChannelShape {
    /// Recovered buffers read from the checkpoint for this channel.
    pub recovered: u8,
    /// Live records the upstream has produced (a blocking exchange: all there once the
    /// partition is requested), followed by `EndOfPartitionEvent`.
    pub live: u8,
}

/// One input gate and its channels.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct GateShape {
    /// The gate's channels, in channel-index order.
    pub channels: Vec<ChannelShape>,
}

/// What the operator selects (`InputSelectable.nextSelection()`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Selection {
    /// `InputSelection.ALL`: any input with data.
    All,
    /// Input 0 only until it reaches END_OF_INPUT, then all (a hash join's build side).
    FirstUntilEnd,
}

/// One task: its gates, its operator's input selection and the flag.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TaskShape {
    /// `execution.checkpointing.during-recovery.enabled`.
    pub checkpointing_during_recovery: bool,
    /// The input gates; none for a source task. With two, the task runs a
    /// `StreamMultipleInputProcessor`; with one, a one-input processor.
    pub gates: Vec<GateShape>,
    /// The operator's input selection (two gates only).
    pub selection: Selection,
    /// Whether the environment may fail the recovery (one exception where Flink can throw:
    /// the state read, `finishReadRecoveredState`, `requestPartitions`) and cancel the task
    /// (once, at any step).
    #[serde(default)]
    pub failures: bool,
}

impl TaskShape {
    /// "flag on, gates [1+1] select-first": how counterexamples name the shape.
    pub fn label(&self) -> String {
        let flag = if self.checkpointing_during_recovery {
            "on"
        } else {
            "off"
        };
        let gates: Vec<String> = self
            .gates
            .iter()
            .map(|g| {
                let chs: Vec<String> = g
                    .channels
                    .iter()
                    .map(|c| format!("r{}l{}", c.recovered, c.live))
                    .collect();
                chs.join("+")
            })
            .collect();
        let selection = match (self.gates.len(), self.selection) {
            (2, Selection::FirstUntilEnd) => " select-first",
            (2, Selection::All) => " select-all",
            _ => "",
        };
        let failures = if self.failures { ", failures" } else { "" };
        format!("flag {flag}, gates [{}]{selection}{failures}", gates.join(" | "))
    }

    /// Whether the task runs a `StreamMultipleInputProcessor`.
    pub fn multiple_inputs(&self) -> bool {
        self.gates.len() > 1
    }

    /// Checks the bounds the model relies on.
    pub fn validate(&self) -> Result<(), String> {
        if self.gates.len() > 2 {
            return Err("at most two gates".into());
        }
        if self.gates.iter().any(|g| g.channels.is_empty() || g.channels.len() > 2) {
            return Err("every gate has one or two channels".into());
        }
        Ok(())
    }
}

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
