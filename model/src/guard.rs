//! What keeps an action disabled: the conjuncts of its thread's guard, each with the
//! components (`crate::footprint`) its truth depends on. An action whose conjunct is false stays
//! disabled until some step writes one of that conjunct's components, so the writers of those
//! components are a necessary enabling set, usually far smaller than the writers of everything
//! the action reads. `model/tests/guard.rs` checks, on every step of a set of presets and of
//! the bug-zoo variants, that an enabled action has every conjunct true and that a false
//! conjunct stays false while no step writes its components.
//!
//! The list of an action's conjuncts need not be complete: where every conjunct listed holds
//! and the action is still disabled, the reduction falls back to everything it reads.

use crate::action::{Action, Thread};
use crate::config::{ChannelKind, Delivery};
use crate::footprint::{Component, Components};
use crate::model::{GatePolling, RecoveryModel};
use crate::state::elements::RESUME_CONSUMPTION;
use crate::state::sequential_channel_state_reader::IoStep;
use crate::state::{Announce, NetBuf, Payload, RecyclerPc, SenderBacklog, State, TaskPc};

/// One conjunct: what it reads and whether it holds.
pub type Conjunct = (Components, bool);

const NONE: Components = Components::EMPTY;

fn one(c: Component) -> Components {
    c.into()
}

/// `f` of every channel.
fn every(s: &State, f: fn(u8) -> Component) -> Components {
    (0..s.channels.len() as u8).fold(NONE, |acc, c| acc | one(f(c)))
}

/// The conjuncts of `action`'s guard in `s`; one read from no component is the
/// configuration's.
pub fn conjuncts(m: &RecoveryModel, s: &State, action: &Action) -> Vec<Conjunct> {
    (task_side(m, s, action).or_else(|| upstream_side(m, s, action)))
        .or_else(|| netty_client_and_others(m, s, action))
        .expect("every action has a guard")
}

/// The task's and the drainer's actions, and every thread's `notifyBufferAvailable`.
fn task_side(m: &RecoveryModel, s: &State, action: &Action) -> Option<Vec<Conjunct>> {
    use Action::*;
    use Component as C;
    let task = one(C::Task);
    let announce = one(C::TaskAnnounce);
    let client = one(C::Client);
    // The task runs a step of its program only with no announcement pending.
    let task_free = (announce, s.task_announce.is_none());
    let idle = (task, s.task == TaskPc::Idle);
    let io_step = |step: IoStep| (one(C::Io), m.io_program.get(s.io_pc as usize) == Some(&step));
    let g = match *action {
        NotifyBufferAvailable { thread, channel: c, .. } => match thread {
            Thread::Task => vec![(
                announce,
                matches!(s.task_announce, Some(Announce { channel, .. }) if channel == c),
            )],
            Thread::NettyClient => vec![
                (client, s.client_backlog.is_none()),
                (
                    client,
                    matches!(s.client_announce, Some(Announce { channel, .. }) if channel == c),
                ),
            ],
            Thread::Recycler => {
                vec![(
                    one(C::Recycler),
                    matches!(s.recycler, RecyclerPc::Announce(Announce { channel, .. }) if channel == c),
                )]
            }
            _ => vec![],
        },
        ConvertRecoveredInputChannels => {
            let delivery = matches!(
                m.cfg.delivery,
                Delivery::Conversion | Delivery::Legacy | Delivery::Migration
            );
            vec![
                (NONE, delivery),
                (one(C::Setup), !s.converted),
                (one(C::Closed), !s.closed),
                task_free,
                idle,
            ]
        }
        RequestPartitions => vec![
            (one(C::Setup), !s.partitions_requested),
            (one(C::Closed), !s.closed),
            task_free,
            idle,
        ],
        AlignedCheckpointTimeout { cp } => vec![
            (NONE, m.cfg.aligned_checkpoint_timeout),
            (one(C::Handler), crate::task::alignment_timer_due(s) == Some(cp)),
            (one(C::Closed), !s.closed),
            task_free,
            idle,
        ],
        GetNextBuffer { channel: c } => {
            let mut g = vec![task_free, idle];
            if m.polling == GatePolling::Queue {
                g.push((one(C::Gate), s.gate.head() == Some(c)));
            }
            g
        }
        InsertRecoveryCheckpointBarrier { channel: c, cp } => {
            let at = s.task
                == TaskPc::Trigger {
                    cp,
                    channel: c,
                    inserted: false,
                };
            vec![task_free, (task, at)]
        }
        CheckpointStarted { channel: c, cp } => {
            let at = s.task
                == TaskPc::Trigger {
                    cp,
                    channel: c,
                    inserted: true,
                };
            vec![task_free, (task, at)]
        }
        OnRecoveredStateConsumed { channel: c } => vec![task_free, (task, s.task == TaskPc::Consume { channel: c })],
        EnableNotify { channel: c } => {
            let at = matches!(s.task, TaskPc::EnableNotify { channel } | TaskPc::EnableNotifyRest { channel, .. } if channel == c);
            vec![task_free, (task, at)]
        }
        ClearPendingPriorityEvent { channel: c } => {
            let at = matches!(s.task, TaskPc::ClearPendingPriority { channel, .. } if channel == c);
            vec![task_free, (task, at)]
        }
        RereadPendingPriorityEvent { channel: c } => {
            let at = matches!(s.task, TaskPc::RereadPendingPriority { channel, .. } if channel == c);
            vec![task_free, (task, at)]
        }
        FinishRecoveredBufferDelivery { channel: c } => {
            // The drainer's step, or in B5 the task's wait for `upstreamReady`.
            let drainer = m.io_program.get(s.io_pc as usize) == Some(&IoStep::Finish(c));
            let awaits = s.task == TaskPc::AwaitUpstreamReady { channel: c };
            vec![(one(C::Io) | task, drainer || awaits)]
        }
        OnRecoveredStateBuffer { channel: c } | RequestBufferBlocking { channel: c } => vec![io_step(IoStep::Push(c))],
        _ => return None,
    };
    Some(g)
}

/// The upstream's producer and its Netty server.
fn upstream_side(m: &RecoveryModel, s: &State, action: &Action) -> Option<Vec<Conjunct>> {
    use Action::*;
    use Component as C;
    // The task runs a step of its program only with no announcement pending.
    let remote = |c: u8| m.cfg.channels[c as usize].kind == ChannelKind::Remote;
    let no_error = |c: u8| (one(C::Error(c)), !s.ch(c).error);
    let free_producer = |c: u8| (one(C::Subpartition(c)), s.ch(c).producer.notify_pending.is_none());
    let g = match *action {
        NotifyPriorityEvent { channel: c } => {
            let p = &s.ch(c).producer;
            vec![(one(C::Subpartition(c)), p.notify_pending.is_some() && !p.notify_blocked)]
        }
        EmitCheckpointBarrier { channel: c, cp } => vec![
            (NONE, !m.cfg.aligned_checkpoint_timeout),
            free_producer(c),
            (
                one(C::Barriers(c)) | one(C::Subpartition(c)),
                s.ch(c).producer.barriers + 1 == cp && !s.ch(c).producer.released,
            ),
        ],
        EmitTimeoutableCheckpointBarrier { channel: c, cp } => vec![
            (NONE, m.cfg.aligned_checkpoint_timeout),
            free_producer(c),
            (one(C::Barriers(c)), s.ch(c).producer.barriers + 1 == cp),
        ],
        AlignedBarrierTimeout { channel: c, cp } => {
            let queued = s.ch(c).producer.subpartition.contains(&Payload::AlignedBarrier(cp));
            vec![free_producer(c), (one(C::Subpartition(c)), queued)]
        }
        AddBuffer { channel: c } => {
            let more = s.ch(c).producer.writes_more(&m.cfg.channels[c as usize]);
            vec![free_producer(c), (one(C::Subpartition(c)), more)]
        }
        ReleasePartition { channel: c } => vec![
            (NONE, m.cfg.faults && !remote(c)),
            free_producer(c),
            (one(C::Consumer(c)), s.ch(c).listener),
            (one(C::Subpartition(c)), !s.ch(c).producer.released),
        ],
        SendBuffer { channel: c } => {
            let sends = s.ch(c).producer.can_send();
            vec![
                (NONE, remote(c)),
                no_error(c),
                (one(C::Subpartition(c)) | one(C::Reader(c)), sends),
            ]
        }
        OnAddCredit { channel: c } => {
            let head = s
                .ch(c)
                .add_credit_in_flight
                .first()
                .is_some_and(|&m| m != RESUME_CONSUMPTION);
            vec![(NONE, remote(c)), no_error(c), (one(C::CreditWire(c)), head)]
        }
        OnResumeConsumption { channel: c } => {
            let head = s.ch(c).add_credit_in_flight.first() == Some(&RESUME_CONSUMPTION);
            vec![(NONE, remote(c)), no_error(c), (one(C::CreditWire(c)), head)]
        }
        AnnounceBacklog { channel: c } => {
            let announces = (s.ch(c).producer)
                .backlog_to_announce(m.cfg.channels[c as usize].exclusive)
                .is_some();
            vec![
                (NONE, remote(c)),
                no_error(c),
                (one(C::Subpartition(c)) | one(C::Reader(c)), announces),
            ]
        }
        _ => return None,
    };
    Some(g)
}

/// The Netty client, the recycler, the canceler and the coordinator.
fn netty_client_and_others(m: &RecoveryModel, s: &State, action: &Action) -> Option<Vec<Conjunct>> {
    use Action::*;
    use Component as C;
    let client = one(C::Client);
    // The task runs a step of its program only with no announcement pending.
    let client_idle = (client, s.client_backlog.is_none() && s.client_announce.is_none());
    let remote = |c: u8| m.cfg.channels[c as usize].kind == ChannelKind::Remote;
    let no_error = |c: u8| (one(C::Error(c)), !s.ch(c).error);
    let g = match *action {
        OnSenderBacklog { channel: c } => {
            vec![(
                client,
                matches!(s.client_backlog, Some(SenderBacklog { channel, .. }) if channel == c),
            )]
        }
        OnBuffer { channel: c } => vec![
            client_idle,
            no_error(c),
            (one(C::Wire(c)), !s.ch(c).producer.wire.is_empty()),
        ],
        SendAddCredit { channel: c } => vec![client_idle, no_error(c), (one(C::Credit(c)), s.ch(c).add_credit_queued)],
        SendResumeConsumption { channel: c } => {
            vec![client_idle, no_error(c), (one(C::Credit(c)), s.ch(c).resume_queued)]
        }
        OnError { channel: c } => vec![
            (NONE, m.cfg.faults && remote(c)),
            client_idle,
            no_error(c),
            (one(C::Setup), s.partitions_requested),
            (one(C::Released(c)), !s.ch(c).released),
        ],
        Recycle { channel: c, buffer } => {
            let floating = matches!(buffer, NetBuf::Floating(_));
            let held = s
                .ch(c)
                .held
                .iter()
                .any(|b| matches!(b, NetBuf::Floating(_)) == floating);
            vec![
                (one(C::Recycler), s.recycler == RecyclerPc::Idle),
                (one(C::Held(c)), held),
            ]
        }
        ReturnFloatingBuffer { channel: c, .. } => {
            let at = matches!(s.recycler, RecyclerPc::ReturnFloating { channel, .. } if channel == c);
            vec![(one(C::Recycler), at)]
        }
        ReleaseQueuedBuffers { channel: c } => vec![(one(C::Released(c)), s.ch(c).releasing)],
        ReleaseAllResources { channel: c } => vec![
            (NONE, m.cfg.release),
            (every(s, C::Released), s.channels.iter().all(|ch| !ch.releasing)),
            (one(C::Released(c)), !s.ch(c).released),
        ],
        CloseGate => vec![
            (NONE, m.cfg.release),
            (every(s, C::Released), s.channels.iter().all(|ch| !ch.releasing)),
            (one(C::Closed), !s.closed),
        ],
        AbortPendingCheckpoint { cp } => {
            let latest = s.channels.iter().map(|ch| ch.producer.barriers).max().unwrap_or(0);
            vec![
                (NONE, !m.cfg.overlapping_checkpoints),
                (every(s, C::Barriers), latest == cp),
                (one(C::Aborted), s.aborted & 1 << (cp - 1) == 0),
            ]
        }
        _ => return None,
    };
    Some(g)
}

/// The components of a conjunct of `action`'s guard that is false in `s`: no step enables
/// the action without writing one of them. `None` if every conjunct listed holds.
pub fn disabled_by(m: &RecoveryModel, s: &State, action: &Action) -> Option<Components> {
    conjuncts(m, s, action)
        .into_iter()
        .find(|(_, holds)| !holds)
        .map(|(c, _)| c)
}
