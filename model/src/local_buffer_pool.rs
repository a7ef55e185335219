//! The gate's `LocalBufferPool`: the floating buffers not lent to any channel, and the buffer
//! managers registered as listeners for the next one (`registeredListeners`).
//!
//! With `shared_pool` the gate has one pool for all its channels, as Flink's does; otherwise
//! each channel has one of its own (docs/model.md, choice 18). The recycle loop that hands a
//! buffer to a listener needs every channel's manager, so it is a method of the model
//! (`recycle_to_pool`, below).

use crate::config::FlinkFix;
use crate::model::RecoveryModel;
use crate::state::{Announce, State};
use crate::state::{NetBuf, PopFront};
use crate::variant::Variant;

/// `LocalBufferPool.recycle`, which needs every channel's manager (the pool's listeners).
impl RecoveryModel {
    /// `LocalBufferPool.recycle` of channel `c`'s floating buffer: to the global pool once the
    /// gate closed and destroyed the pool; else handed to the first registered listener that
    /// takes it (`notifyBufferAvailable(Buffer)`, outside the pool's lock; one that does not is
    /// dropped from the queue), else back to the pool. Returns the taker's announcement.
    pub(crate) fn recycle_to_pool(&self, s: &mut State, c: u8, buffer: NetBuf) -> Option<Announce> {
        if s.closed {
            s.ch_mut(c).global_pool.push(buffer);
            return None;
        }
        let p = s.pool_index(c);
        while let Some(l) = s.pools[p].listeners.pop_front() {
            if self.variant == Variant::PoolRecycleSkipsListeners {
                // The listener stays registered, and the buffer goes back to the pool.
                s.pools[p].listeners.insert(0, l);
                break;
            }
            let listener = s.channels[l as usize].make_mut();
            let released = listener.released;
            let taken = listener
                .bm
                .notify_buffer_available(&mut s.pools[p], l, released, buffer, self.variant);
            if let Some(n) = taken {
                s.ghost_lent_across |= l != c;
                return (n > 0).then_some(Announce { channel: l, n });
            }
            // `wake-on-refused-buffer`: the refusing branch wakes the drainer parked in this
            // manager's `bufferQueue.wait()` too; it looks at the pool again.
            if self.cfg.has_fix(FlinkFix::WakeOnRefusedBuffer) && !released && self.drainer_waits_for(s, l) {
                s.io_waiting = false;
            }
        }
        s.pools[p].available.push(buffer);
        None
    }

    /// Floating buffers a thread without an announcement step of its own (the canceler, the
    /// drainer) recycles: a listener that takes one announces its credit in the same step.
    pub(crate) fn recycle_all_to_pool(&self, s: &mut State, c: u8, buffers: Vec<NetBuf>) {
        for b in buffers {
            if let Some(Announce { channel, n }) = self.recycle_to_pool(s, c, b) {
                self.add_unannounced_credit(s, channel, n);
            }
        }
    }
}
