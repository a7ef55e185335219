//! `RecoverableInputChannel`: the push interface both physical channels implement, with the
//! parts Local and Remote share. Each function is one critical section of the channel's
//! queue monitor (`recoveredBuffers` or `receivedBuffers`).

use crate::action::Action;
use crate::config::ChannelKind;
use crate::local_input_channel as local;
use crate::model::RecoveryModel;
use crate::recovered_input_channel as recovered;
use crate::remote_input_channel as remote;
use crate::state::{Channel, CheckpointId, Entry, Payload, Violation};
use crate::state::{State, TaskPc};
use crate::variant::Variant;

/// `offerRecoveredBuffer` / `appendRecoveredBuffer`: append at the tail. Remote numbers the
/// element now; local numbers it when it is consumed. Returns whether the queue was empty: the
/// caller then notifies the gate (`notifyChannelNonEmpty`).
fn append_recovered(ch: &mut Channel, kind: ChannelKind, payload: Payload) -> bool {
    append_numbered(ch, kind, payload, true)
}

/// [`append_recovered`], the counter advanced or (variant sentinel-keeps-recovery-sequence, for
/// the sentinel) not.
fn append_numbered(ch: &mut Channel, kind: ChannelKind, payload: Payload, advance: bool) -> bool {
    let was_empty = ch.queue.is_empty();
    let seq = match kind {
        ChannelKind::Remote => {
            ch.recovery_seq += i32::from(advance);
            ch.recovery_seq - i32::from(advance)
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
pub fn finish_recovered_buffer_delivery(
    ch: &mut Channel,
    kind: ChannelKind,
    variant: Variant,
) -> Result<bool, Violation> {
    if ch.released {
        return Ok(false);
    }
    if !ch.in_recovery {
        return Err(Violation::PushAfterRecovery);
    }
    let advance = variant != Variant::SentinelKeepsRecoverySequence;
    Ok(append_numbered(ch, kind, Payload::EndOfRecovery, advance))
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
        add_input_data_from_spill(ch, cp, recovered);
    }
    append_recovered(ch, kind, Payload::RecoveryBarrier(cp))
}

/// `addInputDataFromSpill(cp, snapshot)`: the recovered buffers the drainer has not pushed yet
/// belong to checkpoint `cp`.
pub fn add_input_data_from_spill(ch: &mut Channel, cp: CheckpointId, recovered: u8) {
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

/// The calls every physical channel answers the same way at this level: the end of
/// recovery, and release by the canceler.
impl RecoveryModel {
    pub(crate) fn on_recovered_state_consumed(&self, s: &mut State, c: u8) {
        let r = match self.kind(c) {
            ChannelKind::Local => {
                s.task = TaskPc::Idle;
                // Re-queue the channel so that the live data recovery hid is polled.
                let requeue = self.variant != Variant::NoRequeueAfterRecovery;
                local::on_recovered_state_consumed(s.ch_mut(c)).map_or(Ok(requeue), Err)
            }
            ChannelKind::Remote => {
                s.task = TaskPc::EnableNotify { channel: c };
                remote::on_recovered_state_consumed(s.ch_mut(c), self.variant)
            }
        };
        self.pushed(s, c, r);
    }

    /// The canceler's `releaseAllResources()` of channel `c`; with `release_step`, in two steps.
    pub(crate) fn release_all_resources(&self, s: &mut State, c: u8) {
        self.release(s, c, self.cfg.release_step);
    }

    /// `releaseAllResources()`, whole or (`split`) only its first critical section.
    pub(crate) fn release(&self, s: &mut State, c: u8, split: bool) {
        if self.is_recovered_channel(s) {
            return recovered::release_all_resources(s.ch_mut(c));
        }
        // `isReleased` (a local channel: with the latch and the future, as in Flink's order);
        // split, the queues stay intact until the canceler's next step.
        let local = self.cfg.channels[c as usize].kind == ChannelKind::Local;
        if split && self.variant == Variant::IsReleasedSetLast {
            // The queue and the buffers first; `isReleased` in the canceler's next step.
            s.ch_mut(c).releasing = true;
            return self.drain_and_release_buffers(s, c);
        }
        let ch = s.ch_mut(c);
        ch.released = true;
        ch.releasing = true;
        if local {
            ch.upstream_ready = true;
            ch.state_consumed = true;
        }
        if !split {
            self.release_queued_buffers(s, c);
        }
    }

    /// The rest of `releaseAllResources()` (`release_step`): the view, the queue and the stash,
    /// `releaseAllBuffers`; a remote channel opens its latch and fails its future last.
    pub(crate) fn release_queued_buffers(&self, s: &mut State, c: u8) {
        let ch = s.ch_mut(c);
        ch.releasing = false;
        ch.upstream_ready = true;
        ch.state_consumed = true;
        if self.variant == Variant::IsReleasedSetLast && !ch.released {
            // The variant's second part: the queue and the buffers went in the first.
            ch.released = true;
            return;
        }
        self.drain_and_release_buffers(s, c);
    }

    /// The queue and the stash drained, `releaseAllBuffers`, the floating buffers to the pool.
    fn drain_and_release_buffers(&self, s: &mut State, c: u8) {
        let ch = s.ch_mut(c);
        let drained = drain_released(ch);
        let kept = if self.variant == Variant::ReleaseKeepsFloatingBuffers {
            std::mem::take(&mut ch.bm.floating)
        } else {
            Default::default()
        };
        let floating = ch.bm.release_all_buffers(drained, &mut ch.global_pool);
        ch.bm.floating = kept;
        self.recycle_all_to_pool(s, c, floating);
    }
}

/// The canceler.
impl RecoveryModel {
    /// What the canceler may do next: finish the release it is in, else (`release`) release a
    /// channel or close the gate.
    pub(crate) fn canceler_actions(&self, s: &State, out: &mut Vec<Action>) {
        if let Some(c) = s.channels.iter().position(|ch| ch.releasing) {
            // The canceler is inside `releaseAllResources` of channel `c`.
            out.push(Action::ReleaseQueuedBuffers { channel: c as u8 });
        } else if self.cfg.release {
            for (c, ch) in s.channels.iter().enumerate() {
                if !ch.released {
                    out.push(Action::ReleaseAllResources { channel: c as u8 });
                }
            }
            if !s.closed {
                out.push(Action::CloseGate);
            }
        }
    }
}
