//! Task-level properties. Every `always` property has a variant in the task-level bug zoo
//! that breaks it; the `sometimes` properties show that the situations they guard happen.

use super::model::TaskModel;
use super::state::{Phase, TaskState};
use stateright::Expectation;

/// A property: expectation, name, predicate.
pub type TaskProperty = (Expectation, &'static str, fn(&TaskModel, &TaskState) -> bool);

/// Every task-level property, in report order.
pub const TASK_PROPERTIES: &[TaskProperty] = &[
    (
        Expectation::Always,
        "restore loop never exits before recovery completes",
        restore_loop_never_exits_before_recovery_completes,
    ),
    (Expectation::Always, "no busy spin", no_busy_spin),
    (Expectation::Always, "no deadlock", no_deadlock),
    (
        Expectation::Eventually,
        "recovery completes and the task finishes",
        recovery_completes_and_the_task_finishes,
    ),
    (
        Expectation::Sometimes,
        "end of input deferred until recovery completes",
        end_of_input_deferred_until_recovery_completes,
    ),
    (
        Expectation::Sometimes,
        "a gate goes live before another's recovered state is consumed",
        a_gate_goes_live_before_anothers_recovered_state_is_consumed,
    ),
    (
        Expectation::Sometimes,
        "the default action waits for input",
        the_default_action_waits_for_input,
    ),
];

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
