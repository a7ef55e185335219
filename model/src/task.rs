//! The task thread's side: the gate handing polled elements to the operator or to
//! `CheckpointedInputGate` (barriers, the sentinel), checkpoint triggering in one mail
//! (`insertRecoveryCheckpointBarrierIfInRecovery` on every channel, then `checkpointStarted` on
//! each until one throws), and checkpoint completion or abort.

use crate::config::{ChannelKind, Delivery, ModelConfig};
use crate::recoverable_input_channel::{self as rc, Declined};
use crate::remote_input_channel as remote;
use crate::state::{CheckpointId, CheckpointStatus, Delivered, Payload, State, TaskPc};
use crate::variant::Variant;

/// `CheckpointedInputGate.pollNext` after a channel returned `payload`.
pub fn handle_polled(s: &mut State, cfg: &ModelConfig, c: u8, payload: Payload, seq: i32) {
    match payload {
        // 2.3.0 flag on: the migrated EndOfInputChannelStateEvent is an ordinary event to
        // CheckpointedInputGate; StreamTaskNetworkInput.processEvent ignores a class it does not
        // know, so nothing happens and the operator sees nothing.
        Payload::EndOfRecovery if cfg.delivery == Delivery::Migration => {}
        // handleEvent: onRecoveredStateConsumed; the sentinel never reaches the operator.
        Payload::EndOfRecovery => s.task = TaskPc::Consume { channel: c },
        Payload::Barrier(cp) => {
            s.ch_mut(c).ghost_delivered.push(Delivered { payload, seq });
            s.barriers_seen[cp as usize - 1] |= 1 << c;
            on_barrier(s, cfg, cp);
        }
        // Data and events reach the operator; a stale RecoveryCheckpointBarrier (its checkpoint
        // aborted before this channel started it) reaches the network input, which ignores it.
        _ => s.ch_mut(c).ghost_delivered.push(Delivered { payload, seq }),
    }
}

/// `SingleCheckpointBarrierHandler`: the first barrier of a checkpoint triggers it on every
/// channel; once all barriers are in, it completes.
fn on_barrier(s: &mut State, cfg: &ModelConfig, cp: CheckpointId) {
    let i = cp as usize - 1;
    if s.checkpoints[i] == CheckpointStatus::NotTriggered {
        // A newer checkpoint aborts an older one still waiting for barriers.
        for old in s.checkpoints[..i].iter_mut() {
            if matches!(old, CheckpointStatus::Triggered | CheckpointStatus::NotTriggered) {
                *old = CheckpointStatus::Subsumed;
            }
        }
        s.checkpoints[i] = CheckpointStatus::Triggered;
        s.task = TaskPc::Trigger {
            cp,
            channel: 0,
            inserted: !cfg.insert_recovery_barriers,
        };
    } else {
        maybe_complete(s, cp);
    }
}

/// Completes `cp` once the trigger is done and every live channel's barrier was processed.
fn maybe_complete(s: &mut State, cp: CheckpointId) {
    let i = cp as usize - 1;
    if s.checkpoints[i] != CheckpointStatus::Triggered || matches!(s.task, TaskPc::Trigger { .. }) {
        return;
    }
    let live = s
        .channels
        .iter()
        .enumerate()
        .filter(|(_, ch)| !ch.released)
        .fold(0u8, |m, (c, _)| m | 1 << c);
    if s.barriers_seen[i] & live == live {
        s.checkpoints[i] = CheckpointStatus::Completed;
        for ch in s.channels.iter_mut() {
            ch.persister.stop_persisting(cp);
        }
    }
}

/// Task: `insertRecoveryCheckpointBarrierIfInRecovery(cp)` on the channel whose turn it is,
/// with the drainer's remaining state spilled in the same critical section (unless `variant`
/// moves the snapshot to `checkpointStarted`). True: the queue was empty, notify the gate.
pub fn insert_recovery_checkpoint_barrier(
    s: &mut State,
    cfg: &ModelConfig,
    variant: Variant,
    c: u8,
    cp: CheckpointId,
) -> bool {
    let cc = &cfg.channels[c as usize];
    let spill = variant != Variant::SpillSnapshotAfterInsertion;
    let notify = rc::insert_recovery_checkpoint_barrier_if_in_recovery(s.ch_mut(c), cc.kind, cp, cc.recovered, spill);
    // The trigger inserts on every channel first, then starts the checkpoint on each.
    s.task = if (c as usize) + 1 < cfg.channels.len() {
        TaskPc::Trigger {
            cp,
            channel: c + 1,
            inserted: false,
        }
    } else {
        TaskPc::Trigger {
            cp,
            channel: 0,
            inserted: true,
        }
    };
    notify
}

/// Task: `checkpointStarted(cp)` on channel `c`, then the next channel, or the end of the trigger.
pub fn checkpoint_started(s: &mut State, cfg: &ModelConfig, variant: Variant, c: u8, cp: CheckpointId) {
    let kind = cfg.channels[c as usize].kind;
    let ch = s.ch_mut(c);
    ch.ghost_started_at[cp as usize - 1] = Some(ch.ghost_delivered.len() as u8);
    if variant == Variant::SpillSnapshotAfterInsertion && ch.ghost_rcb_at[cp as usize - 1].is_some() && !ch.released {
        // The snapshot of the drainer's remaining state, taken after the insertions.
        rc::spill_remaining_state(ch, cp, cfg.channels[c as usize].recovered);
    }
    let known = if ch.in_recovery {
        rc::collect_pre_recovery_barrier(ch, cp, variant)
    } else if kind == ChannelKind::Remote {
        // Master's branch: subsumed check and in-flight buffers before this channel's barrier.
        if (cp as i8) < ch.last_barrier.0 {
            return abort(s, cp, CheckpointStatus::Subsumed);
        }
        if cp as i8 > ch.last_barrier.0 {
            ch.last_barrier = (-1, -1);
        }
        Ok(remote::get_inflight_buffers(ch))
    } else if cfg.delivery == Delivery::Migration {
        // 2.3.0: the data buffers still in `toBeConsumedBuffers` (migrated), retained.
        Ok(ch.queue.iter().map(|e| e.payload).filter(|p| p.is_data()).collect())
    } else {
        Ok(Vec::new())
    };
    let known = match known {
        Ok(k) => k,
        Err(Declined::MissingBarrier) => {
            return abort(s, cp, CheckpointStatus::DeclinedMissingBarrier);
        }
        Err(Declined::LaterBarrier) => return abort(s, cp, CheckpointStatus::DeclinedLaterBarrier),
    };
    let ch = s.ch_mut(c);
    if ch
        .persister
        .start_persisting(cp, &known, &mut ch.ghost_persisted)
        .is_err()
    {
        return abort(s, cp, CheckpointStatus::Subsumed);
    }
    if (c as usize) + 1 < cfg.channels.len() {
        s.task = TaskPc::Trigger {
            cp,
            channel: c + 1,
            inserted: true,
        };
    } else {
        s.task = TaskPc::Idle;
        maybe_complete(s, cp);
    }
}

/// The checkpoint failed on this task: `abortInternal` stops persisting on every channel.
fn abort(s: &mut State, cp: CheckpointId, status: CheckpointStatus) {
    s.checkpoints[cp as usize - 1] = status;
    for ch in s.channels.iter_mut() {
        ch.persister.stop_persisting(cp);
    }
    s.task = TaskPc::Idle;
}
