//! The task thread's side: the gate handing polled elements to the operator or to
//! `CheckpointedInputGate` (barriers, the sentinel), checkpoint triggering in one mail
//! (`insertRecoveryCheckpointBarrierIfInRecovery` on every channel, then `checkpointStarted` on
//! each until one throws), and checkpoint completion or abort.

use crate::action::Action;
use crate::action::Thread;
use crate::config::{ChannelKind, Delivery, ModelConfig};
use crate::model::{GatePolling, RecoveryModel};
use crate::recoverable_input_channel::{self as rc, Declined};
use crate::remote_input_channel as remote;
use crate::state::Announce;
use crate::state::channel_state_persister::PersistStatus;
use crate::state::{Alignment, CheckpointId, CheckpointStatus, Delivered, Payload, State, TaskPc};
use crate::variant::Variant;

/// What the handler asks of the gate after a polled element: nothing, a converted barrier's
/// channel queued at the priority head, or (the alternating handler's `finishCheckpoint`)
/// every channel resumed.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Followup {
    None,
    /// Bitmask of the channels whose converted barrier is their first priority element.
    NotifyPriority(u8),
    UnblockAllChannels,
}

/// `CheckpointedInputGate.pollNext` after a channel returned `payload`.
fn checkpointed_input_gate(
    s: &mut State,
    cfg: &ModelConfig,
    variant: Variant,
    c: u8,
    payload: Payload,
    seq: i32,
) -> Followup {
    match payload {
        // 2.3.0 flag on: the migrated EndOfInputChannelStateEvent is an ordinary event to
        // CheckpointedInputGate; StreamTaskNetworkInput.processEvent ignores a class it does not
        // know, so nothing happens and the operator sees nothing.
        Payload::EndOfRecovery if cfg.delivery == Delivery::Migration => {}
        // handleEvent: onRecoveredStateConsumed; the sentinel never reaches the operator.
        Payload::EndOfRecovery => s.task = TaskPc::Consume { channel: c },
        Payload::Barrier(cp) => {
            s.ch_mut(c).ghost_delivered.push(Delivered { payload, seq });
            // An unaligned barrier while the alignment waits (the upstream's own timeout sent
            // it): `alignedCheckpointTimeout` first, then the barrier as in the unaligned state.
            let converted = match s.alignment.as_ref() {
                Some(a) if a.cp == cp && !a.timed_out && pending(s, cp) => {
                    aligned_checkpoint_timeout(s, cfg, variant, 1 << c)
                }
                _ => {
                    // The first barrier of the checkpoint, unaligned: the handler goes on
                    // unaligned, so its later announcements are converted at once.
                    if cfg.aligned_checkpoint_timeout {
                        check_new_checkpoint(s, cp, true);
                    }
                    0
                }
            };
            s.barriers_seen[cp as usize - 1] |= 1 << c;
            // A converted channel's barrier is still to come: the checkpoint cannot complete
            // on this one as well.
            if on_barrier(s, cfg, cp) {
                return Followup::UnblockAllChannels;
            }
            if converted != 0 {
                return Followup::NotifyPriority(converted);
            }
        }
        // handleEvent: the UpstreamRecoveryTracker notes the channel; the event goes on to the
        // network input, which ignores it.
        Payload::EndOfOutput(_) => {
            s.ch_mut(c).ghost_delivered.push(Delivered { payload, seq });
            s.upstream_recovered |= 1 << c;
        }
        // handleEvent: an EventAnnouncement goes to processBarrierAnnouncement, not the operator.
        Payload::Announcement(cp) => return process_barrier_announcement(s, variant, c, cp, seq),
        Payload::AlignedBarrier(cp) => {
            s.ch_mut(c).ghost_delivered.push(Delivered { payload, seq });
            s.barriers_seen[cp as usize - 1] |= 1 << c;
            if process_aligned_barrier(s, c, cp) {
                return Followup::UnblockAllChannels;
            }
        }
        // Data and events reach the operator; a stale RecoveryCheckpointBarrier (its checkpoint
        // aborted before this channel started it) reaches the network input, which ignores it.
        _ => s.ch_mut(c).ghost_delivered.push(Delivered { payload, seq }),
    }
    Followup::None
}

/// `SingleCheckpointBarrierHandler`: the first barrier of a checkpoint triggers it on every
/// channel; once all barriers are in, it completes (true).
fn on_barrier(s: &mut State, cfg: &ModelConfig, cp: CheckpointId) -> bool {
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
        false
    } else {
        maybe_complete(s, cp)
    }
}

/// `checkNewCheckpoint`: a newer checkpoint becomes current; a timeoutable barrier registers
/// the alignment timer (`registerAlignmentTimer`), whether it came as a barrier or announced;
/// an unaligned one (`timed_out`) sets the handler on unaligned.
fn check_new_checkpoint(s: &mut State, cp: CheckpointId, timed_out: bool) {
    if s.alignment.as_ref().is_none_or(|a| a.cp < cp)
        && s.checkpoints[cp as usize - 1] == CheckpointStatus::NotTriggered
    {
        s.alignment = Some(Alignment::new(cp, timed_out));
    }
}

/// Whether `cp` is the current checkpoint and still pending (`isCheckpointPending`).
fn pending(s: &State, cp: CheckpointId) -> bool {
    s.alignment.as_ref().is_some_and(|a| a.cp == cp)
        && matches!(
            s.checkpoints[cp as usize - 1],
            CheckpointStatus::NotTriggered | CheckpointStatus::Triggered
        )
}

/// `SingleCheckpointBarrierHandler.processBarrierAnnouncement`: `checkNewCheckpoint`, then,
/// unless obsolete, `announcementReceived`: before the timeout
/// `ChannelState.addSeenAnnouncement(channel, seq)`; after it (the `...Unaligned` states)
/// `convertToPriorityEvent(channel, seq)` at once.
fn process_barrier_announcement(s: &mut State, variant: Variant, c: u8, cp: CheckpointId, seq: i32) -> Followup {
    check_new_checkpoint(s, cp, false);
    if !pending(s, cp) {
        return Followup::None;
    }
    let a = s.alignment.as_mut().expect("pending");
    if !a.timed_out && variant != Variant::AnnouncementConvertedBeforeTimeout {
        a.announced.push((c, seq));
        return Followup::None;
    }
    match convert_to_priority_event(s, c, seq) {
        Some(true) => Followup::NotifyPriority(1 << c),
        _ => Followup::None,
    }
}

/// `RemoteInputChannel.convertToPriorityEvent(seq)` called by the handler: `Some(true)` if
/// the barrier is the channel's first priority element (`notifyPriorityEventForce`); `None`
/// if the lookup threw, which fails the task.
fn convert_to_priority_event(s: &mut State, c: u8, seq: i32) -> Option<bool> {
    match remote::convert_to_priority_event(s.ch_mut(c), seq) {
        Ok(first) => {
            s.ghost_converted = true;
            // The barrier keeps its aligned options: the handler blocks its channel when it
            // takes it (`blockChannel`), which the checkpoint's end undoes.
            s.alignment.as_mut().expect("converted for an alignment").blocked |= 1 << c;
            Some(first)
        }
        Err(cause) => {
            s.task = TaskPc::Failed { channel: c, cause };
            None
        }
    }
}

/// `processBarrier` with an aligned barrier: `barrierReceived` removes the channel's
/// announcement (its subpartition blocked itself when it sent the barrier); once every barrier
/// is in, `triggerGlobalCheckpoint` takes an aligned checkpoint (no channel state, no
/// `checkpointStopped`), the timer is reset, and `finishCheckpoint` resumes every channel
/// (true). After the timeout the checkpoint went on unaligned: the barrier only counts.
fn process_aligned_barrier(s: &mut State, c: u8, cp: CheckpointId) -> bool {
    check_new_checkpoint(s, cp, false);
    if !pending(s, cp) {
        return false;
    }
    let a = s.alignment.as_mut().expect("pending");
    a.blocked |= 1 << c;
    if s.checkpoints[cp as usize - 1] == CheckpointStatus::Triggered {
        return maybe_complete(s, cp);
    }
    let a = s.alignment.as_mut().expect("pending");
    a.announced.retain(|&(k, _)| k != c);
    let live = s
        .channels
        .iter()
        .enumerate()
        .filter(|(_, ch)| !ch.released)
        .fold(0u8, |m, (k, _)| m | 1 << k);
    if s.barriers_seen[cp as usize - 1] & live == live {
        a.timer = false;
        s.checkpoints[cp as usize - 1] = CheckpointStatus::Completed;
        for ch in s.channels.iter_mut() {
            let ch = ch.make_mut();
            // The operator snapshot: everything before the barriers is consumed.
            ch.ghost_started_at[cp as usize - 1] = Some(ch.ghost_delivered.len() as u8);
        }
        return true;
    }
    false
}

/// Whether the alignment timer of `cp` fires now: registered, and the checkpoint still waits
/// for barriers (the timer's `currentCheckpointId == barrierId && !allBarriersReceived`).
pub fn alignment_timer_due(s: &State) -> Option<CheckpointId> {
    let a = s.alignment.as_ref()?;
    (a.timer && s.checkpoints[a.cp as usize - 1] == CheckpointStatus::NotTriggered).then_some(a.cp)
}

/// The alignment timer's mail, `alignedCheckpointTimeout`: `ChannelState.prioritizeAllAnnouncements()`
/// → `convertToPriorityEvent(channel, seq)` on every announced channel; the checkpoint goes on
/// unaligned. Returns the bitmask of the channels to queue at the gate's priority head; a
/// lookup that throws fails the task. In `AlternatingWaitingForFirstBarrier` the converted
/// barrier triggers it when polled; in `AlternatingCollectingBarriers` (a barrier is in, other
/// than `arriving`'s: the bitmask of the channel whose unaligned barrier called it, 0 for the
/// timer) the timeout itself triggers it: `checkpointStarted` of the unaligned barrier on
/// every channel, then `triggerGlobalCheckpoint`.
fn aligned_checkpoint_timeout(s: &mut State, cfg: &ModelConfig, variant: Variant, arriving: u8) -> u8 {
    let a = s.alignment.as_mut().expect("guarded");
    a.timer = false;
    a.timed_out = true;
    let cp = a.cp;
    // `sequenceNumberInAnnouncedChannels` is a `HashMap` by `InputChannelInfo`, whose hash
    // grows with the channel index: the channels are converted in index order.
    let mut announced = std::mem::take(&mut a.announced);
    announced.sort_unstable();
    let mut notify = 0;
    for (c, seq) in announced {
        match convert_to_priority_event(s, c, seq) {
            Some(first) => notify |= u8::from(first) << c,
            None => return 0,
        }
    }
    if s.barriers_seen[cp as usize - 1] & !arriving != 0 || variant == Variant::TimeoutTriggersBeforeFirstBarrier {
        s.checkpoints[cp as usize - 1] = CheckpointStatus::Triggered;
        s.task = TaskPc::Trigger {
            cp,
            channel: 0,
            inserted: !cfg.insert_recovery_barriers,
        };
    }
    notify
}

/// Completes `cp` once the trigger is done and every live channel's barrier was processed
/// (true).
fn maybe_complete(s: &mut State, cp: CheckpointId) -> bool {
    let i = cp as usize - 1;
    if s.checkpoints[i] != CheckpointStatus::Triggered || matches!(s.task, TaskPc::Trigger { .. }) {
        return false;
    }
    let live = s
        .channels
        .iter()
        .enumerate()
        .filter(|(_, ch)| !ch.released)
        .fold(0u8, |m, (c, _)| m | 1 << c);
    if s.barriers_seen[i] & live != live {
        return false;
    }
    s.checkpoints[i] = CheckpointStatus::Completed;
    for ch in s.channels.iter_mut() {
        ch.make_mut().persister.stop_persisting(cp);
    }
    true
}

/// The checkpoint failed on this task: `abortInternal` stops persisting on every channel.
fn abort(s: &mut State, cp: CheckpointId, status: CheckpointStatus, variant: Variant) {
    s.checkpoints[cp as usize - 1] = status;
    for ch in s
        .channels
        .iter_mut()
        .filter(|_| variant != Variant::DeclineKeepsPersisting)
    {
        ch.make_mut().persister.stop_persisting(cp);
    }
    s.task = TaskPc::Idle;
}

/// The task thread's program (what it may do next) and its checkpoint mail.
impl RecoveryModel {
    /// Task: `insertRecoveryCheckpointBarrierIfInRecovery(cp)` on the channel whose turn it is,
    /// with the drainer's remaining state spilled in the same critical section (unless `variant`
    /// moves the snapshot to `checkpointStarted`). An empty queue notifies the gate.
    pub(crate) fn insert_recovery_checkpoint_barrier(&self, s: &mut State, c: u8, cp: CheckpointId) {
        let (cfg, variant) = (&self.cfg, self.variant);
        // B9: the trigger was swapped to NO_OP when the drain finished.
        let no_op = variant == Variant::TriggerSwappedWhenDrainFinishes
            && cfg.delivery == Delivery::Drainer
            && self.drain_finished(s);
        let cc = &cfg.channels[c as usize];
        let spill = variant != Variant::SpillSnapshotAfterInsertion;
        let notify = !no_op
            && rc::insert_recovery_checkpoint_barrier_if_in_recovery(s.ch_mut(c), cc.kind, cp, cc.recovered, spill);
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
        if variant == Variant::SpillSnapshotAtReadPosition && s.io_buffer.is_some_and(|(b, _)| b == c) {
            // The reader has read past the buffer the drainer took and has not delivered.
            let spilled = &mut s.ch_mut(c).ghost_spilled;
            if let Some(i) = spilled.iter().position(|(k, _)| *k == cp) {
                spilled.remove(i);
            }
        }
        if notify {
            self.notify(s, c, false);
        }
    }

    /// Task: `checkpointStarted(cp)` on channel `c`, then the next channel, or the end of the trigger.
    pub(crate) fn checkpoint_started(&self, s: &mut State, c: u8, cp: CheckpointId) {
        let (cfg, variant) = (&self.cfg, self.variant);
        let kind = cfg.channels[c as usize].kind;
        let ch = s.ch_mut(c);
        ch.ghost_started_at[cp as usize - 1] = Some(ch.ghost_delivered.len() as u8);
        if variant == Variant::SpillSnapshotAfterInsertion && ch.ghost_rcb_at[cp as usize - 1].is_some() && !ch.released
        {
            // The snapshot of the drainer's remaining state, taken after the insertions.
            rc::add_input_data_from_spill(ch, cp, cfg.channels[c as usize].recovered);
        }
        let known = if ch.in_recovery {
            rc::collect_pre_recovery_barrier(ch, cp, variant)
        } else if kind == ChannelKind::Remote {
            // Master's branch: subsumed check and in-flight buffers before this channel's barrier.
            if (cp as i8) < ch.last_barrier.0 {
                return abort(s, cp, CheckpointStatus::Subsumed, variant);
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
                return abort(s, cp, CheckpointStatus::DeclinedMissingBarrier, variant);
            }
            Err(Declined::LaterBarrier) => return abort(s, cp, CheckpointStatus::DeclinedLaterBarrier, variant),
        };
        let ch = s.ch_mut(c);
        let older_seen = variant == Variant::SubsumedByOlderBarrier
            && ch.persister.status == PersistStatus::BarrierReceived
            && ch.persister.last_seen_barrier < cp as i8;
        if older_seen
            || ch
                .persister
                .start_persisting(cp, &known, &mut ch.ghost_persisted)
                .is_err()
        {
            return abort(s, cp, CheckpointStatus::Subsumed, variant);
        }
        if (c as usize) + 1 < cfg.channels.len() {
            s.task = TaskPc::Trigger {
                cp,
                channel: c + 1,
                inserted: true,
            };
        } else {
            s.task = TaskPc::Idle;
            if maybe_complete(s, cp) {
                self.follow_up(s, Followup::UnblockAllChannels);
            }
        }
    }

    /// The alignment timer's mail: the converted channels queue at the gate's priority head.
    pub(crate) fn aligned_checkpoint_timeout(&self, s: &mut State, _cp: CheckpointId) {
        let notify = aligned_checkpoint_timeout(s, &self.cfg, self.variant, 0);
        self.follow_up(s, Followup::NotifyPriority(notify));
    }

    /// The task hands a polled element to `CheckpointedInputGate`, and the gate does what the
    /// handler asks.
    pub(crate) fn handle_polled(&self, s: &mut State, c: u8, payload: Payload, seq: i32) {
        let followup = checkpointed_input_gate(s, &self.cfg, self.variant, c, payload, seq);
        self.follow_up(s, followup);
    }

    fn follow_up(&self, s: &mut State, followup: Followup) {
        match followup {
            Followup::None => {}
            Followup::NotifyPriority(mask) => {
                for c in (0..s.channels.len() as u8).filter(|c| mask & 1 << c != 0) {
                    self.notify(s, c, true);
                }
            }
            Followup::UnblockAllChannels if self.variant == Variant::AlignmentLeavesChannelsBlocked => {}
            Followup::UnblockAllChannels => {
                let blocked = s.alignment.as_mut().map_or(0, |a| std::mem::take(&mut a.blocked));
                self.resume_channels(s, blocked);
            }
        }
    }

    /// What the task thread may do next: the rest of a sequence it is in (an announcement, a
    /// trigger, a turn of the gate), else a mail or a poll of the gate.
    pub(crate) fn task_actions(&self, s: &State, out: &mut Vec<Action>) {
        if let Some(Announce { channel, n }) = s.task_announce {
            out.push(Action::NotifyBufferAvailable {
                thread: Thread::Task,
                channel,
                n,
            });
            return;
        }
        match s.task {
            TaskPc::Idle => {
                // A closed gate's task is being cancelled: its mails (the conversion, the
                // partition request) do not run; polling what is queued still may.
                if self.cfg.delivery == Delivery::Conversion && !s.converted && !s.closed {
                    out.push(Action::ConvertRecoveredInputChannels);
                    return;
                }
                // Flag off: `allOf(getStateConsumedFuture())` runs the requestPartitions mail,
                // which converts; a released channel's future never completes.
                if self.cfg.delivery == Delivery::Legacy
                    && self.is_recovered_channel(s)
                    && !s.closed
                    && s.channels.iter().all(|ch| ch.state_consumed && !ch.released)
                {
                    out.push(Action::ConvertRecoveredInputChannels);
                }
                // 2.3.0 flag on: `allOf(getBufferFilteringCompleteFuture())`, complete once every
                // `finishReadRecoveredState` ran. A released channel means the task is being
                // cancelled: the model runs no more mails (choice 21).
                if self.migrates()
                    && self.is_recovered_channel(s)
                    && !s.closed
                    && s.io_pc as usize == self.io_program.len()
                    && s.channels.iter().all(|ch| !ch.released)
                {
                    out.push(Action::ConvertRecoveredInputChannels);
                }
                // SingleInputGate.close() releases every channel under requestLock, and
                // requestPartitions after it throws "Already released.": once a channel is
                // released (close under way) the mail does not run.
                if !s.partitions_requested
                    && !s.closed
                    && !self.is_recovered_channel(s)
                    && s.channels.iter().all(|ch| !ch.released)
                {
                    out.push(Action::RequestPartitions);
                }
                // The alignment timer's mail (a closed gate's task runs no more mails).
                if let Some(cp) = alignment_timer_due(s)
                    && !s.closed
                {
                    out.push(Action::AlignedCheckpointTimeout { cp });
                }
                match self.polling {
                    GatePolling::Queue => {
                        if let Some(channel) = s.gate.head() {
                            out.push(Action::GetNextBuffer { channel });
                        }
                    }
                    GatePolling::AnyChannelWithData => {
                        for c in 0..s.channels.len() as u8 {
                            if self.has_next(s, c) {
                                out.push(Action::GetNextBuffer { channel: c });
                            }
                        }
                    }
                }
            }
            TaskPc::Trigger {
                cp,
                channel,
                inserted: false,
            } => out.push(Action::InsertRecoveryCheckpointBarrier { channel, cp }),
            TaskPc::Trigger {
                cp,
                channel,
                inserted: true,
            } => out.push(Action::CheckpointStarted { channel, cp }),
            TaskPc::Consume { channel } => out.push(Action::OnRecoveredStateConsumed { channel }),
            TaskPc::EnableNotify { channel } | TaskPc::EnableNotifyRest { channel, .. } => {
                out.push(Action::EnableNotify { channel })
            }
            TaskPc::AwaitUpstreamReady { channel } => {
                if s.ch(channel).upstream_ready {
                    out.push(Action::FinishRecoveredBufferDelivery { channel });
                }
            }
            TaskPc::ClearPendingPriority { channel, .. } => out.push(Action::ClearPendingPriorityEvent { channel }),
            TaskPc::RereadPendingPriority { channel, .. } => out.push(Action::RereadPendingPriorityEvent { channel }),
            TaskPc::Failed { .. } => {}
        }
    }
}
