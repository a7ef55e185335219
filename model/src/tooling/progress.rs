//! A ranking function on states: a measure that every step of the model strictly increases
//! (compared lexicographically), so that the reachable graph has no cycle. The checker
//! verifies it on every edge it generates; a graph whose every edge increases it is acyclic,
//! which makes the `eventually` verdicts sound without the second, depth-first search. Where
//! an edge does not increase it (a bug variant, or a change to the model this measure does not
//! know), the checker falls back to that search, so the verdict never rests on the measure
//! alone.
//!
//! The measure follows the protocol's flow, tier by tier:
//! 0. what only grows: lifecycle flags, elements written, sent, delivered, persisted and
//!    freed, sequence numbers handed out, checkpoints' progress, the drainer's cursor;
//! 1. elements in flight: a written element moves from the subpartition to the wire to the
//!    queue or the stash;
//! 2. the task thread's turn or trigger in progress, nearer to its end with each step;
//! 3. buffers and credit: a buffer moves from the operator's hands back to its manager or
//!    pool, credit from an announcement to the server; dropped credit counts as consumed;
//! 4. the other threads' post-lock work and the gate's queue, each entry done once.

use crate::state::{Channel, CheckpointStatus, Payload, RecyclerPc, State, TaskPc};
use crate::{Action, RecoveryModel};
use std::collections::{BTreeMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};

/// The edges a search generated that did not increase the rank (counted only when one
/// appears, so that the threads of a search do not share a counter on every edge).
#[derive(Debug, Default)]
pub struct RankCheck {
    non_increasing: AtomicU64,
}

impl RankCheck {
    /// Records the edge `last` → `next`.
    pub fn edge(&self, last: &State, next: &State) {
        self.edge_from(&rank(last), next);
    }

    /// Records an edge to `next` from a state of rank `last` (a search that generates all of
    /// a state's successors ranks it once).
    pub fn edge_from(&self, last: &Rank, next: &State) {
        if rank(next) <= *last {
            self.non_increasing.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Edges recorded that did not increase the rank.
    pub fn non_increasing(&self) -> u64 {
        self.non_increasing.load(Ordering::Relaxed)
    }
}

/// The rank of a state: tiers compared in order.
pub type Rank = [i64; 5];

fn flag(b: bool) -> i64 {
    i64::from(b)
}

fn checkpoint(c: &CheckpointStatus) -> i64 {
    match c {
        CheckpointStatus::NotTriggered => 0,
        CheckpointStatus::Triggered => 1,
        _ => 2,
    }
}

/// Tier 0 of one channel: what only grows.
fn grown(ch: &Channel) -> i64 {
    let somes = |v: &[Option<u8>]| v.iter().filter(|x| x.is_some()).count() as i64;
    flag(!ch.in_recovery)
        + flag(ch.upstream_ready)
        // A release begun (`releasing` alone: the first part of is-released-set-last).
        + flag(ch.released || ch.releasing)
        + flag(ch.released && !ch.releasing)
        + flag(ch.state_consumed)
        + flag(ch.listener)
        + flag(ch.error)
        + flag(ch.producer.released)
        + flag(ch.bm.notify_available)
        // Resumed: the subpartition handed out its EndOfOutputChannelStateEvent and is no
        // longer blocked (an aligned barrier that blocks it again is counted as sent).
        + flag(!ch.producer.blocked && ch.producer.dequeued() > 0)
        + i64::from(ch.producer.emitted)
        + i64::from(ch.producer.barriers)
        + i64::from(ch.producer.next_seq)
        + i64::from(ch.producer.backlog_announced)
        + (i64::from(ch.recovery_seq) - i64::from(i32::MIN))
        + i64::from(ch.ghost_pushed)
        + ch.ghost_delivered.len() as i64
        + ch.ghost_persisted.len() as i64
        + ch.ghost_spilled.len() as i64
        + i64::from(ch.ghost_replayed)
        + ch.ghost_freed.len() as i64
        + somes(&ch.ghost_rcb_at)
        + somes(&ch.ghost_started_at)
        + somes(&ch.ghost_barrier_after)
        + i64::from(ch.persister.last_seen_barrier)
        + i64::from(ch.last_barrier.0)
}

/// Tier 1 of one channel: elements in flight, by how far they still have to go (every step
/// that adds one grows tier 0; one that leaves counts as gone).
fn in_flight(ch: &Channel) -> i64 {
    // A queued timeoutable barrier is further from done than the unaligned one the upstream's
    // timeout makes of it.
    let aligned = |p: &&Payload| matches!(p, Payload::AlignedBarrier(_));
    -3 * ch.producer.subpartition.len() as i64
        - ch.producer.subpartition.iter().filter(aligned).count() as i64
        - 2 * ch.producer.wire.len() as i64
        - (ch.queue.len() + ch.stash.len()) as i64
}

/// Tier 2 of one channel: its buffers by where they are, and its credit (negative: credit is
/// created by a step that moves a buffer forward, and consumed or dropped later).
fn buffers_and_credit(ch: &Channel) -> i64 {
    30 * ch.bm.available() as i64 + 40 * ch.global_pool.len() as i64
        - 6 * i64::from(ch.unannounced_credit)
        - 2 * ch.add_credit_in_flight.iter().map(|&k| i64::from(k)).sum::<i64>()
        - i64::from(ch.producer.reader_credit.unwrap_or(0))
        - flag(ch.add_credit_queued)
}

/// The rank of `s`.
pub fn rank(s: &State) -> Rank {
    let mut r = [0; 5];
    r[0] = flag(s.partitions_requested)
        + flag(s.converted)
        + flag(s.closed)
        + s.checkpoints.iter().map(checkpoint).sum::<i64>()
        + s.barriers_seen.iter().map(|b| i64::from(b.count_ones())).sum::<i64>()
        // The drainer's take, then its append: each a step forward.
        + 2 * i64::from(s.io_pc)
        + flag(s.io_buffer.is_some())
        + flag(s.violation.is_some())
        + flag(s.ghost_converted)
        + flag(s.ghost_lent_across)
        + flag(matches!(s.task, TaskPc::Failed { .. }))
        + i64::from(s.upstream_recovered.count_ones())
        + i64::from(s.aborted.count_ones())
        // A newer alignment replaces an older one; one alignment only ever times out.
        + s.alignment.as_ref().map_or(0, |a| 2 * i64::from(a.cp) + flag(a.timed_out));
    let announce = |a: &Option<crate::state::Announce>| a.map_or(0, |a| i64::from(a.n));
    r[3] = 15 * s.pools.iter().map(|p| p.available.len() as i64).sum::<i64>()
        - 10 * (announce(&s.task_announce) + announce(&s.client_announce))
        + match s.recycler {
            RecyclerPc::Idle => 0,
            RecyclerPc::Announce(a) => -10 * i64::from(a.n),
            RecyclerPc::ReturnFloating { .. } => 10,
        };
    r[2] = match s.task {
        // A turn or a trigger in progress: each step brings it nearer to its end.
        TaskPc::Trigger { channel, inserted, .. } => -100 + 16 * flag(inserted) + i64::from(channel),
        TaskPc::ClearPendingPriority { .. } | TaskPc::RereadPendingPriority { .. } => -70,
        TaskPc::Consume { .. } => -60,
        TaskPc::EnableNotify { .. } => -50,
        TaskPc::EnableNotifyRest { .. } => -40,
        TaskPc::Idle | TaskPc::AwaitUpstreamReady { .. } | TaskPc::Failed { .. } => 0,
    };
    // Parking (requestBufferBlocking) comes before the push it waits for.
    r[4] = -(s.gate.channels.len() as i64) - flag(s.client_backlog.is_some()) + flag(s.io_waiting);
    for ch in &s.channels {
        r[0] += grown(ch);
        r[1] += in_flight(ch);
        r[3] += buffers_and_credit(ch);
        r[4] -=
            3 * flag(ch.producer.notify_pending.is_some()) - flag(ch.producer.notify_blocked) + flag(ch.resume_queued);
    }
    r
}

/// Every reachable edge of `model` that does not increase the rank, counted by action kind,
/// with the first one found of each kind (state before, action, state after).
pub fn non_increasing_edges(model: &RecoveryModel) -> BTreeMap<&'static str, (usize, (State, Action, State))> {
    use stateright::Model;
    let mut seen: HashSet<u64, foldhash::fast::FixedState> = Default::default();
    let mut queue: VecDeque<State> = model.init_states().into();
    for s in &queue {
        seen.insert(crate::tooling::fingerprint::state_fingerprint(s));
    }
    let mut found = BTreeMap::new();
    let mut actions = Vec::new();
    while let Some(s) = queue.pop_front() {
        let r = rank(&s);
        model.actions(&s, &mut actions);
        for a in actions.drain(..) {
            let Some(next) = model.next_state(&s, a) else { continue };
            if rank(&next) <= r {
                found.entry(a.method()).or_insert((0, (s.clone(), a, next.clone()))).0 += 1;
            }
            if seen.insert(crate::tooling::fingerprint::state_fingerprint(&next)) {
                queue.push_back(next);
            }
        }
    }
    found
}
