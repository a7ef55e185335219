//! Shapes of the task the task-level model checks, and its presets. A preset holds several
//! shapes; each is one initial state, so one check covers a source, a one-gate task and a
//! two-input task, with the flag off and on.

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
