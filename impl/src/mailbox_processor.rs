//! Mirrors Flink's `MailboxProcessor` with its `TaskMailbox`, `MailboxExecutor` and
//! `DefaultActionSuspension`: the task thread's loop that runs mails and, whenever there is none,
//! the default action (`StreamTask.processInput`).
//!
//! Control mails (`suspend()`, a suspension's `resume()` from another thread) go to the head of
//! the mailbox; `MailboxExecutor.execute` appends. While the default action is suspended the loop
//! blocks on the mailbox. A suspend mail makes the running loop return. `close()` (the task's
//! cleanup) drops the queued mails, and every later mail is rejected.
//!
//! Threads: the mailbox thread (the one that created the mailbox) runs mails and the default
//! action; any thread may put mails. Locks: the mailbox's queue lock and the processor's control
//! lock are leaves, and no mail runs under either.

use std::collections::VecDeque;
use std::fmt;
use std::thread::ThreadId;

use crate::error::{ChannelError, Result};
use crate::sync::{Arc, Condvar, Mutex};

/// A unit of work for the mailbox thread: Flink's `Mail`, with its description.
pub struct Mail {
    /// What it does (Flink's `descriptionFormat`), shown in snapshots and reports.
    pub description: String,
    run: Box<dyn FnOnce() -> Result<()> + Send>,
}

impl fmt::Debug for Mail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Mail").field(&self.description).finish()
    }
}

impl Mail {
    /// A mail that runs `run`.
    pub fn new(description: impl Into<String>, run: impl FnOnce() -> Result<()> + Send + 'static) -> Self {
        Mail {
            description: description.into(),
            run: Box::new(run),
        }
    }
}

#[derive(Debug, Default)]
struct Queue {
    mails: VecDeque<Mail>,
    /// `State.CLOSED`: mails are rejected.
    closed: bool,
}

fn rejected() -> ChannelError {
    ChannelError::MailboxClosed(
        "Mailbox is in state CLOSED, but is required to be in state OPEN for put operations.".into(),
    )
}

/// Flink's `TaskMailbox`: a queue of mails, control mails first.
#[derive(Debug)]
pub struct TaskMailbox {
    queue: Mutex<Queue>,
    not_empty: Condvar,
    mailbox_thread: ThreadId,
}

impl TaskMailbox {
    /// A mailbox whose mailbox thread is the calling thread.
    pub fn new() -> Self {
        TaskMailbox {
            queue: Mutex::new(Queue::default()),
            not_empty: Condvar::new(),
            mailbox_thread: std::thread::current().id(),
        }
    }

    /// `isMailboxThread()`.
    pub fn is_mailbox_thread(&self) -> bool {
        std::thread::current().id() == self.mailbox_thread
    }

    /// `put(mail)`: at the tail; a closed mailbox rejects it (the mail is dropped).
    pub fn put(&self, mail: Mail) -> Result<()> {
        let mut queue = self.queue.lock();
        if queue.closed {
            drop(queue);
            return Err(rejected());
        }
        queue.mails.push_back(mail);
        drop(queue);
        self.not_empty.notify_all();
        Ok(())
    }

    /// `putFirst(mail)`: a control mail, ahead of every other; a closed mailbox rejects it.
    pub fn put_first(&self, mail: Mail) -> Result<()> {
        let mut queue = self.queue.lock();
        if queue.closed {
            drop(queue);
            return Err(rejected());
        }
        queue.mails.push_front(mail);
        drop(queue);
        self.not_empty.notify_all();
        Ok(())
    }

    /// `tryTake`: the head mail, if any.
    pub fn try_take(&self) -> Option<Mail> {
        self.queue.lock().mails.pop_front()
    }

    /// `take`: blocks until a mail is there.
    pub fn take(&self) -> Mail {
        let mut queue = self.queue.lock();
        loop {
            if let Some(mail) = queue.mails.pop_front() {
                return mail;
            }
            queue = self.not_empty.wait(queue);
        }
    }

    /// `hasMail()`.
    pub fn has_mail(&self) -> bool {
        !self.queue.lock().mails.is_empty()
    }

    /// `close()`: the queued mails are dropped, and later ones rejected.
    pub fn close(&self) {
        let dropped = {
            let mut queue = self.queue.lock();
            queue.closed = true;
            std::mem::take(&mut queue.mails)
        };
        // Outside the lock: a mail's closure may hold what its drop releases.
        drop(dropped);
        self.not_empty.notify_all();
    }

    /// Whether `close()` ran.
    pub fn is_closed(&self) -> bool {
        self.queue.lock().closed
    }

    /// The queued mails' descriptions, head first.
    pub fn descriptions(&self) -> Vec<String> {
        self.queue.lock().mails.iter().map(|m| m.description.clone()).collect()
    }
}

impl Default for TaskMailbox {
    fn default() -> Self {
        Self::new()
    }
}

#[derive(Debug, Default)]
struct Control {
    /// `suspended`: the running loop returns before its next turn.
    suspended: bool,
    /// `suspendedDefaultAction`: the suspension in force, by id.
    suspended_default_action: Option<u64>,
    next_suspension: u64,
}

#[derive(Debug)]
struct Shared {
    mailbox: TaskMailbox,
    control: Mutex<Control>,
}

/// Flink's `MailboxProcessor`.
#[derive(Debug, Clone)]
pub struct MailboxProcessor {
    shared: Arc<Shared>,
}

/// Flink's `MailboxExecutor`: how other code puts mails.
#[derive(Debug, Clone)]
pub struct MailboxExecutor {
    shared: Arc<Shared>,
}

impl MailboxExecutor {
    /// `execute(runnable, description)`: a mail at the tail; `RejectedExecutionException`
    /// ([`ChannelError::MailboxClosed`]) once the mailbox is closed.
    pub fn execute(
        &self,
        description: impl Into<String>,
        run: impl FnOnce() -> Result<()> + Send + 'static,
    ) -> Result<()> {
        self.shared.mailbox.put(Mail::new(description, run))
    }
}

/// Flink's `MailboxDefaultAction.Suspension` (`DefaultActionSuspension`): resuming it lifts the
/// suspension it stands for, and only that one.
#[derive(Debug, Clone)]
pub struct DefaultActionSuspension {
    shared: Arc<Shared>,
    id: u64,
}

impl DefaultActionSuspension {
    /// `resume()`: on the mailbox thread at once, from any other thread as a control mail
    /// (which a closed mailbox rejects: the task has ended, there is nothing to resume).
    pub fn resume(&self) {
        if self.shared.mailbox.is_mailbox_thread() {
            self.resume_internal();
        } else {
            let this = self.clone();
            let _rejected_once_closed = self
                .shared
                .mailbox
                .put_first(Mail::new("resume default action", move || {
                    this.resume_internal();
                    Ok(())
                }));
        }
    }

    fn resume_internal(&self) {
        let mut control = self.shared.control.lock();
        // A stale resume (of a suspension already lifted or replaced) does nothing.
        if control.suspended_default_action == Some(self.id) {
            control.suspended_default_action = None;
        }
    }
}

/// Flink's `MailboxDefaultAction.Controller`, handed to the default action.
#[derive(Debug)]
pub struct MailboxController<'a> {
    processor: &'a MailboxProcessor,
}

impl MailboxController<'_> {
    /// `suspendDefaultAction()`: the loop stops invoking the default action until the returned
    /// suspension is resumed.
    pub fn suspend_default_action(&self) -> DefaultActionSuspension {
        self.processor.suspend_default_action()
    }
}

impl Default for MailboxProcessor {
    fn default() -> Self {
        Self::new()
    }
}

impl MailboxProcessor {
    /// A processor whose mailbox thread is the calling thread.
    pub fn new() -> Self {
        MailboxProcessor {
            shared: Arc::new(Shared {
                mailbox: TaskMailbox::new(),
                control: Mutex::new(Control::default()),
            }),
        }
    }

    /// `getMainMailboxExecutor()`.
    pub fn main_mailbox_executor(&self) -> MailboxExecutor {
        MailboxExecutor {
            shared: Arc::clone(&self.shared),
        }
    }

    /// The mailbox.
    pub fn mailbox(&self) -> &TaskMailbox {
        &self.shared.mailbox
    }

    fn suspend_default_action(&self) -> DefaultActionSuspension {
        let mut control = self.shared.control.lock();
        let id = control.next_suspension;
        control.next_suspension += 1;
        control.suspended_default_action = Some(id);
        DefaultActionSuspension {
            shared: Arc::clone(&self.shared),
            id,
        }
    }

    /// `suspend()`: a control mail (Flink's poison mail) that makes the running loop return;
    /// `sendPoisonMail` sends it only while the mailbox is open.
    pub fn suspend(&self) {
        let shared = Arc::clone(&self.shared);
        let _not_sent_once_closed = self.shared.mailbox.put_first(Mail::new("poison mail", move || {
            shared.control.lock().suspended = true;
            Ok(())
        }));
    }

    /// `allActionsCompleted()` (`StreamTask.cancel`): the same poison mail as [`Self::suspend`].
    pub fn all_actions_completed(&self) {
        self.suspend();
    }

    /// `close()`: the mailbox closes; its queued mails are dropped and later ones rejected.
    pub fn close(&self) {
        self.shared.mailbox.close();
    }

    /// `isDefaultActionAvailable()`.
    pub fn is_default_action_available(&self) -> bool {
        self.shared.control.lock().suspended_default_action.is_none()
    }

    /// Whether the running loop goes on (`isNextLoopPossible()`).
    pub fn is_next_loop_possible(&self) -> bool {
        !self.shared.control.lock().suspended
    }

    /// The start of `runMailboxLoop()`: a loop that a suspend mail ended may run again.
    pub fn begin_loop(&self) {
        self.shared.control.lock().suspended = false;
    }

    /// Runs the head mail if there is one (the unit of `processMail`); returns whether one ran.
    /// Tests step the loop with it and [`Self::run_default_action`], as Flink's tests use
    /// `runMailboxStep()`.
    pub fn run_single_mail(&self) -> Result<bool> {
        match self.shared.mailbox.try_take() {
            Some(mail) => (mail.run)().map(|()| true),
            None => Ok(false),
        }
    }

    /// One invocation of the default action.
    pub fn run_default_action(&self, default_action: &dyn Fn(&MailboxController) -> Result<()>) -> Result<()> {
        default_action(&MailboxController { processor: self })
    }

    /// `runMailboxLoop()`: runs mails and the default action until a suspend mail runs. With the
    /// default action suspended it blocks on the mailbox.
    pub fn run_mailbox_loop(&self, default_action: &dyn Fn(&MailboxController) -> Result<()>) -> Result<()> {
        self.begin_loop();
        while self.is_next_loop_possible() {
            // processMail: every mail there is, then, while the default action is suspended,
            // block for more.
            while self.is_next_loop_possible() && self.run_single_mail()? {}
            while self.is_next_loop_possible() && !self.is_default_action_available() {
                (self.shared.mailbox.take().run)()?;
            }
            if self.is_next_loop_possible() {
                self.run_default_action(default_action)?;
            }
        }
        Ok(())
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn control_mails_go_ahead_and_a_suspend_mail_ends_the_loop() {
        let processor = MailboxProcessor::new();
        let executor = processor.main_mailbox_executor();
        executor.execute("first", || Ok(())).unwrap();
        processor.suspend();
        assert_eq!(processor.mailbox().descriptions(), vec!["poison mail", "first"]);
        let runs = AtomicUsize::new(0);
        processor
            .run_mailbox_loop(&|_| {
                runs.fetch_add(1, Ordering::SeqCst);
                Ok(())
            })
            .unwrap();
        assert_eq!(runs.load(Ordering::SeqCst), 0, "the poison mail ran first");
        assert_eq!(processor.mailbox().descriptions(), vec!["first"]);
    }

    #[test]
    fn a_suspended_default_action_waits_for_its_own_resume() {
        let processor = MailboxProcessor::new();
        let held = std::sync::Mutex::new(Vec::new());
        processor
            .run_default_action(&|c| {
                held.lock().unwrap().push(c.suspend_default_action());
                Ok(())
            })
            .unwrap();
        let first = held.lock().unwrap().pop().unwrap();
        let second = processor.suspend_default_action();
        first.resume();
        assert!(!processor.is_default_action_available(), "a stale resume does nothing");
        second.resume();
        assert!(
            processor.is_default_action_available(),
            "resumed on the mailbox thread at once"
        );
    }

    #[test]
    fn a_resume_from_another_thread_is_a_control_mail() {
        let processor = MailboxProcessor::new();
        processor
            .main_mailbox_executor()
            .execute("ordinary", || Ok(()))
            .unwrap();
        let suspension = processor.suspend_default_action();
        std::thread::spawn(move || suspension.resume()).join().unwrap();
        assert!(!processor.is_default_action_available());
        assert_eq!(
            processor.mailbox().descriptions(),
            vec!["resume default action", "ordinary"]
        );
        assert!(processor.run_single_mail().unwrap());
        assert!(processor.is_default_action_available());
    }

    #[test]
    fn a_closed_mailbox_drops_its_mails_and_rejects_later_ones() {
        let processor = MailboxProcessor::new();
        let executor = processor.main_mailbox_executor();
        executor.execute("queued", || Ok(())).unwrap();
        processor.close();
        assert!(processor.mailbox().descriptions().is_empty());
        assert!(matches!(
            executor.execute("late", || Ok(())),
            Err(ChannelError::MailboxClosed(_))
        ));
        processor.all_actions_completed();
        assert!(!processor.mailbox().has_mail(), "no poison mail for a closed mailbox");
    }
}
