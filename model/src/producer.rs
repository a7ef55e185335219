//! The producer side of one channel: the upstream task writing into its result subpartition,
//! and for a remote channel the `CreditBasedSequenceNumberingViewReader` on the Netty server
//! and the wire to the consumer's Netty client.

use crate::action::Action;
use crate::config::ChannelKind;
use crate::local_input_channel as local;
use crate::model::RecoveryModel;
use crate::state::{Channel, State, Violation};
use crate::state::{CheckpointId, CheckpointStatus, Payload, RESUME_CONSUMPTION};
use crate::variant::Variant;

/// Whether the `add()` of a priority element just made tells a local view's listener
/// (`needNotifyPriorityEvent()`: the first priority element, and a listener to tell). The log
/// validation checks a logged add against it.
pub fn tells_listener(ch: &Channel) -> bool {
    ch.producer.priority_elements() == 1 && ch.listener
}

/// The upstream's threads: the producer task writing its subpartition, and the Netty server
/// thread sending it.
impl RecoveryModel {
    /// What each channel's upstream may do next: a notification it owes, a checkpoint barrier,
    /// its next write, or (`faults`) a failure.
    pub(crate) fn producer_actions(&self, s: &State, out: &mut Vec<Action>) {
        for (c, ch) in s.channels.iter().enumerate() {
            let c = c as u8;
            let p = &ch.producer;
            if p.notify_pending.is_some() {
                // add() returns only after its notification, which may wait for the gate's lock.
                if !p.notify_blocked {
                    out.push(Action::NotifyPriorityEvent { channel: c });
                }
                continue;
            }
            let next = p.barriers < self.cfg.checkpoints && self.triggered(s, p.barriers + 1);
            if next && self.cfg.aligned_checkpoint_timeout {
                out.push(Action::EmitTimeoutableCheckpointBarrier {
                    channel: c,
                    cp: p.barriers + 1,
                });
            } else if next && !p.released {
                out.push(Action::EmitCheckpointBarrier {
                    channel: c,
                    cp: p.barriers + 1,
                });
            }
            // The upstream's alignment timer fires while its barrier is still queued.
            if let Some(&Payload::AlignedBarrier(cp)) =
                p.subpartition.iter().find(|e| matches!(e, Payload::AlignedBarrier(_)))
            {
                out.push(Action::AlignedBarrierTimeout { channel: c, cp });
            }
            if p.writes_more(&self.cfg.channels[c as usize]) {
                out.push(Action::AddBuffer { channel: c });
            }
            // The upstream task fails while the channel reads its subpartition.
            if self.cfg.faults && self.kind(c) == ChannelKind::Local && ch.listener && !p.released {
                out.push(Action::ReleasePartition { channel: c });
            }
        }
    }

    /// Whether the checkpoint coordinator has triggered checkpoint `cp`, so that an upstream may
    /// take it: the first at any moment; a later one once the one before it ended, unless
    /// `overlapping_checkpoints`. It ended when this task completed or declined it (a decline
    /// aborts it everywhere), or when the coordinator aborted it (`abortPendingCheckpoint`).
    /// This task's completion stands for everyone's: the other tasks are not modelled.
    pub(crate) fn triggered(&self, s: &State, cp: CheckpointId) -> bool {
        if cp == 1 || self.cfg.overlapping_checkpoints || self.variant == Variant::ConcurrentUnalignedCheckpoints {
            return true;
        }
        let before = cp - 1;
        s.aborted & 1 << (before - 1) != 0
            || matches!(
                s.checkpoints[before as usize - 1],
                CheckpointStatus::Completed
                    | CheckpointStatus::DeclinedMissingBarrier
                    | CheckpointStatus::DeclinedLaterBarrier
            )
    }

    /// What the checkpoint coordinator may do: abort the latest checkpoint an upstream took,
    /// unless it is the last one (nothing follows it) or one may overlap the next anyway. Flink
    /// aborts a pending checkpoint when another task declines it or it expires, whatever this
    /// task has done with it.
    pub(crate) fn coordinator_actions(&self, s: &State, out: &mut Vec<Action>) {
        if self.cfg.overlapping_checkpoints {
            return;
        }
        let latest = s.channels.iter().map(|ch| ch.producer.barriers).max().unwrap_or(0);
        if latest > 0 && latest < self.cfg.checkpoints && s.aborted & 1 << (latest - 1) == 0 {
            out.push(Action::AbortPendingCheckpoint { cp: latest });
        }
    }

    /// `CheckpointCoordinator.abortPendingCheckpoint(cp)`: the next checkpoint may be triggered.
    /// The task is not told here (`notifyCheckpointAborted` is not modelled): its barrier
    /// handler learns of the next checkpoint from that checkpoint's first barrier, which
    /// subsumes this one.
    pub(crate) fn abort_pending_checkpoint(&self, s: &mut State, cp: CheckpointId) {
        s.aborted |= 1 << (cp - 1);
    }

    /// The upstream task broadcasts barrier `cp` as a priority event: `add()` under the
    /// subpartition's lock. Only the first priority element is announced
    /// (`needNotifyPriorityEvent()`), and only to a local view's listener; with
    /// `priority_notify_step` the notification is the producer's next step.
    pub(crate) fn emit_checkpoint_barrier(&self, s: &mut State, c: u8, cp: CheckpointId) {
        let split = self.cfg.channels[c as usize].priority_notify_step;
        let ch = s.ch_mut(c);
        ch.producer.emit_barrier(cp);
        if split {
            if tells_listener(ch) {
                ch.producer.notify_pending = Some(cp);
            }
        } else if self.kind(c) == ChannelKind::Local && tells_listener(ch) && local::notify_priority_event(ch) {
            self.notify(s, c, true);
        }
    }

    /// An aligned barrier that may time out into an unaligned one: queued as data.
    pub(crate) fn emit_timeoutable_checkpoint_barrier(&self, s: &mut State, c: u8, cp: CheckpointId) {
        s.ch_mut(c).producer.emit_timeoutable_barrier(cp);
    }

    /// The upstream's alignment timer (`SubtaskCheckpointCoordinatorImpl`'s, on the producer's
    /// task): `PipelinedSubpartition.alignedBarrierTimeout(cp)` turns the queued timeoutable
    /// barrier into an unaligned one at the priority head, which a blocked subpartition hands
    /// out too. Remote channels only (`aligned_checkpoint_timeout`): no listener to notify.
    pub(crate) fn aligned_barrier_timeout(&self, s: &mut State, c: u8, cp: CheckpointId) {
        s.ch_mut(c).producer.aligned_barrier_timeout(cp);
    }

    /// `priority_notify_step`: `notifyPriorityEvent` after `add()` released the lock. The gate's
    /// `isOutdated` drops it when barrier `cp` was polled already (the task reached it through
    /// the view after recovery).
    ///
    /// The listener sets `hasPendingPriorityEvent` outside every lock (`LocalInputChannel`, 2.3.0
    /// line 439), then `queueChannel` takes `inputChannelsWithData` (`SingleInputGate`, line
    /// 1265). While the task's turn holds that lock, the producer blocks there with the flag
    /// set, and queues the channel only once the turn ended (`land_priority_notifications`).
    pub(crate) fn notify_priority_event(&self, s: &mut State, c: u8) {
        let in_turn = s.task.holds_gate_lock();
        let ch = s.ch_mut(c);
        local::notify_priority_event(ch);
        if in_turn {
            ch.producer.notify_blocked = true;
            return;
        }
        self.queue_notified_channel(s, c);
    }

    /// `queueChannel(channel, seq, false)` of a producer's `notifyPriorityEvent`: dropped when
    /// outdated (`isOutdated`: its barrier was polled already), else the channel goes to the
    /// gate's priority head.
    fn queue_notified_channel(&self, s: &mut State, c: u8) {
        let ch = s.ch_mut(c);
        let cp = ch.producer.notify_pending.take().expect("guarded");
        ch.producer.notify_blocked = false;
        let outdated = ch.ghost_delivered.iter().any(|d| d.payload == Payload::Barrier(cp));
        if !outdated {
            self.notify(s, c, true);
        }
    }

    /// The task's turn released `inputChannelsWithData`: the producers blocked on it queue
    /// their channels, each checked against what the turn polled.
    pub(crate) fn land_priority_notifications(&self, s: &mut State) {
        for c in 0..s.channels.len() as u8 {
            if s.ch(c).producer.notify_blocked {
                self.queue_notified_channel(s, c);
            }
        }
    }

    /// The upstream writes its next element. `notifyDataAvailable`: a local view's listener is
    /// the channel; a remote one's is the Netty server's reader, which sends whenever it can.
    pub(crate) fn add_buffer(&self, s: &mut State, c: u8) {
        let ch = s.ch_mut(c);
        let was_empty = ch.producer.add(&self.cfg.channels[c as usize]);
        if self.kind(c) == ChannelKind::Local && ch.listener && was_empty {
            self.notify(s, c, false);
        }
    }

    /// `ResultSubpartition.release()`: drained and released. The view is not told (no
    /// notification); the consumer finds out when it next polls.
    pub(crate) fn release_partition(&self, s: &mut State, c: u8) {
        let p = &mut s.ch_mut(c).producer;
        p.subpartition.clear();
        p.released = true;
    }

    /// What the Netty server thread may do next, per remote channel.
    pub(crate) fn netty_server_actions(&self, s: &State, out: &mut Vec<Action>) {
        for (c, ch) in s.channels.iter().enumerate() {
            let c = c as u8;
            // A failed connection carries nothing more.
            if self.kind(c) != ChannelKind::Remote || ch.error {
                continue;
            }
            if ch.producer.can_send() {
                out.push(Action::SendBuffer { channel: c });
            }
            match ch.add_credit_in_flight.first() {
                Some(&RESUME_CONSUMPTION) => out.push(Action::OnResumeConsumption { channel: c }),
                Some(_) => out.push(Action::OnAddCredit { channel: c }),
                None => {}
            }
            if ch
                .producer
                .backlog_to_announce(self.cfg.channels[c as usize].exclusive)
                .is_some()
            {
                out.push(Action::AnnounceBacklog { channel: c });
            }
        }
    }

    /// The view reader writes its head to the wire (`BufferResponse`), spending one credit.
    pub(crate) fn send_buffer(&self, s: &mut State, c: u8) {
        let ch = s.ch_mut(c);
        if let Some(Payload::Barrier(cp) | Payload::AlignedBarrier(cp)) = ch.producer.subpartition.first().copied() {
            ch.ghost_barrier_after[cp as usize - 1] = Some(ch.producer.dequeued());
        }
        if !ch.producer.send() {
            s.violate(c, Violation::SendWithoutCredit);
        }
        if self.variant == Variant::RecoveryCompletionNotBlocking {
            s.ch_mut(c).producer.blocked = false;
        }
    }

    /// `PartitionRequestQueue.announceBacklog`: a reader without credit tells the client the
    /// backlog it may not send.
    pub(crate) fn announce_backlog(&self, s: &mut State, c: u8) {
        let exclusive = self.cfg.channels[c as usize].exclusive;
        let producer = &mut s.ch_mut(c).producer;
        let backlog = producer.backlog_to_announce(exclusive).expect("guarded");
        producer.announce_backlog(backlog);
    }

    /// `PartitionRequestQueue.resumeConsumption` of the oldest message on the wire: the view
    /// reader's `resumeConsumption` drops its credit when its initial credit is 0 (the
    /// consumer released its floating buffers when the subpartition blocked), and unblocks the
    /// subpartition; `enqueueAvailableReader` then sends whatever is available.
    pub(crate) fn on_resume_consumption(&self, s: &mut State, c: u8) {
        let initial_credit = self.cfg.channels[c as usize].exclusive;
        let ch = s.ch_mut(c);
        ch.add_credit_in_flight.remove(0);
        let p = &mut ch.producer;
        if initial_credit == 0 {
            p.reader_credit = Some(0);
        }
        if !p.blocked {
            return s.violate(c, Violation::NotBlocked);
        }
        p.blocked = false;
    }

    /// The server's `addCredit` of the oldest `AddCredit` message on the wire.
    pub(crate) fn on_add_credit(&self, s: &mut State, c: u8) {
        let ch = s.ch_mut(c);
        let credit = ch.add_credit_in_flight.remove(0);
        *ch.producer.reader_credit.as_mut().expect("reader exists") += credit;
    }
}
