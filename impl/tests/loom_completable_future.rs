//! loom: the futures the task level waits on. A dependent action registered while another
//! thread completes the future runs exactly once; `allOf` completes exactly once, after its last
//! input, whichever threads complete them; and a task that finds a gate unavailable and waits on
//! its availability future is woken when a channel is queued at the same time (no lost wakeup,
//! the default action's `ResumeWrapper` always runs).
//!
//! Run: `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 cargo test -p recovery-impl --test loom_completable_future`
#![cfg(loom)]

use std::sync::Arc;

use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::thread;
use recovery_impl::completable_future::CompletableFuture;
use recovery_impl::input_channels_with_data::InputChannelsWithData;

#[test]
fn then_run_racing_complete_runs_once() {
    loom::model(|| {
        let future = CompletableFuture::new();
        let runs = Arc::new(AtomicUsize::new(0));
        let completer = {
            let future = future.clone();
            thread::spawn(move || future.complete())
        };
        let counted = Arc::clone(&runs);
        future.then_run("count", move || {
            counted.fetch_add(1, Ordering::SeqCst);
        });
        assert!(completer.join().unwrap(), "the only completion wins");
        assert_eq!(runs.load(Ordering::SeqCst), 1);
    });
}

#[test]
fn all_of_completes_once_after_both_inputs() {
    loom::model(|| {
        let (a, b) = (CompletableFuture::new(), CompletableFuture::new());
        let all = CompletableFuture::all_of(&[a.clone(), b.clone()]);
        let runs = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&runs);
        all.when_complete("count", move || {
            counted.fetch_add(1, Ordering::SeqCst);
        });
        let other = thread::spawn(move || a.complete());
        b.complete();
        other.join().unwrap();
        assert!(all.is_done());
        assert_eq!(runs.load(Ordering::SeqCst), 1);
    });
}

#[test]
fn a_task_waiting_on_gate_availability_is_woken_by_a_concurrent_notification() {
    loom::model(|| {
        let gate = InputChannelsWithData::new();
        let producer = {
            let gate = Arc::clone(&gate);
            thread::spawn(move || gate.notify_channel_non_empty(0))
        };
        let resumed = Arc::new(AtomicUsize::new(0));
        let flag = Arc::clone(&resumed);
        gate.get_available_future().then_run("ResumeWrapper", move || {
            flag.fetch_add(1, Ordering::SeqCst);
        });
        producer.join().unwrap();
        assert_eq!(resumed.load(Ordering::SeqCst), 1, "the task is resumed exactly once");
    });
}
