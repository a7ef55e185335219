//! `StreamTask`: `restoreStateAndGates` (its two recovery paths and the empty-gates
//! short-circuit), `restoreInternal`'s check after the restore loop, `processInput`'s handling
//! of the input status (with the defer-finish rule), and the callbacks on the recovery future.

use super::config::{Checkpoints, RestoreLoopEnds, TaskShape};
use super::input_gate;
use super::mailbox_processor as mailbox;
use super::state::{
    Callback, Cause, Chain, Checkpoint, DefaultAction, ExecutionState, Gate, Mail, Phase, RecoveryTrigger, Suspension,
    TaskState,
};
use super::stream_input_processor::{self as processor, InputStatus};
use super::task;
use super::variant::TaskVariant;

/// The state right after `restoreStateAndGates` returned, before the restore loop runs.
///
/// Both paths register `whenComplete(-> mailboxProcessor.suspend())` on their result. Flag off
/// (`recoverChannelsWithoutCheckpointing`): the trigger is NO_OP, `readInputChannelState` goes
/// to the IO executor, and each gate's `getStateConsumedFuture().thenRun(requestPartitions
/// mail)` is registered. Flag on (`recoverChannelsWithCheckpointing`), the chain starts with
/// the NOT_READY mail; its stages follow one another (see [`Chain`]). A task without input
/// gates completes at once, its trigger NO_OP: the future is done and its suspend callback has
/// already queued its mail.
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
            drained: false,
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
        chain: Chain::Fetch,
        trigger: RecoveryTrigger::NoOp,
        drainer_has_channels: false,
        checkpoint: Checkpoint::None,
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
        s.chain = Chain::Done;
        s.recovered = true;
        s.suspend_callback = Callback::Done;
        mailbox::suspend(&mut s);
    } else if shape.is_checkpointing_during_recovery_enabled() {
        s.chain = Chain::NotReady;
        s.trigger = RecoveryTrigger::NotReady;
        mailbox::execute(&mut s, Mail::SetRecoveryTrigger(RecoveryTrigger::NotReady));
    }
    s
}

/// A stage of the flag-on chain that hands its work to the mailbox: a closed mailbox rejects
/// the mail (`RejectedExecutionException`), which fails the stage and so the recovery future.
fn chain_mail(s: &mut TaskState, chain: Chain, mail: Mail) {
    s.chain = chain;
    if s.mailbox_closed {
        complete_recovery_exceptionally(s, Cause::MailboxClosed);
    } else {
        mailbox::execute(s, mail);
    }
}

/// Whether the IO executor has a step it may run now: flag off the read from the start; flag
/// on the fetch once the NOT_READY mail ran, and the drain once the drainer is installed.
pub fn io_may_run(shape: &TaskShape, s: &TaskState) -> bool {
    let fetch = 2 * shape.gates.len() as u8;
    if s.io_pc >= io_program_len(shape) {
        return false;
    }
    !shape.is_checkpointing_during_recovery_enabled()
        || (s.io_pc < fetch && s.chain == Chain::Fetch)
        || (s.io_pc >= fetch && s.chain == Chain::Drain)
}

/// The IO executor's program: `readInputData` for every gate, then
/// `finishReadRecoveredState()` for every gate (flag off, `readInputChannelState`; flag on, the
/// fetch \[INFER\]: the stages read show both calls); flag on, then the drain of every gate.
pub fn io_program_len(shape: &TaskShape) -> u8 {
    let gates = shape.gates.len() as u8;
    if shape.is_checkpointing_during_recovery_enabled() {
        3 * gates
    } else {
        2 * gates
    }
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
    let queued_anyway =
        !shape.is_checkpointing_during_recovery_enabled() && variant == TaskVariant::PushIntoReleasedChannelQueued;
    if gate.released && has_buffers && !queued_anyway {
        return read_failed(shape, variant, s, Cause::CancelTask);
    }
    let gate = &mut s.gates[g as usize];
    gate.read = true;
    gate.queued_after_release = gate.released;
    gate.spilled = shape.is_checkpointing_during_recovery_enabled() && has_buffers;
    s.io_pc += 1;
}

/// The read (`readInputChannelState`) threw `cause`: the IO thread's task ends. Flag off, its
/// catch calls `handleAsyncException("Unable to read channel state", e)`; flag on, the chain's
/// `runAsync` stage completes exceptionally and the later stages pass that on: the recovery
/// future fails with `cause`, on this thread.
pub fn read_failed(shape: &TaskShape, variant: TaskVariant, s: &mut TaskState, cause: Cause) {
    s.io_pc = io_program_len(shape);
    if shape.is_checkpointing_during_recovery_enabled() {
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

/// `finishReadRecoveredState()` of one gate. Flag on, the last one completes the fetch stage
/// on this thread, and the chain hands the conversion to the mailbox.
pub fn finish_read_recovered_state(shape: &TaskShape, variant: TaskVariant, s: &mut TaskState, g: u8) {
    s.gates[g as usize].finished_read = true;
    s.io_pc += 1;
    if shape.is_checkpointing_during_recovery_enabled() && s.io_pc == 2 * shape.gates.len() as u8 {
        if variant == TaskVariant::DrainerInstalledBeforeRequestPartitions {
            chain_mail(
                s,
                Chain::InstallDrainer,
                Mail::SetRecoveryTrigger(RecoveryTrigger::Drainer),
            );
        } else {
            chain_mail(s, Chain::RequestPartitions, Mail::RequestPartitionsWithRecovery);
        }
    }
}

/// `FetchedChannelStateDrainer.drain`, one gate: its fetched state pushed into its channels,
/// each followed by the end-of-state sentinel. A gate released by the task's cleanup fails the
/// drainer's buffer request (`CancelTaskException`): `drain(d)` hands it to
/// `handleAsyncException`, and its try-with-resources closes the drainer, releasing what is
/// left. After the last gate: [`RestoreLoopEnds`] says which stage completes.
pub fn drain(shape: &TaskShape, variant: TaskVariant, s: &mut TaskState, g: u8) {
    if s.gates[g as usize].released {
        s.io_pc = io_program_len(shape);
        for gate in &mut s.gates {
            gate.spilled = false;
        }
        return handle_async_exception(s, Cause::CancelTask);
    }
    let gate = &mut s.gates[g as usize];
    gate.drained = true;
    gate.spilled = false;
    s.io_pc += 1;
    if s.io_pc < io_program_len(shape) {
        return;
    }
    s.chain = Chain::StateConsumed;
    if variant == TaskVariant::NoOpAtDrainEnd {
        // #28554: `thenRun(setRecoveryCheckpointTrigger(NO_OP))` right after the drain, and
        // that stage is the recovery future.
        s.chain = Chain::Done;
        mailbox::execute(s, Mail::SetRecoveryTrigger(RecoveryTrigger::NoOp));
        complete_recovery(s);
    } else if shape.restore_loop_ends == RestoreLoopEnds::DrainEnd {
        complete_recovery(s);
    }
}

/// Flag on, `completeAll` of the gates' state-consumed futures completed where the recovery
/// future completed at the drain's end: `thenRun` queues the NO_OP mail (a closed mailbox
/// rejects it; nothing waits on that stage any more).
pub fn complete_all_state_consumed(s: &mut TaskState) {
    s.chain = Chain::Done;
    mailbox::execute(s, Mail::SetRecoveryTrigger(RecoveryTrigger::NoOp));
}

/// Whether [`complete_all_state_consumed`] is due.
pub fn can_complete_all_state_consumed(shape: &TaskShape, s: &TaskState) -> bool {
    s.chain == Chain::StateConsumed
        && shape.restore_loop_ends == RestoreLoopEnds::DrainEnd
        && s.recovered
        && s.all_state_consumed()
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
            if s.trigger == RecoveryTrigger::Drainer {
                // The variant's drainer, installed already: the drain follows.
                s.chain = Chain::Drain;
            } else {
                // `buildDrainer` over the converted channels, then its install mail.
                s.drainer_has_channels = true;
                chain_mail(
                    s,
                    Chain::InstallDrainer,
                    Mail::SetRecoveryTrigger(RecoveryTrigger::Drainer),
                );
            }
        }
        Mail::SetRecoveryTrigger(trigger) => {
            s.trigger = trigger;
            // The mail's future completes; the chain's next stage goes to the IO executor.
            s.chain = match (trigger, s.chain) {
                (RecoveryTrigger::NotReady, Chain::NotReady) => Chain::Fetch,
                (RecoveryTrigger::Drainer, Chain::InstallDrainer) if s.drainer_has_channels => Chain::Drain,
                (RecoveryTrigger::Drainer, Chain::InstallDrainer) => {
                    // The variant: the conversion's mail comes after the install.
                    mailbox::execute(s, Mail::RequestPartitionsWithRecovery);
                    Chain::RequestPartitions
                }
                (_, chain) => chain,
            };
        }
        Mail::Checkpoint => perform_checkpoint(shape, s),
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
/// state-consumed future; flag on, where the restore loop waits for it, the chain's
/// `completeAll` stage, taken after the drain.
pub fn can_complete_recovery(shape: &TaskShape, s: &TaskState) -> bool {
    !s.recovered
        && s.all_state_consumed()
        && (!shape.is_checkpointing_during_recovery_enabled()
            || (s.chain == Chain::StateConsumed && shape.restore_loop_ends == RestoreLoopEnds::StateConsumed))
}

/// The recovery future completes; its callbacks become due. Flag on, it is `completeAll`'s
/// `thenRun`, which first queues the NO_OP mail (not awaited: a closed mailbox's rejection
/// fails the future).
pub fn complete_recovery_step(shape: &TaskShape, s: &mut TaskState) {
    if shape.is_checkpointing_during_recovery_enabled() {
        s.chain = Chain::Done;
        if s.mailbox_closed {
            return complete_recovery_exceptionally(s, Cause::MailboxClosed);
        }
        mailbox::execute(s, Mail::SetRecoveryTrigger(RecoveryTrigger::NoOp));
    }
    complete_recovery(s);
}

/// The recovery future completes normally.
pub fn complete_recovery(s: &mut TaskState) {
    s.recovered = true;
    callbacks_due(s);
}

/// A checkpoint reaches the task. The coordinator plans one only when every task is RUNNING
/// (`DefaultCheckpointPlanCalculator.checkTasksStarted`), and `Task.triggerCheckpointBarrier`
/// declines a task that is not: so only once the restore loop has returned
/// (`Task.restoreAndInvoke` switches INITIALIZING to RUNNING after `restore()`).
pub fn can_trigger_checkpoint(shape: &TaskShape, s: &TaskState) -> bool {
    shape.checkpoints != Checkpoints::None
        && s.checkpoint == Checkpoint::None
        && s.phase == Phase::MainLoop
        && s.execution_state == ExecutionState::Running
        && !s.canceled
}

/// The checkpoint's mail is queued.
pub fn trigger_checkpoint(s: &mut TaskState) {
    s.checkpoint = Checkpoint::Queued;
    mailbox::execute(s, Mail::Checkpoint);
}

/// The barrier handler starts the checkpoint. Unaligned (`alternating`), `ChannelState`'s
/// `onCheckpointStartedForAllInputs` asks the task's trigger, then every input's
/// `checkpointStarted`, where a channel in recovery needs its `RecoveryCheckpointBarrier`.
/// Aligned, `ChannelState`'s trigger is NO_OP whatever the task's is.
fn perform_checkpoint(shape: &TaskShape, s: &mut TaskState) {
    let in_recovery = s.gates.iter().any(Gate::in_recovery);
    let trigger = match shape.checkpoints {
        Checkpoints::AlignedOnly => RecoveryTrigger::NoOp,
        _ => s.trigger,
    };
    s.checkpoint = match trigger {
        RecoveryTrigger::NotReady => Checkpoint::Declined,
        RecoveryTrigger::Drainer if in_recovery && s.drainer_has_channels => Checkpoint::TakenWithRecoveryBarriers,
        RecoveryTrigger::Drainer if in_recovery => Checkpoint::NoRecoveryBarrier,
        RecoveryTrigger::NoOp if in_recovery => Checkpoint::NoRecoveryBarrier,
        _ => Checkpoint::Taken,
    };
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
