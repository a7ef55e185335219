//! Mirrors Flink's `StreamTask` as FLINK-39522 (part 3 of FLINK-38544) reworks its recovery:
//! `restoreStateAndGates` with the flag (`execution.checkpointing.during-recovery.enabled`) off
//! and on, `restoreInternal`'s check after the restore loop, `invoke`'s main loop, and
//! `processInput` with the defer-finish rule.
//!
//! Threads: the mailbox thread runs `restore`, `invoke`, every mail and the default action; the
//! channel-IO executor reads the recovered state; dependent actions of futures run wherever the
//! future completes (see [`crate::completable_future`]).
//!
//! Flag off, each gate requests its partitions once *its own* recovered state was consumed, and
//! the recovery future is `allOf` every gate's. Flag on, the chain reads the state, then converts
//! every gate with `requestPartitions(true)` in one mail, then takes `allOf` the gates' futures.
//! Either way `whenComplete(suspend)` ends the restore loop once recovery is complete.

use serde::{Deserialize, Serialize};

use crate::completable_future::CompletableFuture;
use crate::error::{ChannelError, Result};
use crate::executor::Executor;
use crate::input_gate::{IndexedInputGate, InputElement, SequentialChannelStateReader};
use crate::mailbox_processor::{MailboxController, MailboxProcessor};
use crate::pause_point::{self, PausePoint};
use crate::stream_input_processor::{self, DataInputStatus, InputSelection, StreamInputProcessor};
use crate::sync::{Arc, Mutex};

/// Where the mailbox thread is in `restoreInternal` / `invoke`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TaskPhase {
    /// Built; `restore` has not run.
    Created,
    /// The restore loop: `runMailboxLoop()` inside `restoreInternal`.
    RestoreLoop,
    /// The main loop: `runMailboxLoop()` inside `invoke`.
    MainLoop,
    /// The main loop returned at END_OF_INPUT.
    Finished,
    /// `restoreInternal` threw "Mailbox loop interrupted before recovery was finished".
    Failed,
}

/// What the task did in its last `processInput`, and what it remembers for reports.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessInputOutcome {
    /// The element the processor read, if any.
    pub element: Option<InputElement>,
    /// The processor's status.
    pub status: Option<DataInputStatus>,
}

/// A read-only view of the task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StreamTaskSnapshot {
    /// The phase.
    pub phase: TaskPhase,
    /// The mails, head first, by description.
    pub mailbox: Vec<String>,
    /// Whether the default action runs when there is no mail.
    pub default_action_available: bool,
    /// The recovery future (`allGatesRecoveredFuture`) is done.
    pub recovered: bool,
    /// `processInput` returned NOTHING_AVAILABLE with the processor available: the task retried
    /// at once ("data availability has changed in the meantime").
    pub busy_retried: bool,
    /// END_OF_INPUT came while recovery was running and was deferred.
    pub deferred_end_of_input: bool,
}

#[derive(Debug)]
struct TaskState {
    phase: TaskPhase,
    recovery: Option<CompletableFuture>,
    busy_retried: bool,
    deferred_end_of_input: bool,
    last: ProcessInputOutcome,
}

/// Where the elements the input processor reads go: the operator chain's input
/// (`PushingAsyncDataInput.DataOutput`). End-of-state markers go nowhere.
pub trait DataOutput: Send + Sync {
    /// One element read.
    fn emit(&self, element: InputElement);
}

/// An output that drops everything.
#[derive(Debug, Default)]
pub struct DiscardingOutput;

impl DataOutput for DiscardingOutput {
    fn emit(&self, _: InputElement) {}
}

/// How a task is built: its gates, the operator's input selection, the flag, and the channel-IO
/// side.
pub struct StreamTaskConfig {
    /// The operator's input.
    pub output: Arc<dyn DataOutput>,
    /// The input gates, input `i` being `gates[i]`; none for a source.
    pub gates: Vec<Arc<dyn IndexedInputGate>>,
    /// The operator's input selection (two inputs or more).
    pub selection: InputSelection,
    /// `execution.checkpointing.during-recovery.enabled`.
    pub checkpointing_during_recovery: bool,
    /// The channel-state reader.
    pub reader: Arc<dyn SequentialChannelStateReader>,
    /// `channelIOExecutor`.
    pub channel_io_executor: Arc<dyn Executor>,
}

/// Flink's `StreamTask`, its recovery and its input loop.
pub struct StreamTask {
    mailbox_processor: MailboxProcessor,
    gates: Vec<Arc<dyn IndexedInputGate>>,
    input_processor: Box<dyn StreamInputProcessor>,
    checkpointing_during_recovery: bool,
    reader: Arc<dyn SequentialChannelStateReader>,
    channel_io_executor: Arc<dyn Executor>,
    output: Arc<dyn DataOutput>,
    state: Arc<Mutex<TaskState>>,
}

impl StreamTask {
    /// A task; its mailbox thread is the calling thread.
    pub fn new(config: StreamTaskConfig) -> Self {
        let input_processor = stream_input_processor::create(config.gates.clone(), config.selection);
        StreamTask {
            mailbox_processor: MailboxProcessor::new(),
            gates: config.gates,
            input_processor,
            checkpointing_during_recovery: config.checkpointing_during_recovery,
            reader: config.reader,
            channel_io_executor: config.channel_io_executor,
            output: config.output,
            state: Arc::new(Mutex::new(TaskState {
                phase: TaskPhase::Created,
                recovery: None,
                busy_retried: false,
                deferred_end_of_input: false,
                last: ProcessInputOutcome::default(),
            })),
        }
    }

    /// The mailbox processor.
    pub fn mailbox_processor(&self) -> &MailboxProcessor {
        &self.mailbox_processor
    }

    /// `restoreStateAndGates`: starts reading the recovered state on the channel-IO thread and
    /// registers what follows; returns at once. The restore loop begins.
    pub fn restore_state_and_gates(&self) -> Result<()> {
        let recovery = if self.gates.is_empty() {
            // Nothing to recover: complete before the loop runs.
            CompletableFuture::completed()
        } else {
            let recovery = CompletableFuture::new();
            self.submit_read_input_channel_state(recovery.clone());
            if !self.checkpointing_during_recovery {
                for gate in &self.gates {
                    let (executor, g) = (self.mailbox_processor.main_mailbox_executor(), Arc::clone(gate));
                    let description = format!("thenRun(requestPartitions mail of gate {})", gate.get_gate_index());
                    gate.get_state_consumed_future().then_run(description, move || {
                        let index = g.get_gate_index();
                        executor.execute(format!("requestPartitions of gate {index}"), move || {
                            g.request_partitions(false)
                        });
                    });
                }
                let all: Vec<CompletableFuture> = self.gates.iter().map(|g| g.get_state_consumed_future()).collect();
                complete_when(&CompletableFuture::all_of(&all), recovery.clone());
            }
            recovery
        };
        let processor = self.mailbox_processor.clone();
        recovery.when_complete("whenComplete(suspend the mailbox loop)", move || processor.suspend());
        let mut state = self.state.lock();
        state.recovery = Some(recovery);
        state.phase = TaskPhase::RestoreLoop;
        Ok(())
    }

    /// The channel-IO thread's `readInputChannelState`: every gate's recovered state, then every
    /// gate's `finishReadRecoveredState()`. Flag on, the chain goes on with `thenRunAsync` on the
    /// mailbox: one mail converts every gate, then the chain takes the gates' futures.
    fn submit_read_input_channel_state(&self, recovery: CompletableFuture) {
        let gates = self.gates.clone();
        let reader = Arc::clone(&self.reader);
        let executor = self.mailbox_processor.main_mailbox_executor();
        let flag = self.checkpointing_during_recovery;
        self.channel_io_executor.execute(Box::new(move || {
            let read = || -> Result<()> {
                for gate in &gates {
                    pause_point::reached(PausePoint::ReadInputData {
                        gate: gate.get_gate_index(),
                    });
                    reader.read_input_data(&**gate)?;
                }
                for gate in &gates {
                    pause_point::reached(PausePoint::FinishReadRecoveredState {
                        gate: gate.get_gate_index(),
                    });
                    gate.finish_read_recovered_state()?;
                }
                Ok(())
            };
            if read().is_err() {
                recovery.complete_exceptionally();
                return;
            }
            if flag {
                executor.execute("requestPartitions(true) of every gate", move || {
                    for gate in &gates {
                        gate.request_partitions(true)?;
                    }
                    // thenCompose: the gates' futures, taken after the conversion.
                    let all: Vec<CompletableFuture> = gates.iter().map(|g| g.get_state_consumed_future()).collect();
                    complete_when(&CompletableFuture::all_of(&all), recovery);
                    Ok(())
                });
            }
        }));
    }

    /// `restoreInternal`: `restoreStateAndGates`, the restore loop, then the check that recovery
    /// finished.
    pub fn restore(&self) -> Result<()> {
        self.restore_state_and_gates()?;
        self.mailbox_processor.run_mailbox_loop(&|c| self.process_input(c))?;
        self.loop_returned()
    }

    /// `invoke`: restore, then the main loop until END_OF_INPUT.
    pub fn invoke(&self) -> Result<()> {
        self.restore()?;
        self.mailbox_processor.run_mailbox_loop(&|c| self.process_input(c))?;
        self.loop_returned()
    }

    /// One mail of the running loop, for tests stepping the mailbox thread (Flink's tests use
    /// `runMailboxStep()`). A suspend mail returns the loop as `restore` / `invoke` would.
    pub fn run_single_mail(&self) -> Result<bool> {
        let ran = self.mailbox_processor.run_single_mail()?;
        if !self.mailbox_processor.is_next_loop_possible() {
            self.loop_returned()?;
        }
        Ok(ran)
    }

    /// One invocation of the default action, for tests stepping the mailbox thread.
    pub fn run_default_action(&self) -> Result<()> {
        self.mailbox_processor.run_default_action(&|c| self.process_input(c))
    }

    /// `runMailboxLoop()` returned: after the restore loop `restoreInternal` checks that
    /// recovery finished and the main loop begins; after the main loop the task has finished.
    fn loop_returned(&self) -> Result<()> {
        let mut state = self.state.lock();
        match state.phase {
            TaskPhase::RestoreLoop => {
                if !state.recovery.as_ref().is_some_and(CompletableFuture::is_done) {
                    state.phase = TaskPhase::Failed;
                    return Err(ChannelError::illegal_state(
                        "Mailbox loop interrupted before recovery was finished.",
                    ));
                }
                state.phase = TaskPhase::MainLoop;
                drop(state);
                self.mailbox_processor.begin_loop();
            }
            TaskPhase::MainLoop => state.phase = TaskPhase::Finished,
            _ => {}
        }
        Ok(())
    }

    /// `StreamTask.processInput`, the default action.
    fn process_input(&self, controller: &MailboxController) -> Result<()> {
        let (element, status) = self.input_processor.process_input()?;
        if let Some(element) = element.filter(|e| e.kind != crate::input_gate::InputElementKind::EndOfRecoveredState) {
            self.output.emit(element);
        }
        let recovery = {
            let mut state = self.state.lock();
            state.last = ProcessInputOutcome {
                element,
                status: Some(status),
            };
            state
                .recovery
                .clone()
                .expect("processInput runs after restoreStateAndGates")
        };
        match status {
            DataInputStatus::MoreAvailable => {}
            DataInputStatus::NothingAvailable => {
                if self.input_processor.is_available() {
                    // "data availability has changed in the meantime; retry immediately"
                    self.state.lock().busy_retried = true;
                    return Ok(());
                }
                let suspension = controller.suspend_default_action();
                self.input_processor
                    .get_available_future()
                    .then_run("ResumeWrapper: resume default action", move || suspension.resume());
            }
            DataInputStatus::EndOfInput => {
                if !recovery.is_done() {
                    // Defer the finish: suspend only the default action, resume it when recovery
                    // completes; END_OF_INPUT then comes again.
                    let suspension = controller.suspend_default_action();
                    self.state.lock().deferred_end_of_input = true;
                    recovery.then_run("thenRun(resume the default action)", move || suspension.resume());
                } else {
                    controller.suspend_default_action();
                    self.mailbox_processor.suspend();
                }
            }
        }
        Ok(())
    }

    /// What the last `processInput` read and returned.
    pub fn last_process_input(&self) -> ProcessInputOutcome {
        self.state.lock().last.clone()
    }

    /// A read-only view.
    pub fn snapshot(&self) -> StreamTaskSnapshot {
        let state = self.state.lock();
        StreamTaskSnapshot {
            phase: state.phase,
            mailbox: self.mailbox_processor.mailbox().descriptions(),
            default_action_available: self.mailbox_processor.is_default_action_available(),
            recovered: state.recovery.as_ref().is_some_and(CompletableFuture::is_done),
            busy_retried: state.busy_retried,
            deferred_end_of_input: state.deferred_end_of_input,
        }
    }
}

/// `future.thenRun(recovery::complete)`: the recovery future completes as a dependent action of
/// `future` (exceptionally if it failed), so that its own dependents run after it.
fn complete_when(future: &CompletableFuture, recovery: CompletableFuture) {
    let f = future.clone();
    future.when_complete("complete the recovery future", move || {
        if f.status() == crate::completable_future::FutureStatus::Completed {
            recovery.complete();
        } else {
            recovery.complete_exceptionally();
        }
    });
}
