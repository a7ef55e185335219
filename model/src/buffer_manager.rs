//! `BufferManager` of a remote channel: exclusive and floating queues under the `bufferQueue`
//! monitor, and the notification gate of PR2 (`notifyAvailable`, `enableNotify`).
//!
//! Every method here is one critical section of `bufferQueue`. The credit it computes is
//! returned, and the caller announces it in a separate step, after the lock, as Flink does.

use crate::action::{Action, Thread};
use crate::config::FlinkFix;
use crate::model::RecoveryModel;
use crate::state::NetBuf;
use crate::state::buffer_manager::Recycled;
use crate::state::{Announce, RecyclerPc, State};

/// The recycler: whatever thread drops the last reference to a network buffer.
impl RecoveryModel {
    /// What the recycler may do next: the rest of a recycle, or the recycle of a buffer the
    /// operator holds.
    pub(crate) fn recycler_actions(&self, s: &State, out: &mut Vec<Action>) {
        match s.recycler {
            RecyclerPc::Announce(Announce { channel, n }) => out.push(Action::NotifyBufferAvailable {
                thread: Thread::Recycler,
                channel,
                n,
            }),
            RecyclerPc::ReturnFloating { channel, buffer } => {
                out.push(Action::ReturnFloatingBuffer { channel, buffer })
            }
            RecyclerPc::Idle => {
                for (c, ch) in s.channels.iter().enumerate() {
                    for &buffer in &ch.held {
                        out.push(Action::Recycle {
                            channel: c as u8,
                            buffer,
                        });
                    }
                }
            }
        }
    }

    pub(crate) fn recycle(&self, s: &mut State, c: u8, buffer: NetBuf) {
        let ch = s.ch_mut(c);
        let at = ch.held.iter().position(|b| *b == buffer).expect("guarded");
        ch.held.remove(at);
        let released = ch.released;
        s.recycler = match buffer {
            NetBuf::Exclusive(_) => match ch.bm.recycle(released, buffer, &mut ch.global_pool) {
                Recycled::Announce => RecyclerPc::Announce(Announce { channel: c, n: 1 }),
                Recycled::ReleaseFloating(f) => RecyclerPc::ReturnFloating { channel: c, buffer: f },
                Recycled::Nothing => RecyclerPc::Idle,
            },
            NetBuf::Floating(_) => {
                let taken = self.recycle_to_pool(s, c, buffer);
                self.announce_floating(s, taken)
            }
        };
    }

    /// The recycler's announcement of the floating buffer a listener took: its next step, after
    /// `bufferQueue` was released, as Flink does; with `announce-under-queue-lock`, in the same
    /// critical section.
    fn announce_floating(&self, s: &mut State, taken: Option<Announce>) -> RecyclerPc {
        match taken {
            Some(Announce { channel, n }) if self.cfg.has_fix(FlinkFix::AnnounceUnderQueueLock) => {
                self.add_unannounced_credit(s, channel, n);
                RecyclerPc::Idle
            }
            Some(a) => RecyclerPc::Announce(a),
            None => RecyclerPc::Idle,
        }
    }

    /// The recycler's second step: the floating buffer `recycle` released goes back to the pool
    /// (or to a listener, whose announcement is the recycler's next step).
    pub(crate) fn return_floating_buffer(&self, s: &mut State, c: u8, buffer: NetBuf) {
        let taken = self.recycle_to_pool(s, c, buffer);
        s.recycler = self.announce_floating(s, taken);
    }
}
