//! `RecoverableInputChannel`: the push interface both physical channels implement, with the
//! parts Local and Remote share. Each function is one critical section of the channel's
//! queue monitor (`recoveredBuffers` or `receivedBuffers`).

use crate::config::ChannelKind;
use crate::state::{Channel, CheckpointId, Entry, Payload, Violation};
use crate::variant::Variant;

/// `offerRecoveredBuffer` / `appendRecoveredBuffer`: append at the tail. Remote numbers the
/// element now; local numbers it when it is consumed. Returns whether the queue was empty: the
/// caller then notifies the gate (`notifyChannelNonEmpty`).
fn append_recovered(ch: &mut Channel, kind: ChannelKind, payload: Payload) -> bool {
    let was_empty = ch.queue.is_empty();
    let seq = match kind {
        ChannelKind::Remote => {
            ch.recovery_seq += 1;
            ch.recovery_seq - 1
        }
        ChannelKind::Local => 0,
    };
    ch.queue.push(Entry {
        payload,
        seq,
        buffer: None,
    });
    was_empty
}

/// `onRecoveredStateBuffer(buffer)`: a released channel recycles the buffer; otherwise it must
/// still be in recovery (`checkState(inRecovery, "Push into recovered buffers after recovery
/// finished.")`). `Ok(true)`: the queue was empty, notify the gate.
pub fn on_recovered_state_buffer(ch: &mut Channel, kind: ChannelKind, payload: Payload) -> Result<bool, Violation> {
    if ch.released {
        if let Payload::Recovered(i) = payload {
            ch.ghost_freed.push(i);
        }
        return Ok(false);
    }
    if !ch.in_recovery {
        return Err(Violation::PushAfterRecovery);
    }
    Ok(append_recovered(ch, kind, payload))
}

/// `finishRecoveredBufferDelivery()` after its latch opened: append the sentinel unless
/// released (`checkState(inRecovery, "Recovery delivery already finished.")`). `Ok(true)`:
/// notify the gate.
pub fn finish_recovered_buffer_delivery(ch: &mut Channel, kind: ChannelKind) -> Result<bool, Violation> {
    if ch.released {
        return Ok(false);
    }
    if !ch.in_recovery {
        return Err(Violation::PushAfterRecovery);
    }
    Ok(append_recovered(ch, kind, Payload::EndOfRecovery))
}

/// `insertRecoveryCheckpointBarrierIfInRecovery(cp)`: no-op once recovered or released. True:
/// notify the gate. With `spill`, the trigger also writes what the drainer has not pushed yet
/// (of `recovered` in all) with `addInputDataFromSpill(cp, snapshot)`, under the drainer lock
/// that keeps the drainer's pushes out, so the snapshot and the barrier agree.
pub fn insert_recovery_checkpoint_barrier_if_in_recovery(
    ch: &mut Channel,
    kind: ChannelKind,
    cp: CheckpointId,
    recovered: u8,
    spill: bool,
) -> bool {
    if ch.released || !ch.in_recovery {
        return false;
    }
    ch.ghost_rcb_at[cp as usize - 1] = Some(ch.ghost_pushed);
    if spill {
        spill_remaining_state(ch, cp, recovered);
    }
    append_recovered(ch, kind, Payload::RecoveryBarrier(cp))
}

/// `addInputDataFromSpill(cp, snapshot)`: the recovered buffers the drainer has not pushed yet
/// belong to checkpoint `cp`.
pub fn spill_remaining_state(ch: &mut Channel, cp: CheckpointId, recovered: u8) {
    let remaining = (ch.ghost_pushed..recovered).map(|i| (cp, Payload::Recovered(i)));
    ch.ghost_spilled.extend(remaining);
}

/// Why `collectPreRecoveryBarrier` threw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Declined {
    /// "Missing RecoveryCheckpointBarrier": walked off the end of the queue.
    MissingBarrier,
    /// A barrier of a later checkpoint came first.
    LaterBarrier,
}

/// `collectPreRecoveryBarrier(cp)`: walk from the head (after the priority elements), retain
/// the data buffers before `RecoveryCheckpointBarrier(cp)` (they stay queued), remove that
/// barrier, discard barriers of subsumed checkpoints on the way.
pub fn collect_pre_recovery_barrier(
    ch: &mut Channel,
    cp: CheckpointId,
    variant: Variant,
) -> Result<Vec<Payload>, Declined> {
    let mut retained = Vec::new();
    let mut i = ch.priority_len as usize;
    while i < ch.queue.len() {
        match ch.queue[i].payload {
            Payload::RecoveryBarrier(b) if b == cp => {
                ch.queue.remove(i);
                return Ok(retained);
            }
            Payload::RecoveryBarrier(b) if b > cp => return Err(Declined::LaterBarrier),
            Payload::RecoveryBarrier(_) => {
                ch.queue.remove(i);
            }
            p if p.is_data() => {
                retained.push(p);
                i += 1;
            }
            _ => i += 1,
        }
    }
    if variant == Variant::NoDeclineOnMissingBarrier {
        return Ok(retained);
    }
    Err(Declined::MissingBarrier)
}

/// The part of `releaseAllResources()` under the channel's lock: the queue and the stash
/// drained; recovered buffers among them count as recycled. Returns their network buffers.
pub fn drain_released(ch: &mut Channel) -> Vec<crate::state::NetBuf> {
    let mut buffers = Vec::new();
    for e in ch.queue.drain(..).chain(ch.stash.drain(..)) {
        if let Payload::Recovered(i) = e.payload {
            ch.ghost_freed.push(i);
        }
        buffers.extend(e.buffer);
    }
    ch.priority_len = 0;
    buffers
}
