//! `SingleInputGate.inputChannelsWithData`: the queue of channels the task polls. Channels put
//! themselves in it (`notifyChannelNonEmpty`, `notifyPriorityEvent`) when something becomes
//! available; the task polls the head, and the gate re-queues a channel whose `getNextBuffer`
//! reported more (`moreAvailable`, at the priority head when the next element has priority).
//! A channel with data that is not queued is never polled: a lost notification.
//!
//! Modelling choice: a notification is made in the same step as the critical section that
//! decided it (Flink makes it right after releasing the channel's lock). The order of two
//! notifications racing after their locks is therefore not explored; each channel's own order
//! is, and that is what the properties are about.

use crate::config::{ChannelKind, Delivery, FlinkFix};
use crate::local_input_channel as local;
use crate::model::RecoveryModel;
use crate::recoverable_input_channel as rc;
use crate::recovered_input_channel as recovered;
use crate::remote_input_channel as remote;
use crate::state::{Failure, Payload, State, TaskPc, Violation};
use crate::variant::Variant;

/// The gate's side of the model: notifications, the task's poll of a channel, the
/// `requestPartitions` mails and `close()`.
impl RecoveryModel {
    /// `notifyChannelNonEmpty` (or `notifyPriorityEvent` with `priority`) of channel `c`.
    pub(crate) fn notify(&self, s: &mut State, c: u8, priority: bool) {
        if !self.models_gate_queue() {
            return;
        }
        if priority {
            if self.variant == Variant::PriorityIgnoredForQueuedChannel && s.gate.contains(c) {
                return;
            }
            s.gate.notify_priority_event(c);
        } else {
            s.gate.notify_channel_non_empty(c);
        }
    }

    /// What a step's push returned: notify the gate, or record the violation.
    pub(crate) fn pushed(&self, s: &mut State, c: u8, r: Result<bool, Violation>) {
        match r {
            Ok(true) => self.notify(s, c, false),
            Ok(false) => {}
            Err(v) => s.violate(c, v),
        }
    }

    /// Whether `getNextBuffer()` of channel `c` returns something now (or throws the error
    /// `onError` set, which notified the gate).
    pub fn has_next(&self, s: &State, c: u8) -> bool {
        if s.ch(c).error {
            return true;
        }
        if self.is_recovered_channel(s) {
            return recovered::has_next(s.ch(c));
        }
        let ch = s.ch(c);
        match self.kind(c) {
            ChannelKind::Local if self.migrates() => local::has_next_migrated(ch),
            // `priority-from-view-head`: the poll sets the flag from the view's head first.
            ChannelKind::Local if self.cfg.has_fix(FlinkFix::PriorityFromViewHead) => {
                local::has_next_with_flag(ch, local::view_head_has_priority(ch))
            }
            ChannelKind::Local => local::has_next(ch),
            ChannelKind::Remote => remote::has_next(ch),
        }
    }

    /// The element `getNextBuffer` of channel `c` names as `nextDataType` after returning
    /// `polled` (`None`: nothing, the gate drops the channel).
    pub fn next_after_poll(&self, s: &State, c: u8, polled: Payload) -> Option<Payload> {
        if self.is_recovered_channel(s) {
            return s.ch(c).queue.first().map(|e| e.payload);
        }
        match self.kind(c) {
            ChannelKind::Local if self.migrates() => local::next_after_migrated_poll(s.ch(c), polled),
            ChannelKind::Local => local::next_after_poll(s.ch(c), polled),
            ChannelKind::Remote => s.ch(c).queue.first().map(|e| e.payload),
        }
    }

    /// What `getNextBuffer()` of channel `c` throws because its upstream failed, if it does:
    /// a remote channel's `checkError()` first of all; a local one's released view once the
    /// channel has nothing of its own to return.
    pub fn poll_throws(&self, s: &State, c: u8) -> Option<Failure> {
        let ch = s.ch(c);
        match self.kind(c) {
            ChannelKind::Remote => ch.error.then_some(Failure::Transport),
            ChannelKind::Local if ch.released || !ch.producer.released => None,
            // A pending priority event is pulled before any recovered buffer.
            ChannelKind::Local if ch.in_recovery => ch.pending_priority.then_some(Failure::NoPriorityEvent),
            ChannelKind::Local => Some(Failure::PartitionReleased),
        }
    }

    /// One turn of the gate's `pollNext` loop: dequeue channel `c`, `getNextBuffer()`, re-queue
    /// it if more is available, and hand what was polled on. A released remote channel throws
    /// (the task is being cancelled and ignores it); a released local one returns nothing.
    pub(crate) fn get_next_buffer(&self, s: &mut State, c: u8) {
        if self.models_gate_queue() {
            s.gate.poll();
        }
        if self.is_recovered_channel(s) {
            return self.get_next_recovered_buffer(s, c);
        }
        if self.kind(c) == ChannelKind::Local && self.cfg.has_fix(FlinkFix::PriorityFromViewHead) {
            // `priority-from-view-head`: the flag is set from the view's head before it is read,
            // so a lost update or a stale set cannot outlive the next poll.
            let ch = s.ch_mut(c);
            ch.pending_priority = local::view_head_has_priority(ch);
        }
        if let Some(cause) = self.poll_throws(s, c) {
            s.task = TaskPc::Failed { channel: c, cause };
            return;
        }
        let (payload, seq) = match self.kind(c) {
            ChannelKind::Local if self.migrates() => {
                match local::get_next_migrated_buffer(s.ch_mut(c), self.cfg.has_fix(FlinkFix::PersistOnlyUpstreamData))
                {
                    Ok(Some(p)) => (p.payload, p.seq),
                    Ok(None) => return,
                    Err(v) => return s.violate(c, v),
                }
            }
            ChannelKind::Local
                if self.cfg.channels[c as usize].priority_notify_step && local::pulls_priority(s.ch(c)) =>
            {
                match local::pull_priority_from_subpartition_view_split(s.ch_mut(c)) {
                    Ok((cp, seq, true)) => {
                        // The flag is cleared in the task's next step; the turn goes on.
                        s.task = TaskPc::ClearPendingPriority { channel: c, cp, seq };
                        return;
                    }
                    Ok((cp, seq, false)) => (Payload::Barrier(cp), seq),
                    Err(v) => return s.violate(c, v),
                }
            }
            ChannelKind::Local => match local::get_next_buffer(s.ch_mut(c), self.variant) {
                Ok(Some(p))
                    if self.variant == Variant::RecoveredBufferDroppedForPriorityEvent
                        && s.ch(c).in_recovery
                        && p.payload.is_recovery_element() =>
                {
                    // The bug: the flag is read again after the lock, in a step of its own.
                    s.task = TaskPc::RereadPendingPriority {
                        channel: c,
                        payload: p.payload,
                        seq: p.seq,
                        buffer: p.buffer,
                    };
                    return;
                }
                Ok(Some(p)) => {
                    s.ch_mut(c).held.extend(p.buffer);
                    (p.payload, p.seq)
                }
                Ok(None) => return,
                Err(v) => return s.violate(c, v),
            },
            ChannelKind::Remote => {
                let Some(e) = remote::get_next_buffer(s.ch_mut(c)) else {
                    return;
                };
                // The operator holds the network buffer until it recycles it.
                s.ch_mut(c).held.extend(e.buffer);
                (e.payload, e.seq)
            }
        };
        if self.variant == Variant::RecoveryCompletionNotBlocking {
            s.ch_mut(c).producer.blocked = false;
        }
        self.hand_on(s, c, payload, seq);
    }

    /// The flag-off path's `getNextBuffer()` on a `RecoveredInputChannel`: a recovered buffer
    /// is handed to the operator; the legacy sentinel completes the future and is not; a
    /// released channel throws (the task is being cancelled).
    pub(crate) fn get_next_recovered_buffer(&self, s: &mut State, c: u8) {
        let polled = recovered::get_next_buffer(s.ch_mut(c));
        let payload = match polled {
            recovered::Polled::Buffer { payload, .. } => payload,
            recovered::Polled::StateConsumed => Payload::EndOfRecovery,
            recovered::Polled::Nothing | recovered::Polled::Released => return,
        };
        // moreAvailable: queueChannel again.
        if self.models_gate_queue() && self.next_after_poll(s, c, payload).is_some() {
            s.gate.queue_channel(c, false);
        }
        if let recovered::Polled::Buffer { payload, seq } = polled {
            self.handle_polled(s, c, payload, seq);
        }
    }

    /// The end of the gate's turn: re-queue the channel if more is available (`moreAvailable`;
    /// at the priority head for a priority event) and hand what was polled on.
    pub(crate) fn hand_on(&self, s: &mut State, c: u8, payload: Payload, seq: i32) {
        if let Some(next) = self.next_after_poll(s, c, payload)
            && self.models_gate_queue()
        {
            s.gate.queue_channel(c, next.has_priority());
        }
        self.handle_polled(s, c, payload, seq);
        let every_channel = (1u8 << s.channels.len()) - 1;
        if matches!(payload, Payload::EndOfOutput(_)) && s.upstream_recovered == every_channel {
            self.resume_consumption(s);
        }
    }

    /// `SingleInputGate.resumeConsumption` of every channel, in channel order, in the same turn
    /// of the task: `UpstreamRecoveryTrackerImpl.handleEndOfRecovery` once every channel's
    /// `EndOfOutputChannelStateEvent` was handled, or the alternating barrier handler's
    /// `unblockAllChannels` when a checkpoint whose aligned barriers blocked them ends. A released channel would throw
    /// `checkState(!isReleased)`; the task is being cancelled then, and the model skips it.
    pub(crate) fn resume_consumption(&self, s: &mut State) {
        self.resume_channels(s, u8::MAX);
    }

    /// `resumeConsumption` of the channels in the bitmask `channels`, in channel order.
    pub(crate) fn resume_channels(&self, s: &mut State, channels: u8) {
        for c in (0..s.channels.len() as u8).filter(|c| channels & 1 << c != 0) {
            if s.ch(c).released
                || matches!(
                    self.variant,
                    Variant::NoResumeConsumption | Variant::RecoveryCompletionNotBlocking
                )
            {
                continue;
            }
            match self.kind(c) {
                ChannelKind::Local => match local::resume_consumption(s.ch_mut(c)) {
                    Ok(true) => self.notify(s, c, false),
                    Ok(false) => {}
                    Err(v) => return s.violate(c, v),
                },
                ChannelKind::Remote => self.resume_remote_consumption(s, c),
            }
        }
    }

    /// Variant `recovered-buffer-dropped-for-priority-event`: the re-read of
    /// `hasPendingPriorityEvent` after the poll. Set meanwhile, the priority event is pulled
    /// and returned instead, and the polled element is lost.
    pub(crate) fn reread_pending_priority_event(&self, s: &mut State, c: u8) {
        let TaskPc::RereadPendingPriority {
            payload, seq, buffer, ..
        } = s.task
        else {
            unreachable!("guarded");
        };
        s.task = TaskPc::Idle;
        if !s.ch(c).pending_priority {
            s.ch_mut(c).held.extend(buffer);
            self.hand_on(s, c, payload, seq);
            return self.land_priority_notifications(s);
        }
        match local::pull_priority_from_subpartition_view(s.ch_mut(c)) {
            Ok(p) => self.hand_on(s, c, p.payload, p.seq),
            Err(v) => s.violate(c, v),
        }
        self.land_priority_notifications(s);
    }

    /// The second half of `pullPriorityFromSubpartitionView` (`priority_notify_step`): clear
    /// `hasPendingPriorityEvent` on the next data type read when the view was polled, then end
    /// the gate's turn: `peekNextDataType` (the recovered queue's head; in recovery nothing
    /// else), requeue, and the barrier to the handler.
    pub(crate) fn clear_pending_priority_event(&self, s: &mut State, c: u8) {
        let TaskPc::ClearPendingPriority { cp, seq, .. } = s.task else {
            unreachable!("guarded");
        };
        s.task = TaskPc::Idle;
        let ch = s.ch_mut(c);
        ch.pending_priority = false;
        if !ch.queue.is_empty() && self.models_gate_queue() {
            s.gate.queue_channel(c, false);
        }
        self.handle_polled(s, c, Payload::Barrier(cp), seq);
        self.land_priority_notifications(s);
    }

    /// The `requestPartitions` mail that converts the recovered channels (flag off, 2.3.0's
    /// migration, or PR3's `toInputChannel(true)`), then requests the partitions.
    pub(crate) fn convert_recovered_input_channels(&self, s: &mut State) {
        match self.cfg.delivery {
            Delivery::Legacy => return self.convert_legacy(s),
            Delivery::Migration => return self.convert_migration(s),
            _ => {}
        }
        // The drainer filled each live `RecoveredInputChannel` (its legacy sentinel at least):
        // each queued itself, in channel order.
        for c in 0..s.channels.len() as u8 {
            if !s.ch(c).released {
                self.notify(s, c, false);
            }
        }
        self.convert_from(s, 0)
    }

    /// Flag off: the `requestPartitions` mail after every state-consumed future completed.
    /// `toInputChannel(false)` turns each (empty) recovered channel into a physical one created
    /// without recovery, numbering from `i32::MIN` afresh; then the partitions are requested.
    pub(crate) fn convert_legacy(&self, s: &mut State) {
        for ch in &mut s.channels {
            ch.make_mut().recovery_seq = i32::MIN;
        }
        s.converted = true;
        self.request_partitions(s);
    }

    /// 2.3.0 flag on: the `requestPartitions` mail once every `finishReadRecoveredState` ran.
    /// `convertRecoveredInputChannels()`: per channel, `toInputChannel()` moves what is still
    /// queued (the legacy sentinel included) into a physical channel created without recovery,
    /// which numbers it from `i32::MIN`; the recovered channel is released and replaced, and the
    /// gate queues the new channel (at the tail) if it has buffers in use. Then the partitions
    /// are requested.
    pub(crate) fn convert_migration(&self, s: &mut State) {
        for c in 0..s.channels.len() as u8 {
            let had_data = recovered::to_input_channel(s.ch_mut(c));
            if self.models_gate_queue() {
                s.gate.remove(c);
                if had_data && self.variant != Variant::MigratedChannelNotQueued {
                    s.gate.queue_channel(c, false);
                }
            }
        }
        s.converted = true;
        self.request_partitions(s);
    }

    /// `toInputChannel(true)` for channels `from..`, then `internalRequestPartitions()`; all on
    /// the task thread inside one `requestPartitions(true)` mail.
    pub(crate) fn convert_from(&self, s: &mut State, from: u8) {
        for c in from..s.channels.len() as u8 {
            let kind = self.kind(c);
            let recovered = self.cfg.channels[c as usize].recovered;
            for i in s.ch(c).ghost_pushed..recovered {
                let r = rc::on_recovered_state_buffer(s.ch_mut(c), kind, Payload::Recovered(i));
                self.pushed(s, c, r);
                s.ch_mut(c).ghost_pushed = i + 1;
            }
            if self.variant == Variant::FinishDeliveryDuringConversion {
                // finishRecoveredBufferDelivery(): upstreamReady.await() on the task thread.
                if !s.ch(c).upstream_ready {
                    s.task = TaskPc::AwaitUpstreamReady { channel: c };
                    return;
                }
                let r = rc::finish_recovered_buffer_delivery(s.ch_mut(c), kind, self.variant);
                self.pushed(s, c, r);
            } else {
                let r = rc::on_recovered_state_buffer(s.ch_mut(c), kind, Payload::EndOfRecovery);
                self.pushed(s, c, r);
            }
        }
        s.converted = true;
        s.task = TaskPc::Idle;
        self.request_partitions(s);
    }

    /// `internalRequestPartitions()`: local views (opening `upstreamReady`), remote partition
    /// requests; the server creates a view reader with zero credit when `needsRecovery`.
    pub(crate) fn request_partitions(&self, s: &mut State) {
        s.partitions_requested = true;
        for c in 0..s.channels.len() as u8 {
            let exclusive = self.cfg.channels[c as usize].exclusive;
            let ch = s.ch_mut(c);
            if ch.released {
                // requestSubpartitions: checkState(!isReleased); the task is being cancelled.
                continue;
            }
            match self.kind(c) {
                ChannelKind::Local => {
                    ch.upstream_ready = true;
                    ch.listener = true;
                    // createReadView tells its new listener about data already queued.
                    if !ch.producer.subpartition.is_empty() {
                        self.notify(s, c, false);
                    }
                }
                ChannelKind::Remote => {
                    let needs_recovery = self.cfg.delivery.needs_recovery();
                    let ignore = self.variant == Variant::ProducerIgnoresNeedsRecovery;
                    ch.producer.reader_credit = Some(if needs_recovery && !ignore { 0 } else { exclusive });
                }
            }
        }
    }

    /// `SingleInputGate.close()` under `requestLock`: release every channel not yet released,
    /// then destroy the `LocalBufferPool`.
    pub(crate) fn close_gate(&self, s: &mut State) {
        s.closed = true;
        for c in 0..s.channels.len() as u8 {
            if !s.ch(c).released {
                // One step per channel even with `release_step`: `close` is the canceler's
                // alternative to single releases, and the split is shown on those.
                self.release(s, c, false);
            }
        }
        // A pool's free segments go to the global pool (the first channel's record of it).
        for p in 0..s.pools.len() {
            s.pools[p].lazy_destroy(&mut s.channels[p].make_mut().global_pool);
        }
    }
}
