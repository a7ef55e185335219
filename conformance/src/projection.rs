//! Where the two descriptions meet: the projection of a model state, and of the
//! implementation's snapshots, into the common [`Snapshot`], and the observation the model
//! predicts for a step. Everything that decides what is comparable lives in this file.
//!
//! Granularity differences, and how they are projected (see docs/conformance.md):
//! - Buffers. The model names a remote channel's network buffers `x0..` (exclusive) and `f0..`
//!   (floating). The implementation gives segments ids; the driver builds one global pool per
//!   channel whose ids start at [`IdMap::base`], floating first, so that id and name map one to
//!   one ([`IdMap`]). Producer-side buffers, events and local recovered buffers are unpooled in
//!   both descriptions and carry no name.
//! - Contents. The implementation's buffers carry a `payload` number; the driver writes the
//!   model's element into it ([`payload_of`]) and the projection reads it back ([`item_of`]).
//!   Remote live data is copied into a consumer buffer, as Netty does: the copy keeps the
//!   payload and takes the id of the consumer buffer, which the model names the same way.
//! - Sequence numbers. Local channels number recovered elements when consumed, so queued local
//!   elements have none; remote ones are numbered at append and arrival.
//! - `stateConsumedFuture`. The implementation completes it after `enableNotify` has announced
//!   its credit; the model completes it in the `enableNotify` step, before the announcement.
//!   Projected: the model's future counts as done once the task's announcement is made.
//! - A local channel's `hasPendingPriorityEvent` is shown only in recovery and unreleased, where
//!   it decides what `getNextBuffer` returns. After recovery the implementation clears it when
//!   it polls the last priority event and the model leaves it; on a released channel the model
//!   sets it once partitions are requested, the implementation only through a view created
//!   before the release.
//! - The Netty client's queued `AddCredit` write is not shown once the channel is released (the
//!   model never queues one then; the implementation's `notifyCreditAvailable` does not check).
//! - Not compared: reference counts (the implementation has none), `lastBarrierId` (internal to
//!   the master branch, observable through what is persisted), the task's checkpoint
//!   bookkeeping and the barrier handler's announcements and alignment timer (the driver's).
//! - An `EventAnnouncement` goes to the barrier handler, not the operator: neither side counts
//!   it as delivered, and the model's poll of it is read from the queue it left. The gate's channel queue is compared (`gate.queue`).
//! - An `EndOfOutputChannelStateEvent` (`eoo0`) goes to the `UpstreamRecoveryTracker` and on to
//!   the network input, which ignores it: both sides count it as delivered. The tracker's count
//!   is the gate's `unrestored_channels`; the model's is its channels less those in
//!   `upstream_recovered`.
//! - The spill. The model writes a channel's recovered buffers not yet delivered at its
//!   `RecoveryCheckpointBarrier`'s insertion (`ghost_spilled`); the driver writes the drainer's
//!   snapshot of the channel at the same step, under the drainer's lock, with
//!   `addInputDataFromSpill`. Both show as `spilled`, beside what the channel persisted.
//! - A `ResumeConsumption` on the client-to-server wire is a 0 among the `AddCredit`s, as the
//!   model writes it (`RESUME_CONSUMPTION`).

use crate::observation::*;
use recovery_impl::buffer_manager::BufferManagerSnapshot;
use recovery_impl::buffer_pool::{LocalBufferPoolSnapshot, NetworkBufferPoolSnapshot};
use recovery_impl::channel_state_persister::{self as persister, ChannelStateWriterSnapshot, PersistedBuffer};
use recovery_impl::local_input_channel::LocalInputChannelSnapshot;
use recovery_impl::pause_point::PausePoint;
use recovery_impl::recoverable_input_channel::FutureStatus;
use recovery_impl::recovered_input_channel::RecoveredInputChannelSnapshot;
use recovery_impl::remote_input_channel::{RemoteInputChannelSnapshot, SequenceBufferSnapshot};
use recovery_impl::result_subpartition::ResultSubpartitionSnapshot;
use recovery_impl::single_input_gate::ChannelSnapshot as ImplChannel;
use recovery_impl::{BufferId, BufferKind, BufferSnapshot, CheckpointId as ImplCheckpointId, InputChannelInfo};
use recovery_model::state::channel_state_persister::PersistStatus as ModelPersist;
use recovery_model::state::{
    Channel, CheckpointId, CheckpointStatus, Entry, Failure, NetBuf, Payload, RecyclerPc, State, TaskPc, Violation,
};
use recovery_model::{Action, ChannelKind, Delivery, RecoveryModel};
use std::collections::BTreeMap;

// ---------------------------------------------------------------------------------------------
// Names of buffers and contents
// ---------------------------------------------------------------------------------------------

/// How one channel's segment ids map to the model's buffer names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IdMap {
    /// The first segment id of the channel's global pool.
    pub base: u32,
    /// Floating buffers (ids `base..base+floating`); exclusive ones follow.
    pub floating: u8,
    /// Exclusive buffers.
    pub exclusive: u8,
    /// With the gate's one pool (`shared_pool`): its floating buffers, ids
    /// `SHARED_BASE..SHARED_BASE+shared`, the same for every channel (`floating` is then 0).
    pub shared: u8,
}

/// The first segment id of the gate's one pool (below every channel's `base`).
pub const SHARED_BASE: u32 = 10;

impl IdMap {
    /// The map of channel `c` with `floating` and `exclusive` buffers.
    pub fn new(c: u8, floating: u8, exclusive: u8) -> Self {
        IdMap {
            base: 100 * (c as u32 + 1),
            floating,
            exclusive,
            shared: 0,
        }
    }

    /// The map of channel `c` with `exclusive` buffers of its own, borrowing from the gate's
    /// one pool of `shared` floating buffers.
    pub fn with_shared_pool(c: u8, shared: u8, exclusive: u8) -> Self {
        IdMap {
            shared,
            ..IdMap::new(c, 0, exclusive)
        }
    }

    /// The model's name of segment `id`, if it is one of this channel's.
    pub fn buf(&self, id: BufferId) -> Option<Buf> {
        if let Some(i) = id.0.checked_sub(SHARED_BASE).filter(|&i| i < self.shared as u32) {
            return Some(Buf(NetBuf::Floating(i as u8)));
        }
        let i = id.0.checked_sub(self.base)?;
        let (f, x) = (self.floating as u32, self.exclusive as u32);
        match i {
            i if i < f => Some(Buf(NetBuf::Floating(i as u8))),
            i if i < f + x => Some(Buf(NetBuf::Exclusive((i - f) as u8))),
            _ => None,
        }
    }

    /// The segment id of the model's buffer `b`.
    pub fn id(&self, b: NetBuf) -> BufferId {
        match b {
            NetBuf::Floating(i) if self.shared > 0 => BufferId(SHARED_BASE + i as u32),
            NetBuf::Floating(i) => BufferId(self.base + i as u32),
            NetBuf::Exclusive(i) => BufferId(self.base + self.floating as u32 + i as u32),
        }
    }

    fn bufs(&self, ids: &[BufferId]) -> Vec<Buf> {
        ids.iter().filter_map(|id| self.buf(*id)).collect()
    }
}

const RECOVERED: u64 = 1_000;
const DATA: u64 = 2_000;
const EVENT: u64 = 3_000;

/// The payload number the driver writes into a buffer carrying `item` of channel `c`.
pub fn payload_of(c: u8, item: &Item) -> u64 {
    let base = 10_000 * (c as u64 + 1);
    match item {
        Item::Known(Payload::Recovered(i)) => base + RECOVERED + *i as u64,
        Item::Known(Payload::Data(i)) => base + DATA + *i as u64,
        // An event's kind tells `e0` from `eoo0`: they share the numbers.
        Item::Known(Payload::Event(i) | Payload::EndOfOutput(i)) => base + EVENT + *i as u64,
        _ => 0,
    }
}

/// The model's name of what the implementation's buffer carries, on channel `c`.
pub fn item_of(c: u8, b: &BufferSnapshot) -> Item {
    let base = 10_000 * (c as u64 + 1);
    let index = |tag: u64| {
        b.payload
            .checked_sub(base + tag)
            .filter(|i| *i < RECOVERED)
            .map(|i| i as u8)
    };
    let unknown = || Item::Unknown(format!("{:?} id {} payload {}", b.kind, b.id.0, b.payload));
    match b.kind {
        BufferKind::Data => match (index(RECOVERED), index(DATA)) {
            (Some(i), _) => Item::Known(Payload::Recovered(i)),
            (_, Some(i)) => Item::Known(Payload::Data(i)),
            _ => unknown(),
        },
        BufferKind::Event => index(EVENT).map_or_else(unknown, |i| Item::Known(Payload::Event(i))),
        BufferKind::EndOfOutputChannelState => {
            index(EVENT).map_or_else(unknown, |i| Item::Known(Payload::EndOfOutput(i)))
        }
        BufferKind::CheckpointBarrier(cp) => Item::Known(Payload::Barrier(cp as u8)),
        BufferKind::RecoveryCheckpointBarrier(cp) => Item::Known(Payload::RecoveryBarrier(cp as u8)),
        BufferKind::EndOfFetchedChannelState => Item::Known(Payload::EndOfRecovery),
        // The flag-off path's sentinel of the recovered stream (its RecoveredInputChannel's).
        BufferKind::EndOfInputChannelState => Item::Known(Payload::EndOfRecovery),
        // Only the task level's gates end their partitions.
        BufferKind::EndOfPartition => unknown(),
        BufferKind::TimeoutableAlignedCheckpointBarrier(cp) => Item::Known(Payload::AlignedBarrier(cp as u8)),
        BufferKind::EventAnnouncement(cp) => Item::Known(Payload::Announcement(cp as u8)),
    }
}

// ---------------------------------------------------------------------------------------------
// The model's side
// ---------------------------------------------------------------------------------------------

/// A queued element; `numbered`: a remote channel's, numbered when appended.
fn model_element(numbered: bool, e: &Entry) -> Element {
    Element {
        item: e.payload.into(),
        seq: numbered.then_some(e.seq),
        buffer: e.buffer.map(Buf),
    }
}

fn model_persist(s: ModelPersist) -> PersistStatus {
    match s {
        ModelPersist::Completed => PersistStatus::Completed,
        ModelPersist::BarrierPending => PersistStatus::BarrierPending,
        ModelPersist::BarrierReceived => PersistStatus::BarrierReceived,
    }
}

fn model_channel(m: &RecoveryModel, s: &State, c: u8) -> ChannelView {
    let ch: &Channel = s.ch(c);
    let kind = m.cfg.channels[c as usize].kind;
    // A RecoveredInputChannel (flag off) numbers what it hands out when it is polled.
    let numbered = kind == ChannelKind::Remote && !m.is_recovered_channel(s);
    // The task has yet to announce this channel's credit: its future is not complete yet.
    let announcing = s.task_announce.is_some_and(|a| a.channel == c) && !ch.released;
    let mut persisted: BTreeMap<u8, Vec<Item>> = BTreeMap::new();
    for (cp, p) in &ch.ghost_persisted {
        persisted.entry(*cp).or_default().push((*p).into());
    }
    let mut spilled: BTreeMap<u8, Vec<Item>> = BTreeMap::new();
    for (cp, p) in &ch.ghost_spilled {
        spilled.entry(*cp).or_default().push((*p).into());
    }
    let bufs = |v: &[NetBuf]| v.iter().copied().map(Buf).collect::<Vec<_>>();
    // A local channel shows its recovery manager's buffers when it has exclusive ones.
    let credit = (kind == ChannelKind::Remote || m.cfg.channels[c as usize].exclusive > 0).then(|| Credit {
        notify_available: ch.bm.notify_available,
        waiting_for_floating: ch.bm.waiting_for_floating,
        required: ch.bm.required as i32,
        unannounced: ch.unannounced_credit as i32,
        add_credit_queued: ch.add_credit_queued && !ch.released,
        resume_queued: ch.resume_queued,
        add_credit_in_flight: ch.add_credit_in_flight.iter().map(|k| *k as i32).collect(),
        reader_credit: ch.producer.reader_credit.map(i32::from),
        wire: ch
            .producer
            .wire
            .iter()
            .map(|w| WireElement {
                item: w.payload.into(),
                seq: w.seq,
                backlog: w.backlog as i32,
            })
            .collect(),
        buffers: Buffers {
            exclusive: bufs(&ch.bm.exclusive),
            floating: bufs(&ch.bm.floating),
            pool: bufs(&s.pool_of(c).available),
            global: bufs(&ch.global_pool),
            held: bufs(&ch.held),
        },
    });
    ChannelView {
        kind,
        in_recovery: ch.in_recovery,
        released: ch.released,
        error: ch.error,
        partition_released: ch.producer.released,
        upstream_ready: ch.upstream_ready,
        state_consumed: ch.state_consumed && !announcing,
        recovery_seq: ch.recovery_seq,
        queue: ch.queue.iter().map(|e| model_element(numbered, e)).collect(),
        priority_len: ch.priority_len as usize,
        stash: ch.stash.iter().map(|e| model_element(numbered, e)).collect(),
        pending_priority: kind == ChannelKind::Local && ch.pending_priority && ch.in_recovery && !ch.released,
        persist_status: model_persist(ch.persister.status),
        last_seen_barrier: ch.persister.last_seen_barrier as i64,
        persisted,
        spilled,
        delivered: ch.ghost_delivered.iter().map(|d| d.payload.into()).collect(),
        subpartition: ch.producer.subpartition.iter().map(|p| (*p).into()).collect(),
        subpartition_blocked: ch.producer.blocked,
        credit,
    }
}

/// The task inside a local channel's `getNextBuffer`, its recovered poll made, before the
/// re-read of `hasPendingPriorityEvent` (`rereadPendingPriorityEvent`).
fn reread_pending(c: u8) -> Pending {
    Pending::Elsewhere {
        what: format!("polled channel {c}'s recovered queue; next re-reads hasPendingPriorityEvent"),
    }
}

/// The task inside a local channel's `getNextBuffer`, a priority event pulled from the view,
/// before `hasPendingPriorityEvent = false` (`pullPriorityFromSubpartitionView`).
fn clear_pending(c: u8) -> Pending {
    Pending::Elsewhere {
        what: format!("pulled a priority event from channel {c}'s view; next clears hasPendingPriorityEvent"),
    }
}

/// The abstract snapshot of model state `s`.
pub fn model_snapshot(m: &RecoveryModel, s: &State) -> Snapshot {
    let task = match (s.task_announce, s.task) {
        (Some(a), _) => Pending::Announce {
            channel: a.channel,
            n: a.n,
        },
        (None, TaskPc::EnableNotify { channel }) => Pending::EnableNotify { channel },
        (None, TaskPc::EnableNotifyRest { channel, .. }) => Pending::Elsewhere {
            what: format!("between the two halves of a split enableNotify on channel {channel}"),
        },
        (None, TaskPc::RereadPendingPriority { channel, .. }) => reread_pending(channel),
        (None, TaskPc::ClearPendingPriority { channel, .. }) => clear_pending(channel),
        (None, TaskPc::AwaitUpstreamReady { channel }) => Pending::Elsewhere {
            what: format!("awaiting upstreamReady in finishRecoveredBufferDelivery on channel {channel}"),
        },
        _ => Pending::Idle,
    };
    let netty_client = match (s.client_backlog, s.client_announce) {
        (Some(b), _) => Pending::SenderBacklog { channel: b.channel },
        (None, Some(a)) => Pending::Announce {
            channel: a.channel,
            n: a.n,
        },
        (None, None) => Pending::Idle,
    };
    let recycler = match s.recycler {
        RecyclerPc::Idle => Pending::Idle,
        RecyclerPc::Announce(a) => Pending::Announce {
            channel: a.channel,
            n: a.n,
        },
        RecyclerPc::ReturnFloating { channel, buffer } => Pending::ReturnFloating {
            channel,
            buffer: Buf(buffer),
        },
    };
    let channels: Vec<ChannelView> = (0..s.channels.len() as u8).map(|c| model_channel(m, s, c)).collect();
    let gate = GateView {
        queue: s.gate.channels.to_vec(),
        priority: s.gate.num_priority as usize,
        state_consumed: channels.iter().all(|ch| ch.state_consumed),
        unrestored_channels: channels.len() as i32 - s.upstream_recovered.count_ones() as i32,
    };
    Snapshot {
        channels,
        gate,
        task,
        netty_client,
        recycler,
    }
}

/// The error kind of a model assertion; none for a check of the model's own that Flink does not
/// make (the step itself throws nothing).
pub fn violation_kind(v: Violation) -> Option<ErrorKind> {
    Some(match v {
        Violation::DataDuringRecovery => ErrorKind::ProtocolViolation,
        Violation::NoBufferForData => ErrorKind::NoBufferForData,
        Violation::SendWithoutCredit => ErrorKind::SendWithoutCredit,
        Violation::PushAfterRecovery
        | Violation::RecoveryAlreadyFinished
        | Violation::ExpectedPriorityEvent
        | Violation::NotBlocked => ErrorKind::IllegalState,
        Violation::RequiredNotBacklogPlusInitialCredit => return None,
    })
}

/// The error kind `getNextBuffer` throws after an upstream failure.
pub fn failure_kind(f: Failure) -> ErrorKind {
    match f {
        Failure::Transport => ErrorKind::RemoteTransport,
        Failure::PartitionReleased => ErrorKind::Released,
        Failure::NoPriorityEvent => ErrorKind::IllegalState,
        // Not a poll's: the alignment timer's `convertToPriorityEvent` (`getAndRemove`).
        Failure::AnnouncedBarrierNotFound => ErrorKind::NoSuchElement,
    }
}

/// `nextDataType` of a `getNextBuffer` of channel `c` that returned `polled`, from the state
/// after it (the model decides the gate's re-queue on it, see `RecoveryModel::next_after_poll`).
fn next_after_poll(m: &RecoveryModel, post: &State, c: u8, polled: Payload) -> DataType {
    // The poll of an `EndOfOutputChannelStateEvent` saw the subpartition that handed it out
    // blocked; the tracker's resume, in the same model step, came after it.
    if polled.is_blocking_upstream() && !post.ch(c).producer.blocked {
        let mut at_poll = post.clone();
        at_poll.ch_mut(c).producer.blocked = true;
        return DataType::of_head(m.next_after_poll(&at_poll, c, polled));
    }
    DataType::of_head(m.next_after_poll(post, c, polled))
}

/// What the model predicts a caller sees when `action` takes `pre` to `post`: the error of an
/// assertion the step broke, else what the action's line of the table says. The table has one
/// line per action kind whose caller sees more than `Done`, most calling a method of
/// [`ModelStep`] named after the Flink method the action stands for.
pub fn model_observation(m: &RecoveryModel, pre: &State, action: &Action, post: &State) -> Observation {
    if let (None, Some((_, v))) = (pre.violation, post.violation)
        && let Some(error) = violation_kind(v)
    {
        return Observation::Error { error };
    }
    let step = ModelStep { m, pre, post };
    use Action::*;
    match *action {
        GetNextBuffer { channel } => step.get_next_buffer(channel),
        RereadPendingPriorityEvent { channel } => step.reread_pending_priority_event(channel),
        ClearPendingPriorityEvent { channel } => step.clear_pending_priority_event(channel),
        AlignedCheckpointTimeout { .. } => step.aligned_checkpoint_timeout(),
        CheckpointStarted { channel, cp } => step.checkpoint_started(channel, cp),
        SendBuffer { channel } => step.send_buffer(channel),
        // The drainer takes a buffer, or parks in `bufferQueue.wait()`.
        RequestBufferBlocking { .. } if post.io_buffer.is_none() => Observation::Blocked,
        SendAddCredit { channel } => step.send_add_credit(channel),
        _ => Observation::Done,
    }
}

/// One model step as [`model_observation`] reads it: the states before and after.
struct ModelStep<'a> {
    m: &'a RecoveryModel,
    pre: &'a State,
    post: &'a State,
}

impl ModelStep<'_> {
    /// `getNextBuffer` of channel `c`: the first of these that applies, in this order.
    fn get_next_buffer(&self, c: u8) -> Observation {
        self.task_failed()
            .or_else(|| self.read_after_release(c))
            .or_else(|| self.split_poll_not_returned(c))
            .or_else(|| self.handed_on(c))
            .or_else(|| self.polled_event_announcement(c))
            .or_else(|| self.polled_migrated_end_of_input_channel_state(c))
            .or_else(|| self.polled_end_of_recovered_state(c))
            .unwrap_or(Observation::NothingPolled)
    }

    /// The task failed in this step: the call throws the upstream's failure.
    fn task_failed(&self) -> Option<Observation> {
        match self.post.task {
            TaskPc::Failed { cause, .. } if self.pre.task != self.post.task => Some(Observation::Error {
                error: failure_kind(cause),
            }),
            _ => None,
        }
    }

    /// A poll of a released channel that throws.
    fn read_after_release(&self, c: u8) -> Option<Observation> {
        let ch = self.pre.ch(c);
        let error = if !ch.released {
            return None;
        } else if self.m.is_recovered_channel(self.pre) {
            // RecoveredInputChannel: checkState(!isReleased, "Trying to read from released ...")
            ErrorKind::IllegalState
        } else if ch.queue.is_empty() && self.m.cfg.channels[c as usize].kind == ChannelKind::Remote {
            // "Queried for a buffer after channel has been released.", when the poll found
            // nothing (before the drain, `release_step`, it still returns what is queued).
            ErrorKind::Released
        } else {
            return None;
        };
        Some(Observation::Error { error })
    }

    /// The variant's re-read, or (`priority_notify_step`) the flag's clear after a priority
    /// event pulled from the view: the call has not returned yet; its next step hands on what
    /// it returns.
    fn split_poll_not_returned(&self, c: u8) -> Option<Observation> {
        match self.post.task {
            TaskPc::RereadPendingPriority { channel, .. } | TaskPc::ClearPendingPriority { channel, .. }
                if channel == c && self.pre.task != self.post.task =>
            {
                Some(Observation::Done)
            }
            _ => None,
        }
    }

    /// The gate handed an element of channel `c` on (to the operator, or a barrier to the
    /// barrier handler): the call returned it.
    fn handed_on(&self, c: u8) -> Option<Observation> {
        let (before, after) = (&self.pre.ch(c).ghost_delivered, &self.post.ch(c).ghost_delivered);
        let d = after.last().filter(|_| after.len() > before.len())?;
        Some(Observation::Polled {
            item: d.payload.into(),
            seq: d.seq,
            next: next_after_poll(self.m, self.post, c, d.payload),
        })
    }

    /// An `EventAnnouncement` goes to the barrier handler, not the operator: the poll returned
    /// it all the same. What follows it is read at the poll, before the handler (after the
    /// alignment timeout) converts the announced barrier.
    fn polled_event_announcement(&self, c: u8) -> Option<Observation> {
        let head = self.pre.ch(c).queue.first()?;
        let Payload::Announcement(cp) = head.payload else {
            return None;
        };
        if self.post.ch(c).queue.len() >= self.pre.ch(c).queue.len() {
            return None;
        }
        let mut at_poll = self.pre.clone();
        let ch = at_poll.ch_mut(c);
        ch.queue.remove(0);
        ch.priority_len -= 1;
        Some(Observation::Polled {
            item: Item::Known(Payload::Announcement(cp)),
            seq: head.seq,
            next: next_after_poll(self.m, &at_poll, c, head.payload),
        })
    }

    /// 2.3.0 flag on: a migrated `EndOfInputChannelStateEvent` is handed out as an ordinary
    /// event (numbered by the new channel) and ignored by the network input.
    fn polled_migrated_end_of_input_channel_state(&self, c: u8) -> Option<Observation> {
        let (before, after) = (&self.pre.ch(c).queue, &self.post.ch(c).queue);
        let head = before.first().filter(|e| e.payload == Payload::EndOfRecovery)?;
        let polled = after.len() < before.len();
        (self.m.migrates() && !self.m.is_recovered_channel(self.pre) && polled).then(|| Observation::Polled {
            item: Item::Known(Payload::EndOfRecovery),
            seq: head.seq,
            next: next_after_poll(self.m, self.post, c, Payload::EndOfRecovery),
        })
    }

    /// The poll of the sentinel that ends the recovered state, which the gate consumes itself:
    /// the task goes on to `onRecoveredStateConsumed`.
    fn polled_end_of_recovered_state(&self, c: u8) -> Option<Observation> {
        if self.post.task != (TaskPc::Consume { channel: c }) {
            return None;
        }
        let seq = match self.m.cfg.channels[c as usize].kind {
            ChannelKind::Local => self.pre.ch(c).recovery_seq,
            ChannelKind::Remote => self.pre.ch(c).queue.first().map_or(0, |e| e.seq),
        };
        Some(Observation::Polled {
            item: Item::Known(Payload::EndOfRecovery),
            seq,
            next: next_after_poll(self.m, self.post, c, Payload::EndOfRecovery),
        })
    }

    /// The end of the variant's split `getNextBuffer`: what the call returned.
    fn reread_pending_priority_event(&self, c: u8) -> Observation {
        self.handed_on(c).unwrap_or(Observation::Done)
    }

    /// The end of a split pull of a priority event: the call returns the barrier it polled, and
    /// the next data type of the recovered queue as the clear leaves it (the view's, read at the
    /// poll, had no priority).
    fn clear_pending_priority_event(&self, c: u8) -> Observation {
        match self.pre.task {
            TaskPc::ClearPendingPriority { cp, seq, .. } => Observation::Polled {
                item: Item::Known(Payload::Barrier(cp)),
                seq,
                next: DataType::of_head(self.post.ch(c).queue.first().map(|e| e.payload)),
            },
            _ => Observation::Done,
        }
    }

    /// The alignment timer's lookup (`convertToPriorityEvent`) threw: the task fails with it.
    fn aligned_checkpoint_timeout(&self) -> Observation {
        self.task_failed().unwrap_or(Observation::Done)
    }

    /// `checkpointStarted(cp)` on channel `c`: the coordinator's refusal, or what the channel
    /// wrote to the `ChannelStateWriter` for `cp`.
    fn checkpoint_started(&self, c: u8, cp: CheckpointId) -> Observation {
        let i = cp as usize - 1;
        let refusal = match self.post.checkpoints[i] {
            _ if self.pre.checkpoints[i] == self.post.checkpoints[i] => None,
            CheckpointStatus::DeclinedMissingBarrier => Some(Refusal::MissingBarrier),
            CheckpointStatus::DeclinedLaterBarrier => Some(Refusal::LaterBarrier),
            CheckpointStatus::Subsumed => Some(Refusal::Subsumed),
            _ => None,
        };
        if let Some(reason) = refusal {
            return Observation::Refused { checkpoint: cp, reason };
        }
        let start = self.pre.ch(c).ghost_persisted.len();
        let buffers = self.post.ch(c).ghost_persisted[start..]
            .iter()
            .filter(|(k, _)| *k == cp)
            .map(|(_, p)| Item::from(*p))
            .collect();
        Observation::Persisted {
            checkpoint: cp,
            buffers,
        }
    }

    /// The Netty server's write of channel `c`'s next `BufferResponse`, and what its reader
    /// has available next.
    fn send_buffer(&self, c: u8) -> Observation {
        let (before, producer) = (&self.pre.ch(c).producer, &self.post.ch(c).producer);
        let Some(w) = producer.wire.last().filter(|_| producer.wire.len() > before.wire.len()) else {
            return Observation::NothingSent;
        };
        // A data buffer without credit is not available to the reader, nor anything but a
        // priority element of a blocked subpartition.
        let next = match DataType::of_head(producer.head_available()) {
            DataType::DataBuffer if producer.reader_credit == Some(0) => DataType::None,
            next => next,
        };
        Observation::Sent {
            sent: WireElement {
                item: w.payload.into(),
                seq: w.seq,
                backlog: w.backlog as i32,
            },
            next,
        }
    }

    /// The Netty client's write of channel `c`'s `AddCredit`, if it wrote one.
    fn send_add_credit(&self, c: u8) -> Observation {
        let (before, after) = (self.pre.ch(c), self.post.ch(c));
        let (before, after) = (&before.add_credit_in_flight, &after.add_credit_in_flight);
        let credit = (after.len() > before.len()).then(|| *after.last().expect("grew") as i32);
        Observation::CreditSent { credit }
    }
}

// ---------------------------------------------------------------------------------------------
// The implementation's side
// ---------------------------------------------------------------------------------------------

/// The Netty stand-ins' state of a remote channel, kept by the driver.
#[derive(Clone, Debug, Default)]
pub struct NettyParts {
    /// The view reader's credit, once the partition request created it.
    pub reader_credit: Option<i32>,
    /// `BufferResponse`s on the wire, as the model names them.
    pub wire: Vec<WireElement>,
    /// `AddCredit` messages on the wire.
    pub add_credit_in_flight: Vec<i32>,
    /// An `AddCredit` write is queued (a `notifyCreditAvailable` not yet served).
    pub add_credit_queued: bool,
}

/// Everything the driver reads for one channel of the implementation.
pub struct ImplParts<'a> {
    /// Channel index.
    pub index: u8,
    /// What it is (or, not converted yet, what it becomes).
    pub kind: ChannelKind,
    /// Its buffer names.
    pub ids: IdMap,
    /// The channel's own snapshot.
    pub channel: &'a ImplChannel,
    /// How recovered buffers are delivered (the flag-off path polls a recovered channel).
    pub delivery: Delivery,
    /// The producer's subpartition.
    pub subpartition: &'a ResultSubpartitionSnapshot,
    /// The task's `ChannelStateWriter`.
    pub writer: &'a ChannelStateWriterSnapshot,
    /// The channel's floating-buffer pool.
    pub pool: &'a LocalBufferPoolSnapshot,
    /// The channel's global pool.
    pub global: &'a NetworkBufferPoolSnapshot,
    /// The Netty stand-ins (remote only).
    pub netty: Option<&'a NettyParts>,
    /// Buffers the consumer holds, in the order it got them.
    pub held: &'a [BufferId],
    /// What the gate handed on from the channel, in order.
    pub delivered: &'a [Item],
}

fn impl_persist(s: persister::CheckpointStatus) -> PersistStatus {
    match s {
        persister::CheckpointStatus::Completed => PersistStatus::Completed,
        persister::CheckpointStatus::BarrierPending => PersistStatus::BarrierPending,
        persister::CheckpointStatus::BarrierReceived => PersistStatus::BarrierReceived,
    }
}

fn impl_credit(p: &ImplParts<'_>, bm: &BufferManagerSnapshot, unannounced: i32, released: bool) -> Credit {
    let netty = p.netty.cloned().unwrap_or_default();
    Credit {
        notify_available: bm.notify_available,
        waiting_for_floating: bm.waiting_for_floating_buffers,
        required: bm.num_required_buffers,
        unannounced,
        add_credit_queued: netty.add_credit_queued && !released,
        resume_queued: false,
        add_credit_in_flight: netty.add_credit_in_flight,
        reader_credit: netty.reader_credit,
        wire: netty.wire,
        buffers: Buffers {
            exclusive: p.ids.bufs(&bm.exclusive),
            floating: p.ids.bufs(&bm.floating),
            pool: p.ids.bufs(&p.pool.available),
            global: p.ids.bufs(&p.global.available),
            held: p.ids.bufs(p.held),
        },
    }
}

/// The abstract view of one channel of the implementation: the gate holds a `LocalInputChannel`,
/// a `RemoteInputChannel`, or a `RecoveredInputChannel` not converted yet.
pub fn impl_channel(p: &ImplParts<'_>) -> ChannelView {
    match p.channel {
        ImplChannel::Local(l) => local_input_channel(p, l),
        ImplChannel::Remote(r) => remote_input_channel(p, r),
        ImplChannel::Recovered(r) => recovered_input_channel(p, r),
    }
}

fn local_input_channel(p: &ImplParts<'_>, l: &LocalInputChannelSnapshot) -> ChannelView {
    ChannelView {
        kind: ChannelKind::Local,
        in_recovery: l.in_recovery,
        released: l.released,
        error: false,
        partition_released: p.subpartition.released,
        upstream_ready: l.upstream_ready,
        state_consumed: is_done(&l.state_consumed),
        recovery_seq: l.recovery_sequence_number,
        // Flink 2.3.0's migrated buffers (`toBeConsumedBuffers`) are the model's queue too.
        queue: (l.recovered_buffers.iter().chain(&l.to_be_consumed_buffers))
            .map(|b| unnumbered(p, b))
            .collect(),
        priority_len: 0,
        stash: Vec::new(),
        pending_priority: l.has_pending_priority_event && l.in_recovery && !l.released,
        persist_status: impl_persist(l.persister.checkpoint_status),
        last_seen_barrier: l.persister.last_seen_barrier,
        persisted: written_for(p, l.channel_info, &p.writer.persisted),
        spilled: written_for(p, l.channel_info, &p.writer.spilled),
        delivered: p.delivered.to_vec(),
        subpartition: subpartition(p),
        subpartition_blocked: p.subpartition.is_blocked,
        // The recovery manager, when it has exclusive buffers to lend (a channel created without
        // recovery has none).
        credit: match &l.buffer_manager {
            Some(bm) if p.ids.exclusive > 0 => Some(impl_credit(p, bm, 0, l.released)),
            _ => None,
        },
    }
}

fn remote_input_channel(p: &ImplParts<'_>, r: &RemoteInputChannelSnapshot) -> ChannelView {
    // Remote elements are numbered when they arrive (or are appended in recovery).
    let numbered = |e: &SequenceBufferSnapshot| Element {
        item: item_of(p.index, &e.buffer),
        seq: Some(e.sequence_number),
        buffer: p.ids.buf(e.buffer.id),
    };
    ChannelView {
        kind: ChannelKind::Remote,
        in_recovery: r.in_recovery,
        released: r.released,
        error: r.error.is_some(),
        partition_released: p.subpartition.released,
        upstream_ready: r.upstream_ready,
        state_consumed: is_done(&r.state_consumed),
        recovery_seq: r.recovery_sequence_number,
        queue: r.received_buffers.iter().map(numbered).collect(),
        priority_len: r.num_priority_elements,
        stash: r.recovery_event_stash.iter().map(numbered).collect(),
        pending_priority: false,
        persist_status: impl_persist(r.persister.checkpoint_status),
        last_seen_barrier: r.persister.last_seen_barrier,
        persisted: written_for(p, r.channel_info, &p.writer.persisted),
        spilled: written_for(p, r.channel_info, &p.writer.spilled),
        delivered: p.delivered.to_vec(),
        subpartition: subpartition(p),
        subpartition_blocked: p.subpartition.is_blocked,
        credit: Some(Credit {
            resume_queued: r.resume_consumption_queued > 0,
            ..impl_credit(p, &r.buffer_manager, r.unannounced_credit, r.released)
        }),
    }
}

/// Not converted yet (conversion delivery). The model creates every channel set up, its
/// exclusive buffers assigned and credit notification off; the implementation assigns them in
/// `toInputChannel`'s `setup()`. Until then the exclusive segments still in the global pool are
/// shown as the channel's, where the model has them.
fn recovered_input_channel(p: &ImplParts<'_>, r: &RecoveredInputChannelSnapshot) -> ChannelView {
    ChannelView {
        kind: p.kind,
        // Flag off, the recovered channel stands for a physical channel created without
        // recovery, which the model's channel already is.
        in_recovery: p.delivery.needs_recovery(),
        released: r.released,
        error: false,
        partition_released: p.subpartition.released,
        upstream_ready: false,
        state_consumed: is_done(&r.state_consumed),
        recovery_seq: r.sequence_number,
        queue: r.received_buffers.iter().map(|b| unnumbered(p, b)).collect(),
        priority_len: 0,
        stash: Vec::new(),
        pending_priority: false,
        persist_status: PersistStatus::Completed,
        last_seen_barrier: -1,
        persisted: written_for(p, r.channel_info, &p.writer.persisted),
        spilled: written_for(p, r.channel_info, &p.writer.spilled),
        delivered: p.delivered.to_vec(),
        subpartition: subpartition(p),
        subpartition_blocked: p.subpartition.is_blocked,
        credit: (p.kind == ChannelKind::Remote).then(|| recovered_channel_credit(p, r)),
    }
}

/// A recovered remote channel's credit, as the physical channel it becomes shows it.
fn recovered_channel_credit(p: &ImplParts<'_>, r: &RecoveredInputChannelSnapshot) -> Credit {
    let mut credit = impl_credit(p, &r.buffer_manager, 0, r.released);
    // A recovered channel announces no credit whatever its manager's flag says (its
    // `notifyBufferAvailable` does nothing). It stands for the physical channel it becomes: in
    // recovery notify is off; flag off, that channel is created without recovery, notify on.
    credit.notify_available = !p.delivery.needs_recovery();
    let exclusive = |b: &Buf| matches!(b.0, NetBuf::Exclusive(_));
    credit
        .buffers
        .exclusive
        .extend(credit.buffers.global.iter().copied().filter(exclusive));
    credit.buffers.global.retain(|b| !exclusive(b));
    credit
}

/// What the `ChannelStateWriter` received from channel `info`, per checkpoint, in order, from
/// `written`: `addInputData`'s (persisted) or `addInputDataFromSpill`'s (spilled).
fn written_for(
    p: &ImplParts<'_>,
    info: InputChannelInfo,
    written: &BTreeMap<ImplCheckpointId, Vec<PersistedBuffer>>,
) -> BTreeMap<u8, Vec<Item>> {
    let c = p.index;
    let mut of_channel: BTreeMap<u8, Vec<Item>> = BTreeMap::new();
    for (cp, buffers) in written {
        for w in buffers.iter().filter(|w| w.channel == info) {
            of_channel.entry(*cp as u8).or_default().push(item_of(c, &w.buffer));
        }
    }
    of_channel
}

/// The producer's subpartition, head first.
fn subpartition(p: &ImplParts<'_>) -> Vec<Item> {
    p.subpartition.buffers.iter().map(|b| item_of(p.index, b)).collect()
}

/// `stateConsumedFuture.isDone()`: completed normally or exceptionally.
fn is_done(f: &FutureStatus) -> bool {
    *f != FutureStatus::Pending
}

/// A queue element that carries no sequence number (numbered when consumed, or not yet).
fn unnumbered(p: &ImplParts<'_>, b: &BufferSnapshot) -> Element {
    Element {
        item: item_of(p.index, b),
        seq: None,
        buffer: p.ids.buf(b.id),
    }
}

/// The channel an announcement pause point is for, where it names one: a floating buffer
/// handed to another channel's manager announces that channel's credit, on the thread of the
/// call that recycled it.
pub fn announces_for(point: PausePoint) -> Option<u8> {
    match point {
        PausePoint::Announce { channel, .. } => channel.map(|i| i as u8),
        _ => None,
    }
}

/// The abstract state of a thread of the implementation paused at `point` in a call on channel
/// `c` (names buffers with `ids`).
pub fn impl_pending(c: u8, ids: IdMap, point: PausePoint) -> Pending {
    match point {
        PausePoint::Announce { n, .. } => Pending::Announce {
            channel: announces_for(point).unwrap_or(c),
            n: n as u8,
        },
        PausePoint::EnableNotify => Pending::EnableNotify { channel: c },
        PausePoint::RereadPendingPriorityEvent => reread_pending(c),
        PausePoint::ClearPendingPriorityEvent => clear_pending(c),
        // The producer is not part of a snapshot; its `add` shows in the subpartition.
        PausePoint::NotifyPriorityEvent => Pending::Elsewhere {
            what: format!("the producer of channel {c} about to notify a priority event"),
        },
        PausePoint::OnSenderBacklog => Pending::SenderBacklog { channel: c },
        // The canceler is not part of a snapshot; its release shows in the channel's state.
        PausePoint::ReleaseQueuedBuffers => Pending::Elsewhere {
            what: format!("releasing channel {c}"),
        },
        // The IO thread is not part of a snapshot.
        PausePoint::RequestBufferBlocking => Pending::Elsewhere {
            what: format!("the drainer woken in requestBufferBlocking on channel {c}"),
        },
        PausePoint::OnRecoveredStateBuffer => Pending::Elsewhere {
            what: format!("the drainer filling its buffer for channel {c}"),
        },
        PausePoint::ReadInputData { gate }
        | PausePoint::FinishReadRecoveredState { gate }
        | PausePoint::Drain { gate } => Pending::Elsewhere {
            what: format!("channel-IO thread at gate {gate}"),
        },
        PausePoint::ReturnFloating { buffer } => match ids.buf(buffer) {
            Some(buffer) => Pending::ReturnFloating { channel: c, buffer },
            None => Pending::Elsewhere {
                what: format!("returning unknown floating buffer {} of channel {c}", buffer.0),
            },
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segment_ids_and_buffer_names_map_one_to_one() {
        let ids = IdMap::new(1, 2, 3);
        for b in [
            NetBuf::Floating(0),
            NetBuf::Floating(1),
            NetBuf::Exclusive(0),
            NetBuf::Exclusive(2),
        ] {
            assert_eq!(ids.buf(ids.id(b)), Some(Buf(b)));
        }
        assert_eq!(ids.buf(BufferId(ids.base + 5)), None);
        assert_eq!(ids.buf(BufferId(7)), None);
    }

    #[test]
    fn payloads_name_the_element_they_carry() {
        for item in [Item::Known(Payload::Recovered(2)), Item::Known(Payload::Data(1))] {
            let b = BufferSnapshot {
                id: BufferId(9),
                kind: BufferKind::Data,
                payload: payload_of(1, &item),
            };
            assert_eq!(item_of(1, &b), item);
            assert!(
                matches!(item_of(0, &b), Item::Unknown(_)),
                "another channel's data is unknown"
            );
        }
    }
}
