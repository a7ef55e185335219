//! `RemoteInputChannel` in recovery: `onBuffer` stashes ordinary events and rejects data while
//! in recovery, `onRecoveredStateConsumed` replays the stash at the tail and reopens credit.
//! Recovery sequence numbers are assigned at append (see `recoverable_input_channel`).

use crate::action::{Action, Thread};
use crate::config::ChannelConfig;
use crate::config::ChannelKind;
use crate::model::RecoveryModel;
use crate::state::LocalBufferPool;
use crate::state::producer::Wire;
use crate::state::{Announce, Channel, Entry, Failure, NetBuf, Payload, PopFront, RESUME_CONSUMPTION, Violation};
use crate::state::{RecyclerPc, SenderBacklog, State, TaskPc};
use crate::variant::Variant;

/// `PrioritizedDeque.addPriorityElement`: behind the priority elements already at the head.
fn add_priority(ch: &mut Channel, e: Entry) {
    ch.queue.insert(ch.priority_len as usize, e);
    ch.priority_len += 1;
}

/// What `onBuffer` hands to the code after its critical section.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OnBuffer {
    /// The backlog for the `onSenderBacklog` that follows (none on a released channel, which
    /// drops the buffer and returns).
    pub backlog: Option<u8>,
    /// A first priority element was queued: `notifyPriorityEvent`.
    pub notify_priority: bool,
    /// The queue was empty: `notifyChannelNonEmpty`.
    pub notify_non_empty: bool,
    /// Floating buffers `onBlockingUpstream` released, to recycle to the `LocalBufferPool`.
    pub released_floating: Vec<NetBuf>,
}

/// `onBuffer(buffer, seq, backlog)` on the Netty client, with the `requestBuffer()` that
/// decoding a data buffer needs.
pub fn on_buffer(ch: &mut Channel, initial_credit: u8, variant: Variant) -> Result<OnBuffer, Violation> {
    let Wire { payload, seq, backlog } = ch.producer.wire.pop_front().expect("guarded");
    // onBlockingUpstream, before the lock: without exclusive buffers the channel gives its
    // floating ones back, as the blocked sender announces no backlog until it resumes.
    let mut released_floating = Vec::new();
    if payload.is_blocking_upstream() && initial_credit == 0 {
        released_floating = ch.bm.release_floating_buffers();
    }
    if ch.released {
        // The client handler drops a released channel's messages before `onBuffer`.
        return Ok(OnBuffer {
            released_floating,
            ..OnBuffer::default()
        });
    }
    if payload == Payload::BacklogAnnouncement {
        // decodeMsg hands the backlog straight to onSenderBacklog; nothing is queued.
        return Ok(OnBuffer {
            backlog: Some(backlog),
            ..OnBuffer::default()
        });
    }
    // The first buffer from upstream proves the partition request went through.
    ch.upstream_ready = true;
    let mut buffer: Option<NetBuf> = None;
    if payload.is_data() {
        buffer = ch.bm.request_buffer();
        if buffer.is_none() {
            return Err(Violation::NoBufferForData);
        }
    }
    let entry = Entry { payload, seq, buffer };
    let was_empty = ch.queue.is_empty();
    let mut violation = None;
    let (notify_priority, notify_non_empty) = match payload {
        Payload::Barrier(_) => {
            add_priority(ch, entry);
            (ch.priority_len == 1, was_empty)
        }
        Payload::Event(_) | Payload::EndOfOutput(_) if ch.in_recovery && variant != Variant::NoEventStash => {
            ch.stash.push(entry);
            (false, false)
        }
        // requiresAnnouncement: the barrier is an ordinary event (stashed in recovery), and its
        // EventAnnouncement, with the barrier's sequence number, goes to the priority head.
        Payload::AlignedBarrier(cp) => {
            if ch.in_recovery {
                ch.stash.push(entry);
            } else {
                ch.queue.push(entry);
            }
            add_priority(
                ch,
                Entry {
                    payload: Payload::Announcement(cp),
                    seq,
                    buffer: None,
                },
            );
            (ch.priority_len == 1, was_empty)
        }
        Payload::Data(_) if ch.in_recovery => {
            violation = Some(Violation::DataDuringRecovery);
            ch.queue.push(entry);
            (false, was_empty)
        }
        _ => {
            ch.queue.push(entry);
            (false, was_empty)
        }
    };
    if let Some(cp) = ch.persister.check_for_barrier(payload) {
        ch.last_barrier = (cp as i8, seq);
    }
    ch.persister.maybe_persist(payload, &mut ch.ghost_persisted);
    if let Some(v) = violation {
        return Err(v);
    }
    // `onSenderBacklog` runs after the lock, a separate step: the drainer (upstreamReady is
    // open now) or the task may take buffers in between.
    Ok(OnBuffer {
        backlog: Some(backlog),
        notify_priority,
        notify_non_empty,
        released_floating,
    })
}

/// `onSenderBacklog(backlog)`: `requestFloatingBuffers(backlog + initialCredit)`; the credit to
/// announce afterwards, none while notification is disabled.
pub fn on_sender_backlog(
    ch: &mut Channel,
    pool: &mut LocalBufferPool,
    cfg: &ChannelConfig,
    index: u8,
    backlog: u8,
    variant: Variant,
) -> Option<Announce> {
    let required = if variant == Variant::OnSenderBacklogWithoutInitialCredit {
        backlog
    } else {
        backlog + cfg.exclusive
    };
    let n = ch
        .bm
        .request_floating_buffers(pool, index, ch.released, required, variant);
    (n > 0).then_some(Announce { channel: index, n })
}

/// `getNextBuffer()`: the head of `receivedBuffers`, priority elements first, with the
/// element's own sequence number; `None` when the queue is empty. The consume path is master's.
pub fn get_next_buffer(ch: &mut Channel) -> Option<Entry> {
    let e = ch.queue.pop_front()?;
    if ch.priority_len > 0 {
        ch.priority_len -= 1;
    }
    Some(e)
}

/// Whether `getNextBuffer()` returns something now: also between `isReleased` and the drain
/// of the queue (`release_step`), as `get_next_buffer`.
pub fn has_next(ch: &Channel) -> bool {
    (!ch.released || ch.releasing) && !ch.queue.is_empty()
}

/// `onRecoveredStateConsumed()`, the `receivedBuffers` critical section: recovery off and the
/// stash replayed at the tail in FIFO order, so that stashed events stay behind everything the
/// recovered stream queued and ahead of everything credit lets in later. `Ok(true)`: the stash
/// filled an empty queue, notify the gate.
pub fn on_recovered_state_consumed(ch: &mut Channel, variant: Variant) -> Result<bool, Violation> {
    if !ch.in_recovery {
        return Err(Violation::RecoveryAlreadyFinished);
    }
    ch.in_recovery = false;
    let notify = ch.queue.is_empty() && !ch.stash.is_empty();
    ch.ghost_replayed += ch.stash.len() as u8;
    let stash: Vec<Entry> = ch.stash.drain(..).collect();
    if variant == Variant::StashReplayedAtHead {
        for (k, e) in stash.into_iter().enumerate() {
            ch.queue.insert(k, e);
        }
    } else {
        ch.queue.extend(stash);
    }
    Ok(notify)
}

/// `convertToPriorityEvent(seq)`, called by the alignment timer for an announced barrier:
/// under `receivedBuffers`, `checkState(hasBarrierReceived())`, then
/// `receivedBuffers.getAndRemove(sb -> sb.sequenceNumber == seq)`, which throws
/// `NoSuchElementException` when the barrier is not in the deque (it is in the stash during
/// recovery), then the barrier re-added as a priority element. `Ok(true)`: the first priority
/// element, `notifyPriorityEventForce()`.
pub fn convert_to_priority_event(ch: &mut Channel, seq: i32) -> Result<bool, Failure> {
    // `hasBarrierReceived()` holds here: `onBuffer`'s `checkForBarrier` saw the barrier before
    // its announcement could be polled, and one checkpoint starts nothing in between.
    let at = ch
        .queue
        .iter()
        .position(|e| e.seq == seq && matches!(e.payload, Payload::AlignedBarrier(_)))
        .ok_or(Failure::AnnouncedBarrierNotFound)?;
    let e = ch.queue.remove(at);
    let Payload::AlignedBarrier(cp) = e.payload else {
        unreachable!()
    };
    // The barrier goes on as the unaligned checkpoint's priority barrier, with its number.
    add_priority(
        ch,
        Entry {
            payload: Payload::Barrier(cp),
            ..e
        },
    );
    Ok(ch.priority_len == 1)
}

/// `getInflightBuffersUnsafe(cp)` of master's `checkpointStarted`: the queued data buffers
/// received before this channel's barrier (all of them when no barrier was seen).
pub fn get_inflight_buffers(ch: &Channel) -> Vec<Payload> {
    let (_, barrier_seq) = ch.last_barrier;
    ch.queue[ch.priority_len as usize..]
        .iter()
        .filter(|e| e.payload.is_data() && (ch.last_barrier.0 < 0 || e.seq < barrier_seq))
        .map(|e| e.payload)
        .collect()
}

/// The Netty client thread's side of a remote channel, and the credit announcements of every
/// thread.
impl RecoveryModel {
    /// What the Netty client thread may do next: hand a backlog on, announce credit, or take
    /// the next message of a channel's wire.
    pub(crate) fn netty_client_actions(&self, s: &State, out: &mut Vec<Action>) {
        if let Some(SenderBacklog { channel, .. }) = s.client_backlog {
            out.push(Action::OnSenderBacklog { channel });
            return;
        }
        if let Some(Announce { channel, n }) = s.client_announce {
            out.push(Action::NotifyBufferAvailable {
                thread: Thread::NettyClient,
                channel,
                n,
            });
            return;
        }
        for (c, ch) in s.channels.iter().enumerate() {
            let c = c as u8;
            if ch.error {
                continue;
            }
            if !ch.producer.wire.is_empty() {
                out.push(Action::OnBuffer { channel: c });
            }
            if ch.add_credit_queued {
                out.push(Action::SendAddCredit { channel: c });
            }
            if ch.resume_queued {
                out.push(Action::SendResumeConsumption { channel: c });
            }
            // The connection to the producer fails (the handler's `exceptionCaught`).
            if self.cfg.faults && self.kind(c) == ChannelKind::Remote && s.partitions_requested && !ch.released {
                out.push(Action::OnError { channel: c });
            }
        }
    }

    /// The client's `onBuffer` of the next message on the wire; a backlog it carries is handed
    /// on to `onSenderBacklog` in the client's next step.
    pub(crate) fn on_buffer(&self, s: &mut State, c: u8) {
        let initial_credit = self.cfg.channels[c as usize].exclusive;
        match on_buffer(s.ch_mut(c), initial_credit, self.variant) {
            Ok(r) => {
                self.recycle_all_to_pool(s, c, r.released_floating);
                if r.notify_priority {
                    self.notify(s, c, true);
                }
                if r.notify_non_empty && self.variant != Variant::OnBufferSkipsNonEmptyNotification {
                    self.notify(s, c, false);
                }
                s.client_backlog = r.backlog.map(|backlog| SenderBacklog { channel: c, backlog });
            }
            Err(v) => s.violate(c, v),
        }
    }

    /// `onSenderBacklog(backlog)` of the backlog `onBuffer` handed on.
    pub(crate) fn on_sender_backlog(&self, s: &mut State, c: u8) {
        let backlog = s.client_backlog.take().expect("guarded").backlog;
        let cfg = &self.cfg.channels[c as usize];
        let (ch, pool) = s.ch_and_pool(c);
        s.client_announce = on_sender_backlog(ch, pool, cfg, c, backlog, self.variant);
        if !requires_backlog_plus_initial_credit(s.ch(c), cfg, backlog) {
            s.violate(c, Violation::RequiredNotBacklogPlusInitialCredit);
        }
    }

    /// The client writes the channel's `AddCredit`: the credit not yet announced, unless the
    /// channel was released meanwhile.
    pub(crate) fn send_add_credit(&self, s: &mut State, c: u8) {
        let ch = s.ch_mut(c);
        ch.add_credit_queued = false;
        let credit = std::mem::take(&mut ch.unannounced_credit);
        if credit > 0 && !ch.released {
            ch.add_credit_in_flight.push(credit);
        }
    }

    /// The client writes the channel's `ResumeConsumption`, behind the `AddCredit`s written
    /// before it, unless the channel was released meanwhile
    /// (`CreditBasedPartitionRequestClientHandler.writeAndFlushNextMessageIfPossible` drops a
    /// released channel's messages).
    pub(crate) fn send_resume_consumption(&self, s: &mut State, c: u8) {
        let ch = s.ch_mut(c);
        ch.resume_queued = false;
        if !ch.released {
            ch.add_credit_in_flight.push(RESUME_CONSUMPTION);
        }
    }

    /// `RemoteInputChannel.resumeConsumption()`: `checkState(!isReleased)` (the model does not
    /// resume a released channel: the task is being cancelled), the unannounced credit dropped
    /// when the initial credit is 0 (the server drops its credit too), and a
    /// `ResumeConsumption` queued on the Netty client.
    pub(crate) fn resume_remote_consumption(&self, s: &mut State, c: u8) {
        let initial_credit = self.cfg.channels[c as usize].exclusive;
        let ch = s.ch_mut(c);
        if initial_credit == 0 {
            ch.unannounced_credit = 0;
        }
        ch.resume_queued = true;
    }

    /// The connection fails (`exceptionCaught`): `setError`. The first cause wins and notifies
    /// the gate, so that the task polls the channel and fails.
    pub(crate) fn on_error(&self, s: &mut State, c: u8) {
        s.ch_mut(c).error = true;
        self.notify(s, c, false);
    }

    /// `bufferManager.enableNotify()` then `stateConsumedFuture.complete`. The two B6 variants
    /// split the critical section in two task steps.
    pub(crate) fn enable_notify(&self, s: &mut State, c: u8) {
        let pc = s.task;
        let ch = s.ch_mut(c);
        let avail = match (self.variant, pc) {
            (Variant::EnableNotifyFlagAfterCount, TaskPc::EnableNotify { .. }) => {
                let avail = ch.bm.available();
                s.task = TaskPc::EnableNotifyRest { channel: c, avail };
                return;
            }
            (Variant::EnableNotifyFlagBeforeCount, TaskPc::EnableNotify { .. }) => {
                ch.bm.notify_available = true;
                s.task = TaskPc::EnableNotifyRest { channel: c, avail: 0 };
                return;
            }
            (Variant::EnableNotifyFlagAfterCount, TaskPc::EnableNotifyRest { avail, .. }) => {
                ch.bm.notify_available = true;
                avail
            }
            (Variant::EnableNotifyFlagBeforeCount, TaskPc::EnableNotifyRest { .. }) => ch.bm.available(),
            _ => ch.bm.enable_notify(),
        };
        if avail == 0 {
            // complete() (a released channel's future already failed; not yet with
            // `release_step` before the drain).
            ch.state_consumed = true;
        }
        s.task = TaskPc::Idle;
        if avail > 0 {
            // The future completes after the announcement (notify_buffer_available).
            s.task_announce = Some(Announce { channel: c, n: avail });
        }
    }

    /// `notifyBufferAvailable(n)`: add to `unannouncedCredit`; the first credit queues an
    /// `AddCredit` write on the Netty client (`notifyCreditAvailable`).
    pub(crate) fn notify_buffer_available(&self, s: &mut State, thread: Thread, c: u8, n: u8) {
        match thread {
            Thread::Task => s.task_announce = None,
            Thread::NettyClient => s.client_announce = None,
            _ => s.recycler = RecyclerPc::Idle,
        }
        if self.kind(c) == ChannelKind::Local {
            // InputChannel.notifyBufferAvailable: a local channel has no credit to announce.
            return;
        }
        if thread == Thread::Task {
            // onRecoveredStateConsumed: stateConsumedFuture.complete() after enableNotify().
            s.ch_mut(c).state_consumed = true;
        }
        self.add_unannounced_credit(s, c, n);
    }

    /// `RemoteInputChannel.notifyBufferAvailable(n)`: add to `unannouncedCredit`; the first
    /// credit queues an `AddCredit` write on the Netty client (`notifyCreditAvailable`).
    pub(crate) fn add_unannounced_credit(&self, s: &mut State, c: u8, n: u8) {
        if self.kind(c) == ChannelKind::Local {
            return;
        }
        let ch = s.ch_mut(c);
        let before = ch.unannounced_credit;
        ch.unannounced_credit += n;
        if n > 0 && before == 0 && !ch.released {
            ch.add_credit_queued = true;
        }
    }
}

/// The check of `onSenderBacklog(backlog)`'s outcome on channel `ch`, configured as `cfg`.
pub fn requires_backlog_plus_initial_credit(ch: &Channel, cfg: &ChannelConfig, backlog: u8) -> bool {
    ch.released || ch.bm.required == (backlog + cfg.exclusive) as i8
}
