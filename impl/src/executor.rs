//! Java's `Executor`, and the single-thread `ExecutorService` `StreamTask` creates for channel IO
//! (`Executors.newSingleThreadExecutor(new ExecutorThreadFactory("channel-state-unspilling"))`).

use std::sync::mpsc;
use std::thread;

use crate::sync::Mutex;

/// A task for an executor.
pub type Runnable = Box<dyn FnOnce() + Send>;

/// `Executor.execute`.
pub trait Executor: Send + Sync {
    /// Runs `runnable` some time later, on the executor's thread.
    fn execute(&self, runnable: Runnable);
}

/// One named thread that runs its tasks in submission order. Dropping it lets the thread finish
/// what was submitted and end.
#[derive(Debug)]
pub struct SingleThreadExecutor {
    tasks: Mutex<Option<mpsc::Sender<Runnable>>>,
    thread: Mutex<Option<thread::JoinHandle<()>>>,
}

impl SingleThreadExecutor {
    /// Starts the thread, named `name`.
    pub fn spawn(name: &str) -> std::io::Result<Self> {
        let (tx, rx) = mpsc::channel::<Runnable>();
        let thread = thread::Builder::new().name(name.to_owned()).spawn(move || {
            for runnable in rx {
                runnable();
            }
        })?;
        Ok(SingleThreadExecutor {
            tasks: Mutex::new(Some(tx)),
            thread: Mutex::new(Some(thread)),
        })
    }

    /// `shutdown()` and `awaitTermination()`: runs what was submitted, then joins the thread.
    pub fn shutdown(&self) {
        self.tasks.lock().take();
        if let Some(thread) = self.thread.lock().take() {
            let _ = thread.join();
        }
    }
}

impl Executor for SingleThreadExecutor {
    fn execute(&self, runnable: Runnable) {
        if let Some(tasks) = self.tasks.lock().as_ref() {
            // The receiver lives as long as the thread; a send after it ended is dropped, as a
            // rejected task would be.
            let _ = tasks.send(runnable);
        }
    }
}

impl Drop for SingleThreadExecutor {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// An executor that starts a new named thread for each task, as Flink's `Task` starts each
/// `TaskCanceler` (`executeAsyncCallRunnable`). The threads are not joined.
#[derive(Debug)]
pub struct ThreadPerTaskExecutor {
    name: String,
}

impl ThreadPerTaskExecutor {
    /// Threads named `name`.
    pub fn new(name: &str) -> Self {
        ThreadPerTaskExecutor { name: name.to_owned() }
    }
}

impl Executor for ThreadPerTaskExecutor {
    fn execute(&self, runnable: Runnable) {
        // A thread that cannot start is a lost task, as a rejected one would be.
        let _ = thread::Builder::new().name(self.name.clone()).spawn(runnable);
    }
}
