//! `SingleCheckpointBarrierHandler` (with its `AlternatingWaitingForFirstBarrier` /
//! `AlternatingCollectingBarriers` states, reduced to what the channel protocol needs): the task
//! thread's bookkeeping of which checkpoint is current, which channels' barriers it has seen,
//! and the alignment timer of an aligned checkpoint with a timeout.
//!
//! The handler decides; the task does the calls on the channels it decides on
//! (`insertRecoveryCheckpointBarrierIfInRecovery`, `checkpointStarted`, `convertToPriorityEvent`)
//! and tells the handler how they ended. What it calls on every channel itself, it calls through
//! [`CheckpointableInput`], as Flink's handler calls the gate.

use crate::error::Result;

/// The gate's channels, as the handler sees them (Flink's `CheckpointableInput`).
pub trait CheckpointableInput {
    /// Number of channels.
    fn num_channels(&self) -> usize;
    /// Whether channel `c` still sends barriers: a released channel does not, so a checkpoint
    /// completes without its barrier.
    fn is_live(&self, c: usize) -> bool;
    /// `checkpointStopped(cp)` on every channel: the checkpoint completed or was aborted.
    fn checkpoint_stopped(&self, cp: i64);
    /// `resumeConsumption` of channel `c`, whose aligned barrier blocked its upstream.
    fn resume_consumption(&self, c: usize) -> Result<()>;
}

/// Where a checkpoint stands at the handler.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CheckpointState {
    /// No barrier of it seen yet.
    NotTriggered,
    /// Its first barrier triggered it; it waits for the others.
    Triggered,
    /// Completed, declined, or aborted by a newer one.
    Ended,
}

/// An aligned checkpoint's `ChannelState` and alignment timer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Alignment {
    /// The checkpoint.
    pub cp: u8,
    /// `sequenceNumberInAnnouncedChannels`: (channel, announced sequence number).
    pub announced: Vec<(u8, i32)>,
    /// The alignment timer is registered and has not fired.
    pub timer: bool,
    /// It fired: the checkpoint goes on unaligned, later announcements are not recorded.
    pub timed_out: bool,
}

/// The handler of one task's checkpoints `1..=n`.
#[derive(Clone, Debug)]
pub struct SingleCheckpointBarrierHandler {
    checkpoints: Vec<CheckpointState>,
    /// Per checkpoint: bitmask of the channels whose barrier was processed.
    barriers_seen: Vec<u8>,
    /// The trigger of the current checkpoint is running (its channel calls are not all done).
    triggering: bool,
    alignment: Option<Alignment>,
    /// `ChannelState.blockedChannels`: bitmask of the channels whose aligned barrier (or
    /// aligned barrier converted to priority) was processed; their upstreams blocked
    /// themselves when they sent it.
    blocked: u8,
    /// Announced barriers the handler has decided to convert and the task has not yet
    /// (`convertToPriorityEvent`), in channel order.
    to_convert: Vec<(u8, i32)>,
}

impl SingleCheckpointBarrierHandler {
    /// A handler of checkpoints `1..=checkpoints`.
    pub fn new(checkpoints: usize) -> Self {
        Self {
            checkpoints: vec![CheckpointState::NotTriggered; checkpoints],
            barriers_seen: vec![0; checkpoints],
            triggering: false,
            alignment: None,
            blocked: 0,
            to_convert: Vec::new(),
        }
    }

    /// Where checkpoint `cp` stands.
    pub fn checkpoint(&self, cp: u8) -> CheckpointState {
        self.checkpoints[cp as usize - 1]
    }

    /// The aligned checkpoint waiting for its barriers, if one.
    pub fn alignment(&self) -> Option<&Alignment> {
        self.alignment.as_ref()
    }

    /// `processBarrier` of an unaligned barrier of `cp` from channel `c`: its first barrier
    /// triggers it (aborting older ones still waiting) and returns true, the task then runs the
    /// trigger's channel calls; a later one may complete it. While an alignment of `cp` waits
    /// (the upstream's own timeout sent this barrier unaligned), `alignedCheckpointTimeout`
    /// runs first: the task converts what [`Self::take_conversions`] returns.
    pub fn process_barrier(&mut self, c: u8, cp: u8, inputs: &impl CheckpointableInput) -> Result<bool> {
        let i = cp as usize - 1;
        let waiting = self.alignment.as_ref().is_some_and(|a| a.cp == cp && !a.timed_out) && self.pending(cp);
        if waiting {
            let announced = self.time_out(cp, 1 << c);
            self.to_convert.extend(announced);
        } else {
            // The checkpoint's first barrier, unaligned: the handler goes on unaligned, and
            // converts later announcements at once.
            self.check_new_checkpoint(cp, true);
        }
        self.barriers_seen[i] |= 1 << c;
        if self.checkpoints[i] != CheckpointState::NotTriggered {
            self.maybe_complete(cp, inputs)?;
            return Ok(false);
        }
        for old in self.checkpoints[..i].iter_mut() {
            *old = CheckpointState::Ended;
        }
        self.checkpoints[i] = CheckpointState::Triggered;
        self.triggering = true;
        Ok(true)
    }

    /// The trigger's last channel call succeeded: `cp` completes once every live channel's
    /// barrier is in.
    pub fn trigger_done(&mut self, cp: u8, inputs: &impl CheckpointableInput) -> Result<()> {
        self.triggering = false;
        self.maybe_complete(cp, inputs)
    }

    /// A channel declined `cp` during its trigger (`CheckpointException`): the checkpoint is
    /// aborted (`abortInternal`).
    pub fn trigger_declined(&mut self, cp: u8, inputs: &impl CheckpointableInput) {
        self.triggering = false;
        self.stop_checkpoint(cp, inputs);
    }

    /// `processBarrierAnnouncement`: `checkNewCheckpoint`, then `announcementReceived`: before
    /// the timeout `addSeenAnnouncement`; after it (the `...Unaligned` states) the barrier is
    /// converted at once: true, the task calls `convertToPriorityEvent(seq)` on the channel.
    pub fn process_barrier_announcement(&mut self, c: u8, cp: u8, seq: i32) -> bool {
        self.check_new_checkpoint(cp, false);
        if !self.pending(cp) {
            return false;
        }
        let a = self.alignment.as_mut().expect("pending");
        if a.timed_out {
            self.blocked |= 1 << c;
            return true;
        }
        a.announced.push((c, seq));
        false
    }

    /// `processBarrier` of an aligned barrier: the channel is blocked (`blockChannel`); once
    /// every live channel's is in, the aligned checkpoint is taken (no channel state, no
    /// `checkpointStopped`), the timer reset, and every blocked channel resumed
    /// (`finishCheckpoint`). After the timeout the checkpoint went on unaligned, and the barrier
    /// only counts.
    pub fn process_aligned_barrier(&mut self, c: u8, cp: u8, inputs: &impl CheckpointableInput) -> Result<()> {
        self.barriers_seen[cp as usize - 1] |= 1 << c;
        self.check_new_checkpoint(cp, false);
        if !self.pending(cp) {
            return Ok(());
        }
        self.blocked |= 1 << c;
        if self.checkpoint(cp) == CheckpointState::Triggered {
            return self.maybe_complete(cp, inputs);
        }
        let all_in = self.all_live_barriers_seen(cp, inputs);
        let a = self.alignment.as_mut().expect("pending");
        a.announced.retain(|&(k, _)| k != c);
        if all_in {
            a.timer = false;
            self.checkpoints[cp as usize - 1] = CheckpointState::Ended;
            return self.unblock_all_channels(inputs);
        }
        Ok(())
    }

    /// The alignment timer of `cp` fires (`alignedCheckpointTimeout`): the checkpoint goes on
    /// unaligned, and the announced barriers are returned, in channel order, for the task to
    /// `convertToPriorityEvent` (`ChannelState.prioritizeAllAnnouncements`). With a barrier in
    /// (`AlternatingCollectingBarriers`) the timeout triggers the checkpoint too: the task then
    /// runs the trigger's channel calls. `None` if no timer of `cp` is registered.
    pub fn aligned_checkpoint_timeout(&mut self, cp: u8) -> Option<Vec<(u8, i32)>> {
        self.alignment.as_ref().filter(|a| a.cp == cp && a.timer)?;
        Some(self.time_out(cp, 0))
    }

    /// The announced barriers the handler decided to convert on an unaligned barrier's
    /// arrival, for the task's `convertToPriorityEvent`.
    pub fn take_conversions(&mut self) -> Vec<(u8, i32)> {
        std::mem::take(&mut self.to_convert)
    }

    /// `alignedCheckpointTimeout` of the current alignment: every announced channel will be
    /// blocked once its converted barrier is taken; with a barrier in (other than `arriving`'s
    /// bits) the checkpoint is triggered now.
    fn time_out(&mut self, cp: u8, arriving: u8) -> Vec<(u8, i32)> {
        let a = self.alignment.as_mut().expect("an alignment");
        a.timer = false;
        a.timed_out = true;
        // `sequenceNumberInAnnouncedChannels` is a `HashMap` keyed by `InputChannelInfo`, whose
        // hash grows with the channel index within a gate: the channels come in index order.
        let mut announced = std::mem::take(&mut a.announced);
        announced.sort_unstable();
        for &(c, _) in &announced {
            self.blocked |= 1 << c;
        }
        if self.barriers_seen[cp as usize - 1] & !arriving != 0 {
            self.checkpoints[cp as usize - 1] = CheckpointState::Triggered;
            self.triggering = true;
        }
        announced
    }

    /// `checkNewCheckpoint`: a newer checkpoint becomes current; a timeoutable barrier
    /// registers the alignment timer, whether it came as a barrier or announced; an unaligned
    /// one (`timed_out`) sets the handler on unaligned.
    fn check_new_checkpoint(&mut self, cp: u8, timed_out: bool) {
        if self.alignment.as_ref().is_none_or(|a| a.cp < cp)
            && self.checkpoints[cp as usize - 1] == CheckpointState::NotTriggered
        {
            self.alignment = Some(Alignment {
                cp,
                announced: Vec::new(),
                timer: !timed_out,
                timed_out,
            });
        }
    }

    /// `isCheckpointPending` of the current checkpoint `cp`.
    fn pending(&self, cp: u8) -> bool {
        self.alignment.as_ref().is_some_and(|a| a.cp == cp) && self.checkpoint(cp) != CheckpointState::Ended
    }

    fn all_live_barriers_seen(&self, cp: u8, inputs: &impl CheckpointableInput) -> bool {
        let live = (0..inputs.num_channels())
            .filter(|&c| inputs.is_live(c))
            .fold(0u8, |m, c| m | 1 << c);
        self.barriers_seen[cp as usize - 1] & live == live
    }

    /// Completes `cp` once its trigger is done and every live channel's barrier was processed:
    /// `checkpointStopped` on every channel, then the blocked channels resumed.
    fn maybe_complete(&mut self, cp: u8, inputs: &impl CheckpointableInput) -> Result<()> {
        if self.checkpoint(cp) == CheckpointState::Triggered
            && !self.triggering
            && self.all_live_barriers_seen(cp, inputs)
        {
            self.stop_checkpoint(cp, inputs);
            return self.unblock_all_channels(inputs);
        }
        Ok(())
    }

    /// `ChannelState.unblockAllChannels`: `resumeConsumption` of every blocked channel.
    fn unblock_all_channels(&mut self, inputs: &impl CheckpointableInput) -> Result<()> {
        let blocked = std::mem::take(&mut self.blocked);
        (0..inputs.num_channels())
            .filter(|&c| blocked & 1 << c != 0 && inputs.is_live(c))
            .try_for_each(|c| inputs.resume_consumption(c))
    }

    /// Completion or `abortInternal`: `checkpointStopped` on every channel.
    fn stop_checkpoint(&mut self, cp: u8, inputs: &impl CheckpointableInput) {
        self.checkpoints[cp as usize - 1] = CheckpointState::Ended;
        inputs.checkpoint_stopped(cp as i64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    struct Gate {
        live: Vec<bool>,
        stopped: RefCell<Vec<i64>>,
        resumed: RefCell<Vec<usize>>,
    }

    impl CheckpointableInput for Gate {
        fn num_channels(&self) -> usize {
            self.live.len()
        }
        fn is_live(&self, c: usize) -> bool {
            self.live[c]
        }
        fn checkpoint_stopped(&self, cp: i64) {
            self.stopped.borrow_mut().push(cp);
        }
        fn resume_consumption(&self, c: usize) -> Result<()> {
            self.resumed.borrow_mut().push(c);
            Ok(())
        }
    }

    fn gate(live: &[bool]) -> Gate {
        Gate {
            live: live.to_vec(),
            stopped: RefCell::new(Vec::new()),
            resumed: RefCell::new(Vec::new()),
        }
    }

    #[test]
    fn the_first_barrier_triggers_and_the_last_live_one_completes_after_the_trigger() {
        let g = gate(&[true, true]);
        let mut h = SingleCheckpointBarrierHandler::new(1);
        assert!(h.process_barrier(0, 1, &g).unwrap());
        assert_eq!(h.checkpoint(1), CheckpointState::Triggered);
        // The second barrier while the trigger runs does not complete it yet.
        assert!(!h.process_barrier(1, 1, &g).unwrap());
        assert_eq!(h.checkpoint(1), CheckpointState::Triggered);
        h.trigger_done(1, &g).unwrap();
        assert_eq!(h.checkpoint(1), CheckpointState::Ended);
        assert_eq!(*g.stopped.borrow(), [1]);
        // Unaligned barriers block nothing.
        assert!(g.resumed.borrow().is_empty());
    }

    #[test]
    fn a_released_channel_is_not_waited_for_and_a_newer_checkpoint_aborts_an_older_one() {
        let g = gate(&[true, false]);
        let mut h = SingleCheckpointBarrierHandler::new(2);
        assert!(h.process_barrier(0, 1, &g).unwrap());
        h.trigger_done(1, &g).unwrap();
        assert_eq!(h.checkpoint(1), CheckpointState::Ended);
        let g = gate(&[true, true]);
        let mut h = SingleCheckpointBarrierHandler::new(2);
        assert!(h.process_barrier(0, 1, &g).unwrap());
        h.trigger_done(1, &g).unwrap();
        assert!(h.process_barrier(1, 2, &g).unwrap());
        assert_eq!(h.checkpoint(1), CheckpointState::Ended);
        h.trigger_declined(2, &g);
        assert_eq!(h.checkpoint(2), CheckpointState::Ended);
        assert_eq!(*g.stopped.borrow(), [2]);
    }

    #[test]
    fn the_alignment_timer_returns_the_announcements_once_and_later_ones_are_converted_at_once() {
        let g = gate(&[true, true]);
        let mut h = SingleCheckpointBarrierHandler::new(1);
        assert!(!h.process_barrier_announcement(0, 1, 7));
        assert!(!h.process_barrier_announcement(1, 1, 3));
        assert_eq!(h.aligned_checkpoint_timeout(1), Some(vec![(0, 7), (1, 3)]));
        assert_eq!(h.aligned_checkpoint_timeout(1), None);
        // No barrier was in: the first converted barrier triggers the checkpoint.
        assert_eq!(h.checkpoint(1), CheckpointState::NotTriggered);
        assert!(h.process_barrier_announcement(0, 1, 8));
        assert!(h.alignment().unwrap().announced.is_empty());
        assert!(h.process_barrier(0, 1, &g).unwrap());
        h.trigger_done(1, &g).unwrap();
        assert!(!h.process_barrier(1, 1, &g).unwrap());
        assert_eq!(h.checkpoint(1), CheckpointState::Ended);
        assert_eq!(*g.stopped.borrow(), [1]);
        assert_eq!(*g.resumed.borrow(), [0, 1]);
    }

    #[test]
    fn an_aligned_checkpoint_completes_without_checkpoint_stopped_and_resumes_every_channel() {
        let g = gate(&[true, true]);
        let mut h = SingleCheckpointBarrierHandler::new(1);
        h.process_barrier_announcement(1, 1, 4);
        h.process_aligned_barrier(1, 1, &g).unwrap();
        assert_eq!(h.checkpoint(1), CheckpointState::NotTriggered);
        assert!(g.resumed.borrow().is_empty());
        h.process_aligned_barrier(0, 1, &g).unwrap();
        assert_eq!(h.checkpoint(1), CheckpointState::Ended);
        assert!(g.stopped.borrow().is_empty());
        assert_eq!(*g.resumed.borrow(), [0, 1]);
    }

    #[test]
    fn a_timeout_with_a_barrier_in_triggers_and_the_last_converted_barrier_completes() {
        let g = gate(&[true, true]);
        let mut h = SingleCheckpointBarrierHandler::new(1);
        h.process_barrier_announcement(0, 1, 2);
        h.process_aligned_barrier(0, 1, &g).unwrap();
        h.process_barrier_announcement(1, 1, 5);
        assert_eq!(h.aligned_checkpoint_timeout(1), Some(vec![(1, 5)]));
        assert_eq!(h.checkpoint(1), CheckpointState::Triggered);
        // Channel 0 stays blocked until the checkpoint ends.
        assert!(g.resumed.borrow().is_empty());
        assert!(!h.process_barrier(1, 1, &g).unwrap());
        assert_eq!(h.checkpoint(1), CheckpointState::Triggered);
        h.trigger_done(1, &g).unwrap();
        assert_eq!(h.checkpoint(1), CheckpointState::Ended);
        assert_eq!(*g.stopped.borrow(), [1]);
        assert_eq!(*g.resumed.borrow(), [0, 1]);
    }
}
