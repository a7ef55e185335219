//! `BufferManager`'s fields, and its methods that touch them alone: each one critical section
//! of `bufferQueue`. Its steps on the model are in `buffer_manager.rs`.

use crate::state::elements::{Buffers, NetBuf, PopFront};
use crate::state::local_buffer_pool::LocalBufferPool;
use crate::variant::Variant;

/// Buffer queues and the notification gate of one channel.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize)]
pub struct BufferManager {
    /// `bufferQueue.exclusiveBuffers`.
    pub exclusive: Buffers,
    /// `bufferQueue.floatingBuffers`.
    pub floating: Buffers,
    /// `numRequiredBuffers` (goes negative in Flink too: `requestBuffer` decrements it).
    pub required: i8,
    /// `isWaitingForFloatingBuffers`: registered as a listener of the `LocalBufferPool`.
    pub waiting_for_floating: bool,
    /// `notifyAvailable`: credit may be announced.
    pub notify_available: bool,
}

/// What `recycle` decided under the lock.
pub enum Recycled {
    /// Announce one credit after the lock.
    Announce,
    /// Hand this floating buffer back to the `LocalBufferPool` after the lock.
    ReleaseFloating(NetBuf),
    /// Nothing further (notification disabled, or the channel is released).
    Nothing,
}

impl BufferManager {
    /// `getAvailableBufferSize()`.
    pub fn available(&self) -> u8 {
        (self.exclusive.len() + self.floating.len()) as u8
    }

    /// `requestExclusiveBuffers(n)` at `setup()`: the segments are queued, never announced here.
    pub fn request_exclusive_buffers(&mut self, n: u8) {
        self.exclusive.extend((0..n).map(NetBuf::Exclusive));
    }

    /// `requestBuffer()`: a buffer for an arriving data buffer, floating first.
    pub fn request_buffer(&mut self) -> Option<NetBuf> {
        self.required -= 1;
        if self.floating.is_empty() {
            self.exclusive.pop_front()
        } else {
            self.floating.pop_front()
        }
    }

    /// Whether `requestBufferBlocking()` returns now: a buffer is queued, or the manager is not
    /// yet waiting for floating buffers and the `LocalBufferPool` has one.
    pub fn can_request_buffer_blocking(&self, pool: &LocalBufferPool) -> bool {
        self.available() > 0 || (!self.waiting_for_floating && !pool.available.is_empty())
    }

    /// `requestBufferBlocking()` once it returns (the caller parks while it would not, see
    /// `RecoveryModel::request_buffer_blocking`): lends a buffer to recovery, floating first,
    /// else one straight from the `LocalBufferPool`.
    pub fn request_buffer_blocking(&mut self, pool: &mut LocalBufferPool) -> Option<NetBuf> {
        if !self.floating.is_empty() {
            return self.floating.pop_front();
        }
        if !self.exclusive.is_empty() {
            return self.exclusive.pop_front();
        }
        if self.waiting_for_floating {
            return None;
        }
        pool.request_buffer()
    }

    /// `tryRequestBuffers()` of channel `me`: take pool buffers while fewer than required are
    /// available; register as the pool's listener when it has none.
    fn try_request_buffers(&mut self, pool: &mut LocalBufferPool, me: u8) -> u8 {
        let mut n = 0;
        while (self.available() as i8) < self.required && !self.waiting_for_floating {
            match pool.request_buffer() {
                Some(b) => {
                    self.floating.push(b);
                    n += 1;
                }
                None => self.waiting_for_floating = pool.add_buffer_listener(me),
            }
        }
        n
    }

    /// `requestFloatingBuffers(numRequired)`: returns the credit to announce, which is 0 while
    /// notification is disabled (the buffers are kept, and `enableNotify` counts them later).
    pub fn request_floating_buffers(
        &mut self,
        pool: &mut LocalBufferPool,
        me: u8,
        released: bool,
        required: u8,
        variant: Variant,
    ) -> u8 {
        if released {
            return 0;
        }
        self.required = required as i8;
        let n = self.try_request_buffers(pool, me);
        if self.notify_available || variant == Variant::FloatingCreditDuringRecovery {
            n
        } else {
            0
        }
    }

    /// `recycle(segment)` of an exclusive buffer; on a released channel it goes to the global pool.
    pub fn recycle(&mut self, released: bool, buffer: NetBuf, global_pool: &mut Buffers) -> Recycled {
        if released {
            global_pool.push(buffer);
            return Recycled::Nothing;
        }
        self.exclusive.push(buffer);
        // addExclusiveBuffer: give a floating buffer back if more are available than required.
        if self.available() as i8 > self.required
            && let Some(f) = self.floating.pop_front()
        {
            return Recycled::ReleaseFloating(f);
        }
        if self.notify_available {
            Recycled::Announce
        } else {
            Recycled::Nothing
        }
    }

    /// `notifyBufferAvailable(Buffer)` of channel `me`, a listener the pool dequeued: `None`
    /// if it does not take the buffer (released, or enough buffers queued; the pool then
    /// offers it to its next listener), else the credit to announce.
    pub fn notify_buffer_available(
        &mut self,
        pool: &mut LocalBufferPool,
        me: u8,
        released: bool,
        buffer: NetBuf,
        variant: Variant,
    ) -> Option<u8> {
        // Flink checks isReleased outside the lock (cross-manager deadlock); same effect here.
        if released {
            return None;
        }
        self.waiting_for_floating = false;
        if self.available() as i8 >= self.required {
            return None;
        }
        self.floating.push(buffer);
        let requested = self.try_request_buffers(pool, me);
        let n = if variant == Variant::FloatingBufferNotAnnounced {
            requested
        } else {
            1 + requested
        };
        Some(
            if self.notify_available || variant == Variant::FloatingCreditDuringRecovery {
                n
            } else {
                0
            },
        )
    }

    /// `releaseFloatingBuffers()`: `numRequiredBuffers = 0` and the floating buffers out of the
    /// queue, for the caller to recycle to the `LocalBufferPool` after the lock.
    pub fn release_floating_buffers(&mut self) -> Vec<NetBuf> {
        self.required = 0;
        self.floating.drain(..).collect()
    }

    /// `enableNotify()`: open the gate and count what is queued, in one critical section, so
    /// that every buffer is announced exactly once (here or by its own recycle afterwards).
    pub fn enable_notify(&mut self) -> u8 {
        self.notify_available = true;
        self.available()
    }

    /// `releaseAllBuffers(queue)`: exclusive segments to the global pool; the floating buffers
    /// are returned, for the caller to recycle to the `LocalBufferPool`.
    pub fn release_all_buffers(
        &mut self,
        drained: impl IntoIterator<Item = NetBuf>,
        global_pool: &mut Buffers,
    ) -> Vec<NetBuf> {
        let queued: Vec<NetBuf> = self.exclusive.drain(..).chain(self.floating.drain(..)).collect();
        drained
            .into_iter()
            .chain(queued)
            .filter_map(|b| Self::release_buffer(b, global_pool))
            .collect()
    }

    /// A buffer leaving a released manager: an exclusive segment to the global pool; a
    /// floating buffer is returned, to be recycled to the `LocalBufferPool`.
    pub fn release_buffer(b: NetBuf, global_pool: &mut Buffers) -> Option<NetBuf> {
        match b {
            NetBuf::Exclusive(_) => {
                global_pool.push(b);
                None
            }
            NetBuf::Floating(_) => Some(b),
        }
    }
}
