//! Event log: what the channels did, recorded inside the critical section that decided it, so
//! that the order of a channel's events is the order its locks serialised them.
//!
//! Information only, like [`pause_point`](crate::pause_point): a thread may install a
//! [`Recorder`]; without one (the default) recording costs one thread-local read and builds
//! nothing. Events are named after the Flink methods that produce them, the vocabulary of the
//! model's actions, so that a checker can replay a log through the model (the conformance
//! suite's validation). A recorder runs under the caller's lock: it must be a leaf (take no lock
//! of this crate, call nothing back).
//!
//! Recorded (what a caller of the method can see, plus what it pushed):
//! - [`Event::RequestPartitions`]: `SingleInputGate.requestPartitions` began (under
//!   `requestLock`, before any channel is converted or requested).
//! - [`Event::OnRecoveredStateBuffer`], [`Event::FinishRecoveredBufferDelivery`],
//!   [`Event::InsertRecoveryCheckpointBarrierIfInRecovery`], [`Event::OnRecoveredStateConsumed`],
//!   [`Event::CheckpointStarted`]: a local channel's calls, under `recoveredBuffers`.
//! - [`Event::GetNextBuffer`]: a local channel handed out a recovered element (under
//!   `recoveredBuffers`); live and priority elements are [`Event::PollBuffer`]s of its
//!   subpartition.
//! - [`Event::Add`], [`Event::PollBuffer`]: `ResultSubpartition.add` (producer) and
//!   `pollBuffer` (the consumer's view), under the subpartition's lock.
//!
//! Not recorded: remote channels, the buffer managers, releases, calls that changed nothing
//! (a poll that found nothing).

use std::cell::RefCell;
use std::sync::{Arc, Mutex, PoisonError};

use crate::error::ChannelError;
use crate::network_buffer::{BufferSnapshot, CheckpointId};
use crate::recoverable_input_channel::InputChannelInfo;

/// One recorded step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// `SingleInputGate.requestPartitions(needsRecovery)` began, once per gate.
    RequestPartitions {
        /// The gate's index.
        gate: u32,
    },
    /// `onRecoveredStateBuffer(buffer)` appended `buffer` (a released channel records nothing).
    OnRecoveredStateBuffer {
        /// The channel.
        channel: InputChannelInfo,
        /// What was appended.
        buffer: BufferSnapshot,
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
    /// `getNextBuffer()` returned a recovered element (data, `RecoveryCheckpointBarrier`, the
    /// sentinel) from the channel's own queue.
    GetNextBuffer {
        /// The channel.
        channel: InputChannelInfo,
        /// The element.
        buffer: BufferSnapshot,
        /// Its sequence number.
        sequence_number: i32,
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
}

/// Receives events. Runs under the recording component's lock.
pub trait Recorder: Send + Sync {
    /// Called once per event, on the thread that produced it.
    fn record(&self, event: Event);
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

impl Recorder for EventLog {
    fn record(&self, event: Event) {
        let current = std::thread::current();
        let thread = current
            .name()
            .map_or_else(|| format!("{:?}", current.id()), str::to_string);
        self.events
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Recorded { thread, event });
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
