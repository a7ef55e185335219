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
//!
//! Failures, as in Flink: flag off, a read that throws (`readInputData` or
//! `finishReadRecoveredState`) goes to `handleAsyncException`, which fails the [`crate::task::Task`]
//! (`failExternally`); its `TaskCanceler` runs [`StreamTask::cancel`], whose poison mail ends the
//! restore loop, and `ensureNotCanceled()` throws. Flag on, the chain's stage that threw completes
//! the recovery future exceptionally, its `whenComplete(suspend)` ends the restore loop, and
//! `get()` rethrows the cause. A mail that throws ends `invoke` with its exception.

use serde::{Deserialize, Serialize};

use crate::completable_future::CompletableFuture;
use crate::error::{ChannelError, Result};
use crate::executor::Executor;
use crate::input_gate::{IndexedInputGate, InputElement, SequentialChannelStateReader};
use crate::mailbox_processor::{MailboxController, MailboxProcessor};
use crate::pause_point::{self, PausePoint};
use crate::stream_input_processor::{self, DataInputStatus, InputSelection, StreamInputProcessor};
use crate::sync::{Arc, AtomicBool, Mutex, Ordering};

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
    /// `invoke` threw: out of `restoreInternal`'s checks after the restore loop
    /// (`ensureNotCanceled()`, "Mailbox loop interrupted before recovery was finished", the
    /// recovery future's cause), out of the main loop's `ensureNotCanceled()`, or out of a mail.
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
    /// The recovery future failed, with this cause.
    pub recovery_failure: Option<ChannelError>,
    /// `StreamTask.canceled`: [`StreamTask::cancel`] ran.
    pub canceled: bool,
    /// The mailbox is closed (the task's cleanup ran).
    pub mailbox_closed: bool,
    /// What `invoke` threw, once it did.
    pub invoke_failure: Option<ChannelError>,
}

#[derive(Debug)]
struct TaskState {
    phase: TaskPhase,
    recovery: Option<CompletableFuture>,
    busy_retried: bool,
    deferred_end_of_input: bool,
    last: ProcessInputOutcome,
    invoke_failure: Option<ChannelError>,
}

/// What `StreamTask.handleAsyncException` hands an exception thrown off the mailbox thread to:
/// Flink's `StreamTaskAsyncExceptionHandler`, which calls `Environment.failExternally`, i.e.
/// [`crate::task::Task::fail_externally`].
pub trait AsyncExceptionHandler: Send + Sync {
    /// `handleAsyncException(message, exception)`.
    fn handle_async_exception(&self, message: &str, cause: ChannelError);
}

/// The message of `readInputChannelState`'s `handleAsyncException`.
pub const RECOVERED_STATE_FAILURE: &str = "Unable to set up recovered channel state";

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
    canceled: Arc<AtomicBool>,
    async_exception_handler: Option<Arc<dyn AsyncExceptionHandler>>,
    gates: Vec<Arc<dyn IndexedInputGate>>,
    input_processor: Box<dyn StreamInputProcessor>,
    checkpointing_during_recovery: bool,
    reader: Arc<dyn SequentialChannelStateReader>,
    channel_io_executor: Arc<dyn Executor>,
    output: Arc<dyn DataOutput>,
    state: Arc<Mutex<TaskState>>,
}

impl StreamTask {
    /// A task; its mailbox thread is the calling thread. Without a [`crate::task::Task`] around
    /// it, an asynchronous exception cancels the task at once (what the `Task`'s canceler would
    /// do); [`crate::task::Task::load_invokable`] builds it with the `Task` as handler.
    pub fn new(config: StreamTaskConfig) -> Self {
        Self::build(config, None)
    }

    /// A task whose asynchronous exceptions go to `handler` (Flink's environment).
    pub fn with_async_exception_handler(config: StreamTaskConfig, handler: Arc<dyn AsyncExceptionHandler>) -> Self {
        Self::build(config, Some(handler))
    }

    fn build(config: StreamTaskConfig, async_exception_handler: Option<Arc<dyn AsyncExceptionHandler>>) -> Self {
        let input_processor = stream_input_processor::create(config.gates.clone(), config.selection);
        StreamTask {
            mailbox_processor: MailboxProcessor::new(),
            canceled: Arc::new(AtomicBool::new(false)),
            async_exception_handler,
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
                invoke_failure: None,
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
                        // A closed mailbox rejects the mail; the callback swallows that.
                        let _rejected_once_closed = executor
                            .execute(format!("requestPartitions of gate {index}"), move || {
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
    ///
    /// A read that throws ends the runnable. Flag off, its catch hands the exception to
    /// `handleAsyncException`; flag on, the chain's stage fails, and with it the recovery future.
    /// Flag on, a closed mailbox rejects the conversion mail, which fails the recovery future too.
    /// The conversion mail's `requestPartitions` that throws fails the recovery future; the mail
    /// itself does not throw.
    fn submit_read_input_channel_state(&self, recovery: CompletableFuture) {
        let gates = self.gates.clone();
        let reader = Arc::clone(&self.reader);
        let executor = self.mailbox_processor.main_mailbox_executor();
        let flag = self.checkpointing_during_recovery;
        let failure = self.async_exception_sink();
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
            if let Err(cause) = read() {
                if flag {
                    recovery.complete_exceptionally(cause);
                } else {
                    failure.handle_async_exception(RECOVERED_STATE_FAILURE, cause);
                }
                return;
            }
            if flag {
                let stage = recovery.clone();
                let mail = executor.execute("requestPartitions(true) of every gate", move || {
                    if let Err(cause) = gates.iter().try_for_each(|gate| gate.request_partitions(true)) {
                        stage.complete_exceptionally(cause);
                        return Ok(());
                    }
                    // thenCompose: the gates' futures, taken after the conversion.
                    let all: Vec<CompletableFuture> = gates.iter().map(|g| g.get_state_consumed_future()).collect();
                    complete_when(&CompletableFuture::all_of(&all), stage);
                    Ok(())
                });
                if let Err(rejected) = mail {
                    recovery.complete_exceptionally(rejected);
                }
            }
        }));
    }

    /// `handleAsyncException` as the IO thread calls it: it holds what the call needs, not the
    /// task.
    fn async_exception_sink(&self) -> AsyncExceptionSink {
        AsyncExceptionSink {
            handler: self.async_exception_handler.clone(),
            state: Arc::clone(&self.state),
            canceled: Arc::clone(&self.canceled),
            mailbox_processor: self.mailbox_processor.clone(),
        }
    }

    /// `StreamTask.cancel()` (the `TaskCanceler`'s call): `canceled`, then
    /// `mailboxProcessor.allActionsCompleted()`, whose poison mail ends the running loop (not
    /// sent to a closed mailbox).
    pub fn cancel(&self) {
        cancel(&self.canceled, &self.mailbox_processor);
    }

    /// `isCanceled()`.
    pub fn is_canceled(&self) -> bool {
        self.canceled.load(Ordering::SeqCst)
    }

    /// `cleanUp` after `invoke` ended (`Task.doRun`): the mailbox closes, its mails dropped.
    pub fn clean_up(&self) {
        self.mailbox_processor.close();
    }

    /// What `invoke` returned, once it ended (for tests stepping the mailbox thread).
    pub fn invoke_result(&self) -> Option<Result<()>> {
        let state = self.state.lock();
        match state.phase {
            TaskPhase::Finished => Some(Ok(())),
            TaskPhase::Failed => Some(Err(state
                .invoke_failure
                .clone()
                .expect("a failed invoke recorded its exception"))),
            _ => None,
        }
    }

    /// `invoke` threw `e`: the phase records it.
    fn failed(&self, e: ChannelError) -> ChannelError {
        let mut state = self.state.lock();
        state.phase = TaskPhase::Failed;
        state.invoke_failure = Some(e.clone());
        e
    }

    /// `restoreInternal`: `restoreStateAndGates`, the restore loop, then the checks that the
    /// task was not canceled and that recovery finished, and succeeded.
    pub fn restore(&self) -> Result<()> {
        self.restore_state_and_gates()?;
        self.mailbox_processor
            .run_mailbox_loop(&|c| self.process_input(c))
            .map_err(|e| self.failed(e))?;
        self.loop_returned()
    }

    /// `invoke`: restore, then the main loop until END_OF_INPUT.
    pub fn invoke(&self) -> Result<()> {
        self.restore()?;
        self.mailbox_processor
            .run_mailbox_loop(&|c| self.process_input(c))
            .map_err(|e| self.failed(e))?;
        self.loop_returned()
    }

    /// One mail of the running loop, for tests stepping the mailbox thread (Flink's tests use
    /// `runMailboxStep()`). A suspend mail returns the loop as `restore` / `invoke` would; a
    /// mail that throws ends `invoke` with its exception.
    pub fn run_single_mail(&self) -> Result<bool> {
        let ran = self.mailbox_processor.run_single_mail().map_err(|e| self.failed(e))?;
        if !self.mailbox_processor.is_next_loop_possible() {
            self.loop_returned()?;
        }
        Ok(ran)
    }

    /// One invocation of the default action, for tests stepping the mailbox thread.
    pub fn run_default_action(&self) -> Result<()> {
        self.mailbox_processor
            .run_default_action(&|c| self.process_input(c))
            .map_err(|e| self.failed(e))
    }

    /// `runMailboxLoop()` returned. After the restore loop `restoreInternal` runs
    /// `ensureNotCanceled()`, checks `isDone()` of the recovery future ("Mailbox loop
    /// interrupted before recovery was finished."), then `get()` rethrows the cause of a failed
    /// recovery; otherwise the main loop begins. After the main loop, `ensureNotCanceled()`, and
    /// the task has finished.
    fn loop_returned(&self) -> Result<()> {
        let mut state = self.state.lock();
        let outcome = match state.phase {
            TaskPhase::RestoreLoop | TaskPhase::MainLoop if self.is_canceled() => {
                Err(ChannelError::released("StreamTask was canceled"))
            }
            TaskPhase::RestoreLoop => match state.recovery.as_ref().and_then(CompletableFuture::get_now) {
                None => Err(ChannelError::illegal_state(
                    "Mailbox loop interrupted before recovery was finished.",
                )),
                Some(Err(cause)) => Err(cause),
                Some(Ok(())) => {
                    state.phase = TaskPhase::MainLoop;
                    drop(state);
                    self.mailbox_processor.begin_loop();
                    return Ok(());
                }
            },
            TaskPhase::MainLoop => {
                state.phase = TaskPhase::Finished;
                Ok(())
            }
            _ => Ok(()),
        };
        drop(state);
        outcome.map_err(|e| self.failed(e))
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
            recovery_failure: state
                .recovery
                .as_ref()
                .and_then(CompletableFuture::get_now)
                .and_then(Result::err),
            canceled: self.is_canceled(),
            mailbox_closed: self.mailbox_processor.mailbox().is_closed(),
            invoke_failure: state.invoke_failure.clone(),
        }
    }
}

fn cancel(canceled: &AtomicBool, mailbox_processor: &MailboxProcessor) {
    canceled.store(true, Ordering::SeqCst);
    mailbox_processor.all_actions_completed();
}

/// `StreamTask.handleAsyncException`, held by the channel-IO thread.
struct AsyncExceptionSink {
    handler: Option<Arc<dyn AsyncExceptionHandler>>,
    state: Arc<Mutex<TaskState>>,
    canceled: Arc<AtomicBool>,
    mailbox_processor: MailboxProcessor,
}

impl AsyncExceptionSink {
    /// While the task restores or runs (`isRunning || isRestoring`), the exception fails it;
    /// after `invoke` ended it is only logged.
    fn handle_async_exception(&self, message: &str, cause: ChannelError) {
        let ended = matches!(self.state.lock().phase, TaskPhase::Finished | TaskPhase::Failed);
        if ended {
            return;
        }
        match &self.handler {
            Some(handler) => handler.handle_async_exception(message, cause),
            // No `Task` around the task: cancel it as the `Task`'s canceler would.
            None => cancel(&self.canceled, &self.mailbox_processor),
        }
    }
}

/// `future.thenRun(recovery::complete)`: the recovery future completes as a dependent action of
/// `future` (exceptionally if it failed), so that its own dependents run after it.
fn complete_when(future: &CompletableFuture, recovery: CompletableFuture) {
    let f = future.clone();
    future.when_complete("complete the recovery future", move || {
        match f.status() {
            crate::completable_future::FutureStatus::Failed(cause) => recovery.complete_exceptionally(cause),
            _ => recovery.complete(),
        };
    });
}
