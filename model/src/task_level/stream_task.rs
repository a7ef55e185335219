//! `StreamTask`: `restoreStateAndGates` (its two recovery paths and the empty-gates
//! short-circuit), `restoreInternal`'s check after the restore loop, `processInput`'s handling
//! of the input status (with the defer-finish rule), and the callbacks on the recovery future.

use super::config::TaskShape;
use super::input_gate;
use super::mailbox_processor as mailbox;
use super::state::{Callback, Cause, DefaultAction, ExecutionState, Gate, Mail, Phase, Suspension, TaskState};
use super::stream_input_processor::{self as processor, InputStatus};
use super::task;
use super::variant::TaskVariant;

/// The state right after `restoreStateAndGates` returned, before the restore loop runs.
///
/// Both paths submit `readInputChannelState` to the IO executor and register
/// `whenComplete(-> mailboxProcessor.suspend())` on the result. Flag off, each gate's
/// `getStateConsumedFuture().thenRun(requestPartitions mail)` is registered; flag on, the chain
/// `runAsync(read) -> thenRunAsync(requestPartitions(true), mailbox) -> thenCompose(allOf)`.
/// A task without input gates completes at once: the future is done and its suspend callback
/// has already queued its mail.
pub fn restore_state_and_gates(shape_index: u8, shape: &TaskShape) -> TaskState {
    let gates = shape
        .gates
        .iter()
        .map(|g| Gate {
            read: false,
            finished_read: false,
            spilled: false,
            released: false,
            queued_after_release: false,
            consumed_callback_run: false,
            partitions_requested: false,
            finished: false,
            channels: g
                .channels
                .iter()
                .map(|c| super::state::Channel {
                    recovered: c.recovered,
                    state_consumed: false,
                    live: c.live,
                    end_of_partition: false,
                })
                .collect(),
        })
        .collect();
    let mut s = TaskState {
        shape: shape_index,
        io_pc: 0,
        gates,
        phase: Phase::RestoreLoop,
        mailbox: Vec::new(),
        default_action: DefaultAction::Running,
        last_read_input_index: 1,
        chain_composed: false,
        recovered: false,
        recovery_failure: None,
        suspend_callback: Callback::Registered,
        resume_callback: Callback::None,
        canceled: false,
        execution_state: ExecutionState::Running,
        cancel_invokable_pending: false,
        mailbox_closed: false,
        released: false,
        injected: None,
        cancel_requested: false,
        spill_released_by_cleanup: false,
        busy_spin: false,
        deferred_end_of_input: false,
    };
    if shape.gates.is_empty() {
        // `allOf()` of nothing, or the flag-on short-circuit: complete before the loop runs,
        // so the callback runs synchronously on the mailbox thread.
        s.recovered = true;
        s.suspend_callback = Callback::Done;
        mailbox::suspend(&mut s);
    }
    s
}

/// The IO executor's `readInputChannelState`: `readInputData` for every gate, then
/// `finishReadRecoveredState()` for every gate.
pub fn io_program_len(shape: &TaskShape) -> u8 {
    2 * shape.gates.len() as u8
}

/// `SequentialChannelStateReader.readInputData`, one gate. Flag on, the reader fetches the
/// gate's state (spill files on the spilling backend); the conversion drains it. A read that
/// outlives the task's cleanup fails: flag off, a released gate's channels throw
/// `CancelTaskException` at the first buffer requested for them
/// (`BufferManager.requestBufferBlocking`); flag on, the cleanup deleted the spill directory,
/// and a failed fetch deletes its own \[INFER\].
pub fn read_input_data(shape: &TaskShape, variant: TaskVariant, s: &mut TaskState, g: u8) {
    let gate = &s.gates[g as usize];
    let has_buffers = gate.channels.iter().any(|c| c.recovered > 0);
    let queued_anyway = !shape.checkpointing_during_recovery && variant == TaskVariant::PushIntoReleasedChannelQueued;
    if gate.released && has_buffers && !queued_anyway {
        return read_failed(shape, variant, s, Cause::CancelTask);
    }
    let gate = &mut s.gates[g as usize];
    gate.read = true;
    gate.queued_after_release = gate.released;
    gate.spilled = shape.checkpointing_during_recovery && has_buffers;
    s.io_pc += 1;
}

/// The read (`readInputChannelState`) threw `cause`: the IO thread's task ends. Flag off, its
/// catch calls `handleAsyncException("Unable to read channel state", e)`; flag on, the chain's
/// `runAsync` stage completes exceptionally and the later stages pass that on: the recovery
/// future fails with `cause`, on this thread.
pub fn read_failed(shape: &TaskShape, variant: TaskVariant, s: &mut TaskState, cause: Cause) {
    s.io_pc = io_program_len(shape);
    if shape.checkpointing_during_recovery {
        complete_recovery_exceptionally(s, cause);
    } else if variant != TaskVariant::ReadFailureNotHandled {
        handle_async_exception(s, cause);
    }
}

/// The environment makes the IO thread's next step throw.
pub fn inject_read_failure(shape: &TaskShape, variant: TaskVariant, s: &mut TaskState, cause: Cause) {
    s.injected = Some(cause);
    read_failed(shape, variant, s, cause);
}

/// `StreamTask.handleAsyncException`: while restoring or running, the task fails
/// (`StreamTaskAsyncExceptionHandler` → `Task.failExternally`).
pub fn handle_async_exception(s: &mut TaskState, cause: Cause) {
    if !s.invoke_ended() {
        task::fail_externally(s, cause);
    }
}

/// `finishReadRecoveredState()` of one gate. Flag on, the last one completes the chain's
/// `runAsync` stage on this thread, and `thenRunAsync` hands the conversion to the mailbox.
pub fn finish_read_recovered_state(shape: &TaskShape, s: &mut TaskState, g: u8) {
    s.gates[g as usize].finished_read = true;
    s.io_pc += 1;
    if shape.checkpointing_during_recovery && s.io_pc == io_program_len(shape) {
        if s.mailbox_closed {
            // `thenRunAsync` on a closed mailbox: RejectedExecutionException fails the stage.
            complete_recovery_exceptionally(s, Cause::MailboxClosed);
        } else {
            mailbox::execute(s, Mail::RequestPartitionsWithRecovery);
        }
    }
}

/// `StreamTask.processInput` after the input processor returned `status`.
pub fn on_input_status(shape: &TaskShape, variant: TaskVariant, s: &mut TaskState, status: InputStatus) {
    match status {
        InputStatus::MoreAvailable => {}
        InputStatus::NothingAvailable => {
            if processor::is_available(shape, s) {
                // "data availability has changed in the meantime; retry immediately": with
                // every input finished nothing will change, so this is a spin.
                s.busy_spin = true;
            } else {
                s.default_action = DefaultAction::AwaitingInput;
            }
        }
        InputStatus::EndOfInput => {
            if !s.recovered && variant != TaskVariant::SuspendOnEndOfInputDuringRecovery {
                // defer-finish: suspend only the default action; resume it when recovery
                // completes, and END_OF_INPUT is re-fired from the main loop.
                s.default_action = DefaultAction::AwaitingRecovery;
                s.resume_callback = Callback::Registered;
                s.deferred_end_of_input = true;
            } else {
                s.default_action = DefaultAction::EndOfInput;
                mailbox::suspend(s);
            }
        }
    }
}

/// The mailbox loop runs the head mail.
pub fn process_mail(shape: &TaskShape, variant: TaskVariant, s: &mut TaskState) {
    let mail = s.mailbox.remove(0);
    match mail {
        Mail::RequestPartitions(g) => input_gate::request_partitions(shape, s, g),
        Mail::RequestPartitionsWithRecovery => {
            for g in 0..s.gates.len() as u8 {
                input_gate::request_partitions(shape, s, g);
            }
            // The chain's `thenCompose` takes the gates' futures now, after conversion.
            s.chain_composed = true;
        }
        Mail::Suspend => loop_returns(variant, s),
        Mail::Resume(why) => mailbox::resume(s, why),
    }
}

/// The head mail's `requestPartitions` of gate `g` throws (injected). Flag off the mail's
/// exception leaves the mailbox loop, so `invoke` throws it; flag on the mail is the chain's
/// `thenRunAsync` stage: the gates before `g` were converted, and the stage's exception fails
/// the recovery future.
pub fn request_partitions_throws(shape: &TaskShape, s: &mut TaskState, g: u8) {
    let mail = s.mailbox.remove(0);
    let cause = Cause::RequestPartitions(g);
    s.injected = Some(cause);
    if mail == Mail::RequestPartitionsWithRecovery {
        for before in 0..g {
            input_gate::request_partitions(shape, s, before);
        }
        complete_recovery_exceptionally(s, cause);
    } else {
        s.phase = Phase::Failed(cause);
    }
}

/// `runMailboxLoop()` returns. After the restore loop, `restoreInternal` runs
/// `ensureNotCanceled()`, checks `allGatesRecoveredFuture.isDone()` ("Mailbox loop interrupted
/// before recovery was finished"), then `get()` rethrows the cause of a failed recovery;
/// otherwise `invoke` enters the main loop. After the main loop, `ensureNotCanceled()`, and
/// the task finishes.
fn loop_returns(variant: TaskVariant, s: &mut TaskState) {
    s.phase = match s.phase {
        _ if s.canceled => Phase::Failed(Cause::CancelTask),
        Phase::RestoreLoop if !s.recovered => Phase::Failed(Cause::LoopInterrupted),
        Phase::RestoreLoop => match s.recovery_failure {
            Some(_) if variant == TaskVariant::ExceptionalRecoveryTakenAsDone => Phase::MainLoop,
            Some(cause) => Phase::Failed(cause),
            None => Phase::MainLoop,
        },
        Phase::MainLoop => Phase::Finished,
        p => p,
    };
}

/// Whether the recovery future can complete: flag off, `allOf` of every gate's
/// state-consumed future; flag on, the chain's `thenCompose(allOf(...))` stage, taken after
/// the conversion.
pub fn can_complete_recovery(shape: &TaskShape, s: &TaskState) -> bool {
    !s.recovered && s.all_state_consumed() && (!shape.checkpointing_during_recovery || s.chain_composed)
}

/// The recovery future completes; its callbacks become due.
pub fn complete_recovery(s: &mut TaskState) {
    s.recovered = true;
    callbacks_due(s);
}

/// The recovery future completes exceptionally with `cause` (flag on: a stage of the chain
/// threw); `whenComplete` and `thenRun` callbacks become due alike, though `thenRun`'s action
/// does not run for an exceptional completion.
pub fn complete_recovery_exceptionally(s: &mut TaskState, cause: Cause) {
    if s.recovered {
        return;
    }
    s.recovery_failure = Some(cause);
    s.recovered = true;
    callbacks_due(s);
}

fn callbacks_due(s: &mut TaskState) {
    for cb in [&mut s.suspend_callback, &mut s.resume_callback] {
        if *cb == Callback::Registered {
            *cb = Callback::Pending;
        }
    }
}

/// `whenComplete(-> mailboxProcessor.suspend())`.
pub fn run_suspend_callback(s: &mut TaskState) {
    s.suspend_callback = Callback::Done;
    mailbox::suspend(s);
}

/// defer-finish's `thenRun(suspension::resume)`, off the mailbox thread: a control mail. A
/// `thenRun` action does not run when the future failed.
pub fn run_resume_callback(s: &mut TaskState) {
    s.resume_callback = Callback::Done;
    if s.recovery_failure.is_none() {
        mailbox::send_control_mail(s, Mail::Resume(Suspension::Recovery));
    }
}

/// The availability future completed: `ResumeWrapper` resumes the default action.
pub fn on_input_available(s: &mut TaskState) {
    s.default_action = DefaultAction::InputResumeQueued;
    mailbox::send_control_mail(s, Mail::Resume(Suspension::Input));
}

/// `StreamTask.cancel()`, run by the `TaskCanceler`: `canceled`, and
/// `mailboxProcessor.allActionsCompleted()`, whose poison mail ends the running loop (and is
/// not sent to a closed mailbox).
pub fn cancel(s: &mut TaskState) {
    s.cancel_invokable_pending = false;
    s.canceled = true;
    mailbox::suspend(s);
}

/// Flag off: a gate's state-consumed future completed; `thenRun` queues its
/// `requestPartitions` mail.
pub fn on_gate_state_consumed(s: &mut TaskState, g: u8) {
    s.gates[g as usize].consumed_callback_run = true;
    mailbox::execute(s, Mail::RequestPartitions(g));
}

/// Variant B7: once every gate's future completed, the mails of all gates are queued.
pub fn on_all_gates_state_consumed(s: &mut TaskState) {
    for g in 0..s.gates.len() as u8 {
        s.gates[g as usize].consumed_callback_run = true;
        mailbox::execute(s, Mail::RequestPartitions(g));
    }
}
