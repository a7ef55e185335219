//! Mirrors Flink's `NetworkBufferPool` (the global pool of exclusive segments) and
//! `LocalBufferPool` (the per-gate pool of floating buffers, with availability listeners).
//!
//! Both pools keep a ledger of the segments they lent out; recycling a segment that is not lent
//! out is a [`ChannelError::DoubleRecycle`], never silent.
//!
//! Locking contract: each pool has one lock (Flink: `availableMemorySegments`), a leaf in the
//! lock order except that `LocalBufferPool` returns segments to the global pool after releasing
//! its own lock. `LocalBufferPool::recycle` hands a segment to a waiting [`BufferListener`]
//! *outside* its lock (Flink's `fireBufferAvailableNotification`), because the listener, a
//! `BufferManager`, takes its `bufferQueue` lock and itself calls into this pool under it.

use std::collections::{BTreeSet, VecDeque};
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::buffer_recycler::BufferRecycler;
use crate::error::{ChannelError, Result};
use crate::event_log::{self, Event};
use crate::ids::BufferId;
use crate::network_buffer::{NetworkBuffer, Recycler};
use crate::sync::{Arc, Mutex};

/// Flink's `BufferListener`: told by a [`LocalBufferPool`] that a floating buffer is free.
pub trait BufferListener: Send + Sync {
    /// `notifyBufferAvailable(Buffer)`: offers `buffer`; returns it back (`Err`) if not used.
    fn notify_buffer_available(&self, buffer: NetworkBuffer) -> std::result::Result<(), NetworkBuffer>;

    /// `notifyBufferDestroyed()`: the pool was destroyed while this listener waited.
    fn notify_buffer_destroyed(&self);
}

/// Snapshot of a [`NetworkBufferPool`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetworkBufferPoolSnapshot {
    /// Free segments in pool order.
    pub available: Vec<BufferId>,
    /// Segments lent out (to channels as exclusive buffers or to local pools), sorted.
    pub lent: Vec<BufferId>,
}

#[derive(Debug)]
struct GlobalSegments {
    available: VecDeque<BufferId>,
    lent: BTreeSet<BufferId>,
}

/// Mirrors Flink's `NetworkBufferPool`: the task manager's fixed set of network segments.
#[derive(Debug)]
pub struct NetworkBufferPool {
    segments: Mutex<GlobalSegments>,
}

impl NetworkBufferPool {
    /// `new NetworkBufferPool(numberOfSegmentsToAllocate, ...)`: segments with ids `0..n`.
    pub fn new(number_of_segments: u32) -> Arc<Self> {
        Self::with_first_id(0, number_of_segments)
    }

    /// A pool whose segment ids are `first..first + n`, so that several pools' ids differ.
    pub fn with_first_id(first: u32, number_of_segments: u32) -> Arc<Self> {
        let available = (first..first + number_of_segments).map(BufferId).collect();
        Arc::new(Self {
            segments: Mutex::new(GlobalSegments {
                available,
                lent: BTreeSet::new(),
            }),
        })
    }

    /// `requestUnpooledMemorySegments(n)`: all `n` segments or none ("Insufficient number of
    /// network buffers"; Flink waits with a timeout first).
    pub fn request_memory_segments(&self, n: usize) -> Result<Vec<BufferId>> {
        let mut segments = self.segments.lock();
        if segments.available.len() < n {
            return Err(ChannelError::illegal_state("Insufficient number of network buffers"));
        }
        let taken: Vec<BufferId> = segments.available.drain(..n).collect();
        segments.lent.extend(taken.iter().copied());
        Ok(taken)
    }

    /// `recycleUnpooledMemorySegments(segments)`: returns lent segments; none is returned if any
    /// of them is not lent out.
    pub fn recycle_memory_segments(&self, ids: Vec<BufferId>) -> Result<()> {
        let mut segments = self.segments.lock();
        let mut seen = BTreeSet::new();
        if let Some(id) = ids.iter().find(|id| !segments.lent.contains(id) || !seen.insert(**id)) {
            return Err(ChannelError::DoubleRecycle(*id));
        }
        for id in ids {
            segments.lent.remove(&id);
            segments.available.push_back(id);
        }
        Ok(())
    }

    /// A snapshot taken under the pool lock.
    pub fn snapshot(&self) -> NetworkBufferPoolSnapshot {
        let segments = self.segments.lock();
        NetworkBufferPoolSnapshot {
            available: segments.available.iter().copied().collect(),
            lent: segments.lent.iter().copied().collect(),
        }
    }
}

/// Snapshot of a [`LocalBufferPool`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LocalBufferPoolSnapshot {
    /// Free floating buffers in pool order.
    pub available: Vec<BufferId>,
    /// Floating buffers lent out (to buffer managers, or handed to listeners), sorted.
    pub lent: Vec<BufferId>,
    /// `registeredListeners.size()`.
    pub num_listeners: usize,
    /// `isDestroyed`.
    pub destroyed: bool,
}

struct LocalSegments {
    available: VecDeque<BufferId>,
    lent: BTreeSet<BufferId>,
    listeners: VecDeque<Arc<dyn BufferListener>>,
    destroyed: bool,
}

/// Mirrors Flink's `LocalBufferPool`: a gate's floating buffers, taken from the global pool.
pub struct LocalBufferPool {
    global: Arc<NetworkBufferPool>,
    segments: Mutex<LocalSegments>,
}

impl fmt::Debug for LocalBufferPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalBufferPool")
            .field("snapshot", &self.snapshot())
            .finish()
    }
}

/// What `LocalBufferPool::recycle` decided under its lock.
enum RecycleTo {
    Pool,
    Global,
    Listener(Arc<dyn BufferListener>),
}

impl BufferRecycler for LocalBufferPool {
    fn recycle(self: Arc<Self>, id: BufferId) -> Result<()> {
        LocalBufferPool::recycle(&self, id)
    }
}

impl LocalBufferPool {
    /// `NetworkBufferPool.createBufferPool(size, size)`: takes `size` segments from `global`.
    pub fn new(global: Arc<NetworkBufferPool>, size: usize) -> Result<Arc<Self>> {
        let available = global.request_memory_segments(size)?.into();
        let segments = LocalSegments {
            available,
            lent: BTreeSet::new(),
            listeners: VecDeque::new(),
            destroyed: false,
        };
        Ok(Arc::new(Self {
            global,
            segments: Mutex::new(segments),
        }))
    }

    /// `requestBuffer()`: a floating buffer whose recycler is this pool, or `None`.
    pub fn request_buffer(self: &Arc<Self>) -> Option<NetworkBuffer> {
        let mut segments = self.segments.lock();
        if segments.destroyed {
            return None;
        }
        let id = segments.available.pop_front()?;
        segments.lent.insert(id);
        Some(NetworkBuffer::pooled(id, Recycler::Floating(Arc::<Self>::clone(self))))
    }

    /// `addBufferListener(listener)`: registers `listener` if no buffer is free; false if a
    /// buffer is available or the pool is destroyed.
    pub fn add_buffer_listener(&self, listener: Arc<dyn BufferListener>) -> bool {
        let mut segments = self.segments.lock();
        if !segments.available.is_empty() || segments.destroyed {
            return false;
        }
        segments.listeners.push_back(listener);
        true
    }

    /// `recycle(segment)`: hands the segment to the first waiting listener (outside the lock)
    /// or puts it back; a segment that is not lent out is a double recycle.
    pub fn recycle(self: &Arc<Self>, id: BufferId) -> Result<()> {
        let mut buffer = None;
        loop {
            let decision = {
                let mut segments = self.segments.lock();
                if !segments.lent.contains(&id) {
                    return Err(ChannelError::DoubleRecycle(id));
                }
                let decision = if segments.destroyed {
                    segments.lent.remove(&id);
                    RecycleTo::Global
                } else if let Some(listener) = segments.listeners.pop_front() {
                    RecycleTo::Listener(listener)
                } else {
                    segments.lent.remove(&id);
                    segments.available.push_back(id);
                    RecycleTo::Pool
                };
                event_log::record(|| Event::LocalBufferPoolRecycle {
                    buffer: id,
                    to_listener: matches!(decision, RecycleTo::Listener(_)),
                });
                decision
            };
            match decision {
                RecycleTo::Pool => return Ok(()),
                RecycleTo::Global => return self.global.recycle_memory_segments(vec![id]),
                RecycleTo::Listener(listener) => {
                    let offered = buffer
                        .take()
                        .unwrap_or_else(|| NetworkBuffer::pooled(id, Recycler::Floating(Arc::<Self>::clone(self))));
                    match listener.notify_buffer_available(offered) {
                        Ok(()) => return Ok(()),
                        Err(unused) => buffer = Some(unused),
                    }
                }
            }
        }
    }

    /// `lazyDestroy()`: returns the free segments to the global pool and tells the listeners;
    /// lent segments go to the global pool when recycled.
    pub fn lazy_destroy(&self) -> Result<()> {
        let (free, listeners) = {
            let mut segments = self.segments.lock();
            segments.destroyed = true;
            let free: Vec<BufferId> = segments.available.drain(..).collect();
            (free, std::mem::take(&mut segments.listeners))
        };
        for listener in listeners {
            listener.notify_buffer_destroyed();
        }
        self.global.recycle_memory_segments(free)
    }

    /// `isDestroyed()`.
    pub fn is_destroyed(&self) -> bool {
        self.segments.lock().destroyed
    }

    /// A snapshot taken under the pool lock.
    pub fn snapshot(&self) -> LocalBufferPoolSnapshot {
        let segments = self.segments.lock();
        LocalBufferPoolSnapshot {
            available: segments.available.iter().copied().collect(),
            lent: segments.lent.iter().copied().collect(),
            num_listeners: segments.listeners.len(),
            destroyed: segments.destroyed,
        }
    }
}
