//! What each property's predicate reads, over the components of [`crate::footprint`]: a step
//! that changes none of them leaves the predicate's value as it was. A partial-order reduction
//! treats an action that writes one of them as visible to the property.
//!
//! A declaration depends on the configuration (and the number of channels) only, never on the
//! state, so it covers every state: a field the predicate reads in some state only (a
//! checkpoint's status once a recovery barrier was delivered) is declared throughout. It is as
//! tight as the predicate is: a channel the predicate exempts by its configuration (a local
//! channel has no credit) contributes nothing, and a property switched off by a setting reads
//! nothing. Reading "the task failed" (`TaskPc::Failed`) is `halt`, which changes with it, not
//! `task`.
//!
//! A few declarations rest on what the model never does rather than on the predicate's text
//! alone, since a reduction only meets reachable states: `inRecovery` starts as the delivery's
//! `needsRecovery` and is only ever cleared, so a predicate about recovery is constant without
//! it; a cause (`onError`) is set only on a remote channel and an upstream is released
//! (`ReleasePartition`) only under a local one, each only with `faults`; a producer's pending
//! priority notification exists only with `priority_notify_step`.
//!
//! `model/tests/property_reads.rs` checks the declarations on every step of a set of presets
//! and of the bug-zoo variants, and on every pair of reachable states that agree on them.

use super::PropertyId;
use crate::config::{ChannelKind, Delivery};
use crate::footprint::{Component, Components};
use crate::model::RecoveryModel;

const NONE: Components = Components::EMPTY;

/// One global component as a set.
fn g(c: Component) -> Components {
    c.into()
}

/// `f` of every channel `c` of `0..n` for which `keep(c)` holds.
fn channels_where(n: usize, keep: impl Fn(u8) -> bool, f: impl Fn(u8) -> Components) -> Components {
    (0..n as u8).filter(|&c| keep(c)).fold(NONE, |acc, c| acc | f(c))
}

/// `f` of every channel of `0..n`.
fn every(n: usize, f: impl Fn(u8) -> Components) -> Components {
    channels_where(n, |_| true, f)
}

/// The given per-channel component kinds of every channel.
fn per_channel(n: usize, kinds: &[fn(u8) -> Component]) -> Components {
    every(n, |c| kinds.iter().fold(NONE, |acc, k| acc | k(c).into()))
}

/// `set` if `cond`, else nothing.
fn when(cond: bool, set: Components) -> Components {
    if cond { set } else { NONE }
}

/// Every component of a gate with `n` channels: the channels', the pools' and the global ones.
fn everything(m: &RecoveryModel, n: usize) -> Components {
    use Component::*;
    let kinds: [fn(u8) -> Component; 11] = [
        Consumer,
        Released,
        Error,
        Buffers,
        Held,
        Credit,
        CreditWire,
        Subpartition,
        Reader,
        Wire,
        Barriers,
    ];
    let globals = Component::all().filter(|c| {
        !matches!(
            c,
            Consumer(_)
                | Released(_)
                | Error(_)
                | Buffers(_)
                | Held(_)
                | Credit(_)
                | CreditWire(_)
                | Subpartition(_)
                | Reader(_)
                | Wire(_)
                | Barriers(_)
                | Pool(_)
        )
    });
    per_channel(n, &kinds) | pools(m, n) | globals.fold(NONE, |acc, c| acc | c.into())
}

/// The `LocalBufferPool`s: the gate's one with `shared_pool`, else one per channel.
fn pools(m: &RecoveryModel, n: usize) -> Components {
    let count = if m.cfg.shared_pool { 1 } else { n };
    every(count, |p| Component::Pool(p).into())
}

/// `m.is_recovered_channel(s)`: `converted`, with the flag-off and 2.3.0 deliveries.
fn recovered_channel(m: &RecoveryModel) -> Components {
    when(
        matches!(m.cfg.delivery, Delivery::Legacy | Delivery::Migration),
        g(Component::Setup),
    )
}

/// A remote channel's cause (`onError`): set only with `faults`.
fn cause(m: &RecoveryModel, c: u8) -> Components {
    when(m.cfg.faults && !is_local(m, c), Component::Error(c).into())
}

/// `s.faulted()`: a remote channel's cause, a local channel's upstream released (the
/// subpartition), each only with `faults`; the task failed.
fn faulted(m: &RecoveryModel, n: usize) -> Components {
    let upstream = |c: u8| when(m.cfg.faults && is_local(m, c), Component::Subpartition(c).into());
    every(n, |c| cause(m, c) | upstream(c)) | g(Component::Halt)
}

/// Whether channel `c` is a `LocalInputChannel`.
fn is_local(m: &RecoveryModel, c: u8) -> bool {
    m.cfg.channels[c as usize].kind == ChannelKind::Local
}

/// `credit(s, c)` of remote channel `c` compared with `bm.available()` (and, with
/// `exclusive == 0`, `resets_credit`'s `producer.blocked`), under `released`: unannounced
/// credit, the threads' pending announcements, in-flight `AddCredit`, the reader's credit and
/// the data on the wire.
fn credit_against_buffers(m: &RecoveryModel, n: usize) -> Components {
    use Component::*;
    let per = channels_where(
        n,
        |c| !is_local(m, c),
        |c| {
            let resets = when(m.cfg.channels[c as usize].exclusive == 0, Subpartition(c).into());
            [Released(c), Buffers(c), Credit(c), CreditWire(c), Reader(c), Wire(c)]
                .into_iter()
                .fold(resets, |acc, k| acc | k.into())
        },
    );
    let announcements = g(TaskAnnounce) | g(Client) | g(Recycler);
    per | when(per != NONE, announcements)
}

/// The components property `p`'s predicate reads in a gate of `n` channels configured as `m`.
pub fn reads(m: &RecoveryModel, n: usize, p: PropertyId) -> Components {
    use Component::*;
    use PropertyId::*;
    let cfg = &m.cfg;
    let consumers = per_channel(n, &[Consumer]);
    let releases = per_channel(n, &[Released]);
    let remote = |c: u8| !is_local(m, c);
    // Whether any channel is ever in recovery.
    let recovers = cfg.delivery.needs_recovery();
    // The subpartition of channel `c` as the gate-queue predicates read it: a local channel's
    // view and failed upstream; a pending priority notification.
    let view = |c: u8| {
        let read = is_local(m, c) || cfg.channels[c as usize].priority_notify_step;
        when(read, Subpartition(c).into())
    };
    // A failed task (`TaskPc::Failed`) and the gate's queue, where the model keeps it.
    let gate_queue = |rest: Components| when(m.models_gate_queue(), g(Halt) | g(Gate) | rest);
    match p {
        // `ghost_delivered` of every channel.
        RecoveredDataPrecedesLiveData => consumers,
        // `in_recovery`, `ghost_delivered`; nothing without recovery (never in recovery).
        LiveDataHiddenDuringRecovery => when(recovers, consumers),
        // `ghost_delivered`.
        ExactlyOnceDelivery => consumers,
        // The queue, `in_recovery`, `ghost_delivered`; a delivered recovery barrier's checkpoint
        // status; `converted` flag off (`is_recovered_channel`; 2.3.0's migration exempts all).
        SentinelDiscipline => consumers | g(Handler) | when(cfg.delivery == Delivery::Legacy, g(Setup)),
        // `ghost_delivered`.
        RecoverySequenceNumbers => consumers,
        // Remote channels: `in_recovery`, `released`, `notify_available`, the credit anywhere;
        // nothing without recovery.
        NoCreditDuringRecovery => {
            let per = channels_where(
                n,
                |c| recovers && remote(c),
                |c| {
                    [
                        Consumer(c),
                        Released(c),
                        Buffers(c),
                        Credit(c),
                        CreditWire(c),
                        Reader(c),
                    ]
                    .into_iter()
                    .fold(NONE, |acc, k| acc | k.into())
                },
            );
            per | when(per != NONE, g(TaskAnnounce) | g(Client) | g(Recycler))
        }
        // The `NoBufferForData` violation; remote channels' credit against their buffers.
        CreditConservation => g(Halt) | credit_against_buffers(m, n),
        // Remote channels: `notify_available`, the reader's existence, credit against buffers.
        NoLostCredit => credit_against_buffers(m, n),
        // Every place a buffer can be: pools, managers, global pool, held, queues and stashes,
        // the recycler's, the drainer's and the task's hands; recovered ids in the queue,
        // delivered, freed, and `ghost_pushed`.
        BufferOwnership => per_channel(n, &[Consumer, Buffers, Held]) | pools(m, n) | g(Recycler) | g(Io) | g(Task),
        // `ghost_persisted`, `ghost_spilled`.
        PersistedAtMostOnce => consumers,
        // `released`, `drained` (task idle, the consumer, the producer's counters, subpartition
        // and wire), completed checkpoints, what was persisted and `ghost_barrier_after`.
        PersistedContentIsExact => {
            per_channel(n, &[Consumer, Released, Subpartition, Wire, Barriers]) | g(Task) | g(Handler)
        }
        // `ghost_rcb_at`, `ghost_persisted`, `ghost_spilled`.
        RecoveredStateFromItsSource => consumers,
        // The stash, `in_recovery`.
        StashHoldsOnlyEventsInOrder => consumers,
        // The queue, `priority_len`.
        PriorityEventsFirst => consumers,
        // `violation`.
        NoProtocolViolation => g(Halt),
        // The gate's queue, a failed task, the task's turn (`polling`), `has_next` (the cause,
        // the release, the queue, the view) and a pending producer notification.
        NoLostNotification => gate_queue(
            per_channel(n, &[Consumer, Released])
                | every(n, |c| cause(m, c) | view(c))
                | g(Task)
                | recovered_channel(m),
        ),
        // With the trigger on: a declined checkpoint, any release.
        NoDeclineOnLiveChannelInRecovery => when(cfg.insert_recovery_barriers, g(Handler) | releases),
        // The gate's priority section, a failed task, the task's turn, the release, the
        // upstream's release and `has_priority_next` (the queue, the flag, a local view's head).
        PriorityHonoured => {
            let local_view = every(n, |c| when(is_local(m, c), Subpartition(c).into()));
            gate_queue(per_channel(n, &[Consumer, Released]) | local_view | g(Task))
        }
        // `TaskPc::Failed { AnnouncedBarrierNotFound }`.
        AnnouncedBarrierFound => g(Halt),
        // `converted`, each channel's release and manager.
        ReleasedManagerHoldsNothing => recovered_channel(m) | per_channel(n, &[Released, Buffers]),
        // The gate's ordinary section, a failed task, the task's turn, the releases, the pending
        // notification and `priority_notified` (`priority_len`, the flag, the view's head).
        PriorityElementsArePrioritised => gate_queue(per_channel(n, &[Consumer, Released]) | every(n, view) | g(Task)),
        // Remote channels' queue and `ghost_delivered`; `converted` flag off (2.3.0 exempt).
        QueuedRecoveryNumbersIncrease => when(
            cfg.delivery != Delivery::Migration,
            channels_where(n, remote, |c| Consumer(c).into()) | recovered_channel(m),
        ),
        // `RequiredNotBacklogPlusInitialCredit`.
        RequiredIsBacklogPlusInitialCredit => g(Halt),
        // With the drainer: the release and the queue of each lending channel.
        RecoveredDataInLentBuffers => when(
            cfg.delivery == Delivery::Drainer,
            channels_where(
                n,
                |c| m.lends_recovery_buffers(c),
                |c| Components::from(Consumer(c)) | Released(c).into(),
            ),
        ),
        _ => checkpoint_and_liveness_reads(m, n, p),
    }
}

/// [`reads`] of the checkpoint, liveness and `sometimes` properties.
fn checkpoint_and_liveness_reads(m: &RecoveryModel, n: usize, p: PropertyId) -> Components {
    use Component::*;
    use PropertyId::*;
    let cfg = &m.cfg;
    let consumers = per_channel(n, &[Consumer]);
    let releases = per_channel(n, &[Released]);
    let recovers = cfg.delivery.needs_recovery();
    match p {
        // Each persister, the checkpoints' status.
        DeclinedCheckpointPersistsNothing => consumers | g(Handler),
        // The checkpoints' status, each persister's and remote channel's last barrier.
        SubsumedOnlyByNewer => consumers | g(Handler),
        // Without overlapping checkpoints: the barriers each upstream took, the aborted and the
        // ended checkpoints.
        CheckpointsDoNotOverlap => when(
            !cfg.overlapping_checkpoints,
            per_channel(n, &[Barriers]) | g(Aborted) | g(Handler),
        ),
        // The checkpoints, barriers seen and alignment; any release.
        TriggeredByItsBarriers => g(Handler) | releases,
        // The alignment and the barriers seen.
        ConvertedOnlyOnceUnaligned => g(Handler),
        // `faulted`, the release, `state_consumed`, `in_recovery`.
        RecoveryCompletes => faulted(m, n) | consumers | releases,
        // `faulted`, the release, `ghost_delivered`.
        AllLiveDataDelivered => faulted(m, n) | consumers | releases,
        // `faulted`, any release, the checkpoints' status.
        EveryCheckpointEnds => faulted(m, n) | releases | g(Handler),
        // `ghost_delivered`, the producer's `next_seq`.
        LiveNumbersFromTheProducer => per_channel(n, &[Consumer, Subpartition]),
        // `faulted`, then `is_terminal`: whether any thread can move, which reads the whole state.
        EveryBufferReturnsHome => everything(m, n),
        // `ghost_persisted`.
        CheckpointPersistsRecoveredData => consumers,
        // `ghost_spilled`.
        CheckpointSpillsUndrainedData => consumers,
        // `ghost_persisted`.
        CheckpointPersistsLiveData => consumers,
        // `ghost_replayed`, `ghost_delivered`.
        EventStashedAndReplayed => consumers,
        // The task's and the recycler's pending announcements.
        RecycleRacesEnableNotify => g(TaskAnnounce) | g(Recycler),
        // The checkpoints' status.
        CheckpointDeclinedForMissingBarrier => g(Handler),
        // `ghost_lent_across`.
        LentAcross => g(Ghosts),
        // A completed checkpoint, `in_recovery`; nothing without recovery.
        CheckpointCompletesDuringRecovery => when(recovers, g(Handler) | consumers),
        // The queue.
        RecoveryBarrierBehindSentinel => consumers,
        // `ghost_delivered`.
        StaleRecoveryBarrierPolled => consumers,
        // The release, `ghost_delivered`.
        EverythingDelivered => consumers | releases,
        // `TaskPc::Failed` with an upstream cause.
        TaskFails => g(Halt),
        // `ghost_converted`.
        AnnouncedBarrierConverted => g(Ghosts),
        _ => unreachable!("{p:?} is read by `reads`"),
    }
}

/// The union of what `props` read.
pub fn all_reads(m: &RecoveryModel, n: usize, props: impl Iterator<Item = PropertyId>) -> Components {
    props.fold(NONE, |acc, p| acc | reads(m, n, p))
}

/// What the properties read together: a step that writes none of it changes no property.
pub fn read_by_any(m: &RecoveryModel) -> Components {
    all_reads(m, m.cfg.channels.len(), PropertyId::ALL.iter().copied())
}
