//! `StreamTask`: `restoreStateAndGates` (its two recovery paths and the empty-gates
//! short-circuit), `restoreInternal`'s check after the restore loop, `processInput`'s handling
//! of the input status (with the defer-finish rule), and the callbacks on the recovery future.

use super::config::TaskShape;
use super::input_gate;
use super::mailbox_processor as mailbox;
use super::state::{Callback, DefaultAction, Gate, Mail, Phase, Suspension, TaskState};
use super::stream_input_processor::{self as processor, InputStatus};
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
        suspend_callback: Callback::Registered,
        resume_callback: Callback::None,
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

/// `SequentialChannelStateReader.readInputData`, one gate.
pub fn read_input_data(s: &mut TaskState, g: u8) {
    s.gates[g as usize].read = true;
    s.io_pc += 1;
}

/// `finishReadRecoveredState()` of one gate. Flag on, the last one completes the chain's
/// `runAsync` stage on this thread, and `thenRunAsync` hands the conversion to the mailbox.
pub fn finish_read_recovered_state(shape: &TaskShape, s: &mut TaskState, g: u8) {
    s.gates[g as usize].finished_read = true;
    s.io_pc += 1;
    if shape.checkpointing_during_recovery && s.io_pc == io_program_len(shape) {
        mailbox::execute(s, Mail::RequestPartitionsWithRecovery);
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
pub fn process_mail(shape: &TaskShape, s: &mut TaskState) {
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
        Mail::Suspend => loop_returns(s),
        Mail::Resume(why) => mailbox::resume(s, why),
    }
}

/// `runMailboxLoop()` returns. After the restore loop, `restoreInternal` checks
/// `allGatesRecoveredFuture.isDone()` ("Mailbox loop interrupted before recovery was
/// finished") and `invoke` enters the main loop; after the main loop, the task finishes.
fn loop_returns(s: &mut TaskState) {
    s.phase = match s.phase {
        Phase::RestoreLoop if s.recovered => Phase::MainLoop,
        Phase::RestoreLoop => Phase::Failed,
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

/// defer-finish's `thenRun(suspension::resume)`, off the mailbox thread: a control mail.
pub fn run_resume_callback(s: &mut TaskState) {
    s.resume_callback = Callback::Done;
    mailbox::send_control_mail(s, Mail::Resume(Suspension::Recovery));
}

/// The availability future completed: `ResumeWrapper` resumes the default action.
pub fn on_input_available(s: &mut TaskState) {
    s.default_action = DefaultAction::InputResumeQueued;
    mailbox::send_control_mail(s, Mail::Resume(Suspension::Input));
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
