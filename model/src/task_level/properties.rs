//! Task-level properties. Every `always` property has a variant in the task-level bug zoo
//! that breaks it; the `sometimes` properties show that the situations they guard happen.

use super::model::TaskModel;
use super::state::{Cause, Checkpoint, ExecutionState, Phase, TaskState};

crate::property_table::properties! {
    /// A property of the task-level model. Code refers to properties by this key; the name
    /// ([`TaskPropertyId::name`]) is what reports, JSON and JUnit show.
    pub enum TaskPropertyId for TaskModel, TaskState;
    // --- safety ---
    RestoreLoopNeverExitsEarly: Always, "restore loop never exits before recovery completes",
        restore_loop_never_exits_before_recovery_completes;
    NoBusySpin: Always, "no busy spin", no_busy_spin;
    NoDeadlock: Always, "no deadlock", no_deadlock;
    FailedRecoveryNeverEntersMainLoop: Always, "a failed recovery never enters the main loop",
        a_failed_recovery_never_enters_the_main_loop;
    TheFailureIsReported: Always, "the task ends as its first failure says", the_task_ends_as_its_first_failure_says;
    NothingLeaks: Always, "nothing leaks once the task has ended", nothing_leaks_once_the_task_has_ended;
    CheckpointFindsRecoveryBarriers: Always, "a checkpoint never meets a channel in recovery without its recovery barrier",
        a_checkpoint_never_meets_a_channel_in_recovery_without_its_recovery_barrier;
    // --- liveness ---
    RecoveryCompletesAndTaskFinishes: Eventually, "the task ends, and finishes after recovery unless failed or canceled",
        the_task_ends_and_finishes_after_recovery_unless_failed_or_canceled;
    // --- reachability ---
    EndOfInputDeferred: Sometimes, "end of input deferred until recovery completes",
        end_of_input_deferred_until_recovery_completes;
    GateLiveBeforeAnotherConsumed: Sometimes, "a gate goes live before another's recovered state is consumed",
        a_gate_goes_live_before_anothers_recovered_state_is_consumed;
    DefaultActionWaitsForInput: Sometimes, "the default action waits for input", the_default_action_waits_for_input;
    RecoveryFailureFailsTask: Sometimes, "a failed recovery fails the task with its cause",
        a_failed_recovery_fails_the_task_with_its_cause;
    FailedExternallyWhileRestoring: Sometimes, "the task is failed externally while restoring",
        the_task_is_failed_externally_while_restoring;
    SpillReleasedByCleanup: Sometimes, "an abort between fetch and drain releases the spilled state",
        an_abort_between_fetch_and_drain_releases_the_spilled_state;
    CheckpointTaken: Sometimes, "a checkpoint is taken", a_checkpoint_is_taken;
    CheckpointInsertsRecoveryBarriers: Sometimes, "a checkpoint puts a recovery barrier into a channel in recovery",
        a_checkpoint_puts_a_recovery_barrier_into_a_channel_in_recovery;
}

/// `restoreInternal`'s `checkState(allGatesRecoveredFuture.isDone(), "Mailbox loop interrupted
/// before recovery was finished.")` never fails.
pub fn restore_loop_never_exits_before_recovery_completes(_: &TaskModel, s: &TaskState) -> bool {
    s.phase != Phase::Failed(Cause::LoopInterrupted)
}

/// `processInput` never reports NOTHING_AVAILABLE while the processor's availability future
/// is done and nothing else can change (B1's 100% CPU).
pub fn no_busy_spin(_: &TaskModel, s: &TaskState) -> bool {
    !s.busy_spin
}

/// When no thread of the task can move, `invoke` has ended and the task released its
/// resources: it never waits for ever, in a loop or on a future, for a cancel to end it (a
/// spin is the other property's business).
pub fn no_deadlock(m: &TaskModel, s: &TaskState) -> bool {
    s.released || s.busy_spin || !m.is_stuck(s)
}

/// `restoreInternal` rethrows a failed recovery's cause (the seed's `get()`): the main loop,
/// which would wait for input that never comes, is never entered.
pub fn a_failed_recovery_never_enters_the_main_loop(_: &TaskModel, s: &TaskState) -> bool {
    s.recovery_failure.is_none() || !matches!(s.phase, Phase::MainLoop | Phase::Finished)
}

/// Once the task released its resources its final state is the one its history says: FAILED
/// with the first injected failure's cause unless the task was canceled; CANCELED if it was
/// canceled and nothing failed; FINISHED if neither; never FAILED with another cause.
pub fn the_task_ends_as_its_first_failure_says(_: &TaskModel, s: &TaskState) -> bool {
    if !s.released {
        return true;
    }
    match (s.execution_state, s.injected, s.cancel_requested) {
        (ExecutionState::Failed(cause), injected, _) => injected == Some(cause),
        (_, Some(_), false) => false,
        (ExecutionState::Canceled, None, true) | (ExecutionState::Finished, None, false) => true,
        (ExecutionState::Canceled, Some(_), true) => true,
        _ => false,
    }
}

/// Once the task released its resources and the IO thread has stopped, no channel holds a
/// recovered buffer and no spilled state is left: every way the task ends, whatever the IO
/// thread did after the release.
pub fn nothing_leaks_once_the_task_has_ended(m: &TaskModel, s: &TaskState) -> bool {
    let shape = m.shape(s);
    let io_stopped = s.io_pc >= super::stream_task::io_program_len(shape);
    !(s.released && io_stopped)
        || s.gates
            .iter()
            .all(|g| !g.spilled && g.buffers_held(shape.is_checkpointing_during_recovery_enabled()) == 0)
}

/// L1 at the task level: the task ends (its resources released, its state terminal); with
/// nothing failed or canceled, the recovery future completed, every input reached
/// END_OF_INPUT and the main loop returned. Stable once true, and checked on an acyclic graph
/// (see `check::graph_is_acyclic`), so a terminal state refutes it exactly when a path does.
pub fn the_task_ends_and_finishes_after_recovery_unless_failed_or_canceled(_: &TaskModel, s: &TaskState) -> bool {
    if !s.released || !super::task::is_terminal(s) {
        return false;
    }
    s.injected.is_some() || s.cancel_requested || (s.recovered && s.phase == Phase::Finished && s.all_inputs_finished())
}

/// A checkpoint that starts while a channel is still in recovery finds the
/// `RecoveryCheckpointBarrier` the trigger put there: unaligned, `checkpointStarted` would
/// otherwise decline it (the #28554 review); aligned, the checkpoint would neither be taken nor
/// declined (FLINK-40518).
pub fn a_checkpoint_never_meets_a_channel_in_recovery_without_its_recovery_barrier(
    _: &TaskModel,
    s: &TaskState,
) -> bool {
    s.checkpoint != Checkpoint::NoRecoveryBarrier
}

/// A checkpoint reaches the task and is taken.
pub fn a_checkpoint_is_taken(_: &TaskModel, s: &TaskState) -> bool {
    matches!(s.checkpoint, Checkpoint::Taken | Checkpoint::TakenWithRecoveryBarriers)
}

/// A checkpoint is taken while a channel is in recovery: the drainer, as the trigger, put its
/// barrier there. Only where the task turns RUNNING before its recovered state is consumed.
pub fn a_checkpoint_puts_a_recovery_barrier_into_a_channel_in_recovery(_: &TaskModel, s: &TaskState) -> bool {
    s.checkpoint == Checkpoint::TakenWithRecoveryBarriers
}

/// The defer-finish path runs end to end: END_OF_INPUT came during recovery, was deferred, and
/// the task still finished.
pub fn end_of_input_deferred_until_recovery_completes(_: &TaskModel, s: &TaskState) -> bool {
    s.deferred_end_of_input && s.phase == Phase::Finished
}

/// Flag off, per-gate conversion lets a gate's partitions go live while another gate's
/// recovered state is still unconsumed: what B7's all-together conversion forbids.
pub fn a_gate_goes_live_before_anothers_recovered_state_is_consumed(m: &TaskModel, s: &TaskState) -> bool {
    !m.shape(s).is_checkpointing_during_recovery_enabled()
        && s.gates.iter().any(|g| g.partitions_requested)
        && s.gates.iter().any(|g| !g.state_consumed())
}

/// The default action suspends on NOTHING_AVAILABLE, so a deadlock would be possible.
pub fn the_default_action_waits_for_input(_: &TaskModel, s: &TaskState) -> bool {
    s.default_action == super::state::DefaultAction::AwaitingInput
}

/// Flag on, a failed recovery future's cause is what `invoke` throws and the task reports.
pub fn a_failed_recovery_fails_the_task_with_its_cause(_: &TaskModel, s: &TaskState) -> bool {
    s.released
        && s.recovery_failure
            .is_some_and(|c| s.execution_state == ExecutionState::Failed(c))
}

/// Flag off, a failed read fails the task through `failExternally` while the restore loop runs.
pub fn the_task_is_failed_externally_while_restoring(_: &TaskModel, s: &TaskState) -> bool {
    s.phase == Phase::RestoreLoop && matches!(s.execution_state, ExecutionState::Failed(_))
}

/// The task ended between the fetch into spill files and their drain, and its cleanup released
/// them.
pub fn an_abort_between_fetch_and_drain_releases_the_spilled_state(_: &TaskModel, s: &TaskState) -> bool {
    s.spill_released_by_cleanup
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
    }

    #[test]
    fn a_property_is_its_name_in_json() {
        let json = serde_json::to_string(&[TaskPropertyId::NoBusySpin, TaskPropertyId::NoDeadlock]).unwrap();
        assert_eq!(json, r#"["no busy spin","no deadlock"]"#);
    }
}
