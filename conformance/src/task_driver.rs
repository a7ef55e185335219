//! The task level under conformance: `impl/`'s `StreamTask`, `MailboxProcessor` and input
//! processors driven step by step through the task-level model's traces.
//!
//! The unit under test is the task: its recovery chain, its recovery checkpoint trigger, the
//! start of a checkpoint, its mailbox loop and its input processor. Its environment is scripted
//! from the model, as Flink's own task tests use mock gates: each [`ScriptedInputGate`] holds the
//! model's abstraction of a gate (recovered buffers, the end-of-state marker, live records,
//! `EndOfPartition` per channel; flag on, whether the drain pushed the fetched state into its
//! channels) and hands out the channel the trace names, because which channel's data arrives
//! first is the environment's choice. The task's own choices (which input it reads, when it
//! requests partitions, which trigger a checkpoint meets, what it returns) are compared with the
//! model's at every step.
//!
//! Threads are real: the mailbox thread is a worker that owns the task; the channel-IO executor
//! is impl/'s [`SingleThreadExecutor`], held at each of its steps by a pause point, its runnables
//! counted so that the driver knows when it has none left (`IoThread::settle`); a dependent
//! action that becomes due on any of them is held back (the dependent-action hook) and run when
//! the trace takes the model's matching completion step.
//!
//! The failure paths: the task runs inside impl/'s [`Task`], whose `TaskCanceler`s go to an
//! executor that holds them back until the trace takes `cancelInvokable`; `cancelExecution` is
//! called from the driver's thread. A failure the model injects is armed on the scripted reader
//! or gate just before the step that throws it, with the model's cause as its message, so that
//! both sides name a cause alike ([`cause_text`]).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use recovery_impl::checkpointable_input::CheckpointableInput;
use recovery_impl::completable_future::{CompletableFuture, DependentAction, set_thread_dependent_hook};
use recovery_impl::error::Result as ImplResult;
use recovery_impl::executor::{Executor, Runnable, SingleThreadExecutor};
use recovery_impl::input_gate::{IndexedInputGate, InputElement, InputElementKind, SequentialChannelStateReader};
use recovery_impl::pause_point::{PausePoint, set_thread_hook};
use recovery_impl::stream_input_processor::{DataInputStatus, InputSelection};
use recovery_impl::stream_task::{
    CdrGate as ImplCdrGate, ChannelStateDrain, CheckpointOutcome, CheckpointingConfig, Checkpoints as ImplCheckpoints,
    DiscardingOutput, RecoveryStage, RestoreLoopEnds as ImplRestoreLoopEnds, StreamTask, StreamTaskConfig, TaskPhase,
};
use recovery_impl::task::{ExecutionState, Task};
use recovery_impl::{ChannelError, CheckpointId, DeclineReason, InputChannelInfo};
use recovery_model::task_level::config::{CdrGate, Checkpoints, RestoreLoopEnds, Selection, TaskShape};
use recovery_model::task_level::input_gate::{self, Element};
use recovery_model::task_level::state::{
    Cause, Chain, Checkpoint, DefaultAction, ExecutionState as ModelExecutionState, Gate, Mail, Phase, RecoveryTrigger,
    TaskState,
};
use recovery_model::task_level::stream_input_processor::{self as processor, InputStatus};
use recovery_model::task_level::stream_task::io_may_run;
use recovery_model::task_level::{TaskAction, TaskModel};
use serde::{Deserialize, Serialize};
use stateright::Model;

use crate::driver::{DriverError, harness};

/// How long a thread of the implementation may take to reach its next stop before the run
/// stops with a harness error.
const WATCHDOG: Duration = Duration::from_secs(60);

/// What a caller sees after one task-level step.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskObservation {
    /// `processInput`: the element read (gate, channel, kind), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub element: Option<(u8, u8, InputElementKind)>,
    /// `processInput`: the status it returned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<DataInputStatus>,
    /// The step threw.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// One gate as both sides show it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GateView {
    /// `readInputData` reached it.
    pub read: bool,
    /// `finishReadRecoveredState()` ran.
    pub finished_read: bool,
    /// `requestPartitions` ran.
    pub partitions_requested: bool,
    /// Flag on: the fetched (spilled) state not yet drained or released.
    pub spilled: bool,
    /// Flag on: the drain pushed the fetched state into the gate's channels.
    pub drained: bool,
    /// `releaseResources` closed the gate.
    pub released: bool,
    /// Per channel: recovered buffers left, state consumed, live records left, EndOfPartition read.
    pub channels: Vec<(u8, bool, u8, bool)>,
}

impl GateView {
    fn of(gate: &Gate) -> Self {
        GateView {
            read: gate.read,
            finished_read: gate.finished_read,
            partitions_requested: gate.partitions_requested,
            spilled: gate.spilled,
            drained: gate.drained,
            released: gate.released,
            channels: gate
                .channels
                .iter()
                .map(|c| (c.recovered, c.state_consumed, c.live, c.end_of_partition))
                .collect(),
        }
    }
}

/// The abstract state both sides are compared in.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskSnapshot {
    /// The mailbox thread's phase.
    pub phase: TaskPhase,
    /// The mails, head first, by description.
    pub mailbox: Vec<String>,
    /// The default action is not suspended.
    pub default_action_available: bool,
    /// The recovery future is done.
    pub recovered: bool,
    /// Dependent actions due and not yet run, by description, sorted.
    pub pending: Vec<String>,
    /// Where the channel-IO thread is: the step it will take next, or `done`.
    pub io: String,
    /// The gates.
    pub gates: Vec<GateView>,
    /// END_OF_INPUT was deferred during recovery.
    pub deferred_end_of_input: bool,
    /// `processInput` retried at once on NOTHING_AVAILABLE.
    pub busy_retried: bool,
    /// What `invoke` threw, once it did ([`cause_text`]).
    pub invoke_failure: Option<String>,
    /// The recovery future failed with this cause ([`cause_text`]).
    pub recovery_failure: Option<String>,
    /// `StreamTask.canceled`.
    pub canceled: bool,
    /// The `Task`'s execution state.
    pub execution_state: ExecutionState,
    /// Its failure cause, once FAILED ([`cause_text`]).
    pub failure_cause: Option<String>,
    /// A `TaskCanceler` was started and has not run `StreamTask.cancel()` yet.
    pub canceler_pending: bool,
    /// The mailbox is closed.
    pub mailbox_closed: bool,
    /// `Task.releaseResources` ran.
    pub released: bool,
    /// `StreamTask.recoveryCheckpointTrigger`, by Flink's name.
    pub recovery_checkpoint_trigger: String,
    /// Flag on: the recovery chain's stage.
    pub chain: Option<RecoveryStage>,
    /// The checkpoint that reached the task, and what became of it.
    pub checkpoint: Option<CheckpointOutcome>,
}

/// An exception in the model's terms ([`Cause`]'s text): the failures the driver injects carry
/// the model's cause as their message; `CancelTaskException` and the rejected mail are named by
/// kind, whatever their message; an `AsynchronousException` by the exception it wraps.
pub fn cause_text(e: &ChannelError) -> String {
    match e.root_cause() {
        ChannelError::Io(message) | ChannelError::IllegalState(message) => message.clone(),
        e if e.is_cancel_task() => Cause::CancelTask.to_string(),
        ChannelError::MailboxClosed(_) => Cause::MailboxClosed.to_string(),
        other => other.to_string(),
    }
}

fn execution_state(state: ModelExecutionState) -> (ExecutionState, Option<String>) {
    match state {
        ModelExecutionState::Running => (ExecutionState::Running, None),
        ModelExecutionState::Canceling => (ExecutionState::Canceling, None),
        ModelExecutionState::Failed(cause) => (ExecutionState::Failed, Some(cause.to_string())),
        ModelExecutionState::Canceled => (ExecutionState::Canceled, None),
        ModelExecutionState::Finished => (ExecutionState::Finished, None),
    }
}

/// A model mail as impl/ describes it.
pub fn mail_description(mail: &Mail) -> String {
    match mail {
        Mail::RequestPartitions(g) => format!("requestPartitions of gate {g}"),
        Mail::RequestPartitionsWithRecovery => "requestPartitions(true) of every gate".into(),
        Mail::SetRecoveryTrigger(t) => format!("setRecoveryCheckpointTrigger({})", trigger_name(*t)),
        Mail::Checkpoint => "checkpoint".into(),
        Mail::Suspend => "poison mail".into(),
        Mail::Resume(_) => "resume default action".into(),
    }
}

/// A model recovery trigger by Flink's name, as impl/ shows it.
pub fn trigger_name(trigger: RecoveryTrigger) -> &'static str {
    match trigger {
        RecoveryTrigger::NotReady => "NOT_READY",
        RecoveryTrigger::Drainer => "drainer",
        RecoveryTrigger::NoOp => "NO_OP",
    }
}

fn chain_stage(chain: Chain) -> RecoveryStage {
    match chain {
        Chain::NotReady => RecoveryStage::NotReady,
        Chain::Fetch => RecoveryStage::Fetch,
        Chain::RequestPartitions => RecoveryStage::RequestPartitions,
        Chain::InstallDrainer => RecoveryStage::InstallDrainer,
        Chain::Drain => RecoveryStage::Drain,
        Chain::StateConsumed => RecoveryStage::StateConsumed,
        Chain::Done => RecoveryStage::Done,
    }
}

fn checkpoint_outcome(checkpoint: Checkpoint) -> Option<CheckpointOutcome> {
    Some(match checkpoint {
        Checkpoint::None => return None,
        Checkpoint::Queued => CheckpointOutcome::Queued,
        Checkpoint::Taken => CheckpointOutcome::Taken,
        Checkpoint::TakenWithRecoveryBarriers => CheckpointOutcome::TakenWithRecoveryBarriers,
        Checkpoint::Declined => CheckpointOutcome::Declined,
        Checkpoint::NoRecoveryBarrier => CheckpointOutcome::NoRecoveryBarrier,
    })
}

/// The dependent action impl/ holds back for a model completion step.
pub fn completion_description(action: &TaskAction) -> Option<String> {
    Some(match action {
        TaskAction::OnGateStateConsumed { gate } => format!("thenRun(requestPartitions mail of gate {gate})"),
        TaskAction::CompleteRecovery => "complete the recovery future".into(),
        TaskAction::CompleteAllStateConsumed => "completeAll(stateConsumedFutures).thenRun(NO_OP mail)".into(),
        TaskAction::RunSuspendCallback => "whenComplete(suspend the mailbox loop)".into(),
        TaskAction::RunResumeCallback => "thenRun(resume the default action)".into(),
        TaskAction::OnInputAvailable => "ResumeWrapper: resume default action".into(),
        _ => return None,
    })
}

/// Where the channel-IO thread is: the step it takes next, or `idle` when it has none it may
/// take now (done, or flag on waiting for the chain to hand it the fetch or the drain).
fn io_step(shape: &TaskShape, s: &TaskState) -> String {
    let gates = shape.gates.len() as u8;
    if !io_may_run(shape, s) {
        "idle".into()
    } else if s.io_pc < gates {
        io_point(PausePoint::ReadInputData { gate: s.io_pc as u32 })
    } else if s.io_pc < 2 * gates {
        io_point(PausePoint::FinishReadRecoveredState {
            gate: (s.io_pc - gates) as u32,
        })
    } else {
        io_point(PausePoint::Drain {
            gate: (s.io_pc - 2 * gates) as u32,
        })
    }
}

/// The channel-IO thread's step at `point`.
fn io_point(point: PausePoint) -> String {
    match point {
        PausePoint::ReadInputData { gate } => format!("readInputData(gate {gate})"),
        PausePoint::FinishReadRecoveredState { gate } => format!("finishReadRecoveredState(gate {gate})"),
        PausePoint::Drain { gate } => format!("drain(gate {gate})"),
        other => format!("{other:?}"),
    }
}

fn element_kind(e: Element) -> InputElementKind {
    match e {
        Element::Recovered => InputElementKind::RecoveredBuffer,
        Element::EndOfState => InputElementKind::EndOfRecoveredState,
        Element::Live => InputElementKind::Record,
        Element::EndOfPartition => InputElementKind::EndOfPartition,
    }
}

fn status(s: InputStatus) -> DataInputStatus {
    match s {
        InputStatus::MoreAvailable => DataInputStatus::MoreAvailable,
        InputStatus::NothingAvailable => DataInputStatus::NothingAvailable,
        InputStatus::EndOfInput => DataInputStatus::EndOfInput,
    }
}

/// What the model predicts a caller sees when `action` is taken in `s`.
pub fn model_observation(model: &TaskModel, s: &TaskState, action: &TaskAction) -> TaskObservation {
    let shape = model.shape(s);
    match *action {
        TaskAction::ProcessInput { gate, channel } => {
            let mut n = s.clone();
            let (e, st) = processor::process_input(shape, &mut n, gate, channel);
            TaskObservation {
                element: Some((gate, channel, element_kind(e))),
                status: Some(status(st)),
                error: None,
            }
        }
        TaskAction::ProcessInputNothingToRead => TaskObservation {
            element: None,
            status: Some(status(processor::process_input_nothing_to_read(
                shape,
                model.variant,
                s,
            ))),
            error: None,
        },
        // A mailbox step that ends `invoke` with an exception (a mail that throws, or the checks
        // after a loop returned) throws it to the caller.
        TaskAction::ProcessMail { .. } | TaskAction::RequestPartitionsThrows { .. } => {
            let after = model.next_state(s, *action).expect("enabled");
            match after.phase {
                Phase::Failed(cause) if !s.invoke_ended() => TaskObservation {
                    error: Some(cause.to_string()),
                    ..TaskObservation::default()
                },
                _ => TaskObservation::default(),
            }
        }
        _ => TaskObservation::default(),
    }
}

/// The model's state in the terms of [`TaskSnapshot`].
pub fn model_snapshot(model: &TaskModel, s: &TaskState) -> TaskSnapshot {
    let mut enabled = Vec::new();
    model.actions(s, &mut enabled);
    let mut pending: Vec<String> = enabled.iter().filter_map(completion_description).collect();
    pending.sort();
    let (execution_state, failure_cause) = execution_state(s.execution_state);
    TaskSnapshot {
        phase: match s.phase {
            Phase::RestoreLoop => TaskPhase::RestoreLoop,
            Phase::MainLoop => TaskPhase::MainLoop,
            Phase::Finished => TaskPhase::Finished,
            Phase::Failed(_) => TaskPhase::Failed,
        },
        mailbox: s.mailbox.iter().map(mail_description).collect(),
        default_action_available: s.default_action == DefaultAction::Running,
        recovered: s.recovered,
        pending,
        io: io_step(model.shape(s), s),
        gates: s.gates.iter().map(GateView::of).collect(),
        deferred_end_of_input: s.deferred_end_of_input,
        busy_retried: s.busy_spin,
        invoke_failure: match s.phase {
            Phase::Failed(cause) => Some(cause.to_string()),
            _ => None,
        },
        recovery_failure: s.recovery_failure.map(|c| c.to_string()),
        canceled: s.canceled,
        execution_state,
        failure_cause,
        canceler_pending: s.cancel_invokable_pending,
        mailbox_closed: s.mailbox_closed,
        released: s.released,
        recovery_checkpoint_trigger: trigger_name(s.trigger).into(),
        chain: model
            .shape(s)
            .is_checkpointing_during_recovery_enabled()
            .then(|| chain_stage(s.chain)),
        checkpoint: checkpoint_outcome(s.checkpoint),
    }
}

// ---------------------------------------------------------------------------------------------
// The environment: scripted gates and the channel-state reader.

/// Where an armed failure is thrown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Throw {
    ReadInputData,
    FinishReadRecoveredState,
    RequestPartitions,
    /// Never armed: the model's drain throws only on a released gate.
    Drain,
}

struct ScriptedState {
    gate: Gate,
    /// A failure armed by the driver: the next call at that point throws it, once.
    armed: Option<(Throw, Cause)>,
    /// The channel the next `pollNext` hands out (the trace's choice); `None`: the first with
    /// something.
    pick: Option<u8>,
    /// The availability future handed out while the gate had nothing.
    waiting: Option<CompletableFuture>,
    /// The checkpoint whose `RecoveryCheckpointBarrier` the trigger put into the gate's channels
    /// in recovery.
    recovery_barrier: Option<CheckpointId>,
}

/// A gate whose channels are the model's abstraction, for the task under test.
pub struct ScriptedInputGate {
    index: u32,
    shape: TaskShape,
    state: Mutex<ScriptedState>,
    consumed: Vec<CompletableFuture>,
}

impl ScriptedInputGate {
    /// Gate `index` of `shape`, as the model starts it.
    pub fn new(shape: &TaskShape, index: u8, initial: &Gate) -> Arc<Self> {
        Arc::new(ScriptedInputGate {
            index: index as u32,
            shape: shape.clone(),
            consumed: initial.channels.iter().map(|_| CompletableFuture::new()).collect(),
            state: Mutex::new(ScriptedState {
                gate: initial.clone(),
                armed: None,
                pick: None,
                waiting: None,
                recovery_barrier: None,
            }),
        })
    }

    fn has_data(&self, gate: &Gate) -> bool {
        (0..gate.channels.len() as u8).any(|c| input_gate::next_element(&self.shape, gate, c).is_some())
    }

    /// The next call at `at` throws `cause` (an `IOException` whose message is the cause).
    fn arm(&self, at: Throw, cause: Cause) {
        self.state.lock().unwrap().armed = Some((at, cause));
    }

    /// Changes the gate, then completes a waiting availability future if data showed. A
    /// failure armed at `at` is thrown instead.
    fn update(&self, at: Throw, f: impl FnOnce(&mut Gate) -> ImplResult<()>) -> ImplResult<()> {
        let waiting = {
            let mut state = self.state.lock().unwrap();
            if let Some((armed, cause)) = state.armed
                && armed == at
            {
                state.armed = None;
                return Err(ChannelError::Io(cause.to_string()));
            }
            f(&mut state.gate)?;
            if self.has_data(&state.gate) {
                state.waiting.take()
            } else {
                None
            }
        };
        if let Some(future) = waiting {
            future.complete();
        }
        Ok(())
    }

    /// The next `pollNext` hands out channel `c`.
    pub fn pick(&self, c: u8) {
        self.state.lock().unwrap().pick = Some(c);
    }

    /// The gate as the model sees it.
    pub fn view(&self) -> GateView {
        GateView::of(&self.state.lock().unwrap().gate)
    }

    /// The gate's part of `readInputData`. Flag on, the state is fetched into spill files; a
    /// released gate's channels throw `CancelTaskException` at the first buffer requested for
    /// them (`requestBufferBlocking`), and a read without buffers requests none.
    fn read_input_data(&self) -> ImplResult<()> {
        let flag = self.shape.is_checkpointing_during_recovery_enabled();
        self.update(Throw::ReadInputData, |g| {
            let has_buffers = g.channels.iter().any(|c| c.recovered > 0);
            if g.released && has_buffers {
                return Err(ChannelError::Released(
                    "Input channel has already been released.".into(),
                ));
            }
            g.read = true;
            g.spilled = flag && has_buffers;
            Ok(())
        })
    }

    /// The gate's part of the drain: its fetched state pushed into its channels, each followed
    /// by the sentinel, so that they hand it out; the spill is consumed. A released gate's
    /// channels throw `CancelTaskException` at the drainer's first buffer request.
    fn drain(&self) -> ImplResult<()> {
        self.update(Throw::Drain, |g| {
            if g.released {
                return Err(ChannelError::Released(
                    "Input channel has already been released.".into(),
                ));
            }
            g.drained = true;
            g.spilled = false;
            Ok(())
        })
    }
}

/// The gate's checkpoint side: its channels are in recovery from `requestPartitions(true)` until
/// each consumed its sentinel (the model's `Gate::in_recovery`).
impl CheckpointableInput for ScriptedInputGate {
    fn insert_recovery_checkpoint_barriers_if_in_recovery(&self, checkpoint_id: CheckpointId) -> ImplResult<bool> {
        let mut state = self.state.lock().unwrap();
        let in_recovery = state.gate.in_recovery();
        if in_recovery {
            state.recovery_barrier = Some(checkpoint_id);
        }
        Ok(in_recovery)
    }

    fn checkpoint_started(&self, checkpoint_id: CheckpointId) -> ImplResult<()> {
        let state = self.state.lock().unwrap();
        if state.gate.in_recovery() && state.recovery_barrier != Some(checkpoint_id) {
            return Err(ChannelError::CheckpointDeclined {
                checkpoint_id,
                reason: DeclineReason::MissingRecoveryCheckpointBarrier,
            });
        }
        Ok(())
    }

    fn checkpoint_stopped(&self, _: CheckpointId) {
        self.state.lock().unwrap().recovery_barrier = None;
    }
}

impl IndexedInputGate for ScriptedInputGate {
    fn get_gate_index(&self) -> u32 {
        self.index
    }

    fn finish_read_recovered_state(&self) -> ImplResult<()> {
        self.update(Throw::FinishReadRecoveredState, |g| {
            g.finished_read = true;
            Ok(())
        })
    }

    fn request_partitions(&self, needs_recovery: bool) -> ImplResult<()> {
        let flag = self.shape.is_checkpointing_during_recovery_enabled();
        self.update(Throw::RequestPartitions, |g| {
            if g.partitions_requested {
                return Ok(());
            }
            if needs_recovery != flag {
                return Err(ChannelError::IllegalState(format!(
                    "requestPartitions({needs_recovery}) with the flag {}",
                    if flag { "on" } else { "off" }
                )));
            }
            if !needs_recovery && !g.state_consumed() {
                // toInputChannel(false): checkState(receivedBuffers.isEmpty()).
                return Err(ChannelError::IllegalState(
                    "toInputChannel(false) of a channel with unconsumed recovered state".into(),
                ));
            }
            // Flag on, `toInputChannel(true)` creates the channels in recovery; they hand out
            // nothing until the drain pushed the fetched state into them.
            g.partitions_requested = true;
            Ok(())
        })
    }

    fn get_state_consumed_future(&self) -> CompletableFuture {
        CompletableFuture::all_of(&self.consumed)
    }

    fn poll_next(&self) -> ImplResult<Option<InputElement>> {
        let (c, e) = {
            let mut state = self.state.lock().unwrap();
            let pick = state.pick.take();
            let channels = state.gate.channels.len() as u8;
            let c = pick
                .or_else(|| (0..channels).find(|&c| input_gate::next_element(&self.shape, &state.gate, c).is_some()));
            let Some(c) = c else { return Ok(None) };
            let Some(e) = input_gate::take_next(&self.shape, &mut state.gate, c) else {
                return Ok(None);
            };
            (c, e)
        };
        if e == Element::EndOfState {
            self.consumed[c as usize].complete();
        }
        Ok(Some(InputElement {
            channel_info: InputChannelInfo {
                gate_idx: self.index,
                input_channel_idx: c as u32,
            },
            kind: element_kind(e),
        }))
    }

    fn get_available_future(&self) -> CompletableFuture {
        let mut state = self.state.lock().unwrap();
        if self.has_data(&state.gate) {
            return CompletableFuture::completed();
        }
        state.waiting.get_or_insert_with(CompletableFuture::new).clone()
    }

    fn is_finished(&self) -> bool {
        self.state
            .lock()
            .unwrap()
            .gate
            .channels
            .iter()
            .all(|c| c.end_of_partition)
    }

    /// `close()`: the channels are released, recycling the recovered buffers they hold in
    /// memory (the model's `buffers_held` counts none in a released gate); the fetched state not
    /// yet drained is released.
    fn close(&self) -> ImplResult<()> {
        let mut state = self.state.lock().unwrap();
        let gate = &mut state.gate;
        gate.spilled = false;
        gate.released = true;
        Ok(())
    }
}

struct ScriptedReader(Vec<Arc<ScriptedInputGate>>);

impl SequentialChannelStateReader for ScriptedReader {
    fn read_input_data(&self, gate: &dyn IndexedInputGate) -> ImplResult<()> {
        self.0[gate.get_gate_index() as usize].read_input_data()
    }
}

/// The reader's fetched state is what the drain pushes.
impl ChannelStateDrain for ScriptedReader {
    fn drain(&self, gate: &dyn IndexedInputGate) -> ImplResult<()> {
        self.0[gate.get_gate_index() as usize].drain()
    }
}

// ---------------------------------------------------------------------------------------------
// The driver.

type Deferred = Arc<Mutex<Vec<DependentAction>>>;

/// The `Task`'s canceler executor under the driver: each `TaskCanceler` is held until the trace
/// takes `cancelInvokable`.
#[derive(Default)]
struct HeldCancelers(Mutex<Vec<Runnable>>);

impl Executor for HeldCancelers {
    fn execute(&self, runnable: Runnable) {
        self.0.lock().unwrap().push(runnable);
    }
}

fn defer_into(deferred: &Deferred) -> Box<dyn Fn(DependentAction)> {
    let deferred = Arc::clone(deferred);
    Box::new(move |action| deferred.lock().unwrap().push(action))
}

/// What the mailbox thread builds the task from.
type TaskConfigs = Box<dyn FnOnce() -> (StreamTaskConfig, CheckpointingConfig) + Send>;

enum Command {
    /// The task thread's `doRun` up to `invoke`: load the invokable, `restoreStateAndGates`.
    Reset(Task, TaskConfigs),
    Mail,
    DefaultAction,
    /// The end of `doRun` once `invoke` ended.
    ReleaseResources,
    Snapshot,
}

enum Reply {
    Done(Result<TaskObservation, String>),
    /// The task's snapshot, and whether its input processor is available.
    Snapshot(Box<recovery_impl::stream_task::StreamTaskSnapshot>),
}

fn failure(e: &ChannelError) -> TaskObservation {
    TaskObservation {
        error: Some(cause_text(e)),
        ..TaskObservation::default()
    }
}

enum IoReport {
    /// The channel-IO thread stopped at a pause point until it is let go.
    At(PausePoint),
    /// A runnable of the channel-IO thread ended.
    Ended,
}

/// The task's channel-IO executor under the driver: impl/'s [`SingleThreadExecutor`], each
/// runnable followed by a report that it ended, and a count of the runnables submitted. The
/// chain submits the fetch and the drain from a mail, so the driver learns from the count, not
/// from a clock, whether the thread has work that will take it to its next stop.
struct ReportingExecutor {
    inner: Arc<SingleThreadExecutor>,
    reports: Sender<IoReport>,
    submitted: Arc<AtomicUsize>,
}

impl Executor for ReportingExecutor {
    fn execute(&self, runnable: Runnable) {
        self.submitted.fetch_add(1, Ordering::SeqCst);
        let reports = self.reports.clone();
        self.inner.execute(Box::new(move || {
            runnable();
            let _ = reports.send(IoReport::Ended);
        }));
    }
}

/// The channel-IO thread as the driver holds it: stopped at a pause point, or without work.
struct IoThread {
    executor: Arc<SingleThreadExecutor>,
    go: Sender<()>,
    reports: Receiver<IoReport>,
    submitted: Arc<AtomicUsize>,
    /// Runnables that ended.
    ended: usize,
    /// The pause point it is stopped at.
    at: Option<PausePoint>,
}

impl IoThread {
    /// The thread, its hooks installed (each pause point reported and held until let go; the
    /// dependent actions due on it held back into `deferred`), and the executor the task gets.
    fn spawn(deferred: &Deferred) -> Result<(Self, Arc<dyn Executor>), DriverError> {
        let executor =
            Arc::new(SingleThreadExecutor::spawn("channel-state-unspilling").map_err(|e| harness(e.to_string()))?);
        let (go, go_rx) = mpsc::channel::<()>();
        let (report_tx, reports) = mpsc::channel::<IoReport>();
        let (at_tx, deferred) = (report_tx.clone(), Arc::clone(deferred));
        executor.execute(Box::new(move || {
            set_thread_dependent_hook(Some(defer_into(&deferred)));
            set_thread_hook(Some(Box::new(move |point| {
                let _ = at_tx.send(IoReport::At(point));
                let _ = go_rx.recv();
            })));
        }));
        let submitted = Arc::new(AtomicUsize::new(0));
        let reporting: Arc<dyn Executor> = Arc::new(ReportingExecutor {
            inner: Arc::clone(&executor),
            reports: report_tx,
            submitted: Arc::clone(&submitted),
        });
        let io = IoThread {
            executor,
            go,
            reports,
            submitted,
            ended: 0,
            at: None,
        };
        Ok((io, reporting))
    }

    /// Waits until the thread is stopped at a pause point or has no runnable left.
    fn settle(&mut self) -> Result<(), DriverError> {
        while self.at.is_none() && self.ended < self.submitted.load(Ordering::SeqCst) {
            match self.reports.recv_timeout(WATCHDOG) {
                Ok(IoReport::At(point)) => self.at = Some(point),
                Ok(IoReport::Ended) => self.ended += 1,
                Err(RecvTimeoutError::Timeout) => {
                    return Err(harness("the channel-IO thread neither returned nor parked"));
                }
                Err(RecvTimeoutError::Disconnected) => return Err(harness("the channel-IO thread ended")),
            }
        }
        Ok(())
    }

    /// Where it is, in the model's terms.
    fn describe(&self) -> String {
        self.at.map_or_else(|| "idle".into(), io_point)
    }

    /// Lets the stopped thread make its call, and waits for its next stop.
    fn go(&mut self) -> Result<(), DriverError> {
        self.at = None;
        self.go.send(()).map_err(|_| harness("the channel-IO thread ended"))?;
        self.settle()
    }

    /// Letting the stopped thread go without its hook's `go` lets the executor finish and join.
    fn end(self) {
        drop(self.go);
        self.executor.shutdown();
    }
}

/// The task's configuration for `shape` over the scripted `gates`.
fn task_configs(shape: TaskShape, gates: &[Arc<ScriptedInputGate>], io: Arc<dyn Executor>) -> TaskConfigs {
    let reader = Arc::new(ScriptedReader(gates.to_vec()));
    let task_gates: Vec<Arc<dyn IndexedInputGate>> = gates
        .iter()
        .map(|g| Arc::clone(g) as Arc<dyn IndexedInputGate>)
        .collect();
    let inputs: Vec<Arc<dyn CheckpointableInput>> = gates
        .iter()
        .map(|g| Arc::clone(g) as Arc<dyn CheckpointableInput>)
        .collect();
    Box::new(move || {
        let config = StreamTaskConfig {
            output: Arc::new(DiscardingOutput),
            gates: task_gates,
            selection: match shape.selection {
                Selection::All => InputSelection::All,
                Selection::FirstUntilEnd => InputSelection::FirstUntilEnd,
            },
            checkpointing_during_recovery: shape.checkpointing_during_recovery,
            reader: Arc::clone(&reader) as Arc<dyn SequentialChannelStateReader>,
            channel_io_executor: io,
        };
        let checkpointing = CheckpointingConfig {
            checkpoints: match shape.checkpoints {
                Checkpoints::None => ImplCheckpoints::None,
                Checkpoints::Unaligned => ImplCheckpoints::Unaligned,
                Checkpoints::AlignedOnly => ImplCheckpoints::AlignedOnly,
            },
            cdr_gate: match shape.cdr_gate {
                CdrGate::AsMerged => ImplCdrGate::AsMerged,
                CdrGate::RequiresUnaligned => ImplCdrGate::RequiresUnaligned,
            },
            restore_loop_ends: match shape.restore_loop_ends {
                RestoreLoopEnds::StateConsumed => ImplRestoreLoopEnds::StateConsumed,
                RestoreLoopEnds::DrainEnd => ImplRestoreLoopEnds::DrainEnd,
            },
            drain: reader,
            inputs,
        };
        (config, checkpointing)
    })
}

/// impl/'s task level behind the task-level model's actions.
pub struct TaskImplDriver {
    model: TaskModel,
    commands: Sender<Command>,
    replies: Receiver<Reply>,
    deferred: Deferred,
    gates: Vec<Arc<ScriptedInputGate>>,
    io: Option<IoThread>,
    task: Option<Task>,
    cancelers: Arc<HeldCancelers>,
}

impl TaskImplDriver {
    /// A driver for `model`'s shapes; `reset` picks one.
    pub fn new(model: TaskModel) -> Self {
        let (commands, command_rx) = mpsc::channel::<Command>();
        let (reply_tx, replies) = mpsc::channel::<Reply>();
        let deferred: Deferred = Arc::default();
        let hook_target = Arc::clone(&deferred);
        thread::Builder::new()
            .name("mailbox".into())
            .spawn(move || mailbox_thread(command_rx, reply_tx, hook_target))
            .expect("spawn the mailbox thread");
        TaskImplDriver {
            model,
            commands,
            replies,
            deferred,
            gates: Vec::new(),
            io: None,
            task: None,
            cancelers: Arc::default(),
        }
    }

    fn ask(&self, command: Command) -> Result<Reply, DriverError> {
        self.commands
            .send(command)
            .map_err(|_| harness("the mailbox thread ended"))?;
        match self.replies.recv_timeout(WATCHDOG) {
            Ok(reply) => Ok(reply),
            Err(_) => Err(harness("the mailbox thread neither returned nor parked")),
        }
    }

    fn mailbox_step(&self, command: Command) -> Result<TaskObservation, DriverError> {
        match self.ask(command)? {
            Reply::Done(Ok(observation)) => Ok(observation),
            Reply::Done(Err(e)) => Ok(TaskObservation {
                error: Some(e),
                ..TaskObservation::default()
            }),
            Reply::Snapshot(..) => Err(harness("the mailbox thread answered out of turn")),
        }
    }

    fn end_io(&mut self) {
        if let Some(io) = self.io.take() {
            io.end();
        }
    }

    fn io(&mut self) -> Result<&mut IoThread, DriverError> {
        self.io.as_mut().ok_or_else(|| harness("no channel-IO thread"))
    }

    /// Back to initial state `init` of the model.
    pub fn reset(&mut self, init: &TaskState) -> Result<(), DriverError> {
        self.end_io();
        self.deferred.lock().unwrap().clear();
        self.cancelers.0.lock().unwrap().clear();
        let shape = self.model.shape(init).clone();
        self.gates = init
            .gates
            .iter()
            .enumerate()
            .map(|(g, gate)| ScriptedInputGate::new(&shape, g as u8, gate))
            .collect();
        let (io, io_executor) = IoThread::spawn(&self.deferred)?;
        self.io = Some(io);
        let configs = task_configs(shape, &self.gates, io_executor);
        let task = Task::new(Arc::clone(&self.cancelers) as Arc<dyn Executor>);
        self.task = Some(task.clone());
        match self.ask(Command::Reset(task, configs))? {
            Reply::Done(Ok(_)) => {}
            Reply::Done(Err(e)) => return Err(harness(format!("restoreStateAndGates failed: {e}"))),
            Reply::Snapshot(..) => {
                return Err(harness("the mailbox thread answered out of turn"));
            }
        }
        self.io()?.settle()
    }

    /// Performs `action`, then waits until the channel-IO thread has stopped or has no work.
    pub fn apply(&mut self, action: &TaskAction) -> Result<TaskObservation, DriverError> {
        let observation = self.perform(action)?;
        self.io()?.settle()?;
        Ok(observation)
    }

    /// One line per action kind.
    fn perform(&mut self, action: &TaskAction) -> Result<TaskObservation, DriverError> {
        use TaskAction::*;
        match *action {
            ReadInputData { gate } => self.channel_io_step(action, gate),
            ReadInputDataThrows { gate } => self.channel_io_step(action, gate),
            FinishReadRecoveredState { gate } => self.channel_io_step(action, gate),
            FinishReadRecoveredStateThrows { gate } => self.channel_io_step(action, gate),
            DrainGate { gate } => self.channel_io_step(action, gate),
            ProcessMail { .. } => self.mailbox_step(Command::Mail),
            ProcessInput { gate, channel } => self.process_input(gate, channel),
            ProcessInputNothingToRead => self.mailbox_step(Command::DefaultAction),
            RequestPartitionsThrows { gate } => self.request_partitions_throws(gate),
            CancelExecution => self.cancel_execution(),
            CancelInvokable => self.cancel_invokable(),
            TriggerCheckpoint => self.trigger_checkpoint(),
            ReleaseResources => self.mailbox_step(Command::ReleaseResources),
            _ => self.run_dependent_action(action),
        }
    }

    /// Lets the paused channel-IO thread make its next call, `readInputData`,
    /// `finishReadRecoveredState` or the drain of `gate`, which throws in a `...Throws` action.
    fn channel_io_step(&mut self, action: &TaskAction, gate: u8) -> Result<TaskObservation, DriverError> {
        let g = gate as u32;
        let (point, throws) = match action {
            TaskAction::ReadInputData { .. } => (PausePoint::ReadInputData { gate: g }, None),
            TaskAction::ReadInputDataThrows { .. } => (
                PausePoint::ReadInputData { gate: g },
                Some((Throw::ReadInputData, Cause::ReadInputData(gate))),
            ),
            TaskAction::FinishReadRecoveredState { .. } => (PausePoint::FinishReadRecoveredState { gate: g }, None),
            TaskAction::DrainGate { .. } => (PausePoint::Drain { gate: g }, None),
            _ => (
                PausePoint::FinishReadRecoveredState { gate: g },
                Some((Throw::FinishReadRecoveredState, Cause::FinishReadRecoveredState(gate))),
            ),
        };
        let (at, expected) = (self.io()?.describe(), io_point(point));
        if at != expected {
            return Ok(TaskObservation {
                error: Some(format!("the channel-IO thread is at {at}, not {expected}")),
                ..TaskObservation::default()
            });
        }
        if let Some((at, cause)) = throws {
            self.scripted_gate(gate)?.arm(at, cause);
        }
        self.io()?.go()?;
        Ok(TaskObservation::default())
    }

    /// The mailbox's default action, `processInput`, reading `channel` of `gate` (the trace's
    /// choice of what `pollNext` hands out).
    fn process_input(&mut self, gate: u8, channel: u8) -> Result<TaskObservation, DriverError> {
        if let Some(g) = self.gates.get(gate as usize) {
            g.pick(channel);
        }
        self.mailbox_step(Command::DefaultAction)
    }

    /// The `requestPartitions` mail of `gate`, which throws.
    fn request_partitions_throws(&mut self, gate: u8) -> Result<TaskObservation, DriverError> {
        self.scripted_gate(gate)?
            .arm(Throw::RequestPartitions, Cause::RequestPartitions(gate));
        self.mailbox_step(Command::Mail)
    }

    /// `Task.cancelExecution`, from outside the mailbox thread.
    fn cancel_execution(&mut self) -> Result<TaskObservation, DriverError> {
        self.task.as_ref().ok_or_else(|| harness("no task"))?.cancel_execution();
        Ok(TaskObservation::default())
    }

    /// The first `TaskCanceler` started runs `invokable.cancel()`.
    fn cancel_invokable(&mut self) -> Result<TaskObservation, DriverError> {
        let canceler = {
            let mut held = self.cancelers.0.lock().unwrap();
            (!held.is_empty()).then(|| held.remove(0))
        };
        let Some(canceler) = canceler else {
            return Ok(TaskObservation {
                error: Some("no TaskCanceler was started".into()),
                ..TaskObservation::default()
            });
        };
        canceler();
        Ok(TaskObservation::default())
    }

    /// The checkpoint coordinator's side, from outside the mailbox thread: a checkpoint reaches
    /// the task, which queues its mail.
    fn trigger_checkpoint(&mut self) -> Result<TaskObservation, DriverError> {
        let task = self.task.as_ref().ok_or_else(|| harness("no task"))?;
        task.invokable()
            .ok_or_else(|| harness("no invokable"))?
            .trigger_checkpoint();
        Ok(TaskObservation::default())
    }

    /// A model completion step: the dependent action impl/ held back for it runs (a future's
    /// callback, a resumed default action).
    fn run_dependent_action(&mut self, action: &TaskAction) -> Result<TaskObservation, DriverError> {
        let description = completion_description(action).expect("a completion step");
        let due = {
            let mut deferred = self.deferred.lock().unwrap();
            let at = deferred.iter().position(|d| d.description == description);
            at.map(|i| deferred.remove(i))
        };
        let Some(due) = due else {
            return Ok(TaskObservation {
                error: Some(format!("no dependent action `{description}` is due")),
                ..TaskObservation::default()
            });
        };
        // This thread is not the mailbox thread; what the action makes due is held back.
        set_thread_dependent_hook(Some(defer_into(&self.deferred)));
        due.run();
        set_thread_dependent_hook(None);
        Ok(TaskObservation::default())
    }

    fn scripted_gate(&self, gate: u8) -> Result<&ScriptedInputGate, DriverError> {
        self.gates
            .get(gate as usize)
            .map(|g| &**g)
            .ok_or_else(|| harness(format!("no gate {gate}")))
    }

    /// The abstract state now.
    pub fn snapshot(&mut self) -> Result<TaskSnapshot, DriverError> {
        let task = match self.ask(Command::Snapshot)? {
            Reply::Snapshot(s) => *s,
            Reply::Done(_) => return Err(harness("the mailbox thread answered out of turn")),
        };
        let mut pending: Vec<String> = self
            .deferred
            .lock()
            .unwrap()
            .iter()
            .map(|d| d.description.clone())
            .collect();
        pending.sort();
        let outer = self.task.as_ref().ok_or_else(|| harness("no task"))?.snapshot();
        Ok(TaskSnapshot {
            phase: task.phase,
            mailbox: task.mailbox,
            default_action_available: task.default_action_available,
            recovered: task.recovered,
            pending,
            io: self.io()?.describe(),
            gates: self.gates.iter().map(|g| g.view()).collect(),
            deferred_end_of_input: task.deferred_end_of_input,
            busy_retried: task.busy_retried,
            invoke_failure: task.invoke_failure.as_ref().map(cause_text),
            recovery_failure: task.recovery_failure.as_ref().map(cause_text),
            canceled: task.canceled,
            execution_state: outer.execution_state,
            failure_cause: match outer.execution_state {
                ExecutionState::Failed => outer.failure_cause.as_ref().map(cause_text),
                _ => None,
            },
            canceler_pending: !self.cancelers.0.lock().unwrap().is_empty(),
            mailbox_closed: task.mailbox_closed,
            released: outer.released,
            recovery_checkpoint_trigger: task.recovery_checkpoint_trigger,
            chain: task.chain,
            checkpoint: task.checkpoint,
        })
    }
}

impl Drop for TaskImplDriver {
    fn drop(&mut self) {
        self.end_io();
    }
}

fn mailbox_thread(commands: Receiver<Command>, replies: Sender<Reply>, deferred: Deferred) {
    let mut task: Option<(Task, Arc<StreamTask>)> = None;
    for command in commands {
        let reply = match command {
            Command::Reset(outer, configs) => {
                // The task is built here, so this is its mailbox thread. `restoreStateAndGates`
                // runs as in Flink: a callback on an already complete future runs at once.
                set_thread_dependent_hook(None);
                let (config, checkpointing) = configs();
                let t = outer.load_invokable_with_checkpointing(config, checkpointing);
                let restored = t.restore_state_and_gates();
                task = Some((outer, t));
                set_thread_dependent_hook(Some(defer_into(&deferred)));
                Reply::Done(restored.map(|()| TaskObservation::default()).map_err(|e| e.to_string()))
            }
            Command::Mail => Reply::Done(match &task {
                Some((_, t)) => Ok(t
                    .run_single_mail()
                    .map_or_else(|e| failure(&e), |_| TaskObservation::default())),
                None => Err("no task".into()),
            }),
            Command::ReleaseResources => Reply::Done(match &task {
                Some((outer, t)) => match t.invoke_result() {
                    Some(result) => {
                        outer.after_invoke(&result);
                        Ok(TaskObservation::default())
                    }
                    None => Err("invoke has not ended".into()),
                },
                None => Err("no task".into()),
            }),
            Command::DefaultAction => Reply::Done(match &task {
                Some((_, t)) => Ok(t.run_default_action().map_or_else(
                    |e| failure(&e),
                    |()| {
                        let last = t.last_process_input();
                        TaskObservation {
                            element: last.element.map(|e| {
                                (
                                    e.channel_info.gate_idx as u8,
                                    e.channel_info.input_channel_idx as u8,
                                    e.kind,
                                )
                            }),
                            status: last.status,
                            error: None,
                        }
                    },
                )),
                None => Err("no task".into()),
            }),
            Command::Snapshot => match &task {
                Some((_, t)) => Reply::Snapshot(Box::new(t.snapshot())),
                None => Reply::Done(Err("no task".into())),
            },
        };
        if replies.send(reply).is_err() {
            return;
        }
    }
}

/// The model's initial states by index.
pub fn initial_states(model: &TaskModel) -> BTreeMap<u32, TaskState> {
    model
        .init_states()
        .into_iter()
        .enumerate()
        .map(|(i, s)| (i as u32, s))
        .collect()
}
