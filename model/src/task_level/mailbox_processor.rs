//! `MailboxProcessor`: the mailbox, the default action and its suspension. Control mails
//! (`suspend()`, a suspension's `resume()` from another thread) go to the head of the mailbox;
//! `mailboxExecutor.execute` appends. The loop runs every queued mail before each invocation
//! of the default action, and blocks on the mailbox while the default action is suspended.

use super::state::{DefaultAction, Mail, Phase, Suspension, TaskState};

/// `mainMailboxExecutor.execute(mail)`. A closed mailbox rejects it (`MailboxClosedException`),
/// which the future callback that put it swallows.
pub fn execute(s: &mut TaskState, mail: Mail) {
    if !s.mailbox_closed {
        s.mailbox.push(mail);
    }
}

/// `sendControlMail`: ahead of every ordinary mail; rejected by a closed mailbox.
pub fn send_control_mail(s: &mut TaskState, mail: Mail) {
    if !s.mailbox_closed {
        s.mailbox.insert(0, mail);
    }
}

/// `suspend()` and `allActionsCompleted()`: the running loop returns once it takes this
/// poison mail. `sendPoisonMail` sends it only to an open mailbox.
pub fn suspend(s: &mut TaskState) {
    send_control_mail(s, Mail::Suspend);
}

/// `MailboxProcessor.close()`: the queued mails are dropped.
pub fn close(s: &mut TaskState) {
    s.mailbox.clear();
    s.mailbox_closed = true;
}

/// Whether the mailbox thread runs a loop that can take mails and run the default action.
pub fn is_loop_running(s: &TaskState) -> bool {
    matches!(s.phase, Phase::RestoreLoop | Phase::MainLoop)
}

/// `DefaultActionSuspension.resumeInternal`: only the suspension the resume belongs to is
/// lifted (Flink compares `suspendedDefaultAction == this`); a stale resume does nothing.
pub fn resume(s: &mut TaskState, why: Suspension) {
    let current = match s.default_action {
        DefaultAction::InputResumeQueued => Some(Suspension::Input),
        DefaultAction::AwaitingRecovery => Some(Suspension::Recovery),
        _ => None,
    };
    if current == Some(why) {
        s.default_action = DefaultAction::Running;
    }
}
