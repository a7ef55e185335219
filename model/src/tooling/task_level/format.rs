//! Readable task-level actions and states for counterexamples and the CLI.

use crate::task_level::action::TaskAction;
use crate::task_level::model::TaskModel;
use crate::task_level::state::{Mail, TaskState};
use stateright::Model;
use std::fmt::Write;

/// A path: the shape whose initial state it starts from, and its actions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskPath {
    /// Index of the shape (the initial state).
    pub shape: u8,
    /// The actions.
    pub actions: Vec<TaskAction>,
}

fn mail(m: &Mail) -> String {
    match m {
        Mail::RequestPartitions(g) => format!("requestPartitions(gate {g})"),
        Mail::RequestPartitionsWithRecovery => "requestPartitions(true) of every gate".into(),
        Mail::SetRecoveryTrigger(t) => format!("setRecoveryCheckpointTrigger({t})"),
        Mail::Checkpoint => "checkpoint".into(),
        Mail::Suspend => "suspend".into(),
        Mail::Resume(why) => format!("resume default action ({why:?})"),
    }
}

/// "mailbox    processInput: gate 0 channel 1".
pub fn action(_: &TaskModel, a: &TaskAction) -> String {
    let call = match a {
        TaskAction::ReadInputData { gate } => format!("readInputData(gate {gate})"),
        TaskAction::FinishReadRecoveredState { gate } => format!("finishReadRecoveredState(gate {gate})"),
        TaskAction::DrainGate { gate } => format!("FetchedChannelStateDrainer.drain(gate {gate})"),
        TaskAction::ProcessMail { mail: m } => format!("mail: {}", mail(m)),
        TaskAction::ProcessInput { gate, channel } => format!("processInput: gate {gate} channel {channel}"),
        TaskAction::ProcessInputNothingToRead => "processInput: nothing to read".into(),
        TaskAction::OnGateStateConsumed { gate } => {
            format!("gate {gate} stateConsumedFuture.thenRun(requestPartitions mail)")
        }
        TaskAction::OnAllGatesStateConsumed => "allOf(stateConsumedFutures).thenRun(requestPartitions mails)".into(),
        TaskAction::CompleteRecovery => "recovery future completes".into(),
        TaskAction::CompleteAllStateConsumed => "completeAll(stateConsumedFutures).thenRun(NO_OP mail)".into(),
        TaskAction::TriggerCheckpoint => "a checkpoint reaches the RUNNING task".into(),
        TaskAction::RunSuspendCallback => "whenComplete(mailboxProcessor.suspend())".into(),
        TaskAction::RunResumeCallback => "thenRun(suspendedDefaultAction.resume())".into(),
        TaskAction::OnInputAvailable => "input availability future completes: resume".into(),
        TaskAction::ReadInputDataThrows { gate } => format!("readInputData(gate {gate}) throws"),
        TaskAction::FinishReadRecoveredStateThrows { gate } => format!("finishReadRecoveredState(gate {gate}) throws"),
        TaskAction::RequestPartitionsThrows { gate } => format!("mail: requestPartitions(gate {gate}) throws"),
        TaskAction::CancelExecution => "Task.cancelExecution(): CANCELING".into(),
        TaskAction::CancelInvokable => "TaskCanceler: StreamTask.cancel()".into(),
        TaskAction::ReleaseResources => "Task: cleanUp, final state, releaseResources".into(),
    };
    format!("{:<11} {call}", a.thread())
}

/// The state as a Flink engineer would look at it in a debugger.
pub fn state(_m: &TaskModel, s: &TaskState) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "mailbox thread: {:?}, default action {:?}, busy spin {}",
        s.phase, s.default_action, s.busy_spin
    );
    let mails: Vec<String> = s.mailbox.iter().map(mail).collect();
    let _ = writeln!(out, "mailbox: [{}]", mails.join(", "));
    let recovery = match s.recovery_failure {
        Some(cause) => format!("failed ({cause})"),
        None if s.recovered => "done".into(),
        None => "pending".into(),
    };
    let _ = writeln!(
        out,
        "recovery future {recovery}, suspend callback {:?}, resume callback {:?}",
        s.suspend_callback, s.resume_callback
    );
    let _ = writeln!(
        out,
        "chain at {:?}, recovery trigger {}, checkpoint {:?}",
        s.chain, s.trigger, s.checkpoint
    );
    let _ = writeln!(
        out,
        "task {:?}, StreamTask canceled {}, mailbox closed {}, resources released {}",
        s.execution_state, s.canceled, s.mailbox_closed, s.released
    );
    for (g, gate) in s.gates.iter().enumerate() {
        let _ = writeln!(
            out,
            "gate {g}: read={} spilled={} finishedRead={} partitionsRequested={} drained={} stateConsumed={} endOfInput={} released={}",
            gate.read,
            gate.spilled,
            gate.finished_read,
            gate.partitions_requested,
            gate.drained,
            gate.state_consumed(),
            gate.finished,
            gate.released
        );
        for (c, ch) in gate.channels.iter().enumerate() {
            let _ = writeln!(
                out,
                "  channel {c}: recovered left {}, stateConsumed={}, live left {}, endOfPartition={}",
                ch.recovered, ch.state_consumed, ch.live, ch.end_of_partition
            );
        }
    }
    out
}

/// [`action`], with the element `processInput` reads in state `s`.
pub fn step(m: &TaskModel, s: &TaskState, a: &TaskAction) -> String {
    match a {
        TaskAction::ProcessInput { gate, channel } => {
            let gate_state = &s.gates[*gate as usize];
            match crate::task_level::input_gate::next_element(m.shape(s), gate_state, *channel) {
                Some(e) => format!("{} -> {e}", action(m, a)),
                None => action(m, a),
            }
        }
        _ => action(m, a),
    }
}

/// The shape, then one line per action: a path as the report lists it.
pub fn path_lines(m: &TaskModel, p: &TaskPath) -> Vec<String> {
    let mut s = m.init_states().remove(p.shape as usize);
    let mut lines = vec![format!("task: {}", m.shapes[p.shape as usize].label())];
    for a in &p.actions {
        lines.push(step(m, &s, a));
        s = m.next_state(&s, *a).expect("path steps are enabled");
    }
    lines
}

/// The shape, numbered actions, then the final state.
pub fn counterexample(m: &TaskModel, p: &TaskPath) -> String {
    let mut s = m.init_states().remove(p.shape as usize);
    let mut out = format!("task: {}\n\n", m.shapes[p.shape as usize].label());
    for (i, a) in p.actions.iter().enumerate() {
        let _ = writeln!(out, "{:>3}. {}", i + 1, step(m, &s, a));
        s = m.next_state(&s, *a).expect("path steps are enabled");
    }
    let _ = writeln!(out, "\nfinal state:");
    out.push_str(&state(m, &s));
    out
}
