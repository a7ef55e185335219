//! The gate's `LocalBufferPool`: the floating buffers not lent to any channel, and the buffer
//! managers registered as listeners for the next one (`registeredListeners`).
//!
//! With `shared_pool` the gate has one pool for all its channels, as Flink's does; otherwise
//! each channel has one of its own (docs/model.md, choice 18). The recycle loop that hands a
//! buffer to a listener needs every channel's manager and lives in the model
//! (`RecoveryModel::recycle_to_pool`).

use crate::state::{Buffers, NetBuf, PerChannel, PopFront};

/// One `LocalBufferPool`, under its `availableMemorySegments` monitor.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct LocalBufferPool {
    /// `availableMemorySegments`: floating buffers not lent out.
    pub available: Buffers,
    /// `registeredListeners`: channels whose `BufferManager` waits for a floating buffer, in
    /// the order they registered (the first is handed the next recycled buffer).
    pub listeners: PerChannel<u8>,
}

impl LocalBufferPool {
    /// A pool holding `buffers`.
    pub fn with(buffers: impl IntoIterator<Item = NetBuf>) -> Self {
        Self {
            available: buffers.into_iter().collect(),
            listeners: Default::default(),
        }
    }

    /// `requestBuffer()`: a free buffer, if any.
    pub fn request_buffer(&mut self) -> Option<NetBuf> {
        self.available.pop_front()
    }

    /// `addBufferListener(listener)`: registers channel `c`'s manager when no buffer is free.
    pub fn add_buffer_listener(&mut self, c: u8) -> bool {
        if !self.available.is_empty() {
            return false;
        }
        self.listeners.push(c);
        true
    }

    /// `lazyDestroy()`: the free segments go to the global pool (the lent ones follow when
    /// recycled) and the listeners are dropped (`notifyBufferDestroyed` does nothing).
    pub fn lazy_destroy(&mut self, global_pool: &mut Buffers) {
        global_pool.append(&mut self.available);
        self.listeners.clear();
    }
}
