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

/// The checkpoints the job takes, by the barrier handler `InputProcessorUtil.createBarrierHandler`
/// builds for them (EXACTLY_ONCE).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Checkpoints {
    /// No checkpoint reaches the task.
    #[default]
    None,
    /// `execution.checkpointing.unaligned.enabled`: `SingleCheckpointBarrierHandler.alternating`,
    /// whose `ChannelState` asks the task's recovery trigger at checkpoint start
    /// (`onCheckpointStartedForAllInputs`).
    Unaligned,
    /// Aligned only: `SingleCheckpointBarrierHandler.aligned`, whose `ChannelState` is built with
    /// the one-argument constructor: its recovery trigger is always NO_OP.
    AlignedOnly,
}

/// `CheckpointingOptions.isCheckpointingDuringRecoveryEnabled`, the one gate every call site
/// of the feature asks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CdrGate {
    /// As the series merged it (and 2.3.0 has it): `recover-output-on-downstream` and the
    /// flag; unaligned checkpoints need not be on.
    #[default]
    AsMerged,
    /// As FLINK-40518 (apache/flink#29055) made it: unaligned checkpoints must be on too, else
    /// the task recovers as with the flag off.
    RequiresUnaligned,
}

/// Which stage of the flag-on chain the restore loop's recovery future is: the task turns
/// RUNNING, and so can be checkpointed, only once the restore loop has returned.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RestoreLoopEnds {
    /// After `completeAll` of the gates' state-consumed futures (the chain read at the
    /// #28660 stage, and the final form the series planned): the task consumes its recovered
    /// state while INITIALIZING.
    #[default]
    StateConsumed,
    /// When the drain ends: the task turns RUNNING while its channels still hand out
    /// recovered buffers, and `completeAll` only installs NO_OP (the form that lets
    /// checkpoints meet channels in recovery, which #28660 and #29055 describe).
    DrainEnd,
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
    /// The checkpoints the job takes; one may reach the task once it is RUNNING.
    #[serde(default)]
    pub checkpoints: Checkpoints,
    /// How the flag is gated.
    #[serde(default)]
    pub cdr_gate: CdrGate,
    /// Flag on: when the restore loop's recovery future completes.
    #[serde(default)]
    pub restore_loop_ends: RestoreLoopEnds,
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
        let checkpoints = match self.checkpoints {
            Checkpoints::None => "",
            Checkpoints::Unaligned => ", unaligned checkpoints",
            Checkpoints::AlignedOnly => ", aligned checkpoints",
        };
        let gate = match self.cdr_gate {
            CdrGate::AsMerged => "",
            CdrGate::RequiresUnaligned => " (gated on unaligned)",
        };
        let ends = match (self.checkpointing_during_recovery, self.restore_loop_ends) {
            (true, RestoreLoopEnds::DrainEnd) => ", restore loop ends at drain end",
            _ => "",
        };
        format!(
            "flag {flag}{gate}, gates [{}]{selection}{failures}{checkpoints}{ends}",
            gates.join(" | ")
        )
    }

    /// `CheckpointingOptions.isCheckpointingDuringRecoveryEnabled`: whether the task recovers
    /// on the flag-on chain.
    pub fn is_checkpointing_during_recovery_enabled(&self) -> bool {
        self.checkpointing_during_recovery
            && match self.cdr_gate {
                CdrGate::AsMerged => true,
                CdrGate::RequiresUnaligned => self.checkpoints == Checkpoints::Unaligned,
            }
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
