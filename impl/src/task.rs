//! Mirrors Flink's `Task` (org.apache.flink.runtime.taskmanager.Task), the part that runs a
//! [`StreamTask`] and ends it: the execution state, `failExternally` (the first failure wins),
//! `cancelExecution`, the `TaskCanceler` that runs `StreamTask.cancel()`, and the end of
//! `doRun`: the invokable's cleanup (its mailbox closes), the final state, and
//! `releaseResources`, which closes the input gates.
//!
//! Threads: the task thread runs [`Task::run`] (or, stepped, [`Task::load_invokable`] and
//! [`Task::after_invoke`]); any thread may call [`Task::fail_externally`] (the channel-IO
//! thread, through `StreamTask.handleAsyncException`) and [`Task::cancel_execution`] (the
//! JobManager's RPC). Each starts a `TaskCanceler` on the canceler executor (Flink: a new thread
//! per canceler). Locks: the state lock is a leaf; no canceler, invokable or gate call runs under
//! it.

use serde::{Deserialize, Serialize};

use crate::error::{ChannelError, Result};
use crate::executor::Executor;
use crate::input_gate::IndexedInputGate;
use crate::stream_task::{AsyncExceptionHandler, CheckpointingConfig, StreamTask, StreamTaskConfig};
use crate::sync::{Arc, Mutex};

/// `ExecutionState`, from the moment the task runs its invokable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ExecutionState {
    /// INITIALIZING or RUNNING: `invoke` runs (or is about to).
    Running,
    /// `cancelExecution()`: the invokable is being canceled.
    Canceling,
    /// Canceled: terminal.
    Canceled,
    /// Failed, the cause recorded: terminal.
    Failed,
    /// `invoke` returned: terminal.
    Finished,
}

impl ExecutionState {
    /// `isTerminal()`.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            ExecutionState::Canceled | ExecutionState::Failed | ExecutionState::Finished
        )
    }
}

/// A read-only view of the task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskSnapshot {
    /// `executionState`.
    pub execution_state: ExecutionState,
    /// `failureCause`, once FAILED.
    pub failure_cause: Option<ChannelError>,
    /// `releaseResources` ran.
    pub released: bool,
}

#[derive(Debug)]
struct State {
    execution_state: ExecutionState,
    failure_cause: Option<ChannelError>,
    released: bool,
}

struct Shared {
    state: Mutex<State>,
    invokable: Mutex<Option<Arc<StreamTask>>>,
    input_gates: Mutex<Vec<Arc<dyn IndexedInputGate>>>,
    canceler_executor: Arc<dyn Executor>,
}

impl Shared {
    /// `cancelOrFailAndCancelInvokable(target, cause)`: from RUNNING only, the state moves to
    /// `target` (FAILED records `cause`), and a `TaskCanceler` runs `invokable.cancel()`. A task
    /// already canceling, failed, canceled or finished ignores it: the first cause wins.
    fn cancel_or_fail_and_cancel_invokable(&self, target: ExecutionState, cause: Option<ChannelError>) {
        {
            let mut state = self.state.lock();
            if state.execution_state != ExecutionState::Running {
                return;
            }
            state.execution_state = target;
            state.failure_cause = cause;
        }
        if let Some(invokable) = self.invokable.lock().clone() {
            // The TaskCanceler.
            self.canceler_executor.execute(Box::new(move || invokable.cancel()));
        }
    }
}

/// `StreamTaskAsyncExceptionHandler`: `environment.failExternally(new AsynchronousException(..))`.
/// It holds the task weakly: the task holds its invokable.
struct FailExternally(std::sync::Weak<Shared>);

impl AsyncExceptionHandler for FailExternally {
    fn handle_async_exception(&self, message: &str, cause: ChannelError) {
        if let Some(shared) = self.0.upgrade() {
            shared.cancel_or_fail_and_cancel_invokable(
                ExecutionState::Failed,
                Some(ChannelError::Asynchronous {
                    message: message.to_owned(),
                    cause: Box::new(cause),
                }),
            );
        }
    }
}

/// Flink's `Task`: runs one [`StreamTask`] and ends it. Clones are the same task.
#[derive(Clone)]
pub struct Task {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Task {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Task")
            .field("state", &*self.shared.state.lock())
            .finish()
    }
}

impl Task {
    /// A task in state RUNNING whose `TaskCanceler`s run on `canceler_executor` (Flink starts a
    /// thread for each: [`crate::executor::ThreadPerTaskExecutor`]).
    pub fn new(canceler_executor: Arc<dyn Executor>) -> Self {
        Task {
            shared: Arc::new(Shared {
                state: Mutex::new(State {
                    execution_state: ExecutionState::Running,
                    failure_cause: None,
                    released: false,
                }),
                invokable: Mutex::new(None),
                input_gates: Mutex::new(Vec::new()),
                canceler_executor,
            }),
        }
    }

    /// `loadAndInstantiateInvokable`, on the task thread (the invokable's mailbox thread): a
    /// [`StreamTask`] whose asynchronous exceptions fail this task. The task keeps the input
    /// gates, which `releaseResources` closes.
    pub fn load_invokable(&self, config: StreamTaskConfig) -> Arc<StreamTask> {
        self.load_invokable_with_checkpointing(config, CheckpointingConfig::default())
    }

    /// [`Self::load_invokable`] of a task with `checkpointing`.
    pub fn load_invokable_with_checkpointing(
        &self,
        config: StreamTaskConfig,
        checkpointing: CheckpointingConfig,
    ) -> Arc<StreamTask> {
        *self.shared.input_gates.lock() = config.gates.clone();
        let handler: Arc<dyn AsyncExceptionHandler> = Arc::new(FailExternally(Arc::downgrade(&self.shared)));
        let invokable = Arc::new(StreamTask::with_checkpointing(config, checkpointing, Some(handler)));
        *self.shared.invokable.lock() = Some(Arc::clone(&invokable));
        invokable
    }

    /// The invokable, once loaded.
    pub fn invokable(&self) -> Option<Arc<StreamTask>> {
        self.shared.invokable.lock().clone()
    }

    /// `Task.run()` / `doRun()` on the calling thread: loads the invokable, `invoke()`s it, then
    /// ends the task ([`Self::after_invoke`]). Returns what `invoke` returned; the task's final
    /// state is [`Self::execution_state`] (with [`Self::failure_cause`]).
    pub fn run(&self, config: StreamTaskConfig) -> Result<()> {
        let invokable = self.load_invokable(config);
        let result = invokable.invoke();
        self.after_invoke(&result);
        result
    }

    /// The end of `doRun` once `invoke` ended with `invoke_result`: `invokable.cleanUp` closes
    /// the mailbox (its mails dropped); the final state (a normal return: FINISHED, or CANCELED
    /// while canceling; an exception: FAILED with it, CANCELED for a `CancelTaskException` or
    /// while canceling; FAILED already: unchanged, its cause kept); then `releaseResources`
    /// closes every input gate, recycling the buffers their channels hold.
    pub fn after_invoke(&self, invoke_result: &Result<()>) {
        if let Some(invokable) = self.invokable() {
            invokable.clean_up();
        }
        {
            let mut state = self.shared.state.lock();
            let (next, cause) = match (state.execution_state, invoke_result) {
                (ExecutionState::Running, Ok(())) => (ExecutionState::Finished, None),
                (ExecutionState::Running, Err(e)) if e.is_cancel_task() => (ExecutionState::Canceled, None),
                (ExecutionState::Running, Err(e)) => (ExecutionState::Failed, Some(e.clone())),
                (ExecutionState::Canceling, _) => (ExecutionState::Canceled, None),
                (current, _) => (current, state.failure_cause.clone()),
            };
            state.execution_state = next;
            state.failure_cause = cause;
        }
        self.release_resources();
    }

    /// `releaseResources()`: closes every input gate (a gate that fails to close is skipped, as
    /// Flink logs it and goes on).
    fn release_resources(&self) {
        let gates = self.shared.input_gates.lock().clone();
        for gate in gates {
            let _logged = gate.close();
        }
        self.shared.state.lock().released = true;
    }

    /// `failExternally(cause)`: from RUNNING, FAILED with `cause`, and the invokable canceled.
    pub fn fail_externally(&self, cause: ChannelError) {
        self.shared
            .cancel_or_fail_and_cancel_invokable(ExecutionState::Failed, Some(cause));
    }

    /// `cancelExecution()`: from RUNNING, CANCELING, and the invokable canceled.
    pub fn cancel_execution(&self) {
        self.shared
            .cancel_or_fail_and_cancel_invokable(ExecutionState::Canceling, None);
    }

    /// `getExecutionState()`.
    pub fn execution_state(&self) -> ExecutionState {
        self.shared.state.lock().execution_state
    }

    /// `getFailureCause()`.
    pub fn failure_cause(&self) -> Option<ChannelError> {
        self.shared.state.lock().failure_cause.clone()
    }

    /// A read-only view.
    pub fn snapshot(&self) -> TaskSnapshot {
        let state = self.shared.state.lock();
        TaskSnapshot {
            execution_state: state.execution_state,
            failure_cause: state.failure_cause.clone(),
            released: state.released,
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::executor::Runnable;
    use crate::input_gate::SequentialChannelStateReader;
    use crate::stream_input_processor::InputSelection;
    use crate::stream_task::DiscardingOutput;

    #[derive(Default)]
    struct Held(Mutex<Vec<Runnable>>);

    impl Executor for Held {
        fn execute(&self, runnable: Runnable) {
            self.0.lock().push(runnable);
        }
    }

    struct NoState;

    impl SequentialChannelStateReader for NoState {
        fn read_input_data(&self, _: &dyn IndexedInputGate) -> Result<()> {
            Ok(())
        }
    }

    fn source(cancelers: &Arc<Held>) -> (Task, Arc<StreamTask>) {
        let task = Task::new(Arc::clone(cancelers) as Arc<dyn Executor>);
        let invokable = task.load_invokable(StreamTaskConfig {
            output: Arc::new(DiscardingOutput),
            gates: Vec::new(),
            selection: InputSelection::All,
            checkpointing_during_recovery: false,
            reader: Arc::new(NoState),
            channel_io_executor: Arc::new(Held::default()),
        });
        (task, invokable)
    }

    #[test]
    fn the_first_failure_wins_and_survives_invokes_cancel_task_exception() {
        let cancelers = Arc::new(Held::default());
        let (task, invokable) = source(&cancelers);
        task.fail_externally(ChannelError::Io("first".into()));
        task.fail_externally(ChannelError::Io("second".into()));
        task.cancel_execution();
        assert_eq!(task.execution_state(), ExecutionState::Failed);
        assert_eq!(task.failure_cause(), Some(ChannelError::Io("first".into())));
        let canceler = {
            let mut held = cancelers.0.lock();
            assert_eq!(held.len(), 1, "one TaskCanceler");
            held.pop().unwrap()
        };
        canceler();
        assert!(invokable.is_canceled());
        assert_eq!(
            invokable.mailbox_processor().mailbox().descriptions(),
            vec!["poison mail"]
        );
        task.after_invoke(&Err(ChannelError::Released("StreamTask was canceled".into())));
        let snapshot = task.snapshot();
        assert_eq!(snapshot.execution_state, ExecutionState::Failed);
        assert_eq!(snapshot.failure_cause, Some(ChannelError::Io("first".into())));
        assert!(snapshot.released);
        assert!(invokable.mailbox_processor().mailbox().is_closed());
        assert!(invokable.mailbox_processor().mailbox().descriptions().is_empty());
    }

    #[test]
    fn a_canceled_task_ends_canceled_and_a_cancel_task_exception_is_no_failure() {
        let cancelers = Arc::new(Held::default());
        let (task, _) = source(&cancelers);
        task.cancel_execution();
        assert_eq!(task.execution_state(), ExecutionState::Canceling);
        task.after_invoke(&Ok(()));
        assert_eq!(task.execution_state(), ExecutionState::Canceled);

        let (task, _) = source(&cancelers);
        task.after_invoke(&Err(ChannelError::Released("released".into())));
        assert_eq!(task.execution_state(), ExecutionState::Canceled);
        assert_eq!(task.failure_cause(), None);

        let (task, _) = source(&cancelers);
        task.after_invoke(&Err(ChannelError::Io("thrown".into())));
        assert_eq!(task.failure_cause(), Some(ChannelError::Io("thrown".into())));
        let (task, _) = source(&cancelers);
        task.after_invoke(&Ok(()));
        assert_eq!(task.execution_state(), ExecutionState::Finished);
    }
}
