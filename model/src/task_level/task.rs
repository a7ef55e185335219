//! `Task` (org.apache.flink.runtime.taskmanager): what runs the invokable. Its execution state
//! records the first failure (`failExternally`) or cancellation (`cancelExecution`), each of
//! which starts a `TaskCanceler` for `invokable.cancel()`. When `invoke` has ended, `doRun` takes
//! its final state and `releaseResources` closes the gates.

use super::mailbox_processor as mailbox;
use super::state::{Cause, ExecutionState, Phase, TaskState};
use super::variant::TaskVariant;

/// `Task.failExternally(cause)`: from RUNNING, FAILED with `cause` recorded, and the invokable
/// canceled. A task already canceling, failed or finished ignores it: the first cause wins.
pub fn fail_externally(s: &mut TaskState, cause: Cause) {
    if s.execution_state == ExecutionState::Running {
        s.execution_state = ExecutionState::Failed(cause);
        s.cancel_invokable_pending = true;
    }
}

/// `Task.cancelExecution()`: from RUNNING, CANCELING, and the invokable canceled.
pub fn cancel_execution(s: &mut TaskState) {
    s.cancel_requested = true;
    if s.execution_state == ExecutionState::Running {
        s.execution_state = ExecutionState::Canceling;
        s.cancel_invokable_pending = true;
    }
}

/// `Task.doRun` after `invoke` ended: `invokable.cleanUp` closes the mailbox; the final state
/// (a normal return: FINISHED, or CANCELED if canceling; an exception: FAILED with it, CANCELED
/// for a `CancelTaskException` or while canceling; FAILED already: unchanged); then
/// `releaseResources` closes the gates, recycling every buffer their channels hold, and the
/// spilled state not yet drained is released.
pub fn release_resources(variant: TaskVariant, s: &mut TaskState) {
    mailbox::close(s);
    s.execution_state = match (s.execution_state, s.phase) {
        (ExecutionState::Running, Phase::Finished) => ExecutionState::Finished,
        (ExecutionState::Running, Phase::Failed(Cause::CancelTask)) => ExecutionState::Canceled,
        (ExecutionState::Running, Phase::Failed(cause)) => ExecutionState::Failed(cause),
        (ExecutionState::Canceling, _) => ExecutionState::Canceled,
        (ExecutionState::Failed(_), Phase::Failed(Cause::CancelTask))
            if variant == TaskVariant::InvokeExceptionOverridesFailureCause =>
        {
            ExecutionState::Canceled
        }
        (state, _) => state,
    };
    s.released = true;
    for gate in &mut s.gates {
        if gate.spilled && variant != TaskVariant::SpillReleasedOnlyByDrain {
            gate.spilled = false;
            s.spill_released_by_cleanup = true;
        }
        gate.released = true;
    }
}

/// Whether the task has reached a terminal execution state.
pub fn is_terminal(s: &TaskState) -> bool {
    matches!(
        s.execution_state,
        ExecutionState::Failed(_) | ExecutionState::Canceled | ExecutionState::Finished
    )
}
