//! `LocalBufferPool`'s fields, and its methods that touch them alone. The recycle that hands a
//! buffer to a listener needs every channel's manager: it is in `local_buffer_pool.rs`.

use crate::state::elements::{Buffers, NetBuf, PerChannel, PopFront};

/// One `LocalBufferPool`, under its `availableMemorySegments` monitor.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize)]
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
