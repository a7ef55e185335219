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
    /// The network buffer holding it (recovered data the drainer put into a lent buffer).
    pub buffer: Option<crate::state::NetBuf>,
}

/// Whether `getNextBuffer()` returns something now (what the gate must have queued). Between
/// `isReleased` and the view's release (`release_step`) it still does, as `get_next_buffer`.
pub fn has_next(ch: &Channel) -> bool {
    has_next_with_flag(ch, ch.pending_priority)
}

/// [`has_next`] with `hasPendingPriorityEvent` read as `pending_priority`.
pub fn has_next_with_flag(ch: &Channel, pending_priority: bool) -> bool {
    if ch.released && !ch.releasing {
        return false;
    }
    if ch.in_recovery {
        // A recovered element, or a pending priority event (which implies a listener, hence a
        // view to pull it from).
        pending_priority || !ch.queue.is_empty()
    } else {
        ch.listener && ch.producer.head_available().is_some()
    }
}

/// `getNextBuffer()` under the `inRecovery` predicate of PR2; `None` when there is nothing to
/// return (a released channel has no view and returns nothing, as in Flink; between
/// `isReleased` and the view's release, `release_step`, it still polls as a live channel does).
pub fn get_next_buffer(ch: &mut Channel, variant: Variant) -> Result<Option<Polled>, Violation> {
    if ch.released && !ch.releasing {
        return Ok(None);
    }
    if ch.in_recovery {
        if !ch.pending_priority {
            let Some(head) = ch.queue.pop_front() else {
                // Live upstream data stays hidden during recovery.
                return Ok(None);
            };
            // wrapRecoveredBufferAsAvailability: a number per element, no checkForBarrier and
            // no maybePersist (the FLINK-40016 fix).
            let seq = ch.recovery_seq;
            ch.recovery_seq += 1;
            if variant == Variant::RecoveredBuffersThroughMaybePersist {
                ch.persister.check_for_barrier(head.payload);
                ch.persister.maybe_persist(head.payload, &mut ch.ghost_persisted);
            }
            return Ok(Some(Polled {
                payload: head.payload,
                seq,
                buffer: head.buffer,
            }));
        }
        return pull_priority_from_subpartition_view(ch).map(Some);
    }
    // Normal path, unchanged from master: poll the view, checkForBarrier and maybePersist. A
    // blocked subpartition hands out priority elements only.
    if ch.producer.head_available().is_none() {
        return Ok(None);
    }
    let payload = poll_view(ch);
    let seq = if variant == Variant::LocalPollMisnumbersLive {
        ch.producer.next_seq
    } else {
        ch.producer.next_seq - 1
    };
    ch.persister.check_for_barrier(payload);
    ch.persister.maybe_persist(payload, &mut ch.ghost_persisted);
    Ok(Some(Polled {
        payload,
        seq,
        buffer: None,
    }))
}

/// `nextDataType` of the `getNextBuffer` that returned `polled`, as the element it names: in
/// recovery the recovered queue's head (never the subpartition's, except behind a pulled
/// priority event that has another one behind it); after recovery the subpartition's head, if
/// it would hand it out (a blocked one: a priority element only).
pub fn next_after_poll(ch: &Channel, polled: Payload) -> Option<Payload> {
    let own = ch.queue.first().map(|e| e.payload);
    let upstream = ch.producer.head_available();
    match (ch.in_recovery, polled, upstream) {
        (true, Payload::Barrier(_), Some(next @ Payload::Barrier(_))) => Some(next),
        (true, _, _) => own,
        (false, _, _) => upstream,
    }
}

/// `subpartitionView.getNextBuffer()`: `pollBuffer`, which blocks the subpartition when it
/// hands out a `RECOVERY_COMPLETION`.
fn poll_view(ch: &mut Channel) -> Payload {
    let payload = ch.producer.subpartition.pop_front().expect("checked by the caller");
    ch.producer.handed_out(payload);
    if let Payload::Barrier(cp) = payload {
        ch.ghost_barrier_after[cp as usize - 1] = Some(ch.producer.dequeued());
    }
    ch.producer.next_seq += 1;
    payload
}

/// `pullPriorityFromSubpartitionView()`: `checkState(next.dataType.hasPriority(), "Expected
/// priority event…")`, then `checkForBarrier` only.
pub fn pull_priority_from_subpartition_view(ch: &mut Channel) -> Result<Polled, Violation> {
    if !matches!(ch.producer.subpartition.first(), Some(Payload::Barrier(_))) {
        return Err(Violation::ExpectedPriorityEvent);
    }
    let payload = poll_view(ch);
    let seq = ch.producer.next_seq - 1;
    ch.persister.check_for_barrier(payload);
    if !matches!(ch.producer.subpartition.first(), Some(Payload::Barrier(_))) {
        ch.pending_priority = false;
    }
    Ok(Polled {
        payload,
        seq,
        buffer: None,
    })
}

/// `subpartitionView.peekNextDataType().hasPriority()`: a view exists and a barrier is at its head.
pub fn view_head_has_priority(ch: &Channel) -> bool {
    ch.listener && matches!(ch.producer.subpartition.first(), Some(Payload::Barrier(_)))
}

/// Whether `getNextBuffer()` takes the priority fast path: in recovery with a pending priority
/// event.
pub fn pulls_priority(ch: &Channel) -> bool {
    (!ch.released || ch.releasing) && ch.in_recovery && ch.pending_priority
}

/// `pullPriorityFromSubpartitionView()` up to the flag (`priority_notify_step`): poll the
/// view, `checkForBarrier`; returns the barrier, its sequence number and whether the next data
/// type had no priority (then the task clears `hasPendingPriorityEvent` in its next step, and a
/// producer may set it in between).
pub fn pull_priority_from_subpartition_view_split(ch: &mut Channel) -> Result<(u8, i32, bool), Violation> {
    let Some(&Payload::Barrier(cp)) = ch.producer.subpartition.first() else {
        return Err(Violation::ExpectedPriorityEvent);
    };
    let payload = poll_view(ch);
    let seq = ch.producer.next_seq - 1;
    ch.persister.check_for_barrier(payload);
    let clear = !matches!(ch.producer.subpartition.first(), Some(Payload::Barrier(_)));
    Ok((cp, seq, clear))
}

/// `notifyPriorityEvent` from the producer: only a created view has a listener. True: the
/// listener queues the channel at the gate's priority head.
pub fn notify_priority_event(ch: &mut Channel) -> bool {
    if ch.listener {
        ch.pending_priority = true;
    }
    ch.listener
}

/// `LocalInputChannel.resumeConsumption()`: `checkState(!isReleased)` (the caller skips a
/// released channel), the view's `resumeConsumption` (`checkState(isBlocked, "Should be
/// blocked by checkpoint.")`, then unblocked). True if the view is available now: the channel
/// notifies the gate.
pub fn resume_consumption(ch: &mut Channel) -> Result<bool, Violation> {
    if !ch.producer.blocked {
        return Err(Violation::NotBlocked);
    }
    ch.producer.blocked = false;
    Ok(ch.producer.head_available().is_some())
}

/// `onRecoveredStateConsumed()`: flip recovery off (`checkState(inRecovery, "Recovery already
/// finished.")`) and complete `stateConsumedFuture`. The caller then notifies the gate, so that
/// the live data recovery hid is polled.
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

// --- Flink 2.3.0, flag on: buffers migrated from the RecoveredInputChannel -----------------
// The channel is created without recovery; its `toBeConsumedBuffers` (the model's `queue`) hold
// what `toInputChannel()` migrated, numbered from `i32::MIN` in the constructor.

/// Whether `getNextBuffer()` returns something now: a migrated buffer, else the view's data.
pub fn has_next_migrated(ch: &Channel) -> bool {
    !ch.released && (!ch.queue.is_empty() || (ch.listener && ch.producer.head_available().is_some()))
}

/// 2.3.0's `getNextBuffer()`: while `toBeConsumedBuffers` is not empty,
/// `getNextRecoveredBuffer()` (a pending priority event is pulled from the view first, with
/// `checkState(hasPriority, "Expected priority event…")`), otherwise the view. Both go through
/// `getBufferAndAvailability`, which calls `checkForBarrier` and `maybePersist`: a migrated data
/// buffer polled while a checkpoint waits for this channel's barrier is written again
/// (FLINK-40016, not fixed in 2.3.0).
pub fn get_next_migrated_buffer(ch: &mut Channel, persist_only_upstream: bool) -> Result<Option<Polled>, Violation> {
    if ch.released {
        return Ok(None);
    }
    let from_view = ch.queue.is_empty() || ch.pending_priority;
    let (payload, seq) = if ch.queue.is_empty() {
        if ch.producer.head_available().is_none() {
            return Ok(None);
        }
        let payload = poll_view(ch);
        (payload, ch.producer.next_seq - 1)
    } else if ch.pending_priority {
        if !matches!(ch.producer.subpartition.first(), Some(Payload::Barrier(_))) {
            return Err(Violation::ExpectedPriorityEvent);
        }
        let payload = poll_view(ch);
        if !matches!(ch.producer.subpartition.first(), Some(Payload::Barrier(_))) {
            ch.pending_priority = false;
        }
        (payload, ch.producer.next_seq - 1)
    } else {
        let head = ch.queue.pop_front().expect("not empty");
        (head.payload, head.seq)
    };
    ch.persister.check_for_barrier(payload);
    // FLINK-40016's fix (`persist-only-upstream-data`): the migrated buffers were persisted by
    // `checkpointStarted` already.
    if from_view || !persist_only_upstream {
        ch.persister.maybe_persist(payload, &mut ch.ghost_persisted);
    }
    Ok(Some(Polled {
        payload,
        seq,
        buffer: None,
    }))
}

/// `nextDataType` of 2.3.0's `getNextBuffer` that returned `polled`: behind a pulled priority
/// event the view's next priority event, else the next migrated buffer; behind the last
/// migrated buffer `DATA_BUFFER` if the view is available, whatever its head is (named here by
/// a data element); on the view's path the view's head.
pub fn next_after_migrated_poll(ch: &Channel, polled: Payload) -> Option<Payload> {
    let own = ch.queue.first().map(|e| e.payload);
    let upstream = ch.producer.head_available();
    match (polled, upstream) {
        (Payload::Barrier(_), Some(next @ Payload::Barrier(_))) => Some(next),
        _ if own.is_some() => own,
        (Payload::Recovered(_) | Payload::EndOfRecovery, Some(head)) if ch.listener => {
            Some(if head.is_data() { head } else { Payload::Data(0) })
        }
        (Payload::Recovered(_) | Payload::EndOfRecovery, _) => None,
        _ => upstream,
    }
}
