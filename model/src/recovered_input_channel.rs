//! `RecoveredInputChannel` on the flag-off path (`Delivery::Legacy`): Flink's behaviour without
//! checkpointing during recovery. The IO thread reads a channel's recovered buffers into its
//! `RecoveredInputChannel` and ends them with `EndOfInputChannelStateEvent`
//! (`finishReadRecoveredState`); the task polls the recovered channels through the gate; the
//! legacy sentinel completes the channel's state-consumed future and is not handed on. Until
//! the `requestPartitions` mail converts them, the model's channel *is* the recovered one: its
//! queue is `receivedBuffers`, `recovery_seq` the sequence number of the next poll, and
//! `Payload::EndOfRecovery` the legacy sentinel. Each function is one critical section of
//! `receivedBuffers`.

use crate::state::{Channel, Entry, Payload};

/// `onRecoveredStateBuffer(buffer)`: appends; a released channel recycles the buffer. True:
/// the queue was empty, notify the gate (`notifyChannelNonEmpty`).
pub fn on_recovered_state_buffer(ch: &mut Channel, payload: Payload) -> bool {
    if ch.released {
        if let Payload::Recovered(i) = payload {
            ch.ghost_freed.push(i);
        }
        return false;
    }
    let was_empty = ch.queue.is_empty();
    ch.queue.push(Entry {
        payload,
        seq: 0,
        buffer: None,
    });
    was_empty
}

/// `finishReadRecoveredState()`: appends the legacy sentinel (through `onRecoveredStateBuffer`).
pub fn finish_read_recovered_state(ch: &mut Channel) -> bool {
    on_recovered_state_buffer(ch, Payload::EndOfRecovery)
}

/// What `getNextBuffer()` did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Polled {
    /// A recovered buffer, numbered at consumption.
    Buffer {
        /// The element.
        payload: Payload,
        /// Its sequence number.
        seq: i32,
    },
    /// The legacy sentinel: the state-consumed future completes, nothing is handed on.
    StateConsumed,
    /// Nothing queued.
    Nothing,
    /// Released: `getNextBuffer` throws (`checkState(!isReleased)`).
    Released,
}

/// `getNextBuffer()` (task): the head of `receivedBuffers`, numbered from `i32::MIN` in
/// consumption order. The sentinel is not handed on and takes no number: Flink completes the
/// future and returns before `sequenceNumber++`.
pub fn get_next_buffer(ch: &mut Channel) -> Polled {
    if ch.released {
        return Polled::Released;
    }
    if ch.queue.is_empty() {
        return Polled::Nothing;
    }
    let e = ch.queue.remove(0);
    if e.payload == Payload::EndOfRecovery {
        ch.state_consumed = true;
        return Polled::StateConsumed;
    }
    let seq = ch.recovery_seq;
    ch.recovery_seq = seq.wrapping_add(1);
    Polled::Buffer {
        payload: e.payload,
        seq,
    }
}

/// Whether `getNextBuffer()` returns something now (the sentinel counts: polling it completes
/// the future).
pub fn has_next(ch: &Channel) -> bool {
    !ch.released && !ch.queue.is_empty()
}

/// `releaseAllResources()`: drains `receivedBuffers` (heap buffers, recycled). The
/// state-consumed future stays incomplete, so the conversion mail never runs; the physical
/// channel's exclusive buffers were never requested and stay where the model keeps them.
pub fn release_all_resources(ch: &mut Channel) {
    ch.released = true;
    for e in ch.queue.drain(..) {
        if let Payload::Recovered(i) = e.payload {
            ch.ghost_freed.push(i);
        }
    }
}

/// 2.3.0, flag on: `toInputChannel()` (`checkState(bufferFilteringCompleteFuture.isDone())`)
/// copies and clears `receivedBuffers` under its lock and hands the copy to the physical
/// channel's constructor (`toInputChannelInternal(ArrayDeque<Buffer>)`), which queues it
/// (`toBeConsumedBuffers` / `receivedBuffers`), numbered from `i32::MIN`, none with priority;
/// the new channel is created without recovery, its future complete. The legacy sentinel, if
/// not polled yet, moves along. Every recovered buffer precedes every barrier: a checkpoint
/// must persist the migrated data it finds unconsumed (`ghost_rcb_at`). True: the channel has
/// buffers in use, so the gate queues it.
pub fn to_input_channel(ch: &mut Channel) -> bool {
    for (k, e) in ch.queue.iter_mut().enumerate() {
        e.seq = i32::MIN + k as i32;
    }
    ch.priority_len = 0;
    ch.recovery_seq = i32::MIN;
    ch.state_consumed = true;
    let pushed = ch.ghost_pushed;
    for at in &mut ch.ghost_rcb_at {
        *at = Some(pushed);
    }
    !ch.queue.is_empty()
}
