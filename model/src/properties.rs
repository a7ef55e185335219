//! Properties, each named after what it protects. `always` properties are safety, checked in
//! every reachable state; `eventually` properties are liveness, sound here because the state
//! graph is acyclic and each predicate is stable (see docs/model.md); `sometimes` properties
//! prove that the interesting situations are reachable, so the safety checks are not vacuous.

use crate::config::{ChannelKind, Delivery, FlinkFix};
use crate::model::RecoveryModel;
use crate::state::channel_state_persister::PersistStatus;
use crate::state::*;
use smallvec::SmallVec;
use stateright::Property;

pub mod reads;

use crate::property_table::properties;

properties! {
    /// A property of the channel model. Code refers to properties by this key; the name
    /// ([`PropertyId::name`]) is what reports, JSON and JUnit show.
    pub enum PropertyId for RecoveryModel, State;
    // --- safety ---
    RecoveredDataPrecedesLiveData: Always, "recovered data precedes live data", recovered_data_precedes_live_data;
    LiveDataHiddenDuringRecovery: Always, "live data stays hidden during recovery", live_data_hidden_during_recovery;
    ExactlyOnceDelivery: Always, "exactly-once delivery", exactly_once_delivery;
    SentinelDiscipline: Always, "sentinel discipline", sentinel_discipline;
    RecoverySequenceNumbers: Always, "recovery sequence numbers", recovery_sequence_numbers;
    NoCreditDuringRecovery: Always, "no credit during recovery", no_credit_during_recovery;
    CreditConservation: Always, "credit conservation", credit_conservation;
    NoLostCredit: Always, "no lost credit", no_lost_credit;
    BufferOwnership: Always, "buffer ownership", buffer_ownership;
    PersistedAtMostOnce: Always, "persisted at most once", persisted_at_most_once;
    PersistedContentIsExact: Always, "persisted content is exact", persisted_content_is_exact;
    RecoveredStateFromItsSource: Always, "recovered state persisted from its source",
        recovered_state_from_its_source;
    StashHoldsOnlyEventsInOrder: Always, "stash holds only events in order", stash_holds_only_events_in_order;
    PriorityEventsFirst: Always, "priority events first", priority_events_first;
    NoProtocolViolation: Always, "no protocol violation", no_protocol_violation;
    NoLostNotification: Always, "no lost notification", no_lost_notification;
    NoDeclineOnLiveChannelInRecovery: Always, "no checkpoint declined on a live channel in recovery",
        no_checkpoint_declined_on_a_live_channel_in_recovery;
    // A split priority notification breaks it (docs/findings.md).
    PriorityHonoured: Always, "priority channels have priority events", priority_channels_have_priority_events;
    // The alignment timer breaks it when the announced barrier is still in the recovery event
    // stash (docs/findings.md).
    AnnouncedBarrierFound: Always, "convertToPriorityEvent finds the announced barrier", announced_barrier_found;
    ReleasedManagerHoldsNothing: Always, "a released channel's buffer manager holds nothing",
        a_released_channels_buffer_manager_holds_nothing;
    PriorityElementsArePrioritised: Always, "a queued channel with a priority element is in the priority section",
        a_queued_channel_with_a_priority_element_is_in_the_priority_section;
    QueuedRecoveryNumbersIncrease: Always, "queued recovery elements are numbered in increasing order",
        queued_recovery_elements_are_numbered_in_increasing_order;
    RequiredIsBacklogPlusInitialCredit: Always, "after onSenderBacklog a channel requires its backlog plus its initial credit",
        requires_backlog_plus_initial_credit_after_on_sender_backlog;
    RecoveredDataInLentBuffers: Always, "recovered data on a lending channel sits in a buffer its manager lent",
        recovered_data_on_a_lending_channel_sits_in_a_lent_buffer;
    DeclinedCheckpointPersistsNothing: Always, "no channel persists for a checkpoint the task declined",
        no_channel_persists_for_a_declined_checkpoint;
    SubsumedOnlyByNewer: Always, "a checkpoint is subsumed only by a newer one",
        a_checkpoint_is_subsumed_only_by_a_newer_one;
    LiveNumbersFromTheProducer: Always, "live elements carry the numbers their producer gave them",
        live_elements_carry_the_numbers_their_producer_gave_them;
    CheckpointsDoNotOverlap: Always, "unaligned checkpoints never overlap", unaligned_checkpoints_never_overlap;
    TriggeredByItsBarriers: Always, "a checkpoint is triggered when its barriers say so",
        a_checkpoint_is_triggered_when_its_barriers_say_so;
    ConvertedOnlyOnceUnaligned: Always, "announced barriers are converted only once the alignment timed out",
        announced_barriers_are_converted_only_once_the_alignment_timed_out;
    // --- liveness ---
    RecoveryCompletes: Eventually, "recovery completes unless released", recovery_completes;
    AllLiveDataDelivered: Eventually, "all live data is delivered", all_live_data_delivered;
    EveryCheckpointEnds: Eventually, "every checkpoint ends", every_checkpoint_ends;
    EveryBufferReturnsHome: Eventually, "every buffer returns home", every_buffer_returns_home;
    // --- reachability ---
    CheckpointPersistsRecoveredData: Sometimes, "checkpoint persists recovered data",
        checkpoint_persists_recovered_data;
    // Needs the drainer and recovery barriers.
    CheckpointSpillsUndrainedData: Sometimes, "checkpoint spills data not yet drained",
        checkpoint_spills_undrained_data;
    CheckpointPersistsLiveData: Sometimes, "checkpoint persists in-window live data", checkpoint_persists_live_data;
    EventStashedAndReplayed: Sometimes, "event stashed and replayed", event_stashed_and_replayed;
    RecycleRacesEnableNotify: Sometimes, "recycle races enableNotify", recycle_races_enable_notify;
    CheckpointDeclinedForMissingBarrier: Sometimes, "checkpoint declined for missing barrier",
        declined_for_missing_barrier;
    // Needs `shared_pool`.
    LentAcross: Sometimes, "floating buffer passes to another channel", lent_across;
    CheckpointCompletesDuringRecovery: Sometimes, "checkpoint completes during recovery",
        checkpoint_completes_during_recovery;
    RecoveryBarrierBehindSentinel: Sometimes, "recovery barrier queued behind the sentinel", barrier_behind_sentinel;
    StaleRecoveryBarrierPolled: Sometimes, "stale recovery barrier polled", stale_recovery_barrier_polled;
    EverythingDelivered: Sometimes, "everything delivered", everything_delivered;
    // Needs `faults`.
    TaskFails: Sometimes, "task fails on an upstream failure", task_fails;
    // AnnouncedBarrierFound's twin: an announced barrier moved to the priority head.
    AnnouncedBarrierConverted: Sometimes, "announced barrier converted to priority", announced_barrier_converted;
}

/// The properties as stateright wants them.
pub fn all() -> Vec<Property<RecoveryModel>> {
    PropertyId::ALL.iter().map(|p| p.property()).collect()
}

fn channels(s: &State) -> impl Iterator<Item = (u8, &Channel)> {
    s.channels.iter().enumerate().map(|(c, ch)| (c as u8, &**ch))
}

/// S1: on each channel the operator sees all recovered data before any live buffer or
/// ordinary event (priority barriers may overtake, as in master).
fn recovered_data_precedes_live_data(_: &RecoveryModel, s: &State) -> bool {
    // One pass: no recovered buffer after the first live element.
    s.channels.iter().all(|ch| {
        let mut live = false;
        ch.ghost_delivered.iter().all(|d| {
            live |= d.payload.is_live_ordinary();
            !(live && matches!(d.payload, Payload::Recovered(_)))
        })
    })
}

/// S1's mechanism: `getNextBuffer` hides upstream while `inRecovery` (local: the predicate in
/// L6; remote: zero credit, the stash and the `onBuffer` assertion).
fn live_data_hidden_during_recovery(_: &RecoveryModel, s: &State) -> bool {
    s.channels
        .iter()
        .all(|ch| !ch.in_recovery || !ch.ghost_delivered.iter().any(|d| d.payload.is_live_ordinary()))
}

/// S2: nothing delivered twice, recovered data in push order, live elements in upstream order.
fn exactly_once_delivery(_: &RecoveryModel, s: &State) -> bool {
    s.channels.iter().all(|ch| {
        let (mut recovered, mut live, mut barrier) = (0u8, None, None);
        ch.ghost_delivered.iter().all(|d| match d.payload {
            Payload::Recovered(i) => {
                let k = recovered;
                recovered += 1;
                i == k
            }
            Payload::Data(i) | Payload::Event(i) | Payload::EndOfOutput(i) => increases(&mut live, i),
            Payload::Barrier(cp) => increases(&mut barrier, cp),
            _ => true,
        })
    })
}

/// Whether `next` is greater than the number before it, which it becomes.
fn increases<T: Ord + Copy>(last: &mut Option<T>, next: T) -> bool {
    let up = last.is_none_or(|l| l < next);
    *last = Some(next);
    up
}

/// S3/S4: at most one `EndOfFetchedChannelStateEvent`, nothing but recovery barriers behind it,
/// the sentinel never reaches the task, and a recovery barrier only once its checkpoint was
/// aborted (a stale one, which the network input ignores as an unknown event).
fn sentinel_discipline(m: &RecoveryModel, s: &State) -> bool {
    // Flag off, the sentinel is the RecoveredInputChannel's legacy one, never in recovery; 2.3.0
    // flag on migrates it into the physical channel, which hands it out as an ordinary event
    // that the network input ignores (not delivered to the operator).
    let legacy = m.is_recovered_channel(s) || m.migrates();
    s.channels.iter().all(|ch| {
        let eor = ch.queue.iter().filter(|e| e.payload == Payload::EndOfRecovery).count();
        let after_eor_ok = match ch.queue.iter().position(|e| e.payload == Payload::EndOfRecovery) {
            None => true,
            Some(i) => ch.queue[i + 1..]
                .iter()
                .all(|e| !e.payload.is_recovery_element() || matches!(e.payload, Payload::RecoveryBarrier(_))),
        };
        eor <= 1
            && after_eor_ok
            && (eor == 0 || ch.in_recovery || legacy)
            && ch.ghost_delivered.iter().all(|d| match d.payload {
                Payload::EndOfRecovery => false,
                Payload::RecoveryBarrier(cp) => aborted(s.checkpoints[cp as usize - 1]),
                _ => true,
            })
    })
}

/// Declined or subsumed: ended without completing.
fn aborted(status: CheckpointStatus) -> bool {
    matches!(
        status,
        CheckpointStatus::DeclinedMissingBarrier | CheckpointStatus::DeclinedLaterBarrier | CheckpointStatus::Subsumed
    )
}

/// S5: recovered elements are numbered from `i32::MIN` (contiguously in consumption order on a
/// local channel and on the flag-off path's RecoveredInputChannel, increasing in append order
/// on a remote one) and never collide with live sequence numbers, which start at 0. In 2.3.0's
/// migration the physical channel numbers what it takes over from `i32::MIN` again (the
/// `LocalInputChannel` and `RemoteInputChannel` constructors given the recovered buffers), so
/// the numbering may restart there, once.
fn recovery_sequence_numbers(m: &RecoveryModel, s: &State) -> bool {
    use crate::config::Delivery;
    let migrates = m.cfg.delivery == Delivery::Migration;
    channels(s).all(|(c, ch)| {
        let contiguous = matches!(m.cfg.delivery, Delivery::Legacy | Delivery::Migration)
            || m.cfg.channels[c as usize].kind == ChannelKind::Local;
        // The k-th recovery element delivered (since the restart) and the one before it.
        let (mut k, mut last, mut restarted) = (0, None, false);
        ch.ghost_delivered.iter().all(|d| {
            if !d.payload.is_recovery_element() {
                return d.seq >= 0;
            }
            if migrates && !restarted && k > 0 && d.seq == i32::MIN {
                (k, restarted) = (0, true);
            }
            let first_possible = i32::MIN + k;
            k += 1;
            // A remote channel appends in order, so the k-th consumed was numbered at least k
            // after MIN.
            let numbered = if contiguous {
                d.seq == first_possible
            } else {
                d.seq >= first_possible && increases(&mut last, d.seq)
            };
            numbered && d.seq < 0
        })
    })
}

/// S6: while a remote channel is in recovery no credit exists anywhere: the gate is closed, no
/// credit is unannounced, pending or in flight, and the producer's reader has none.
fn no_credit_during_recovery(m: &RecoveryModel, s: &State) -> bool {
    let pending = |c: u8| {
        let mine = |a: Option<Announce>| a.is_some_and(|a| a.channel == c && a.n > 0);
        mine(s.task_announce)
            || mine(s.client_announce)
            || matches!(s.recycler, RecyclerPc::Announce(a) if a.channel == c && a.n > 0)
    };
    channels(s).all(|(c, ch)| {
        m.cfg.channels[c as usize].kind == ChannelKind::Local
            || !ch.in_recovery
            || ch.released
            || (!ch.bm.notify_available
                && ch.unannounced_credit == 0
                && ch.add_credit_in_flight.is_empty()
                && ch.producer.reader_credit.unwrap_or(0) == 0
                && !pending(c))
    })
}

/// The credit of remote channel `c` that exists anywhere: unannounced, pending announcement,
/// in-flight `AddCredit`, the producer's reader credit, and data on the wire (sent on a credit,
/// not yet given a buffer).
fn credit(s: &State, c: u8) -> u32 {
    let ch = s.ch(c);
    let mine = |a: Option<Announce>| a.filter(|a| a.channel == c).map_or(0, |a| a.n as u32);
    let recycler = match s.recycler {
        RecyclerPc::Announce(a) if a.channel == c => a.n as u32,
        _ => 0,
    };
    let on_wire = ch.producer.wire.iter().filter(|w| w.payload.is_data()).count() as u32;
    ch.unannounced_credit as u32
        + mine(s.task_announce)
        + mine(s.client_announce)
        + recycler
        + ch.add_credit_in_flight.iter().map(|&k| k as u32).sum::<u32>()
        + ch.producer.reader_credit.unwrap_or(0) as u32
        + on_wire
}

/// S7: credit never exceeds buffers: unannounced + pending + in-flight AddCredit + producer
/// credit + data on the wire <= buffers available, so `requestBuffer()` never returns null for
/// arriving data.
fn credit_conservation(m: &RecoveryModel, s: &State) -> bool {
    !matches!(s.violation, Some((_, Violation::NoBufferForData)))
        && channels(s).all(|(c, ch)| {
            // A local channel has no credit (its manager's announcements go nowhere).
            if ch.released || m.cfg.channels[c as usize].kind == ChannelKind::Local || resets_credit(m, s, c) {
                return true;
            }
            credit(s, c) <= ch.bm.available() as u32
        })
}

/// Whether channel `c`'s credit is allowed to disagree with its buffers until the resume
/// resets both sides: without exclusive buffers (initial credit 0), from the blocking event's
/// `onBlockingUpstream` (which gives the floating buffers back while credit for them may still
/// be announced or on its way) to the server's `resumeConsumption` (which drops the reader's
/// credit, as `RemoteInputChannel.resumeConsumption` drops the unannounced credit). Flink
/// relies on that reset (FLINK-16641); the subpartition sends no data meanwhile.
fn resets_credit(m: &RecoveryModel, s: &State, c: u8) -> bool {
    m.cfg.channels[c as usize].exclusive == 0 && s.ch(c).producer.blocked
}

/// S7's lower bound: once a remote channel's gate is open, every buffer queued in its manager
/// is credit somewhere, so credit equals the buffers available. Each critical section that
/// queues a buffer computes its announcement with it (pending until made), and `enableNotify`
/// counts what recovery left queued; a buffer queued and not announced would starve the
/// producer for good. The reader's initial credit travels with the partition request, so the
/// count starts once the reader exists.
fn no_lost_credit(m: &RecoveryModel, s: &State) -> bool {
    channels(s).all(|(c, ch)| {
        m.cfg.channels[c as usize].kind == ChannelKind::Local
            || ch.released
            || !ch.bm.notify_available
            || ch.producer.reader_credit.is_none()
            || resets_credit(m, s, c)
            || credit(s, c) == ch.bm.available() as u32
    })
}

/// Where every buffer of channel `c` is, one entry per occurrence (its pool not included).
fn for_each_buffer_place(s: &State, c: u8, mut f: impl FnMut(NetBuf)) {
    let ch = s.ch(c);
    let bm = ch.bm.exclusive.iter().chain(&ch.bm.floating);
    bm.chain(&ch.global_pool).chain(&ch.held).copied().for_each(&mut f);
    ch.queue
        .iter()
        .chain(&ch.stash)
        .filter_map(|e| e.buffer)
        .for_each(&mut f);
    if let RecyclerPc::ReturnFloating { channel, buffer } = s.recycler
        && channel == c
    {
        f(buffer);
    }
    if let Some((channel, buffer)) = s.io_buffer
        && channel == c
    {
        f(buffer);
    }
    if let TaskPc::RereadPendingPriority { channel, buffer, .. } = s.task
        && channel == c
    {
        buffer.into_iter().for_each(f);
    }
}

/// How many places hold each buffer of one kind, by id: whether once, and whether more than
/// once (bits by id, for ids below 32).
#[derive(Clone, Copy, Default)]
struct Held {
    once: u32,
    more: u32,
    /// An id past 31, or a buffer of the other kind, was found.
    stray: bool,
}

impl Held {
    fn add(&mut self, id: u8) {
        match 1u32.checked_shl(id as u32) {
            Some(bit) => {
                self.more |= self.once & bit;
                self.once |= bit;
            }
            None => self.stray = true,
        }
    }

    /// Whether ids `0..n` (of those below 32) are each held exactly once.
    fn each_once(&self, n: u8) -> bool {
        let ids = ids_below(n);
        self.once & !self.more & ids == ids
    }

    /// Whether ids `0..n` are each held exactly once and no other id is held.
    fn exactly(&self, n: u8) -> bool {
        !self.stray && self.more == 0 && self.once == ids_below(n)
    }
}

/// The bits of ids `0..n`, of those below 32.
fn ids_below(n: u8) -> u32 {
    1u32.checked_shl(n as u32).map_or(u32::MAX, |b| b - 1)
}

/// S8: every network buffer is in exactly one place (manager queue, pool, channel queue, held
/// by the consumer, in the recycler's or the drainer's hands): each channel's exclusive segments, and each
/// pool's floating buffers, among the channels that borrow from it (all of them with a shared
/// pool). Every recovered buffer pushed is in exactly one of: the queue, delivered, recycled.
fn buffer_ownership(m: &RecoveryModel, s: &State) -> bool {
    // Counted rather than collected: it runs on every state.
    let mut exclusive: SmallVec<[Held; MAX_CHANNELS]> = SmallVec::from_elem(Held::default(), s.channels.len());
    let mut floating: SmallVec<[Held; MAX_CHANNELS]> = SmallVec::from_elem(Held::default(), s.pools.len());
    let mut pool_size: SmallVec<[u8; MAX_CHANNELS]> = SmallVec::from_elem(0, s.pools.len());
    for (p, pool) in s.pools.iter().enumerate() {
        for &b in &pool.available {
            match b {
                NetBuf::Floating(i) => floating[p].add(i),
                NetBuf::Exclusive(_) => floating[p].stray = true,
            }
        }
    }
    for (c, cc) in m.cfg.channels.iter().enumerate() {
        let p = s.pool_index(c as u8);
        pool_size[p] += cc.floating;
        for_each_buffer_place(s, c as u8, |b| match b {
            NetBuf::Exclusive(i) => exclusive[c].add(i),
            NetBuf::Floating(i) => floating[p].add(i),
        });
    }
    floating.iter().zip(pool_size).all(|(held, n)| held.exactly(n))
        && channels(s).all(|(c, ch)| {
            let cc = &m.cfg.channels[c as usize];
            let mut recovered = Held::default();
            // An element the task polled and has yet to hand on is in its hands.
            if let TaskPc::RereadPendingPriority {
                channel,
                payload: Payload::Recovered(i),
                ..
            } = s.task
                && channel == c
            {
                recovered.add(i);
            }
            let elements = ch
                .queue
                .iter()
                .map(|e| e.payload)
                .chain(ch.ghost_delivered.iter().map(|d| d.payload));
            for p in elements {
                if let Payload::Recovered(i) = p {
                    recovered.add(i);
                }
            }
            ch.ghost_freed.iter().for_each(|&i| recovered.add(i));
            exclusive[c as usize].exactly(cc.exclusive) && recovered.each_once(ch.ghost_pushed)
        })
}

/// S9, first half: each buffer is written at most once per checkpoint (FLINK-40016 wrote
/// recovered buffers twice and corrupted the channel state), by the persister or the spill.
fn persisted_at_most_once(_: &RecoveryModel, s: &State) -> bool {
    s.channels.iter().all(|ch| {
        let written = || ch.ghost_persisted.iter().chain(&ch.ghost_spilled);
        written()
            .enumerate()
            .all(|(i, w)| written().skip(i + 1).all(|other| other != w))
    })
}

/// What checkpoint `cp` must hold for channel `ch`, which recovers `recovered` buffers: the
/// data the operator had not consumed at the snapshot and that precedes the checkpoint's
/// barrier. That is every recovered buffer not consumed by then: those pushed before its
/// `RecoveryCheckpointBarrier` and, in drainer mode, the remainder the drainer had not pushed
/// yet (which follows the barrier in the queue); and live data that left the subpartition
/// before its barrier. It is computed from the delivery order alone, not from the persister or
/// the spill.
pub fn expected_persisted(ch: &Channel, cp: CheckpointId, recovered: u8) -> Option<Vec<Payload>> {
    let i = cp as usize - 1;
    let started = ch.ghost_started_at[i]? as usize;
    let consumed_after = |p: Payload| {
        ch.ghost_delivered
            .iter()
            .position(|d| d.payload == p)
            .is_none_or(|k| k >= started)
    };
    let mut out: Vec<Payload> = (0..recovered)
        .map(Payload::Recovered)
        .filter(|&p| consumed_after(p))
        .collect();
    let before_barrier = ch.ghost_barrier_after[i]?;
    out.extend(
        ch.ghost_delivered
            .iter()
            .skip(started)
            .filter(|d| matches!(d.payload, Payload::Data(j) if j < before_barrier))
            .map(|d| d.payload),
    );
    out.sort();
    Some(out)
}

/// Whether everything of channel `ch` has been delivered and nothing can change its persisted
/// content any more.
fn drained(m: &RecoveryModel, s: &State, c: u8) -> bool {
    let ch = s.ch(c);
    let cc = &m.cfg.channels[c as usize];
    s.task == TaskPc::Idle
        && !ch.in_recovery
        && ch.ghost_pushed == cc.recovered
        && ch.producer.barriers == m.cfg.checkpoints
        && ch.producer.emitted as usize == cc.upstream.len()
        && ch.producer.subpartition.is_empty()
        && ch.producer.wire.is_empty()
        && ch.queue.is_empty()
        && ch.stash.is_empty()
}

/// S9, second half: once a channel is drained, what each completed checkpoint persisted for it
/// is exactly [`expected_persisted`]: the unaligned-checkpoint contract that operator state
/// plus channel state plus post-barrier upstream data covers every buffer exactly once.
fn persisted_content_is_exact(m: &RecoveryModel, s: &State) -> bool {
    channels(s).all(|(c, ch)| {
        if ch.released || !drained(m, s, c) {
            return true;
        }
        (1..=m.cfg.checkpoints)
            .filter(|&cp| s.checkpoints[cp as usize - 1] == CheckpointStatus::Completed)
            .all(|cp| {
                let mut actual = ch.persisted(cp);
                actual.sort();
                let recovered = m.cfg.channels[c as usize].recovered;
                expected_persisted(ch, cp, recovered).is_some_and(|e| e == actual)
            })
    })
}

/// #28662's split of a checkpoint's recovered state at the drainer's position when the
/// checkpoint's `RecoveryCheckpointBarrier` was inserted (`ghost_rcb_at`, under the drainer's
/// lock): the buffers delivered by then are persisted from the channel (`checkpointStarted` →
/// `collectPreRecoveryBarrier`), in order; the spill (`addInputDataFromSpill`) holds exactly the
/// rest, a buffer taken but not yet delivered included; and a buffer delivered after the
/// barrier is not persisted from the channel again. Without a barrier inserted there is no
/// spill. The model writes the spill with the insertion, where master writes the slice it
/// snapshotted there in `onCheckpointStartedForAllInputs`' third step: the same buffers.
fn recovered_state_from_its_source(m: &RecoveryModel, s: &State) -> bool {
    channels(s).all(|(c, ch)| {
        let recovered = m.cfg.channels[c as usize].recovered;
        (1..=m.cfg.checkpoints).all(|cp| {
            let Some(drained) = ch.ghost_rcb_at[cp as usize - 1] else {
                return recovered_of(&ch.ghost_spilled, cp).next().is_none();
            };
            let mut last = None;
            recovered_of(&ch.ghost_persisted, cp).all(|i| i < drained && increases(&mut last, i))
                && recovered_of(&ch.ghost_spilled, cp).eq(drained..recovered)
        })
    })
}

/// The recovered buffers `written` holds for checkpoint `cp`, in write order.
fn recovered_of(written: &Written, cp: CheckpointId) -> impl Iterator<Item = u8> + '_ {
    let written = written.iter().filter(move |(k, _)| *k == cp);
    written.filter_map(|(_, p)| match p {
        Payload::Recovered(i) => Some(*i),
        _ => None,
    })
}

/// S10: the stash holds only ordinary events (upstream events in upstream order, and aligned
/// barriers), and only during recovery.
fn stash_holds_only_events_in_order(_: &RecoveryModel, s: &State) -> bool {
    s.channels.iter().all(|ch| {
        let mut last = None;
        let events_in_order = ch.stash.iter().all(|e| match e.payload {
            Payload::AlignedBarrier(_) => true,
            Payload::Event(i) | Payload::EndOfOutput(i) => increases(&mut last, i),
            _ => false,
        });
        events_in_order && (ch.stash.is_empty() || ch.in_recovery)
    })
}

/// `PrioritizedDeque`: the priority elements (barriers) are exactly the head of the queue.
fn priority_events_first(_: &RecoveryModel, s: &State) -> bool {
    s.channels.iter().all(|ch| {
        let p = ch.priority_len as usize;
        p <= ch.queue.len()
            && ch.queue[..p].iter().all(|e| e.payload.has_priority())
            && !ch.queue[p..].iter().any(|e| e.payload.has_priority())
    })
}

/// No `checkState` of the protocol fired (data during recovery, no buffer for data, push after
/// recovery, double consumption, send without credit, missing priority event).
fn no_protocol_violation(_: &RecoveryModel, s: &State) -> bool {
    s.violation.is_none()
}

/// Whether the task is inside a turn of the gate on channel `c`, between two steps of it.
fn polling(s: &State, c: u8) -> bool {
    match s.task {
        TaskPc::ClearPendingPriority { channel, .. } | TaskPc::RereadPendingPriority { channel, .. } => channel == c,
        _ => false,
    }
}

/// Every channel with something to return is in the gate's queue: otherwise the task, which
/// only polls queued channels, never looks at it again (a lost `notifyChannelNonEmpty`). A
/// failed task polls nothing more.
fn no_lost_notification(m: &RecoveryModel, s: &State) -> bool {
    // The channel the task is polling, and one whose producer has yet to notify, are exempt.
    let polling = |c: u8| polling(s, c);
    let notifying = |c: u8| s.ch(c).producer.notify_pending.is_some();
    !m.models_gate_queue()
        || matches!(s.task, TaskPc::Failed { .. })
        || (0..s.channels.len() as u8).all(|c| !m.has_next(s, c) || s.gate.contains(c) || polling(c) || notifying(c))
}

/// Every channel in the gate's priority section returns a priority event when polled. The gate
/// completes its priority future for them, `CheckpointedInputGate.processPriorityEvents` polls
/// and `checkState(bufferOrEvent.hasPriority(), "Should only poll priority events")`; the
/// future is reset only by polling a priority event, so a stale entry fails the task.
fn priority_channels_have_priority_events(m: &RecoveryModel, s: &State) -> bool {
    let priority = &s.gate.channels[..s.gate.num_priority as usize];
    !m.models_gate_queue()
        || matches!(s.task, TaskPc::Failed { .. })
        || priority.iter().all(|&c| {
            let ch = s.ch(c);
            ch.released || ch.producer.released || polling(s, c) || has_priority_next(m, s, c)
        })
}

/// Once `releaseAllResources` has completed, the channel's `BufferManager` holds no buffer:
/// `releaseAllBuffers` gave the exclusive segments to the global pool and the floating buffers
/// to the `LocalBufferPool`, and a buffer recycled to it later goes the same way.
///
/// Exempt: a `RecoveredInputChannel` released before its conversion (flag off, Flink 2.3.0).
/// The model's manager holds the physical channel's exclusive segments from the start, but in
/// Flink they are requested only when the channel is converted (`RemoteInputChannel.setup()`),
/// which a released channel never is.
fn a_released_channels_buffer_manager_holds_nothing(m: &RecoveryModel, s: &State) -> bool {
    m.is_recovered_channel(s)
        || s.channels
            .iter()
            .all(|ch| !ch.released || ch.releasing || (ch.bm.exclusive.is_empty() && ch.bm.floating.is_empty()))
}

/// Whether channel `c` would hand out a priority event when polled now (a remote channel's
/// priority section of `receivedBuffers`; a local channel's view, led to by
/// `hasPendingPriorityEvent` while it is in recovery or has migrated buffers queued).
fn has_priority_next(m: &RecoveryModel, s: &State, c: u8) -> bool {
    let ch = s.ch(c);
    let view_barrier = matches!(ch.producer.subpartition.first(), Some(Payload::Barrier(_)));
    match m.cfg.channels[c as usize].kind {
        ChannelKind::Remote => ch.priority_len > 0,
        // `priority-from-view-head` reads the view's head, not the flag alone.
        ChannelKind::Local if m.cfg.has_fix(FlinkFix::PriorityFromViewHead) => {
            crate::local_input_channel::view_head_has_priority(ch)
        }
        ChannelKind::Local if ch.in_recovery || (m.migrates() && !ch.queue.is_empty()) => {
            ch.pending_priority && view_barrier
        }
        ChannelKind::Local => view_barrier,
    }
}

/// Whether the gate was told of a priority event channel `c` will hand out next: a remote
/// channel's `onBuffer` notifies for every priority element it queues at the head; a local
/// channel's `notifyPriorityEvent` sets `hasPendingPriorityEvent` (and the view's head is the
/// event). A priority event already in a subpartition when its view is created, or when the
/// channel is queued again after recovery, comes with an ordinary notification in Flink too.
fn priority_notified(m: &RecoveryModel, s: &State, c: u8) -> bool {
    let ch = s.ch(c);
    match m.cfg.channels[c as usize].kind {
        ChannelKind::Remote => ch.priority_len > 0,
        ChannelKind::Local => {
            ch.pending_priority && matches!(ch.producer.subpartition.first(), Some(Payload::Barrier(_)))
        }
    }
}

/// A channel in the gate's queue that the gate was told has a priority event next sits in the
/// queue's priority section (`queueChannel(channel, true)` moves a queued channel there), so the
/// task polls it before the ordinary channels. Exempt: the channel the task is polling, one
/// whose producer has yet to notify (`priority_notify_step`, docs/findings.md), a released one.
fn a_queued_channel_with_a_priority_element_is_in_the_priority_section(m: &RecoveryModel, s: &State) -> bool {
    let ordinary = &s.gate.channels[s.gate.num_priority as usize..];
    !m.models_gate_queue()
        || matches!(s.task, TaskPc::Failed { .. })
        || ordinary.iter().all(|&c| {
            let ch = s.ch(c);
            ch.released
                || ch.producer.released
                || ch.producer.notify_pending.is_some()
                || polling(s, c)
                || !priority_notified(m, s, c)
        })
}

/// A remote channel numbers its recovery elements (recovered buffers, recovery barriers, the
/// end-of-recovery sentinel) as it queues them: each queued one carries a number greater than
/// every recovery element before it, queued or already consumed. A `RecoveredInputChannel`
/// (flag off) and what Flink 2.3.0 migrates out of one are numbered when polled instead, which
/// *recovery sequence numbers* checks.
fn queued_recovery_elements_are_numbered_in_increasing_order(m: &RecoveryModel, s: &State) -> bool {
    channels(s).all(|(c, ch)| {
        if m.cfg.channels[c as usize].kind != ChannelKind::Remote || m.is_recovered_channel(s) || m.migrates() {
            return true;
        }
        let mut last = ch
            .ghost_delivered
            .iter()
            .filter(|d| d.payload.is_recovery_element())
            .map(|d| d.seq)
            .max();
        ch.queue
            .iter()
            .filter(|e| e.payload.is_recovery_element())
            .all(|e| increases(&mut last, e.seq))
    })
}

/// `RemoteInputChannel.onSenderBacklog(backlog)` sets the manager's `numRequiredBuffers` to
/// `backlog + initialCredit`: the sender's backlog plus the exclusive buffers, so that the
/// channel keeps credit for what is queued upstream (`BufferManager.requestFloatingBuffers`;
/// unchanged on a released channel). Checked on the step:
/// [`crate::remote_input_channel::requires_backlog_plus_initial_credit`].
fn requires_backlog_plus_initial_credit_after_on_sender_backlog(_: &RecoveryModel, s: &State) -> bool {
    !matches!(s.violation, Some((_, Violation::RequiredNotBacklogPlusInitialCredit)))
}

/// The drainer fills a channel that lends recovery buffers (a remote channel, a local one with
/// exclusive buffers) through `requestRecoveryBufferBlocking`, which blocks until its manager
/// lends a buffer and never returns none: every recovered element queued on such a channel
/// sits in a network buffer (drainer delivery; a released channel's queue is being emptied).
fn recovered_data_on_a_lending_channel_sits_in_a_lent_buffer(m: &RecoveryModel, s: &State) -> bool {
    m.cfg.delivery != Delivery::Drainer
        || channels(s).all(|(c, ch)| {
            !m.lends_recovery_buffers(c)
                || ch.released
                || ch
                    .queue
                    .iter()
                    .filter(|e| matches!(e.payload, Payload::Recovered(_)))
                    .all(|e| e.buffer.is_some())
        })
}

/// A checkpoint the task declines (`abortInternal` on a missing or later recovery barrier)
/// closes every channel's persisting window for it (`checkpointStopped` → `stopPersisting`), so
/// nothing seen afterwards is written for it: no persister is still pending for it.
fn no_channel_persists_for_a_declined_checkpoint(_: &RecoveryModel, s: &State) -> bool {
    s.channels.iter().all(|ch| {
        let p = &ch.persister;
        p.status != PersistStatus::BarrierPending
            || p.last_seen_barrier < 1
            || !matches!(
                s.checkpoints.get(p.last_seen_barrier as usize - 1),
                Some(CheckpointStatus::DeclinedMissingBarrier | CheckpointStatus::DeclinedLaterBarrier)
            )
    })
}

/// `CHECKPOINT_SUBSUMED` means a newer checkpoint overtook this one: the barrier handler
/// triggered a later one, or a channel saw a later barrier (`ChannelStatePersister`'s
/// `lastSeenBarrier`, a remote channel's `lastBarrierId`).
fn a_checkpoint_is_subsumed_only_by_a_newer_one(_: &RecoveryModel, s: &State) -> bool {
    s.checkpoints.iter().enumerate().all(|(i, status)| {
        let k = i as i8 + 1;
        *status != CheckpointStatus::Subsumed
            || s.checkpoints[i + 1..]
                .iter()
                .any(|c| *c != CheckpointStatus::NotTriggered)
            || s.channels
                .iter()
                .any(|ch| ch.persister.last_seen_barrier > k || ch.last_barrier.0 > k)
    })
}

/// The precondition every finding relies on (docs/findings.md): with unaligned checkpoints
/// the coordinator triggers checkpoint `n + 1` only once `n` completed or was aborted
/// (`CheckpointCoordinatorConfiguration` rejects more than one concurrent checkpoint), and a
/// task's decline aborts it. So no upstream takes barrier `n + 1` before that. Not checked
/// with `overlapping_checkpoints`, which describes no Flink configuration. Written out, not
/// read from `RecoveryModel::triggered`, the rule it checks.
fn unaligned_checkpoints_never_overlap(m: &RecoveryModel, s: &State) -> bool {
    let taken = s.channels.iter().map(|ch| ch.producer.barriers).max().unwrap_or(0);
    m.cfg.overlapping_checkpoints
        || (1..taken).all(|n| {
            s.aborted & (1 << (n - 1)) != 0
                || matches!(
                    s.checkpoints[n as usize - 1],
                    CheckpointStatus::Completed
                        | CheckpointStatus::DeclinedMissingBarrier
                        | CheckpointStatus::DeclinedLaterBarrier
                )
        })
}

/// `SingleCheckpointBarrierHandler`'s trigger rule. A checkpoint is triggered (and so completes)
/// only once one of its barriers was processed: an unaligned one triggers it at once; the
/// alignment timeout triggers it only in `AlternatingCollectingBarriers`, where a barrier is in
/// (in `AlternatingWaitingForFirstBarrier` it only converts the announcements). Triggered, it
/// goes on unaligned: an alternating handler aligning it has timed out (an unaligned barrier
/// during the alignment runs `alignmentTimeout` first). A checkpoint with a barrier in is still
/// untriggered only while it aligns before its timeout, and not once every channel's barrier is
/// in: `barrierReceived` triggers it in the same call (`allBarriersReceived`). A released
/// channel is left out: the canceler's release does not reach the handler.
fn a_checkpoint_is_triggered_when_its_barriers_say_so(_: &RecoveryModel, s: &State) -> bool {
    let all = (1u16 << s.channels.len()) - 1;
    let released = s.channels.iter().any(|ch| ch.released);
    let aligning = |i: usize| s.alignment.as_ref().filter(|a| a.cp as usize == i + 1);
    let mut checkpoints = s.checkpoints.iter().zip(&s.barriers_seen).enumerate();
    checkpoints.all(|(i, (status, &seen))| match status {
        // Triggered and not yet completed: unaligned, so an alignment of it has timed out.
        CheckpointStatus::Triggered => seen != 0 && aligning(i).is_none_or(|a| a.timed_out),
        CheckpointStatus::Completed => seen != 0,
        CheckpointStatus::NotTriggered => {
            seen == 0 || aligning(i).is_some_and(|a| !a.timed_out && (released || u16::from(seen) != all))
        }
        _ => true,
    })
}

/// The alternating handler's aligned states (`AbstractAlternatingAlignedBarrierHandlerState`)
/// only note an announcement (`addSeenAnnouncement`); `convertToPriorityEvent` runs in the
/// unaligned states, once the alignment timed out. So before the timeout every channel the
/// handler blocked is one whose aligned barrier it processed.
fn announced_barriers_are_converted_only_once_the_alignment_timed_out(_: &RecoveryModel, s: &State) -> bool {
    s.alignment
        .as_ref()
        .is_none_or(|a| a.timed_out || a.blocked & !s.barriers_seen[a.cp as usize - 1] == 0)
}

/// A live element's sequence number is the one its producer gave it when it left the
/// subpartition (a local view's poll, the server's `BufferResponse`): below the producer's next
/// number, and each delivered once.
fn live_elements_carry_the_numbers_their_producer_gave_them(_: &RecoveryModel, s: &State) -> bool {
    s.channels.iter().all(|ch| {
        let mut seen: SmallVec<[i32; 8]> = SmallVec::new();
        ch.ghost_delivered
            .iter()
            .filter(|d| !d.payload.is_recovery_element())
            .all(|d| {
                let fresh = !seen.contains(&d.seq);
                seen.push(d.seq);
                fresh && d.seq < ch.producer.next_seq
            })
    })
}

/// L1: every channel's `stateConsumedFuture` completes (normally, or exceptionally on release;
/// a released RecoveredInputChannel's never completes, its task is being cancelled). Liveness
/// is owed only while no upstream has failed (here and below): after a failure the task fails,
/// or waits for the cancellation a failed producer brings.
fn recovery_completes(_: &RecoveryModel, s: &State) -> bool {
    s.faulted()
        || s.channels
            .iter()
            .all(|ch| ch.released || (ch.state_consumed && !ch.in_recovery))
}

/// L2: every upstream element reaches the operator unless the channel is released.
fn all_live_data_delivered(m: &RecoveryModel, s: &State) -> bool {
    s.faulted()
        || channels(s).all(|(c, ch)| {
            let n = m.cfg.channels[c as usize].upstream.len();
            ch.released
                || ch
                    .ghost_delivered
                    .iter()
                    .filter(|d| d.payload.is_live_ordinary())
                    .count()
                    == n
        })
}

/// While the trigger inserts `RecoveryCheckpointBarrier`s, `collectPreRecoveryBarrier` always
/// finds its checkpoint's barrier unless the channel was released (a release drains the queue):
/// no checkpoint taken during recovery is declined for a missing barrier. With the trigger off
/// (PR3, `no-trigger`) every such checkpoint is declined, by design.
fn no_checkpoint_declined_on_a_live_channel_in_recovery(m: &RecoveryModel, s: &State) -> bool {
    !m.cfg.insert_recovery_barriers
        || !s.checkpoints.contains(&CheckpointStatus::DeclinedMissingBarrier)
        || s.channels.iter().any(|ch| ch.released)
}

/// Every checkpoint is completed, declined or subsumed: none hangs.
fn every_checkpoint_ends(_: &RecoveryModel, s: &State) -> bool {
    s.faulted()
        || s.channels.iter().any(|ch| ch.released)
        || s.checkpoints
            .iter()
            .all(|c| !matches!(c, CheckpointStatus::NotTriggered | CheckpointStatus::Triggered))
}

/// L6: when nothing can move any more, every buffer is home: network buffers in their manager
/// or pool (the global pool once the gate closed and destroyed its `LocalBufferPool`),
/// recovered buffers delivered or recycled, no queue holds anything.
fn every_buffer_returns_home(m: &RecoveryModel, s: &State) -> bool {
    // The cheap conditions first: this runs on every state until it holds.
    let home = || {
        channels(s).all(|(c, ch)| {
            let cc = &m.cfg.channels[c as usize];
            let recovered_home = || {
                (0..cc.recovered).all(|i| {
                    ch.ghost_freed.contains(&i) || ch.ghost_delivered.iter().any(|d| d.payload == Payload::Recovered(i))
                })
            };
            let pool_home = !s.closed || s.pool_of(c).available.is_empty();
            ch.queue.is_empty() && ch.stash.is_empty() && ch.held.is_empty() && pool_home && recovered_home()
        })
    };
    s.faulted() || (s.recycler == RecyclerPc::Idle && home() && m.is_terminal(s))
}

/// With a shared pool, a floating buffer one channel recycled went to another channel's
/// waiting manager: the cross-channel path the per-channel pools cannot take.
fn lent_across(_: &RecoveryModel, s: &State) -> bool {
    s.ghost_lent_across
}

fn checkpoint_persists_recovered_data(_: &RecoveryModel, s: &State) -> bool {
    s.channels.iter().any(|ch| {
        ch.ghost_persisted
            .iter()
            .any(|(_, p)| matches!(p, Payload::Recovered(_)))
    })
}

/// The trigger wrote recovered buffers the drainer had not pushed yet (`addInputDataFromSpill`).
fn checkpoint_spills_undrained_data(_: &RecoveryModel, s: &State) -> bool {
    s.channels.iter().any(|ch| !ch.ghost_spilled.is_empty())
}

fn checkpoint_persists_live_data(_: &RecoveryModel, s: &State) -> bool {
    s.channels
        .iter()
        .any(|ch| ch.ghost_persisted.iter().any(|(_, p)| matches!(p, Payload::Data(_))))
}

fn event_stashed_and_replayed(_: &RecoveryModel, s: &State) -> bool {
    s.channels.iter().any(|ch| {
        ch.ghost_replayed > 0
            && ch
                .ghost_delivered
                .iter()
                .any(|d| matches!(d.payload, Payload::Event(_) | Payload::EndOfOutput(_)))
    })
}

/// The task announces what `enableNotify` counted while the recycler announces a buffer it
/// returned after the gate opened: the window bug B6 lives in.
fn recycle_races_enable_notify(_: &RecoveryModel, s: &State) -> bool {
    matches!((s.task_announce, s.recycler), (Some(t), RecyclerPc::Announce(r)) if t.channel == r.channel)
}

fn declined_for_missing_barrier(_: &RecoveryModel, s: &State) -> bool {
    s.checkpoints.contains(&CheckpointStatus::DeclinedMissingBarrier)
}

fn checkpoint_completes_during_recovery(_: &RecoveryModel, s: &State) -> bool {
    s.checkpoints.contains(&CheckpointStatus::Completed) && s.channels.iter().any(|ch| ch.in_recovery)
}

fn barrier_behind_sentinel(_: &RecoveryModel, s: &State) -> bool {
    s.channels.iter().any(|ch| {
        ch.queue
            .windows(2)
            .any(|w| w[0].payload == Payload::EndOfRecovery && matches!(w[1].payload, Payload::RecoveryBarrier(_)))
    })
}

/// The trigger inserted a recovery barrier on every channel, the checkpoint aborted on an
/// earlier channel before reaching this one, and the task polled the barrier left behind.
fn stale_recovery_barrier_polled(_: &RecoveryModel, s: &State) -> bool {
    s.channels.iter().any(|ch| {
        ch.ghost_delivered
            .iter()
            .any(|d| matches!(d.payload, Payload::RecoveryBarrier(_)))
    })
}

/// An upstream failure reached the task: `getNextBuffer` threw.
fn task_fails(_: &RecoveryModel, s: &State) -> bool {
    matches!(s.task, TaskPc::Failed { cause, .. } if cause.is_upstream())
}

/// The alignment timer's `convertToPriorityEvent` finds every announced barrier in
/// `receivedBuffers`; `getAndRemove` throws `NoSuchElementException` otherwise and the task
/// fails.
fn announced_barrier_found(_: &RecoveryModel, s: &State) -> bool {
    !matches!(
        s.task,
        TaskPc::Failed {
            cause: Failure::AnnouncedBarrierNotFound,
            ..
        }
    )
}

/// The alignment timer moved an announced barrier to the priority head.
fn announced_barrier_converted(_: &RecoveryModel, s: &State) -> bool {
    s.ghost_converted
}

fn everything_delivered(m: &RecoveryModel, s: &State) -> bool {
    channels(s).all(|(c, ch)| {
        let cc = &m.cfg.channels[c as usize];
        !ch.released
            && ch
                .ghost_delivered
                .iter()
                .filter(|d| matches!(d.payload, Payload::Recovered(_)))
                .count()
                == cc.recovered as usize
            && ch
                .ghost_delivered
                .iter()
                .filter(|d| d.payload.is_live_ordinary())
                .count()
                == cc.upstream.len()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reports, JSON and config files name properties; each name must lead back to one key.
    #[test]
    fn every_name_is_unique_and_parses_back_to_its_property() {
        for &p in PropertyId::ALL {
            assert_eq!(PropertyId::from_name(p.name()), Some(p));
        }
        assert_eq!(PropertyId::from_name("no such property"), None);
    }

    #[test]
    fn a_property_is_its_name_in_json() {
        let json = serde_json::to_string(&[PropertyId::CreditConservation, PropertyId::PriorityHonoured]).unwrap();
        assert_eq!(
            json,
            r#"["credit conservation","priority channels have priority events"]"#
        );
    }
}
