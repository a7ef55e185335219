//! The drainer: `SequentialChannelStateReaderImpl` on the `channel-state-unspilling` executor
//! (the IO thread). It pushes every recovered buffer into its channel, then finishes each
//! channel's delivery. Its program is fixed by the configuration: channel 0's buffers,
//! channel 1's, ..., then every channel's finish.

use crate::action::Action;
use crate::config::{ChannelKind, Delivery};
use crate::model::RecoveryModel;
use crate::recoverable_input_channel as rc;
use crate::recovered_input_channel as recovered;
use crate::state::buffer_manager::BufferManager;
use crate::state::sequential_channel_state_reader::IoStep;
use crate::state::{Payload, State, TaskPc};
use crate::variant::Variant;

/// The IO thread's steps.
impl RecoveryModel {
    /// What the IO thread may do next: the next step of its program, once it would not block.
    pub(crate) fn io_actions(&self, s: &State, out: &mut Vec<Action>) {
        match self.io_program.get(s.io_pc as usize) {
            Some(&IoStep::Push(c)) => {
                let ch = s.ch(c);
                // requestRecoveryBufferBlocking() awaits upstreamReady, then a buffer. Heap
                // buffers (flag off, or a local channel without exclusive ones): no wait.
                let heap = !self.lends_recovery_buffers(c) || self.is_recovered_channel(s);
                if heap || s.io_buffer.is_some() {
                    // The delivery takes the drainer's lock, which the trigger may hold.
                    if !self.trigger_holds_drainer_lock(s) {
                        out.push(Action::OnRecoveredStateBuffer { channel: c });
                    }
                    return;
                }
                if !ch.upstream_ready {
                    return;
                }
                // Parked in bufferQueue.wait(): only a buffer queued to the manager (its
                // notifyAll) or the release wakes it; a pool callback the manager turns down
                // does not. A buffer is taken before the release is looked at; a released
                // channel with none left throws (a remote channel's release opens the latch
                // last, `release_step`).
                let takes = if s.io_waiting || ch.released {
                    ch.bm.available() > 0
                } else {
                    ch.bm.can_request_buffer_blocking(s.pool_of(c))
                };
                if self.variant == Variant::RecoveryBufferNotLent {
                    if !self.trigger_holds_drainer_lock(s) {
                        out.push(Action::OnRecoveredStateBuffer { channel: c });
                    }
                } else if ch.released && !takes {
                    out.push(Action::OnRecoveredStateBuffer { channel: c });
                } else if takes || !s.io_waiting {
                    out.push(Action::RequestBufferBlocking { channel: c });
                }
            }
            // finishReadRecoveredState (flag off) does not wait for the upstream.
            Some(&IoStep::Finish(c)) if s.ch(c).upstream_ready || self.is_recovered_channel(s) => {
                out.push(Action::FinishRecoveredBufferDelivery { channel: c });
            }
            _ => {}
        }
    }

    /// Whether the task's trigger is inside `snapshotAndInsertBarriers`, which holds the
    /// drainer's lock from its first channel's insertion to its last: master's `drainSegment`
    /// delivers each buffer (`onRecoveredStateBuffer` with the reader's commit) under that lock.
    /// Only the drainer has it; with one channel the insertions are one step.
    pub(crate) fn trigger_holds_drainer_lock(&self, s: &State) -> bool {
        self.cfg.delivery == Delivery::Drainer
            && matches!(s.task, TaskPc::Trigger { inserted: false, channel, .. } if channel > 0)
    }

    /// Whether the drainer is parked in `requestBufferBlocking` for channel `c`'s manager.
    pub(crate) fn drainer_waits_for(&self, s: &State, c: u8) -> bool {
        s.io_waiting && self.io_program.get(s.io_pc as usize) == Some(&IoStep::Push(c))
    }

    /// Whether the drainer has run its whole program.
    pub(crate) fn drain_finished(&self, s: &State) -> bool {
        s.io_pc as usize >= self.io_program.len()
    }

    /// `requestBufferBlocking()` for channel `c`'s next recovered buffer: it takes a buffer
    /// queued to the manager (or one from the pool), which the drainer then fills. Finding
    /// nothing (or the manager already waiting for floating buffers), unless it waits already,
    /// the manager registers as the pool's listener (`isWaitingForFloatingBuffers`,
    /// `numRequiredBuffers = 1`), and the drainer parks in `bufferQueue.wait()`.
    pub(crate) fn request_buffer_blocking(&self, s: &mut State, c: u8) {
        let waiting = s.io_waiting;
        let (ch, pool) = s.ch_and_pool(c);
        let takes = if waiting || ch.released {
            ch.bm.available() > 0
        } else {
            ch.bm.can_request_buffer_blocking(pool)
        };
        if takes {
            let buffer = ch.bm.request_buffer_blocking(pool).expect("a buffer to take");
            s.io_buffer = Some((c, buffer));
            s.io_waiting = false;
            return;
        }
        if !ch.bm.waiting_for_floating {
            ch.bm.waiting_for_floating = pool.add_buffer_listener(c);
            ch.bm.required = 1;
        }
        s.io_waiting = true;
    }

    /// `onRecoveredStateBuffer` of the drainer's next buffer for channel `c`. A
    /// `RecoveredInputChannel` (flag off, 2.3.0) queues it as it is; a physical channel gets it
    /// in a buffer lent by its own manager (`requestBufferBlocking`) where it lends them.
    pub(crate) fn on_recovered_state_buffer(&self, s: &mut State, c: u8) {
        let buffer = s.io_buffer.take().map(|(_, b)| b);
        if self.variant == Variant::DrainerAbandonsStateOnRelease && s.ch(c).released {
            // The drainer throws and ends; what it has not pushed is nobody's (the buffer it
            // filled goes back, as a released channel's recycle sends it).
            s.io_pc = self.io_program.len() as u8;
            s.io_waiting = false;
            if let Some(b) = buffer {
                let ch = s.ch_mut(c);
                let floating = BufferManager::release_buffer(b, &mut ch.global_pool);
                self.recycle_all_to_pool(s, c, floating.into_iter().collect());
            }
            return;
        }
        s.io_pc += 1;
        s.io_waiting = false;
        if self.is_recovered_channel(s) {
            let ch = s.ch_mut(c);
            let i = ch.ghost_pushed;
            ch.ghost_pushed += 1;
            let notify = recovered::on_recovered_state_buffer(ch, Payload::Recovered(i));
            let notify = notify && self.variant != Variant::RecoveredPushSkipsNonEmptyNotification;
            return self.pushed(s, c, Ok(notify));
        }
        let kind = self.kind(c);
        let ch = s.ch_mut(c);
        let i = ch.ghost_pushed;
        ch.ghost_pushed += 1;
        // The buffer `requestBufferBlocking` took; on a released channel it goes back at once
        // (`recycleBuffer` of the released channel).
        let r = rc::on_recovered_state_buffer(ch, kind, Payload::Recovered(i));
        if let Some(b) = buffer.filter(|_| ch.released) {
            let floating = BufferManager::release_buffer(b, &mut ch.global_pool);
            self.recycle_all_to_pool(s, c, floating.into_iter().collect());
        } else if let Some(b) = buffer {
            // The recovered data sits in a buffer lent by the channel's own manager.
            match ch.queue.last_mut() {
                Some(e) if e.payload == Payload::Recovered(i) => e.buffer = Some(b),
                _ => ch.held.push(b),
            }
        }
        let r = match r {
            Ok(true)
                if self.variant == Variant::LocalRecoveredPushSkipsNonEmptyNotification
                    && kind == ChannelKind::Local =>
            {
                Ok(false)
            }
            r => r,
        };
        self.pushed(s, c, r);
    }

    /// `finishRecoveredBufferDelivery` of channel `c` (flag off: the `RecoveredInputChannel`'s
    /// `finishReadRecoveredState`). Under PR3's conversion it runs on the task thread, which
    /// then converts the channels after `c`.
    pub(crate) fn finish_recovered_buffer_delivery(&self, s: &mut State, c: u8) {
        if self.is_recovered_channel(s) {
            s.io_pc += 1;
            let notify = recovered::finish_read_recovered_state(s.ch_mut(c));
            return self.pushed(s, c, Ok(notify));
        }
        let r = rc::finish_recovered_buffer_delivery(s.ch_mut(c), self.kind(c), self.variant);
        self.pushed(s, c, r);
        if let TaskPc::AwaitUpstreamReady { .. } = s.task {
            self.convert_from(s, c + 1);
        } else {
            s.io_pc += 1;
        }
    }
}
