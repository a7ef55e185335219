//! Java's `CompletableFuture<Void>`, the part Flink's recovery code uses: `complete`,
//! `completeExceptionally`, `isDone`, `join`, the dependent actions `thenRun` and
//! `whenComplete`, and `allOf`.
//!
//! A dependent action runs on the thread that completes the future, or at once on the
//! registering thread if the future is already done, as in Java. A thread may install a
//! dependent-action hook ([`set_thread_dependent_hook`]) that is handed the action instead: the
//! conformance suite uses it to run each dependent action as a step of its own, which is the
//! task-level model's view (a dependent action may lag behind the completion that made it due).
//! `allOf`'s own bookkeeping is not a dependent action: it completes on the thread that completes
//! the last input, hook or not.

use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::fmt;

use crate::error::{ChannelError, Result};
use crate::sync::{Arc, Condvar, Mutex};

/// The state of a [`CompletableFuture`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum FutureStatus {
    /// Not completed.
    Pending,
    /// Completed normally.
    Completed,
    /// Completed exceptionally with this cause (for a channel's state-consumed future:
    /// `CancelTaskException`, the channel was released; for the task's recovery future: the
    /// exception of the stage that failed).
    Failed(ChannelError),
}

/// A dependent action: what to run, and a description for reports (Flink's mail descriptions
/// play the same part).
pub struct DependentAction {
    /// What it does, e.g. `thenRun(requestPartitions of gate 1)`.
    pub description: String,
    run: Box<dyn FnOnce() + Send>,
}

impl DependentAction {
    /// Runs it.
    pub fn run(self) {
        (self.run)()
    }
}

impl fmt::Debug for DependentAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("DependentAction").field(&self.description).finish()
    }
}

type DependentHook = Box<dyn Fn(DependentAction)>;

thread_local! {
    static DEPENDENT_HOOK: RefCell<Option<DependentHook>> = const { RefCell::new(None) };
}

/// Installs (or with `None` removes) the calling thread's dependent-action hook: every dependent
/// action that becomes due on this thread is handed to it instead of running.
pub fn set_thread_dependent_hook(hook: Option<Box<dyn Fn(DependentAction)>>) {
    DEPENDENT_HOOK.with(|h| *h.borrow_mut() = hook);
}

fn run_dependent(action: DependentAction) {
    #[cfg(not(loom))]
    let action = DEPENDENT_HOOK.with(|h| match h.borrow().as_ref() {
        Some(hook) => {
            hook(action);
            None
        }
        None => Some(action),
    });
    #[cfg(loom)]
    let action = Some(action);
    if let Some(action) = action {
        action.run();
    }
}

enum Callback {
    /// A dependent action, run on normal completion only (`thenRun`) or always (`whenComplete`).
    /// On an exceptional completion a `thenRun` is still due (Java's `UniRun` completes its own
    /// stage exceptionally on the completing thread) but its action does not run.
    Dependent { action: DependentAction, always: bool },
    /// Internal bookkeeping (`allOf`), run inline with the status.
    Inline(Box<dyn FnOnce(&FutureStatus) + Send>),
}

struct FutureState {
    status: FutureStatus,
    callbacks: Vec<Callback>,
}

struct Inner {
    state: Mutex<FutureState>,
    done: Condvar,
}

/// `CompletableFuture<Void>`: the first completion wins.
#[derive(Clone)]
pub struct CompletableFuture(Arc<Inner>);

impl fmt::Debug for CompletableFuture {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("CompletableFuture").field(&self.status()).finish()
    }
}

impl Default for CompletableFuture {
    fn default() -> Self {
        Self::new()
    }
}

impl CompletableFuture {
    /// A pending future.
    pub fn new() -> Self {
        Self(Arc::new(Inner {
            state: Mutex::new(FutureState {
                status: FutureStatus::Pending,
                callbacks: Vec::new(),
            }),
            done: Condvar::new(),
        }))
    }

    /// `CompletableFuture.completedFuture(null)`.
    pub fn completed() -> Self {
        let future = Self::new();
        future.complete();
        future
    }

    fn finish(&self, status: FutureStatus) -> bool {
        let callbacks = {
            let mut state = self.0.state.lock();
            if state.status != FutureStatus::Pending {
                return false;
            }
            state.status = status.clone();
            std::mem::take(&mut state.callbacks)
        };
        self.0.done.notify_all();
        // Outside the lock, in registration order, as Java runs its stack of dependents.
        for callback in callbacks {
            Self::fire(callback, &status);
        }
        true
    }

    fn fire(callback: Callback, status: &FutureStatus) {
        match callback {
            Callback::Dependent { action, always } => {
                if always || *status == FutureStatus::Completed {
                    run_dependent(action);
                } else {
                    run_dependent(DependentAction {
                        description: action.description,
                        run: Box::new(|| {}),
                    });
                }
            }
            Callback::Inline(f) => f(status),
        }
    }

    fn register(&self, callback: Callback) {
        let status = {
            let mut state = self.0.state.lock();
            if state.status == FutureStatus::Pending {
                state.callbacks.push(callback);
                return;
            }
            state.status.clone()
        };
        Self::fire(callback, &status);
    }

    /// `complete(null)`: false if it was already done.
    pub fn complete(&self) -> bool {
        self.finish(FutureStatus::Completed)
    }

    /// `completeExceptionally(cause)`: false if it was already done.
    pub fn complete_exceptionally(&self, cause: ChannelError) -> bool {
        self.finish(FutureStatus::Failed(cause))
    }

    /// `get()` of a done future: `Ok` if it completed normally, its cause if it failed;
    /// `None` while it is pending.
    pub fn get_now(&self) -> Option<Result<()>> {
        match self.status() {
            FutureStatus::Pending => None,
            FutureStatus::Completed => Some(Ok(())),
            FutureStatus::Failed(cause) => Some(Err(cause)),
        }
    }

    /// `isDone()`.
    pub fn is_done(&self) -> bool {
        self.status() != FutureStatus::Pending
    }

    /// The current status.
    pub fn status(&self) -> FutureStatus {
        self.0.state.lock().status.clone()
    }

    /// `join()`: blocks until done; the caller holds no lock.
    pub fn wait(&self) -> FutureStatus {
        let mut state = self.0.state.lock();
        while state.status == FutureStatus::Pending {
            state = self.0.done.wait(state);
        }
        state.status.clone()
    }

    /// `thenRun(action)`: runs `action` once the future completes normally.
    pub fn then_run(&self, description: impl Into<String>, action: impl FnOnce() + Send + 'static) {
        self.register(Callback::Dependent {
            action: DependentAction {
                description: description.into(),
                run: Box::new(action),
            },
            always: false,
        });
    }

    /// `whenComplete((v, e) -> action)`: runs `action` once the future completes, either way.
    pub fn when_complete(&self, description: impl Into<String>, action: impl FnOnce() + Send + 'static) {
        self.register(Callback::Dependent {
            action: DependentAction {
                description: description.into(),
                run: Box::new(action),
            },
            always: true,
        });
    }

    /// `CompletableFuture.allOf(futures)`: completes once every input has, exceptionally if one
    /// did; at once for no inputs.
    pub fn all_of(futures: &[CompletableFuture]) -> CompletableFuture {
        let result = CompletableFuture::new();
        if futures.is_empty() {
            result.complete();
            return result;
        }
        let remaining: Arc<Mutex<(usize, Option<ChannelError>)>> = Arc::new(Mutex::new((futures.len(), None)));
        for future in futures {
            let (result, remaining) = (result.clone(), Arc::clone(&remaining));
            future.register(Callback::Inline(Box::new(move |status| {
                let mut counts = remaining.lock();
                counts.0 -= 1;
                if let (None, FutureStatus::Failed(cause)) = (&counts.1, status) {
                    counts.1 = Some(cause.clone());
                }
                let (left, failed) = (counts.0, counts.1.clone());
                drop(counts);
                if left == 0 {
                    match failed {
                        Some(cause) => result.complete_exceptionally(cause),
                        None => result.complete(),
                    };
                }
            })));
        }
        result
    }
}

impl CompletableFuture {
    /// `CompletableFuture.anyOf(futures)`: completes with the first input to complete.
    pub fn any_of(futures: &[CompletableFuture]) -> CompletableFuture {
        let result = CompletableFuture::new();
        for future in futures {
            let result = result.clone();
            future.register(Callback::Inline(Box::new(move |status| {
                match status {
                    FutureStatus::Failed(cause) => result.complete_exceptionally(cause.clone()),
                    _ => result.complete(),
                };
            })));
        }
        result
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::mpsc;

    #[test]
    fn then_run_runs_on_completion_or_at_once_when_done() {
        let future = CompletableFuture::new();
        let (tx, rx) = mpsc::channel();
        let tx2 = tx.clone();
        future.then_run("first", move || tx.send(1).unwrap());
        assert!(rx.try_recv().is_err(), "not before completion");
        future.complete();
        assert_eq!(rx.try_recv(), Ok(1));
        future.then_run("late", move || tx2.send(2).unwrap());
        assert_eq!(rx.try_recv(), Ok(2), "registered on a done future: runs at once");
    }

    #[test]
    fn then_run_skips_an_exceptional_completion_and_when_complete_does_not() {
        let future = CompletableFuture::new();
        let (tx, rx) = mpsc::channel();
        let tx2 = tx.clone();
        future.then_run("then", move || tx.send("then").unwrap());
        future.when_complete("when", move || tx2.send("when").unwrap());
        future.complete_exceptionally(ChannelError::Io("read".into()));
        assert_eq!(rx.try_iter().collect::<Vec<_>>(), vec!["when"]);
        assert_eq!(future.get_now(), Some(Err(ChannelError::Io("read".into()))));
    }

    #[test]
    fn an_exceptional_completion_hands_a_then_run_to_the_hook_without_its_action() {
        let held = std::rc::Rc::new(RefCell::new(Vec::new()));
        let sink = held.clone();
        set_thread_dependent_hook(Some(Box::new(move |action| sink.borrow_mut().push(action))));
        let future = CompletableFuture::new();
        let (tx, rx) = mpsc::channel();
        future.then_run("then", move || tx.send(()).unwrap());
        future.complete_exceptionally(ChannelError::Io("failed".into()));
        set_thread_dependent_hook(None);
        let action = held.borrow_mut().pop().expect("the thenRun stage is due");
        assert_eq!(action.description, "then");
        action.run();
        assert!(rx.try_recv().is_err(), "its action does not run");
    }

    #[test]
    fn all_of_completes_with_its_last_input_and_fails_if_one_failed() {
        let (a, b) = (CompletableFuture::new(), CompletableFuture::new());
        let all = CompletableFuture::all_of(&[a.clone(), b.clone()]);
        a.complete();
        assert!(!all.is_done());
        b.complete();
        assert_eq!(all.status(), FutureStatus::Completed);

        let (c, d) = (CompletableFuture::new(), CompletableFuture::new());
        let all = CompletableFuture::all_of(&[c.clone(), d.clone()]);
        c.complete_exceptionally(ChannelError::Io("c".into()));
        assert!(!all.is_done(), "allOf waits for every input");
        d.complete();
        assert_eq!(all.status(), FutureStatus::Failed(ChannelError::Io("c".into())));
        assert!(CompletableFuture::all_of(&[]).is_done());
    }

    #[test]
    fn a_threads_hook_receives_the_dependent_actions_that_become_due_on_it() {
        let held = std::rc::Rc::new(RefCell::new(Vec::new()));
        let sink = held.clone();
        set_thread_dependent_hook(Some(Box::new(move |action| sink.borrow_mut().push(action))));
        let future = CompletableFuture::new();
        let (tx, rx) = mpsc::channel();
        future.then_run("deferred", move || tx.send(()).unwrap());
        let all = CompletableFuture::all_of(std::slice::from_ref(&future));
        future.complete();
        set_thread_dependent_hook(None);
        assert!(all.is_done(), "allOf's bookkeeping is not deferred");
        assert!(rx.try_recv().is_err(), "the dependent action was handed to the hook");
        let action = held.borrow_mut().pop().unwrap();
        assert_eq!(action.description, "deferred");
        action.run();
        assert_eq!(rx.try_recv(), Ok(()));
    }
}
