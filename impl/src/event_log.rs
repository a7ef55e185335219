//! Event log: what the channels did, recorded inside the critical section that decided it, so
//! that the order of a channel's events is the order its locks serialised them.
//!
//! Information only, like [`pause_point`](crate::pause_point): a thread may install a
//! [`Recorder`]; without one (the default) recording costs one thread-local read and builds
//! nothing (and nothing at all under `cfg(loom)`). Events are named after the Flink methods that
//! produce them, the vocabulary of the model's actions, so that a checker can replay a log
//! through the model (the conformance suite's validation). A recorder runs under the caller's
//! lock: it must be a leaf (take no lock of this crate, call nothing back).
//!
//! A decision taken by one atomic operation rather than under a lock (`unannouncedCredit`,
//! `isReleased`) is recorded with the operation performed inside the recorder's own order
//! ([`Recorder::record_atomically`]), so that the log orders it against the events of other
//! threads exactly as the atomic's modification order does.
//!
//! Recorded (what a caller of the method can see, plus what is needed to name it):
//! - [`Event::RequestPartitions`], [`Event::ConvertRecoveredInputChannels`]:
//!   `SingleInputGate.requestPartitions` began (under `requestLock`, before any channel is
//!   converted or requested); the second when it begins by converting recovered channels.
//! - [`Event::OnRecoveredStateBuffer`], [`Event::FinishRecoveredBufferDelivery`],
//!   [`Event::InsertRecoveryCheckpointBarrierIfInRecovery`], [`Event::OnRecoveredStateConsumed`],
//!   [`Event::CheckpointStarted`], [`Event::GetNextBuffer`]: a local (`recoveredBuffers`) or
//!   remote (`receivedBuffers`) channel's calls, also on a released channel. A local channel's
//!   live and priority elements are [`Event::PollBuffer`]s of its subpartition.
//! - [`Event::OnBuffer`]: a remote channel's `onBuffer` under `receivedBuffers`.
//! - [`Event::RequestBuffer`], [`Event::RequestBufferBlocking`],
//!   [`Event::RequestBufferBlockingWait`], [`Event::ReleaseFloatingBuffers`],
//!   [`Event::RequestFloatingBuffers`], [`Event::EnableNotify`], [`Event::Recycle`],
//!   [`Event::BufferListenerNotifyBufferAvailable`], [`Event::ReleaseAllBuffers`]: a remote
//!   channel's `BufferManager`, under `bufferQueue`, with the credit it decided to announce or
//!   the floating buffer it decided to give back (where the call pauses next).
//! - [`Event::LocalBufferPoolRecycle`]: `LocalBufferPool.recycle` of a floating buffer, under
//!   the pool's lock.
//! - [`Event::NotifyBufferAvailable`], [`Event::GetAndResetUnannouncedCredit`],
//!   [`Event::ReleaseAllResources`]: the atomics of a remote channel (`unannouncedCredit`,
//!   `isReleased`); `ReleaseAllResources` of a local channel too.
//! - [`Event::ResumeConsumption`], [`Event::SendResumeConsumption`]: a remote channel's
//!   `resumeConsumption` and the Netty client's write of the message it queued (atomics).
//! - [`Event::AddCredit`]: the Netty server's view reader (thread-confined, no lock).
//! - [`Event::Add`], [`Event::PollBuffer`], [`Event::SubpartitionResumeConsumption`]:
//!   `ResultSubpartition.add` (producer), `pollBuffer` and `resumeConsumption` (a local
//!   channel's view, or a remote channel's view reader on the Netty server), under the
//!   subpartition's lock.
//! - [`Event::NotifyPriorityEvent`], [`Event::ClearPendingPriorityEvent`]: a local channel's
//!   `hasPendingPriorityEvent` set by the producer's notification and cleared by the task's
//!   pull in recovery, each with the store inside the recorder's order (atomics, as above).
//!
//! Not recorded: a `RecoveredInputChannel`'s calls and its `BufferManager`'s (and a local
//! channel's recovery `BufferManager`'s), `checkpointStopped`, `setup` and
//! `requestSubpartitions`, calls that changed nothing (a poll that found nothing, an
//! announcement of zero credit), and calls that failed before deciding anything (a double
//! recycle).

use std::cell::RefCell;
use std::sync::{Arc, Mutex, PoisonError};

use crate::error::ChannelError;
use crate::ids::{BufferId, CheckpointId};
use crate::input_channel_info::InputChannelInfo;
use crate::network_buffer::{BufferKind, BufferSnapshot, NetworkBuffer};
use crate::pause_point::PausePoint;
use crate::sync::{AtomicBool, Ordering};

/// One recorded step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// `SingleInputGate.requestPartitions(needsRecovery)` began, once per gate, with no
    /// recovered channel to convert.
    RequestPartitions {
        /// The gate's index.
        gate: u32,
    },
    /// `SingleInputGate.requestPartitions(needsRecovery)` began, once per gate, by
    /// `convertRecoveredInputChannels` (the pushes of `toInputChannel` follow as
    /// [`Event::OnRecoveredStateBuffer`]s of the same thread).
    ConvertRecoveredInputChannels {
        /// The gate's index.
        gate: u32,
    },
    /// `onRecoveredStateBuffer(buffer)` (including the sentinel `toInputChannel` pushes).
    OnRecoveredStateBuffer {
        /// The channel.
        channel: InputChannelInfo,
        /// The element offered.
        buffer: BufferSnapshot,
        /// `Ok(true)`: appended; `Ok(false)`: the channel is released and recycles it; or the
        /// `checkState` that failed.
        outcome: Result<bool, ChannelError>,
    },
    /// `finishRecoveredBufferDelivery()` after `upstreamReady`: the sentinel's append (or why
    /// not).
    FinishRecoveredBufferDelivery {
        /// The channel.
        channel: InputChannelInfo,
        /// The call's result.
        outcome: Result<(), ChannelError>,
    },
    /// `insertRecoveryCheckpointBarrierIfInRecovery(checkpointId)`.
    InsertRecoveryCheckpointBarrierIfInRecovery {
        /// The channel.
        channel: InputChannelInfo,
        /// The checkpoint.
        checkpoint_id: CheckpointId,
    },
    /// `checkpointStarted(barrier)`: what `startPersisting` was given, or why it declined.
    CheckpointStarted {
        /// The channel.
        channel: InputChannelInfo,
        /// The checkpoint.
        checkpoint_id: CheckpointId,
        /// The buffers persisted now, or the error.
        outcome: Result<Vec<BufferSnapshot>, ChannelError>,
    },
    /// `onRecoveredStateConsumed()`.
    OnRecoveredStateConsumed {
        /// The channel.
        channel: InputChannelInfo,
        /// The call's result.
        outcome: Result<(), ChannelError>,
    },
    /// `getNextBuffer()` returned an element from the channel's own queue: a local channel's
    /// recovered elements (data, `RecoveryCheckpointBarrier`, the sentinel), every element of a
    /// remote channel's `receivedBuffers`.
    GetNextBuffer {
        /// The channel.
        channel: InputChannelInfo,
        /// The element.
        buffer: BufferSnapshot,
        /// Its sequence number.
        sequence_number: i32,
    },
    /// `pollNext()` handed this element on (to the operator, or a barrier to the barrier
    /// handler): the end of the gate's turn that a channel's poll began.
    PollNext {
        /// The channel it came from.
        channel: InputChannelInfo,
        /// The element.
        buffer: BufferSnapshot,
    },
    /// `notifyPriorityEvent(seq)` reached a local channel's listener, which set
    /// `hasPendingPriorityEvent` (the producer, after the subpartition's lock).
    NotifyPriorityEvent {
        /// The channel.
        channel: InputChannelInfo,
    },
    /// `pullPriorityFromSubpartitionView()` cleared `hasPendingPriorityEvent` in recovery: the
    /// next data type it had polled from the view had no priority (the task, after the view's
    /// lock, so a producer's notification may come in between).
    ClearPendingPriorityEvent {
        /// The channel.
        channel: InputChannelInfo,
    },
    /// `ResultSubpartition.add(buffer)` accepted `buffer`.
    Add {
        /// Which subpartition ([`ResultSubpartition::event_id`](crate::result_subpartition::ResultSubpartition::event_id)).
        subpartition: usize,
        /// The element.
        buffer: BufferSnapshot,
    },
    /// `ResultSubpartition.pollBuffer()` returned `buffer`.
    PollBuffer {
        /// Which subpartition.
        subpartition: usize,
        /// The element.
        buffer: BufferSnapshot,
        /// Its sequence number.
        sequence_number: i32,
        /// The backlog after it.
        backlog: i32,
    },
    /// `RemoteInputChannel.onBuffer(buffer, sequenceNumber, backlog)`: what `receivedBuffers`
    /// decided (the `onSenderBacklog` that follows is [`Event::RequestFloatingBuffers`]).
    OnBuffer {
        /// The channel.
        channel: InputChannelInfo,
        /// The element (a data buffer: the consumer buffer it was copied into).
        buffer: BufferSnapshot,
        /// The `BufferResponse`'s sequence number.
        sequence_number: i32,
        /// The `BufferResponse`'s backlog.
        backlog: i32,
        /// `Ok(true)`: queued or stashed; `Ok(false)`: the channel is released and recycles it;
        /// or why it was rejected.
        outcome: Result<bool, ChannelError>,
    },
    /// `BufferManager.requestBuffer()` (Netty client, for an arriving data buffer).
    RequestBuffer {
        /// The channel.
        channel: InputChannelInfo,
        /// The buffer taken, if one was queued.
        buffer: Option<BufferId>,
    },
    /// `BufferManager.requestBufferBlocking()` returned (the drainer's buffer for a recovered
    /// buffer).
    RequestBufferBlocking {
        /// The channel.
        channel: InputChannelInfo,
        /// The buffer taken, or why none.
        outcome: Result<BufferId, ChannelError>,
    },
    /// `BufferManager.requestBufferBlocking()` found nothing queued and nothing in the pool (or
    /// the manager already waiting for floating buffers): registered as the pool's listener
    /// unless it was one, and about to park in `bufferQueue.wait()` (the first wait of the call
    /// only).
    RequestBufferBlockingWait {
        /// The channel.
        channel: InputChannelInfo,
    },
    /// `BufferManager.releaseFloatingBuffers()` of `onBlockingUpstream` (a channel without
    /// exclusive buffers got a blocking event): `numRequiredBuffers = 0`, the floating buffers
    /// out of the queue, recycled to the pool after the lock.
    ReleaseFloatingBuffers {
        /// The channel.
        channel: InputChannelInfo,
        /// The floating buffers taken out of the queue.
        floating: Vec<BufferId>,
    },
    /// `BufferManager.requestFloatingBuffers(numRequired)` of `onSenderBacklog`.
    RequestFloatingBuffers {
        /// The channel.
        channel: InputChannelInfo,
        /// `numRequired`: the backlog plus the initial credit.
        num_required: i32,
        /// The credit to announce after the lock (0: none).
        announce: usize,
    },
    /// `BufferManager.enableNotify()`.
    EnableNotify {
        /// The channel.
        channel: InputChannelInfo,
        /// The credit to announce after the lock, or the `checkState` that failed.
        outcome: Result<usize, ChannelError>,
    },
    /// `InputChannel.notifyBufferAvailable(numAvailableBuffers)` of a remote channel: credit
    /// added to `unannouncedCredit` (never 0).
    NotifyBufferAvailable {
        /// The channel.
        channel: InputChannelInfo,
        /// The credit announced.
        number_of_buffers: usize,
    },
    /// `getAndResetUnannouncedCredit()` (Netty client, building an `AddCredit` message).
    GetAndResetUnannouncedCredit {
        /// The channel.
        channel: InputChannelInfo,
        /// The credit taken.
        credit: i32,
        /// Whether the channel was released then (its messages are dropped).
        released: bool,
    },
    /// `RemoteInputChannel.resumeConsumption()`: the unannounced credit dropped (initial credit
    /// 0) and a `ResumeConsumption` queued on the Netty client, in one atomic step.
    ResumeConsumption {
        /// The channel.
        channel: InputChannelInfo,
    },
    /// The Netty client took the channel's queued `ResumeConsumption` to write it.
    SendResumeConsumption {
        /// The channel.
        channel: InputChannelInfo,
        /// Whether it was written (a released channel's is dropped).
        sent: bool,
    },
    /// `PipelinedSubpartition.resumeConsumption()`, under its lock: a local consumer's (task
    /// thread) or a remote one's view reader (Netty server, `PartitionRequestQueue`).
    SubpartitionResumeConsumption {
        /// Which subpartition.
        subpartition: usize,
        /// `Ok`: unblocked; or the `checkState` that failed (it was not blocked).
        outcome: Result<(), ChannelError>,
    },
    /// `CreditBasedSequenceNumberingViewReader.addCredit(creditDeltas)` (Netty server).
    AddCredit {
        /// The requesting channel.
        receiver: InputChannelInfo,
        /// The credit added.
        credit: i32,
    },
    /// `BufferManager.recycle(segment)` of an exclusive segment.
    Recycle {
        /// The channel.
        channel: InputChannelInfo,
        /// The segment.
        buffer: BufferId,
        /// Where the call pauses after the lock: announcing one credit, or giving a floating
        /// buffer back (`None`: neither, e.g. notification off or the channel released).
        then: Option<PausePoint>,
    },
    /// `LocalBufferPool.recycle(segment)` of a floating buffer.
    LocalBufferPoolRecycle {
        /// The segment.
        buffer: BufferId,
        /// Whether it is offered to a waiting `BufferListener` (after the lock; otherwise it
        /// stays in the pool or goes to the global pool).
        to_listener: bool,
    },
    /// `BufferManager.notifyBufferAvailable(Buffer)`: the `BufferListener` callback of the
    /// `LocalBufferPool`, under `bufferQueue`.
    BufferListenerNotifyBufferAvailable {
        /// The channel.
        channel: InputChannelInfo,
        /// The floating buffer offered.
        buffer: BufferId,
        /// Whether the manager took it (otherwise it goes back to the pool).
        taken: bool,
        /// The credit to announce after the lock (0: none).
        announce: usize,
    },
    /// `releaseAllResources()` set `isReleased` (the first call only); the rest of the call,
    /// [`Event::ReleaseQueuedBuffers`] and (with a buffer manager) [`Event::ReleaseAllBuffers`],
    /// follows.
    ReleaseAllResources {
        /// The channel.
        channel: InputChannelInfo,
    },
    /// `releaseAllResources()` drained the channel's queue (and its stash; a local channel's
    /// view went in the same critical section): from here no poll returns anything.
    ReleaseQueuedBuffers {
        /// The channel.
        channel: InputChannelInfo,
    },
    /// `BufferManager.releaseAllBuffers(buffers)`: the queued buffers leave the manager.
    ReleaseAllBuffers {
        /// The channel.
        channel: InputChannelInfo,
        /// Segments back to the global pool (drained and queued exclusive ones).
        exclusive: Vec<BufferId>,
        /// Queued floating buffers, recycled to the pool after the lock.
        floating: Vec<BufferId>,
    },
}

/// Receives events. Runs under the recording component's lock.
pub trait Recorder: Send + Sync {
    /// Called once per event, on the thread that produced it.
    fn record(&self, event: Event);

    /// Runs `step`, one atomic operation of the calling component that returns the event it
    /// decided (if any), and records that event, as one step of this recorder's order: a
    /// recorder that orders its events puts the operation inside that order. `step` takes no
    /// lock.
    fn record_atomically(&self, step: &mut dyn FnMut() -> Option<Event>);
}

/// One event of an [`EventLog`] and the thread that produced it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recorded {
    /// The recording thread's name (or its id when unnamed).
    pub thread: String,
    /// The event.
    pub event: Event,
}

/// A [`Recorder`] keeping every event in one total order (its own lock, a leaf), consistent
/// with the order of each lock under which events are recorded.
#[derive(Debug, Default)]
pub struct EventLog {
    events: Mutex<Vec<Recorded>>,
}

impl EventLog {
    /// An empty log.
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// The events so far, in recorded order.
    pub fn events(&self) -> Vec<Recorded> {
        self.events.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

fn thread_name() -> String {
    let current = std::thread::current();
    current
        .name()
        .map_or_else(|| format!("{:?}", current.id()), str::to_string)
}

impl Recorder for EventLog {
    fn record(&self, event: Event) {
        let thread = thread_name();
        self.events
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Recorded { thread, event });
    }

    /// The operation runs under the log's lock, so the log's order is the operation's order.
    fn record_atomically(&self, step: &mut dyn FnMut() -> Option<Event>) {
        let thread = thread_name();
        let mut events = self.events.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(event) = step() {
            events.push(Recorded { thread, event });
        }
    }
}

thread_local! {
    static RECORDER: RefCell<Option<Arc<dyn Recorder>>> = const { RefCell::new(None) };
}

/// Installs (or with `None` removes) the calling thread's recorder.
pub fn set_thread_recorder(recorder: Option<Arc<dyn Recorder>>) {
    RECORDER.with(|r| *r.borrow_mut() = recorder);
}

/// Records the event `make` builds, if the calling thread has a recorder.
pub(crate) fn record(make: impl FnOnce() -> Event) {
    #[cfg(not(loom))]
    RECORDER.with(|r| {
        if let Some(recorder) = r.borrow().as_ref() {
            recorder.record(make());
        }
    });
    #[cfg(loom)]
    let _ = make;
}

/// Performs the atomic operation `op` and, if the calling thread has a recorder, records the
/// event `make` builds from its result, `op` running inside the recorder's order
/// ([`Recorder::record_atomically`]). Without a recorder (and under loom) it is just `op()`.
pub(crate) fn record_atomic<R>(op: impl FnOnce() -> R, make: impl FnOnce(&R) -> Option<Event>) -> R {
    #[cfg(not(loom))]
    {
        let recorder = RECORDER.with(|r| r.borrow().clone());
        if let Some(recorder) = recorder {
            let (mut op, mut make, mut result) = (Some(op), Some(make), None);
            recorder.record_atomically(&mut || {
                let r = (op.take().expect("runs once"))();
                let event = (make.take().expect("runs once"))(&r);
                result = Some(r);
                event
            });
            return result.expect("a recorder runs the operation");
        }
    }
    #[cfg(loom)]
    let _ = make;
    op()
}

/// A physical channel's append of a recovered element (`offerRecoveredBuffer` of a local
/// channel, `appendRecoveredBuffer` of a remote one): whether its queue was empty before, or the
/// element back with the `checkState` that refused it.
pub(crate) type Appended = Result<bool, (NetworkBuffer, ChannelError)>;

// The three recovered-state calls below are the same in `LocalInputChannel` and
// `RemoteInputChannel` but for the queue they append to: each runs under that channel's lock,
// and `releaseAllResources` sets `released` outside it, so the read of the flag and the append
// are one step of the log's order, as the release's store is ([`record_atomic`]).

/// `onRecoveredStateBuffer(buffer)`, recorded: `append` queues `buffer` unless the channel is
/// released. Returns whether the queue was empty, or the buffer to recycle with the error, if
/// any, to throw.
pub(crate) fn on_recovered_state_buffer(
    channel: InputChannelInfo,
    released: &AtomicBool,
    buffer: NetworkBuffer,
    append: impl FnOnce(NetworkBuffer) -> Appended,
) -> Result<bool, (NetworkBuffer, Option<ChannelError>)> {
    let snapshot = buffer.snapshot();
    record_atomic(
        || {
            if released.load(Ordering::SeqCst) {
                Err((buffer, None))
            } else {
                append(buffer).map_err(|(buffer, error)| (buffer, Some(error)))
            }
        },
        |appended| {
            Some(Event::OnRecoveredStateBuffer {
                channel,
                buffer: snapshot,
                outcome: match appended {
                    Ok(_) => Ok(true),
                    Err((_, None)) => Ok(false),
                    Err((_, Some(error))) => Err(error.clone()),
                },
            })
        },
    )
}

/// `finishRecoveredBufferDelivery()`'s append of the `EndOfFetchedChannelStateEvent` sentinel,
/// recorded; `in_recovery` is the channel's flag, read under the same lock. Returns whether the
/// queue was empty (false on a released channel, which appends nothing).
pub(crate) fn finish_recovered_buffer_delivery(
    channel: InputChannelInfo,
    released: &AtomicBool,
    in_recovery: bool,
    append: impl FnOnce(NetworkBuffer) -> Appended,
) -> Result<bool, ChannelError> {
    record_atomic(
        || {
            if released.load(Ordering::SeqCst) {
                // A released channel appends nothing.
                Ok(false)
            } else if !in_recovery {
                Err(ChannelError::illegal_state("Recovery delivery already finished."))
            } else {
                let sentinel = NetworkBuffer::event(BufferKind::EndOfFetchedChannelState);
                append(sentinel).map_err(|(_, error)| error)
            }
        },
        |appended| {
            Some(Event::FinishRecoveredBufferDelivery {
                channel,
                outcome: appended.as_ref().map(|_| ()).map_err(Clone::clone),
            })
        },
    )
}

/// `insertRecoveryCheckpointBarrierIfInRecovery(checkpointId)`'s append of the
/// `RecoveryCheckpointBarrier`, recorded; nothing is appended once the channel is released or
/// out of recovery (`in_recovery`, read under the channel's lock). Returns whether the queue
/// was empty.
pub(crate) fn insert_recovery_checkpoint_barrier_if_in_recovery(
    channel: InputChannelInfo,
    released: &AtomicBool,
    in_recovery: bool,
    checkpoint_id: CheckpointId,
    append: impl FnOnce(NetworkBuffer) -> Appended,
) -> Result<bool, ChannelError> {
    record_atomic(
        || {
            if released.load(Ordering::SeqCst) || !in_recovery {
                return Ok(false);
            }
            let barrier = NetworkBuffer::event(BufferKind::RecoveryCheckpointBarrier(checkpoint_id));
            append(barrier).map_err(|(_, error)| error)
        },
        |_| Some(Event::InsertRecoveryCheckpointBarrierIfInRecovery { channel, checkpoint_id }),
    )
}
