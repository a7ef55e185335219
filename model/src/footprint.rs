//! What each channel-level action reads and writes: its footprint, over the components of the
//! state below. Two actions whose footprints are independent (neither writes what the other
//! reads or writes) commute and leave each other enabled; `model/tests/footprint.rs` checks the
//! declarations against every step of a set of presets, and that independence.
//!
//! The components follow Flink's locks and threads rather than the state's types, so that what
//! two threads do to one channel under different locks is independent:
//!
//! * per channel `c`:
//!   - `consumer#c`: the channel's fields under its queue monitor (`receivedBuffers` /
//!     `recoveredBuffers`): the queue and stash, `inRecovery`, the sequence numbers,
//!     `upstreamReady`, the state-consumed future, `hasPendingPriorityEvent`, the view's
//!     listener, the last barrier, the persister, and the ghosts the task or the drainer
//!     record with them;
//!   - `released#c`: `isReleased` and the canceler being inside `releaseAllResources`, which
//!     the canceler alone writes and many threads read;
//!   - `error#c`: the cause `onError` keeps, which every Netty action of the channel reads;
//!   - `buffers#c`: the `BufferManager` (`bufferQueue`) and the segments it gave back to the
//!     global pool;
//!   - `held#c`: the network buffers the operator holds until the recycler drops them;
//!   - `credit#c`: `unannouncedCredit` and the client's queued `AddCredit` / `ResumeConsumption`
//!     writes;
//!   - `credit-wire#c`: those messages on the wire, client to server;
//!   - `subpartition#c`: the upstream's subpartition (under its lock) with its counters, its
//!     pending priority notification, and where each barrier left it (a ghost);
//!   - `reader#c`: the Netty server's view reader (`numCreditsAvailable`, the backlog it
//!     announced);
//!   - `wire#c`: the `BufferResponse`s on the wire, server to client;
//!   - `barriers#c`: how many checkpoints' barriers the upstream took, which the coordinator
//!     reads to abort the latest; apart from the subpartition so that the coordinator does not
//!     conflict with every write of the producer and the server;
//! * `pool#p`: a `LocalBufferPool` (one per channel, or the gate's one with `shared_pool`);
//! * `gate`: `inputChannelsWithData`;
//! * each thread's registers: `task` (the task's program counter), `task-announce`, `io` (the
//!   drainer's program counter, its parked flag and the buffer it fills), `client` (the Netty
//!   client between `onBuffer` and `onSenderBacklog`, and its announcement), `recycler`;
//! * `setup` (`requestPartitions` ran, the channels were converted), `closed` (`close()` ran);
//! * `handler`: the barrier handler's checkpoints, barriers seen, alignment and the upstream
//!   recovery tracker; `aborted`: the checkpoints the coordinator aborted;
//! * `halt`: a protocol assertion fired or the task failed. Every action reads it: once it is
//!   set no thread runs (`RecoveryModel::enabled_actions`);
//! * `ghosts`: the gate-wide ghosts (`ghost_converted`, `ghost_lent_across`).
//!
//! A declaration lists in `reads` everything the action's guard (its thread's program) and its
//! effect look at, and in `writes` everything it may change; every write is also a read (a
//! write that does not look at the old value is declared as one that does, which changes no
//! independence). It depends on the action's fields and on the configuration, and on the state
//! only where a static declaration would make an action depend on nearly every other: the pool
//! a channel borrows from; an assertion's write of `halt`, declared in the states where its
//! `checkState` fails (every action reads `halt`); the gate's turn, which fails and resumes
//! channels only in the states `gate_turn` names; the drainer's push, whose guard reads only
//! the trigger's lock once it holds a buffer, and which recycles that buffer only into a
//! released channel.

use crate::action::{Action, Thread};
use crate::config::{ChannelKind, Delivery, FlinkFix};
use crate::model::RecoveryModel;
use crate::state::producer::Producer;
use crate::state::{Channel, NetBuf, Payload, State, TaskPc};
use crate::variant::Variant;
use std::fmt;
use std::ops::{Add, BitOr, BitOrAssign};

/// A component of the state (see the module's documentation). Channel and pool indices are
/// below 4 (`MAX_CHANNELS`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Component {
    /// The channel's fields under its queue monitor.
    Consumer(u8),
    /// `isReleased`, and the canceler inside `releaseAllResources`.
    Released(u8),
    /// `InputChannel.cause` (`onError`).
    Error(u8),
    /// The `BufferManager` and the segments given back to the global pool.
    Buffers(u8),
    /// Network buffers the operator holds.
    Held(u8),
    /// How many checkpoints' barriers the upstream took (`producer.barriers`), which the
    /// coordinator reads apart from the rest of the subpartition.
    Barriers(u8),
    /// `unannouncedCredit` and the client's queued writes.
    Credit(u8),
    /// `AddCredit` and `ResumeConsumption` on the wire.
    CreditWire(u8),
    /// The upstream's subpartition.
    Subpartition(u8),
    /// The Netty server's view reader.
    Reader(u8),
    /// `BufferResponse`s on the wire.
    Wire(u8),
    /// A `LocalBufferPool`.
    Pool(u8),
    /// `inputChannelsWithData`.
    Gate,
    /// The task thread's program counter.
    Task,
    /// The task thread's pending credit announcement.
    TaskAnnounce,
    /// The drainer's program counter, parked flag and buffer.
    Io,
    /// The Netty client's backlog and announcement.
    Client,
    /// The recycler's pending work.
    Recycler,
    /// `partitions_requested`, `converted`.
    Setup,
    /// `closed`.
    Closed,
    /// The barrier handler: checkpoints, barriers seen, alignment, upstream recovery.
    Handler,
    /// The checkpoints the coordinator aborted.
    Aborted,
    /// An assertion fired or the task failed.
    Halt,
    /// The gate-wide ghosts.
    Ghosts,
}

/// Per-channel component kinds, in bit order (bit `4 * kind + channel`).
const PER_CHANNEL: [fn(u8) -> Component; 11] = [
    Component::Consumer,
    Component::Released,
    Component::Error,
    Component::Buffers,
    Component::Held,
    Component::Credit,
    Component::CreditWire,
    Component::Subpartition,
    Component::Reader,
    Component::Wire,
    Component::Barriers,
];
/// The components that are one for the whole gate, in bit order after the pools.
const GLOBAL: [Component; 12] = [
    Component::Gate,
    Component::Task,
    Component::TaskAnnounce,
    Component::Io,
    Component::Client,
    Component::Recycler,
    Component::Setup,
    Component::Closed,
    Component::Handler,
    Component::Aborted,
    Component::Halt,
    Component::Ghosts,
];

impl Component {
    /// Every component, in bit order.
    pub fn all() -> impl Iterator<Item = Component> {
        let channel = PER_CHANNEL.into_iter().flat_map(|k| (0..4).map(k));
        channel.chain((0..4).map(Component::Pool)).chain(GLOBAL)
    }

    /// The component's bit.
    pub fn bit(self) -> u64 {
        use Component::*;
        let channel = |kind: u32, c: u8| 4 * kind + c as u32;
        let i = match self {
            Consumer(c) => channel(0, c),
            Released(c) => channel(1, c),
            Error(c) => channel(2, c),
            Buffers(c) => channel(3, c),
            Held(c) => channel(4, c),
            Credit(c) => channel(5, c),
            CreditWire(c) => channel(6, c),
            Subpartition(c) => channel(7, c),
            Reader(c) => channel(8, c),
            Wire(c) => channel(9, c),
            Barriers(c) => channel(10, c),
            Pool(p) => 44 + p as u32,
            global => 48 + GLOBAL.iter().position(|g| *g == global).expect("a global component") as u32,
        };
        1 << i
    }
}

impl fmt::Display for Component {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use Component::*;
        let (name, index) = match *self {
            Consumer(c) => ("consumer", Some(c)),
            Released(c) => ("released", Some(c)),
            Error(c) => ("error", Some(c)),
            Buffers(c) => ("buffers", Some(c)),
            Held(c) => ("held", Some(c)),
            Credit(c) => ("credit", Some(c)),
            CreditWire(c) => ("credit-wire", Some(c)),
            Subpartition(c) => ("subpartition", Some(c)),
            Reader(c) => ("reader", Some(c)),
            Wire(c) => ("wire", Some(c)),
            Barriers(c) => ("barriers", Some(c)),
            Pool(p) => ("pool", Some(p)),
            Gate => ("gate", None),
            Task => ("task", None),
            TaskAnnounce => ("task-announce", None),
            Io => ("io", None),
            Client => ("client", None),
            Recycler => ("recycler", None),
            Setup => ("setup", None),
            Closed => ("closed", None),
            Handler => ("handler", None),
            Aborted => ("aborted", None),
            Halt => ("halt", None),
            Ghosts => ("ghosts", None),
        };
        match index {
            Some(i) => write!(f, "{name}#{i}"),
            None => f.write_str(name),
        }
    }
}

/// A set of components, one bit each.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Components(pub u64);

impl Components {
    /// No component.
    pub const EMPTY: Components = Components(0);

    /// Whether `c` is in the set.
    pub fn contains(self, c: Component) -> bool {
        self.0 & c.bit() != 0
    }

    /// Whether the two sets share no component.
    pub fn is_disjoint(self, other: Components) -> bool {
        self.0 & other.0 == 0
    }

    /// Whether every component of `self` is in `other`.
    pub fn is_subset(self, other: Components) -> bool {
        self.0 & !other.0 == 0
    }

    /// The set without the components of `other`.
    pub fn without(self, other: Components) -> Components {
        Components(self.0 & !other.0)
    }

    /// The components, in bit order.
    pub fn iter(self) -> impl Iterator<Item = Component> {
        Component::all().filter(move |c| self.contains(*c))
    }
}

impl From<Component> for Components {
    fn from(c: Component) -> Self {
        Components(c.bit())
    }
}

impl BitOr for Components {
    type Output = Components;
    fn bitor(self, other: Components) -> Components {
        Components(self.0 | other.0)
    }
}

impl BitOrAssign for Components {
    fn bitor_assign(&mut self, other: Components) {
        self.0 |= other.0;
    }
}

impl fmt::Display for Components {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<String> = self.iter().map(|c| c.to_string()).collect();
        write!(f, "{{{}}}", names.join(", "))
    }
}

/// What an action reads and what it may write; `writes` is a subset of `reads`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Footprint {
    /// What its guard and its effect look at.
    pub reads: Components,
    /// What it may change.
    pub writes: Components,
}

impl Footprint {
    /// Whether neither footprint writes what the other reads or writes.
    pub fn independent(&self, other: &Footprint) -> bool {
        self.writes.is_disjoint(other.reads | other.writes) && other.writes.is_disjoint(self.reads | self.writes)
    }
}

impl Add for Footprint {
    type Output = Footprint;
    fn add(self, other: Footprint) -> Footprint {
        Footprint {
            reads: self.reads | other.reads,
            writes: self.writes | other.writes,
        }
    }
}

/// Where a footprint is taken: in one state, or in any state of the model's shape, where every
/// condition on the state is taken to hold (the union of the footprints over all states).
#[derive(Clone, Copy)]
enum At<'a> {
    /// In this state.
    State(&'a State),
    /// In any state with this one's channels and pools.
    Any(&'a State),
}

impl<'a> At<'a> {
    /// The state's channels and pools, which no step changes.
    fn shape(self) -> &'a State {
        match self {
            At::State(s) | At::Any(s) => s,
        }
    }

    /// Whether `cond` may hold: in a state, whether it does; in any state, yes.
    fn may(self, cond: impl FnOnce(&State) -> bool) -> bool {
        match self {
            At::State(s) => cond(s),
            At::Any(_) => true,
        }
    }
}

/// A footprint that reads `reads` and updates (reads and may write) `updates`.
fn fp(reads: Components, updates: Components) -> Footprint {
    Footprint {
        reads: reads | updates,
        writes: updates,
    }
}

/// `set` if `cond`, else nothing.
fn when(cond: bool, set: Components) -> Components {
    if cond { set } else { Components::EMPTY }
}

const NONE: Components = Components::EMPTY;
const GATE: Components = Components(1 << 48);
const TASK: Components = Components(1 << 49);
const TASK_ANNOUNCE: Components = Components(1 << 50);
const IO: Components = Components(1 << 51);
const CLIENT: Components = Components(1 << 52);
const RECYCLER: Components = Components(1 << 53);
const SETUP: Components = Components(1 << 54);
const CLOSED: Components = Components(1 << 55);
const HANDLER: Components = Components(1 << 56);
const ABORTED: Components = Components(1 << 57);
const HALT: Components = Components(1 << 58);
const GHOSTS: Components = Components(1 << 59);

fn consumer(c: u8) -> Components {
    Component::Consumer(c).into()
}
fn released(c: u8) -> Components {
    Component::Released(c).into()
}
fn error(c: u8) -> Components {
    Component::Error(c).into()
}
fn buffers(c: u8) -> Components {
    Component::Buffers(c).into()
}
fn held(c: u8) -> Components {
    Component::Held(c).into()
}
fn credit(c: u8) -> Components {
    Component::Credit(c).into()
}
fn credit_wire(c: u8) -> Components {
    Component::CreditWire(c).into()
}
fn subpartition(c: u8) -> Components {
    Component::Subpartition(c).into()
}
fn reader(c: u8) -> Components {
    Component::Reader(c).into()
}
fn wire(c: u8) -> Components {
    Component::Wire(c).into()
}
fn barriers(c: u8) -> Components {
    Component::Barriers(c).into()
}
fn pool(at: At, c: u8) -> Components {
    Component::Pool(at.shape().pool_index(c) as u8).into()
}

/// `f` of every channel.
fn every(at: At, f: impl Fn(u8) -> Components) -> Components {
    (0..at.shape().channels.len() as u8).fold(NONE, |acc, c| acc | f(c))
}

/// `f` of every channel of `kind`.
fn every_of(m: &RecoveryModel, at: At, kind: ChannelKind, f: fn(u8) -> Components) -> Components {
    every(at, |c| when(m.kind(c) == kind, f(c)))
}

/// The gate's queue, where the model keeps it (`notify` is a no-op otherwise).
fn gate(m: &RecoveryModel) -> Components {
    when(m.models_gate_queue(), GATE)
}

/// Whether checkpoint `cp`'s barrier waits for the one before it to end (`triggered`).
fn waits_for_previous(m: &RecoveryModel, cp: u8) -> Components {
    let overlapping = m.cfg.overlapping_checkpoints || m.variant == Variant::ConcurrentUnalignedCheckpoints;
    when(cp > 1 && !overlapping, HANDLER | ABORTED)
}

/// The drainer's guard for a push into channel `c` (`io_actions`): with a buffer in hand (or
/// heap memory) only whether the trigger holds its lock; else `upstreamReady`, the release, the
/// manager and the pool.
fn drainer_push(m: &RecoveryModel, at: At, c: u8) -> Components {
    // The trigger holds the drainer's lock between its first channel's insertion and its last.
    let trigger_lock = when(
        m.cfg.delivery == Delivery::Drainer && at.shape().channels.len() > 1,
        TASK,
    );
    let taken = |s: &State| !m.lends_recovery_buffers(c) || m.is_recovered_channel(s) || s.io_buffer.is_some();
    IO | SETUP
        | trigger_lock
        | when(
            at.may(|s| !taken(s)),
            consumer(c) | released(c) | buffers(c) | pool(at, c),
        )
}

/// `LocalBufferPool.recycle` of channel `c`'s floating buffer: the pool, or the global pool once
/// closed; each channel borrowing from the pool may be its listener, and (`announce`) announce
/// the credit in the same step.
fn to_pool(m: &RecoveryModel, at: At, c: u8, announce: bool) -> Footprint {
    let wake = m.cfg.has_fix(FlinkFix::WakeOnRefusedBuffer);
    let s = at.shape();
    let mut sharers = NONE;
    for l in (0..s.channels.len() as u8).filter(|&l| s.pool_index(l) == s.pool_index(c)) {
        let announces = announce && m.kind(l) == ChannelKind::Remote;
        sharers |= buffers(l) | released(l) | when(announces, credit(l));
    }
    fp(CLOSED, buffers(c) | pool(at, c) | GHOSTS | when(wake, IO) | sharers)
}

/// `resumeConsumption` of every channel: local views unblocked (`checkState(isBlocked)`), remote
/// `ResumeConsumption`s queued, the gate notified, the alignment's blocked channels taken.
fn resume(m: &RecoveryModel, at: At) -> Footprint {
    let local = every_of(m, at, ChannelKind::Local, subpartition);
    let remote = every_of(m, at, ChannelKind::Remote, credit);
    fp(every(at, released), HANDLER | HALT | gate(m) | local | remote)
}

/// `internalRequestPartitions`: local views (reading the subpartitions), remote readers.
fn request_partitions(m: &RecoveryModel, at: At) -> Footprint {
    let readers = every_of(m, at, ChannelKind::Remote, reader);
    fp(
        every(at, released) | every(at, subpartition),
        SETUP | every(at, consumer) | gate(m) | readers,
    )
}

/// One turn of the gate on channel `c`: `getNextBuffer` (or its second half), the handler's
/// part (barriers, announcements, the sentinel, the upstream recovery tracker and what they
/// complete or resume), the requeue and the producers' notifications the turn held back.
///
/// It fails (`halt`) only where its poll throws (a failed upstream, `faults`), where a local
/// channel's pending priority event is not at the view's head (`checkState`), or where it
/// resumes channels (`checkState(isBlocked)`); the conversion of an announced barrier may
/// throw with `aligned_checkpoint_timeout`. It resumes every channel only when it may poll the
/// last `EndOfOutputChannelStateEvent` (each upstream writes one, first), or, with
/// `aligned_checkpoint_timeout`, when an aligned checkpoint ends.
fn gate_turn(m: &RecoveryModel, at: At, c: u8) -> Footprint {
    let local = m.kind(c) == ChannelKind::Local;
    let aligned = m.cfg.aligned_checkpoint_timeout;
    let every_channel = (1u8 << at.shape().channels.len()) - 1;
    let last_end_of_output =
        at.may(|s| s.upstream_recovered & 1 << c == 0 && (s.upstream_recovered | 1 << c) == every_channel);
    let throws = at.may(|s| {
        let ch = s.ch(c);
        let head_is_barrier = matches!(ch.producer.subpartition.first(), Some(Payload::Barrier(_)));
        ch.error || ch.producer.released || aligned || (local && ch.pending_priority && !head_is_barrier)
    });
    // The view of a local channel (or, in a variant, any channel's subpartition), and the
    // producers' notifications held back by the turn (`priority_notify_step`).
    let view = m.kind(c) == ChannelKind::Local || m.variant == Variant::RecoveryCompletionNotBlocking;
    let notified = every(at, |k| {
        when(m.cfg.channels[k as usize].priority_notify_step, subpartition(k))
    });
    let reads = TASK_ANNOUNCE | SETUP | CLOSED | error(c) | every(at, released);
    let turn = TASK | HANDLER | GHOSTS | gate(m) | held(c) | every(at, consumer) | when(view, subpartition(c));
    let resumes = aligned || last_end_of_output;
    fp(reads, turn | notified | when(throws, HALT)) + maybe(resumes, resume(m, at))
}

/// `releaseAllResources` of channel `c`: `isReleased`, the queue under the channel's lock,
/// `releaseAllBuffers`, the floating buffers to the pool.
fn release(m: &RecoveryModel, at: At, c: u8) -> Footprint {
    fp(NONE, released(c) | consumer(c) | buffers(c)) + to_pool(m, at, c, true)
}

/// `f` if `cond`, else nothing.
fn maybe(cond: bool, f: Footprint) -> Footprint {
    if cond { f } else { Footprint::default() }
}

/// Whether the append of a recovered buffer or the sentinel fails `checkState(inRecovery)`.
fn push_fails(m: &RecoveryModel, s: &State, c: u8) -> bool {
    !m.is_recovered_channel(s) && !s.ch(c).released && !s.ch(c).in_recovery
}

/// Whether `onBuffer` fails: a data buffer for which `requestBuffer()` finds nothing, or that
/// arrives in recovery.
fn on_buffer_fails(s: &State, c: u8) -> bool {
    let ch = s.ch(c);
    let data = ch.producer.wire.first().is_some_and(|w| w.payload.is_data());
    !ch.released && data && (ch.in_recovery || ch.bm.available() == 0)
}

/// Whether `onBuffer` releases the floating buffers (`onBlockingUpstream` without exclusive ones).
fn on_buffer_releases(m: &RecoveryModel, s: &State, c: u8) -> bool {
    let blocking = s
        .ch(c)
        .producer
        .wire
        .first()
        .is_some_and(|w| w.payload.is_blocking_upstream());
    blocking && m.cfg.channels[c as usize].exclusive == 0
}

/// The footprint of `action` in `state`.
pub fn footprint(m: &RecoveryModel, s: &State, action: &Action) -> Footprint {
    footprint_at(m, At::State(s), action)
}

/// What `action` may read and write in any state shaped as `shape` (its channels and pools):
/// the union of its footprints over every state, for a look ahead past the current one.
pub fn static_footprint(m: &RecoveryModel, shape: &State, action: &Action) -> Footprint {
    footprint_at(m, At::Any(shape), action)
}

/// The footprint of `action` `at` a state or any: one arm per action kind, each naming why; a
/// table, one line per component set, so not laid out by rustfmt.
#[rustfmt::skip]
fn footprint_at(m: &RecoveryModel, at: At, action: &Action) -> Footprint {
    use Action::*;
    let local = |c: u8| m.kind(c) == ChannelKind::Local;
    let exclusive = |c: u8| m.cfg.channels[c as usize].exclusive;
    let announce = m.cfg.has_fix(FlinkFix::AnnounceUnderQueueLock);
    let aligned = m.cfg.aligned_checkpoint_timeout;
    let conversion = m.cfg.delivery == Delivery::Conversion;
    let (consumers, releases) = (every(at, consumer), every(at, released));
    let declared = match *action {
        // Drainer: its buffer appended under the channel's lock (a released channel recycles it).
        OnRecoveredStateBuffer { channel: c } => {
            let (fails, recycles) = (at.may(|s| push_fails(m, s, c)), at.may(|s| s.io_buffer.is_some() && s.ch(c).released));
            fp(drainer_push(m, at, c) | released(c), IO | consumer(c) | gate(m) | when(fails, HALT | held(c)))
                + maybe(recycles, fp(NONE, buffers(c)) + to_pool(m, at, c, true))
        }
        // Drainer: `bufferQueue` of the manager and the pool it borrows from (`requestBufferBlocking`).
        RequestBufferBlocking { channel: c } => fp(drainer_push(m, at, c), IO | buffers(c) | pool(at, c)),
        // Drainer: the sentinel under the channel's lock; in B5 the task's, converting the channels after it.
        FinishRecoveredBufferDelivery { channel: c } => match conversion {
            false => fp(SETUP | released(c), IO | consumer(c) | gate(m) | when(at.may(|s| push_fails(m, s, c)), HALT)),
            true => fp(TASK_ANNOUNCE | releases, TASK | HALT | gate(m) | consumers)
                + request_partitions(m, at),
        },
        // Task mail: every channel converted under its lock, then `requestPartitions`.
        ConvertRecoveredInputChannels => {
            let reads = TASK | TASK_ANNOUNCE | SETUP | CLOSED | IO | releases;
            fp(reads, consumers | gate(m) | when(conversion, TASK | HALT)) + request_partitions(m, at)
        }
        // Task mail: `requestPartitions` under the gate's `requestLock`.
        RequestPartitions => fp(TASK | TASK_ANNOUNCE | CLOSED, NONE) + request_partitions(m, at),
        // Task: a turn of the gate (`inputChannelsWithData`, the channel's lock, the barrier handler).
        GetNextBuffer { channel: c } => gate_turn(m, at, c),
        // Task: the trigger's insertion under the channel's lock (and the drainer's, which two variants read).
        InsertRecoveryCheckpointBarrier { channel: c, .. } => {
            let drainer = [Variant::TriggerSwappedWhenDrainFinishes, Variant::SpillSnapshotAtReadPosition];
            let drainer = drainer.contains(&m.variant);
            fp(TASK_ANNOUNCE | released(c) | when(drainer, IO), TASK | consumer(c) | gate(m))
        }
        // Task: `checkpointStarted` under the channel's lock; a decline or the completion touches every persister.
        CheckpointStarted { .. } => fp(TASK_ANNOUNCE, TASK | HANDLER | consumers) + maybe(aligned, resume(m, at)),
        // Task: `onRecoveredStateConsumed` under the channel's lock (`checkState(inRecovery)`).
        OnRecoveredStateConsumed { channel: c } => {
            fp(TASK_ANNOUNCE | released(c), TASK | consumer(c) | gate(m) | when(at.may(|s| !s.ch(c).in_recovery), HALT))
        }
        // Task: `bufferQueue` (`enableNotify`), then the state-consumed future or the announcement.
        EnableNotify { channel: c } => fp(NONE, TASK | TASK_ANNOUNCE | consumer(c) | buffers(c)),
        // The thread's pending announcement; remote: `unannouncedCredit` (and the task's state-consumed future).
        NotifyBufferAvailable { thread, channel: c, .. } => {
            let register = match thread { Thread::Task => TASK_ANNOUNCE, Thread::NettyClient => CLIENT, _ => RECYCLER };
            let future = when(thread == Thread::Task, consumer(c));
            fp(when(!local(c), released(c)), register | when(!local(c), credit(c) | future))
        }
        // Producer: the subpartition's lock; a local listener is told at once, or in the next step.
        EmitCheckpointBarrier { channel: c, cp } => {
            let split = m.cfg.channels[c as usize].priority_notify_step;
            let tells = when(local(c) && !split, consumer(c) | gate(m));
            fp(waits_for_previous(m, cp) | when(split, consumer(c)), subpartition(c) | barriers(c) | tells)
        }
        // Producer: the subpartition's lock.
        EmitTimeoutableCheckpointBarrier { channel: c, cp } => fp(waits_for_previous(m, cp), subpartition(c) | barriers(c)),
        // Producer: the subpartition's lock.
        AlignedBarrierTimeout { channel: c, .. } => fp(NONE, subpartition(c)),
        // Task mail: the barrier handler converts every announced barrier under its channel's lock.
        AlignedCheckpointTimeout { .. } => {
            fp(TASK_ANNOUNCE | SETUP | CLOSED, TASK | HANDLER | HALT | GHOSTS | gate(m) | consumers)
        }
        // Producer: the listener's flag, then `inputChannelsWithData` unless the task's turn holds it.
        NotifyPriorityEvent { channel: c } => fp(TASK, subpartition(c) | consumer(c) | gate(m)),
        // Task: the rest of the gate's turn.
        ClearPendingPriorityEvent { channel: c } => gate_turn(m, at, c),
        // Task: the rest of the gate's turn.
        RereadPendingPriorityEvent { channel: c } => gate_turn(m, at, c),
        // Netty server: the subpartition's lock, the reader's credit, the wire.
        SendBuffer { channel: c } => fp(error(c), subpartition(c) | reader(c) | wire(c)),
        // Netty server: the oldest message on the wire, the reader's credit.
        OnAddCredit { channel: c } => fp(error(c), credit_wire(c) | reader(c)),
        // Netty server: the oldest message, the reader, the subpartition (`checkState(isBlocked)`).
        OnResumeConsumption { channel: c } => {
            let fails = at.may(|s| !s.ch(c).producer.blocked);
            fp(error(c), credit_wire(c) | subpartition(c) | when(exclusive(c) == 0, reader(c)) | when(fails, HALT))
        }
        // Netty server: the reader's backlog, read from the subpartition, and the wire.
        AnnounceBacklog { channel: c } => fp(error(c) | subpartition(c), reader(c) | wire(c)),
        // Netty client: the wire, the channel's lock, `bufferQueue` (`requestBuffer`), the released floating buffers.
        OnBuffer { channel: c } => {
            let updates = CLIENT | wire(c) | consumer(c) | buffers(c) | gate(m) | when(at.may(|s| on_buffer_fails(s, c)), HALT);
            fp(error(c) | released(c), updates) + maybe(at.may(|s| on_buffer_releases(m, s, c)), to_pool(m, at, c, true))
        }
        // Netty client: `bufferQueue` and the pool (`requestFloatingBuffers`), checked for `backlog + initialCredit`.
        OnSenderBacklog { channel: c } => {
            let variant = m.variant == Variant::OnSenderBacklogWithoutInitialCredit;
            let fails = variant && exclusive(c) > 0 && at.may(|s| !s.ch(c).released);
            fp(released(c), CLIENT | buffers(c) | pool(at, c) | when(fails, HALT))
        }
        // Netty client: `getAndResetUnannouncedCredit` and the wire.
        SendAddCredit { channel: c } => fp(CLIENT | error(c) | released(c), credit(c) | credit_wire(c)),
        // Netty client: the queued write and the wire.
        SendResumeConsumption { channel: c } => fp(CLIENT | error(c) | released(c), credit(c) | credit_wire(c)),
        // Recycler: the operator's buffer to `bufferQueue`, or a floating one to the pool.
        Recycle { channel: c, buffer } => {
            let floating = matches!(buffer, NetBuf::Floating(_));
            fp(released(c), RECYCLER | held(c) | buffers(c)) + maybe(floating, to_pool(m, at, c, announce))
        }
        // Recycler: the pool (`LocalBufferPool.recycle`).
        ReturnFloatingBuffer { channel: c, .. } => fp(NONE, RECYCLER) + to_pool(m, at, c, announce),
        // Producer: the subpartition's lock; a local listener is told.
        AddBuffer { channel: c } => fp(when(local(c), consumer(c)), subpartition(c) | when(local(c), gate(m))),
        // Producer: the subpartition's lock, guarded by the view's listener.
        ReleasePartition { channel: c } => fp(consumer(c), subpartition(c)),
        // Netty client: `setError`, then the gate.
        OnError { channel: c } => fp(CLIENT | SETUP | released(c), error(c) | gate(m)),
        // Canceler: `isReleased`, the channel's lock, `bufferQueue`, the pool.
        ReleaseAllResources { channel: c } => fp(SETUP | releases, NONE) + release(m, at, c),
        // Canceler: the rest of `releaseAllResources`.
        ReleaseQueuedBuffers { channel: c } => fp(releases, NONE) + release(m, at, c),
        // Canceler: `close()` releases every channel, then destroys every pool.
        CloseGate => {
            let channels = releases | consumers | every(at, buffers) | every(at, |c| pool(at, c));
            (0..at.shape().channels.len() as u8).fold(fp(SETUP, CLOSED | channels), |f, c| f + to_pool(m, at, c, true))
        }
        // Coordinator: its own record, guarded by the latest barrier any upstream took.
        AbortPendingCheckpoint { .. } => fp(every(at, barriers), ABORTED),
    };
    // `enabled_actions` asks no thread once an assertion fired or the task failed.
    declared + fp(HALT, NONE)
}

/// Whether the consumer parts of two channels differ.
fn consumer_changed(b: &Channel, a: &Channel) -> bool {
    (
        &b.queue,
        b.priority_len,
        &b.stash,
        b.in_recovery,
        b.recovery_seq,
        b.upstream_ready,
    ) != (
        &a.queue,
        a.priority_len,
        &a.stash,
        a.in_recovery,
        a.recovery_seq,
        a.upstream_ready,
    ) || (
        b.state_consumed,
        b.pending_priority,
        b.listener,
        b.last_barrier,
        b.persister,
    ) != (
        a.state_consumed,
        a.pending_priority,
        a.listener,
        a.last_barrier,
        a.persister,
    ) || (
        b.ghost_pushed,
        &b.ghost_delivered,
        &b.ghost_freed,
        &b.ghost_persisted,
        b.ghost_replayed,
    ) != (
        a.ghost_pushed,
        &a.ghost_delivered,
        &a.ghost_freed,
        &a.ghost_persisted,
        a.ghost_replayed,
    ) || (&b.ghost_rcb_at, &b.ghost_spilled, &b.ghost_started_at)
        != (&a.ghost_rcb_at, &a.ghost_spilled, &a.ghost_started_at)
}

/// The components of channel `c` that differ between `b` and `a`. Every field is named, so a new
/// one does not compile until it is given a component.
fn channel_changed(c: u8, b: &Channel, a: &Channel) -> Components {
    let Channel {
        queue: _,
        priority_len: _,
        stash: _,
        in_recovery: _,
        recovery_seq: _,
        upstream_ready: _,
        released,
        releasing,
        state_consumed: _,
        pending_priority: _,
        listener: _,
        error: cause,
        last_barrier: _,
        persister: _,
        bm,
        unannounced_credit,
        add_credit_queued,
        resume_queued,
        add_credit_in_flight,
        held: operator,
        global_pool,
        producer,
        ghost_pushed: _,
        ghost_delivered: _,
        ghost_freed: _,
        ghost_persisted: _,
        ghost_replayed: _,
        ghost_rcb_at: _,
        ghost_spilled: _,
        ghost_started_at: _,
        ghost_barrier_after,
    } = b;
    let Producer {
        emitted,
        barriers,
        subpartition: queued,
        released: upstream_released,
        reader_credit,
        next_seq,
        wire: responses,
        notify_pending,
        notify_blocked,
        backlog_announced,
        blocked,
    } = producer;
    let p = &a.producer;
    let differ = [
        consumer_changed(b, a),
        (released, releasing) != (&a.released, &a.releasing),
        *cause != a.error,
        (bm, global_pool) != (&a.bm, &a.global_pool),
        *operator != a.held,
        (unannounced_credit, add_credit_queued, resume_queued)
            != (&a.unannounced_credit, &a.add_credit_queued, &a.resume_queued),
        *add_credit_in_flight != a.add_credit_in_flight,
        (emitted, queued, upstream_released, next_seq, notify_pending)
            != (&p.emitted, &p.subpartition, &p.released, &p.next_seq, &p.notify_pending)
            || (notify_blocked, blocked, ghost_barrier_after)
                != (&p.notify_blocked, &p.blocked, &a.ghost_barrier_after),
        (reader_credit, backlog_announced) != (&p.reader_credit, &p.backlog_announced),
        *responses != p.wire,
        *barriers != p.barriers,
    ];
    (PER_CHANNEL.iter().zip(differ))
        .filter(|(_, d)| *d)
        .fold(Components::EMPTY, |acc, (k, _)| acc | k(c).into())
}

/// The task's program counter if it failed: with `violation`, what `halt` is made of.
fn failed(task: &TaskPc) -> Option<&TaskPc> {
    matches!(task, TaskPc::Failed { .. }).then_some(task)
}

/// The components in which `after` differs from `before`: what a step from one to the other
/// actually wrote. Every field of the state is named, so a new one does not compile until it is
/// given a component.
pub fn changed_components(before: &State, after: &State) -> Components {
    let State {
        channels,
        gate,
        pools,
        task,
        partitions_requested,
        converted,
        closed,
        checkpoints,
        barriers_seen,
        io_pc,
        io_waiting,
        io_buffer,
        task_announce,
        client_backlog,
        client_announce,
        recycler,
        violation,
        alignment,
        ghost_converted,
        ghost_lent_across,
        upstream_recovered,
        aborted,
    } = before;
    let a = after;
    let mut changed = Components::EMPTY;
    for (c, (b, a)) in channels.iter().zip(&a.channels).enumerate() {
        changed |= channel_changed(c as u8, b, a);
    }
    for (p, (b, a)) in pools.iter().zip(&a.pools).enumerate() {
        changed |= when(b != a, Component::Pool(p as u8).into());
    }
    let globals = [
        (GATE, *gate != a.gate),
        (TASK, *task != a.task),
        (TASK_ANNOUNCE, *task_announce != a.task_announce),
        (
            IO,
            (io_pc, io_waiting, io_buffer) != (&a.io_pc, &a.io_waiting, &a.io_buffer),
        ),
        (
            CLIENT,
            (client_backlog, client_announce) != (&a.client_backlog, &a.client_announce),
        ),
        (RECYCLER, *recycler != a.recycler),
        (
            SETUP,
            (partitions_requested, converted) != (&a.partitions_requested, &a.converted),
        ),
        (CLOSED, *closed != a.closed),
        (
            HANDLER,
            (checkpoints, barriers_seen, alignment, upstream_recovered)
                != (&a.checkpoints, &a.barriers_seen, &a.alignment, &a.upstream_recovered),
        ),
        (ABORTED, *aborted != a.aborted),
        (HALT, (violation, failed(task)) != (&a.violation, failed(&a.task))),
        (
            GHOSTS,
            (ghost_converted, ghost_lent_across) != (&a.ghost_converted, &a.ghost_lent_across),
        ),
    ];
    for (component, differs) in globals {
        changed |= when(differs, component);
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_component_has_its_own_bit_and_the_constants_name_them() {
        let all: Vec<Component> = Component::all().collect();
        let bits = all.iter().fold(0u64, |acc, c| {
            assert_eq!(acc & c.bit(), 0, "{c} shares a bit");
            acc | c.bit()
        });
        assert_eq!(bits.count_ones() as usize, all.len());
        let constants = [
            (GATE, Component::Gate),
            (TASK, Component::Task),
            (TASK_ANNOUNCE, Component::TaskAnnounce),
            (IO, Component::Io),
            (CLIENT, Component::Client),
            (RECYCLER, Component::Recycler),
            (SETUP, Component::Setup),
            (CLOSED, Component::Closed),
            (HANDLER, Component::Handler),
            (ABORTED, Component::Aborted),
            (HALT, Component::Halt),
            (GHOSTS, Component::Ghosts),
        ];
        for (set, c) in constants {
            assert_eq!(set, c.into(), "{c}");
        }
        assert_eq!((consumer(1) | wire(3)).to_string(), "{consumer#1, wire#3}");
    }

    #[test]
    fn independence_is_symmetric_and_a_shared_write_is_a_conflict() {
        let a = fp(GATE, consumer(0));
        let b = fp(GATE, consumer(1));
        let c = fp(consumer(0), NONE);
        assert!(a.independent(&b) && b.independent(&a));
        assert!(!a.independent(&c) && !c.independent(&a));
        assert!(c.independent(&c), "two reads do not conflict");
    }
}
