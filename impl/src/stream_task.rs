//! Mirrors Flink's `StreamTask` as FLINK-39522 (part 3 of FLINK-38544) and its successors rework
//! its recovery: `restoreStateAndGates` with the flag (`execution.checkpointing.during-recovery.enabled`)
//! off and on, `restoreInternal`'s check after the restore loop, `invoke`'s main loop,
//! `processInput` with the defer-finish rule, the recovery checkpoint trigger, and a checkpoint
//! started by the task's barrier handler.
//!
//! Threads: the mailbox thread runs `restore`, `invoke`, every mail and the default action; the
//! channel-IO executor reads (flag on: fetches, then drains) the recovered state; dependent
//! actions of futures run wherever the future completes (see [`crate::completable_future`]).
//!
//! Flag off, each gate requests its partitions once *its own* recovered state was consumed, and
//! the recovery future is `allOf` every gate's. Flag on (`recoverChannelsWithCheckpointing`), one
//! stage after the other: the NOT_READY mail (`setRecoveryCheckpointTrigger`), the fetch on the
//! channel-IO executor, one mail converting every gate with `requestPartitions(true)` (their
//! channels created in recovery), the drainer's install mail, the drain on the channel-IO
//! executor one gate at a time, then `completeAll` of the gates' state-consumed futures, whose
//! `thenRun` queues the NO_OP mail and completes the recovery future. With
//! [`RestoreLoopEnds::DrainEnd`] the recovery future completes when the drain ends, and
//! `completeAll` only queues the NO_OP mail. Either way `whenComplete(suspend)` ends the restore
//! loop once the recovery future is complete. A stage hands its successor on directly, as
//! `thenRunAsync` submits to its executor on the completing thread.
//!
//! Failures, as in Flink: flag off, a read that throws (`readInputData` or
//! `finishReadRecoveredState`) goes to `handleAsyncException`, which fails the [`crate::task::Task`]
//! (`failExternally`); its `TaskCanceler` runs [`StreamTask::cancel`], whose poison mail ends the
//! restore loop, and `ensureNotCanceled()` throws. Flag on, the chain's stage that threw (or whose
//! mail a closed mailbox rejected) completes the recovery future exceptionally, its
//! `whenComplete(suspend)` ends the restore loop, and `get()` rethrows the cause; a drain that
//! throws goes to `handleAsyncException`. A mail that throws ends `invoke` with its exception.

use serde::{Deserialize, Serialize};

use crate::checkpointable_input::CheckpointableInput;
use crate::completable_future::{CompletableFuture, FutureStatus};
use crate::error::{ChannelError, DeclineReason, Result};
use crate::executor::Executor;
use crate::fetched_channel_state_drainer::FetchedChannelStateDrainer;
use crate::ids::CheckpointId;
use crate::input_gate::{IndexedInputGate, InputElement, SequentialChannelStateReader};
use crate::mailbox_processor::{MailboxController, MailboxExecutor, MailboxProcessor};
use crate::pause_point::{self, PausePoint};
use crate::recovery_checkpoint_trigger::RecoveryCheckpointTrigger;
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

/// Flag on: the stage of `recoverChannelsWithCheckpointing`'s chain the task is at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RecoveryStage {
    /// The NOT_READY mail is queued.
    NotReady,
    /// The fetch runs on the channel-IO executor.
    Fetch,
    /// The `requestPartitions(true)` mail is queued.
    RequestPartitions,
    /// The drainer's install mail is queued.
    InstallDrainer,
    /// The drain runs on the channel-IO executor.
    Drain,
    /// The drain ended: `completeAll` of the gates' state-consumed futures.
    StateConsumed,
    /// `completeAll` completed and queued the NO_OP mail.
    Done,
}

/// The checkpoints the job takes, by the barrier handler `InputProcessorUtil` builds for them
/// (EXACTLY_ONCE).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Checkpoints {
    /// No checkpoint reaches the task.
    #[default]
    None,
    /// `SingleCheckpointBarrierHandler.alternating`: its `ChannelState` asks the task's recovery
    /// trigger when a checkpoint starts.
    Unaligned,
    /// `SingleCheckpointBarrierHandler.aligned`: its `ChannelState`'s trigger is NO_OP.
    AlignedOnly,
}

/// How `CheckpointingOptions.isCheckpointingDuringRecoveryEnabled` gates the flag.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CdrGate {
    /// As the series merged it: the flag alone.
    #[default]
    AsMerged,
    /// As FLINK-40518 (apache/flink#29055) made it: unaligned checkpoints must be on too.
    RequiresUnaligned,
}

/// Flag on: which stage of the chain the restore loop's recovery future is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RestoreLoopEnds {
    /// `completeAll` of the gates' state-consumed futures: the task consumes its recovered state
    /// while INITIALIZING.
    #[default]
    StateConsumed,
    /// The drain's end: the task turns RUNNING while its channels are still in recovery, and
    /// `completeAll` only queues the NO_OP mail.
    DrainEnd,
}

/// What became of a checkpoint that reached the task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CheckpointOutcome {
    /// Its mail is queued.
    Queued,
    /// Taken; no channel was in recovery.
    Taken,
    /// Taken: the trigger put a `RecoveryCheckpointBarrier` into every channel in recovery.
    TakenWithRecoveryBarriers,
    /// NOT_READY declined it (CHECKPOINT_DECLINED_TASK_NOT_READY).
    Declined,
    /// A channel in recovery has no `RecoveryCheckpointBarrier`: unaligned, `checkpointStarted`
    /// declines the checkpoint; aligned, it is neither taken nor declined (FLINK-40518).
    NoRecoveryBarrier,
}

/// The id the task's one checkpoint carries.
const CHECKPOINT_ID: CheckpointId = 1;

/// What `processInput` did in its last call, and what it remembers for reports.
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
    /// `recoveryCheckpointTrigger`, by Flink's name (`NOT_READY`, `drainer`, `NO_OP`).
    pub recovery_checkpoint_trigger: String,
    /// Flag on: the chain's stage.
    pub chain: Option<RecoveryStage>,
    /// The checkpoint that reached the task, if one did.
    pub checkpoint: Option<CheckpointOutcome>,
}

#[derive(Debug)]
struct TaskState {
    phase: TaskPhase,
    recovery: Option<CompletableFuture>,
    busy_retried: bool,
    deferred_end_of_input: bool,
    last: ProcessInputOutcome,
    invoke_failure: Option<ChannelError>,
    /// `recoveryCheckpointTrigger`: set by mails and read by the checkpoint's mail, so only on
    /// the mailbox thread (the lock is for snapshots).
    recovery_checkpoint_trigger: RecoveryCheckpointTrigger,
    chain: Option<RecoveryStage>,
    checkpoint: Option<CheckpointOutcome>,
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

/// Flag on: `FetchedChannelStateDrainer.drain()` as the channel-IO executor runs it, one gate per
/// call: the gate's fetched state pushed into its channels (created in recovery by
/// `requestPartitions(true)`), each channel's followed by its end-of-state sentinel. The fetched
/// state (spill files on the spilling backend) is the environment's, as the reader is.
pub trait ChannelStateDrain: Send + Sync {
    /// The gate's part of `drain()`. A released gate's channels throw `CancelTaskException`.
    fn drain(&self, gate: &dyn IndexedInputGate) -> Result<()>;
}

/// impl/'s gates convert in memory: `toInputChannel(true)` pushes what `readInputData` put into
/// the recovered channels, sentinel included, so nothing is left to drain.
#[derive(Debug, Default)]
pub struct NothingToDrain;

impl ChannelStateDrain for NothingToDrain {
    fn drain(&self, _: &dyn IndexedInputGate) -> Result<()> {
        Ok(())
    }
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

/// The task's checkpointing: the barrier handler, how the flag is gated, where the restore loop
/// ends, the drain of the fetched state, and each gate's checkpoint side.
pub struct CheckpointingConfig {
    /// The checkpoints the job takes.
    pub checkpoints: Checkpoints,
    /// How the flag is gated.
    pub cdr_gate: CdrGate,
    /// Flag on: when the restore loop's recovery future completes.
    pub restore_loop_ends: RestoreLoopEnds,
    /// Flag on: the drain of the fetched state.
    pub drain: Arc<dyn ChannelStateDrain>,
    /// The barrier handler's inputs, input `i` being the gate `gates[i]`; none where no
    /// checkpoint reaches the task.
    pub inputs: Vec<Arc<dyn CheckpointableInput>>,
}

impl Default for CheckpointingConfig {
    /// No checkpoints, the flag as merged, the restore loop ending once the state was consumed,
    /// nothing to drain.
    fn default() -> Self {
        CheckpointingConfig {
            checkpoints: Checkpoints::None,
            cdr_gate: CdrGate::AsMerged,
            restore_loop_ends: RestoreLoopEnds::StateConsumed,
            drain: Arc::new(NothingToDrain),
            inputs: Vec::new(),
        }
    }
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
    checkpointing: CheckpointingConfig,
    state: Arc<Mutex<TaskState>>,
}

impl StreamTask {
    /// A task; its mailbox thread is the calling thread. Without a [`crate::task::Task`] around
    /// it, an asynchronous exception cancels the task at once (what the `Task`'s canceler would
    /// do); [`crate::task::Task::load_invokable`] builds it with the `Task` as handler.
    pub fn new(config: StreamTaskConfig) -> Self {
        Self::build(config, CheckpointingConfig::default(), None)
    }

    /// A task whose asynchronous exceptions go to `handler` (Flink's environment).
    pub fn with_async_exception_handler(config: StreamTaskConfig, handler: Arc<dyn AsyncExceptionHandler>) -> Self {
        Self::build(config, CheckpointingConfig::default(), Some(handler))
    }

    /// A task with `checkpointing`, whose asynchronous exceptions go to `handler`.
    pub fn with_checkpointing(
        config: StreamTaskConfig,
        checkpointing: CheckpointingConfig,
        handler: Option<Arc<dyn AsyncExceptionHandler>>,
    ) -> Self {
        Self::build(config, checkpointing, handler)
    }

    fn build(
        config: StreamTaskConfig,
        checkpointing: CheckpointingConfig,
        async_exception_handler: Option<Arc<dyn AsyncExceptionHandler>>,
    ) -> Self {
        assert!(
            checkpointing.inputs.is_empty() || checkpointing.inputs.len() == config.gates.len(),
            "one checkpointable input per gate"
        );
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
            checkpointing,
            state: Arc::new(Mutex::new(TaskState {
                phase: TaskPhase::Created,
                recovery: None,
                busy_retried: false,
                deferred_end_of_input: false,
                last: ProcessInputOutcome::default(),
                invoke_failure: None,
                // The field's initial value in Flink.
                recovery_checkpoint_trigger: RecoveryCheckpointTrigger::NotReady,
                chain: None,
                checkpoint: None,
            })),
        }
    }

    /// The mailbox processor.
    pub fn mailbox_processor(&self) -> &MailboxProcessor {
        &self.mailbox_processor
    }

    /// `CheckpointingOptions.isCheckpointingDuringRecoveryEnabled`: whether the task recovers on
    /// the flag-on chain.
    pub fn is_checkpointing_during_recovery_enabled(&self) -> bool {
        self.checkpointing_during_recovery
            && match self.checkpointing.cdr_gate {
                CdrGate::AsMerged => true,
                CdrGate::RequiresUnaligned => self.checkpointing.checkpoints == Checkpoints::Unaligned,
            }
    }

    /// `restoreStateAndGates`: starts the recovery (flag off the read on the channel-IO thread,
    /// flag on the chain's NOT_READY mail) and registers what follows; returns at once. The
    /// restore loop begins.
    pub fn restore_state_and_gates(&self) -> Result<()> {
        let flag = self.is_checkpointing_during_recovery_enabled();
        let recovery = if self.gates.is_empty() {
            // Nothing to recover: complete before the loop runs; nothing will ever be in recovery.
            let mut state = self.state.lock();
            state.recovery_checkpoint_trigger = RecoveryCheckpointTrigger::NoOp;
            state.chain = flag.then_some(RecoveryStage::Done);
            CompletableFuture::completed()
        } else if flag {
            let recovery = CompletableFuture::new();
            self.recovery_chain(recovery.clone()).start();
            recovery
        } else {
            // `recoverChannelsWithoutCheckpointing`: no channel is ever in recovery.
            self.state.lock().recovery_checkpoint_trigger = RecoveryCheckpointTrigger::NoOp;
            let recovery = CompletableFuture::new();
            self.submit_read_input_channel_state();
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
            recovery
        };
        let processor = self.mailbox_processor.clone();
        recovery.when_complete("whenComplete(suspend the mailbox loop)", move || processor.suspend());
        let mut state = self.state.lock();
        state.recovery = Some(recovery);
        state.phase = TaskPhase::RestoreLoop;
        Ok(())
    }

    /// Flag off, the channel-IO thread's `readInputChannelState`: every gate's recovered state,
    /// then every gate's `finishReadRecoveredState()`. A read that throws ends the runnable; its
    /// catch hands the exception to `handleAsyncException`.
    fn submit_read_input_channel_state(&self) {
        let gates = self.gates.clone();
        let reader = Arc::clone(&self.reader);
        let failure = self.async_exception_sink();
        self.channel_io_executor.execute(Box::new(move || {
            if let Err(cause) = read_input_channel_state(&gates, &*reader) {
                failure.handle_async_exception(RECOVERED_STATE_FAILURE, cause);
            }
        }));
    }

    fn recovery_chain(&self, recovery: CompletableFuture) -> RecoveryChain {
        RecoveryChain {
            gates: self.gates.clone(),
            reader: Arc::clone(&self.reader),
            drain: Arc::clone(&self.checkpointing.drain),
            mailbox: self.mailbox_processor.main_mailbox_executor(),
            channel_io_executor: Arc::clone(&self.channel_io_executor),
            state: Arc::clone(&self.state),
            recovery,
            failure: self.async_exception_sink(),
            restore_loop_ends: self.checkpointing.restore_loop_ends,
        }
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

    /// A checkpoint reaches the task (`triggerCheckpointAsync`, or the first barrier's
    /// `processInput`), from any thread: its mail is queued. The coordinator triggers one only
    /// once every task is RUNNING; the caller keeps that rule.
    pub fn trigger_checkpoint(&self) {
        self.state.lock().checkpoint = Some(CheckpointOutcome::Queued);
        let state = Arc::clone(&self.state);
        let inputs = self.checkpointing.inputs.clone();
        let checkpoints = self.checkpointing.checkpoints;
        let _rejected_once_closed = self
            .mailbox_processor
            .main_mailbox_executor()
            .execute("checkpoint", move || {
                perform_checkpoint(&state, checkpoints, &inputs);
                Ok(())
            });
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
            recovery_checkpoint_trigger: state.recovery_checkpoint_trigger.to_string(),
            chain: state.chain,
            checkpoint: state.checkpoint,
        }
    }
}

/// The channel-IO thread's read of the recovered state (flag on, the fetch): every gate's
/// `readInputData`, then every gate's `finishReadRecoveredState()`, each after its pause point.
fn read_input_channel_state(
    gates: &[Arc<dyn IndexedInputGate>],
    reader: &dyn SequentialChannelStateReader,
) -> Result<()> {
    for gate in gates {
        pause_point::reached(PausePoint::ReadInputData {
            gate: gate.get_gate_index(),
        });
        reader.read_input_data(&**gate)?;
    }
    for gate in gates {
        pause_point::reached(PausePoint::FinishReadRecoveredState {
            gate: gate.get_gate_index(),
        });
        gate.finish_read_recovered_state()?;
    }
    Ok(())
}

/// The checkpoint's mail: the barrier handler starts the checkpoint. Unaligned, its
/// `ChannelState` asks the task's trigger (`onCheckpointStartedForAllInputs`), whose
/// `RecoveryCheckpointBarrier`s each channel in recovery then needs in `checkpointStarted`;
/// aligned, its trigger is NO_OP whatever the task's is, so a channel in recovery gets none and
/// the barrier it waits for is behind the recovered state. Then `checkpointStopped`.
fn perform_checkpoint(state: &Mutex<TaskState>, checkpoints: Checkpoints, inputs: &[Arc<dyn CheckpointableInput>]) {
    let trigger = match checkpoints {
        Checkpoints::Unaligned => state.lock().recovery_checkpoint_trigger.clone(),
        Checkpoints::AlignedOnly | Checkpoints::None => RecoveryCheckpointTrigger::NoOp,
    };
    let outcome = match trigger.insert_barriers_into_inputs(inputs, CHECKPOINT_ID) {
        Err(_declined) => CheckpointOutcome::Declined,
        Ok(inserted) => match inputs.iter().try_for_each(|i| i.checkpoint_started(CHECKPOINT_ID)) {
            Ok(()) if inserted => CheckpointOutcome::TakenWithRecoveryBarriers,
            Ok(()) => CheckpointOutcome::Taken,
            Err(ChannelError::CheckpointDeclined {
                reason: DeclineReason::MissingRecoveryCheckpointBarrier,
                ..
            }) => CheckpointOutcome::NoRecoveryBarrier,
            Err(_declined) => CheckpointOutcome::Declined,
        },
    };
    for input in inputs {
        input.checkpoint_stopped(CHECKPOINT_ID);
    }
    state.lock().checkpoint = Some(outcome);
}

fn cancel(canceled: &AtomicBool, mailbox_processor: &MailboxProcessor) {
    canceled.store(true, Ordering::SeqCst);
    mailbox_processor.all_actions_completed();
}

/// `StreamTask.handleAsyncException`, held by the channel-IO thread.
#[derive(Clone)]
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

/// Flag on, `recoverChannelsWithCheckpointing`'s chain: each stage hands the next to the
/// mailbox or the channel-IO executor itself (`thenRunAsync`, `thenCompose` of a mail's future),
/// so no stage waits for a dependent action of its own.
#[derive(Clone)]
struct RecoveryChain {
    gates: Vec<Arc<dyn IndexedInputGate>>,
    reader: Arc<dyn SequentialChannelStateReader>,
    drain: Arc<dyn ChannelStateDrain>,
    mailbox: MailboxExecutor,
    channel_io_executor: Arc<dyn Executor>,
    state: Arc<Mutex<TaskState>>,
    recovery: CompletableFuture,
    failure: AsyncExceptionSink,
    restore_loop_ends: RestoreLoopEnds,
}

/// `setRecoveryCheckpointTrigger(trigger)`'s mail description.
fn set_trigger_description(trigger: &RecoveryCheckpointTrigger) -> String {
    format!("setRecoveryCheckpointTrigger({trigger})")
}

impl RecoveryChain {
    fn at(&self, stage: RecoveryStage) {
        self.state.lock().chain = Some(stage);
    }

    /// A stage that hands its work to the mailbox: a closed mailbox rejects the mail
    /// (`RejectedExecutionException`), which fails the stage and so the recovery future.
    fn mail(&self, stage: RecoveryStage, description: String, run: impl FnOnce() + Send + 'static) {
        self.at(stage);
        let queued = self.mailbox.execute(description, move || {
            run();
            Ok(())
        });
        if let Err(rejected) = queued {
            self.recovery.complete_exceptionally(rejected);
        }
    }

    /// `setRecoveryCheckpointTrigger(trigger)` queued at `stage`; once the mail set the field,
    /// its future's next stage is `then`.
    fn set_recovery_checkpoint_trigger(
        self,
        stage: RecoveryStage,
        trigger: RecoveryCheckpointTrigger,
        then: impl FnOnce(RecoveryChain) + Send + 'static,
    ) {
        let chain = self.clone();
        self.mail(stage, set_trigger_description(&trigger), move || {
            chain.state.lock().recovery_checkpoint_trigger = trigger;
            then(chain);
        });
    }

    /// The NOT_READY mail; its future's `thenRunAsync` is the fetch.
    fn start(self) {
        let trigger = RecoveryCheckpointTrigger::NotReady;
        self.set_recovery_checkpoint_trigger(RecoveryStage::NotReady, trigger, RecoveryChain::fetch);
    }

    /// On the channel-IO executor, the fetch: the state read (`readInputData` and
    /// `finishReadRecoveredState()` of every gate); a read that throws fails the stage. Then the
    /// conversion goes to the mailbox.
    fn fetch(self) {
        self.at(RecoveryStage::Fetch);
        let executor = Arc::clone(&self.channel_io_executor);
        executor.execute(Box::new(move || {
            if let Err(cause) = read_input_channel_state(&self.gates, &*self.reader) {
                self.recovery.complete_exceptionally(cause);
                return;
            }
            let chain = self.clone();
            self.mail(
                RecoveryStage::RequestPartitions,
                "requestPartitions(true) of every gate".into(),
                move || chain.request_partitions(),
            );
        }));
    }

    /// The mail: `requestPartitions(true)` of every gate, its channels created in recovery; a
    /// gate that throws fails the stage (the gates before it stay converted). Then `buildDrainer`
    /// over the converted channels, and its install mail.
    fn request_partitions(self) {
        if let Err(cause) = self.gates.iter().try_for_each(|gate| gate.request_partitions(true)) {
            self.recovery.complete_exceptionally(cause);
            return;
        }
        let drainer = RecoveryCheckpointTrigger::Drainer(FetchedChannelStateDrainer::default());
        self.set_recovery_checkpoint_trigger(RecoveryStage::InstallDrainer, drainer, RecoveryChain::drain);
    }

    /// On the channel-IO executor, `drain()`: one gate at a time. A drain that throws (a gate
    /// the task's cleanup released) goes to `handleAsyncException`; the drainer's
    /// try-with-resources close releases what is left, which the gates' own close released
    /// already.
    fn drain(self) {
        self.at(RecoveryStage::Drain);
        let executor = Arc::clone(&self.channel_io_executor);
        executor.execute(Box::new(move || {
            for gate in &self.gates {
                pause_point::reached(PausePoint::Drain {
                    gate: gate.get_gate_index(),
                });
                if let Err(cause) = self.drain.drain(&**gate) {
                    self.failure.handle_async_exception(RECOVERED_STATE_FAILURE, cause);
                    return;
                }
            }
            self.drained();
        }));
    }

    /// The drain ended: `completeAll` of the gates' state-consumed futures. Its `thenRun` queues
    /// the NO_OP mail, not awaited, and completes the recovery future (a closed mailbox's
    /// rejection fails it), unless the recovery future completed when the drain ended.
    fn drained(self) {
        self.at(RecoveryStage::StateConsumed);
        let consumed: Vec<CompletableFuture> = self.gates.iter().map(|g| g.get_state_consumed_future()).collect();
        let all = CompletableFuture::all_of(&consumed);
        let no_op = RecoveryCheckpointTrigger::NoOp;
        let (state, description) = (Arc::clone(&self.state), set_trigger_description(&no_op));
        let set_no_op = move || {
            state.lock().recovery_checkpoint_trigger = no_op;
            Ok(())
        };
        match self.restore_loop_ends {
            RestoreLoopEnds::StateConsumed => {
                let completed = all.clone();
                all.when_complete("complete the recovery future", move || {
                    self.at(RecoveryStage::Done);
                    if let FutureStatus::Failed(cause) = completed.status() {
                        self.recovery.complete_exceptionally(cause);
                    } else if let Err(rejected) = self.mailbox.execute(description, set_no_op) {
                        self.recovery.complete_exceptionally(rejected);
                    } else {
                        self.recovery.complete();
                    }
                });
            }
            RestoreLoopEnds::DrainEnd => {
                self.recovery.complete();
                let description_of_stage = "completeAll(stateConsumedFutures).thenRun(NO_OP mail)";
                all.then_run(description_of_stage, move || {
                    self.at(RecoveryStage::Done);
                    // Nothing waits on this stage: a closed mailbox's rejection goes nowhere.
                    let _rejected_once_closed = self.mailbox.execute(description, set_no_op);
                });
            }
        }
    }
}
