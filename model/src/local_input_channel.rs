//! `LocalInputChannel` in recovery: `getNextBuffer` serves recovered buffers first, pulls
//! pending priority events from the subpartition view, and hides live data until the sentinel
//! has been consumed. Recovery sequence numbers are assigned at consumption.

use crate::state::{Channel, Payload, PopFront, Violation};
use crate::variant::Variant;

/// What `getNextBuffer` returned.
pub struct Polled {
    /// The element.
    pub payload: Payload,
    /// Its sequence number.
    pub seq: i32,
}

/// Whether `getNextBuffer()` returns something now (the gate only polls channels with data).
pub fn has_next(ch: &Channel, view_exists: bool) -> bool {
    if ch.released {
        return false;
    }
    if ch.in_recovery {
        (!ch.pending_priority && !ch.queue.is_empty()) || (ch.pending_priority && view_exists)
    } else {
        view_exists && !ch.producer.subpartition.is_empty()
    }
}

/// `getNextBuffer()` under the `inRecovery` predicate of PR2.
pub fn get_next_buffer(ch: &mut Channel, variant: Variant) -> Result<Polled, Violation> {
    if ch.in_recovery {
        if !ch.pending_priority {
            let head = ch.queue.pop_front().expect("guarded by has_next");
            // wrapRecoveredBufferAsAvailability: a number per element, no checkForBarrier and
            // no maybePersist (the FLINK-40016 fix).
            let seq = ch.recovery_seq;
            ch.recovery_seq += 1;
            if variant == Variant::RecoveredBuffersThroughMaybePersist {
                ch.persister.check_for_barrier(head.payload);
                ch.persister.maybe_persist(head.payload, &mut ch.ghost_persisted);
            }
            return Ok(Polled {
                payload: head.payload,
                seq,
            });
        }
        return pull_priority_from_subpartition_view(ch);
    }
    // Normal path, unchanged from master: poll the view, checkForBarrier and maybePersist.
    let payload = poll_view(ch);
    let seq = ch.producer.next_seq - 1;
    ch.persister.check_for_barrier(payload);
    ch.persister.maybe_persist(payload, &mut ch.ghost_persisted);
    Ok(Polled { payload, seq })
}

/// `subpartitionView.getNextBuffer()`.
fn poll_view(ch: &mut Channel) -> Payload {
    let payload = ch.producer.subpartition.pop_front().expect("guarded by has_next");
    if let Payload::Barrier(cp) = payload {
        ch.ghost_barrier_after[cp as usize - 1] = Some(ch.producer.dequeued());
    }
    ch.producer.next_seq += 1;
    payload
}

/// `pullPriorityFromSubpartitionView()`: `checkState(next.dataType.hasPriority(), "Expected
/// priority event…")`, then `checkForBarrier` only.
fn pull_priority_from_subpartition_view(ch: &mut Channel) -> Result<Polled, Violation> {
    if !matches!(ch.producer.subpartition.first(), Some(Payload::Barrier(_))) {
        return Err(Violation::ExpectedPriorityEvent);
    }
    let payload = poll_view(ch);
    let seq = ch.producer.next_seq - 1;
    ch.persister.check_for_barrier(payload);
    if !matches!(ch.producer.subpartition.first(), Some(Payload::Barrier(_))) {
        ch.pending_priority = false;
    }
    Ok(Polled { payload, seq })
}

/// `notifyPriorityEvent` from the producer: only a created view has a listener.
pub fn notify_priority_event(ch: &mut Channel, view_exists: bool) {
    if view_exists {
        ch.pending_priority = true;
    }
}

/// `onRecoveredStateConsumed()`: flip recovery off (`checkState(inRecovery, "Recovery already
/// finished.")`) and complete `stateConsumedFuture`.
pub fn on_recovered_state_consumed(ch: &mut Channel) -> Option<Violation> {
    if !ch.in_recovery {
        return Some(Violation::RecoveryAlreadyFinished);
    }
    ch.in_recovery = false;
    if !ch.released {
        ch.state_consumed = true;
    }
    None
}
