//! Pause points: the places where a call has released a lock and is about to make the call
//! Flink makes after it (a credit announcement, handing a floating buffer back, `enableNotify`
//! after the unstash, `onSenderBacklog` after `onBuffer`'s enqueue, the drain after
//! `releaseAllResources` set `isReleased`, the drainer's take after `requestBufferBlocking`
//! was woken, the re-read of `hasPendingPriorityEvent` after a local channel's poll, the
//! listener's `notifyPriorityEvent` after `add`, the flag's clear after the view's poll of a
//! priority event). Flink's threads can be preempted exactly there.
//!
//! A thread may install a hook that is told when it reaches one; without a hook (the default)
//! reaching a point does nothing. The hook only observes: the conformance suite uses it to let
//! other threads run at that point, in the order a model trace says, before it returns. No lock
//! of this crate is held when a hook runs, but for the gate's `inputChannelsWithData` at
//! [`PausePoint::RereadPendingPriorityEvent`] and [`PausePoint::ClearPendingPriorityEvent`],
//! which Flink's poll holds too.

use std::cell::RefCell;
use std::panic::Location;

use crate::ids::BufferId;

/// A point between two critical sections of one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PausePoint {
    /// About to call `InputChannel.notifyBufferAvailable(n)` after releasing `bufferQueue`
    /// (`recycle`, the floating-buffer callback, `enableNotify`, `onSenderBacklog`).
    Announce {
        /// The credit about to be announced.
        n: usize,
        /// The index of the channel it is announced for, where the manager knows it: a
        /// floating buffer recycled by one channel may be handed to another channel's manager
        /// (the gate's `LocalBufferPool` calls its listener on the recycling thread).
        channel: Option<u32>,
    },
    /// `BufferManager.recycle` gave a floating buffer back; about to recycle it to the pool.
    ReturnFloating {
        /// The floating buffer.
        buffer: BufferId,
    },
    /// `RemoteInputChannel.onSenderBacklog(backlog)` is about to run: `onBuffer` released
    /// `receivedBuffers` (and opened `upstreamReady`), or a `BacklogAnnouncement` arrived.
    OnSenderBacklog,
    /// `RemoteInputChannel.onRecoveredStateConsumed` left recovery and unstashed; about to call
    /// `bufferManager.enableNotify()`.
    EnableNotify,
    /// `requestBufferBlocking()` was woken in `bufferQueue.wait()` with a buffer queued (or the
    /// channel released) and released the lock; about to take it (the drainer's next
    /// `requestBufferBlocking` step). Until then the buffer stays queued.
    RequestBufferBlocking,
    /// The drainer took its buffer (`requestBufferBlocking()` returned) and fills it outside
    /// every lock; about to append it with `onRecoveredStateBuffer` (the drainer's next step).
    /// Where the drainer runs is the caller's: the conformance driver's drainer stops here.
    OnRecoveredStateBuffer,
    /// `LocalInputChannel.getNextBuffer` polled a recovered element and released
    /// `recoveredBuffers`; Flink's second read of `hasPendingPriorityEvent` comes next (the
    /// fixed code makes it only when nothing was polled, so this call returns what it polled).
    /// The call runs inside the gate's turn: `inputChannelsWithData` is held here (a pause
    /// point inside a lock, as [`PausePoint::ClearPendingPriorityEvent`]), so a notification of
    /// the gate waits for the turn, and reports so to its thread's wait hook.
    RereadPendingPriorityEvent,
    /// `LocalInputChannel.pullPriorityFromSubpartitionView` polled a priority event from the
    /// view (released the subpartition's lock and ran `checkForBarrier`) and the next data type
    /// had no priority; `hasPendingPriorityEvent = false` comes next, from that stale next data
    /// type. A producer may add the next barrier and set the flag in between (docs/findings.md,
    /// the lost update). Inside the gate's turn, as [`PausePoint::RereadPendingPriorityEvent`].
    ClearPendingPriorityEvent,
    /// `PipelinedSubpartition.add` put the first priority event at the head and released its
    /// lock; about to call the listener's `notifyPriorityEvent(prioritySequenceNumber)`, which
    /// sets a local channel's `hasPendingPriorityEvent` and queues it at the gate's priority
    /// head.
    NotifyPriorityEvent,
    /// `releaseAllResources` set `isReleased`; about to release the view, the queue and the
    /// buffers. Other threads read the flag meanwhile while the queues are intact.
    ReleaseQueuedBuffers,
    /// The channel-IO thread is about to read the recovered state of one gate
    /// (`readInputData`).
    ReadInputData {
        /// The gate's index.
        gate: u32,
    },
    /// The channel-IO thread is about to call one gate's `finishReadRecoveredState()`.
    FinishReadRecoveredState {
        /// The gate's index.
        gate: u32,
    },
    /// Flag on: the channel-IO thread is about to drain one gate's fetched state into its
    /// channels (`FetchedChannelStateDrainer.drain`, one gate at a time).
    Drain {
        /// The gate's index.
        gate: u32,
    },
}

type Hook = Box<dyn Fn(PausePoint)>;
type WaitHook = Box<dyn Fn(&'static Location<'static>)>;

thread_local! {
    static HOOK: RefCell<Option<Hook>> = const { RefCell::new(None) };
    static WAIT_HOOK: RefCell<Option<WaitHook>> = const { RefCell::new(None) };
}

/// Installs (or with `None` removes) the calling thread's wait hook: it is told, with the
/// source location of the wait, each time the thread is about to park in a condition wait or a
/// latch await (Java's `monitor.wait()`, `CountDownLatch.await()`). A driver learns from it
/// that a call blocked, from the thread itself rather than from a clock.
///
/// Unlike a pause-point hook it runs with the waited-on lock held, so a notifier cannot slip in
/// between the report and the wait. It must not block or call into this crate.
pub fn set_thread_wait_hook(hook: Option<Box<dyn Fn(&'static Location<'static>)>>) {
    WAIT_HOOK.with(|h| *h.borrow_mut() = hook);
}

/// Tells the calling thread's wait hook, if any, that it is about to park at `site`.
pub(crate) fn waiting(site: &'static Location<'static>) {
    #[cfg(not(loom))]
    WAIT_HOOK.with(|h| {
        if let Some(hook) = h.borrow().as_ref() {
            hook(site);
        }
    });
    #[cfg(loom)]
    let _ = site;
}

/// Installs (or with `None` removes) the calling thread's hook.
pub fn set_thread_hook(hook: Option<Box<dyn Fn(PausePoint)>>) {
    HOOK.with(|h| *h.borrow_mut() = hook);
}

/// Tells the calling thread's hook, if any, that it reached `point`. Callers hold no lock.
/// Public for the steps this crate leaves to its caller: the drainer that fills a buffer
/// between `requestBufferBlocking()` and `onRecoveredStateBuffer` stops at
/// [`PausePoint::OnRecoveredStateBuffer`] through it.
pub fn reached(point: PausePoint) {
    #[cfg(not(loom))]
    HOOK.with(|h| {
        if let Some(hook) = h.borrow().as_ref() {
            hook(point);
        }
    });
    #[cfg(loom)]
    let _ = point;
}
