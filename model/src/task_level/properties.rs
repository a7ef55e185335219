//! Task-level properties. Every `always` property has a variant in the task-level bug zoo
//! that breaks it; the `sometimes` properties show that the situations they guard happen.

use super::model::TaskModel;
use super::state::{Phase, TaskState};

crate::properties::properties! {
    /// A property of the task-level model. Code refers to properties by this key; the name
    /// ([`TaskPropertyId::name`]) is what reports, JSON and JUnit show.
    pub enum TaskPropertyId for TaskModel, TaskState;
    // --- safety ---
    RestoreLoopNeverExitsEarly: Always, "restore loop never exits before recovery completes",
        restore_loop_never_exits_before_recovery_completes;
    NoBusySpin: Always, "no busy spin", no_busy_spin;
    NoDeadlock: Always, "no deadlock", no_deadlock;
    // --- liveness ---
    RecoveryCompletesAndTaskFinishes: Eventually, "recovery completes and the task finishes",
        recovery_completes_and_the_task_finishes;
    // --- reachability ---
    EndOfInputDeferred: Sometimes, "end of input deferred until recovery completes",
        end_of_input_deferred_until_recovery_completes;
    GateLiveBeforeAnotherConsumed: Sometimes, "a gate goes live before another's recovered state is consumed",
        a_gate_goes_live_before_anothers_recovered_state_is_consumed;
    DefaultActionWaitsForInput: Sometimes, "the default action waits for input", the_default_action_waits_for_input;
}

/// `restoreInternal`'s `checkState(allGatesRecoveredFuture.isDone(), "Mailbox loop interrupted
/// before recovery was finished.")` never fails.
pub fn restore_loop_never_exits_before_recovery_completes(_: &TaskModel, s: &TaskState) -> bool {
    s.phase != Phase::Failed
}

/// `processInput` never reports NOTHING_AVAILABLE while the processor's availability future
/// is done and nothing else can change (B1's 100% CPU).
pub fn no_busy_spin(_: &TaskModel, s: &TaskState) -> bool {
    !s.busy_spin
}

/// When no thread can move, the task has finished (or failed, or spins: the other
/// properties' business).
pub fn no_deadlock(m: &TaskModel, s: &TaskState) -> bool {
    matches!(s.phase, Phase::Finished | Phase::Failed) || s.busy_spin || !m.is_terminal(s)
}

/// L1 at the task level: the recovery future completes, every input reaches END_OF_INPUT and
/// the main loop returns. Stable once true, and checked on an acyclic graph (see
/// `check::graph_is_acyclic`), so a terminal state refutes it exactly when a path does.
pub fn recovery_completes_and_the_task_finishes(_: &TaskModel, s: &TaskState) -> bool {
    s.recovered && s.phase == Phase::Finished && s.all_inputs_finished()
}

/// The defer-finish path runs end to end: END_OF_INPUT came during recovery, was deferred, and
/// the task still finished.
pub fn end_of_input_deferred_until_recovery_completes(_: &TaskModel, s: &TaskState) -> bool {
    s.deferred_end_of_input && s.phase == Phase::Finished
}

/// Flag off, per-gate conversion lets a gate's partitions go live while another gate's
/// recovered state is still unconsumed: what B7's all-together conversion forbids.
pub fn a_gate_goes_live_before_anothers_recovered_state_is_consumed(m: &TaskModel, s: &TaskState) -> bool {
    !m.shape(s).checkpointing_during_recovery
        && s.gates.iter().any(|g| g.partitions_requested)
        && s.gates.iter().any(|g| !g.state_consumed())
}

/// The default action suspends on NOTHING_AVAILABLE, so a deadlock would be possible.
pub fn the_default_action_waits_for_input(_: &TaskModel, s: &TaskState) -> bool {
    s.default_action == super::state::DefaultAction::AwaitingInput
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reports, JSON and presets name properties; each name must lead back to one key.
    #[test]
    fn every_name_is_unique_and_parses_back_to_its_property() {
        for &p in TaskPropertyId::ALL {
            assert_eq!(TaskPropertyId::from_name(p.name()), Some(p));
        }
        assert_eq!(TaskPropertyId::from_name("no such property"), None);
        // The two models' names do not overlap, so a name says which model it belongs to.
        for &p in TaskPropertyId::ALL {
            assert_eq!(crate::properties::PropertyId::from_name(p.name()), None, "{p}");
        }
    }

    #[test]
    fn a_property_is_its_name_in_json() {
        let json = serde_json::to_string(&[TaskPropertyId::NoBusySpin, TaskPropertyId::NoDeadlock]).unwrap();
        assert_eq!(json, r#"["no busy spin","no deadlock"]"#);
    }
}
